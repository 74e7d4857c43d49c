"""bpe's own Parquet reader (``bpe.corpus.parquet``): the values it streams are
pyarrow's, whatever the writer's choices (codecs, page versions and sizes,
dictionaries, nulls, nesting), in blocks of any size; files it leaves to
pyarrow read the same; a damaged file is named, never read as something
else; and its kernels agree with a model of the format on any input."""
import gzip
import io
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe._parquet import gather_plain, hybrid, plain_values
from bpe.corpus import parquet as reader
from bpe.corpus import records
from bpe.corpus.sources import Source
from bpe.errors import CorpusDecodeError, CorpusFileError, CorpusRecordError

parquet = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("zstandard")
import pyarrow  # noqa: E402 - after the skip above
import pyarrow.compute  # noqa: E402


# --------------------------------------------------------------------------- the kernels against a model

def plain_form(values):
    return b"".join(len(v).to_bytes(4, "little") + v for v in values)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=30), st.data())
def test_plain_values_moves_whole_values_end_to_end_and_stops_at_a_cut_one(values, data):
    form = plain_form(values)
    # Bytes already taken before ``start``, of which ``written`` are values.
    start = data.draw(st.integers(0, 12))
    written = data.draw(st.integers(0, start))
    end = start + data.draw(st.integers(0, len(form)))
    first = data.draw(st.integers(0, 3))
    room = data.draw(st.integers(first + 1, first + len(values) + 2))
    most = data.draw(st.integers(0, len(values) + 1))
    block = np.frombuffer(bytearray(b"\xaa" * start + form + b"\xee" * 8), np.uint8).copy()
    offsets = np.full(room, -1, np.int64)
    n, used, moved = plain_values(block, start, end, written, offsets, first, most)
    # The model: whole values from ``start``, as many as fit before ``end``, in ``offsets`` and in ``most``.
    whole, position = [], start
    for value in values:
        if len(whole) == min(most, room - 1 - first) or position + 4 + len(value) > end:
            break
        whole.append(value)
        position += 4 + len(value)
    joined = b"".join(whole)
    assert (n, used, moved) == (len(whole), position, written + len(joined))
    assert block[written:written + len(joined)].tobytes() == joined
    assert offsets[first:first + n + 1].tolist() == (written + np.cumsum([0] + [len(v) for v in whole])).tolist()
    assert block[used:end].tobytes() == (b"\xaa" * start + form)[used:end]     # the cut value is left as it was


def hybrid_form(runs, bit_width):
    """The RLE / bit-packed hybrid of ``runs``: ("rle", value, count) or ("packed", values)."""
    out = bytearray()
    for run in runs:
        if run[0] == "rle":
            header = run[2] << 1
            body = run[1].to_bytes((bit_width + 7) // 8, "little")
        else:
            values = run[1] + [0] * (-len(run[1]) % 8)
            header = (len(values) // 8) << 1 | 1
            bits = sum(v << (k * bit_width) for k, v in enumerate(values))
            body = bits.to_bytes(len(values) * bit_width // 8, "little")
        while True:
            out.append((header & 0x7F) | (0x80 if header > 0x7F else 0))
            header >>= 7
            if not header:
                break
        out += body
    return bytes(out)


@st.composite
def hybrid_runs(draw):
    width = draw(st.integers(0, 32))
    value = st.integers(0, (1 << width) - 1)
    runs = draw(st.lists(st.one_of(st.tuples(st.just("rle"), value, st.integers(1, 300)),
                                   st.tuples(st.just("packed"), st.lists(value, min_size=1, max_size=40))),
                         min_size=1, max_size=8))
    return width, runs


@settings(max_examples=300, deadline=None)
@given(hybrid_runs(), st.data())
def test_hybrid_decodes_rle_and_bit_packed_runs_of_every_width(drawn, data):
    width, runs = drawn
    # A bit-packed run holds a multiple of 8 values: a writer pads only the last one.
    runs = [run if run[0] == "rle" or k == len(runs) - 1 else ("packed", run[1] + [0] * (-len(run[1]) % 8))
            for k, run in enumerate(runs)]
    expected = [v for run in runs for v in ([run[1]] * run[2] if run[0] == "rle" else run[1])]
    form = hybrid_form(runs, width)
    count = data.draw(st.integers(0, len(expected)))
    out = np.empty(count, np.uint32)
    used = hybrid(np.frombuffer(form, np.uint8), width, count, out)
    assert out.tolist() == expected[:count]
    assert 0 <= used <= len(form)
    if count == len(expected):
        assert used == len(form)
    # Cut short, it says so, or (the last run cut after the last value wanted's
    # byte, as some writers end a page) gives the same values; never reads past its end.
    if count:
        cut = data.draw(st.integers(0, max(0, used - 1)))
        short = np.empty(count, np.uint32)
        read = hybrid(np.frombuffer(form[:cut], np.uint8), width, count, short)
        assert read == -1 or (read <= cut and short.tolist() == expected[:count])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=30), min_size=1, max_size=12), st.data())
