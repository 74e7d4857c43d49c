"""A Parquet file's text column, read page by page as a stream of values.

Why not pyarrow: it decompresses a page whole before it hands out a row, and
its writer ends a page only every 1,024 rows, so a row group of long
documents is one page (code_linux's largest: 356 MB of text, 1.3 GB of
memory to read). Here a page's values are decompressed a block at a time
(zstd, gzip, or none; snappy, brotli and LZ4 a page at a time, by pyarrow's
codecs, which are then imported), and ``bpe._parquet`` moves them end to
end, so a unit of records is about ``READ_BYTES`` of text however the file
was written.

What this reads: the footer (``FileMetaData``, in Thrift's compact protocol),
the column at ``field`` (a leaf of BYTE_ARRAY; dotted for a struct's field;
required or optional, at any depth, never inside a list), and its pages:
dictionary, data (v1 and v2), PLAIN or dictionary encoded. A file this does
not read (another encoding, the deprecated LZO or Hadoop LZ4 codecs, column
data in another file, an encrypted footer) is read by pyarrow instead
(``bpe.corpus.records``), as a file of any layout was before. A damaged file
stops the run with an error naming the file and the page's offset.
"""
from __future__ import annotations

import dataclasses
import functools
import io
import os
import struct
import zlib
from typing import Iterator, Optional

import numpy as np

from bpe._parquet import gather_plain, hybrid, plain_values
from bpe.errors import CorpusFileError, CorpusRecordError, MissingExtraError
from bpe.files import read_into, zstd_reader

MAGIC = b"PAR1"

# Thrift's compact protocol: the types of a field.
STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)
# parquet.thrift's enums, and the fields of its structs (numbered as there).
BYTE_ARRAY = 6
REQUIRED, OPTIONAL, REPEATED = 0, 1, 2
UTF8 = 0                                     # ConvertedType: a text column's annotation
DATA_PAGE, INDEX_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 1, 2, 3
PLAIN, PLAIN_DICTIONARY, RLE, RLE_DICTIONARY = 0, 2, 3, 8
READ_ENCODINGS = {PLAIN, PLAIN_DICTIONARY, RLE, RLE_DICTIONARY}
UNCOMPRESSED, SNAPPY, GZIP, LZO, BROTLI, LZ4, ZSTD, LZ4_RAW = range(8)
#: Codecs decompressed whole by pyarrow (``pyarrow.Codec``'s names).
WHOLE_PAGE_CODECS = {SNAPPY: "snappy", BROTLI: "brotli", LZ4_RAW: "lz4_raw"}
TYPE_NAMES = {0: "bool", 1: "int32", 2: "int64", 3: "int96", 4: "float", 5: "double", 6: "binary",
              7: "fixed_size_binary"}

#: Thrift's i32 fields (a page's sizes and counts) are below this.
I32_LIMIT = 1 << 31
#: A page header is read this many bytes at a time (more if it holds long statistics).
HEADER_READ = 1 << 12
#: Bytes of a page decompressed at a time.
PIECE = 256 << 10


class Truncated(Exception):
    """Thrift ran past the bytes at hand."""


# --------------------------------------------------------------------------- Thrift's compact protocol

def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise Truncated
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:                      # ten bytes hold any i64; a longer one is damage
            raise ValueError("a varint of more than ten bytes")


def _zigzag(data: bytes, pos: int) -> tuple[int, int]:
    value, pos = _varint(data, pos)
    return (value >> 1) ^ -(value & 1), pos


