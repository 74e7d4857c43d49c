"""Corpora as they come: JSON Lines, Parquet, compressed text, directories as they
are, Python texts and ``datasets`` columns. A record's ids are ``encode_ordinary``'s
then the separator; training on records equals training on the equivalent
``.txt``; bad records are named, or skipped and counted; nothing else in a
directory is left out without a word."""
import bz2
import gzip
import json
import lzma
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe
from bpe.corpus import records, sources
from bpe.errors import CorpusDecodeError, CorpusFileError, CorpusRecordError

from conftest import SHAKESPEARE

EOT = "<|endoftext|>"
zstandard = pytest.importorskip("zstandard")
parquet = pytest.importorskip("pyarrow.parquet")
import pyarrow  # noqa: E402 - after the skip above

COMPRESS = {"": lambda data: data, ".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress,
            ".zst": lambda data: zstandard.ZstdCompressor().compress(data)}


@pytest.fixture(scope="module")
def tok():
    return bpe.load("gpt2")


def documents(n=120):
    """Shakespeare's paragraphs, and documents that test the edges: empty, a
    special token's text inside a record, non-ASCII, a lone newline."""
    paragraphs = [p for p in open(SHAKESPEARE, encoding="utf-8").read().split("\n\n") if p][:n]
    return paragraphs + ["", f"text with {EOT} inside", "naïve café 日本語 😀", "\n", "  trailing  "]


def jsonl_bytes(texts, field="text"):
    lines = []
    for k, text in enumerate(texts):
        record = {"id": k, "meta": {"body": text}} if field == "meta.body" else {"id": k, field: text}
        lines.append(json.dumps(record, ensure_ascii=k % 2 == 0))
    return ("\n".join(lines) + "\n").encode("utf-8")


def expected_records(tok, texts):
    ids, starts = [], []
    for text in texts:
        starts.append(len(ids))
        ids += tok.encode_ordinary(text) + [tok.special_tokens[EOT]]
    return ids, starts


def write_parquet(path, texts, row_group_size=16, nested=False):
    column = pyarrow.array([{"body": t} for t in texts]) if nested else pyarrow.array(texts)
    parquet.write_table(pyarrow.table({"id": list(range(len(texts))), "meta" if nested else "text": column}),
                        path, row_group_size=row_group_size)


@pytest.mark.parametrize("compression", list(COMPRESS))
@pytest.mark.parametrize("num_workers", [1, 2])
def test_jsonl_records_encode_as_encode_ordinary_then_the_separator(tok, tmp_path, compression, num_workers,
                                                                    monkeypatch):
    monkeypatch.setattr(records, "READ_BYTES", 2000)        # many units, in flight at once
    texts = documents()
    path = tmp_path / f"corpus.jsonl{compression}"
    path.write_bytes(COMPRESS[compression](jsonl_bytes(texts)))
    summary = tok.encode_file(path, tmp_path / "out.bin", num_workers=num_workers)
    ids, starts = expected_records(tok, texts)
    assert bpe.open_tokens(tmp_path / "out.bin").tolist() == ids
    assert bpe.read_document_index(tmp_path / "out.bin").tolist() == starts
    assert summary.documents == len(texts) and summary.tokens_out == len(ids)


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", r"\S+|\s+"])
def test_long_records_are_cut_at_safe_cuts_and_encode_the_same(tmp_path, monkeypatch, pattern):
    # Records of ~30 KB read in units of 1000 bytes: cut into pieces at safe
    # cuts; a custom pattern has no safe cut, and its records stay whole.
    monkeypatch.setattr(records, "READ_BYTES", 1000)
    tok = bpe.train(SHAKESPEARE, 400, [EOT], pattern=pattern)
    text = open(SHAKESPEARE, encoding="utf-8").read()
    texts = [text[:30_000], "short", text[30_000:61_000] + "日本語 😀", "", text[5:40]]
    (tmp_path / "long.jsonl").write_bytes(jsonl_bytes(texts))
    write_parquet(tmp_path / "long.parquet", texts)
    for name in ("long.jsonl", "long.parquet"):
        tok.encode_file(tmp_path / name, tmp_path / f"{name}.bin", num_workers=2)
        ids, starts = expected_records(tok, texts)
        assert bpe.open_tokens(tmp_path / f"{name}.bin").tolist() == ids, name
        assert bpe.read_document_index(tmp_path / f"{name}.bin").tolist() == starts