def test_gather_plain_streams_a_dictionary_by_index_into_buffers_of_any_size(dictionary, data):
    indices = data.draw(st.lists(st.integers(0, len(dictionary) - 1), max_size=40))
    offsets = np.cumsum([0] + [len(v) for v in dictionary]).astype(np.int64)
    values = np.frombuffer(b"".join(dictionary) or b"\0", np.uint8)
    stream = reader.Gathering(values, offsets, np.array(indices, np.uint32))
    got = bytearray()
    while True:
        buffer = np.empty(data.draw(st.integers(1, 50)), np.uint8)
        n = stream.readinto(buffer)
        if not n:
            break
        got += buffer[:n].tobytes()
    assert bytes(got) == plain_form([dictionary[k] for k in indices])
    assert gather_plain(values, offsets, np.array(indices, np.uint32), len(indices), 0, np.empty(4, np.uint8)) \
        == (len(indices), 0, 0)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=3000), min_size=1, max_size=4), st.integers(1, 5000))
def test_a_gzip_page_of_several_members_inflates_whole_into_buffers_of_any_size(members, size):
    stream = reader.Inflating(io.BytesIO(b"".join(gzip.compress(m) for m in members)))
    out, buffer = bytearray(), bytearray(size)
    while n := stream.readinto(memoryview(buffer)):
        out += buffer[:n]
    assert bytes(out) == b"".join(members)


# --------------------------------------------------------------------------- files as writers make them

def texts_of(n=300, seed=0, nulls=False, repeats=False):
    rng = np.random.default_rng(seed)
    words = ["the", "naïve", "café", "日本語", "😀", "\n", "  ", "tab\t", "x" * 300, ""]
    texts = [" ".join(rng.choice(words, rng.integers(0, 40))) for _ in range(n)]
    if repeats:
        texts = [texts[k % 7] for k in range(n)]
    if nulls:
        texts = [None if k % 11 == 3 else t for k, t in enumerate(texts)]
    return texts


def read_values(path, field=("text",), errors="replace"):
    """Every value ``parquet_units`` reads, as bytes, and the problems."""
    found, problems = [], []
    for unit in records.split_long(records.parquet_units(Source(str(path), "parquet"), field, errors), None):
        flat = unit.utf8()
        if flat is None:
            texts, skipped = unit.texts()
            found += [t.encode("utf-8") for t in texts]
        else:
            data, offsets, skipped = flat
            raw = data.tobytes()
            found += [raw[a:b] for a, b in zip(offsets.tolist(), offsets.tolist()[1:])]
        problems += skipped
        unit.done()
    return found, problems


def expected_values(path, field=("text",)):
    column = parquet.read_table(path).column(field[0]).combine_chunks()
    for key in field[1:]:
        column = pyarrow.compute.struct_field(column, key)        # null where the struct is
    rows = column.to_pylist()
    return [t.encode("utf-8") for t in rows if t is not None], [k + 1 for k, t in enumerate(rows) if t is None]


