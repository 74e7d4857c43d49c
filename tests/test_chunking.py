"""Chunk boundaries never change what is counted."""
import random

import hypothesis.strategies as st
from hypothesis import given, settings

import bpe
from bpe import pure
from bpe.corpus.chunking import plan_chunks
from bpe.patterns import find_safe_cut, is_safe_cut, pretokenize

from conftest import TIE_ALPHABET, UNICODE_ALPHABET

pieces = st.sampled_from(TIE_ALPHABET + UNICODE_ALPHABET + [
    "\n", "\n\n", "\r\n", " \n", "\nA", "\n1", "x\n", ".\n", "'\n", "/\n", "'s", "'S",
    "\n/", "  ", "\u3000", "\u2028", "A", "Z9", ":\n", " x", "x ", " X", "ab cd", "'ll", " '",
    "\u0301", "ǅ", "ʰ", "HELLO", " 1",
])
texts = st.lists(pieces, max_size=60).map("".join)


def safe_cuts(text: str, pattern: str) -> list[int]:
    data = text.encode("utf-8")
    return [p for p in range(len(data) + 1) if is_safe_cut(data, p, pattern)]


@settings(max_examples=300, deadline=None)
@given(texts)
def test_safe_cuts_do_not_change_pretokens(text):
    data = text.encode("utf-8")
    for pattern in ("gpt2", "cl100k", "o200k", "llama3", "qwen2", "deepseek_v3"):
        whole = pretokenize(text, pattern)
        for cut in safe_cuts(text, pattern):
            left, right = data[:cut].decode("utf-8"), data[cut:].decode("utf-8")
            assert pretokenize(left, pattern) + pretokenize(right, pattern) == whole, (pattern, cut)


def test_the_rule_is_not_vacuous():
    # The property above must see cuts, and unsafe neighbours of them must differ.
    text = "Hello.\nWorld\n\nagain x\nyes"
    assert safe_cuts(text, "gpt2") == [7, 19, 22]
    # Cutting inside a whitespace run changes gpt2's pre-tokens: the rule refuses it.
    text = "a\n\n x"
    assert pretokenize(text, "gpt2") == ["a", "\n\n", " x"]
    assert pretokenize(text[:2], "gpt2") + pretokenize(text[2:], "gpt2") == ["a", "\n", "\n", " x"]
    assert safe_cuts(text, "gpt2") == []


def test_custom_patterns_and_none_have_no_safe_cut():
    assert find_safe_cut(b"ab.\nword", "gpt2") == 4
    assert find_safe_cut("one two three", "o200k", last=True) == 7
    assert find_safe_cut(b"ab.\nword", r"\w+") == -1
    assert find_safe_cut(b"ab.\nword", None) == -1


def test_boundaries_snap_to_special_tokens_and_never_split_one(write_text):
    eot = "<|endoftext|>"
    double = eot + eot
    text = ("doc one\n" + double + "doc two " * 30 + eot + "tail") * 20
    path = write_text(text)
    data = text.encode()
    doubles = [i for i in range(len(data)) if data.startswith(double.encode(), i)]
    at_special = 0
    for chunk_size in (5, 50, 333):
        chunks = plan_chunks([path], chunk_size, [eot, double], "gpt2")
        assert chunks[0].start == 0 and chunks[-1].end == len(data)
        for before, after in zip(chunks, chunks[1:]):
            assert before.end == after.start
            # At a special token, or (none within reach) at a safe cut...
            assert (data[after.start:].startswith(eot.encode())
                    or is_safe_cut(data, after.start, "gpt2")), after.start
            # ...and never between the two halves of the longer special token.
            assert not any(start < after.start < start + len(double)
                           for start in doubles), after.start
            at_special += data[after.start:].startswith(eot.encode())
    assert at_special > 0


def test_boundaries_without_special_tokens_are_safe_cuts(write_text):
    text = "First line.\nSecond line\n" * 200
    path = write_text(text)
    data = text.encode()
    chunks = plan_chunks([path], 100, [], "gpt2")
    assert len(chunks) > 10
    for chunk in chunks[1:]:
        assert is_safe_cut(data, chunk.start, "gpt2")
    # A custom pattern without special tokens cannot be cut: one chunk.
    assert len(plan_chunks([path], 100, [], r"\S+")) == 1


