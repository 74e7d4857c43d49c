"""Reading and writing tokenizers: our own format (more formats join with the encoder).

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
"""
from __future__ import annotations

import base64
import binascii
import json
import os
import tempfile
from typing import Iterator

FORMAT_NAME = "bpe-tokenizer"
FORMAT_VERSION = 1
FILE_NAME = "tokenizer.bpe"


class TokenizerFileError(ValueError):
    """A tokenizer file that is corrupt, truncated or inconsistent; names the file and line."""


def atomic_write_text(path: str, text: str) -> None:
    """Write ``text`` under a temporary name and rename it to ``path`` once complete."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as file:
            file.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def save_own(tokenizer, path: str) -> str:
    """Write ``tokenizer`` to ``path`` (a directory gets ``tokenizer.bpe`` inside)."""
    path = os.fspath(path)
    if os.path.isdir(path) or path.endswith(os.sep):
        path = os.path.join(path, FILE_NAME)
    lines = [f"{FORMAT_NAME} {FORMAT_VERSION}",
             json.dumps({"pattern": tokenizer.pattern, "special_tokens": tokenizer.special_tokens},
                        ensure_ascii=False),
             f"vocab {len(tokenizer.vocab)}"]
    lines += [f"{token_id} {_b64(token)}" for token_id, token in sorted(tokenizer.vocab.items())]
    lines.append(f"merges {len(tokenizer.merges)}")
    lines += [f"{_b64(left)} {_b64(right)}" for left, right in tokenizer.merges]
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


class _Lines:
    """Numbered lines of a file, for errors that name the line at fault."""

    def __init__(self, path: str):
        self.path = path
        with open(path, "rb") as file:
            raw = file.read()
        try:
            self.lines = raw.decode("utf-8").split("\n")
        except UnicodeDecodeError as e:
            raise TokenizerFileError(f"{path}: not UTF-8 text (byte offset {e.start})") from None
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.position = 0

    def error(self, message: str, line: int | None = None) -> TokenizerFileError:
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
        if len(header) != 2 or header[0] != name or not header[1].isdigit():
            raise self.error(f"expected '{name} N', found {' '.join(header)[:60]!r}")
        for _ in range(int(header[1])):
            yield self.next(f"a {name} record").split(" ")

    def b64(self, field: str) -> bytes:
        try:
            return base64.b64decode(field, validate=True)
        except (binascii.Error, ValueError):
            raise self.error(f"{field[:40]!r} is not base64") from None


def load_own(path: str):
    """Read a tokenizer written by ``save_own``."""
    from bpe.tokenizer import Tokenizer

    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, FILE_NAME)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    lines = _Lines(path)
    first = lines.next("the format line")
    if first != f"{FORMAT_NAME} {FORMAT_VERSION}":
        raise lines.error(f"expected '{FORMAT_NAME} {FORMAT_VERSION}', found {first[:60]!r}")
    try:
        header = json.loads(lines.next("the JSON header"))
        pattern, special_tokens = header["pattern"], header["special_tokens"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise lines.error(f"bad header: {e}") from None
    vocab = {}
    for record in lines.section("vocab"):
        if len(record) != 2 or not record[0].isdigit():
            raise lines.error("expected '<id> <base64>'")
        vocab[int(record[0])] = lines.b64(record[1])
    merges = []
    for record in lines.section("merges"):
        if len(record) != 2:
            raise lines.error("expected '<base64> <base64>'")
        merges.append((lines.b64(record[0]), lines.b64(record[1])))
    if lines.position != len(lines.lines):
        raise lines.error("unexpected data after the merges", lines.position + 1)
    try:
        return Tokenizer(vocab, merges, special_tokens, pattern=pattern)
    except ValueError as e:
        raise TokenizerFileError(f"{path}: {e}") from None


def load(name_or_path):
    """Load "gpt2", "cl100k_base" or "o200k_base" (shipped in the package, offline), or
    a tokenizer saved with ``Tokenizer.save`` (a file or its directory)."""
    from bpe.pretrained import PRETRAINED, load_pretrained

    if isinstance(name_or_path, str) and name_or_path in PRETRAINED:
        return load_pretrained(name_or_path)
    return load_own(name_or_path)
