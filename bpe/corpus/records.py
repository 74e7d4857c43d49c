"""Reading corpora as a stream: plain or compressed text, JSON Lines, Parquet,
Python texts.

``units`` reads the sources found by ``bpe.corpus.sources`` in order, as units for
the encoders and the counters. The thread that reads does only what must be
done in order (decompressing, cutting at a line end, taking a Parquet page's
values: ``bpe.corpus.parquet``); what costs the most is left to the workers,
in ``Records.texts`` and ``Records.utf8``: parsing JSON, checking UTF-8.

* A unit of ``Records`` holds whole records: lines of JSON Lines (one JSON
  object a line, the text at ``field``, dotted for nested objects), values
  of a Parquet column, or Python strs. A record is one document: it is encoded as
  ``encode_ordinary`` encodes it, then the separator.
* A unit of text is a stretch of a text file, plain or compressed, cut where
  ``encode_file`` cuts its chunks (before a separator, else at a safe cut of a
  built-in pattern, never inside a special token), so stretches encode to the
  whole's ids: special tokens are recognised, documents separated by the
  separator in the text.

A bad record (invalid JSON, no text at the field, not UTF-8) follows
``errors``: "strict" raises ``CorpusRecordError`` (or ``CorpusDecodeError``)
naming the file, the line or row, and the field; "replace" reads invalid
UTF-8 as U+FFFD and skips a record with no text, naming it in the unit's
``problems``, which the caller reports. zstandard and pyarrow are optional
(``pip install "bpe[formats]"``); a file that needs one names it.
"""
from __future__ import annotations

import bz2
import dataclasses
import gzip
import hashlib
import io
import json
import lzma
from typing import Iterator, Optional, Sequence, Union

import numpy as np

from bpe._jsonl import text_fields
from bpe._scanner import first_invalid_utf8
from bpe.corpus import parquet
from bpe.corpus.chunking import find_boundary
from bpe.errors import CorpusDecodeError, CorpusFileError, CorpusRecordError, MissingExtraError
from bpe.files import check_errors, checked_utf8, read_into, zstd_reader
from bpe.patterns import find_safe_cut
from bpe.corpus.sources import Source

#: Bytes read from a stream at a time: a unit of text, or of JSON Lines (as
#: large as encode_file's chunks) ...
READ_BYTES = 2 << 20
#: ... in pieces of this many (see ``bpe.files.read_into``).
READ_PIECE = 256 << 10
#: Characters of Python texts in one unit.
TEXT_CHARS = 2 << 20


@dataclasses.dataclass
class Problems:
    """Records skipped under ``errors="replace"``: how many, and the first few named."""

    count: int = 0
    examples: list = dataclasses.field(default_factory=list)

    def extend(self, problems: Sequence[str]) -> None:
        self.count += len(problems)
        self.examples.extend(problems[:max(0, 5 - len(self.examples))])

    def __str__(self) -> str:
        if not self.count:
            return ""
        more = f" and {self.count - len(self.examples)} more" if self.count > len(self.examples) else ""
        return f"skipped {self.count} bad record(s): {'; '.join(self.examples)}{more}"


class Digest(io.RawIOBase):
    """A file read through this is hashed as it is read: what the sidecar's
    ``inputs_fingerprint`` is made of, without reading a file twice."""

    def __init__(self, path: str):
        super().__init__()
        self.file = open(path, "rb")
        self.sha256 = hashlib.sha256()

    def readinto(self, buffer) -> int:
        n = self.file.readinto(buffer)
        self.sha256.update(memoryview(buffer)[:n])
        return n

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.file.close()
        super().close()


def file_digest(path: str) -> Digest:
    """A ``Digest`` of the whole file, read now (for a reader that opens the file
    itself: pyarrow)."""
    digest = Digest(path)
    with digest:
        while digest.read(1 << 20):
            pass
    return digest


