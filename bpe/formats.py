"""Reading and writing tokenizer files as plain data: our own format, GPT-2's
files, tiktoken's rank files, Hugging Face's ``tokenizer.json``.

Readers return a ``TokenizerData`` (vocab, merges, special tokens, pattern) and
writers take one: this module knows file layouts, not the ``Tokenizer`` built
from them, which checks the data's consistency itself.

Own format (``tokenizer.bpe``), UTF-8 text, one record per line::

    bpe-tokenizer 1
    {"pattern": "gpt2", "special_tokens": {"<|endoftext|>": 256}}
    vocab 50257
    0 AA==                      # id, base64 of the token's bytes
    ...
    merges 50000
    aGU= bGxv                   # base64 of left and right, in merge order
    ...

Base64 keeps every byte string (spaces, newlines, invalid UTF-8) on one line.
Version 2 is a vocabulary ranked by id that no merges list describes (a token
no two earlier tokens make, as tiktoken's files may hold): the same lines
without the merges section, which version 1 keeps for every other tokenizer.
"""
from __future__ import annotations

import base64
import binascii
import functools
import gzip
import json
import os
import re
import zlib
from typing import Iterable, Iterator, NamedTuple, Optional, Sequence

import numpy as np

from bpe._rankfile import parse_rank_lines
from bpe.errors import TokenizerFileError
from bpe.files import atomic_write_text
from bpe.patterns import pattern_regex

FORMAT_NAME = "bpe-tokenizer"
FORMAT_VERSION = 1
RANKED_VERSION = 2          # a vocabulary ranked by id, without merges (see above)
FILE_NAME = "tokenizer.bpe"
HF_FILE_NAME = "tokenizer.json"

Pair = tuple[bytes, bytes]
#: An id or rank as a file writes it: ASCII digits only (``str.isdigit`` and
#: ``int`` also take "²" and Arabic-Indic digits).
_ASCII_NUMBER = re.compile(r"[0-9]+")     # the standard library's: loading never imports regex


class TokenizerData(NamedTuple):
    """What a tokenizer file holds. ``merges`` is None where the file has only
    ranks (tiktoken's files): the tokenizer recovers them from the id order."""

    vocab: dict[int, bytes]
    merges: Optional[list[Pair]]
    special_tokens: dict[str, int]
    pattern: Optional[str]


