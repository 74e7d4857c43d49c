"""bpe's own format (``tokenizer.bpe``), UTF-8 text, one record per line::

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

import json
import os

from bpe.files import atomic_write_text
from bpe.formats.common import ASCII_NUMBER, FILE_NAME, Lines, TokenizerData, to_b64

FORMAT_NAME = "bpe-tokenizer"
FORMAT_VERSION = 1
RANKED_VERSION = 2          # a vocabulary ranked by id, without merges (see above)


def write_own(path: str, data: TokenizerData) -> str:
    """Write ``data`` to ``path``: a file if it ends in ``.bpe``, else a directory
    (created if missing) with ``tokenizer.bpe`` inside. Returns the file's path."""
    path = own_target(path)
    version = FORMAT_VERSION if data.merges is not None else RANKED_VERSION
    lines = [f"{FORMAT_NAME} {version}",
             json.dumps({"pattern": data.pattern, "special_tokens": data.special_tokens},
                        ensure_ascii=False),
             f"vocab {len(data.vocab)}"]
    lines += [f"{token_id} {to_b64(token)}" for token_id, token in sorted(data.vocab.items())]
    if data.merges is not None:
        lines.append(f"merges {len(data.merges)}")
        lines += [f"{to_b64(left)} {to_b64(right)}" for left, right in data.merges]
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


def own_target(path) -> str:
    """The file ``write_own`` writes for ``path``, refused (before any work) where
    ``path`` is a file that is not ``.bpe``: a directory is made there."""
    path = os.fspath(path)
    if path.endswith(".bpe") and not os.path.isdir(path):
        return path
    if os.path.exists(path) and not os.path.isdir(path):
        raise FileExistsError(f"{path}: is a file; save into a directory (made if missing), "
                              "or to a file named *.bpe")
    return os.path.join(path, FILE_NAME)


def own_path(path) -> str:
    """The own-format file ``path`` names: itself, or ``tokenizer.bpe`` inside a directory."""
    path = os.fspath(path)
    return os.path.join(path, FILE_NAME) if os.path.isdir(path) else path


def read_own(path) -> TokenizerData:
    """Read a tokenizer written by ``write_own`` (a file or its directory)."""
    path = own_path(path)
    lines = Lines(path)
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
        if len(record) != 2 or not ASCII_NUMBER.fullmatch(record[0]):
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
