"""The Unicode tables of the native pre-tokenizers, derived from the running ``regex`` module.

Deriving them (a few hundredths of a second, once per process, on the scanner's first use:
``bpe/_scanner.pyx`` calls ``tables``) rather than shipping them means the
native scanners classify every code point exactly as the installed ``regex``
does, whatever Unicode version it carries.
"""
from __future__ import annotations

import functools

import numpy as np
import regex

N_CODE_POINTS = 0x110000

#: Class bits, as ``bpe/_scanner.pyx`` defines them, and the regex class of each.
CLASS_BITS = {
    1: r"\p{L}",
    2: r"\p{N}",
    4: r"\s",
    8: r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]",
    16: r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]",
}
#: The same classes built from disjoint general categories (and ``\s``): the bits
#: each one sets. ``tables`` matches one property at a time, a run of it at a
#: few ns per code point (a code point of a set like ``[\p{Lu}\p{M}]`` costs
#: ~20 ns), and ``\p{L}`` is the union of the five letter categories, so eight
#: passes over the code points give every class.
PROPERTY_BITS = {
    r"\p{Lu}": 1 | 8,
    r"\p{Lt}": 1 | 8,
    r"\p{Lm}": 1 | 8 | 16,
    r"\p{Lo}": 1 | 8 | 16,
    r"\p{Ll}": 1 | 16,
    r"\p{M}": 8 | 16,
    r"\p{N}": 2,
    r"\s": 4,
}
#: The letters of the contractions; ``(?i)`` matching folds other code points onto them.
CONTRACTION_LETTERS = "sdmtlver"


def all_code_points(stop: int = N_CODE_POINTS) -> str:
    """Every code point below ``stop`` once, in order, lone surrogates included."""
    return text_of(np.arange(stop, dtype=np.uint32))


def text_of(points: np.ndarray) -> str:
    """The str of these code points (uint32), lone surrogates included."""
    return points.tobytes().decode("utf-32-le", "surrogatepass")


@functools.lru_cache(maxsize=None)
def tables() -> tuple[np.ndarray, np.ndarray]:
    """``(classes, fold)``: class bits and case-folded contraction letter, per code point.

    Built when a process first scans text that is not ASCII, so built fast
    (0.04-0.07 s on a 2.45 GHz core): ``regex`` finds the unassigned and
    private-use code points in two passes, then each general category in one
    pass over the rest, and all the contraction letters in one over the
    letters and marks (the few code points found are then told apart)."""
    return _derive(N_CODE_POINTS)


@functools.lru_cache(maxsize=None)
def ascii_tables() -> tuple[np.ndarray, np.ndarray]:
    """``tables`` for the ASCII code points, zero above them (as long, so that
    any index is in bounds): all a scan of ASCII text reads, derived the same
    way in well under a millisecond."""
    return _derive(128)


def _derive(stop: int) -> tuple[np.ndarray, np.ndarray]:
    """``tables`` for the code points below ``stop``, zero above them."""
    text = all_code_points(stop)
    # Most code points are unassigned or for private use, which are in no class
    # (the classes are general categories, and white space is assigned): two
    # passes drop them, and the eight below read the rest, a sixth as many.
    assigned = np.ones(stop, dtype=bool)
    for prop in (r"\p{Cn}", r"\p{Co}"):
        for match in regex.finditer(prop + "+", text):
            assigned[match.start():match.end()] = False
    points = np.flatnonzero(assigned).astype(np.uint32)
    text = text_of(points)
    classes = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    for prop, bits in PROPERTY_BITS.items():
        for match in regex.finditer(prop + "+", text):
            classes[points[match.start():match.end()]] |= bits
    # Case-insensitive matching is slow per code point (~13 ns), so the letters
    # are looked for among letters and marks only (the code points with bit 8
    # or 16): what folds onto a letter is a letter or a mark (U+017F, long s,
    # for "s"). The test checks every code point.
    cased = np.flatnonzero(classes[:stop] & (8 | 16)).astype(np.uint32)
    fold = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    candidates = text_of(cased)
    for match in regex.finditer(f"(?i)[{CONTRACTION_LETTERS}]", candidates):
        fold[cased[match.start()]] = next(ord(letter) for letter in CONTRACTION_LETTERS
                                          if regex.fullmatch("(?i)" + letter, match.group()))
    return classes, fold
