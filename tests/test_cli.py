"""The ``bpe`` command end to end, in subprocesses."""
import base64
import os
import subprocess
import sys

import pytest

import bpe
from bpe.corpus.token_array import open_tokens

from conftest import SHAKESPEARE


def run_bpe(*args, stdin=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "bpe", *args], capture_output=True, text=True,
                          input=stdin, cwd=cwd, timeout=300)


def test_train_encode_decode_count_inspect(tmp_path):
    result = run_bpe("train", "--vocab-size", "600", "--special-token", "<|endoftext|>",
                     "-o", str(tmp_path / "tok"))   # no progress bars: stderr is not a terminal
    assert result.returncode == 0, result.stderr
    assert "embedded default corpus" in result.stdout and "343 merges" in result.stdout
    tok = bpe.load(tmp_path / "tok")
    assert len(tok.vocab) == 600 and tok.special_tokens == {"<|endoftext|>": 256}

    text_path = tmp_path / "in.txt"
    text_path.write_text("Hello there.<|endoftext|>General Kenobi!\n", encoding="utf-8")
    result = run_bpe("encode", str(text_path), SHAKESPEARE, "--tokenizer", str(tmp_path / "tok"),
                     "-o", str(tmp_path / "out.bin"), "--workers", "2")
    assert result.returncode == 0, result.stderr
    assert "2 file(s)" in result.stdout and "numpy.memmap" in result.stdout
    expected = tok.encode(text_path.read_text(encoding="utf-8")) + tok.encode(open(SHAKESPEARE).read())
    assert open_tokens(tmp_path / "out.bin").tolist() == expected

    result = run_bpe("decode", str(tmp_path / "out.bin"), "--tokenizer", str(tmp_path / "tok"),
                     "--head", str(len(tok.encode("Hello there.<|endoftext|>"))))
    assert result.returncode == 0 and result.stdout == "Hello there.<|endoftext|>\n"
    result = run_bpe("decode", "-", "--tokenizer", "gpt2", stdin="15496 995")
    assert result.stdout == "Hello world\n"

    result = run_bpe("count", SHAKESPEARE, "--tokenizer", "gpt2,cl100k_base,o200k_base")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["tokenizer", "tokens", "chars/token", "bytes/token"]
    text = open(SHAKESPEARE, encoding="utf-8").read()
    for line, name in zip(lines[1:], ["gpt2", "cl100k_base", "o200k_base"]):
        assert line.split()[:2] == [name, str(bpe.load(name).count(text))]

    result = run_bpe("inspect", "cl100k_base", "--top", "2")
    assert result.returncode == 0
    assert "tokens:         100261 (100256 ordinary, 5 special)" in result.stdout
    assert "n_vocab:        100277 (the largest id + 1" in result.stdout
    assert "<|endoftext|> = 100257" in result.stdout and "first merges:   (' ', ' '), ('  ', '  ')" in result.stdout


