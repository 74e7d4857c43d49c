"""SentencePiece model files (``tokenizer.model``), read as plain data.

The file is a protobuf ``ModelProto`` (sentencepiece's ``sentencepiece_model.proto``).
It is read here with a few lines of wire-format decoding rather than the
``protobuf`` package: only the fields below are needed, and the core stays
free of that dependency. Fields this module does not know are skipped, as
protobuf's own readers skip them.

* ``pieces`` (1): each piece's text (1), score (2, float32) and type (3):
  NORMAL 1, UNKNOWN 2, CONTROL 3, USER_DEFINED 4, UNUSED 5, BYTE 6.
* ``trainer_spec`` (2): model_type (3: UNIGRAM 1, BPE 2, WORD 3, CHAR 4),
  treat_whitespace_as_suffix (24), byte_fallback (35), unk/bos/eos/pad ids
  (40-43), unk_surface (44: what decoding gives for the unknown piece).
* ``normalizer_spec`` (3) and ``denormalizer_spec`` (5): name (1),
  precompiled_charsmap (2), add_dummy_prefix (3), remove_extra_whitespaces
  (4), escape_whitespaces (5).
"""
from __future__ import annotations

import os
import struct
from typing import Iterator, NamedTuple

from bpe.errors import TokenizerFileError

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
TYPE_NAMES = {NORMAL: "normal", UNKNOWN: "unknown", CONTROL: "control", USER_DEFINED: "user-defined",
              UNUSED: "unused", BYTE: "byte"}
MODEL_TYPES = {1: "unigram", 2: "BPE", 3: "word", 4: "char"}


class Piece(NamedTuple):
    text: str
    score: float
    type: int


class Normalizer(NamedTuple):
    """A normalizer spec, with protobuf's defaults for fields the file leaves out."""

    name: str = ""
    precompiled_charsmap: bytes = b""
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True


class SentencePieceFile(NamedTuple):
    """What a SentencePiece model file says: its pieces in id order and the
    settings that decide how text becomes them."""

    pieces: list[Piece]
    model_type: int
    byte_fallback: bool
    treat_whitespace_as_suffix: bool
    unk_id: int
    bos_id: int
    eos_id: int
    pad_id: int
    unk_surface: str
    normalizer: Normalizer
    denormalizer: Normalizer


class _Malformed(ValueError):
    """The wire format is broken at ``offset``."""

    def __init__(self, offset: int, why: str):
        super().__init__(f"byte {offset}: {why}")


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    start = pos
    while True:
        if pos >= end:
            raise _Malformed(start, "a number runs past the end of its message")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift >= 70:
            raise _Malformed(start, "a number longer than ten bytes")


def _fields(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, object, int]]:
    """``(field, wire type, value, offset)`` of a message's fields: an int for
    varints and fixed-width fields, ``(start, end)`` for length-delimited ones."""
    pos = start
    while pos < end:
        offset = pos
        key, pos = _varint(data, pos, end)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos, end)
        elif wire == 1:
            if pos + 8 > end:
                raise _Malformed(offset, f"field {field} runs past the end of its message")
            value, pos = int.from_bytes(data[pos:pos + 8], "little"), pos + 8
        elif wire == 2:
            length, pos = _varint(data, pos, end)
            if pos + length > end:
                raise _Malformed(offset, f"field {field} ({length} bytes) runs past the end of its message")
            value, pos = (pos, pos + length), pos + length
        elif wire == 5:
            if pos + 4 > end:
                raise _Malformed(offset, f"field {field} runs past the end of its message")
            value, pos = int.from_bytes(data[pos:pos + 4], "little"), pos + 4
        else:
            raise _Malformed(offset, f"field {field} has wire type {wire}, which protobuf does not define")
        if field == 0:
            raise _Malformed(offset, "a field numbered 0")
        yield field, wire, value, offset


