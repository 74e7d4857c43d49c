"""Worked examples from the BPE literature, asserted exactly."""
import numpy as np

import bpe
from bpe import pure
from bpe._train import MergeState


def test_cs336_low_lower_widest_newest(write_text):
    # Stanford CS336 assignment 1's worked example: whitespace pre-tokenization,
    # ties broken towards the lexicographically greater pair.
    text = ("low low low low low lower lower widest widest widest "
            "newest newest newest newest newest newest")
    path = write_text(text)
    tok = bpe.train(path, 256 + 1 + 12, ["<|endoftext|>"], pattern=r"\S+", num_workers=1)
    expected = ["s t", "e st", "o w", "l ow", "w est", "n e", "ne west", "w i",
                "wi d", "wid est", "low e", "lowe r"]
    assert [f"{a.decode()} {b.decode()}" for a, b in tok.merges] == expected
    assert tok.vocab[256] == b"<|endoftext|>"
    assert tok.vocab[257] == b"st"
    assert tok.vocab[268] == b"lower"
    assert pure.train(text, 269, ["<|endoftext|>"], pattern=r"\S+") == tok.merges


def test_wikipedia_aaabdaaabac():
    # Wikipedia's example merges (a, a) first. Next, (aa, a) and (a, b) tie at 2
    # and the greater tuple (b"aa", b"a") wins under our rule (Wikipedia picks
    # "ab"); then (aaa, b); then four pairs tie at 1 and (b"d", b"aaab") is greatest.
    tok = bpe.train_from_iterator(["aaabdaaabac"], 260, pattern=None, num_workers=1)
    assert tok.merges == [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b"), (b"d", b"aaab")]


def test_overlapping_pairs_count_each_occurrence():
    state = MergeState(np.frombuffer(b"aaa", np.uint8), np.array([0, 3]), np.array([7]), 1)
    assert state.count_of(ord("a"), ord("a")) == 14   # "aaa" holds (a, a) twice, weight 7
    assert state.run(1) == 1
    assert state.count_of(ord("a"), ord("a")) == 0    # "aaa" -> (aa, a)
    assert state.count_of(256, ord("a")) == 7


def test_merge_rewrites_left_to_right_in_one_pass():
    state = MergeState(np.frombuffer(b"abab", np.uint8), np.array([0, 4]), np.array([1]), 2)
    assert state.run(1) == 1
    assert state.merges().tolist() == [[ord("a"), ord("b")]]
    assert state.count_of(256, 256) == 1                # (ab, ab)
    assert state.count_of(ord("b"), ord("a")) == 0
    assert state.run(1) == 1
    assert state.merges().tolist()[1] == [256, 256]


def test_aaaa_becomes_two_tokens_not_three():
    # Left-to-right: "aaaa" -> (aa, aa), never (a, aa, a).
    state = MergeState(np.frombuffer(b"aaaa", np.uint8), np.array([0, 4]), np.array([1]), 2)
    state.run(2)
    assert state.merges().tolist() == [[97, 97], [256, 256]]


def test_counts_are_64_bit():
    big = 3 * 10**12
    counts = bpe.PretokenCounts.from_mapping({"ab": big, "cd": big - 1})
    tok = bpe.train_from_counts(counts, 258)
    assert tok.merges == [(b"a", b"b"), (b"c", b"d")]


def test_tie_break_compares_bytes_as_tuples():
    # Equal counts: (b"b", b"a") > (b"a", b"z") because b"b" > b"a", even though "z" > "a".
    counts = bpe.PretokenCounts.from_mapping({"az": 3, "ba": 3})
    assert bpe.train_from_counts(counts, 257).merges == [(b"b", b"a")]
    # A shorter byte string that is a prefix of another is smaller: (b"x", b"xy") < (b"xy", ...).
    counts = bpe.PretokenCounts.from_mapping({"xyxy": 1, "x": 1})
    assert bpe.train_from_counts(counts, 259).merges == pure.train_from_counts(
        counts.to_dict(), 3)