def flatten(tokens: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """``tokens`` concatenated (uint8) and where each starts and ends (int64 offsets):
    the flat form of byte strings that the kernels and ``RankTable`` take."""
    offsets = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum([len(token) for token in tokens], out=offsets[1:])
    return np.frombuffer(b"".join(tokens), dtype=np.uint8), offsets


def take_pieces(data: np.ndarray, offsets: np.ndarray, indices) -> tuple[np.ndarray, np.ndarray]:
    """The pieces ``data[offsets[i]:offsets[i + 1]]`` for each of ``indices``, in that
    order, as new flat arrays: one numpy gather, no bytes object per piece."""
    indices = np.asarray(indices, dtype=np.int64)
    lengths = np.diff(offsets)[indices]
    taken = np.zeros(len(indices) + 1, dtype=np.int64)
    np.cumsum(lengths, out=taken[1:])
    # Byte k of the result comes from data[start of its piece + its place in it].
    positions = np.repeat(offsets[indices] - taken[:-1], lengths) + np.arange(taken[-1])
    return data[positions], taken


def with_headers(headers: np.ndarray, data: np.ndarray, offsets: np.ndarray) -> bytes:
    """Row i of ``headers`` (uint8, a row per piece) then piece i, for each i in turn:
    length-prefixed records as one bytes object, from two numpy scatters."""
    n, width = headers.shape
    lengths = np.diff(offsets)
    starts = np.arange(n, dtype=np.int64) * width + offsets[:-1]     # record i's first byte
    out = np.empty(n * width + int(offsets[-1]), dtype=np.uint8)
    out[(starts[:, None] + np.arange(width)).ravel()] = headers.ravel()
    out[np.repeat(starts + width - offsets[:-1], lengths) + np.arange(offsets[-1])] = data
    return out.tobytes()


class RankTable(NamedTuple):
    """Ordinary tokens as flat arrays, in rank order (a rank is the token's id):
    token i is ``token_data[token_offsets[i]:token_offsets[i + 1]]`` and its rank
    ``ranks[i]``. Ranks strictly increase, and no token is given twice."""

    token_data: np.ndarray     # uint8
    token_offsets: np.ndarray  # int64, one more than there are tokens
    ranks: np.ndarray          # int64

    @classmethod
    def from_vocab(cls, vocab: dict[int, bytes]) -> "RankTable":
        """The table of ``{rank: token}`` (whose tokens are distinct)."""
        items = sorted(vocab.items())
        return cls(*flatten([token for _, token in items]), np.array([rank for rank, _ in items], dtype=np.int64))

    def tokens(self) -> list[bytes]:
        """Each token's bytes, in rank order."""
        data, offsets = self.token_data.tobytes(), self.token_offsets.tolist()
        return [data[start:end] for start, end in zip(offsets, offsets[1:])]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _read_bytes(path: str) -> bytes:
    """The bytes of ``path``, decompressed when it ends in ``.gz`` (in one call:
    reading through ``gzip.open`` decompresses in Python-sized steps)."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    with open(path, "rb") as file:
        try:
            raw = file.read()
        except OSError as e:
            raise TokenizerFileError(f"{path}: cannot be read as a file: {e}") from None
    if not path.endswith(".gz"):
        return raw
    try:
        return gzip.decompress(raw)
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise TokenizerFileError(f"{path}: cannot be read as gzip: {e}") from None


class _Lines:
    """Numbered lines of a file, for errors that name the line at fault."""

    def __init__(self, path: str):
        self.path = path
        raw = _read_bytes(path)
        try:
            self.lines = raw.decode("utf-8").split("\n")
        except UnicodeDecodeError as e:
            raise TokenizerFileError(f"{path}: not UTF-8 text (byte offset {e.start})") from None
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.position = 0

    def error(self, message: str, line: Optional[int] = None) -> TokenizerFileError:
        line = self.position if line is None else line
        return TokenizerFileError(f"{self.path}, line {line}: {message}")

    def next(self, what: str) -> str:
        if self.position >= len(self.lines):
            raise TokenizerFileError(f"{self.path}: truncated: expected {what} at line "
                                     f"{self.position + 1}, found the end of the file")
        self.position += 1
        return self.lines[self.position - 1]

    def section(self, name: str) -> Iterator[list[str]]:
        header = self.next(f"'{name} N'").split(" ")
        if len(header) != 2 or header[0] != name or not _ASCII_NUMBER.fullmatch(header[1]):
            raise self.error(f"expected '{name} N', found {' '.join(header)[:60]!r}")
        for _ in range(int(header[1])):
            yield self.next(f"a {name} record").split(" ")

    def b64(self, field: str) -> bytes:
        try:
            return base64.b64decode(field, validate=True)
        except (binascii.Error, ValueError):
            raise self.error(f"{field[:40]!r} is not base64") from None


# --------------------------------------------------------------------------- own format

def write_own(path: str, data: TokenizerData) -> str:
    """Write ``data`` to ``path``: a file if it ends in ``.bpe``, else a directory
    (created if missing) with ``tokenizer.bpe`` inside. Returns the file's path."""
    path = os.fspath(path)
    if not path.endswith(".bpe") or os.path.isdir(path):
        path = os.path.join(path, FILE_NAME)
    version = FORMAT_VERSION if data.merges is not None else RANKED_VERSION
    lines = [f"{FORMAT_NAME} {version}",
             json.dumps({"pattern": data.pattern, "special_tokens": data.special_tokens},
                        ensure_ascii=False),
             f"vocab {len(data.vocab)}"]
    lines += [f"{token_id} {_b64(token)}" for token_id, token in sorted(data.vocab.items())]
    if data.merges is not None:
        lines.append(f"merges {len(data.merges)}")
        lines += [f"{_b64(left)} {_b64(right)}" for left, right in data.merges]
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


def own_path(path) -> str:
    """The own-format file ``path`` names: itself, or ``tokenizer.bpe`` inside a directory."""
    path = os.fspath(path)
    return os.path.join(path, FILE_NAME) if os.path.isdir(path) else path


def read_own(path) -> TokenizerData:
    """Read a tokenizer written by ``write_own`` (a file or its directory)."""
    path = own_path(path)
    lines = _Lines(path)
    first = lines.next("the format line")
    if first not in (f"{FORMAT_NAME} {FORMAT_VERSION}", f"{FORMAT_NAME} {RANKED_VERSION}"):
        raise lines.error(f"expected '{FORMAT_NAME} {FORMAT_VERSION}' or '{FORMAT_NAME} {RANKED_VERSION}', "
                          f"found {first[:60]!r}")
    try:
        header = json.loads(lines.next("the JSON header"))
        pattern, special_tokens = header["pattern"], header["special_tokens"]
    except (json.JSONDecodeError, KeyError, TypeError, RecursionError) as e:
        raise lines.error(f"bad header: {type(e).__name__}: {e}"[:200]) from None
    if pattern is not None and not isinstance(pattern, str):
        raise lines.error(f"bad header: 'pattern' is {pattern!r}, not a string or null")
    if not isinstance(special_tokens, dict) or not all(
            isinstance(name, str) and isinstance(token_id, int) and not isinstance(token_id, bool)
            for name, token_id in special_tokens.items()):
        raise lines.error(f"bad header: 'special_tokens' is {special_tokens!r:.80}, not an object "
                          "of token -> integer id")
    vocab = {}
    for record in lines.section("vocab"):
        if len(record) != 2 or not _ASCII_NUMBER.fullmatch(record[0]):
            raise lines.error("expected '<id> <base64>'")
        token_id = int(record[0])
        if token_id in vocab:
            raise lines.error(f"id {token_id} is given twice")
        vocab[token_id] = lines.b64(record[1])
    merges = None if first.endswith(f" {RANKED_VERSION}") else []
    for record in lines.section("merges") if merges is not None else ():
        if len(record) != 2:
            raise lines.error("expected '<base64> <base64>'")
        merges.append((lines.b64(record[0]), lines.b64(record[1])))
    if lines.position != len(lines.lines):
        raise lines.error("unexpected data after the merges", lines.position + 1)
    return TokenizerData(vocab, merges, special_tokens, pattern)


# --------------------------------------------------------------------------- GPT-2 files

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


def _to_gpt2_text(token: bytes, encoder: dict[int, str]) -> str:
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


def _from_gpt2_text(text: str, where) -> bytes:
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
        encoded = json.loads(_read_bytes(vocab_json).decode("utf-8"))
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
        _from_gpt2_text(bad, lambda: f"{vocab_json}: token {bad!r}")      # raises, naming it
    return vocab


def read_gpt2_files(vocab_json: str, merges_txt: str) -> tuple[dict[int, bytes], list[Pair]]:
    """``(vocab, merges)`` from GPT-2's ``encoder.json``/``vocab.json`` and
    ``vocab.bpe``/``merges.txt`` (with or without the ``#version`` line; ``.gz`` too)."""
    vocab_json, merges_txt = os.fspath(vocab_json), os.fspath(merges_txt)
    if not os.path.exists(merges_txt):
        raise FileNotFoundError(f"{merges_txt}: no such file")
    vocab = read_gpt2_vocab(vocab_json)
    table, valid = _gpt2_translation()
    lines = _Lines(merges_txt).lines
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
                _from_gpt2_text(part, lambda: f"{merges_txt}, line {number}")
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
    encoded = {_to_gpt2_text(token, encoder): token_id for token_id, token in sorted(data.vocab.items())}
    if len(encoded) != len(data.vocab):
        raise ValueError("the vocab holds the same bytes under two ids; GPT-2's vocab.json cannot")
    atomic_write_text(vocab_path, json.dumps(encoded, ensure_ascii=False))
    atomic_write_text(merges_path, "#version: 0.2\n" + "".join(
        f"{_to_gpt2_text(a, encoder)} {_to_gpt2_text(b, encoder)}\n" for a, b in data.merges))
    return vocab_path, merges_path


# --------------------------------------------------------------------------- tiktoken files

def _strict_b64decode():
    """base64 decoding that refuses stray characters, in one C call where Python has it."""
    try:
        binascii.a2b_base64(b"AA==", strict_mode=True)
        return lambda data: binascii.a2b_base64(data, strict_mode=True)
    except TypeError:        # Python < 3.11
        return lambda data: base64.b64decode(data, validate=True)


_b64decode = _strict_b64decode()


def read_tiktoken_ranks(path) -> dict[int, bytes]:
    """A tiktoken rank file (plain or .gz): ``base64 rank`` per line -> {rank: bytes}.

    Ranks are ASCII digits (``bytes.isdigit`` knows no others) that fit 63 bits,
    each given once, to one token given once; errors name the line."""
    path = os.fspath(path)
    items = []
    numbers = []
    for number, line in enumerate(_read_bytes(path).split(b"\n"), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2 or not fields[1].isdigit():
            raise TokenizerFileError(f"{path}, line {number}: expected '<base64> <rank>' with a rank "
                                     f"of ASCII digits, found {line[:60]!r}")
        rank = int(fields[1])
        if rank >= 1 << 63:
            raise TokenizerFileError(f"{path}, line {number}: rank {rank} is larger than any "
                                     "token id can be")
        try:
            # "=" alone is the empty token (Whisper's files hold one): base64 of
            # nothing, as tiktoken reads it; strict decoding calls it stray padding.
            items.append((rank, b"" if fields[0].strip(b"=") == b"" else _b64decode(fields[0])))
        except (ValueError, binascii.Error) as e:
            raise TokenizerFileError(f"{path}, line {number}: {fields[0][:40]!r} is not base64: {e}") from None
        numbers.append(number)
    vocab = dict(items)
    if len(vocab) != len(items) or len(set(vocab.values())) != len(items):
        ranks, tokens = set(), set()
        for (rank, token), number in zip(items, numbers):
            if rank in ranks:
                raise TokenizerFileError(f"{path}, line {number}: rank {rank} is given twice")
            if token in tokens:
                raise TokenizerFileError(f"{path}, line {number}: token {token!r} is given twice")
            ranks.add(rank)
            tokens.add(token)
    return vocab


def read_tiktoken_table(path) -> RankTable:
    """``read_tiktoken_ranks`` as flat arrays: the same file, checks and errors.

    A file in the shape tiktoken writes, ranks in order, is parsed natively
    (``bpe._rankfile``: 0.01 s for o200k rather than 0.2 s); any other is read by
    ``read_tiktoken_ranks``, which names the line of an error."""
    path = os.fspath(path)
    parsed = parse_rank_lines(_read_bytes(path))
    if parsed is not None and bool(np.all(parsed[2][1:] > parsed[2][:-1])):
        return RankTable(*parsed)
    return RankTable.from_vocab(read_tiktoken_ranks(path))


def write_tiktoken(path: str, data: TokenizerData) -> str:
    """Write the ordinary tokens as tiktoken's ``base64 rank`` lines (rank = id)."""
    special_ids = set(data.special_tokens.values())
    atomic_write_text(path, "".join(f"{_b64(token)} {token_id}\n"
                                    for token_id, token in sorted(data.vocab.items())
                                    if token_id not in special_ids))
    return path


# --------------------------------------------------------------------------- Mistral's Tekken files

#: The special tokens of a Tekken file of version v7 or older that lists none,
#: as mistral-common defines them; the rest, up to the file's number, are
#: ``<SPECIAL_{id}>``.
TEKKEN_OLD_SPECIALS = ("<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
                       "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
                       "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
                       "[TOOL_CONTENT]")


class TekkenFile(NamedTuple):
    """A Tekken file as mistral-common's ``Tekkenizer`` reads it: its ordinary tokens
    (rank k is id k + the number of special tokens), its special tokens by id
    (control tokens, never found in text), its pattern."""

    table: RankTable
    control_tokens: dict[int, bytes]
    pattern: str


def looks_like_tekken(document) -> bool:
    return isinstance(document, dict) and isinstance(document.get("config"), dict) \
        and isinstance(document.get("vocab"), list)


def read_json(path: str):
    """A JSON file's document; TokenizerFileError naming the file if it is none."""
    try:
        return json.loads(_read_bytes(path).decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise TokenizerFileError(f"{path}: not a JSON tokenizer: {type(e).__name__}: {e}"[:300]) from None


def read_tekken(path, document=None) -> TekkenFile:
    """Read a Mistral Tekken ``tekken.json``: the vocabulary cut to the file's
    default size, special tokens first (control tokens: ``Tekkenizer.encode``
    never finds them in text)."""
    path = os.fspath(path)
    document = read_json(path) if document is None else document

    def refuse(field: str, why: str) -> TokenizerFileError:
        return TokenizerFileError(f"{path}: {field}: {why}")

    if not looks_like_tekken(document):
        raise refuse("config", "missing; not a Tekken file")
    config = document["config"]
    pattern, size, n_special = config.get("pattern"), config.get("default_vocab_size"), \
        config.get("default_num_special_tokens")
    if not isinstance(pattern, str):
        raise refuse("config.pattern", f"is {pattern!r:.60}, not a string")
    for field, value in (("default_vocab_size", size), ("default_num_special_tokens", n_special)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise refuse(f"config.{field}", f"is {value!r:.60}, not an int >= 0")
    inner = size - n_special
    vocab = document["vocab"]
    if not 0 <= inner <= len(vocab):
        raise refuse("config.default_vocab_size", f"is {size}: {size} - {n_special} special tokens must be "
                                                  f"between 0 and the {len(vocab)} tokens listed")
    tokens = []
    for index, entry in enumerate(vocab[:inner]):
        if not isinstance(entry, dict) or entry.get("rank") != index or not isinstance(entry.get("token_bytes"), str):
            raise refuse(f"vocab[{index}]", f"{entry!r:.80} is not {{'rank': {index}, 'token_bytes': base64}}")
        try:
            tokens.append(base64.b64decode(entry["token_bytes"], validate=True))
        except (binascii.Error, ValueError):
            raise refuse(f"vocab[{index}].token_bytes", f"{entry['token_bytes'][:40]!r} is not base64") from None
    specials = document.get("special_tokens")
    if specials is None:
        if config.get("version") not in (None, "v1", "v2", "v3", "v7"):
            raise refuse("special_tokens", f"missing, and version {config.get('version')!r} lists its own")
        names = list(TEKKEN_OLD_SPECIALS[:n_special])
    else:
        if not isinstance(specials, list):
            raise refuse("special_tokens", "is not a list")
        names = []
        for index, entry in enumerate(specials):
            if not isinstance(entry, dict) or entry.get("rank") != index or not isinstance(entry.get("token_str"), str):
                raise refuse(f"special_tokens[{index}]", f"{entry!r:.80} is not {{'rank': {index}, 'token_str': ...}}")
            names.append(entry["token_str"])
    if len(names) > n_special or len(set(names)) != len(names):
        raise refuse("special_tokens", f"{len(names)} names (some twice?) for {n_special} special tokens")
    names += [f"<SPECIAL_{i}>" for i in range(len(names), n_special)]
    table = RankTable(*flatten(tokens), np.arange(n_special, n_special + len(tokens), dtype=np.int64))
    return TekkenFile(table, {i: name.encode("utf-8") for i, name in enumerate(names)}, pattern)
