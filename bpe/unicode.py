"""The Unicode of bpe's pre-tokenizers: the version tiktoken's and Hugging Face
``tokenizers``' pattern engines carry (16.0), the same on every path.

Where a pattern cuts text depends on which code points are letters, numbers or
white space, and each Unicode version assigns new code points. The ids bpe must
reproduce are tiktoken's (Rust ``regex``) and ``tokenizers``' (Oniguruma), which
classify by Unicode 16.0; the ``regex`` module follows the newest version (from
2025 on, 17.0 and later: 17,480 more code points are letters or numbers). An
installed ``regex`` must not change token ids. So bpe carries the general
category of every code point as those engines give it
(``data/unicode_reference.npz``, measured from them by
``tests/test_unicode_reference.py``, which checks every code point and writes
the file afresh), and:

* the native scanners read their classes from it (``tables``);
* text matched with ``regex`` (custom patterns, ``bpe.pure``, Hugging Face
  ``Split`` patterns) is first passed through ``as_reference``: each code point
  the running ``regex`` puts in another category than the reference does is
  replaced by a stand-in of the reference's category. The text keeps its
  length, so match positions are those in the original text, and the matches
  are the reference engines' for every pattern written with general categories
  and ``\\s`` (all built-in and known model patterns). Scripts (``\\p{Han}``)
  of the replaced code points are the stand-ins'.
"""
from __future__ import annotations

import functools
import os
import string

import numpy as np

N_CODE_POINTS = 0x110000

#: General categories, by the index the reference table stores. Cn (unassigned)
#: is 0; surrogates are Cs in every version.
CATEGORIES = ("Cn Lu Ll Lt Lm Lo Mn Mc Me Nd Nl No Pc Pd Ps Pe Pi Pf Po "
              "Sm Sc Sk So Zs Zl Zp Cc Cf Co Cs").split()

#: Class bits, as ``bpe/_scanner.pyx`` defines them, and the regex class of each.
CLASS_BITS = {
    1: r"\p{L}",
    2: r"\p{N}",
    4: r"\s",
    8: r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]",
    16: r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]",
    32: r"\p{M}",
    64: r"[\p{P}\p{S}]",
}
#: The class bits of each general category (``\s`` comes from the stored white space).
CATEGORY_BITS = {"Lu": 1 | 8, "Lt": 1 | 8, "Lm": 1 | 8 | 16, "Lo": 1 | 8 | 16, "Ll": 1 | 16,
                 "Mn": 8 | 16 | 32, "Mc": 8 | 16 | 32, "Me": 8 | 16 | 32, "Nd": 2, "Nl": 2, "No": 2,
                 **{name: 64 for name in ("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So")}}
#: The letters of the contractions; ``(?i)`` matching folds other code points onto them.
CONTRACTION_LETTERS = "sdmtlver"

#: For each category, a code point that has had it since Unicode 3.0 or
#: earlier, is not ASCII and folds onto no contraction letter: what
#: ``as_reference`` puts where the running ``regex`` disagrees. Cn's is a
#: noncharacter, unassigned in every version by definition.
STAND_INS = {
    "Cn": 0xFDD0, "Lu": 0x0186, "Ll": 0x0254, "Lt": 0x01C5, "Lm": 0x02B0, "Lo": 0x05D0,
    "Mn": 0x0300, "Mc": 0x0903, "Me": 0x20DD, "Nd": 0x0660, "Nl": 0x2160, "No": 0x00B2,
    "Pc": 0x203F, "Pd": 0x2010, "Ps": 0x2045, "Pe": 0x2046, "Pi": 0x00AB, "Pf": 0x00BB,
    "Po": 0x00A1, "Sm": 0x00D7, "Sc": 0x00A2, "Sk": 0x00B4, "So": 0x00A9, "Zs": 0x2002,
    "Zl": 0x2028, "Zp": 0x2029, "Cc": 0x0080, "Cf": 0x00AD, "Co": 0xE000,
}

#: The reference tables, as runs (``save_reference`` writes them).
REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "unicode_reference.npz")


def all_code_points(stop: int = N_CODE_POINTS) -> str:
    """Every code point below ``stop`` once, in order, lone surrogates included."""
    return text_of(np.arange(stop, dtype=np.uint32))


def text_of(points: np.ndarray) -> str:
    """The str of these code points (uint32), lone surrogates included."""
    return points.tobytes().decode("utf-32-le", "surrogatepass")


# --------------------------------------------------------------------------- the reference

