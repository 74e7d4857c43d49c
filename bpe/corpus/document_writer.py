"""Encoding corpora read as a stream: records (JSON Lines, Parquet, Python texts)
and compressed text.

The calling thread reads (``bpe.corpus.records.units``: decompressing, cutting at line
ends, reading row groups); worker threads parse and encode each unit
(``bpe._jsonl`` reads JSON without the GIL, as the kernels encode), and the
calling thread appends their ids to the output in order. A record is one document: its ids are
``encode_ordinary``'s, then the separator. A stretch of text is encoded as
``encode_file`` encodes a chunk: special tokens recognised, documents starting
after each separator.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
from typing import Iterable, Optional

import numpy as np

from bpe._lists import ids_with_separators
from bpe.corpus.chunk_writer import ChunkSettings, SparePool
from bpe.errors import CorpusEncodeError
from bpe.corpus.records import READ_BYTES, Problems, Unit

#: A buffer of more items than this (made for an outsized unit) is not kept for reuse.
KEPT_ITEMS = 3 * READ_BYTES


@dataclasses.dataclass
class UnitResult:
    ids: np.ndarray              # in the output dtype: a view of a buffer given back once written
    document_starts: np.ndarray  # uint64, within the unit
    problems: list[str]          # records skipped under errors="replace"
    digest: Optional[str]        # sha256 of Python texts' UTF-8 (no file to hash)
    n_bytes: int                 # UTF-8 bytes of the text encoded (not of the file's syntax or compression)
    buffer: Optional[np.ndarray] = None


class DocumentEncoder:
    """Encodes units with ``encoder`` (thread-safe): records without special
    tokens, each followed by the separator; text with ``settings.allowed``.

    Buffers are reused from unit to unit, as ``ChunkWriter`` reuses its own
    (fresh ones cost a page fault per 4 KiB): each thread keeps its scratch
    (the records' text, the ids), and the output buffers come back through
    ``give_back`` once their ids are written."""

    def __init__(self, encoder, settings: ChunkSettings):
        self.encoder = encoder
        self.settings = settings
        self._local = threading.local()
        self._outputs: SparePool[np.ndarray] = SparePool(lambda n: np.empty(n, settings.dtype), len)

    def _scratch(self, name: str, n: int, dtype) -> np.ndarray:
        """This thread's buffer ``name``, of at least ``n`` items; one for an
        outsized unit (a long record) is not kept, lest it stay the peak."""
        buffer = getattr(self._local, name, None)
        if buffer is None or len(buffer) < n:
            buffer = np.empty(n + n // 4, dtype)
            if n <= KEPT_ITEMS:
                setattr(self._local, name, buffer)
        return buffer

    def give_back(self, result: UnitResult) -> None:
        if result.buffer is not None and len(result.buffer) <= KEPT_ITEMS:
            self._outputs.give_back(result.buffer)

    def encode(self, unit: Unit) -> UnitResult:
        if unit.records is None:
            return self._encode_text(unit)
        records = unit.records
        problems: list[str] = []
        digest, n_bytes = None, 0
        flat = None
        if records.kind != "texts":
            flat = records.utf8(self._scratch("text", records.n_chars, np.uint8),
                                self._scratch("offsets", records.n_lines + 1, np.int64))
        if flat is not None:
            records.done()                             # its text is in the scratch buffer now
            data, offsets, problems = flat
            n_bytes = int(offsets[-1] - offsets[0])
            ids, id_offsets = self.encoder.encode_utf8_texts(data, offsets, (),
                                                             self._scratch("ids", len(data), np.uint32))
        else:
            texts, problems = records.texts()
            records.done()
            hashed = hashlib.sha256() if records.kind == "texts" else None
            for text in texts:
                encoded = text.encode("utf-8", "surrogatepass")
                if hashed is not None:
                    hashed.update(encoded)
                n_bytes += len(encoded)
            digest = None if hashed is None else hashed.hexdigest()
            ids, id_offsets = self.encoder.encode_strs(texts, ())
        bounds = records.record_bounds()           # the pieces of a long record: one record, one separator
        record_starts, ends = bounds if bounds is not None else (None, None)
        starts = id_offsets[:-1].astype(np.uint64)
        separator = self.settings.separator_id
        if separator is None:
            buffer = self._outputs.take(len(ids))
            out = buffer[:len(ids)]
            np.copyto(out, ids, casting="unsafe")      # ids < n_vocab: the dtype was checked to hold them
        else:
            n_out = len(ids) + (len(starts) if ends is None else int(np.count_nonzero(ends)))
            buffer = self._outputs.take(n_out)
            out = buffer[:n_out]
            ids_with_separators(ids, id_offsets, separator, out, None if ends is None else ends.view(np.uint8))
            # Text t is as many ids further on as separators came before it.
            before = np.arange(len(starts), dtype=np.uint64) if ends is None else \
                np.concatenate(([0], np.cumsum(ends[:-1]))).astype(np.uint64)[:len(starts)]
            starts += before
        if record_starts is not None:
            starts = starts[record_starts]
        return UnitResult(out, starts, problems, digest, n_bytes, buffer)

    def _encode_text(self, unit: Unit) -> UnitResult:
        ids = self.encoder.encode_utf8(unit.text, self.settings.allowed,
                                       self._scratch("ids", len(unit.text), np.uint32))
        starts = [np.zeros(1, np.uint64)] if unit.source_start else []
        if self.settings.separator_id is not None:
            starts.append((np.flatnonzero(ids == self.settings.separator_id) + 1).astype(np.uint64))
        buffer = self._outputs.take(len(ids))
        out = buffer[:len(ids)]
        np.copyto(out, ids, casting="unsafe")
        starts = np.concatenate(starts) if starts else np.empty(0, np.uint64)
        return UnitResult(out, starts, [], None, len(unit.text), buffer)


def append_ids(fd: int, ids: np.ndarray, name: str) -> None:
    """Write ``ids`` at the end of the file open as ``fd``."""
    view = memoryview(np.ascontiguousarray(ids)).cast("B")
    while len(view):
        try:
            written = os.write(fd, view)
        except OSError as e:
            raise CorpusEncodeError(f"{name}: writing the token array failed: {e.strerror or e}") from e
        view = view[written:]


def collect(results: Iterable[tuple[Unit, UnitResult]], writer: DocumentEncoder, fd: int, name: str, bar,
            problems: Problems, digests: list) -> tuple[int, np.ndarray, int]:
    """Append each result's ids in order; the token count, document starts (sorted,
    each once, below the count: a separator that ends the corpus starts nothing)
    and the UTF-8 bytes of Python texts. Problems and digests are gathered."""
    n_tokens, n_bytes = 0, 0
    document_starts: list[np.ndarray] = []
    for unit, result in results:
        append_ids(fd, result.ids, name)
        writer.give_back(result)
        document_starts.append(result.document_starts + np.uint64(n_tokens))
        n_tokens += len(result.ids)
        n_bytes += result.n_bytes
        problems.extend(result.problems)
        if result.digest is not None:
            digests.append(result.digest)
        bar.update(unit.n_chars)
    starts = np.concatenate(document_starts) if document_starts else np.empty(0, np.uint64)
    starts.sort()
    # An empty record with no separator starts where the next one does: kept once.
    starts = starts[np.concatenate(([True], starts[1:] != starts[:-1]))] if len(starts) else starts
    return n_tokens, starts[starts < n_tokens], n_bytes
