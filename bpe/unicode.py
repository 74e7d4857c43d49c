"""The Unicode tables of the native pre-tokenizers, derived from the running ``regex`` module.

Deriving them (about 0.04 s, once per process, on the scanner's first use:
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
#: The same classes as unions of the properties that ``tables`` matches one at a
#: time: a run of one property is matched at a few ns per code point, a code
#: point of a set like ``[\p{Lu}\p{M}]`` at ~20 ns.
CLASS_PROPERTIES = {
    1: (r"\p{L}",),
    2: (r"\p{N}",),
    4: (r"\s",),
    8: (r"\p{Lu}", r"\p{Lt}", r"\p{Lm}", r"\p{Lo}", r"\p{M}"),
    16: (r"\p{Ll}", r"\p{Lm}", r"\p{Lo}", r"\p{M}"),
}
#: The letters of the contractions; ``(?i)`` matching folds other code points onto them.
CONTRACTION_LETTERS = "sdmtlver"


def all_code_points(stop: int = N_CODE_POINTS) -> str:
    """Every code point below ``stop`` once, in order, lone surrogates included."""
    return np.arange(stop, dtype=np.uint32).tobytes().decode("utf-32-le", "surrogatepass")


@functools.lru_cache(maxsize=None)
def tables() -> tuple[np.ndarray, np.ndarray]:
    """``(classes, fold)``: class bits and case-folded contraction letter, per code point.

    Built when a process first scans text that is not ASCII, so built fast
    (0.04 s): one pass of ``regex`` over all code points per property, and one
    for all the contraction letters at once over the letters and marks (the few
    code points found are then told apart)."""
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
    members = {}
    for properties in CLASS_PROPERTIES.values():
        for prop in properties:
            if prop not in members:
                members[prop] = np.zeros(stop, dtype=bool)
                for match in regex.finditer(prop + "+", text):
                    members[prop][match.start():match.end()] = True
    classes = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    for bit, properties in CLASS_PROPERTIES.items():
        classes[:stop][np.logical_or.reduce([members[prop] for prop in properties])] |= bit
    # Case-insensitive matching is slow per code point (~13 ns), so the letters
    # are looked for among letters and marks only: what folds onto a letter is a
    # letter or a mark (U+017F, long s, for "s"). The test checks every code point.
    cased = np.flatnonzero(members[r"\p{L}"] | members[r"\p{M}"]).astype(np.uint32)
    fold = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    candidates = cased.tobytes().decode("utf-32-le", "surrogatepass")
    for match in regex.finditer(f"(?i)[{CONTRACTION_LETTERS}]", candidates):
        fold[cased[match.start()]] = next(ord(letter) for letter in CONTRACTION_LETTERS
                                          if regex.fullmatch("(?i)" + letter, match.group()))
    return classes, fold