def test_a_nested_field_reads_the_same_in_c_and_in_python(tok, tmp_path, monkeypatch):
    texts = documents(30)
    (tmp_path / "nested.jsonl").write_bytes(jsonl_bytes(texts, "meta.body"))
    tok.encode_file(tmp_path / "nested.jsonl", tmp_path / "a.bin", text_field="meta.body")
    monkeypatch.setattr(records, "text_fields", lambda *args: None)    # as for lines the C reader refuses
    tok.encode_file(tmp_path / "nested.jsonl", tmp_path / "b.bin", text_field="meta.body")
    expected = expected_records(tok, texts)[0]
    assert bpe.open_tokens(tmp_path / "a.bin").tolist() == expected
    assert bpe.open_tokens(tmp_path / "b.bin").tolist() == expected


@pytest.mark.parametrize("nested", [False, True])
def test_parquet_rows_encode_as_records_a_row_group_at_a_time(tok, tmp_path, nested, monkeypatch):
    monkeypatch.setattr(records, "READ_BYTES", 3000)       # row groups cut into units by their bytes
    texts = documents(60)
    write_parquet(tmp_path / "corpus.parquet", texts, row_group_size=7, nested=nested)
    assert parquet.ParquetFile(tmp_path / "corpus.parquet").num_row_groups > 5
    tok.encode_file(tmp_path / "corpus.parquet", tmp_path / "out.bin", num_workers=2,
                    text_field="meta.body" if nested else "text")
    ids, starts = expected_records(tok, texts)
    assert bpe.open_tokens(tmp_path / "out.bin").tolist() == ids
    assert bpe.read_document_index(tmp_path / "out.bin").tolist() == starts


@pytest.mark.parametrize("compression", [".gz", ".bz2", ".xz", ".zst"])
@pytest.mark.parametrize("separators", [True, False])
def test_compressed_text_encodes_as_the_plain_file_does(tok, tmp_path, compression, separators, monkeypatch):
    # Read in blocks of 4 KiB: the stream is cut many times, before a separator
    # or (with none) at a safe cut, and the ids are the whole text's.
    monkeypatch.setattr(records, "READ_BYTES", 4096)
    text = open(SHAKESPEARE, encoding="utf-8").read()[:120_000]
    if separators:
        text = text.replace("\n\n", "\n\n" + EOT)
    (tmp_path / "plain.txt").write_text(text, encoding="utf-8")
    (tmp_path / f"packed.txt{compression}").write_bytes(COMPRESS[compression](text.encode()))
    tok.encode_file(tmp_path / "plain.txt", tmp_path / "plain.bin")
    tok.encode_file(tmp_path / f"packed.txt{compression}", tmp_path / "packed.bin", num_workers=2)
    assert bpe.open_tokens(tmp_path / "packed.bin").tolist() == tok.encode(text)
    assert (bpe.read_document_index(tmp_path / "packed.bin").tolist()
            == bpe.read_document_index(tmp_path / "plain.bin").tolist())


def test_compression_is_known_by_its_first_bytes_whatever_the_name(tok, tmp_path):
    texts = documents(10)
    (tmp_path / "really-gzip.jsonl").write_bytes(gzip.compress(jsonl_bytes(texts)))
    (tmp_path / "really-zstd.txt").write_bytes(zstandard.ZstdCompressor().compress(b"hello world"))
    plan = sources.find_sources(tmp_path)
    assert [(os.path.basename(s.path), s.kind, s.compression) for s in plan.sources] == [
        ("really-gzip.jsonl", "jsonl", "gzip"), ("really-zstd.txt", "text", "zstd")]
    tok.encode_file(tmp_path / "really-gzip.jsonl", tmp_path / "out.bin")
    assert bpe.open_tokens(tmp_path / "out.bin").tolist() == expected_records(tok, texts)[0]


