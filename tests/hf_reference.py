"""Hugging Face ``tokenizers`` as the reference for files read from its format, and
what its regex engine (Oniguruma, Unicode 16) says of each code point.

bpe's character classes are the ``regex`` module's (docs/formats.md, "What is
not exact"); the two disagree on code points assigned after Unicode 16 (and a
few whose category changed). ``agreeing_characters`` are the code points of
the Basic Multilingual Plane on which they agree, measured here by asking
``tokenizers`` itself: the alphabet tests draw text from.
"""
import functools
import json

import hypothesis.strategies as st

#: The classes patterns in real files use, and those ``bpe.onig`` translates to.
CLASSES = [r"\p{L}", r"\p{N}", r"\p{M}", r"\p{P}", r"\p{S}", r"\p{Lu}", r"\p{Ll}", r"\p{Lt}", r"\p{Lm}",
           r"\p{Lo}", r"\p{Pc}", r"\s", r"\d"]


def onig_members(cls: str, text: str) -> set[int]:
    """The indices of ``text`` whose character Oniguruma puts in ``cls``."""
    from tokenizers import Regex, pre_tokenizers

    split = pre_tokenizers.Split(Regex(cls), behavior="removed", invert=True)
    return {i for _, (start, end) in split.pre_tokenize_str(text) for i in range(start, end)}


@functools.lru_cache(maxsize=None)
def disagreeing_code_points(limit: int = 0x10000) -> frozenset[int]:
    """Code points below ``limit`` on whose class (any of ``CLASSES``) Oniguruma
    and the ``regex`` module disagree."""
    import regex

    points = [c for c in range(limit) if not 0xD800 <= c <= 0xDFFF]
    text = "".join(map(chr, points))
    differ = set()
    for cls in CLASSES:
        ours = {m.start() for m in regex.finditer(cls, text)}
        differ |= {points[i] for i in ours ^ onig_members(cls, text)}
    return frozenset(differ)


def agreeing_characters(limit: int = 0x10000):
    """A hypothesis strategy of single characters on which both engines agree."""
    bad = disagreeing_code_points(limit)
    return st.characters(max_codepoint=limit - 1, exclude_categories=("Cs",)).filter(lambda c: ord(c) not in bad)


#: Texts that have found differences between tokenizers' pipeline steps and
#: naive emulations of them: white space of every kind, newlines at ends,
#: contractions and case, numbers, CJK, combining marks, normalization's edge
#: cases, Unicode newer than Python's tables.
HARD_TEXTS = [
    "Hello world", "  leading spaces", "trailing spaces   ", "end.  \n\nNext", "a\r\nb\r\n\r\n  c\n",
    "\tindented\n\t\tcode();  // x\n", "I'm don't I'M 'S 'll we've THEY'RE", "1234567 12 ½² ٣٤٥ １２",
    "人力资源管理 日本語のテキスト 한국어 텍스트", "e\u0301 e\u0301\u0301 Å A\u030a ﬁ ＡＢＣ", "İstanbul ΑΣ ſ'ſ",
    "😀👍🏽 👨\u200d👩\u200d👧", "\u00a0nbsp\u3000ideographic\u2028line", "㋿ ꟲ \U00011935\U00011930",
    "\x00\x01control\x7f", "x" * 300, " " * 40 + "\n", "def f(x):\n    return x ** 2\n\n\n", "", " ",
    "naïve café façade", "ﷺ", "a" + "\u0301" * 20, "<|endoftext|>", "$ ^ \n$\n^", "ab\nab\n", "0xdeadBEEF",
]


@functools.lru_cache(maxsize=None)
def reference(path: str):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path))


def write_json(path, document) -> str:
    with open(path, "w", encoding="utf-8") as file:
        json.dump(document, file, ensure_ascii=False)
    return str(path)
