"""Careless and hostile input to the API and the command line: a clear error that
names the value at fault, or the exact result; never a silent wrong answer, a
traceback for a user's mistake, or a hang."""
import subprocess
import sys
import time

import pytest

import bpe
from bpe import pure

from conftest import SHAKESPEARE


def run_bpe(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "bpe", *args], capture_output=True, text=True,
                          input=stdin, timeout=300)


# ------------------------------------------------------------------ counts near 2^63

def test_pair_counts_that_pass_int64_raise_instead_of_wrapping():
    counts = bpe.PretokenCounts.from_mapping({"abab": 2**62, "cd": 5})
    assert pure.train_from_counts(counts.to_dict(), 1) == [(b"a", b"b")]     # 2^63 in Python ints
    with pytest.raises(OverflowError, match="pair's count passed 2"):
        bpe.train_from_counts(counts, 257)
    fine = bpe.PretokenCounts.from_mapping({"abab": 2**61, "cd": 5})
    assert bpe.train_from_counts(fine, 258).merges == pure.train_from_counts(fine.to_dict(), 2)


def test_pre_token_counts_that_pass_int64_when_added_raise():
    big = bpe.PretokenCounts.from_mapping({"ab": 2**62 + 2**61})
    assert (big + bpe.PretokenCounts.from_mapping({"ab": 1})).to_dict() == {b"ab": 2**62 + 2**61 + 1}
    with pytest.raises(OverflowError, match="pre-token's count passed 2"):
        big + big
    assert big.total == 2**62 + 2**61
    assert bpe.PretokenCounts.from_mapping({"a": 2**62, "b": 2**62}).total == 2**63    # exact, no wrap


# ------------------------------------------------------------------ patterns

@pytest.mark.parametrize("pattern", [r"\w+", r"[a-z]+", r"(\w)+", r"\d", r"x*"])
def test_every_pattern_keeps_all_text(pattern, tmp_path):
    text = "hello, world!  42 éü 日本\n\t<|endoftext|>tail"
    tok = bpe.train_from_iterator([text * 20], 256 + 1 + 20, ["<|endoftext|>"], pattern=pattern,
                                  num_workers=1)
    assert tok.decode(tok.encode(text)) == text
    assert bpe.pretokenize("hello, world!", pattern) == pure.pretokenize("hello, world!", pattern)
    assert "".join(bpe.pretokenize(text, pattern)) == text
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_file(tok.to_huggingface(tmp_path))
    assert hf.encode(text).ids == tok.encode(text)      # the export follows the same rule


@pytest.mark.parametrize("name", ["gpt5", "GPT2", "o200", "cl100k_bas"])
def test_a_misspelt_pattern_name_is_refused_with_the_names(name, tmp_path):
    with pytest.raises(ValueError, match=rf"pattern '{name}' is not a built-in name: use one of gpt2, "
                                         r"cl100k, o200k"):
        bpe.train_from_iterator(["some text"], 300, pattern=name)
    assert bpe.pretokenize("gpt5 x gpt5", "(?:gpt5)") == ["gpt5", " x ", "gpt5"]   # the way to mean it


def test_a_backtracking_pattern_from_a_file_times_out_naming_it(tmp_path):
    tok = bpe.train_from_iterator(["aaaa b"], 258, pattern="(a|aa)+$|\\s|b", num_workers=1)
    path = tok.save(tmp_path / "evil.bpe")
    loaded = bpe.load(path)
    started = time.perf_counter()
    with pytest.raises(ValueError, match=r"pattern '\(a\|aa\)\+\$\|\\\\s\|b' took more than .* "
                                         r"\(catastrophic backtracking\?\).*evil.bpe"):
        loaded.encode("a" * 40 + "b")
    assert time.perf_counter() - started < 30


