"""The native scanners split exactly where regex.findall splits (on the reference Unicode,
``bpe.unicode``), for every built-in pattern
and every block-classifier path (byte by byte, portable masks, SSE2, AVX2, NEON: each
that this CPU runs, forced in turn)."""
import contextlib
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import hypothesis.strategies as st
import numpy as np
import pytest
import regex
from hypothesis import given, settings

from bpe import _scanner, unicode
from bpe.patterns import PATTERNS

from conftest import SHAKESPEARE, findall

NAMES = list(_scanner.PATTERN_IDS)


def native_split(text: str, name: str, batches: bool = True) -> list[str]:
    """The native split, one pre-token at a time (as counting and ``split_offsets``
    find them), checked (with ``batches``) against the split found a batch at a
    time (as encoding finds them: a window's pre-tokens at once), for batches
    of two sizes."""
    data = text.encode("utf-8", "surrogatepass")
    pattern = _scanner.PATTERN_IDS[name]
    offsets = _scanner.split_offsets(data, pattern)
    for room in (1, 64) if batches else ():
        assert np.array_equal(_scanner.fill_offsets(data, pattern, room), offsets), (room, text)
    return [data[a:b].decode("utf-8", "surrogatepass") for a, b in zip(offsets, offsets[1:])]


@contextlib.contextmanager
def simd(path: str):
    """Scans use the block classifier ``path`` inside the block (and a str's
    UTF-8 is written as that path writes it)."""
    previous = _scanner.select_simd(path)
    try:
        yield
    finally:
        _scanner.select_simd(previous)


def assert_same(text: str) -> None:
    """Every pattern splits ``text`` as regex does, with every block-classifier path."""
    for path in _scanner.simd_paths():
        with simd(path):
            for name in NAMES:
                assert native_split(text, name) == findall(PATTERNS[name], text), (name, path, text)


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
    ".NET", " .a", "\x00", "\x7f", "\x01a", "ー", "゠", "日ア", "\u3040",
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


# Runs of ASCII letters and digits that end before, at and after the edge of a
# 64-byte block, next to non-ASCII letters, marks and digits that continue them.
RUNS = ["a" * 63, "b" * 64, "c" * 65, "D" * 64, "E" * 70, "Fg" * 40, "HIJk" * 20, "9" * 64, "8" * 130,
        "x" * 127, "Y" * 128, "z" * 200]
long_texts = st.lists(st.sampled_from(PIECES + RUNS), max_size=30).map("".join)


@settings(max_examples=600, deadline=None)
@given(long_texts)
def test_runs_across_block_edges(text):
    assert_same(text)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from("aZ09 '\n\t\r\x0b\x1c\x00\x7f.!/sdmtlvreSL\u00e9\u0301\u01c5\u0663\u00a0"
                                        "日ー゠\u3099"),
               min_size=50, max_size=400))
def test_dense_mixtures_of_classes(text):
    # Every class next to every other, at every offset of a 64-byte window.
    assert_same(text)


def test_contractions_at_every_offset_of_a_window():
    # gpt2's windows split contractions themselves, except within 4 bytes of
    # what the window does not know (its end, a non-ASCII byte): each
    # contraction, and near misses, at every offset, before letters or not.
    for offset in range(0, 70):
        for contraction in ("'s", "'t", "'m", "'d", "'ll", "'ve", "'re", "'l", "'v", "'r", "'x", "'S"):
            for after in ("", "a", "ab c", "'s", " é", "é"):
                assert_same("x" * offset + contraction + after + " tail of the text")


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from("aZ09 '\n\t\r\x0b\x1c\x00\x7f.!/sdmtlvreSL"), min_size=60, max_size=400))
def test_dense_mixtures_of_ascii(text):
    # The same in ASCII alone, where whole windows are decided at once.
    assert_same(text)


def test_every_path_this_cpu_runs_is_offered():
    paths = _scanner.simd_paths()
    assert paths[:2] == ["none", "scalar"]
    if os.uname().machine in ("x86_64", "AMD64"):
        assert "sse2" in paths
    with pytest.raises(ValueError, match="SIMD path 'avx9'"):
        _scanner.select_simd("avx9")


@pytest.mark.parametrize("path", ["none", "scalar"])
def test_the_environment_picks_the_path(path):
    code = "from bpe import _scanner; print(_scanner.simd_path())"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "BPE_SIMD": path},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == [path]
    default = subprocess.run([sys.executable, "-c", code], env={k: v for k, v in os.environ.items()
                                                              if k != "BPE_SIMD"},
                             capture_output=True, text=True, check=True).stdout.split()
    assert default == [_scanner.simd_paths()[-1]]   # the fastest this CPU runs


