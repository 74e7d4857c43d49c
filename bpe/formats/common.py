"""What the readers of every format share: ``TokenizerData``, files read whole
(decompressed where they end in ``.gz``), numbered lines for errors that name
the line at fault, base64 both ways."""
from __future__ import annotations

import base64
import binascii
import gzip
import json
import os
import re
import zlib
from typing import Iterator, NamedTuple, Optional

from bpe.errors import TokenizerFileError

FILE_NAME = "tokenizer.bpe"
HF_FILE_NAME = "tokenizer.json"

Pair = tuple[bytes, bytes]
#: An id or rank as a file writes it: ASCII digits only (``str.isdigit`` and
#: ``int`` also take "²" and Arabic-Indic digits).
ASCII_NUMBER = re.compile(r"[0-9]+")     # the standard library's: loading never imports regex


class TokenizerData(NamedTuple):
    """What a tokenizer file holds. ``merges`` is None where the file has only
    ranks (tiktoken's files): the tokenizer recovers them from the id order."""

    vocab: dict[int, bytes]
    merges: Optional[list[Pair]]
    special_tokens: dict[str, int]
    pattern: Optional[str]


def to_b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def read_bytes(path: str) -> bytes:
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


class Lines:
    """Numbered lines of a file, for errors that name the line at fault."""

    def __init__(self, path: str):
        self.path = path
        raw = read_bytes(path)
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
        if len(header) != 2 or header[0] != name or not ASCII_NUMBER.fullmatch(header[1]):
            raise self.error(f"expected '{name} N', found {' '.join(header)[:60]!r}")
        for _ in range(int(header[1])):
            yield self.next(f"a {name} record").split(" ")

    def b64(self, field: str) -> bytes:
        try:
            return base64.b64decode(field, validate=True)
        except (binascii.Error, ValueError):
            raise self.error(f"{field[:40]!r} is not base64") from None


def read_json(path: str):
    """A JSON file's document; TokenizerFileError naming the file if it is none."""
    try:
        return json.loads(read_bytes(path).decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise TokenizerFileError(f"{path}: not a JSON tokenizer: {type(e).__name__}: {e}"[:300]) from None