@functools.lru_cache(maxsize=None)
def reference() -> dict:
    """The reference tables: ``categories`` (an index into ``CATEGORIES`` per
    code point), ``fold`` (the contraction letter each code point matches
    case-insensitively, else 0), ``white_space`` (the code points of ``\\s``)
    and ``version``. Read once, in about 3 ms."""
    with np.load(REFERENCE) as stored:
        lengths = np.diff(stored["category_starts"].astype(np.int64), append=N_CODE_POINTS)
        categories = np.repeat(stored["category_values"].astype(np.uint8), lengths)
        fold = np.zeros(N_CODE_POINTS, dtype=np.uint8)
        fold[stored["fold_points"]] = stored["fold_letters"]
        found = {"categories": categories, "fold": fold, "white_space": stored["white_space"].astype(np.uint32),
                 "version": str(stored["version"])}
    if categories.shape != (N_CODE_POINTS,):
        raise ValueError(f"{REFERENCE}: the category runs do not cover every code point")
    return found


def save_reference(categories: np.ndarray, fold: np.ndarray, white_space, version: str,
                   source: str, path: str = REFERENCE) -> None:
    """Store measured reference tables at ``path`` as runs (about 20 KB)."""
    starts = np.flatnonzero(np.diff(categories, prepend=np.int16(-1))).astype(np.uint32)
    points = np.flatnonzero(fold).astype(np.uint32)
    np.savez_compressed(path, category_starts=starts, category_values=categories[starts].astype(np.uint8),
                        fold_points=points, fold_letters=fold[points].astype(np.uint8),
                        white_space=np.asarray(sorted(white_space), dtype=np.uint32),
                        version=np.array(version), source=np.array(source))


# --------------------------------------------------------------------------- the scanners' tables

@functools.lru_cache(maxsize=None)
def tables() -> tuple[np.ndarray, np.ndarray]:
    """``(classes, fold)``: the scanners' class bits and case-folded contraction
    letter, per code point, from the reference."""
    found = reference()
    bits = np.zeros(len(CATEGORIES), dtype=np.uint8)
    for name, value in CATEGORY_BITS.items():
        bits[CATEGORIES.index(name)] = value
    classes = bits[found["categories"]]
    classes[found["white_space"]] |= 4
    return classes, found["fold"]


@functools.lru_cache(maxsize=None)
def ascii_tables() -> tuple[np.ndarray, np.ndarray]:
    """``tables`` for the ASCII code points, zero above them (as long, so that
    any index is in bounds): all a scan of ASCII text reads.

    Written out rather than read: no Unicode version has changed an ASCII code
    point's category or case, and a process that encodes only ASCII then never
    opens the reference file (a first encode is timed against tiktoken's). The
    tests check them against the full tables.
    """
    classes = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    for characters, bits in ((string.ascii_uppercase, CATEGORY_BITS["Lu"]),
                             (string.ascii_lowercase, CATEGORY_BITS["Ll"]),
                             (string.digits, CATEGORY_BITS["Nd"]), ("\t\n\v\f\r ", 4),
                             (string.punctuation, CATEGORY_BITS["Po"])):
        classes[[ord(c) for c in characters]] = bits
    fold = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    for letter in CONTRACTION_LETTERS:
        fold[ord(letter)] = fold[ord(letter.upper())] = ord(letter)
    return classes, fold


# --------------------------------------------------------------------------- text for ``regex``

def regex_categories() -> np.ndarray:
    """The running ``regex``'s general category of every code point (indices
    into ``CATEGORIES``): one pass over all code points, about 0.1 s."""
    import regex

    finder = regex.compile("|".join(rf"(\p{{{name}}}+)" for name in CATEGORIES[1:]))
    categories = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    for match in finder.finditer(all_code_points()):
        categories[match.start():match.end()] = match.lastindex
    return categories


@functools.lru_cache(maxsize=None)
def _differences():
    """``(finder, mapping)``: a compiled class of the code points the running
    ``regex`` categorises unlike the reference (None if there are none), and
    each code point's replacement: its reference category's stand-in for
    those, itself for the rest."""
    import regex

    ours = reference()["categories"]
    differ = np.flatnonzero(regex_categories() != ours)
    if not len(differ):
        return None, None
    stand_ins = np.array([STAND_INS.get(name, 0) for name in CATEGORIES], dtype=np.uint32)
    mapping = np.arange(N_CODE_POINTS, dtype=np.uint32)
    mapping[differ] = stand_ins[ours[differ]]
    breaks = np.flatnonzero(np.diff(differ) != 1)
    starts, stops = differ[np.r_[0, breaks + 1]], differ[np.r_[breaks, len(differ) - 1]]
    ranges = "".join(f"\\U{a:08X}-\\U{b:08X}" for a, b in zip(starts, stops))
    return regex.compile(f"[{ranges}]"), mapping


def as_reference(text: str) -> str:
    """``text`` as the reference engines see it, for matching with ``regex``:
    the code points the running ``regex`` categorises otherwise replaced by
    stand-ins of the reference category; the same length, so positions carry
    over. ASCII text and text without such code points come back as they are.

    >>> as_reference("naïve") == "naïve"
    True
    """
    if text.isascii():
        return text
    finder, mapping = _differences()
    if finder is None or finder.search(text) is None:
        return text
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return text_of(mapping[points])
