"""tiktoken's rank files: ``base64 rank`` per line, plain or gzipped."""
from __future__ import annotations

import base64
import binascii
import os

import numpy as np

from bpe._rankfile import parse_rank_lines
from bpe.errors import TokenizerFileError
from bpe.files import atomic_write_text
from bpe.flat import RankTable
from bpe.formats.common import TokenizerData, read_bytes, to_b64


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
    for number, line in enumerate(read_bytes(path).split(b"\n"), start=1):
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
    parsed = parse_rank_lines(read_bytes(path))
    if parsed is not None and bool(np.all(parsed[2][1:] > parsed[2][:-1])):
        return RankTable(*parsed)
    return RankTable.from_vocab(read_tiktoken_ranks(path))


def write_tiktoken(path: str, data: TokenizerData) -> str:
    """Write the ordinary tokens as tiktoken's ``base64 rank`` lines (rank = id)."""
    special_ids = set(data.special_tokens.values())
    atomic_write_text(path, "".join(f"{to_b64(token)} {token_id}\n"
                                    for token_id, token in sorted(data.vocab.items())
                                    if token_id not in special_ids))
    return path
