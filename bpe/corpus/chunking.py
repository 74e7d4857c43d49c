"""Cutting files into chunks that can be pre-tokenized independently.

A chunk boundary is placed near each multiple of ``chunk_size`` and snapped
forward to a position where cutting provably changes nothing:

1. the start of the next occurrence of the first special token (a document
   boundary), unless another special token straddles that position; or, with
   no such occurrence within reach,
2. a safe cut of the built-in pattern (``patterns.is_safe_cut``), again not
   inside a special token.

Files are read in small windows: the whole file is never in memory here.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import BinaryIO, Iterator, Optional, Sequence

from bpe.patterns import find_safe_cut

WINDOW_BYTES = 1 << 16


@dataclass(frozen=True)
class Chunk:
    """Bytes ``[start, end)`` of the file at ``path``."""

    path: str
    start: int
    end: int

    @property
    def n_bytes(self) -> int:
        return self.end - self.start


def _read_at(file: BinaryIO, offset: int, n_bytes: int) -> bytes:
    file.seek(max(offset, 0))
    return file.read(n_bytes)


def _straddles_special(file: BinaryIO, position: int, specials: Sequence[bytes]) -> bool:
    """Whether an occurrence of any special token starts before ``position`` and ends after it."""
    longest = max(len(token) for token in specials)
    window_start = max(position - longest + 1, 0)
    window = _read_at(file, window_start, 2 * longest)
    cut = position - window_start
    for token in specials:
        found = window.find(token, max(cut - len(token) + 1, 0))
        while 0 <= found < cut:
            if found + len(token) > cut:
                return True
            found = window.find(token, found + 1)
    return False


def _find_first(file: BinaryIO, needle: bytes, start: int, stop: int) -> int:
    """The first offset in ``[start, stop)`` where ``needle`` begins, or -1."""
    position = start
    while position < stop:
        window = _read_at(file, position, WINDOW_BYTES + len(needle) - 1)
        found = window.find(needle)
        if found >= 0:
            return position + found if position + found < stop else -1
        if len(window) < WINDOW_BYTES + len(needle) - 1:
            return -1
        position += WINDOW_BYTES
    return -1


def _find_safe_cut(file: BinaryIO, start: int, stop: int, pattern: Optional[str]) -> int:
    """The first safe pattern cut in ``[start, stop)``, or -1."""
    position = start
    while position < stop:
        # Two bytes of left context and two of right context around each candidate.
        window = _read_at(file, position - 2, WINDOW_BYTES + 4)
        base = max(position - 2, 0)
        cut = find_safe_cut(window[:position - base + WINDOW_BYTES + 2], pattern,
                            start=position - base)
        if cut >= 0:
            return base + cut if base + cut < stop else -1
        if len(window) < WINDOW_BYTES + 4:
            return -1
        position += WINDOW_BYTES
    return -1


def find_boundary(file: BinaryIO, offset: int, reach: int, special_tokens: Sequence[str],
                  pattern: Optional[str], snap_token: Optional[str] = None) -> int:
    """The first valid chunk boundary in ``[offset, offset + reach)``, or -1 if none.

    ``snap_token`` (default: the first special token) is the document separator
    to snap to; no occurrence of any of ``special_tokens`` may straddle a boundary.
    """
    specials = [token.encode("utf-8") for token in special_tokens]
    if snap_token is None and specials:
        snap_token = special_tokens[0]
    stop = offset + reach
    if snap_token:
        snap = snap_token.encode("utf-8")
        position = offset
        while True:
            found = _find_first(file, snap, position, stop)
            if found < 0:
                break
            if not specials or not _straddles_special(file, found, specials):
                return found
            position = found + 1
    position = offset
    while True:
        found = _find_safe_cut(file, position, stop, pattern)
        if found < 0:
            return -1
        if not specials or not _straddles_special(file, found, specials):
            return found
        position = found + 1


def plan_chunks(paths: Sequence[str], chunk_size: int, special_tokens: Sequence[str] = (),
                pattern: Optional[str] = "gpt2", snap_token: Optional[str] = None) -> list[Chunk]:
    """Cut each file into chunks of about ``chunk_size`` bytes at valid boundaries.

    Boundaries snap to ``snap_token`` (default: the first special token) or to a
    safe cut of the pattern, never inside any special token. Boundaries that snap
    to the same position are kept once; a file with no valid boundary is one
    chunk. Empty files give no chunk.
    """
    return list(iter_chunks(paths, chunk_size, special_tokens, pattern, snap_token))


def iter_chunks(paths: Sequence[str], chunk_size: int, special_tokens: Sequence[str] = (),
                pattern: Optional[str] = "gpt2", snap_token: Optional[str] = None) -> Iterator[Chunk]:
    """The chunks of ``plan_chunks``, each as soon as its end is found: a caller can
    start encoding the first while later cuts are searched (on a corpus not in the
    page cache, the searches cost about a second per GB)."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    for path in paths:
        size = os.path.getsize(path)
        start = 0
        with open(path, "rb") as file:
            for target in range(chunk_size, size, chunk_size):
                if target <= start:
                    continue   # the previous boundary snapped past this target
                found = find_boundary(file, target, chunk_size, special_tokens, pattern, snap_token)
                if start < found < size:
                    yield Chunk(path, start, found)
                    start = found
        if size > start:
            yield Chunk(path, start, size)