def _int32(value: int) -> int:
    """A varint as protobuf's int32 (negative numbers are sign-extended to 64 bits)."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(data: bytes, span, offset: int, what: str) -> str:
    try:
        return data[span[0]:span[1]].decode("utf-8")
    except UnicodeDecodeError:
        raise _Malformed(offset, f"{what} is not UTF-8") from None


def _expect(wire: int, wanted: int, field: str, offset: int) -> None:
    if wire != wanted:
        raise _Malformed(offset, f"{field} has wire type {wire}, not {wanted}")


def _piece(data: bytes, start: int, end: int, index: int) -> Piece:
    text, score, kind = None, 0.0, NORMAL
    for field, wire, value, offset in _fields(data, start, end):
        if field == 1:
            _expect(wire, 2, f"piece {index}'s text", offset)
            text = _text(data, value, offset, f"piece {index}'s text")
        elif field == 2:
            _expect(wire, 5, f"piece {index}'s score", offset)
            score = struct.unpack("<f", value.to_bytes(4, "little"))[0]
        elif field == 3:
            _expect(wire, 0, f"piece {index}'s type", offset)
            kind = value
    if text is None:
        raise _Malformed(start, f"piece {index} has no text")
    return Piece(text, score, kind)


def _normalizer(data: bytes, start: int, end: int) -> Normalizer:
    values = Normalizer()._asdict()
    flags = {3: "add_dummy_prefix", 4: "remove_extra_whitespaces", 5: "escape_whitespaces"}
    for field, wire, value, offset in _fields(data, start, end):
        if field == 1:
            _expect(wire, 2, "the normalizer's name", offset)
            values["name"] = _text(data, value, offset, "the normalizer's name")
        elif field == 2:
            _expect(wire, 2, "precompiled_charsmap", offset)
            values["precompiled_charsmap"] = data[value[0]:value[1]]
        elif field in flags:
            _expect(wire, 0, flags[field], offset)
            values[flags[field]] = bool(value)
    return Normalizer(**values)


def parse(data: bytes) -> SentencePieceFile:
    """A ``SentencePieceFile`` from a ModelProto's bytes (``ValueError`` naming the
    byte where the wire format breaks)."""
    pieces: list[Piece] = []
    trainer = {"model_type": 1, "byte_fallback": False, "treat_whitespace_as_suffix": False,
               "unk_id": 0, "bos_id": 1, "eos_id": 2, "pad_id": -1}
    trainer_fields = {3: "model_type", 24: "treat_whitespace_as_suffix", 35: "byte_fallback",
                      40: "unk_id", 41: "bos_id", 42: "eos_id", 43: "pad_id"}
    normalizer = denormalizer = Normalizer()
    unk_surface = " \u2047 "
    for field, wire, value, offset in _fields(data, 0, len(data)):
        if field == 1:
            _expect(wire, 2, "a piece", offset)
            pieces.append(_piece(data, *value, len(pieces)))
        elif field == 2:
            _expect(wire, 2, "trainer_spec", offset)
            for sub, sub_wire, sub_value, sub_offset in _fields(data, *value):
                if sub == 44:
                    _expect(sub_wire, 2, "unk_surface", sub_offset)
                    unk_surface = _text(data, sub_value, sub_offset, "unk_surface")
                elif sub in trainer_fields:
                    _expect(sub_wire, 0, trainer_fields[sub], sub_offset)
                    trainer[trainer_fields[sub]] = _int32(sub_value)
        elif field in (3, 5):
            _expect(wire, 2, "normalizer_spec" if field == 3 else "denormalizer_spec", offset)
            if field == 3:
                normalizer = _normalizer(data, *value)
            else:
                denormalizer = _normalizer(data, *value)
    trainer["byte_fallback"] = bool(trainer["byte_fallback"])
    trainer["treat_whitespace_as_suffix"] = bool(trainer["treat_whitespace_as_suffix"])
    return SentencePieceFile(pieces=pieces, normalizer=normalizer, denormalizer=denormalizer,
                             unk_surface=unk_surface, **trainer)


def looks_like_sentencepiece(head: bytes) -> bool:
    """Whether a file's first bytes start as a ModelProto does: a piece (field 1,
    length-delimited) whose first field is its text. (A tiktoken rank file,
    which Llama 3 also names ``tokenizer.model``, starts with base64 text.)"""
    try:
        _, pos = _varint(head, 1, len(head)) if head[:1] == b"\x0a" else (0, -1)
    except _Malformed:
        return False
    return 0 < pos < len(head) and head[pos] == 0x0A


def read_sentencepiece(path) -> SentencePieceFile:
    """Read a SentencePiece ``.model`` file (``TokenizerFileError`` naming the
    file and byte where it is broken)."""
    path = os.fspath(path)
    with open(path, "rb") as file:
        data = file.read()
    try:
        model = parse(data)
    except ValueError as e:
        raise TokenizerFileError(f"{path}: not a SentencePiece model: {e}") from None
    if not model.pieces:
        raise TokenizerFileError(f"{path}: not a SentencePiece model: it has no pieces")
    return model