def open_stream(source: Source, digest: Optional[Digest] = None):
    """The bytes of a source, decompressed: a stream to fill buffers from with
    ``read_into`` (no buffered layer between: each byte is copied once, into
    the caller's buffer)."""
    raw = digest if digest is not None else Digest(source.path)
    if source.compression is None:
        return raw
    if source.compression == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if source.compression == "bz2":
        return bz2.BZ2File(raw, mode="rb")
    if source.compression == "xz":
        return lzma.LZMAFile(raw, mode="rb")
    return zstd_reader(raw, source.path, READ_PIECE)


def field_of(record, field: Sequence[str]):
    """``record[a][b]...`` for the dotted path ``field``, or None where it is missing."""
    value = record
    for key in field:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


# --------------------------------------------------------------------------- records

@dataclasses.dataclass
class Pieces:
    """Records' text, parsed: texts in one UTF-8 buffer (text t at
    ``data[offsets[t]:offsets[t + 1]]``), each a record or a piece of a long
    one (``starts``, ``ends``: whether it starts, and ends, its record)."""

    data: np.ndarray
    offsets: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    problems: list


@dataclasses.dataclass
class Records:
    """Records: ``kind`` "jsonl" (``data``: bytes of whole lines, the first of
    them line ``first``, at byte ``offset`` of the decompressed file), "parquet"
    (``data``: ``bpe.corpus.parquet.Values``, which know their rows), "texts"
    (``data``: a list of str), or "pieces" (``data``: ``Pieces``, parsed
    already)."""

    kind: str
    data: object
    path: str = ""
    field: tuple = ("text",)
    errors: str = "strict"
    first: int = 1
    offset: int = 0
    compressed: bool = False
    recycle: Optional[tuple] = None      # (spare list, block): where ``done`` hands the block back
    n_lines: int = 0                     # of JSON Lines: the most records the block can hold

    def done(self) -> None:
        """The records are read: their block may be reused for a later read (a
        fresh one costs its pages' faults, 2 MiB at a time, zeroed)."""
        if self.recycle is not None:
            spare, block = self.recycle
            self.recycle = self.data = None
            if len(block) == READ_BYTES:              # one grown for a long record is let go
                spare.append(block)

    def __post_init__(self):
        # About how much text: for batching and progress (kept when ``done`` lets go of the data).
        if self.kind == "texts":
            self.n_chars = sum(len(text) for text in self.data)
        elif self.kind == "pieces":
            self.n_chars = len(self.data.data)
        else:
            self.n_chars = len(self.data) if self.kind == "jsonl" else len(self.data.data)

    def record_bounds(self) -> Optional[tuple[np.ndarray, np.ndarray]]:
        """``(starts, ends)`` of ``Pieces``: which texts start, and end, a record;
        None where each text is a whole record."""
        return (self.data.starts, self.data.ends) if self.kind == "pieces" else None

    def texts(self) -> tuple[list[str], list[str]]:
        """The records' texts, and the problems of those skipped."""
        if self.kind == "texts":
            return self.data, []
        if self.kind == "pieces":
            raw, bounds = self.data.data.tobytes(), self.data.offsets.tolist()
            return [raw[a:b].decode("utf-8") for a, b in zip(bounds, bounds[1:])], self.data.problems
        if self.kind == "parquet":
            return self._parquet_texts()
        return self._jsonl_texts()

    def utf8(self, text: Optional[np.ndarray] = None,
             offsets: Optional[np.ndarray] = None) -> Optional[tuple[np.ndarray, np.ndarray, list[str]]]:
        """``(data, offsets, problems)``: the records' text as UTF-8 in one buffer,
        record r at ``data[offsets[r]:offsets[r + 1]]``, without a str per record
        (Parquet's column is that already; ``bpe._jsonl`` reads JSON Lines so,
        into ``text`` and ``offsets`` if given); None where ``texts`` is the way."""
        if self.kind == "pieces":
            return self.data.data, self.data.offsets, self.data.problems
        if self.kind == "jsonl":
            found = text_fields(self.data, tuple(key.encode("utf-8") for key in self.field), text, offsets)
            return None if found is None else (*found, [])
        if self.kind != "parquet":
            return None
        values = self.data
        if first_invalid_utf8(values.data) >= 0:     # rare: each record decoded on its own, named
            return None
        data = values.data
        if self.recycle is not None:                 # its block goes back to the reader at ``done``
            if text is not None and len(text) >= len(data):
                text[:len(data)] = data
                data = text[:len(data)]
            else:
                data = data.copy()
        return data, values.offsets, values.problems

    def _jsonl_texts(self) -> tuple[list[str], list[str]]:
        loads = json.loads          # bpe._jsonl's rule: what this accepts, and how it reads it
        dotted = ".".join(self.field)
        texts, problems = [], []
        offset = self.offset
        for number, line in enumerate(bytes(self.data).split(b"\n"), start=self.first):
            start = offset
            offset += len(line) + 1
            if not line.strip():
                continue
            where = f"line {number}"
            try:
                record = loads(line)
            except ValueError as e:
                bad = first_invalid_utf8(line)
                if bad >= 0 and self.errors == "strict":
                    what = f"{self.path}{' (decompressed)' if self.compressed else ''}, {where}"
                    raise CorpusDecodeError(what, start + bad, "invalid byte") from None
                try:
                    if bad < 0:
                        raise
                    record = loads(line.decode("utf-8", "replace"))
                except ValueError:
                    if self.errors == "strict":
                        raise CorpusRecordError(self.path, where, dotted, f"not valid JSON ({e})") from None
                    problems.append(f"{self.path}, {where}: not valid JSON")
                    continue
            text = field_of(record, self.field)
            if not isinstance(text, str):
                why = "missing or null" if text is None else f"a {type(text).__name__}, not text"
                if self.errors == "strict":
                    raise CorpusRecordError(self.path, where, dotted, why)
                problems.append(f"{self.path}, {where}, field {dotted!r}: {why}")
                continue
            if not text.isascii():
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:      # a lone surrogate escaped: U+FFFD, as bpe._jsonl writes it
                    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            texts.append(text)
        return texts, problems

    def _parquet_texts(self) -> tuple[list[str], list[str]]:
        values = self.data
        raw, bounds = values.data.tobytes(), values.offsets.tolist()
        texts = []
        for k, (start, end) in enumerate(zip(bounds, bounds[1:])):
            value = raw[start:end]
            bad = first_invalid_utf8(value)
            if bad >= 0 and self.errors == "strict":
                raise CorpusDecodeError(f"{self.path}, row {values.row(k)}, field {'.'.join(self.field)!r}", bad,
                                        "invalid byte")
            texts.append(value.decode("utf-8", "replace"))
        return texts, values.problems