def test_encode_iterable_memory_is_bounded_for_custom_patterns():
    import tracemalloc

    tok = bpe.train_from_iterator(["hello world " * 50], 280, pattern=r"\w+|\s+", num_workers=1)
    import itertools

    text = "word " * 200 * 1000                          # 1 MB: no special token, no safe cut
    expected = tok.encode(text)
    tracemalloc.start()
    position = 0
    ids = tok.encode_iterable(("word " * 200 for _ in range(1000)), flush_chars=1 << 14,
                              max_buffer_chars=1 << 16)
    for part in iter(lambda: list(itertools.islice(ids, 1 << 16)), []):
        assert part == expected[position:position + len(part)]
        position += len(part)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert position == len(expected)                  # exact for this pattern
    # A window of 64 K characters, its pre-tokens and ids: ~4 MB. The whole stream at
    # once (what a custom pattern got before) holds 400 000 pre-token strs alone (> 20 MB).
    assert peak < 8 * 2**20, peak


# ------------------------------------------------------------------ sizes, names, special tokens

def test_vocab_sizes_beyond_what_ids_hold_are_refused_naming_the_limit(tmp_path):
    with pytest.raises(ValueError, match=r"vocab_size=2147483648 is more than token ids can hold "
                                         r"\(at most 2147483647\)"):
        bpe.train_from_iterator(["abc"], 2**31)
    result = run_bpe("train", "--vocab-size", "10000000000", "-o", str(tmp_path / "t"), "--quiet")
    assert result.returncode == 2 and "at most 2147483647" in result.stderr and "Traceback" not in result.stderr
    with pytest.warns(UserWarning, match="learned 2 merges"):      # huge but legal: no huge allocation
        assert len(bpe.train_from_iterator(["abab"], 2**31 - 1, num_workers=1).merges) == 2


def test_a_special_token_that_is_not_unicode_is_refused():
    with pytest.raises(ValueError, match=r"special token '\\ud800' is not valid Unicode"):
        bpe.train_from_iterator(["abc"], 300, ["\ud800"])


@pytest.mark.parametrize("name", ["gpt4", "cl100k", "o200k"])
def test_an_unknown_name_lists_the_built_in_ones(name):
    with pytest.raises(FileNotFoundError, match=rf"no tokenizer '{name}': not a built-in name "
                                                r"\(gpt2, p50k_base, p50k_edit, cl100k_base, o200k_base, "
                                                r"o200k_harmony, r50k_base\)"):
        bpe.load(name)


# ------------------------------------------------------------------ the command line

def test_cli_one_line_errors(tmp_path):
    binary = tmp_path / "image.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 10)
    result = run_bpe("count", str(binary), "--tokenizer", "gpt2")
    assert result.returncode == 2 and f"{binary}: invalid UTF-8 at byte offset 0" in result.stderr
    assert "pass --errors replace" in result.stderr and "Traceback" not in result.stderr
    assert run_bpe("count", str(binary), "--tokenizer", "gpt2", "--errors", "replace").returncode == 0
    result = run_bpe("encode", str(binary), "--tokenizer", "gpt2", "-o", str(tmp_path / "o.bin"))
    assert result.returncode == 2 and "--errors replace" in result.stderr
    result = run_bpe("decode", "-", "--tokenizer", "gpt2", "--head", "-5", stdin="1 2 3")
    assert result.returncode == 2 and "--head -5: give a number of tokens >= 0" in result.stderr
    result = run_bpe("inspect", "gpt4")
    assert result.returncode == 2 and all(name in result.stderr for name in bpe.list_encoding_names())


def test_a_closed_pipe_ends_quietly():
    result = subprocess.run(f"{sys.executable} -m bpe inspect gpt2 --top 2000 | head -2", shell=True,
                            capture_output=True, text=True, timeout=120)
    assert result.stdout.count("\n") == 2 and result.stderr == ""


def test_train_accepts_a_directory(tmp_path):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text(open(SHAKESPEARE, encoding="utf-8").read()[:50_000],
                                               encoding="utf-8")
    result = run_bpe("train", str(tmp_path / "corpus") + "/", "--vocab-size", "300", "-o",
                     str(tmp_path / "tok"), "--quiet")
    assert result.returncode == 0, result.stderr
    assert len(bpe.load(tmp_path / "tok").merges) == 44
