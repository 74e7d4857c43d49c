"""What users of tokenizer libraries expect: saving to a directory, files that follow
the umask, offsets, batch decoding, and the command line's conventions."""
import os
import stat
import subprocess
import sys

import pytest

import bpe


def run_bpe(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "bpe", *args], capture_output=True, text=True,
                          input=stdin, timeout=300)


def test_save_writes_a_directory_created_when_missing(tmp_path):
    tok = bpe.train_from_iterator(["low lower lowest " * 20], 270, num_workers=1)
    path = tok.save(tmp_path / "new" / "my-tok")
    assert path == str(tmp_path / "new" / "my-tok" / "tokenizer.bpe")
    assert bpe.load(tmp_path / "new" / "my-tok") == tok
    assert tok.save(tmp_path / "file.bpe") == str(tmp_path / "file.bpe")


def test_written_files_follow_the_umask(tmp_path):
    previous = os.umask(0o022)
    try:
        tok = bpe.load("gpt2")
        written = [tok.save(tmp_path / "own"), tok.to_tiktoken(tmp_path / "t.tiktoken"),
                   tok.to_huggingface(tmp_path), *tok.to_files(tmp_path / "gpt2")]
        (tmp_path / "in.txt").write_text("hello world\n", encoding="utf-8")
        summary = tok.encode_file(tmp_path / "in.txt", tmp_path / "out.bin")
        written += [summary.output, summary.metadata, summary.document_index]
        counts = bpe.PretokenCounts.from_mapping({"a": 1})
        counts.save(tmp_path / "c.npz")
        written.append(str(tmp_path / "c.npz"))
        for path in written:
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o644, path
    finally:
        os.umask(previous)


def test_offsets_and_batch_decoding():
    tok = bpe.load("cl100k_base")
    text = "héllo wörld 日本語 😀 end"
    ids, offsets = tok.encode(text, offsets=True)
    assert ids == tok.encode(text)
    assert (tok.decode(ids), offsets) == tok.decode_with_offsets(ids)
    # Every token starts at its offset: the text from there decodes from that token on
    # (a token that starts inside a character points at that character).
    for index, offset in enumerate(offsets):
        rest = tok.decode_bytes(ids[index:])
        from_offset = text[offset:].encode()
        if rest[0] < 0x80 or rest[0] >= 0xC0:          # the token starts a character
            assert from_offset == rest
        else:                                          # it starts inside the character at offset
            assert from_offset.endswith(rest) and 0 < len(from_offset) - len(rest) < 4
    assert offsets == sorted(offsets) and offsets[0] == 0
    batch = [tok.encode(t) for t in ["a", "bb cc", "", text]]
    assert tok.decode_batch(batch) == ["a", "bb cc", "", text]
    assert tok.decode_batch(batch, num_threads=2) == ["a", "bb cc", "", text]
    with pytest.raises(UnicodeDecodeError):
        tok.decode([tok.encode("😀")[0]], errors="strict")


def test_cli_version_quiet_and_model_names(tmp_path):
    assert run_bpe("--version").stdout.strip() == f"bpe {bpe.__version__}"
    (tmp_path / "in.txt").write_text("hello world\n" * 100, encoding="utf-8")
    quiet = run_bpe("encode", str(tmp_path / "in.txt"), "--tokenizer", "gpt-4o", "-o",
                    str(tmp_path / "out.bin"), "--quiet")
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""
    assert bpe.open_tokens(tmp_path / "out.bin").tolist() == bpe.load("o200k_base").encode("hello world\n" * 100)
    trained = run_bpe("train", str(tmp_path / "in.txt"), "--vocab-size", "260", "-o", str(tmp_path / "t"),
                      "--quiet")
    assert trained.returncode == 0 and trained.stdout == ""
    counted = run_bpe("count", "-", "--tokenizer", "gpt2,gpt-4,gpt-4o", "--price", "gpt-4o=2.5",
                      stdin="hello world " * 1000)
    assert counted.returncode == 0, counted.stderr
    rows = {line.split()[0]: line.split()[1:] for line in counted.stdout.splitlines()[1:]}
    n_tokens = len(bpe.load("o200k_base").encode("hello world " * 1000))
    assert int(rows["gpt-4o"][0]) == n_tokens and float(rows["gpt-4o"][3]) == pytest.approx(n_tokens * 2.5e-6, abs=1e-6)
    assert int(rows["gpt-4"][0]) == len(bpe.load("cl100k_base").encode("hello world " * 1000))
    assert len(rows["gpt2"]) == 3                                     # no price given for it
    bad = run_bpe("count", "-", "--tokenizer", "gpt2", "--price", "gpt2=cheap", stdin="x")
    assert bad.returncode == 2 and "NAME=USD_PER_1M_TOKENS" in bad.stderr
    unknown = run_bpe("count", "-", "--tokenizer", "gpt2", "--price", "gpt-4o=1", stdin="x")
    assert unknown.returncode == 2 and "gpt-4o is not one of --tokenizer" in unknown.stderr