FIRST_ASCII_THEN_NOT = r"""
import os, sys, threading
from collections import Counter
sys.path.insert(0, {tests!r})
import bpe
from bpe import _scanner, unicode
from bpe.patterns import PATTERNS
from conftest import findall
from tiktoken_reference import get_encoding

ascii_text = "It's 12345 the cat's  HAT!\n\n  x y" * 50
mixed = "naïve café 日本語 ſ'S it's  12 ３４ Ǆemo ÀB \U000323b0:A"
def split(text, name):
    data = text.encode()
    offsets = _scanner.split_offsets(data, _scanner.PATTERN_IDS[name])
    return [data[a:b].decode() for a, b in zip(offsets, offsets[1:])]

entry = {entry!r}
if entry == "split_offsets":
    assert split(ascii_text, "gpt2") == findall(PATTERNS["gpt2"], ascii_text)
elif entry == "count":
    interner = _scanner.Interner()
    interner.count(ascii_text.encode(), _scanner.PATTERN_IDS["o200k"])
    data, offsets, counts = interner.arrays()
    found = Counter({{bytes(data[a:b]): int(c) for a, b, c in zip(offsets, offsets[1:], counts)}})
    assert found == Counter(t.encode() for t in findall(PATTERNS["o200k"], ascii_text))
else:
    assert bpe.load("cl100k_base").encode(ascii_text) == get_encoding("cl100k_base").encode(ascii_text)
assert len(_scanner._tables) == 1 and _scanner._tables[0][0] is unicode.ascii_tables()[0], "not ASCII only"
assert unicode.reference.cache_info().currsize == 0, "the reference file was read for ASCII text"

# Scans of ASCII text go on while the first text that is not ASCII brings the full tables.
expected = findall(PATTERNS["cl100k"], ascii_text)
agreed = []
def scan_ascii():
    for _ in range(300):
        agreed.append(split(ascii_text, "cl100k") == expected)
threads = [threading.Thread(target=scan_ascii) for _ in range(2)]
for thread in threads:
    thread.start()
for name in PATTERNS:
    assert split(mixed, name) == findall(PATTERNS[name], mixed), name
for thread in threads:
    thread.join()
assert len(agreed) == 600 and all(agreed)
assert _scanner._tables[-1][0] is unicode.tables()[0]
for name in ("gpt2", "cl100k_base", "o200k_base"):
    assert bpe.load(name).encode(mixed + ascii_text) == get_encoding(name).encode(mixed + ascii_text), name
print("ok")
"""


@pytest.mark.parametrize("entry", ["split_offsets", "count", "encode"])
def test_ascii_text_first_builds_the_ascii_tables_only(entry):
    # A fresh process that first scans ASCII text builds the tables of the
    # ASCII code points alone, without reading the reference file; the first
    # text that is not ASCII brings the full ones, and scans running meanwhile
    # stay exact.
    code = FIRST_ASCII_THEN_NOT.format(tests=os.path.dirname(os.path.abspath(__file__)), entry=entry)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.split() == ["ok"], out.stderr[-3000:]


def test_the_ascii_tables_are_the_full_tables_ascii_part():
    classes, fold = unicode.tables()
    ascii_classes, ascii_fold = unicode.ascii_tables()
    assert np.array_equal(ascii_classes[:128], classes[:128]) and not ascii_classes[128:].any()
    assert np.array_equal(ascii_fold[:128], fold[:128]) and not ascii_fold[128:].any()


def utf8_offsets(text: str) -> np.ndarray:
    """Where each code point of ``text`` starts in its UTF-8, and the end (lone
    surrogates as "surrogatepass" writes them: three bytes)."""
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    widths = 1 + (points >= 0x80).astype(np.int64) + (points >= 0x800) + (points >= 0x10000)
    return np.concatenate([[0], np.cumsum(widths)])


def findall_offsets(seen: str, at_byte: np.ndarray, name: str) -> np.ndarray:
    """Where ``findall``'s pieces of a text start and end in its UTF-8. ``seen``
    is ``as_reference(text)``, whose pieces ``findall`` cuts the text as (only
    their lengths are needed here); ``at_byte`` is ``utf8_offsets(text)``."""
    pieces = regex.findall(PATTERNS[name], seen, concurrent=True)
    char_ends = np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)))
    assert char_ends[-1] == len(seen), name             # the pieces cover the text
    return np.concatenate([[0], at_byte[char_ends]])