def test_counts_identical_for_any_chunk_size_and_workers(write_text):
    text = ("Alpha beta.\ngamma <|endoftext|>delta\n\n  epsilon 123\n" * 300)
    path = write_text(text)
    reference = bpe.count_pretokens(path, ["<|endoftext|>"], num_workers=1, chunk_size=1 << 30)
    for chunk_size in (7, 64, 1000):
        for num_workers in (1, 2):
            counts = bpe.count_pretokens(path, ["<|endoftext|>"], num_workers=num_workers,
                                         chunk_size=chunk_size)
            assert counts == reference
    assert reference.to_dict() == dict(pure.count_pretokens([text], ["<|endoftext|>"]))


special_pieces = st.lists(st.sampled_from(["a", "<", "|", ">", "<|", "|>", "<|x|>", "<|x|><|x|>", "é"]),
                          max_size=30).map("".join)


def regex_special_matches(text: str, specials: list[str]) -> list[str]:
    """tiktoken's statement of the rule: a regex alternation, longest first."""
    import regex

    ordered = sorted(specials, key=len, reverse=True)
    return regex.findall("|".join(regex.escape(token) for token in ordered), text)


@settings(max_examples=500, deadline=None)
@given(special_pieces)
def test_special_spans_follow_the_rule(text):
    # One definition (bpe.specials.special_spans), checked against tiktoken's regex
    # statement of it; split_special and the kernels' memmem search against it.
    from bpe._scanner import find_special_spans
    from bpe.specials import special_spans, split_special

    for specials in (["<|x|>"], ["<|x|>", "<|x|><|x|>"], ["|>", "<|", "<|x|>"], ["x|><", "<|x"]):
        expected = regex_special_matches(text, specials)
        spans = special_spans(text, specials)
        assert [specials[i] for _, _, i in spans] == expected
        assert all(text[a:b] == specials[i] for a, b, i in spans)
        assert [special for _, special in split_special(text, specials) if special is not None] == expected
        assert "".join(segment + (special or "") for segment, special in split_special(text, specials)) == text
        data = text.encode()
        byte_spans = special_spans(data, [t.encode() for t in specials])
        assert [data[a:b].decode() for a, b, _ in byte_spans] == expected
        # Long buffers are searched without the GIL, by the kernels' own finder.
        assert find_special_spans(data, [t.encode() for t in specials]) == byte_spans


def test_special_tokens_are_found_at_every_place_of_a_long_text():
    # Each needle at every place of texts past a vector's width, among its
    # first and second bytes alone, and cut short by the text's end: where
    # the kernels' search restarts after a first byte that begins no needle.
    from bpe._scanner import find_special_spans
    from bpe.specials import special_spans

    rng = random.Random(7)
    for specials in ([b"<|x|>"], [b"<|endoftext|>", b"<|fim|>"], [b"<|"], [b"<"]):
        for n in range(0, 100):
            for at in range(n):
                data = bytearray(rng.choice(b"<|a> ") for _ in range(n))
                data[at:at] = specials[rng.randrange(len(specials))]
                for text in (bytes(data), bytes(data[:-1])):
                    assert find_special_spans(text, specials) == special_spans(text, specials), (text, specials)


needle_alphabet = ["<", "|", "x", "é", "日", "\n", "a", "b", "c", "d", "e"]


def needles_starting_with(firsts):
    """At least 16 distinct needles (the index's threshold) whose first character is one of ``firsts``."""
    needle = st.tuples(st.sampled_from(firsts), st.lists(st.sampled_from(needle_alphabet), max_size=3).map("".join))
    return st.lists(needle.map("".join), min_size=16, max_size=60, unique=True)


@settings(max_examples=200, deadline=None)
@given(st.one_of(needles_starting_with(["<", "é"]), needles_starting_with(needle_alphabet)),
       st.lists(st.sampled_from(needle_alphabet), max_size=80).map("".join))
def test_many_special_tokens_are_found_by_their_first_bytes(needles, text):
    # From 16 needles with no first byte in common the kernels search by an
    # index of first bytes: a memchr each (up to four of them, as for "<" and
    # "é") or a byte table (more), then the needles of each first two bytes,
    # one-byte needles among them.
    from bpe._scanner import find_special_spans
    from bpe.specials import special_spans

    data = text.encode()
    forms = [needle.encode() for needle in needles]
    assert find_special_spans(data, forms) == special_spans(data, forms)
