"""Reading and writing tokenizers: our own format, GPT-2's files, tiktoken's, Hugging Face's.

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


# --------------------------------------------------------------------------- GPT-2 files

def _gpt2_byte_maps() -> tuple[dict[int, str], dict[str, int]]:
    from bpe.pretrained import gpt2_byte_decoder

    decoder = gpt2_byte_decoder()
    return {b: c for c, b in decoder.items()}, decoder


def _to_gpt2_text(token: bytes, encoder: dict[int, str]) -> str:
    return "".join(encoder[b] for b in token)


def _from_gpt2_text(text: str, decoder: dict[str, int], where: str) -> bytes:
    try:
        return bytes(decoder[c] for c in text)
    except KeyError as e:
        raise TokenizerFileError(f"{where}: {e.args[0]!r} is not one of GPT-2's byte characters") from None


def read_gpt2_files(vocab_json: str, merges_txt: str):
    """``(vocab, merges)`` from GPT-2's ``encoder.json``/``vocab.json`` and ``vocab.bpe``/``merges.txt``."""
    _, decoder = _gpt2_byte_maps()
    for path in (vocab_json, merges_txt):
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: no such file")
    try:
        with open(vocab_json, encoding="utf-8") as f:
            encoded = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TokenizerFileError(f"{vocab_json}: not a JSON vocabulary: {e}") from None
    if not isinstance(encoded, dict):
        raise TokenizerFileError(f"{vocab_json}: expected a JSON object of token -> id")
    vocab = {}
    for text, token_id in encoded.items():
        if not isinstance(token_id, int) or token_id < 0:
            raise TokenizerFileError(f"{vocab_json}: token {text!r} has id {token_id!r}, not an int >= 0")
        vocab[token_id] = _from_gpt2_text(text, decoder, f"{vocab_json}: token {text!r}")
    merges = []
    lines = _Lines(merges_txt)
    while lines.position < len(lines.lines):
        line = lines.next("a merge")
        if lines.position == 1 and line.startswith("#version"):
            continue
        if not line:
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            raise lines.error(f"expected two tokens separated by a space, found {line[:60]!r}")
        where = f"{merges_txt}, line {lines.position}"
        merges.append((_from_gpt2_text(parts[0], decoder, where), _from_gpt2_text(parts[1], decoder, where)))
    return vocab, merges


def write_gpt2_files(tokenizer, directory: str) -> tuple[str, str]:
    """Write ``vocab.json`` and ``merges.txt`` (with a ``#version: 0.2`` line) into ``directory``."""
    encoder, _ = _gpt2_byte_maps()
    os.makedirs(directory, exist_ok=True)
    vocab_path = os.path.join(directory, "vocab.json")
    merges_path = os.path.join(directory, "merges.txt")
    encoded = {_to_gpt2_text(token, encoder): token_id for token_id, token in sorted(tokenizer.vocab.items())}
    if len(encoded) != len(tokenizer.vocab):
        raise ValueError("the vocab holds the same bytes under two ids; GPT-2's vocab.json cannot")
    atomic_write_text(vocab_path, json.dumps(encoded, ensure_ascii=False))
    atomic_write_text(merges_path, "#version: 0.2\n" + "".join(
        f"{_to_gpt2_text(a, encoder)} {_to_gpt2_text(b, encoder)}\n" for a, b in tokenizer.merges))
    return vocab_path, merges_path


# --------------------------------------------------------------------------- tiktoken files

def write_tiktoken(tokenizer, path: str) -> str:
    """Write the ordinary tokens as tiktoken's ``base64 rank`` lines (rank = id)."""
    special_ids = set(tokenizer.special_tokens.values())
    atomic_write_text(path, "".join(f"{_b64(token)} {token_id}\n"
                                    for token_id, token in sorted(tokenizer.vocab.items())
                                    if token_id not in special_ids))
    return path


# --------------------------------------------------------------------------- Hugging Face

def write_huggingface(tokenizer, path: str) -> str:
    """Write a ``tokenizer.json`` for Hugging Face ``tokenizers``: byte-level BPE, the
    same pattern as a Split pre-tokenizer, special tokens as added tokens.

    A directory gets ``tokenizer.json`` inside.
    """
    from bpe.patterns import pattern_regex

    if os.path.isdir(path):
        path = os.path.join(path, "tokenizer.json")
    encoder, _ = _gpt2_byte_maps()
    source = pattern_regex(tokenizer.pattern)
    if source is not None:
        # Oniguruma (tokenizers' regex engine) reads "{1,3}+" as a repeated interval,
        # not a possessive one; as its own alternative, greedy "{1,3}" matches the same.
        source = source.replace(r"\p{N}{1,3}+", r"\p{N}{1,3}")
    pre_tokenizers = [] if source is None else [
        {"type": "Split", "pattern": {"Regex": source}, "behavior": "Isolated", "invert": False}]
    pre_tokenizers.append({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                           "use_regex": False})
    document = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": token_id, "content": name, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}
                         for name, token_id in tokenizer.special_tokens.items()],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": pre_tokenizers},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                    "use_regex": False},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
            # A pre-token that is itself a token maps straight to it, as in bpe and tiktoken.
            "ignore_merges": True,
            "vocab": {_to_gpt2_text(token, encoder): token_id
                      for token_id, token in sorted(tokenizer.vocab.items())},
            "merges": [f"{_to_gpt2_text(a, encoder)} {_to_gpt2_text(b, encoder)}"
                       for a, b in tokenizer.merges],
        },
    }
    atomic_write_text(path, json.dumps(document, ensure_ascii=False))
    return path


def load(name_or_path):
    """Load "gpt2", "cl100k_base" or "o200k_base" (shipped in the package, offline), or
    a tokenizer saved with ``Tokenizer.save`` (a file or its directory)."""
    from bpe.pretrained import PRETRAINED, load_pretrained

    if isinstance(name_or_path, str) and name_or_path in PRETRAINED:
        return load_pretrained(name_or_path)
    return load_own(name_or_path)
