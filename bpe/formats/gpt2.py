"""GPT-2's files: ``encoder.json`` (or ``vocab.json``), tokens as text in which
each byte is a printable stand-in character, and ``vocab.bpe`` (or
``merges.txt``), the merges in order, the same way."""
from __future__ import annotations

import functools
import json
import os
from typing import Iterable, Optional

import numpy as np

from bpe.errors import TokenizerFileError
from bpe.files import atomic_write_text
from bpe.flat import RankTable
from bpe.formats.common import Lines, Pair, TokenizerData, read_bytes


@functools.lru_cache(maxsize=None)
def gpt2_byte_decoder() -> dict[str, int]:
    """GPT-2's printable stand-in character for each byte, inverted (character -> byte)."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    characters = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            characters.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, characters)}


@functools.lru_cache(maxsize=None)
def gpt2_byte_encoder() -> dict[int, str]:
    """GPT-2's printable stand-in character for each byte."""
    return {b: c for c, b in gpt2_byte_decoder().items()}


def to_gpt2_text(token: bytes, encoder: dict[int, str]) -> str:
    return "".join(encoder[b] for b in token)


@functools.lru_cache(maxsize=None)
def _gpt2_translation() -> tuple[dict[int, int], "regex.Pattern"]:
    """``str.translate`` table from GPT-2's characters to the Latin-1 character of
    each byte, and a regex of text made only of GPT-2's characters: a token is
    converted in two C passes, not a Python loop per character."""
    import regex

    decoder = gpt2_byte_decoder()
    table = {ord(c): b for c, b in decoder.items()}
    return table, regex.compile("[" + "".join(regex.escape(c) for c in decoder) + "]*")


@functools.lru_cache(maxsize=None)
def _gpt2_byte_table() -> np.ndarray:
    """Each of GPT-2's characters' byte, by code point; -1 for every other."""
    decoder = gpt2_byte_decoder()
    table = np.full(max(map(ord, decoder)) + 1, -1, dtype=np.int16)
    table[[ord(c) for c in decoder]] = list(decoder.values())
    return table


def _gpt2_text_bytes(text: str) -> Optional[np.ndarray]:
    """The bytes (uint8) of text written in GPT-2's characters, or None where a
    character is not one: a lookup per character in numpy, for a whole file's
    tokens joined."""
    table = _gpt2_byte_table()
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if len(codes) and codes.max() >= len(table):
        return None
    found = table[codes]
    return None if (found < 0).any() else found.astype(np.uint8)


def from_gpt2_text(text: str, where) -> bytes:
    """The bytes of a token written in GPT-2's characters; ``where()`` names it on error."""
    table, valid = _gpt2_translation()
    if valid.fullmatch(text) is None:
        bad = next(c for c in text if ord(c) not in table)
        raise TokenizerFileError(f"{where()}: {bad!r} is not one of GPT-2's byte characters")
    return text.translate(table).encode("latin-1")


def read_gpt2_vocab(vocab_json) -> dict[int, bytes]:
    """The ``{id: token}`` of GPT-2's ``encoder.json``/``vocab.json`` (``.gz`` too)."""
    table, _ = _gpt2_translation()
    return {token_id: text.translate(table).encode("latin-1")
            for token_id, text in _read_gpt2_texts(vocab_json).items()}


def read_gpt2_table(vocab_json, skip_ids: Iterable[int] = ()) -> RankTable:
    """``read_gpt2_vocab`` as a table (GPT-2's ids are its ranks), without the ids
    ``skip_ids``: one translation of all the tokens' text, not one per token."""
    texts = _read_gpt2_texts(vocab_json)
    for token_id in skip_ids:
        texts.pop(token_id, None)
    ranks = sorted(texts)
    ordered = [texts[rank] for rank in ranks]
    data = _gpt2_text_bytes("".join(ordered))      # one byte per character; every one checked
    offsets = np.zeros(len(ordered) + 1, dtype=np.int64)
    np.cumsum([len(text) for text in ordered], out=offsets[1:])
    # The texts are a JSON object's keys, so no token is given twice.
    return RankTable(data, offsets, np.array(ranks, dtype=np.int64))


