"""The native scanners split exactly where regex.findall splits, for every built-in pattern."""
import hypothesis.strategies as st
import numpy as np
import pytest
import regex
from hypothesis import given, settings

from bpe import _scanner, unicode
from bpe.patterns import PATTERNS

from conftest import SHAKESPEARE

NAMES = list(_scanner.PATTERN_IDS)


def native_split(text: str, name: str) -> list[str]:
    data = text.encode("utf-8", "surrogatepass")
    offsets = _scanner.split_offsets(data, _scanner.PATTERN_IDS[name])
    return [data[a:b].decode("utf-8", "surrogatepass") for a, b in zip(offsets, offsets[1:])]


def assert_same(text: str) -> None:
    for name in NAMES:
        assert native_split(text, name) == regex.findall(PATTERNS[name], text), (name, text)


# Pieces that reach every branch: contractions in any case (and the long s that
# folds to "s"), letter classes of o200k (upper, lower, title, modifier, other
# letters, marks), digits of several scripts, punctuation with trailing newlines
# and slashes, and whitespace of every kind.
PIECES = [
    "'s", "'S", "'t", "'T", "'ll", "'LL", "'lL", "'ve", "'VE", "'re", "'Re", "'m", "'d", "'D",
    "'\u017f", "'x", "''", "'",
    "a", "z", "A", "Z", "hello", "World", "HELLO", "camelCase", "ǅ", "ǈa", "ʰ", "ʰa", "aʰ", "日本語", "가",
    "\u0301", "e\u0301", "E\u0301", "\u0301\u0301", "Ω", "ω", "ß", "İ",
    "0", "7", "12", "1234567", "٣", "٣٤٥", "Ⅻ", "½", "²",
    ".", ",", "!", "?!", "...", "(", ")", "/", "//", "-", "_", "@", "#", "$", "€", "👍", "👨\u200d👩",
    "\ufe0f", "\u200d",
    " ", "  ", "   ", "\t", "\n", "\n\n", "\r", "\r\n", "\r\n\r\n", " \n", "\n ", "\x0b", "\x0c",
    "\u00a0", "\u3000", "\u2028", "\u2029", "\u0085", "\u1680", "\u2009", "\x1c", "\x1f",
    "\ud800", "\udfff",
]
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@settings(max_examples=1500, deadline=None)
@given(texts)
def test_branch_stressing_text(text):
    assert_same(text)


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=60))
def test_arbitrary_text(text):
    assert_same(text)


@pytest.mark.parametrize("context", ["{c}", "a{c}", " {c}a", "{c}{c}x", "'{c}", "A{c}b", "{c}\n", "1{c}2"])
def test_every_code_point_in_context(context):
    # Each code point once, between neighbours that exercise its class.
    text = "\x00".join(context.format(c=c) for c in unicode.all_code_points())
    for name in NAMES:
        native = native_split(text, name)
        assert native == regex.findall(PATTERNS[name], text), name


def test_tables_agree_with_regex_for_every_code_point():
    classes, fold = unicode.tables()
    text = unicode.all_code_points()
    for bit, pattern in unicode.CLASS_BITS.items():
        members = np.zeros(len(text), dtype=bool)
        for match in regex.finditer(pattern, text):
            members[match.start()] = True
        assert np.array_equal((classes & bit) != 0, members), pattern
    assert fold[ord("S")] == ord("s") and fold[0x17F] == ord("s") and fold[ord("x")] == 0


def test_whole_file():
    with open(SHAKESPEARE, encoding="utf-8") as f:
        assert_same(f.read())


def test_interner_counts_like_a_counter():
    from collections import Counter

    text = "the cat's hat, the CAT'S hat!\n\n  the end 12345"
    data = text.encode()
    for name, pattern_id in _scanner.PATTERN_IDS.items():
        interner = _scanner.Interner()
        interner.count(data, pattern_id)
        interner.count(data, pattern_id, 4, 9)   # a sub-range: "cat's"
        buffer, offsets, counts = interner.arrays()
        got = {bytes(buffer[a:b]): int(c) for a, b, c in zip(offsets, offsets[1:], counts)}
        expected = Counter(t.encode() for t in regex.findall(PATTERNS[name], text))
        expected.update(t.encode() for t in regex.findall(PATTERNS[name], text[4:9]))
        assert got == dict(expected), name


@pytest.mark.parametrize("name", NAMES)
def test_training_native_equals_regex_path(name, write_text):
    # "(?:...)" is the same regex, but not recognised as built-in: it takes the regex path.
    from conftest import random_corpus
    import bpe

    text = open(SHAKESPEARE, encoding="utf-8").read()[:200_000] + random_corpus(5, special="<|endoftext|>")
    path = write_text(text)
    via_regex = "(?:" + PATTERNS[name] + ")"
    native_counts = bpe.count_pretokens(path, ["<|endoftext|>"], pattern=name, num_workers=2,
                                        chunk_size=20_000)
    regex_counts = bpe.count_pretokens(path, ["<|endoftext|>"], pattern=via_regex, num_workers=1)
    assert native_counts.to_dict() == regex_counts.to_dict()
    native = bpe.train_from_counts(native_counts, 256 + 1 + 300, ["<|endoftext|>"])
    assert native.merges == bpe.train_from_counts(regex_counts, 256 + 1 + 300, ["<|endoftext|>"]).merges
