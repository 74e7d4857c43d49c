"""``bpe/data/huggingface_unicode.json``: what Hugging Face ``tokenizers``' Unicode
tables say unlike Python's, measured from ``tokenizers`` itself, code point by
code point. The test measures again and compares; ``python
tests/test_huggingface_unicode.py`` writes the file afresh (for a new
``tokenizers``, or a Python with another ``unicodedata``)."""
import json
import os
import sys
import unicodedata

import pytest

DATA = os.path.join(os.path.dirname(__file__), os.pardir, "bpe", "data", "huggingface_unicode.json")
POINTS = [c for c in range(1, 0x110000) if not 0xD800 <= c <= 0xDFFF]
SEPARATOR = "\x00"
FORMS = ("NFC", "NFD", "NFKC", "NFKD")


def inert_in_rust(normalizers) -> list[int]:
    """Code points tokenizers' normalization (Unicode 9 tables) treats as plain
    starters where Python's does not: a decomposition, a combining class or a
    composition it lacks."""
    rust = {form: getattr(normalizers, form)() for form in FORMS}
    differ = set()
    for form, normalizer in rust.items():
        out = normalizer.normalize_str(SEPARATOR.join(map(chr, POINTS))).split(SEPARATOR)
        differ |= {c for c, o in zip(POINTS, out)
                   if o != unicodedata.normalize(form, chr(c)) and unicodedata.category(chr(c)) != "Cn"}
    marks = [c for c in POINTS if unicodedata.combining(chr(c)) > 0]
    for other in ("\u0334", "\u0301", "\u05b0", "\u0316", "\u1dce", "\u0345"):
        for texts in ([f"a{chr(c)}{other}" for c in marks], [f"a{other}{chr(c)}" for c in marks]):
            for form in ("NFD", "NFC"):
                out = rust[form].normalize_str(SEPARATOR.join(texts)).split(SEPARATOR)
                differ |= {c for c, text, o in zip(marks, texts, out) if o != unicodedata.normalize(form, text)}
    for c in POINTS:
        decomposition = unicodedata.decomposition(chr(c))
        if decomposition and not decomposition.startswith("<"):
            parts = [int(part, 16) for part in decomposition.split()]
            text = "".join(map(chr, parts))
            for form in ("NFC", "NFKC"):
                if rust[form].normalize_str(text) != unicodedata.normalize(form, text):
                    differ |= {c, *parts}
    return sorted(differ)


def measure() -> dict:
    from tokenizers import normalizers, pre_tokenizers

    lowered = normalizers.Lowercase().normalize_str(SEPARATOR.join(map(chr, POINTS))).split(SEPARATOR)
    numeric = {ord(piece) for piece, _ in pre_tokenizers.Digits(individual_digits=True).pre_tokenize_str(
        "".join(chr(c) + SEPARATOR for c in POINTS)) if len(piece) == 1 and piece != SEPARATOR}
    python_numeric = {c for c in POINTS if unicodedata.category(chr(c)) in ("Nd", "Nl", "No")}
    punctuation = {ord(piece) for piece, _ in pre_tokenizers.Punctuation().pre_tokenize_str(
        "".join(chr(c) + SEPARATOR for c in POINTS)) if len(piece) == 1 and piece != SEPARATOR}
    python_punctuation = {c for c in POINTS if unicodedata.category(chr(c)).startswith("P")} | \
        {c for c in range(0x21, 0x7F) if not chr(c).isalnum()}
    kept = "".join(piece for piece, _ in pre_tokenizers.WhitespaceSplit().pre_tokenize_str(
        "a".join(map(chr, POINTS))))
    white = sorted(set(POINTS) - set(map(ord, kept)) - {ord("a")})
    return {
        "normalization_inert_in_rust": inert_in_rust(normalizers),
        "lowercase_exceptions": {str(c): o for c, o in zip(POINTS, lowered) if o != chr(c).lower()},
        "rust_is_whitespace": white,
        "rust_is_numeric_extra_vs_python_N": sorted(numeric - python_numeric),
        "punctuation_extra_vs_python_P_or_ascii_punct": sorted(punctuation - python_punctuation),
        "punctuation_missing_vs_python_P_or_ascii_punct": sorted(python_punctuation - punctuation),
    }


@pytest.mark.skipif(unicodedata.unidata_version != "14.0.0",
                    reason="the shipped tables were measured against Python 3.11's unicodedata (14.0.0)")
def test_the_shipped_tables_are_what_tokenizers_says():
    pytest.importorskip("tokenizers")
    shipped = json.load(open(DATA, encoding="utf-8"))
    for key, value in measure().items():
        assert shipped[key] == value, key


def test_the_white_space_of_the_pipeline_is_rust_s():
    from bpe.huggingface.pipeline import WHITE_SPACE, rust_unicode

    assert sorted(map(ord, WHITE_SPACE)) == rust_unicode()["rust_is_whitespace"]


if __name__ == "__main__":
    document = json.load(open(DATA, encoding="utf-8"))
    document.update(measure())
    document["_source"] = (f"Measured from Hugging Face tokenizers against Python's unicodedata "
                           f"{unicodedata.unidata_version} by tests/test_huggingface_unicode.py.")
    with open(DATA, "w", encoding="utf-8") as file:
        json.dump(document, file, ensure_ascii=False, indent=0)
    print(f"wrote {DATA}", file=sys.stderr)
