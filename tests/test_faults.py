"""Faults around encode_file and the command line: killed and terminated runs, full
disks, two runs at once, outputs that would replace inputs, inputs that are not
files or change under the run. Nothing half-written is ever read as complete,
and nothing is left behind."""
import errno
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import bpe
from bpe.corpus.driver import encode_file
from bpe.corpus.token_array import open_tokens, read_document_index, read_metadata

from conftest import SHAKESPEARE

EOT = "<|endoftext|>"


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text(open(SHAKESPEARE, encoding="utf-8").read()[:300_000], encoding="utf-8")
    return path


def leftovers(directory) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.startswith("."))


def big_corpus(tmp_path, copies: int):
    big = tmp_path / "big.txt"
    text = open(SHAKESPEARE, encoding="utf-8").read()
    with open(big, "w", encoding="utf-8") as f:
        for _ in range(copies):
            f.write(text + EOT)
    return big


def start_encode(big, out):
    process = subprocess.Popen([sys.executable, "-m", "bpe", "encode", str(big), "--tokenizer", "gpt2",
                                "-o", str(out), "--workers", "2", "--quiet"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not any(name.startswith(".bpe-encode-") for name in os.listdir(out.parent)):
        assert time.time() < deadline and process.poll() is None, process.communicate(timeout=60)
        time.sleep(0.01)
    return process


def test_sigterm_cleans_up_as_ctrl_c_does(tmp_path):
    big = big_corpus(tmp_path, 160)                # 180 MB: still running when signalled
    out = tmp_path / "out" / "tokens.bin"
    out.parent.mkdir()
    process = start_encode(big, out)
    time.sleep(0.2)
    process.terminate()
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 143 and "terminated" in stderr and "Traceback" not in stderr
    assert os.listdir(out.parent) == []


def test_a_killed_run_leaves_nothing_complete_and_the_next_run_cleans_up(tmp_path):
    big = big_corpus(tmp_path, 160)                # 180 MB: still running when killed
    out = tmp_path / "out" / "tokens.bin"
    out.parent.mkdir()
    process = start_encode(big, out)
    time.sleep(0.2)
    process.kill()                                 # no chance to clean up
    process.communicate(timeout=60)
    assert not out.exists() and leftovers(out.parent)       # its working directory stayed
    with pytest.raises(FileNotFoundError):
        open_tokens(out)
    small = tmp_path / "small.txt"
    small.write_text("the next run\n" * 100, encoding="utf-8")
    encode_file(bpe.load("gpt2"), small, out)
    assert leftovers(out.parent) == []                       # removed by the next run
    assert bpe.load("gpt2").decode(open_tokens(out)) == "the next run\n" * 100


def test_two_runs_on_one_output_do_not_interleave(corpus, tmp_path):
    out = tmp_path / "out.bin"
    tok = bpe.load("gpt2")
    outcomes = []

    def run():
        try:
            outcomes.append(encode_file(tok, corpus, out, num_workers=1, chunk_size=8192).tokens_out)
        except bpe.errors.CorpusEncodeError as e:
            outcomes.append(str(e))

    for _ in range(5):
        threads = [threading.Thread(target=run) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    refused = [o for o in outcomes if isinstance(o, str)]
    assert all("another run is writing it now" in message and str(out) in message for message in refused)
    assert np.array_equal(open_tokens(out), tok.encode_to_numpy(corpus.read_text(encoding="utf-8")))
    assert leftovers(tmp_path) == []


def test_a_failure_while_committing_is_detected_by_readers(corpus, tmp_path, monkeypatch):
    # The new array is in place but the sidecar rename fails: the old sidecar must
    # not describe the new array.
    tok = bpe.load("gpt2")
    out = tmp_path / "out.bin"
    encode_file(tok, corpus, out)
    other = tmp_path / "other.txt"
    other.write_text(("something else entirely " * 50 + EOT) * 10, encoding="utf-8")
    real_replace = os.replace

    def failing_replace(source, destination):
        if str(destination).endswith(".json"):
            raise OSError(errno.EIO, "Input/output error")
        return real_replace(source, destination)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(bpe.errors.CorpusEncodeError, match=r"out.bin.json: cannot be written"):
        encode_file(tok, other, out)
    monkeypatch.setattr(os, "replace", real_replace)
    with pytest.raises(bpe.errors.TokenArrayError, match="not the one its sidecar"):
        open_tokens(out)
    with pytest.raises(bpe.errors.TokenArrayError, match="not the index its sidecar"):
        read_document_index(out)
    assert leftovers(tmp_path) == []


def test_a_full_disk_names_the_output(corpus, tmp_path, monkeypatch):
    real_pwrite = os.pwrite
    calls = []

    def full(fd, data, offset):
        calls.append(offset)
        if len(calls) > 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_pwrite(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", full)
    out = tmp_path / "out" / "tokens.bin"
    for workers in (1, 2):
        with pytest.raises(bpe.errors.CorpusEncodeError, match=rf"{out}: writing the token array failed: "
                                                        "No space left on device"):
            encode_file(bpe.load("gpt2"), corpus, out, num_workers=workers, chunk_size=8192)
        assert os.listdir(out.parent) == []
        calls.clear()


def test_an_output_that_would_replace_an_input_is_refused(corpus, tmp_path):
    original = corpus.read_bytes()
    link = tmp_path / "link.txt"
    link.symlink_to(corpus)
    for output in (corpus, link, tmp_path / "in.txt.json"):
        if output.name.endswith(".json"):
            output.write_text("{}", encoding="utf-8")
            with pytest.raises(ValueError, match="would replace the corpus"):
                encode_file(bpe.load("gpt2"), output, tmp_path / "in.txt")
            output.unlink()
            continue
        with pytest.raises(ValueError, match=rf"{output}: is the input .*in.txt; writing there would replace"):
            encode_file(bpe.load("gpt2"), corpus, output)
    assert corpus.read_bytes() == original
    result = subprocess.run([sys.executable, "-m", "bpe", "encode", str(corpus), "--tokenizer", "gpt2",
                             "-o", str(corpus)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "would replace the corpus" in result.stderr
    assert corpus.read_bytes() == original


def test_inputs_that_are_not_files_are_refused(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=rf"{fifo}: not a regular file"):
        encode_file(bpe.load("gpt2"), fifo, tmp_path / "out.bin")
    if os.path.exists("/proc/self/status"):
        with pytest.raises(ValueError, match="reports a size of 0 but has content"):
            encode_file(bpe.load("gpt2"), "/proc/self/status", tmp_path / "out.bin")
        with pytest.raises(ValueError, match="reports a size of 0 but has content"):
            bpe.train("/proc/self/status", 300)
    assert os.listdir(tmp_path) == ["fifo"]


def test_an_input_that_changes_during_the_run_is_named(corpus, tmp_path, monkeypatch):
    from bpe.corpus import chunk_writer

    real_encode = chunk_writer.ChunkWriter.encode

    def growing(self, index, chunk):
        if index == 2:
            with open(corpus, "a", encoding="utf-8") as f:
                f.write("appended while encoding")
        return real_encode(self, index, chunk)

    monkeypatch.setattr(chunk_writer.ChunkWriter, "encode", growing)
    out = tmp_path / "out" / "tokens.bin"
    with pytest.raises(bpe.errors.CorpusEncodeError, match=rf"{corpus}: changed while being encoded"):
        encode_file(bpe.load("gpt2"), corpus, out, chunk_size=8192)
    assert os.listdir(out.parent) == []


def test_non_native_byte_order_is_refused(corpus, tmp_path):
    foreign = ">u2" if sys.byteorder == "little" else "<u2"
    with pytest.raises(ValueError, match=rf"dtype {foreign} is not in this machine's byte order"):
        encode_file(bpe.load("gpt2"), corpus, tmp_path / "out.bin", dtype=foreign)
    result = subprocess.run([sys.executable, "-m", "bpe", "encode", str(corpus), "--tokenizer", "gpt2",
                             "-o", str(tmp_path / "out.bin"), "--dtype", foreign],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and f"invalid choice: '{foreign}'" in result.stderr   # the CLI names its dtypes
    native = "=u2"
    summary = encode_file(bpe.load("gpt2"), corpus, tmp_path / "out.bin", dtype=native)
    assert open_tokens(summary.output).tolist() == bpe.load("gpt2").encode(corpus.read_text(encoding="utf-8"))


def test_an_output_that_is_a_directory_is_refused_before_any_work(corpus, tmp_path):
    (tmp_path / "dir").mkdir()
    with pytest.raises(IsADirectoryError, match="dir: is a directory"):
        encode_file(bpe.load("gpt2"), corpus, tmp_path / "dir")
    assert os.listdir(tmp_path / "dir") == [] and leftovers(tmp_path) == []


@pytest.mark.parametrize("field, value, message", [
    ("n_tokens", -1, "field 'n_tokens' is -1, not a non-negative int"),
    ("n_tokens", "12", "field 'n_tokens' is '12'"),
    ("dtype", "float32", "field 'dtype': dtype 'float32' is not an unsigned integer dtype"),
    ("version", 99, "version 99; this bpe reads versions"),
    ("array_bytes", 3, "do not make 3 bytes"),
])
def test_a_corrupt_sidecar_names_itself(corpus, tmp_path, field, value, message):
    summary = encode_file(bpe.load("gpt2"), corpus, tmp_path / "out.bin")
    metadata = json.loads(open(summary.metadata, encoding="utf-8").read())
    metadata[field] = value
    with open(summary.metadata, "w", encoding="utf-8") as f:
        json.dump(metadata, f)
    with pytest.raises(bpe.errors.TokenArrayError, match=rf"out.bin.json: .*{message}"):
        open_tokens(summary.output)


def test_decode_refuses_an_array_of_another_tokenizer(corpus, tmp_path):
    summary = encode_file(bpe.load("gpt2"), corpus, tmp_path / "out.bin")
    # cl100k_base holds every gpt2 id, so decoding would print plausible garbage.
    run = lambda *extra: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "bpe", "decode", summary.output, "--tokenizer", "cl100k_base",
         "--head", "5", *extra], capture_output=True, text=True, timeout=120)
    refused = run()
    assert refused.returncode == 2 and "encoded with another tokenizer" in refused.stderr
    assert "--force" in refused.stderr and refused.stdout == ""
    forced = run("--force")
    assert forced.returncode == 0 and forced.stdout
    assert read_metadata(summary.output)["tokenizer_fingerprint"] == bpe.load("gpt2").fingerprint()
