"""Bad input gets a clear error naming the value, file or offset at fault."""
import warnings

import numpy as np
import pytest

import bpe
from bpe._train import MergeState


def test_vocab_size_too_small_says_why(write_text):
    path = write_text("abc")
    with pytest.raises(ValueError, match=r"vocab_size=257 is too small: 256 byte tokens \+ 2 special"):
        bpe.train(path, 257, ["<a>", "<b>"])
    with pytest.raises(ValueError, match="vocab_size=255"):
        bpe.train_from_iterator(["abc"], 255)


@pytest.mark.parametrize("specials, message", [
    ([""], "must not be empty"),
    (["<a>", "<a>"], "'<a>' is given twice"),
])
def test_bad_special_tokens(specials, message):
    with pytest.raises(ValueError, match=message):
        bpe.train_from_iterator(["abc"], 300, specials)


def test_a_single_string_is_not_a_list_of_special_tokens():
    with pytest.raises(TypeError, match="did you mean"):
        bpe.train_from_iterator(["abc"], 300, "<|endoftext|>")


def test_invalid_utf8_names_file_and_offset(write_text):
    path = write_text(b"hello world\n" * 10 + b"bad \xff byte")
    with pytest.raises(bpe.errors.CorpusDecodeError, match=rf"{path}: invalid UTF-8 at byte offset 124"):
        bpe.train(path, 300, num_workers=1)
    # Also when the bad byte is in a later chunk, handled by a worker process.
    with pytest.raises(bpe.errors.CorpusDecodeError, match="byte offset 124"):
        bpe.train(path, 300, num_workers=2, chunk_size=16)


def test_invalid_utf8_trains_with_replace(write_text):
    path = write_text(b"caf\xe9 caf\xe9 caf\xe9")
    tok = bpe.train(path, 260, errors="replace", num_workers=1)
    assert tok.merges[0] == (b"\xef\xbf", b"\xbd") or b"\xef\xbf\xbd" in [a + b for a, b in tok.merges]


def test_missing_file_is_named(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        bpe.train(str(missing), 300)


def test_empty_corpus_gives_bytes_and_specials(write_text):
    path = write_text("")
    with pytest.warns(UserWarning, match="learned 0 merges"):
        tok = bpe.train(path, 300, ["<|endoftext|>"])
    assert len(tok.vocab) == 257 and tok.merges == []
    assert tok.special_tokens == {"<|endoftext|>": 256}


def test_vocab_size_beyond_corpus_warns_with_merges_learned(write_text):
    path = write_text("ab ab ab")
    with pytest.warns(UserWarning, match=r"learned 2 merges of the 744"):
        tok = bpe.train(path, 1000)
    assert tok.merges == [(b"a", b"b"), (b" ", b"ab")]


def test_exact_vocab_size_does_not_warn(write_text):
    path = write_text("ab ab ab")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tok = bpe.train(path, 258)
    assert len(tok.vocab) == 258


def test_unknown_pattern_and_errors_option(write_text):
    path = write_text("abc")
    with pytest.raises(ValueError, match=r"pattern '\(unclosed' is neither a built-in name"):
        bpe.train(path, 300, pattern="(unclosed")
    with pytest.raises(ValueError, match="errors must be 'strict' or 'replace'"):
        bpe.train(path, 300, errors="ignore")
    with pytest.raises(ValueError, match="num_workers"):
        bpe.train(path, 300, num_workers=0)
    with pytest.raises(ValueError, match="min_frequency"):
        bpe.train(path, 300, min_frequency=0)


def test_lone_surrogate_in_iterator_text():
    with pytest.raises(ValueError, match=r"text 1: lone surrogate"):
        bpe.train_from_iterator(["fine", "bad \ud800 text"], 300, num_workers=1)
    tok = bpe.train_from_iterator(["bad \ud800 \ud800"], 258, errors="replace", num_workers=1)
    assert (b"\xef\xbf", b"\xbd") in tok.merges or (b"\xef", b"\xbf") in tok.merges


def test_kernel_rejects_inconsistent_arrays():
    with pytest.raises(ValueError, match="3 offsets for 1 items; expected 2"):
        MergeState(np.zeros(3, np.uint8), np.array([0, 1, 3]), np.array([1]), 1)
    with pytest.raises(ValueError, match="offsets end at 2, not at the data's length 3"):
        MergeState(np.zeros(3, np.uint8), np.array([0, 2]), np.array([1]), 1)
    with pytest.raises(ValueError, match="offsets must start at 0, not 1"):
        MergeState(np.zeros(3, np.uint8), np.array([1, 3]), np.array([1]), 1)
    # Every offset is checked, not only the ends: one past the data would be read out of bounds.
    with pytest.raises(ValueError, match=r"offset 2 \(1\) is below offset 1 \(9\)"):
        MergeState(np.zeros(3, np.uint8), np.array([0, 9, 1, 3]), np.array([1, 1, 1]), 1)
    with pytest.raises(ValueError, match="count -1 of pre-token 0 is negative"):
        MergeState(np.zeros(3, np.uint8), np.array([0, 3]), np.array([-1]), 1)


def python_first_invalid_utf8(data: bytes) -> int:
    """Where Python's strict decoder finds ``data`` invalid, or -1."""
    try:
        data.decode("utf-8")
        return -1
    except UnicodeDecodeError as e:
        return e.start


def test_utf8_validation_agrees_with_python():
    import random

    from bpe._scanner import first_invalid_utf8

    rng = random.Random(0)
    samples = [b"", b"abc", "日本👍é".encode(), b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf",
               b"\xe0\x80\xaf", b"\xf0\x8f\xbf\xbf", b"ok\xe2\x82", b"\xff", b"\xf4\x8f\xbf\xbf"]
    for _ in range(5000):
        samples.append(bytes(rng.choice([0x41, 0x80, 0xBF, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4,
                                          0xF5, 0xA0, 0x9F, 0x90, 0x8F]) for _ in range(rng.randint(1, 8))))
    for data in samples:
        assert first_invalid_utf8(data) == python_first_invalid_utf8(data), data


def test_utf8_validation_after_ascii_runs_of_every_length():
    # Runs of ASCII are read a word at a time: a character or a fault right
    # after a run of any length, at any offset in a word, and at the very end.
    from bpe._scanner import first_invalid_utf8

    pieces = ["é".encode(), "日".encode(), "👍".encode(), b"\xff", b"\xc0\xaf", b"\xed\xa0\x80",
              b"\xe2\x82", b"\x80", b"\xf4\x90\x80\x80"]
    for before in range(0, 26):
        for piece in pieces:
            for after in (0, 1, 7, 8, 9, 23):
                data = b"a" * before + piece + b"z" * after
                assert first_invalid_utf8(data) == python_first_invalid_utf8(data), data
                assert first_invalid_utf8(np.frombuffer(data, np.uint8)[:before]) == -1
