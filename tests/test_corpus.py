"""encode_file: a corpus into a memory-mapped token array, equal to encode, for any workers."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import bpe
from bpe.corpus import encode_file, open_tokens, read_metadata

from conftest import SHAKESPEARE, random_corpus

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("corpus")
    shakespeare = open(SHAKESPEARE, encoding="utf-8").read()
    texts = {
        "a.txt": EOT.join(shakespeare[i:i + 20_000] for i in range(0, 300_000, 20_000)) + EOT,
        "b.txt": random_corpus(1, n_words=3000, special=EOT),
        "c.txt": "no separator here, 日本語 👍\n" * 500,
        "d.txt": "",
        "e.txt": EOT + "starts with one" + EOT + EOT + "<|fim_prefix|>x",
    }
    for name, text in texts.items():
        (directory / name).write_text(text, encoding="utf-8")
    return directory, [texts[name] for name in sorted(texts)]


@pytest.mark.parametrize("num_workers", [1, 2])
@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
def test_ids_equal_encode_for_any_workers(corpus_dir, tmp_path, name, num_workers):
    directory, texts = corpus_dir
    tok = bpe.load(name)
    out = tmp_path / "tokens.bin"
    summary = encode_file(tok, directory, out, num_workers=num_workers, chunk_size=4096)
    expected = np.concatenate([tok.encode_to_numpy(text, dtype=np.uint32) for text in texts])
    tokens = open_tokens(out)
    assert tokens.dtype == (np.uint16 if name == "gpt2" else np.uint32)
    assert np.array_equal(tokens, expected)
    assert np.array_equal(np.memmap(out, dtype=tokens.dtype, mode="r"), expected)
    assert summary.tokens_out == len(expected) and summary.bytes_in == sum(len(t.encode()) for t in texts)
    assert summary.workers == num_workers
    metadata = read_metadata(out)
    assert metadata["n_tokens"] == len(expected) and metadata["n_vocab"] == tok.n_vocab
    assert metadata["document_separator"] == EOT


def test_default_workers_follow_the_input_size(corpus_dir, tmp_path, monkeypatch):
    # num_workers=None: one worker per BYTES_PER_WORKER of input, up to the cores;
    # a number given is used as given.
    from bpe import corpus
    from bpe.pretokens import resolve_workers

    directory, texts = corpus_dir
    tok = bpe.load("gpt2")
    expected = np.concatenate([tok.encode_to_numpy(text) for text in texts])
    small = encode_file(tok, directory, tmp_path / "small.bin", chunk_size=4096)
    assert small.workers == 1 and np.array_equal(open_tokens(small.output), expected)
    assert encode_file(tok, directory, tmp_path / "two.bin", num_workers=2, chunk_size=4096).workers == 2
    total = sum(len(text.encode()) for text in texts)
    monkeypatch.setattr(corpus, "BYTES_PER_WORKER", total // 2)
    scaled = encode_file(tok, directory, tmp_path / "scaled.bin", chunk_size=4096)
    assert scaled.workers == min(resolve_workers(None), 2)
    assert np.array_equal(open_tokens(scaled.output), expected)


def test_document_index_points_at_document_starts(corpus_dir, tmp_path):
    directory, texts = corpus_dir
    tok = bpe.load("gpt2")
    summary = tok.encode_file(directory, tmp_path / "t.bin", num_workers=2)
    starts = np.load(summary.document_index)
    assert starts.dtype == np.uint64
    # Expected: each file starts a document, and so does the text after each separator.
    expected, offset, file_starts = [], 0, set()
    for text in texts:
        ids = tok.encode(text)
        if ids:
            expected.append(offset)
            file_starts.add(offset)
        expected += [offset + i + 1 for i, t in enumerate(ids) if t == tok.special_tokens[EOT]]
        offset += len(ids)
    expected = sorted({s for s in expected if s < offset})
    assert starts.tolist() == expected
    tokens = open_tokens(summary.output)
    eot = tok.special_tokens[EOT]
    assert all(s in file_starts or int(tokens[s - 1]) == eot for s in starts.tolist())
    assert len(file_starts) < len(starts) < len(tokens)
    assert summary.documents == len(expected)


def test_fingerprints_are_stable_across_worker_counts(corpus_dir, tmp_path):
    directory, _ = corpus_dir
    tok = bpe.load("gpt2")
    one = tok.encode_file(directory, tmp_path / "one.bin", num_workers=1)
    two = tok.encode_file(directory, tmp_path / "two.bin", num_workers=2)
    first, second = read_metadata(one.output), read_metadata(two.output)
    assert first["inputs_fingerprint"] == second["inputs_fingerprint"]
    assert first["tokenizer_fingerprint"] == second["tokenizer_fingerprint"]
    assert first["tokenizer_fingerprint"] != read_metadata(
        bpe.load("o200k_base").encode_file(directory, tmp_path / "o.bin", num_workers=1).output
    )["tokenizer_fingerprint"]


def test_dtype_selection_and_too_small_dtype(corpus_dir, tmp_path):
    directory, _ = corpus_dir
    with pytest.raises(ValueError, match="cannot hold token id 200018"):
        bpe.load("o200k_base").encode_file(directory, tmp_path / "x.bin", dtype=np.uint16)
    assert not (tmp_path / "x.bin").exists() and os.listdir(tmp_path) == []
    summary = bpe.load("gpt2").encode_file(directory, tmp_path / "y.bin", dtype=np.uint32)
    assert open_tokens(summary.output).dtype == np.uint32


def test_bad_input_names_the_file_and_leaves_nothing(tmp_path):
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text("fine text\n" * 1000, encoding="utf-8")
    bad.write_bytes(b"ok " * 5000 + b"\xff oops")
    out = tmp_path / "out" / "tokens.bin"
    for workers in (1, 2):
        with pytest.raises(bpe.CorpusDecodeError, match=r"bad.txt: invalid UTF-8 at byte offset 15000"):
            bpe.load("gpt2").encode_file([good, bad], out, num_workers=workers)
        assert os.listdir(out.parent) == []
    summary = bpe.load("gpt2").encode_file([good, bad], out, errors="replace")
    assert bpe.load("gpt2").decode(open_tokens(summary.output)).endswith("\ufffd oops")
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        bpe.load("gpt2").encode_file(tmp_path / "missing.txt", out)


def start_encoding(tmp_path, copies: int, tokenizer: str):
    """Start ``bpe encode`` on ``copies`` x Tiny Shakespeare with 2 workers; return once its
    temporary directory exists, with the process and the output path."""
    big = tmp_path / "big.txt"
    text = open(SHAKESPEARE, encoding="utf-8").read()
    with open(big, "w", encoding="utf-8") as f:
        for _ in range(copies):
            f.write(text + EOT)
    out = tmp_path / "out" / "tokens.bin"
    out.parent.mkdir()
    # A session of its own, as a shell gives a command: Ctrl-C reaches its whole group.
    process = subprocess.Popen([sys.executable, "-m", "bpe", "encode", str(big), "--tokenizer", tokenizer,
                                "-o", str(out), "--workers", "2", "--quiet"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    deadline = time.time() + 60
    while not any(name.startswith(".bpe-encode-") for name in os.listdir(out.parent)):
        assert time.time() < deadline and process.poll() is None, process.communicate(timeout=60)
        time.sleep(0.01)
    return process, big, out


@pytest.mark.parametrize("delay", [0.0, 0.3])
def test_interrupted_run_leaves_no_output(tmp_path, delay):
    # Ctrl-C in a terminal signals the process group: the parent and its workers,
    # while they start (delay 0) or while they encode.
    process, _, out = start_encoding(tmp_path, 40, "o200k_base")            # 45 MB
    time.sleep(delay)
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode != 0
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert os.listdir(out.parent) == []


def pool_workers(process, psutil) -> list:
    """The pool's worker processes under ``process``, once they run: they run
    spawn_main (not the resource tracker, nor a child not yet exec'ed)."""
    deadline = time.time() + 60
    while True:
        assert time.time() < deadline and process.poll() is None, process.communicate(timeout=60)
        workers = [p for p in psutil.Process(process.pid).children(recursive=True)
                   if "spawn_main" in " ".join(p.cmdline())]
        if workers:
            return workers
        time.sleep(0.01)


def test_killed_worker_is_reported_and_leaves_no_output(tmp_path):
    psutil = pytest.importorskip("psutil")
    process, big, out = start_encoding(tmp_path, 100, "gpt2")              # 112 MB: still running when killed
    workers = pool_workers(process, psutil)
    # Kill a worker once chunks are being written, however slowly the machine starts them.
    deadline = time.time() + 60
    while not any(os.path.getsize(tokens) for tokens in out.parent.glob(".bpe-encode-*/tokens.bin")):
        assert time.time() < deadline and process.poll() is None, process.communicate(timeout=60)
        time.sleep(0.01)
    workers[0].kill()
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 2, stderr
    assert "a worker process died while encoding" in stderr and str(big) in stderr
    assert "Traceback" not in stderr
    assert os.listdir(out.parent) == []


def test_worker_killed_while_the_pool_starts_is_reported_without_hanging(tmp_path):
    # A worker killed while it waits for the Encoding: the parent used to hang for
    # good signalling it (multiprocessing's Event.set waits for every waiter).
    psutil = pytest.importorskip("psutil")
    process, big, out = start_encoding(tmp_path, 20, "gpt2")
    pool_workers(process, psutil)[0].kill()
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 2, stderr
    assert "a worker process died" in stderr and str(big) in stderr
    assert "Traceback" not in stderr
    assert os.listdir(out.parent) == []


def test_a_bad_chunk_early_stops_the_workers_waiting_on_it(tmp_path):
    # Workers write each chunk at an offset that needs every earlier chunk's count:
    # a chunk that fails must release the later ones, and its own error must surface.
    text = open(SHAKESPEARE, "rb").read()[:200_000]
    bad = tmp_path / "bad.txt"
    bad.write_bytes(text[:9000] + b"\xc3(" + text[9000:])
    out = tmp_path / "out" / "tokens.bin"
    with pytest.raises(bpe.CorpusDecodeError, match=r"bad.txt: invalid UTF-8 at byte offset 9000"):
        encode_file(bpe.load("gpt2"), bad, out, num_workers=2, chunk_size=4096)
    assert os.listdir(out.parent) == []


def test_replaced_bytes_may_lengthen_a_chunk(tmp_path):
    # errors="replace" turns each invalid byte into 3 bytes of U+FFFD: more text than was read.
    raw = b"\xff\xfe" * 6000 + b" tail " + b"\x80" * 5000
    path = tmp_path / "junk.txt"
    path.write_bytes(raw)
    tok = bpe.load("gpt2")
    expected = tok.encode(raw.decode("utf-8", errors="replace"))
    for workers in (1, 2):
        summary = encode_file(tok, path, tmp_path / f"{workers}.bin", num_workers=workers,
                              errors="replace", chunk_size=4096)
        assert open_tokens(summary.output).tolist() == expected


def test_ids_spilled_by_a_worker_that_cannot_wait_are_placed_in_order(tmp_path):
    # Deterministic: chunk 1 is encoded before chunk 0, so its offset is unknown
    # and its ids are set aside; the caller places them once chunk 0's count is in.
    from bpe.chunking import plan_chunks
    from bpe.corpus import UNKNOWN, ChunkEncoder, place_spilled, spill_path

    tok = bpe.load("gpt2")
    text = open(SHAKESPEARE, encoding="utf-8").read()[:30_000]
    source = tmp_path / "in.txt"
    source.write_text(text, encoding="utf-8")
    chunks = plan_chunks([str(source)], 8192, [EOT], tok.pattern)
    assert len(chunks) >= 3
    out = str(tmp_path / "tokens.bin")
    open(out, "wb").close()
    counts = np.full(len(chunks), UNKNOWN, dtype=np.int64)
    encoder = ChunkEncoder(tok._encoding(), out, counts, np.dtype(np.uint16), [EOT], "strict", None,
                           spill_after=0.0)
    try:
        spilled = {k: encoder.encode(k, chunks[k])[-1] for k in [1, 0] + list(range(2, len(chunks)))}
    finally:
        encoder.close()
    assert spilled == {k: k == 1 for k in range(len(chunks))}
    assert os.path.exists(spill_path(out, 1))
    fd = os.open(out, os.O_WRONLY)
    try:
        place_spilled(out, 1, fd, int(counts[0]) * 2)
    finally:
        os.close(fd)
    assert not os.path.exists(spill_path(out, 1))
    assert np.array_equal(np.fromfile(out, dtype=np.uint16), tok.encode_to_numpy(text))


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
def test_workers_that_never_wait_give_the_same_ids(corpus_dir, tmp_path, name):
    # spill_after=0: a worker sets aside every chunk whose offset it does not find
    # known at once, so many chunks go through the parent.
    directory, texts = corpus_dir
    tok = bpe.load(name)
    out = tmp_path / "tokens.bin"
    encode_file(tok, directory, out, num_workers=2, chunk_size=4096, spill_after=0.0)
    expected = np.concatenate([tok.encode_to_numpy(text, dtype=np.uint32) for text in texts])
    assert np.array_equal(open_tokens(out), expected)
    assert [p for p in os.listdir(tmp_path) if p != "tokens.bin" and not p.startswith("tokens.bin.")] == []