LAYOUTS = {
    "zstd": dict(compression="zstd"),
    "gzip, v2 pages": dict(compression="gzip", data_page_version="2.0"),
    "none, small pages": dict(compression="none", data_page_size=512, write_batch_size=3),
    "snappy": dict(compression="snappy"),
    "brotli, v2": dict(compression="brotli", data_page_version="2.0"),
    "lz4": dict(compression="lz4"),
    "zstd, no dictionary, pages of one row": dict(compression="zstd", use_dictionary=False, write_batch_size=1,
                                                  data_page_size=1),
    "zstd, a row group past pyarrow's first dictionary batch": dict(compression="zstd", row_group_size=5000,
                                                                     dictionary_pagesize_limit=2000),
    "v2 uncompressed values": dict(compression="zstd", data_page_version="2.0", use_dictionary=False,
                                   write_batch_size=7, data_page_size=100),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("texts", ["unique", "repeated", "with nulls"])
@pytest.mark.parametrize("block", [64, 3000, records.READ_BYTES])
def test_the_values_are_pyarrows_whatever_the_layout(tmp_path, monkeypatch, layout, texts, block):
    monkeypatch.setattr(records, "READ_BYTES", block)    # values cut across blocks, and longer than one
    rows = texts_of(1500 if "past" in layout else 300, nulls=texts == "with nulls", repeats=texts == "repeated")
    path = tmp_path / "t.parquet"
    options = {"row_group_size": 100, **LAYOUTS[layout]}
    parquet.write_table(pyarrow.table({"id": range(len(rows)), "text": pyarrow.array(rows, pyarrow.string())}),
                        path, **options)
    assert reader.read_plan(str(path), ("text",)) is not None          # read by bpe, not pyarrow
    values, null_rows = expected_values(path)
    found, problems = read_values(path)
    assert found == values
    assert problems == [f"{path}, row {row}, field 'text': null" for row in null_rows]


def test_a_dictionary_in_row_order_is_streamed_not_held(tmp_path, monkeypatch):
    # pyarrow dictionary-encodes a row group of under 1,024 rows whole: its
    # dictionary is its text. Read in blocks of 4 KiB, no block is larger.
    monkeypatch.setattr(records, "READ_BYTES", 4096)
    rows = texts_of(900)
    path = tmp_path / "t.parquet"
    parquet.write_table(pyarrow.table({"text": rows}), path, row_group_size=1000, compression="zstd")
    assert parquet.ParquetFile(path).metadata.row_group(0).column(0).has_dictionary_page
    sizes = []
    for unit in records.parquet_units(Source(str(path), "parquet"), ("text",), "strict"):
        sizes.append(len(unit.data.block))
        unit.done()
    assert max(sizes) <= 4096 < sum(sizes)
    found, _ = read_values(path)
    assert found == [t.encode("utf-8") for t in rows]


@pytest.mark.parametrize("optional_struct", [True, False])
def test_a_struct_field_and_a_required_column_read_with_their_levels(tmp_path, optional_struct):
    rows = texts_of(200, nulls=True)
    body = pyarrow.field("body", pyarrow.string(), nullable=True)
    meta = [None if k % 13 == 5 and optional_struct else {"body": t} for k, t in enumerate(rows)]
    schema = pyarrow.schema([pyarrow.field("meta", pyarrow.struct([body]), nullable=optional_struct),
                             pyarrow.field("plain", pyarrow.string(), nullable=False)])
    table = pyarrow.table({"meta": meta, "plain": [t or "" for t in rows]}, schema=schema)
    path = tmp_path / "t.parquet"
    parquet.write_table(table, path, row_group_size=64, compression="zstd")
    plan = reader.read_plan(str(path), ("meta", "body"))
    assert plan.max_definition == (2 if optional_struct else 1)
    assert reader.read_plan(str(path), ("plain",)).max_definition == 0
    values, null_rows = expected_values(path, ("meta", "body"))
    found, problems = read_values(path, ("meta", "body"))
    assert found == values and len(problems) == len(null_rows)
    assert read_values(path, ("plain",))[0] == [(t or "").encode("utf-8") for t in rows]


@pytest.mark.parametrize("nested", [False, True])
def test_a_file_bpe_does_not_read_is_read_by_pyarrow_the_same(tmp_path, monkeypatch, nested):
    monkeypatch.setattr(records, "READ_BYTES", 500)
    rows = texts_of(300, nulls=True)
    column = [None if k % 17 == 2 else {"body": t} for k, t in enumerate(rows)] if nested else rows
    field = ("meta", "body") if nested else ("text",)
    path = tmp_path / "t.parquet"
    parquet.write_table(pyarrow.table({field[0]: column}), path, use_dictionary=False, row_group_size=70,
                        column_encoding={".".join(field): "DELTA_LENGTH_BYTE_ARRAY"})
    assert reader.read_plan(str(path), field) is None
    values, null_rows = expected_values(path, field)
    dotted = ".".join(field)
    assert read_values(path, field) == (values, [f"{path}, row {row}, field {dotted!r}: null" for row in null_rows])
    with pytest.raises(CorpusRecordError, match=rf"row {null_rows[0]}, field {dotted!r}: null"):
        read_values(path, field, errors="strict")


def test_the_schema_is_checked_by_name_and_type(tmp_path):
    path = tmp_path / "t.parquet"
    table = pyarrow.table({"text": ["a"], "n": [1], "raw": [b"x"], "tags": [["a", "b"]],
                           "meta": [{"body": "b", "n": 2}]})
    parquet.write_table(table, path)
    for field, message in [("missing", r"no column 'missing' \(columns: text, n, raw, tags, meta\)"),
                           ("n", "a column of int64, not text"), ("raw", "a column of binary, not text"),
                           ("tags", "a column of lists, not text"),
                           ("meta", r"a column of struct<body, n>, not text"),
                           ("meta.x", r"no field 'x' in meta \(fields: body, n\)"),
                           ("meta.n", "a column of int64, not text")]:
        with pytest.raises(CorpusRecordError, match=message) as error:
            reader.read_plan(str(path), tuple(field.split(".")))
        assert error.value.where == "the schema" and not error.value.skippable


def test_invalid_utf8_names_its_row_past_the_nulls(tmp_path):
    path = tmp_path / "t.parquet"
    rows = [b"ok", None, None, b"fine", b"bad \xff here"]
    binary = pyarrow.array(rows, pyarrow.binary())
    # A string column of invalid UTF-8, made from a binary one's buffers (pyarrow's cast would check it).
    text = pyarrow.Array.from_buffers(pyarrow.string(), len(binary), binary.buffers(), binary.null_count)
    parquet.write_table(pyarrow.table({"text": text}), path)
    units = list(records.parquet_units(Source(str(path), "parquet"), ("text",), "replace"))
    with pytest.raises(CorpusDecodeError, match=r"t.parquet, row 5, field 'text': invalid UTF-8 at byte offset 4"):
        for unit in units:
            unit.errors = "strict"
            unit.texts()


# --------------------------------------------------------------------------- damaged files

def plain_file(tmp_path, rows, **options):
    path = tmp_path / "plain.parquet"
    parquet.write_table(pyarrow.table({"text": rows}), path, compression="none", use_dictionary=False,
                        write_statistics=False, **options)
    return path, path.read_bytes()


def test_a_damaged_file_is_named_never_read_as_other_values(tmp_path):
    path, data = plain_file(tmp_path, ["alpha", "beta", "gamma"], data_page_version="2.0")
    plan = reader.read_plan(str(path), ("text",))
    start = data.index(b"alpha") - 4                   # the first value's length
    damaged = tmp_path / "damaged.parquet"
    for where, patch, message in [
        (start, (10 ** 6).to_bytes(4, "little"), "page at byte 4: .*: a value (of 1000000 bytes )?runs past"),
        (start, (3).to_bytes(4, "little"), "page at byte 4: .*runs past its page|values where its pages hold"),
        (plan.chunks[0].start, b"\xff" * 12, "page at byte 4: a damaged Parquet file .*header|runs past"),
        (len(data) - 8 - int.from_bytes(data[-8:-4], "little"), b"\xff" * 8, "the footer: .*cannot be read"),
        (len(data) - 8, b"\xff\xff\xff\x7f", "the footer: a damaged Parquet file"),
    ]:
        damaged.write_bytes(data[:where] + patch + data[where + len(patch):])
        with pytest.raises(CorpusFileError, match=message):
            read_values(damaged)
    damaged.write_bytes(data[:len(data) // 2])
    with pytest.raises(CorpusFileError, match="damaged.parquet, the file: not a Parquet file"):
        read_values(damaged)


def test_a_damaged_compressed_page_is_named(tmp_path):
    path = tmp_path / "t.parquet"
    rows = texts_of(50)
    for compression in ("zstd", "gzip"):
        parquet.write_table(pyarrow.table({"text": rows}), path, compression=compression, use_dictionary=False,
                            write_statistics=False)
        data = bytearray(path.read_bytes())
        plan = reader.read_plan(str(path), ("text",))
        middle = (plan.chunks[0].start + plan.chunks[0].end) // 2
        data[middle:middle + 16] = b"\x00" * 16
        path.write_bytes(bytes(data))
        with pytest.raises(CorpusFileError, match=r"t.parquet, the page at byte \d+: a damaged Parquet file"):
            read_values(path)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_bytes_flipped_anywhere_give_pyarrows_values_or_a_named_error(tmp_path_factory, data):
    # Uncompressed PLAIN pages: a flipped byte of text changes the text (no
    # checksum says otherwise), so the reader must give what pyarrow reads
    # of the same bytes, or refuse the file with bpe's error, never hang.
    directory = tmp_path_factory.mktemp("flip")
    path, original = plain_file(directory, ["one", "two two", "three", "", "four"], row_group_size=2)
    flipped = bytearray(original)
    for _ in range(data.draw(st.integers(1, 3))):
        flipped[data.draw(st.integers(0, len(flipped) - 1))] ^= data.draw(st.integers(1, 255))
    path.write_bytes(bytes(flipped))
    try:
        found = read_values(path)[0]
    except (CorpusFileError, CorpusRecordError, CorpusDecodeError):
        return
    try:
        values, _ = expected_values(path)
    except Exception:          # pyarrow refuses what bpe read: only where the flip hid in what bpe skips
        return
    assert found == values


def test_pages_are_read_with_pread_and_close_their_file(tmp_path):
    path, _ = plain_file(tmp_path, ["a", "b"])
    before = len(os.listdir("/proc/self/fd"))
    assert read_values(path)[0] == [b"a", b"b"]
    assert len(os.listdir("/proc/self/fd")) == before


# --------------------------------------------------------------------------- files made by hand

def varint(n):
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def thrift(fields):
    """A struct of Thrift's compact protocol: fields (id, kind, value), kind "i32"
    "i64" "bin" "struct" or "list:<kind>"."""
    codes = {"i32": 5, "i64": 6, "bin": 8, "list": 9, "struct": 12}
    out, last = bytearray(), 0
    for number, kind, value in fields:
        out.append((number - last) << 4 | codes[kind.split(":")[0]])
        last = number
        out += element(kind, value, codes)
    return bytes(out + b"\0")


def element(kind, value, codes):
    if kind in ("i32", "i64"):
        return varint(value << 1 if value >= 0 else (-value << 1) - 1)
    if kind == "bin":
        return varint(len(value)) + value
    if kind == "struct":
        return thrift(value)
    inner = kind.split(":")[1]
    return bytes([len(value) << 4 | codes[inner]]) + b"".join(element(inner, v, codes) for v in value)


def data_page(values_form, n, encoding=0, levels=b""):
    body = levels + values_form
    return thrift([(1, "i32", 0), (2, "i32", len(body)), (3, "i32", len(body)),
                   (5, "struct", [(1, "i32", n), (2, "i32", encoding), (3, "i32", 3), (4, "i32", 3)])]) + body


def dictionary_page(values, n=None):
    body = plain_form(values)
    return thrift([(1, "i32", 2), (2, "i32", len(body)), (3, "i32", len(body)),
                   (7, "struct", [(1, "i32", len(values) if n is None else n), (2, "i32", 0)])]) + body


def handmade(path, pages, n_rows, optional=False, dictionary=False):
    """A Parquet file of one text column in one row group, of ``pages``."""
    chunk = b"".join(pages)
    schema = [[(4, "bin", b"schema"), (5, "i32", 1)],
              [(1, "i32", 6), (3, "i32", 1 if optional else 0), (4, "bin", b"text"), (6, "i32", 0)]]
    meta = [(1, "i32", 6), (2, "list:i32", [0, 3, 8] if dictionary else [0, 3]), (3, "list:bin", [b"text"]),
            (4, "i32", 0), (5, "i64", n_rows), (6, "i64", len(chunk)), (7, "i64", len(chunk)), (9, "i64", 4)]
    if dictionary:
        meta.append((11, "i64", 4))
    group = [(1, "list:struct", [[(2, "i64", 4 + len(chunk)), (3, "struct", meta)]]), (2, "i64", len(chunk)),
             (3, "i64", n_rows)]
    footer = thrift([(1, "i32", 1), (2, "list:struct", schema), (3, "i64", n_rows), (4, "list:struct", [group])])
    path.write_bytes(b"PAR1" + chunk + footer + len(footer).to_bytes(4, "little") + b"PAR1")
    return path


def test_what_follows_a_pages_values_is_passed_over(tmp_path):
    # fastparquet ends a page's values with 8 zero bytes; a page may end with
    # a fragment too short for a length. Neither is a value, nor joins the next page's.
    path = handmade(tmp_path / "t.parquet", [data_page(plain_form([b"hello", b"world"]) + b"\0" * 8, 2),
                                             data_page(plain_form([b"a"]) + b"\x02\x00", 1),
                                             data_page(plain_form([b""]), 1)], 4)
    assert expected_values(path)[0] == [b"hello", b"world", b"a", b""]
    assert read_values(path)[0] == [b"hello", b"world", b"a", b""]
    short = handmade(tmp_path / "short.parquet", [data_page(plain_form([b"a"]) + b"\x02\x00", 2)], 2)
    with pytest.raises(CorpusFileError, match="short.parquet, the page at byte 4: .*runs past its page"):
        read_values(short)


def test_a_dictionary_streamed_in_order_is_read_again_for_a_later_page(tmp_path):
    # Pages 1 and 2 index the dictionary 0, 1: it is streamed as their values.
    # Page 3 indexes it again. (pyarrow's pages of nulls after such pages need nothing of it.)
    def runs(*values):                                     # one RLE run a value, bit width 1
        return bytes([1]) + b"".join(varint(1 << 1) + bytes([v]) for v in values)

    path = handmade(tmp_path / "t.parquet", [dictionary_page([b"a", b"b"]), data_page(runs(0), 1, 8),
                                             data_page(runs(1), 1, 8), data_page(runs(1, 0), 2, 8)], 4,
                    dictionary=True)
    assert expected_values(path)[0] == [b"a", b"b", b"b", b"a"]
    assert read_values(path)[0] == [b"a", b"b", b"b", b"a"]
    rows = ["a", "b", None, None]
    parquet.write_table(pyarrow.table({"text": rows}), tmp_path / "p.parquet", data_page_size=1, write_batch_size=1)
    assert read_values(tmp_path / "p.parquet") == ([b"a", b"b"], [f"{tmp_path / 'p.parquet'}, row {r}, field "
                                                                   f"'text': null" for r in (3, 4)])


def test_counts_and_numbers_no_file_could_hold_are_damage_not_memory(tmp_path):
    for name, pages in [("dictionary", [dictionary_page([b"a"], n=1 << 33), data_page(b"", 1, 8)]),
                        ("page", [data_page(plain_form([b"a"]), 1 << 40)])]:
        path = handmade(tmp_path / f"{name}.parquet", pages, 1, dictionary=name == "dictionary")
        with pytest.raises(CorpusFileError, match=rf"{name}.parquet, the page at byte 4: .*not Parquet's"):
            read_values(path)
    # A varint of a million bytes in the footer: refused at its eleventh byte.
    footer = b"\x15" + b"\xff" * 1_000_000 + b"\x01\x00"
    (tmp_path / "varint.parquet").write_bytes(b"PAR1" + footer + len(footer).to_bytes(4, "little") + b"PAR1")
    with pytest.raises(CorpusFileError, match="the footer: .*its metadata cannot be read"):
        read_values(tmp_path / "varint.parquet")


def test_the_hybrid_refuses_a_value_wider_than_its_width_and_a_run_cut_before_its_last_group():
    out = np.empty(2, np.uint32)
    assert hybrid(np.frombuffer(varint(2 << 1) + bytes([25]), np.uint8), 3, 2, out) == -1   # 25 needs 5 bits
    assert hybrid(np.frombuffer(varint(2 << 1) + bytes([5]), np.uint8), 3, 2, out) == 2 and out.tolist() == [5, 5]
    # Four values of 3 bits in a run of one group, cut after their 2 bytes: read.
    # The same run claiming two or more groups: the cut is not within its last one.
    values = [1, 2, 3, 4]
    packed = sum(v << (3 * k) for k, v in enumerate(values)).to_bytes(2, "little")
    out = np.empty(4, np.uint32)
    assert hybrid(np.frombuffer(varint(1 << 1 | 1) + packed, np.uint8), 3, 4, out) == 3 and out.tolist() == values
    for groups in (2, 3, 100):
        assert hybrid(np.frombuffer(varint(groups << 1 | 1) + packed, np.uint8), 3, 4, out) == -1


def test_a_footer_whose_counts_disagree_or_that_ends_early_is_damage(tmp_path):
    path = handmade(tmp_path / "t.parquet", [data_page(plain_form([b"a", b"b"]), 2)], 2)
    data = path.read_bytes()
    length = int.from_bytes(data[-8:-4], "little")
    footer = data[-8 - length:-8]
    assert footer.endswith(b"\0") and footer.count(varint(2 << 1)) >= 1
    # The file's rows (field 3, an i64 of 2 rows: zigzag 4) said to be 3: rows disagree.
    wrong = footer.replace(bytes([0x16, 4]), bytes([0x16, 6]), 1)
    assert wrong != footer
    (tmp_path / "rows.parquet").write_bytes(data[:-8 - length] + wrong + data[-8:])
    with pytest.raises(CorpusFileError, match=r"the footer: .*row groups of 2 rows in a file of 3"):
        read_values(tmp_path / "rows.parquet")
    # A STOP where the row groups begin: the metadata ends before its bytes do (pyarrow refuses it too).
    cut = footer.index(bytes([0x19, 0x1C]))
    (tmp_path / "stop.parquet").write_bytes(data[:-8 - length] + footer[:cut] + b"\0" + footer[cut + 1:] + data[-8:])
    with pytest.raises(CorpusFileError, match="the footer: .*its metadata ends after"):
        read_values(tmp_path / "stop.parquet")


def test_a_definition_level_above_the_columns_is_damage(tmp_path):
    levels = bytes([2 << 1, 1, 2 << 1, 2])          # RLE: 1, 1, then 2, 2 (bit width 1 holds no 2)
    page = data_page(plain_form([b"a", b"b"]), 4, levels=len(levels).to_bytes(4, "little") + levels)
    path = handmade(tmp_path / "t.parquet", [page], 4, optional=True)
    with pytest.raises(CorpusFileError, match="the page at byte 4: .*definition levels cannot be read"):
        read_values(path)
    levels = bytes([2 << 1, 1, 1 << 1 | 1, 0b0000_0110])   # RLE 1, 1; bit-packed (width 1) 0, 1, 1, 0 ...
    page = data_page(plain_form([b"a", b"b", b"c", b"d"]), 6, levels=len(levels).to_bytes(4, "little") + levels)
    assert read_values(handmade(tmp_path / "ok.parquet", [page], 6, optional=True))[0] == [b"a", b"b", b"c", b"d"]


@pytest.mark.parametrize("block", [5, 64, records.READ_BYTES])
def test_a_gzip_pages_checksum_is_checked_past_its_last_value(tmp_path, monkeypatch, block):
    monkeypatch.setattr(records, "READ_BYTES", block)
    path = tmp_path / "t.parquet"
    parquet.write_table(pyarrow.table({"text": ["alpha", "beta" * 10, "gamma"]}), path, compression="gzip",
                        use_dictionary=False, write_statistics=False)
    assert read_values(path)[0] == [b"alpha", b"beta" * 10, b"gamma"]
    data = bytearray(path.read_bytes())
    plan = reader.read_plan(str(path), ("text",))
    data[plan.chunks[0].end - 8] ^= 0xFF            # the member's CRC-32, after every value
    path.write_bytes(bytes(data))
    with pytest.raises(CorpusFileError, match="does not decompress"):
        read_values(path)


def test_a_block_filled_to_its_end_by_a_padded_pages_values(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "READ_BYTES", 16)
    values = [b"x" * 12, b"y" * 12, b""]            # 16 bytes each with its length: a block each
    path = handmade(tmp_path / "t.parquet", [data_page(plain_form(values[:2]) + b"\0" * 40, 2),
                                             data_page(plain_form(values[2:]) + b"\0" * 3, 1)], 3)
    assert read_values(path)[0] == values == expected_values(path)[0]
