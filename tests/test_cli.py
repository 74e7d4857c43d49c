"""The ``bpe`` command end to end, in a subprocess."""
import subprocess
import sys

import bpe


def run_bpe(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "bpe", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def test_train_on_the_embedded_corpus(tmp_path):
    result = run_bpe("train", "--vocab-size", "600", "--special-token", "<|endoftext|>",
                     "-o", str(tmp_path / "tok"), "--quiet")
    assert result.returncode == 0, result.stderr
    assert "embedded default corpus" in result.stdout and "343 merges" in result.stdout
    tok = bpe.load(tmp_path / "tok")
    assert len(tok.vocab) == 600 and tok.special_tokens == {"<|endoftext|>": 256}


def test_user_errors_are_one_line_without_traceback(tmp_path):
    result = run_bpe("train", str(tmp_path / "missing.txt"), "--vocab-size", "300", "-o",
                     str(tmp_path / "out"))
    assert result.returncode == 2
    assert result.stderr.strip() == f"bpe train: error: {tmp_path / 'missing.txt'}: no such file"
    result = run_bpe("train", "--vocab-size", "10", "-o", str(tmp_path / "out"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "vocab_size=10 is too small" in result.stderr
    assert not (tmp_path / "out").exists()