def jsonl_units(source: Source, field: tuple, errors: str, digest: Optional[Digest]) -> Iterator[Records]:
    """A JSON Lines source as ``Records`` of whole lines, about ``READ_BYTES`` each.

    Each block is read into an array of its own, handed out as it is; only the
    unfinished last line is copied, to the front of the next."""
    tail = np.empty(0, np.uint8)
    line, offset = 1, 0
    spare: list = []            # blocks their workers are done with (``Records.done``)
    with open_stream(source, digest) as stream:
        while True:
            size = max(READ_BYTES, 2 * len(tail))                         # a line longer than that: room
            block = spare.pop() if spare and len(spare[-1]) >= size else np.empty(size, np.uint8)
            block[:len(tail)] = tail
            n = read_into(stream, memoryview(block)[len(tail):], READ_PIECE)
            end = len(tail) + n
            newlines = np.flatnonzero(block[:end] == 10)
            cut = end if n == 0 else (int(newlines[-1]) + 1 if len(newlines) else 0)
            if cut > 0:
                yield Records("jsonl", block[:cut], source.path, field, errors, line, offset,
                              source.compression is not None, (spare, block), len(newlines) + 1)
                line += len(newlines)
                offset += cut
            if n == 0:
                return
            tail = block[cut:end].copy()


def parquet_units(source: Source, field: tuple, errors: str) -> Iterator[Records]:
    """A Parquet file's column ``field`` (a struct's field for a dotted path) as
    ``Records`` of about ``READ_BYTES`` of text: read page by page by
    ``bpe.corpus.parquet``, or by pyarrow where that does not read the file."""
    plan = parquet.read_plan(source.path, field)
    if plan is None:
        yield from pyarrow_units(source, field, errors)
        return
    spare: list = []            # blocks their workers are done with (``Records.done``)
    for values in parquet.value_blocks(plan, errors, READ_BYTES, spare):
        recycle = (spare, values.block) if values.block is not None else None
        yield Records("parquet", values, source.path, field, errors, recycle=recycle)