def _value(data: bytes, pos: int, kind: int):
    if kind in (TRUE, FALSE):                # in a list, a bool is a byte of its own
        if pos >= len(data):
            raise Truncated
        return data[pos] == TRUE, pos + 1
    if kind == BYTE:
        if pos >= len(data):
            raise Truncated
        return data[pos], pos + 1
    if kind in (I16, I32, I64):
        return _zigzag(data, pos)
    if kind == DOUBLE:
        if pos + 8 > len(data):
            raise Truncated
        return struct.unpack_from("<d", data, pos)[0], pos + 8
    if kind == BINARY:
        n, pos = _varint(data, pos)
        if pos + n > len(data):
            raise Truncated
        return data[pos:pos + n], pos + n
    if kind in (LIST, SET):
        if pos >= len(data):
            raise Truncated
        size, element = data[pos] >> 4, data[pos] & 0x0F
        pos += 1
        if size == 15:
            size, pos = _varint(data, pos)
        items = []
        for _ in range(size):
            item, pos = _value(data, pos, element)
            items.append(item)
        return items, pos
    if kind == MAP:
        size, pos = _varint(data, pos)
        if size == 0:
            return {}, pos
        if pos >= len(data):
            raise Truncated
        key_kind, value_kind = data[pos] >> 4, data[pos] & 0x0F
        pos += 1
        items = {}
        for _ in range(size):
            key, pos = _value(data, pos, key_kind)
            items[key], pos = _value(data, pos, value_kind)
        return items, pos
    if kind == STRUCT:
        return read_struct(data, pos)
    raise ValueError(f"a Thrift field of unknown type {kind}")


def read_struct(data: bytes, pos: int = 0) -> tuple[dict, int]:
    """A struct of Thrift's compact protocol at ``data[pos:]``: ``{field id: value}``
    (nested structs as dicts, lists as lists), and the position after it.
    Raises ``Truncated`` when ``data`` ends first, ValueError on nonsense."""
    fields: dict = {}
    last = 0
    while True:
        if pos >= len(data):
            raise Truncated
        byte = data[pos]
        pos += 1
        if byte == STOP:
            return fields, pos
        kind, delta = byte & 0x0F, byte >> 4
        if delta:
            last += delta
        else:
            last, pos = _zigzag(data, pos)
        if kind in (TRUE, FALSE):            # a struct's bool is in its field's type
            fields[last] = kind == TRUE
        else:
            fields[last], pos = _value(data, pos, kind)


# --------------------------------------------------------------------------- the file's plan

@dataclasses.dataclass
class ColumnChunk:
    """One row group's part of the column: its pages lie in ``[start, end)``."""

    codec: int
    start: int
    end: int
    num_values: int
    first_row: int                   # of the file, 0-based


@dataclasses.dataclass
class Plan:
    """What to read of a file: the text column's chunks, and its definition levels'
    largest value (the optional fields on its path: a value is there only at
    that level)."""

    path: str
    dotted: str
    chunks: list
    max_definition: int

    def damaged(self, where: str, why: str) -> CorpusFileError:
        return _damaged(self.path, self.dotted, where, why)


def _schema_error(path: str, dotted: str, why: str) -> CorpusRecordError:
    return CorpusRecordError(path, "the schema", dotted, why, False)


def read_plan(path: str, field: tuple) -> Optional[Plan]:
    """The plan of reading ``field`` of the Parquet file at ``path``; None where
    this module does not read the file (see the module's docstring: pyarrow
    does). Raises ``CorpusRecordError`` for a file that is no Parquet, or has
    no text at ``field``."""
    dotted = ".".join(field)
    metadata = _footer(path, dotted)
    if metadata is None:
        return None
    try:
        return _plan(path, field, dotted, metadata)
    except (CorpusFileError, CorpusRecordError):
        raise
    except (TypeError, AttributeError, ValueError, KeyError, IndexError):    # metadata of the wrong shape
        raise _damaged(path, dotted, "the footer", "its metadata is not Parquet's") from None