def test_a_corpus_of_several_formats_reads_in_order(tok, tmp_path):
    first, second, third = documents(5), documents(9)[5:], ["closing words"]
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(jsonl_bytes(first)))
    write_parquet(tmp_path / "b.parquet", second)
    (tmp_path / "c.txt").write_text(third[0] + EOT + "more", encoding="utf-8")
    tok.encode_file(tmp_path, tmp_path.parent / f"{tmp_path.name}.bin")
    expected = expected_records(tok, first + second)[0] + tok.encode(third[0] + EOT + "more")
    assert bpe.open_tokens(tmp_path.parent / f"{tmp_path.name}.bin").tolist() == expected


def test_the_summary_counts_the_text_not_the_file(tok, tmp_path):
    # The same records as JSON Lines (with other fields), compressed, as Parquet,
    # and as a text file: the summary's bytes are the text's, whatever holds it.
    texts = documents(30)
    text_bytes = sum(len(text.encode("utf-8")) for text in texts)
    (tmp_path / "a.jsonl").write_bytes(jsonl_bytes(texts))
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(jsonl_bytes(texts)))
    write_parquet(tmp_path / "c.parquet", texts)
    (tmp_path / "d.txt").write_text(EOT.join(texts), encoding="utf-8")
    (tmp_path / "e.txt.xz").write_bytes(lzma.compress(EOT.join(texts).encode("utf-8")))
    for name, expected in [("a.jsonl", text_bytes), ("b.jsonl.gz", text_bytes), ("c.parquet", text_bytes),
                           ("d.txt", text_bytes + len(EOT) * (len(texts) - 1)),
                           ("e.txt.xz", text_bytes + len(EOT) * (len(texts) - 1))]:
        summary = tok.encode_file(tmp_path / name, tmp_path / f"{name}.bin", num_workers=2)
        assert summary.bytes_in == expected, name
        assert summary.bytes_per_token == pytest.approx(expected / summary.tokens_out)


@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(list("ab <|>endoftx\n\té日😀 ") + [EOT, "'s", "  "]),
                               max_size=20).map("".join), max_size=30))
def test_random_records_encode_exactly(tmp_path_factory, texts):
    tok = bpe.load("gpt2")
    path = tmp_path_factory.mktemp("random") / "r.jsonl"
    path.write_bytes(jsonl_bytes(texts) if texts else b"")
    tok.encode_file(path, path.with_suffix(".bin"), num_workers=2)
    ids, starts = expected_records(tok, texts)
    assert bpe.open_tokens(path.with_suffix(".bin")).tolist() == ids
    assert bpe.read_document_index(path.with_suffix(".bin")).tolist() == [s for s in starts if s < len(ids)]


# --------------------------------------------------------------------------- bad records

def test_a_bad_record_is_named_by_file_line_and_field(tok, tmp_path):
    path = tmp_path / "bad.jsonl"
    for line, reason in [('{"body": "x"}', "missing"), ('{"text": 3}', "a int, not text"),
                         ("{not json", "not valid JSON"), ('{"text": null}', "missing or null")]:
        path.write_text('{"text": "fine"}\n\n' + line + "\n", encoding="utf-8")
        with pytest.raises(CorpusRecordError) as error:
            tok.encode_file(path, tmp_path / "out.bin")
        assert error.value.path == str(path) and error.value.where == "line 3" and error.value.field == "text"
        assert reason in str(error.value)
        assert not (tmp_path / "out.bin").exists()


def test_invalid_utf8_in_a_record_names_the_line_and_byte(tok, tmp_path):
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"text": "fine"}\n{"text": "caf\xe9"}\n'))
    with pytest.raises(CorpusDecodeError) as error:
        tok.encode_file(path, tmp_path / "out.bin")
    assert "line 2" in error.value.path and "(decompressed)" in error.value.path
    assert error.value.offset == len(b'{"text": "fine"}\n') + len(b'{"text": "caf')


def test_errors_replace_skips_bad_records_counts_them_and_keeps_the_rest(tok, tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b'{"text": "one"}\n{"body": "x"}\n{oops\n{"text": "caf\xe9"}\n{"text": "two"}\n')
    summary = tok.encode_file(path, tmp_path / "out.bin", errors="replace")
    assert bpe.open_tokens(tmp_path / "out.bin").tolist() == expected_records(tok, ["one", "caf\ufffd", "two"])[0]
    assert summary.problems.startswith("skipped 2 bad record(s)")
    assert f"{path}, line 2, field 'text': missing" in summary.problems and "line 3: not valid JSON" in summary.problems