def test_user_errors_are_one_line_without_traceback(tmp_path):
    cases = [
        (["train", str(tmp_path / "missing.txt"), "--vocab-size", "300", "-o", str(tmp_path / "o")],
         f"bpe train: error: {tmp_path / 'missing.txt'}: no such file"),
        (["train", "--vocab-size", "10", "-o", str(tmp_path / "o")], "vocab_size=10 is too small"),
        (["encode", str(tmp_path / "nope.txt"), "--tokenizer", "gpt2", "-o", str(tmp_path / "x.bin")],
         "nope.txt: no such file"),
        (["encode", SHAKESPEARE, "--tokenizer", "o200k_base", "--dtype", "uint16", "-o", str(tmp_path / "x.bin")],
         "dtype uint16 cannot hold token id 200018"),
        (["inspect", str(tmp_path / "nodir")], "no tokenizer"),
        (["decode", str(tmp_path / "none.bin"), "--tokenizer", "gpt2"], "none.bin.json: no such file"),
        (["inspect", "gpt2", "--top", "-2"], "--top -2: give a number of tokens and merges >= 0"),
        (["show", "--tokenizer", "gpt2"], "give a FILE to show (- for standard input) or --text TEXT"),
        (["show", SHAKESPEARE, "--tokenizer", "gpt2", "--html", str(tmp_path)],
         f"{tmp_path}: is a directory, not a file to write"),
        (["train", SHAKESPEARE, "--vocab-size", "300", "-o", SHAKESPEARE],
         f"{SHAKESPEARE}: is a file; save into a directory (made if missing), or to a file named *.bpe"),
    ]
    for args, message in cases:
        result = run_bpe(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (tmp_path / "o").exists() and not (tmp_path / "x.bin").exists()
    for command, option in (("train", ["--vocab-size", "300"]), ("encode", ["--tokenizer", "gpt2"])):
        result = run_bpe(command, SHAKESPEARE, *option, "--workers", "0", "-o", str(tmp_path / "w"))
        assert result.returncode == 2 and "argument --workers: 0: give a number of workers >= 1" in result.stderr
    result = run_bpe("inspect", "gpt2", "--top", "0")
    assert result.returncode == 0 and "last merges:    \n" in result.stdout      # none, not all of them


def test_our_errors_are_one_line_and_bugs_keep_their_traceback(tmp_path, monkeypatch, capsys):
    from bpe import cli

    (tmp_path / "bad.bpe").write_text("not a tokenizer\n", encoding="utf-8")
    assert cli.main(["inspect", str(tmp_path / "bad.bpe")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"bpe inspect: error: {tmp_path / 'bad.bpe'}, line 1: expected 'bpe-tokenizer 1' or 'bpe-tokenizer 2', found 'not a tokenizer'"]

    def bug(name):
        raise TypeError("a bug in bpe")

    monkeypatch.setattr(cli, "_load_tokenizer", bug)
    with pytest.raises(TypeError, match="a bug in bpe"):
        cli.main(["inspect", "gpt2"])


#: A Parquet file of one row, "x", its page compressed with snappy, as pyarrow 26
#: writes it (``compression="snappy", write_statistics=False, store_schema=False,
#: use_dictionary=False``): a codec bpe leaves to pyarrow.
_SNAPPY_PARQUET = base64.b64decode(
    "UEFSMRUAFRYVGiwVAhUAFQYVBhwAAAALKAIAAAACAQEAAAB4FQQZLDUAGAZzY2hlbWEVAgAVDCUCGAR0ZXh0JQBMHAAAABYCGRwZHCYAHBUM"
    "GSUGABkYBHRleHQVAhYCFjwWQCYISRwVABUAFQIAPBYCGQYZJgACAAAAFjwWAiYIFkAAKCBwYXJxdWV0LWNwcC1hcnJvdyB2ZXJzaW9uIDI2"
    "LjAuMRkcHAAAAIgAAABQQVIx")


def test_a_missing_optional_package_is_one_line_naming_the_extra(tmp_path):
    # zstandard, pyarrow and ray hidden (each a package whose import fails), as
    # on an install without the extras: a line naming the file or option and
    # the extra, status 2, no traceback, nothing written.
    hidden = tmp_path / "hidden"
    for name in ("zstandard", "pyarrow", "ray"):
        (hidden / name).mkdir(parents=True)
        (hidden / name / "__init__.py").write_text(f"raise ImportError('no {name} here')\n")
    (tmp_path / "a.jsonl.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 8)
    (tmp_path / "b.parquet").write_bytes(_SNAPPY_PARQUET)
    (tmp_path / "c.txt").write_text("some text\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hidden), *sys.path])}
    for args, expected in [
        (["encode", str(tmp_path / "a.jsonl.zst"), "--tokenizer", "gpt2", "-o", str(tmp_path / "a.bin")],
         'a.jsonl.zst: reading zstd needs the zstandard package: pip install "bpe[formats]"'),
        (["encode", str(tmp_path / "b.parquet"), "--tokenizer", "gpt2", "-o", str(tmp_path / "b.bin")],
         "b.parquet: reading Parquet compressed with snappy needs the pyarrow package"),
        (["train", str(tmp_path / "a.jsonl.zst"), "--vocab-size", "300", "-o", str(tmp_path / "t")],
         "reading zstd needs the zstandard package"),
        (["encode", str(tmp_path / "c.txt"), "--tokenizer", "gpt2", "-o", str(tmp_path / "c.bin"), "--ray"],
         'bpe.distributed runs on Ray, which is not installed: pip install "bpe[ray]"'),
    ]:
        result = subprocess.run([sys.executable, "-m", "bpe", *args], capture_output=True, text=True, env=env,
                                timeout=300)
        assert result.returncode == 2, (args, result.stderr)
        assert expected in result.stderr and "Traceback" not in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl.zst", "b.parquet", "c.txt", "hidden"]
