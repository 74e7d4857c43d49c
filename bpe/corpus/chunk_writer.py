"""Encoding one chunk of a corpus and writing its ids at their place in the output.

Chunk k's ids belong at the sum of the token counts of chunks 0..k-1. After
encoding a chunk, a worker publishes its count (``TokenOffsets``); if every
earlier count is known by then (the usual case: chunks are handed out in
order) the worker writes the ids itself, at once. Otherwise it hands them back
with the result, and the caller, which collects results in order and so knows
every offset, writes them (``ChunkWriter.place``). Nobody waits: a worker never
polls for an earlier chunk, and nothing is copied twice or joined at the end.

Buffers are reused from chunk to chunk (fresh ones for each 2 MiB chunk cost a
page fault per 4 KiB): a result holds its buffers until its ids are written.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
from typing import Callable, Generic, Optional, Sequence, TypeVar

import numpy as np

from bpe.corpus.chunking import Chunk
from bpe.errors import CorpusEncodeError
from bpe.files import checked_utf8, read_into


Buffer = TypeVar("Buffer")


class SparePool(Generic[Buffer]):
    """Buffers handed back once their ids are written, for the next unit of work
    (a fresh one costs a page fault per 4 KiB).

    Units end at a separator or a record, so their sizes vary around the nominal
    one: buffers made to measure would be outgrown, and replaced, unit after unit
    (with two workers, 15 sets of fresh pages instead of 4 on prose_en). So a
    new buffer holds a quarter more than asked, which holds nearly every later
    unit, and the oldest spare that is outgrown is let go when one is made.
    """

    def __init__(self, make: Callable[[int], Buffer], size: Callable[[Buffer], int]):
        self._make = make
        self._size = size
        self._lock = threading.Lock()
        self._spare: list = []

    def take(self, n: int) -> Buffer:
        """A spare buffer that holds ``n``, else a new one with room to spare."""
        with self._lock:
            fits = [k for k, spare in enumerate(self._spare) if self._size(spare) >= n]
            if fits:
                return self._spare.pop(fits[-1])
            if self._spare:
                self._spare.pop(0)           # outgrown: its memory goes back now
        return self._make(n + n // 4)

    def give_back(self, buffer: Buffer) -> None:
        with self._lock:
            self._spare.append(buffer)


class TokenOffsets:
    """Where each chunk's ids start, known once the counts of all earlier chunks are."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counts: dict[int, int] = {}
        self._known = 0          # chunks 0..known-1 have their counts in ...
        self._total = 0          # ... and this is their sum

    def publish(self, index: int, count: int) -> Optional[int]:
        """Record chunk ``index``'s token count; its token offset if every earlier
        chunk's count is known now, else None (the caller places it later)."""
        with self._lock:
            self._counts[index] = count
            offset = None
            while self._known in self._counts:
                if self._known == index:
                    offset = self._total
                self._total += self._counts.pop(self._known)
                self._known += 1
            return offset


@dataclasses.dataclass
class ChunkBuffers:
    """Reusable arrays for encoding chunks of up to ``len(raw)`` bytes."""

    raw: np.ndarray            # the chunk's bytes
    ids: np.ndarray            # its ids, uint32 (at most one per byte, but for SentencePiece's extras)
    narrow: np.ndarray         # the ids in the output dtype
    is_separator: np.ndarray   # where the separator token is

    @classmethod
    def for_bytes(cls, n_bytes: int, dtype: np.dtype) -> "ChunkBuffers":
        return cls(np.empty(n_bytes, np.uint8), np.empty(n_bytes, np.uint32),
                   np.empty(n_bytes, dtype), np.empty(n_bytes, bool))


@dataclasses.dataclass
class ChunkResult:
    """What encoding a chunk gave."""

    index: int
    n_tokens: int
    document_starts: np.ndarray      # uint64 offsets after each separator, within the chunk
    digest: str                      # sha256 of the chunk's bytes
    unwritten: Optional[np.ndarray]  # the ids, when the worker could not write them yet
    buffers: ChunkBuffers