def _plan(path: str, field: tuple, dotted: str, metadata: dict) -> Optional[Plan]:
    schema = metadata.get(2)
    if not schema or not isinstance(schema, list):
        raise _damaged(path, dotted, "the footer", "no schema")
    # The schema is a tree flattened depth first: each element's children follow it.
    leaves, stack = [], []            # leaves: the elements from the top down to each leaf
    for element in schema[1:]:
        while stack and stack[-1][1] == 0:
            stack.pop()
        if stack:
            stack[-1][1] -= 1
        trail = [entry[0] for entry in stack] + [element]
        if element.get(5):
            stack.append([element, element[5]])
        else:
            leaves.append(trail)
    paths = [[e.get(4, b"").decode("utf-8", "replace") for e in trail] for trail in leaves]    # names
    top = list(dict.fromkeys(names[0] for names in paths))
    if field[0] not in top:
        raise _schema_error(path, dotted, f"no column {field[0]!r} (columns: {', '.join(top[:10])})")
    found = [k for k, names in enumerate(paths) if names == list(field)]
    if not found:
        inner = [names for names in paths if names[:len(field) - 1] == list(field[:-1])]
        if len(field) > 1 and inner and all(len(n) > len(field) - 1 for n in inner):
            known = sorted({n[len(field) - 1] for n in inner})
            raise _schema_error(path, dotted, f"no field {field[-1]!r} in {'.'.join(field[:-1])} "
                                             f"(fields: {', '.join(known[:10])})")
        raise _schema_error(path, dotted, f"a column of {_type_name(leaves, paths, field)}, not text")
    index = found[0]
    trail = leaves[index]
    leaf = trail[-1]
    if any(e.get(3) == REPEATED for e in trail):
        raise _schema_error(path, dotted, "a column of lists, not text")
    if leaf.get(1) != BYTE_ARRAY or not (leaf.get(6) == UTF8 or 1 in leaf.get(10, {})):
        raise _schema_error(path, dotted, f"a column of {_leaf_type(leaf)}, not text")
    chunks, row = [], 0
    groups = metadata.get(4)
    if not isinstance(groups, list):
        raise _damaged(path, dotted, "the footer", "no row groups")
    for group in groups:
        columns = group.get(1, [])
        if index >= len(columns):
            raise _damaged(path, dotted, "the footer", f"a row group of {len(columns)} columns")
        chunk = columns[index]
        meta = chunk.get(3)
        if chunk.get(1) is not None or meta is None:        # column data in another file
            return None
        if meta.get(4) not in range(8):
            raise _damaged(path, dotted, "the footer", f"a column chunk of codec {meta.get(4)}, which Parquet "
                                                       "does not have")
        if not set(meta.get(2, [])) <= READ_ENCODINGS or meta.get(4) not in (UNCOMPRESSED, GZIP, ZSTD,
                                                                             *WHOLE_PAGE_CODECS):
            return None
        starts = [offset for offset in (meta.get(11), meta.get(9)) if offset]   # dictionary first, if any
        start = _count(min(starts) if starts else 0)
        n_rows = _count(group.get(3, 0))
        if meta.get(5) != n_rows:                    # one value a row, as no list is on the path
            raise _damaged(path, dotted, "the footer", f"a row group of {n_rows} rows whose column has "
                                                       f"{meta.get(5)} values")
        chunks.append(ColumnChunk(meta[4], start, start + _count(meta.get(7, 0)), n_rows, row))
        row += n_rows
    if row != metadata.get(3):
        raise _damaged(path, dotted, "the footer", f"row groups of {row} rows in a file of {metadata.get(3)}")
    return Plan(path, dotted, chunks, sum(e.get(3) == OPTIONAL for e in trail))


def _count(value, limit: int = 1 << 63) -> int:
    """``value``, a count, size or offset read from the file: raises TypeError
    where it is not one below ``limit``."""
    if type(value) is not int or not 0 <= value < limit:
        raise TypeError(f"{value!r} is no count below {limit}")
    return value