def test_a_parquet_null_row_and_a_missing_column_are_named(tok, tmp_path):
    path = tmp_path / "rows.parquet"
    parquet.write_table(pyarrow.table({"text": ["a", None, "b"]}), path)
    with pytest.raises(CorpusRecordError, match=r"row 2, field 'text': null"):
        tok.encode_file(path, tmp_path / "out.bin")
    summary = tok.encode_file(path, tmp_path / "out.bin", errors="replace")
    assert bpe.open_tokens(tmp_path / "out.bin").tolist() == expected_records(tok, ["a", "b"])[0]
    assert "row 2" in summary.problems
    with pytest.raises(CorpusRecordError, match=r"no column 'content' \(columns: text\)") as error:
        tok.encode_file(path, tmp_path / "out.bin", text_field="content", errors="replace")
    assert "errors='replace'" not in str(error.value)       # not a record to skip: the file's schema
    (tmp_path / "fake.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(CorpusFileError, match="fake.parquet, the file: not a Parquet file"):
        tok.encode_file(tmp_path / "fake.parquet", tmp_path / "out2.bin")


def test_a_missing_optional_reader_is_named(tok, tmp_path, monkeypatch):
    (tmp_path / "a.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(b'{"text": "x"}\n'))
    write_parquet(tmp_path / "b.parquet", ["x"])                                  # snappy: pyarrow's default
    parquet.write_table(pyarrow.table({"text": ["y"]}), tmp_path / "c.parquet", compression="zstd")
    parquet.write_table(pyarrow.table({"text": ["z"]}), tmp_path / "d.parquet",
                        column_encoding={"text": "DELTA_BYTE_ARRAY"}, use_dictionary=False)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    # bpe reads a Parquet file of zstd pages itself ...
    tok.encode_file(tmp_path / "c.parquet", tmp_path / "out.bin")
    assert bpe.open_tokens(tmp_path / "out.bin").tolist() == expected_records(tok, ["y"])[0]
    # ... and names pyarrow for a codec or an encoding it leaves to pyarrow.
    with pytest.raises(ImportError, match=r'b.parquet: reading Parquet compressed with snappy needs the pyarrow '
                                          r'package: pip install "bpe\[formats\]"'):
        tok.encode_file(tmp_path / "b.parquet", tmp_path / "out.bin")
    with pytest.raises(ImportError, match=r"d.parquet: reading this Parquet file needs the pyarrow package"):
        tok.encode_file(tmp_path / "d.parquet", tmp_path / "out.bin")
    monkeypatch.setitem(sys.modules, "zstandard", None)
    for name in ("a.jsonl.zst", "c.parquet"):
        with pytest.raises(ImportError, match=rf'{name}: reading zstd needs the zstandard package: '
                                              r'pip install "bpe\[formats\]"'):
            tok.encode_file(tmp_path / name, tmp_path / "out.bin")


# --------------------------------------------------------------------------- directories

def test_a_directory_reads_its_corpus_files_and_counts_what_it_skips(tmp_path):
    for name in ["a.txt", "B.TXT", "c.jsonl.zst", "d.parquet", "e.txt.gz", "notes.md", "x.png", "y.png",
                 "settings.json", ".hidden.txt", "sub/f.txt", "sub/deeper/g.jsonl"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    plan = sources.find_sources(tmp_path)
    assert [os.path.relpath(p, tmp_path) for p in plan.paths] == ["B.TXT", "a.txt", "c.jsonl.zst", "d.parquet",
                                                                    "e.txt.gz"]
    assert plan.skipped_note() == ("skipped 5 files: 2 .png, 1 .json, 1 .md, 1 .txt; "
                                   "1 subdirectory (read with --recursive)")
    deep = sources.find_sources(tmp_path, recursive=True)
    assert [os.path.relpath(p, tmp_path) for p in deep.paths][-2:] == ["sub/deeper/g.jsonl", "sub/f.txt"]
    matched = sources.find_sources(tmp_path, recursive=True, glob="*.md")
    assert [os.path.relpath(p, tmp_path) for p in matched.paths] == ["notes.md"]
    assert [s.kind for s in matched.sources] == ["text"]
    named = sources.find_sources([tmp_path / "settings.json"])     # a .json named is read as JSON Lines
    assert named.sources[0].kind == "jsonl" and not named.skipped
    with pytest.raises(FileNotFoundError, match=r"no files matching '\*\.csv' \(skipped"):
        sources.find_sources(tmp_path, glob="*.csv")


def test_a_pipe_named_as_input_is_refused_not_waited_on(tok, tmp_path):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        tok.encode_file(fifo, tmp_path / "out.bin")


# --------------------------------------------------------------------------- training, Python texts

@pytest.mark.parametrize("form", ["jsonl.zst", "parquet", "jsonl.gz-and-parquet"])
def test_training_on_records_equals_training_on_the_equivalent_txt(tmp_path, form):
    texts = documents(200)
    (tmp_path / "equivalent.txt").write_text(EOT.join(texts), encoding="utf-8")
    corpus = tmp_path / "records"
    corpus.mkdir()
    if form == "jsonl.zst":
        (corpus / "a.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(jsonl_bytes(texts)))
    elif form == "parquet":
        write_parquet(corpus / "a.parquet", texts)
    else:
        (corpus / "a.jsonl.gz").write_bytes(gzip.compress(jsonl_bytes(texts[:80])))
        write_parquet(corpus / "b.parquet", texts[80:])
    from_txt = bpe.train(tmp_path / "equivalent.txt", 600, [EOT])
    from_records = bpe.train(corpus, 600, [EOT], num_workers=2)
    assert from_records.merges == from_txt.merges
    assert (bpe.count_pretokens(corpus, [EOT]).to_dict()
            == bpe.count_pretokens(tmp_path / "equivalent.txt", [EOT]).to_dict())


def test_training_on_compressed_text_equals_the_plain_file(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "READ_BYTES", 8192)
    text = open(SHAKESPEARE, encoding="utf-8").read()[:200_000]
    (tmp_path / "plain.txt").write_text(text, encoding="utf-8")
    (tmp_path / "packed.txt.xz").write_bytes(lzma.compress(text.encode()))
    assert bpe.train(tmp_path / "packed.txt.xz", 500).merges == bpe.train(tmp_path / "plain.txt", 500).merges


def test_python_texts_and_datasets_encode_and_train_as_records(tok, tmp_path):
    datasets = pytest.importorskip("datasets")
    texts = documents(80)
    expected, starts = expected_records(tok, texts)
    table = datasets.Dataset.from_dict({"text": texts, "meta": [{"body": t} for t in texts]})
    streamed = datasets.IterableDataset.from_generator(lambda: ({"text": t} for t in texts))
    for k, (source, field) in enumerate([(texts, "text"), (iter(texts), "text"), (table, "text"),
                                         (table, "meta.body"), (streamed, "text")]):
        tok.encode_documents(source, tmp_path / f"{k}.bin", text_field=field, num_workers=2)
        assert bpe.open_tokens(tmp_path / f"{k}.bin").tolist() == expected, k
        assert bpe.read_document_index(tmp_path / f"{k}.bin").tolist() == starts
    reference = bpe.train_from_iterator(texts, 500, [EOT])
    assert bpe.train_from_iterator(table, 500, [EOT]).merges == reference.merges
    assert bpe.train_from_iterator(table, 500, [EOT], text_field="meta.body").merges == reference.merges
    with pytest.raises(TypeError, match="text 1 is a int"):
        tok.encode_documents(["a", 3], tmp_path / "bad.bin")
    assert not (tmp_path / "bad.bin").exists()


def test_shards_of_records_are_the_whole_encoding_and_resume(tok, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    texts = documents(150)
    (corpus / "a.txt").write_text(EOT.join(texts[:50]), encoding="utf-8")
    lines = "".join(json.dumps({"text": t, "alt": t.upper()}) + "\n" for t in texts[50:100]).encode()
    (corpus / "b.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(lines))
    parquet.write_table(pyarrow.table({"text": texts[100:], "alt": [t.upper() for t in texts[100:]]}),
                        corpus / "c.parquet")
    whole = tok.encode_file(corpus, tmp_path / "whole.bin")
    first = bpe.corpus.encode_shards(tok, corpus, tmp_path / "shards", shard_bytes=1000, chunk_size=4096)
    assert first.shards >= 4 and not first.skipped
    assert bpe.open_tokens(tmp_path / "shards")[:].tolist() == bpe.open_tokens(tmp_path / "whole.bin").tolist()
    assert bpe.open_tokens(tmp_path / "shards").document_starts().tolist() == \
        bpe.read_document_index(tmp_path / "whole.bin").tolist()
    assert whole.documents == len(bpe.read_document_index(tmp_path / "whole.bin"))
    again = bpe.corpus.encode_shards(tok, corpus, tmp_path / "shards", shard_bytes=1000, chunk_size=4096)
    assert not again.written and len(again.skipped) == first.shards
    # Another field is other ids: no shard of the first run is kept.
    other = bpe.corpus.encode_shards(tok, corpus, tmp_path / "shards", shard_bytes=1000, chunk_size=4096,
                              text_field="alt")
    assert len(other.written) == first.shards
    tok.encode_file(corpus, tmp_path / "alt.bin", text_field="alt")
    assert bpe.open_tokens(tmp_path / "shards")[:].tolist() == bpe.open_tokens(tmp_path / "alt.bin").tolist()


# --------------------------------------------------------------------------- the command line

def cli(*args, cwd=None, check=True):
    result = subprocess.run([sys.executable, "-m", "bpe", *args], capture_output=True, text=True, timeout=300,
                            cwd=cwd)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def test_the_command_line_reads_each_format(tok, tmp_path):
    texts = documents(40)
    data = tmp_path / "data"
    (data / "more").mkdir(parents=True)
    (data / "a.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(jsonl_bytes(texts[:20], "meta.body")))
    write_parquet(data / "more" / "b.parquet", texts[20:], nested=True)
    (data / "README.md").write_text("not a corpus")
    out = cli("encode", str(data), "--tokenizer", "gpt2", "-o", str(tmp_path / "out.bin"), "--recursive",
              "--text-field", "meta.body")
    assert "skipped 1 file: 1 .md" in out.stderr and "2 file(s)" in out.stdout
    assert bpe.open_tokens(tmp_path / "out.bin").tolist() == expected_records(tok, texts)[0]

    only = cli("encode", str(data), "--tokenizer", "gpt2", "-o", str(tmp_path / "only.bin"), "--recursive",
               "--glob", "more/*.parquet", "--text-field", "meta.body")
    assert "1 file(s)" in only.stdout
    assert bpe.open_tokens(tmp_path / "only.bin").tolist() == expected_records(tok, texts[20:])[0]

    trained = cli("train", str(data), "--recursive", "--text-field", "meta.body", "--vocab-size", "400",
                  "--special-token", EOT, "-o", str(tmp_path / "tok"))
    assert "trained on 2 file(s)" in trained.stdout
    (tmp_path / "same.txt").write_text(EOT.join(texts), encoding="utf-8")
    assert bpe.load(tmp_path / "tok").merges == bpe.train(tmp_path / "same.txt", 400, [EOT]).merges

    counted = cli("count", str(data), "--recursive", "--text-field", "meta.body", "--tokenizer", "gpt2")
    n_tokens = sum(len(tok.encode_ordinary(t)) for t in texts)
    assert counted.stdout.splitlines()[1].split()[:2] == ["gpt2", str(n_tokens)]


def test_the_command_line_names_a_bad_record_and_the_option_that_skips_it(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "x"}\n{"body": "y"}\n', encoding="utf-8")
    failed = cli("encode", str(tmp_path / "a.jsonl"), "--tokenizer", "gpt2", "-o", str(tmp_path / "o.bin"),
                 check=False)
    assert failed.returncode == 2 and "Traceback" not in failed.stderr
    assert f"{tmp_path / 'a.jsonl'}, line 2, field 'text': missing" in failed.stderr
    assert "--errors replace" in failed.stderr and "--text-field" in failed.stderr
    replaced = cli("encode", str(tmp_path / "a.jsonl"), "--tokenizer", "gpt2", "-o", str(tmp_path / "o.bin"),
                   "--errors", "replace")
    assert "note: skipped 1 bad record(s)" in replaced.stderr
    assert bpe.open_tokens(tmp_path / "o.bin").tolist() == bpe.load("gpt2").encode_ordinary("x") + [50256]