@pytest.mark.parametrize("context", ["{c}", "a{c}", " {c}a", "{c}{c}x", "'{c}", "A{c}b", "{c}\n", "1{c}2"])
def test_every_code_point_in_context(context):
    # Each code point once, between neighbours that exercise its class. (Batches
    # are held to the same splits by the tests above: this one is about classes.)
    # Compared as offsets (millions of pieces, each made a str, cost most of this
    # test), regex's worked out in a thread while the scanners' are checked.
    # (In two, each waited on the other for the GIL as it made its pieces.)
    text = "\x00".join(context.format(c=c) for c in unicode.all_code_points())
    data = text.encode("utf-8", "surrogatepass")
    seen, at_byte = unicode.as_reference(text), utf8_offsets(text)
    with ThreadPoolExecutor(1) as pool:
        found = {name: pool.submit(findall_offsets, seen, at_byte, name) for name in NAMES}
        for name in NAMES:
            expected = found.pop(name).result()       # each let go once checked
            for path in _scanner.simd_paths():
                with simd(path):
                    assert np.array_equal(_scanner.split_offsets(data, _scanner.PATTERN_IDS[name]), expected), \
                        (name, path)


def test_tables_agree_with_regex_on_the_reference_text_for_every_code_point():
    # The scanners' classes and what regex matches on as_reference's text are
    # one classification, whatever Unicode the installed regex carries.
    classes, fold = unicode.tables()
    text = unicode.as_reference(unicode.all_code_points())
    for bit, pattern in unicode.CLASS_BITS.items():
        members = np.zeros(len(text), dtype=bool)
        for match in regex.finditer(pattern, text):
            members[match.start()] = True
        assert np.array_equal((classes & bit) != 0, members), pattern
    expected_fold = np.zeros(len(text), dtype=np.uint8)
    for letter in unicode.CONTRACTION_LETTERS:
        for match in regex.finditer("(?i)" + letter, text):
            expected_fold[match.start()] = ord(letter)
    assert np.array_equal(fold, expected_fold)
    assert fold[ord("S")] == ord("s") and fold[0x17F] == ord("s") and fold[ord("x")] == 0


def test_whole_file():
    with open(SHAKESPEARE, encoding="utf-8") as f:
        assert_same(f.read())


def test_interner_counts_like_a_counter():
    from collections import Counter

    text = "the cat's hat, the CAT'S hat!\n\n  the end 12345"
    data = text.encode()
    for name, pattern_id in _scanner.PATTERN_IDS.items():
        expected = Counter(t.encode() for t in findall(PATTERNS[name], text))
        expected.update(t.encode() for t in findall(PATTERNS[name], text[4:9]))
        for path in _scanner.simd_paths():
            with simd(path):
                interner = _scanner.Interner()
                interner.count(data, pattern_id)
                interner.count(data, pattern_id, 4, 9)   # a sub-range: "cat's"
                buffer, offsets, counts = interner.arrays()
            got = {bytes(buffer[a:b]): int(c) for a, b, c in zip(offsets, offsets[1:], counts)}
            assert got == dict(expected), (name, path)


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


def test_interner_counts_past_its_front_cache():
    # Short pre-tokens are found through a front cache of 2^16 entries, cleared
    # when full: more distinct ones than that, each seen again after the clear.
    from collections import Counter

    rng = np.random.default_rng(3)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = ["".join(rng.choice(letters, size=int(rng.integers(4, 9)))) for _ in range(90_000)]
    text = " " + " ".join(words + words[::3] + ["x" * 40, "x" * 40])      # and two long ones
    data = text.encode()
    expected = Counter(t.encode() for t in findall(PATTERNS["gpt2"], text))
    assert len(expected) > 1 << 16
    interner = _scanner.Interner()
    middle = len(data) // 2
    while data[middle] != 32:
        middle += 1
    interner.count(data, _scanner.PATTERN_IDS["gpt2"], 0, middle)        # two calls, one cache
    interner.count(data, _scanner.PATTERN_IDS["gpt2"], middle)
    buffer, offsets, counts = interner.arrays()
    assert {bytes(buffer[a:b]): int(c) for a, b, c in zip(offsets, offsets[1:], counts)} == dict(expected)


def test_interner_counts_that_pass_int64_raise_on_the_fast_path():
    interner = _scanner.Interner()
    interner.add_arrays(np.frombuffer(b" ab", dtype=np.uint8), np.array([0, 3]), np.array([2**63 - 2]))
    with pytest.raises(OverflowError, match="pre-token's count passed 2"):
        interner.count(b" ab ab ab", _scanner.PATTERN_IDS["gpt2"])   # the 2nd is found in the front cache