def _footer(path: str, dotted: str) -> Optional[dict]:
    """The file's ``FileMetaData``, as ``read_struct`` gives it; None for an
    encrypted footer (pyarrow's to read, or refuse)."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(0)
            head = f.read(4)
            f.seek(max(size - 8, 0))
            tail = f.read(8)
            if size < 12 or head != MAGIC or tail[4:] not in (MAGIC, b"PARE"):
                raise CorpusFileError(path, "the file", "not a Parquet file (no PAR1 at its start and end)")
            if tail[4:] == b"PARE":
                return None
            length = int.from_bytes(tail[:4], "little")
            if length > size - 12:
                raise _damaged(path, dotted, "the footer", f"a footer of {length} bytes in a file of {size}")
            f.seek(size - 8 - length)
            data = f.read(length)
    except OSError as e:
        raise CorpusFileError(path, "the file", f"cannot be read ({e})") from None
    try:
        metadata, used = read_struct(data)
    except (Truncated, ValueError, TypeError, RecursionError):
        raise _damaged(path, dotted, "the footer", "its metadata cannot be read") from None
    if used != len(data):
        raise _damaged(path, dotted, "the footer", f"its metadata ends after {used} of its {len(data)} bytes")
    return metadata


def _leaf_type(leaf: dict) -> str:
    if leaf.get(1) == BYTE_ARRAY:
        return "binary"
    return TYPE_NAMES.get(leaf.get(1), f"physical type {leaf.get(1)}")


def _type_name(leaves: list, paths: list, field: tuple) -> str:
    """What ``field`` is, where it is not a leaf (``leaves`` the schema's, ``paths``
    their names): a list, or a struct (a group of fields)."""
    inner = [k for k, names in enumerate(paths) if names[:len(field)] == list(field)]
    if any(e.get(3) == REPEATED for k in inner for e in leaves[k]):
        return "lists"
    return f"struct<{', '.join(sorted({paths[k][len(field)] for k in inner}))}>" if inner else "no text"


def _damaged(path: str, dotted: str, where: str, why: str) -> CorpusFileError:
    return CorpusFileError(path, where, f"a damaged Parquet file (column {dotted!r}): {why}")


# --------------------------------------------------------------------------- pages

@dataclasses.dataclass
class Section:
    """A data page's values, PLAIN: ``stream`` gives ``n_bytes`` of them, ``n_values``
    values (and, from some writers, padding after them); ``null_rows``: the
    file's rows (0-based) of the page's nulls."""

    stream: object
    n_bytes: int
    n_values: int
    null_rows: list
    offset: int                      # of the page (its header) in the file


class _Reader(io.RawIOBase):
    def readable(self) -> bool:
        return True


class FileSlice(_Reader):
    """``length`` bytes of an open file from ``start``, read with ``os.pread``."""

    def __init__(self, fd: int, start: int, length: int):
        super().__init__()
        self.fd, self.position, self.left = fd, start, length

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.left)
        if n <= 0:
            return 0
        data = os.pread(self.fd, n, self.position)
        buffer[:len(data)] = data
        self.position += len(data)
        self.left -= len(data)
        return len(data)


class Inflating(_Reader):
    """A gzip stream (Parquet's GZIP: one or more gzip members) of ``source``, inflated."""

    def __init__(self, source):
        super().__init__()
        self.source = source
        self.inflate = zlib.decompressobj(wbits=31)
        self.pending = b""

    def readinto(self, buffer) -> int:
        while True:
            if self.inflate.eof:                  # a member ended: another may follow
                self.inflate = zlib.decompressobj(wbits=31)
            if not self.pending:
                self.pending = self.source.read(PIECE)
                if not self.pending:
                    return 0
            out = self.inflate.decompress(self.pending, len(buffer))
            # What it did not take: past the member's end, or past ``len(buffer)`` of output.
            self.pending = self.inflate.unused_data if self.inflate.eof else self.inflate.unconsumed_tail
            if out:
                buffer[:len(out)] = out
                return len(out)


class Decompressed(_Reader):
    """A decompressor's stream, whose errors name the page."""

    def __init__(self, stream, errors: tuple, damaged):
        super().__init__()
        self.stream, self.errors, self.damaged = stream, errors, damaged

    def readinto(self, buffer) -> int:
        try:
            return self.stream.readinto(buffer)
        except self.errors as e:
            raise self.damaged(f"it does not decompress ({e})") from None


class Gathering(_Reader):
    """The PLAIN form of a dictionary-encoded page's values, gathered from its
    dictionary (``data``, ``offsets``) a buffer at a time (a page of pyarrow's
    can be a whole row group's text, its dictionary too)."""

    def __init__(self, data: np.ndarray, offsets: np.ndarray, indices: np.ndarray):
        super().__init__()
        self.data, self.offsets, self.indices = data, offsets, indices
        self.k = self.within = 0

    def readinto(self, buffer) -> int:
        self.k, self.within, written = gather_plain(self.data, self.offsets, self.indices, self.k, self.within,
                                                    np.frombuffer(buffer, np.uint8))
        return written


def read_exactly(stream, n: int) -> bytes:
    """``n`` bytes of ``stream`` (fewer only at its end), read a piece at a time:
    no more memory than the stream has, whatever ``n`` a header claims."""
    parts = []
    while n > 0:
        part = stream.read(min(n, PIECE))
        if not part:
            break
        parts.append(part)
        n -= len(part)
    return b"".join(parts)


@dataclasses.dataclass
class Page:
    """A page, its levels read: its values are ``n_bytes`` of ``stream``."""

    kind: int
    offset: int                      # of its header in the file
    end: int                         # where the next page starts
    encoding: Optional[int]
    n_values: int                    # not null
    null_rows: list                  # the file's rows (0-based) of its nulls
    stream: object
    n_bytes: int

    @property
    def where(self) -> str:
        return f"the page at byte {self.offset}"


def sections(plan: Plan, fd: int, errors: str) -> Iterator[Section]:
    """The column's data pages, in order, each as a ``Section`` of PLAIN values
    (a dictionary-encoded page's values gathered from its dictionary, or the
    dictionary itself where it is the values in order: see ``_in_order``)."""
    for chunk in plan.chunks:
        dictionary = None                     # (data, offsets), read when a page first needs it
        dictionary_at = None                  # the offset of the chunk's dictionary page
        position, seen = chunk.start, 0
        while seen < chunk.num_values:
            if position >= chunk.end:
                raise plan.damaged(f"the column chunk at byte {chunk.start}",
                                   f"its pages end before its {chunk.num_values} values")
            page = _page(plan, fd, chunk, position, chunk.first_row + seen)
            position = page.end
            if page.kind == DICTIONARY_PAGE:
                dictionary_at, dictionary = page.offset, None
                found = _guarded(plan, page.where, _in_order, plan, fd, chunk, page, chunk.first_row + seen)
                if found is None:
                    continue
                section, position = found
            elif page.kind in (DATA_PAGE, DATA_PAGE_V2):
                if page.encoding != PLAIN and page.n_values and dictionary is None:
                    if dictionary_at is None:
                        raise plan.damaged(page.where, "a dictionary-encoded page with no dictionary")
                    first = _page(plan, fd, chunk, dictionary_at, chunk.first_row)
                    dictionary = _guarded(plan, first.where, _dictionary, plan, first)
                section = _guarded(plan, page.where, _section, plan, page, dictionary)
            else:
                continue
            if section.null_rows and errors == "strict":
                raise CorpusRecordError(plan.path, f"row {section.null_rows[0] + 1}", plan.dotted, "null")
            seen += section.n_values + len(section.null_rows)
            if seen > chunk.num_values:
                raise plan.damaged(f"the column chunk at byte {chunk.start}",
                                   f"pages of more than its {chunk.num_values} values")
            yield section


def _guarded(plan: Plan, where: str, function, *args):
    """``function(*args)``, where a header or count of the wrong shape or size
    (a TypeError, a ValueError from numpy, memory for a count no page holds)
    raises the file's error naming ``where``."""
    try:
        return function(*args)
    except (CorpusFileError, CorpusRecordError, MissingExtraError):
        raise
    except (TypeError, AttributeError, ValueError, OverflowError, MemoryError) as e:
        raise plan.damaged(where, f"its header is not Parquet's ({type(e).__name__}: {e})") from None


def _page(plan: Plan, fd: int, chunk: ColumnChunk, position: int, row: int) -> Page:
    """The page at ``position``, its first row ``row``: its header and levels read,
    its values a stream from the start."""
    return _guarded(plan, f"the page at byte {position}", _read_page, plan, fd, chunk, position, row)


def _read_page(plan: Plan, fd: int, chunk: ColumnChunk, position: int, row: int) -> Page:
    header, body = _page_header(plan, fd, position, chunk.end)
    kind, size, compressed = header.get(1), _count(header.get(2, 0), I32_LIMIT), _count(header.get(3, 0), I32_LIMIT)
    where = f"the page at byte {position}"
    if body + compressed > chunk.end:
        raise plan.damaged(where, "its size runs past its column chunk")
    page = Page(kind, position, body + compressed, None, 0, [], None, size)
    levels = None
    bits = plan.max_definition.bit_length()
    left = chunk.num_values - (row - chunk.first_row)       # a page holds no more values than its chunk has left
    if kind == DICTIONARY_PAGE:
        page.n_values = _count(header.get(7, {}).get(1, 0), size // 4 + 1)     # a PLAIN value takes 4 bytes or more
        page.stream = _body(plan, fd, chunk.codec, body, compressed, size, where)
        return page
    if kind == DATA_PAGE:
        fields = header.get(5, {})
        n_slots, page.encoding = _count(fields.get(1, 0), min(left + 1, I32_LIMIT)), fields.get(2)
        page.stream = _body(plan, fd, chunk.codec, body, compressed, size, where)
        if plan.max_definition:
            if fields.get(3) != RLE:
                raise plan.damaged(where, f"definition levels in encoding {fields.get(3)}, which the footer does "
                                          "not list")
            prefix = read_exactly(page.stream, 4)
            length = int.from_bytes(prefix, "little") if len(prefix) == 4 else -1
            data = read_exactly(page.stream, length) if 0 <= length <= size - 4 else b""
            if length < 0 or len(data) != length:
                raise plan.damaged(where, "its definition levels run past it")
            levels = _levels(plan, data, n_slots, bits, where)
            page.n_bytes -= 4 + length
    elif kind == DATA_PAGE_V2:
        fields = header.get(8, {})
        n_slots, page.encoding = _count(fields.get(1, 0), min(left + 1, I32_LIMIT)), fields.get(4)
        level_bytes = _count(fields.get(5, 0), I32_LIMIT)
        if fields.get(6, 0):
            raise plan.damaged(where, "repetition levels in a column that is in no list")
        if level_bytes > min(compressed, size):
            raise plan.damaged(where, "its definition levels run past it")
        if plan.max_definition:
            levels = _levels(plan, os.pread(fd, level_bytes, body), n_slots, bits, where)
        page.n_bytes = size - level_bytes
        codec = chunk.codec if fields.get(7, True) else UNCOMPRESSED
        page.stream = _body(plan, fd, codec, body + level_bytes, compressed - level_bytes, page.n_bytes, where)
    else:
        return page
    page.null_rows = [] if levels is None else (np.flatnonzero(levels != plan.max_definition) + row).tolist()
    page.n_values = n_slots - len(page.null_rows)
    if page.encoding not in (PLAIN, PLAIN_DICTIONARY, RLE_DICTIONARY):
        raise plan.damaged(where, f"values in encoding {page.encoding}, which the footer does not list")
    return page


def _indices(plan: Plan, page: Page) -> np.ndarray:
    """A dictionary-encoded page's indices (a byte of their bit width, then the hybrid)."""
    data = read_exactly(page.stream, page.n_bytes)
    indices = np.empty(page.n_values, np.uint32)
    if len(data) != page.n_bytes or not data or data[0] > 32 or \
            hybrid(np.frombuffer(data, np.uint8, offset=1), data[0], page.n_values, indices) < 0:
        raise plan.damaged(page.where, "its dictionary indices cannot be read")
    return indices


def _section(plan: Plan, page: Page, dictionary) -> Section:
    """A data page's values as a ``Section``."""
    if page.encoding == PLAIN or not page.n_values:
        return Section(page.stream, page.n_bytes, page.n_values, page.null_rows, page.offset)
    indices = _indices(plan, page)
    data, offsets = dictionary
    if int(indices.max()) >= len(offsets) - 1:
        raise plan.damaged(page.where, "a dictionary index past its dictionary")
    n_bytes = 4 * page.n_values + int((offsets[indices + 1] - offsets[indices]).sum())
    return Section(Gathering(data, offsets, indices), n_bytes, page.n_values, page.null_rows, page.offset)


def _in_order(plan: Plan, fd: int, chunk: ColumnChunk, dictionary: Page, row: int) -> Optional[tuple]:
    """Where the dictionary-encoded pages after ``dictionary`` index it 0, 1, 2, ...
    to its end, each value once (pyarrow's writer dictionary-encodes the
    first 1,024 rows of a column chunk, so a row group of fewer documents is
    all dictionary: as large as its text), the dictionary's own PLAIN
    values are theirs in order: a ``Section`` of them, streamed as a data
    page's are, and where the page after those starts. None otherwise (the
    dictionary is then read whole when a page needs it, and the pages
    gathered from it)."""
    position, expected, null_rows = dictionary.end, 0, []
    while position < chunk.end and expected < dictionary.n_values:
        page = _page(plan, fd, chunk, position, row + expected + len(null_rows))
        if page.kind not in (DATA_PAGE, DATA_PAGE_V2) or page.encoding == PLAIN:
            break
        if page.n_values:
            indices = _indices(plan, page)
            if not np.array_equal(indices, np.arange(expected, expected + len(indices), dtype=np.uint32)):
                return None
        expected += page.n_values
        null_rows += page.null_rows
        position = page.end
    if expected != dictionary.n_values or not expected:
        return None
    return Section(dictionary.stream, dictionary.n_bytes, expected, null_rows, dictionary.offset), position


def _page_header(plan: Plan, fd: int, position: int, end: int) -> tuple[dict, int]:
    """The page header at ``position``, and where the page's body starts."""
    wanted = HEADER_READ
    while True:
        data = os.pread(fd, min(wanted, end - position), position)
        try:
            header, used = read_struct(data)
            return header, position + used
        except Truncated:
            if len(data) < wanted:
                break
            wanted *= 4
        except (ValueError, TypeError, RecursionError):
            break
    raise plan.damaged(f"the page at byte {position}", "its header cannot be read")


def _body(plan: Plan, fd: int, codec: int, start: int, compressed: int, size: int, where: str):
    """A stream of a page's body (or of its values, in a v2 page), decompressed:
    ``size`` bytes of it. Bytes that do not decompress raise the file's error."""
    raw = FileSlice(fd, start, compressed)
    damaged = functools.partial(plan.damaged, where)
    if codec == UNCOMPRESSED:
        return raw
    if codec == GZIP:
        return Decompressed(Inflating(raw), (zlib.error,), damaged)
    if codec == ZSTD:
        stream = zstd_reader(raw, plan.path, PIECE)
        import zstandard                      # there: zstd_reader imported it

        return Decompressed(stream, (zstandard.ZstdError,), damaged)
    try:
        import pyarrow
    except ImportError:
        raise MissingExtraError(f"{plan.path}: reading Parquet compressed with {WHOLE_PAGE_CODECS[codec]} "
                                'needs the pyarrow package: pip install "bpe[formats]" (or pyarrow)') from None
    try:
        data = pyarrow.Codec(WHOLE_PAGE_CODECS[codec]).decompress(os.pread(fd, compressed, start),
                                                                   decompressed_size=size)
    except (pyarrow.ArrowException, OSError) as e:
        raise damaged(f"it does not decompress ({e})") from None
    return pyarrow.BufferReader(data)


def _dictionary(plan: Plan, page: Page):
    """A dictionary page's values: ``(data, offsets)``."""
    data = np.empty(page.n_bytes, np.uint8)
    filled = read_into(page.stream, memoryview(data), PIECE)
    if filled != page.n_bytes:
        raise plan.damaged(page.where, f"its {page.n_bytes} bytes end after {filled}")
    offsets = np.empty(page.n_values + 1, np.int64)
    found, _, _ = plain_values(data, 0, filled, 0, offsets, 0, page.n_values)
    if found != page.n_values:
        raise plan.damaged(page.where, f"a dictionary of {found} values where it says {page.n_values}")
    return data[:offsets[found]], offsets


def _levels(plan: Plan, data: bytes, count: int, bits: int, where: str) -> np.ndarray:
    levels = np.empty(count, np.uint32)
    if hybrid(np.frombuffer(data, np.uint8), bits, count, levels) < 0:
        raise plan.damaged(where, "its definition levels cannot be read")
    if count and int(levels.max()) > plan.max_definition:
        raise plan.damaged(where, f"a definition level above the column's {plan.max_definition}")
    return levels


# --------------------------------------------------------------------------- values, a block at a time

@dataclasses.dataclass
class Values:
    """Some of the column's values, end to end: value k at
    ``data[offsets[k]:offsets[k + 1]]``, the column's value number
    ``first_value + k`` (0-based, nulls not counted)."""

    data: np.ndarray
    offsets: np.ndarray
    first_value: int = 0
    null_rows: list = dataclasses.field(default_factory=list)   # the file's, 0-based, ascending: shared, and
    #                                                             only grown past these values' rows
    problems: list = dataclasses.field(default_factory=list)    # nulls skipped before these values
    block: Optional[np.ndarray] = None                          # what ``data`` is a view of, to reuse

    @classmethod
    def none(cls, first_value: int, null_rows: list, problems: list) -> "Values":
        """No values: only the problems of the nulls before ``first_value``."""
        return cls(np.empty(0, np.uint8), np.zeros(1, np.int64), first_value, null_rows, problems)

    def row(self, k: int) -> int:
        """The file's row (1-based) of value k."""
        row = self.first_value + k
        for null in self.null_rows:
            if null > row:
                break
            row += 1
        return row + 1


def value_blocks(plan: Plan, errors: str, block_bytes: int, spare: list) -> Iterator[Values]:
    """The column's values, about ``block_bytes`` of them at a time (a block is
    larger only to hold one longer value), in blocks taken from ``spare``
    where one is large enough (the caller puts blocks back when done). Each
    page's values are read to its count, and what follows them in the page
    (some writers pad a page) is passed over. Nulls follow ``errors``:
    "strict" raises, naming the row; else each is named in the next values'
    ``problems``."""
    if block_bytes < 4:
        raise ValueError(f"blocks of {block_bytes} bytes: too few for a value's length and its bytes")
    null_rows: list = []
    problems: list = []
    offsets = np.empty(block_bytes // 4 + 2, np.int64)
    block = np.empty(block_bytes, np.uint8)
    passed_over = memoryview(bytearray(PIECE))
    # The block: values moved end to end in [0, written), then bytes read but
    # not yet taken, in [start, fill); value ``value`` is its first.
    written = start = fill = n = value = 0
    with open(plan.path, "rb") as f:
        for section in sections(plan, f.fileno(), errors):
            null_rows.extend(section.null_rows)
            problems += [f"{plan.path}, row {null + 1}, field {plan.dotted!r}: null" for null in section.null_rows]
            wanted, left = section.n_values, section.n_bytes
            while wanted:
                found, start, written = plain_values(block, start, fill, written, offsets, n, wanted)
                n += found
                wanted -= found
                if not wanted:
                    break
                if fill == len(block) or n == len(offsets) - 1:         # full: hand out its values
                    if n:
                        yield Values(block[:written], offsets[:n + 1].copy(), value, null_rows, problems, block)
                        value += n
                        problems = []
                    elif len(block) == block_bytes:
                        spare.append(block)
                    tail = block[start:fill]
                    size = block_bytes
                    if len(tail) >= 4:                                   # a longer value: a block to hold it
                        need = 4 + int.from_bytes(tail[:4].tobytes(), "little")
                        if need > len(tail) + left:
                            raise plan.damaged(f"the page at byte {section.offset}",
                                               f"a value of {need - 4} bytes runs past its page")
                        size = max(size, need)
                    fresh = spare.pop() if spare and len(spare[-1]) >= size else np.empty(size, np.uint8)
                    fresh[:len(tail)] = tail
                    block, written, start, fill, n = fresh, 0, 0, len(tail), 0
                    continue
                if not left:
                    raise plan.damaged(f"the page at byte {section.offset}",
                                       f"its values end {section.n_values - wanted} values in of "
                                       f"{section.n_values}" if start == fill else "a value runs past its page")
                got = read_into(section.stream, memoryview(block)[fill:fill + min(left, len(block) - fill)], PIECE)
                if not got:
                    raise plan.damaged(f"the page at byte {section.offset}", f"its values end {left} bytes early")
                fill += got
                left -= got
            # What follows the page's last value (some writers pad a page) is read
            # and passed over: read, so that a gzip page's checksum is checked.
            fill = start
            while left:
                got = read_into(section.stream, passed_over[:min(left, PIECE)], PIECE)
                if not got:
                    raise plan.damaged(f"the page at byte {section.offset}", f"it ends {left} bytes early")
                left -= got
    if n:
        yield Values(block[:written], offsets[:n + 1].copy(), value, null_rows, problems, block)
    elif problems:
        yield Values.none(value + n, null_rows, problems)