@dataclasses.dataclass(frozen=True)
class ChunkSettings:
    """How every chunk of one run is encoded and written."""

    dtype: np.dtype                  # of the output ids
    allowed: Sequence[str]           # the special tokens recognised
    errors: str                      # "strict" or "replace", for invalid UTF-8
    separator_id: Optional[int]      # the id after which documents start, if any


class ChunkWriter:
    """Encodes chunks with ``encoder`` and writes their ids into the file open as ``fd``.

    Thread-safe: worker threads call ``encode``; the collecting thread calls
    ``place`` for each result, in chunk order. ``direct=False`` leaves every
    write to ``place`` (the path taken when an earlier chunk is late), for tests.
    """

    def __init__(self, encoder, fd: int, settings: ChunkSettings, direct: bool = True,
                 name: str = "the token array"):
        self.encoder = encoder
        self.fd = fd
        self.name = name          # the user's output path, for errors (fd is a temporary file)
        self.settings = settings
        self.direct = direct
        self.offsets = TokenOffsets()
        self._buffers: SparePool[ChunkBuffers] = SparePool(
            lambda n_bytes: ChunkBuffers.for_bytes(n_bytes, settings.dtype), lambda buffers: len(buffers.raw))

    def encode(self, index: int, chunk: Chunk) -> ChunkResult:
        """Encode chunk ``index`` and write its ids if its offset is known."""
        settings = self.settings
        buffers = self._buffers.take(chunk.n_bytes)
        raw = memoryview(buffers.raw)[:chunk.n_bytes]
        with open(chunk.path, "rb") as file:
            file.seek(chunk.start)
            if read_into(file, raw) != chunk.n_bytes:
                raise CorpusEncodeError(f"{chunk.path}: changed while being encoded (bytes "
                                        f"{chunk.start}-{chunk.end} could not be read)")
        digest = hashlib.sha256(raw).hexdigest()
        data = checked_utf8(raw, chunk.path, chunk.start, settings.errors)
        if len(data) > len(buffers.ids):   # errors="replace" may have made the text longer
            buffers = ChunkBuffers.for_bytes(len(data), settings.dtype)
        ids = self.encoder.encode_utf8(data, settings.allowed, buffers.ids)
        n_tokens = len(ids)
        if n_tokens > len(buffers.narrow):
            # More ids than bytes: a SentencePiece model's dummy prefix and BOS/EOS.
            buffers = ChunkBuffers.for_bytes(n_tokens, settings.dtype)
        if settings.dtype != np.uint32:
            narrow = buffers.narrow[:n_tokens]
            np.copyto(narrow, ids, casting="unsafe")   # ids < n_vocab: the dtype was checked to hold them
            ids = narrow
        if settings.separator_id is None:
            starts = np.empty(0, dtype=np.uint64)
        else:
            is_separator = np.equal(ids, settings.separator_id, out=buffers.is_separator[:n_tokens])
            starts = (np.flatnonzero(is_separator) + 1).astype(np.uint64)
        offset = self.offsets.publish(index, n_tokens)
        unwritten = ids
        if offset is not None and self.direct:
            self._write(ids, offset)
            unwritten = None
        return ChunkResult(index, n_tokens, starts, digest, unwritten, buffers)

    def place(self, result: ChunkResult, token_offset: int) -> None:
        """Write ``result``'s ids if the worker could not (at ``token_offset``, which
        the caller knows from the counts before it) and reuse its buffers."""
        if result.unwritten is not None:
            self._write(result.unwritten, token_offset)
        self._buffers.give_back(result.buffers)

    def _write(self, ids: np.ndarray, token_offset: int) -> None:
        view = memoryview(ids).cast("B")
        offset = token_offset * self.settings.dtype.itemsize
        while len(view):         # pwrite may write less than asked
            try:
                written = os.pwrite(self.fd, view, offset)
            except OSError as e:
                raise CorpusEncodeError(f"{self.name}: writing the token array failed: "
                                        f"{e.strerror or e}") from e
            view, offset = view[written:], offset + written