def pyarrow_units(source: Source, field: tuple, errors: str) -> Iterator[Records]:
    """``parquet_units`` of a file read by pyarrow, in batches of rows."""
    try:
        import pyarrow
        import pyarrow.compute as compute
        import pyarrow.parquet as parquet_module
    except ImportError:
        raise MissingExtraError(f"{source.path}: reading this Parquet file needs the pyarrow package: "
                                'pip install "bpe[formats]" (or pyarrow)') from None
    dotted = ".".join(field)
    try:
        # Read through a buffer of 1 MiB, a page at a time: pyarrow's default
        # (pre_buffer, which reads a whole column chunk ahead into buffers of
        # its own) took five times as long in a fresh process.
        file = parquet_module.ParquetFile(source.path, pre_buffer=False, buffer_size=1 << 20)
    except (pyarrow.ArrowException, OSError) as e:
        raise CorpusFileError(source.path, "the file", f"not a Parquet file ({e})") from None
    # Batches of about READ_BYTES of text by the file's own average row, decoded
    # on this thread (pyarrow's threads would take the workers' cores).
    metadata = file.metadata
    text_bytes = sum(metadata.row_group(g).total_byte_size for g in range(metadata.num_row_groups))
    batch_rows = int(min(max(READ_BYTES * max(metadata.num_rows, 1) // max(text_bytes, 1), 1), 1 << 16))
    row = value = 0                     # rows read, and values (rows not null) among them
    null_rows: list = []
    # pyarrow's allocator (mimalloc) keeps the pages of the batches freed: they
    # are given back batch by batch.
    pool = pyarrow.default_memory_pool()
    batches = file.iter_batches(batch_size=batch_rows, columns=[field[0]], use_threads=False)
    while True:
        try:
            batch = next(batches, None)
        except (pyarrow.ArrowException, OSError) as e:
            raise CorpusFileError(source.path, f"row {row + 1} on", f"pyarrow cannot read it ({e})") from None
        if batch is None:
            break
        pool.release_unused()
        column = batch.column(0)
        for key in field[1:]:                   # the schema was checked by ``parquet.read_plan``
            column = compute.struct_field(column, key)     # null where the struct is (``.field`` gives "")
        problems = []
        if column.null_count:
            rows = [row + k for k, valid in enumerate(column.is_valid().to_pylist()) if not valid]
            if errors == "strict":
                raise CorpusRecordError(source.path, f"row {rows[0] + 1}", dotted, "null")
            null_rows.extend(rows)
            problems = [f"{source.path}, row {r + 1}, field {dotted!r}: null" for r in rows]
            column = column.drop_null()
        if not len(column):
            if problems:
                yield Records("parquet", parquet.Values.none(value, null_rows, problems), source.path, field, errors)
            row += len(batch)
            continue
        if pyarrow.types.is_string_view(column.type):
            column = column.cast(pyarrow.large_string())
        _, offset_buffer, data_buffer = column.buffers()
        wide = pyarrow.types.is_large_string(column.type)
        offsets = np.frombuffer(offset_buffer, dtype=np.int64 if wide else np.int32)[
            column.offset:column.offset + len(column) + 1].astype(np.int64)
        data = np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.empty(0, np.uint8)
        # Units of about READ_BYTES of text, however long the rows are.
        cuts = np.unique(np.searchsorted(offsets - offsets[0], np.arange(READ_BYTES, offsets[-1] - offsets[0] + 1,
                                                                         READ_BYTES)))
        for start, stop in zip([0, *cuts.tolist()], [*cuts.tolist(), len(column)]):
            if stop > start or problems:
                base = int(offsets[start])
                yield Records("parquet", parquet.Values(data[base:int(offsets[stop])], offsets[start:stop + 1] - base,
                                                        value + start, null_rows, problems), source.path, field,
                              errors)
                problems = []
        row += len(batch)
        value += len(column)


def split_long(found: Iterator[Records], pattern: Optional[str]) -> Iterator[Records]:
    """``found``, where a unit holds more than ``2 * READ_BYTES`` of text (a long
    record: a book of 19 MB was a fifth of a corpus), parsed here and handed
    on as units of about ``READ_BYTES``, a long record cut into pieces at safe
    cuts of ``pattern`` as ``encode_file`` cuts a text file: so no worker holds
    a whole book while the others wait, nor its ids at 4 bytes a byte. (None:
    a pattern without safe cuts; such a record stays whole.)"""
    for records in found:
        flat = records.utf8() if records.n_chars > 2 * READ_BYTES and records.kind != "texts" else None
        if flat is None:
            yield records
            continue
        records.done()
        data, offsets, problems = flat
        cuts, starts, ends = _piece_bounds(data, offsets, pattern)
        first = 0
        while first < len(starts):
            last = first + 1
            while last < len(starts) and cuts[last + 1] - cuts[first] <= READ_BYTES:
                last += 1
            base = cuts[first]
            yield Records("pieces", Pieces(data[base:cuts[last]], cuts[first:last + 1] - base, starts[first:last],
                                           ends[first:last], problems if first == 0 else []))
            first = last
        if not len(starts) and problems:
            yield Records("pieces", Pieces(data[:0], np.zeros(1, np.int64), starts, ends, problems))


def _piece_bounds(data: np.ndarray, offsets: np.ndarray,
                  pattern: Optional[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The texts' bounds: ``offsets``, and safe cuts about ``READ_BYTES`` apart
    inside each longer record; and whether each text starts, and ends, a record."""
    found = [offsets]
    for record in np.flatnonzero(np.diff(offsets) > READ_BYTES).tolist():
        start, end = int(offsets[record]), int(offsets[record + 1])
        target = start + READ_BYTES
        while target < end:
            # The first safe cut from ``target`` on, with two bytes of context each side.
            window = data[target - 2:min(target + READ_BYTES + 2, end)].tobytes()
            cut = find_safe_cut(window, pattern, start=2)
            if cut > 0:
                found.append(np.array([target - 2 + cut], np.int64))
                target += cut - 2
            target += READ_BYTES
    cuts = np.concatenate(found)
    order = np.argsort(cuts, kind="stable")
    is_record_bound = np.concatenate([np.ones(len(offsets), bool)] + [np.zeros(len(f), bool) for f in found[1:]])
    cuts, is_record_bound = cuts[order], is_record_bound[order]
    # An empty record starts and ends at one offset: its bounds are kept, each a text of its own.
    return cuts, is_record_bound[:-1], is_record_bound[1:]


def text_stretches(source: Source, special_tokens: Sequence[str], separator: Optional[str],
                   pattern: Optional[str], errors: str, digest: Optional[Digest] = None) -> Iterator[bytes]:
    """A text source's UTF-8 in stretches that encode independently to the ids of
    the whole (see the module docstring); a stretch with no cut is held until
    one comes (or the end)."""
    pending, offset = b"", 0
    where = f"{source.path} (decompressed)" if source.compression else source.path
    buffer = bytearray(READ_BYTES)
    with open_stream(source, digest) as stream:
        while True:
            n = read_into(stream, memoryview(buffer), READ_PIECE)
            data = pending + buffer[:n] if pending else bytes(buffer[:n])
            if not n:
                if data:
                    yield checked_utf8(data, where, offset, errors)
                return
            cut = -1
            if len(data) >= READ_BYTES:
                middle = len(data) // 2
                cut = find_boundary(io.BytesIO(data), middle, len(data) - middle, special_tokens, pattern,
                                    separator or "")
            if cut > 0:
                yield checked_utf8(data[:cut], where, offset, errors)
                offset += cut
                pending = data[cut:]
            else:
                pending = data


# --------------------------------------------------------------------------- units

@dataclasses.dataclass
class Unit:
    """What an encoder takes at once: ``records``, or ``text`` (checked UTF-8 bytes
    of a text file); ``source_start``: the first unit of its source (a document
    starts there)."""

    records: Optional[Records] = None
    text: Optional[bytes] = None
    source_start: bool = False

    @property
    def n_chars(self) -> int:
        return self.records.n_chars if self.records is not None else len(self.text)


def units(sources: Sequence[Source], text_field: str, errors: str, special_tokens: Sequence[str],
          separator: Optional[str], pattern: Optional[str], digests: Optional[list] = None) -> Iterator[Unit]:
    """Every source's text, in order, as ``Unit`` s; with ``digests``, a ``Digest``
    of each source's bytes is appended to it as the source is read."""
    errors = check_errors(errors)
    field = tuple(text_field.split("."))
    for source in sources:
        digest = None
        if digests is not None:
            digest = file_digest(source.path) if source.kind == "parquet" else Digest(source.path)
            digests.append(digest)
        if source.kind == "jsonl":
            found = (Unit(records=records)
                     for records in split_long(jsonl_units(source, field, errors, digest), pattern))
        elif source.kind == "parquet":
            found = (Unit(records=records) for records in split_long(parquet_units(source, field, errors), pattern))
        else:
            found = (Unit(text=text) for text in text_stretches(source, special_tokens, separator, pattern, errors,
                                                                digest))
        first = True
        for unit in found:
            unit.source_start = first
            first = False
            yield unit


def text_units(texts, text_field: str = "text") -> Iterator[Unit]:
    """Python texts as ``Unit`` s of records, ``TEXT_CHARS`` at a time: an iterable
    of str, or a Hugging Face ``datasets.Dataset`` / ``IterableDataset`` (its
    ``text_field`` column)."""
    if is_dataset(texts):
        texts = dataset_texts(texts, text_field)
    batch, size, first = [], 0, True
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"text {index} is a {type(text).__name__}, not a str")
        batch.append(text)
        size += len(text)
        if size >= TEXT_CHARS:
            yield Unit(records=Records("texts", batch), source_start=first)
            batch, size, first = [], 0, False
    if batch:
        yield Unit(records=Records("texts", batch), source_start=first)


def is_dataset(texts) -> bool:
    """Whether ``texts`` is a Hugging Face ``datasets`` dataset (not imported here)."""
    return type(texts).__module__.split(".")[0] == "datasets"


def dataset_texts(dataset, column: str = "text", batch_size: int = 1000) -> Iterator[str]:
    """The texts of a Hugging Face ``datasets.Dataset`` (read a batch of rows at a
    time) or ``IterableDataset`` (streamed): ``column``, dotted for a nested field."""
    path = column.split(".")
    if hasattr(dataset, "iter") and hasattr(dataset, "num_rows"):        # Dataset: batches of columns
        rows = (value for batch in dataset.iter(batch_size=batch_size) for value in batch[path[0]])
        values = (field_of(value, path[1:]) for value in rows) if len(path) > 1 else rows
    else:                                                                 # IterableDataset, or rows
        values = (field_of(row, path) for row in dataset)
    for index, text in enumerate(values):
        if not isinstance(text, str):
            raise ValueError(f"row {index}: {column!r} is "
                             f"{type(text).__name__ if text is not None else 'missing'}, not text")
        yield text


def texts_of(items: Sequence[Union[str, bytes, Unit]]) -> tuple[list, list[str]]:
    """The texts of units for a counter, in order (a record's str, a stretch's
    bytes), parsed here (on the counter's worker), and the problems of records
    skipped."""
    texts: list = []
    problems: list[str] = []
    for item in items:
        if not isinstance(item, Unit):
            texts.append(item)
        elif item.records is None:
            texts.append(item.text)
        else:
            flat = item.records.utf8()
            if flat is not None:                  # a Parquet column: each record's bytes, no str
                data, offsets, skipped = flat
                raw, bounds = data.tobytes(), offsets.tolist()
                found = [raw[a:b] for a, b in zip(bounds, bounds[1:])]
            else:
                found, skipped = item.records.texts()
            texts.extend(found)
            problems.extend(skipped)
    return texts, problems
