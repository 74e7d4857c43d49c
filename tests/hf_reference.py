"""Hugging Face ``tokenizers`` as the reference for files read from its format.

Its regex engine (Oniguruma) classifies code points by Unicode 16, as bpe does
on every path (``bpe.unicode``; ``tests/test_unicode_reference.py`` checks
every code point), so tests draw text from every character of the Basic
Multilingual Plane (``bmp_characters``).
"""
import functools
import json

import hypothesis.strategies as st


def bmp_characters():
    """A hypothesis strategy of single characters of the Basic Multilingual Plane."""
    return st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",))


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