def _read_gpt2_texts(vocab_json) -> dict[int, str]:
    """The ``{id: token text}`` of a GPT-2 vocab file, every text checked to be
    GPT-2's printable form of bytes."""
    vocab_json = os.fspath(vocab_json)
    if not os.path.exists(vocab_json):
        raise FileNotFoundError(f"{vocab_json}: no such file")
    try:
        encoded = json.loads(read_bytes(vocab_json).decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise TokenizerFileError(f"{vocab_json}: not a JSON vocabulary: {type(e).__name__}: {e}"[:300]) from None
    if not isinstance(encoded, dict):
        raise TokenizerFileError(f"{vocab_json}: expected a JSON object of token -> id")
    ids = list(encoded.values())
    # The checks at C speed; where one fails, the loop finds the entry to name.
    if not (set(map(type, ids)) <= {int} and min(ids, default=0) >= 0 and len(set(ids)) == len(ids)):
        seen = set()
        for text, token_id in encoded.items():
            if not isinstance(token_id, int) or isinstance(token_id, bool) or token_id < 0:
                raise TokenizerFileError(f"{vocab_json}: token {text!r} has id {token_id!r}, not an int >= 0")
            if token_id in seen:
                raise TokenizerFileError(f"{vocab_json}: id {token_id} is given to two tokens")
            seen.add(token_id)
    vocab = dict(zip(ids, encoded))
    if _gpt2_text_bytes("".join(vocab.values())) is None:
        bad = next(text for text in vocab.values() if _gpt2_text_bytes(text) is None)
        from_gpt2_text(bad, lambda: f"{vocab_json}: token {bad!r}")      # raises, naming it
    return vocab


def read_gpt2_files(vocab_json: str, merges_txt: str) -> tuple[dict[int, bytes], list[Pair]]:
    """``(vocab, merges)`` from GPT-2's ``encoder.json``/``vocab.json`` and
    ``vocab.bpe``/``merges.txt`` (with or without the ``#version`` line; ``.gz`` too)."""
    vocab_json, merges_txt = os.fspath(vocab_json), os.fspath(merges_txt)
    if not os.path.exists(merges_txt):
        raise FileNotFoundError(f"{merges_txt}: no such file")
    vocab = read_gpt2_vocab(vocab_json)
    table, valid = _gpt2_translation()
    lines = Lines(merges_txt).lines
    first = 1 if lines and lines[0].startswith("#version") else 0
    # One check of the whole file, then a C call per token; a bad line is found
    # (and named) only when there is one.
    body = lines[first:]
    if valid.fullmatch("".join(body).replace(" ", "")) is None or \
            any(line.count(" ") != 1 for line in body if line):
        for number, line in enumerate(body, start=first + 1):
            parts = line.split(" ")
            if line and len(parts) != 2:
                raise TokenizerFileError(f"{merges_txt}, line {number}: expected two tokens separated "
                                         f"by a space, found {line[:60]!r}")
            for part in parts:
                from_gpt2_text(part, lambda: f"{merges_txt}, line {number}")
    merges = []
    for line in body:
        if line:
            left, right = line.split(" ")
            merges.append((left.translate(table).encode("latin-1"), right.translate(table).encode("latin-1")))
    return vocab, merges


def write_gpt2_files(directory: str, data: TokenizerData) -> tuple[str, str]:
    """Write ``vocab.json`` and ``merges.txt`` (with a ``#version: 0.2`` line) into ``directory``."""
    encoder = gpt2_byte_encoder()
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    vocab_path = os.path.join(directory, "vocab.json")
    merges_path = os.path.join(directory, "merges.txt")
    encoded = {to_gpt2_text(token, encoder): token_id for token_id, token in sorted(data.vocab.items())}
    if len(encoded) != len(data.vocab):
        raise ValueError("the vocab holds the same bytes under two ids; GPT-2's vocab.json cannot")
    atomic_write_text(vocab_path, json.dumps(encoded, ensure_ascii=False))
    atomic_write_text(merges_path, "#version: 0.2\n" + "".join(
        f"{to_gpt2_text(a, encoder)} {to_gpt2_text(b, encoder)}\n" for a, b in data.merges))
    return vocab_path, merges_path
