"""``bpe/data/unicode_reference.npz``: the Unicode tiktoken's and ``tokenizers``'
pattern engines classify by, measured from them code point by code point.

The test measures both again and compares every code point with the shipped
tables; ``python tests/test_unicode_reference.py`` writes the file afresh from
tiktoken (for a tiktoken whose engine moved to a newer Unicode)."""
import sys

import numpy as np
import pytest

from bpe import unicode

SURROGATES = range(0xD800, 0xE000)
POINTS = np.array([c for c in range(unicode.N_CODE_POINTS) if c not in SURROGATES], dtype=np.uint32)
TEXT = unicode.text_of(POINTS)
BYTES = {bytes([i]): i for i in range(256)}
TOKENIZERS_CHUNK = 1 << 16


def tiktoken_matches(pattern: str) -> np.ndarray:
    """The code points tiktoken's pattern engine matches ``pattern`` on: tiktoken
    encodes the matches of its pattern alone, so a byte vocabulary gives back
    exactly the text it matched."""
    import tiktoken

    encoding = tiktoken.Encoding("probe", pat_str=pattern, mergeable_ranks=BYTES, special_tokens={})
    matched = bytes(encoding.encode_ordinary(TEXT)).decode("utf-8")
    return np.frombuffer(matched.encode("utf-32-le"), dtype=np.uint32)


def tokenizers_matches(pattern: str) -> np.ndarray:
    """The same from Hugging Face ``tokenizers``' engine (Oniguruma): a ``Split``
    that keeps the matches and drops the rest."""
    from tokenizers import Regex, pre_tokenizers

    split = pre_tokenizers.Split(Regex(pattern), behavior="removed", invert=True)
    # A piece of the text at a time: its time grows faster than the text (the
    # whole took 2.5 times as long), and each pattern here matches one code
    # point, which no cut splits.
    matched = "".join(piece for start in range(0, len(TEXT), TOKENIZERS_CHUNK)
                      for piece, _ in split.pre_tokenize_str(TEXT[start:start + TOKENIZERS_CHUNK]))
    return np.frombuffer(matched.encode("utf-32-le"), dtype=np.uint32)


def measure(matches) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(categories, fold, white_space)`` as an engine's ``matches`` give them."""
    categories = np.zeros(unicode.N_CODE_POINTS, dtype=np.uint8)
    for index, name in enumerate(unicode.CATEGORIES):
        if name in ("Cn", "Cs"):
            continue
        found = matches(rf"\p{{{name}}}")
        assert not categories[found].any(), f"code points in two categories ({name})"
        categories[found] = index
    categories[SURROGATES.start:SURROGATES.stop] = unicode.CATEGORIES.index("Cs")
    fold = np.zeros(unicode.N_CODE_POINTS, dtype=np.uint8)
    for letter in unicode.CONTRACTION_LETTERS:
        fold[matches(f"(?i:{letter})")] = ord(letter)
    return categories, fold, matches(r"\s")


@pytest.mark.parametrize("engine", ["tiktoken", "tokenizers"])
def test_the_reference_is_what_the_engines_say_for_every_code_point(engine):
    pytest.importorskip(engine)
    categories, fold, white_space = measure(tiktoken_matches if engine == "tiktoken" else tokenizers_matches)
    shipped = unicode.reference()
    differ = np.flatnonzero(categories != shipped["categories"])
    assert not len(differ), [(hex(c), unicode.CATEGORIES[categories[c]]) for c in differ[:10]]
    assert np.array_equal(fold, shipped["fold"])
    assert np.array_equal(np.sort(white_space), shipped["white_space"])


def test_the_reference_is_unicode_16():
    categories = unicode.reference()["categories"]
    assert unicode.reference()["version"] == "16.0"
    assert unicode.CATEGORIES[categories[0x1C89]] == "Lu"     # added in 16.0
    assert unicode.CATEGORIES[categories[0x088F]] == "Cn"     # added in 17.0


def test_stand_ins_have_their_category_everywhere():
    # In the reference, in the running regex, and outside every scanner class
    # that would change their role (no ASCII, no contraction letter).
    ours, theirs = unicode.reference()["categories"], unicode.regex_categories()
    fold = unicode.reference()["fold"]
    for name, point in unicode.STAND_INS.items():
        index = unicode.CATEGORIES.index(name)
        assert ours[point] == index and theirs[point] == index, name
        assert point > 0x7F and not fold[point], name


if __name__ == "__main__":
    import tiktoken

    measured = measure(tiktoken_matches)
    unicode.save_reference(*measured, version="16.0",
                           source=f"measured from tiktoken {tiktoken.__version__} by tests/test_unicode_reference.py")
    print(f"wrote {unicode.REFERENCE}", file=sys.stderr)
