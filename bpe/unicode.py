"""The Unicode tables of the native pre-tokenizers, derived from the running ``regex`` module.

Deriving them (about 0.15 s, once per process, on the scanner's first use:
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
#: The letters of the contractions; ``(?i)`` matching folds other code points onto them.
CONTRACTION_LETTERS = "sdmtlver"


def all_code_points() -> str:
    """Every code point once, in order, lone surrogates included."""
    return np.arange(N_CODE_POINTS, dtype=np.uint32).tobytes().decode("utf-32-le", "surrogatepass")


@functools.lru_cache(maxsize=None)
def tables() -> tuple[np.ndarray, np.ndarray]:
    """``(classes, fold)``: class bits and case-folded contraction letter, per code point."""
    text = all_code_points()
    classes = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    for bit, pattern in CLASS_BITS.items():
        for match in regex.finditer(pattern + "+", text):
            classes[match.start():match.end()] |= bit
    fold = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    for letter in CONTRACTION_LETTERS:
        for match in regex.finditer("(?i)" + letter, text):
            fold[match.start()] = ord(letter)
    return classes, fold
