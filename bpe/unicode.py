"""The Unicode tables of the native pre-tokenizers, derived from the running ``regex`` module.

The tables say how the installed ``regex`` classifies every code point, so the
native scanners split exactly as it does, whatever Unicode version it carries.
Deriving them takes a few hundredths of a second, and every fresh process that
scans text that is not ASCII needed them (``bpe/_scanner.pyx`` calls ``tables``).
So the build derives them once (``setup.py`` calls ``save_tables``) and
ships them beside the code, marked with the ``regex`` version they came from;
a process whose ``regex`` is another version derives its own.
"""
from __future__ import annotations

import functools
import os
import string
from typing import Optional

import numpy as np

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


#: Where the build leaves the tables (``save_tables``).
SHIPPED_TABLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "unicode_tables.npz")


@functools.lru_cache(maxsize=None)
def tables() -> tuple[np.ndarray, np.ndarray]:
    """``(classes, fold)``: class bits and case-folded contraction letter, per code point:
    the shipped ones if they came from this ``regex``, else derived now."""
    shipped = shipped_tables()
    return shipped if shipped is not None else derive_tables()


def derive_tables() -> tuple[np.ndarray, np.ndarray]:
    """``tables``, derived from the running ``regex``, fast (0.04-0.07 s on a
    2.45 GHz core): ``regex`` finds the unassigned and private-use code points
    in two passes, then each general category in one pass over the rest, and
    all the contraction letters in one over the letters and marks (the few
    code points found are then told apart)."""
    return _derive(N_CODE_POINTS)


def save_tables(path: str = SHIPPED_TABLES) -> None:
    """Derive the tables and store them at ``path`` with the ``regex`` version
    they came from, as runs (18 KB, read in about 3 ms)."""
    import regex

    arrays = {"regex_version": np.array(regex.__version__)}
    for name, table in zip(("classes", "fold"), derive_tables()):
        starts = np.flatnonzero(np.diff(table, prepend=np.int16(-1))).astype(np.uint32)
        arrays[f"{name}_starts"], arrays[f"{name}_values"] = starts, table[starts]
    np.savez(path, **arrays)


def shipped_tables(path: Optional[str] = None) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """The tables ``save_tables`` stored at ``path`` (default ``SHIPPED_TABLES``), if
    they came from the running ``regex``'s version and are whole; else None (the
    caller derives them)."""
    import zipfile     # on use: a process that encodes only ASCII never reads the stored tables

    import regex

    path = SHIPPED_TABLES if path is None else path
    try:
        with np.load(path) as stored:
            if str(stored["regex_version"]) != regex.__version__:
                return None
            found = tuple(_expand(stored[f"{name}_starts"], stored[f"{name}_values"])
                          for name in ("classes", "fold"))
    except (OSError, EOFError, KeyError, ValueError, zipfile.BadZipFile):
        return None
    if any(table is None for table in found):
        return None
    # A check that costs well under a millisecond: the ASCII entries, derived again.
    if not all(np.array_equal(table[:128], derived[:128]) for table, derived in zip(found, ascii_tables())):
        return None
    return found


def _expand(starts: np.ndarray, values: np.ndarray) -> Optional[np.ndarray]:
    """The table of runs starting at ``starts`` (from 0, increasing) with these
    values, one entry per code point; None if the runs do not make one."""
    if (starts.ndim != 1 or starts.shape != values.shape or not len(starts) or starts[0] != 0
            or starts[-1] >= N_CODE_POINTS or (np.diff(starts.astype(np.int64)) <= 0).any()):
        return None
    lengths = np.diff(starts.astype(np.int64), append=N_CODE_POINTS)
    return np.repeat(values.astype(np.uint8), lengths)


@functools.lru_cache(maxsize=None)
def ascii_tables() -> tuple[np.ndarray, np.ndarray]:
    """``tables`` for the ASCII code points, zero above them (as long, so that
    any index is in bounds): all a scan of ASCII text reads.

    Written out rather than derived: no Unicode version has changed an ASCII
    code point's category or case, and deriving them imported ``regex`` and
    compiled ten patterns (11 ms of a first encode, which is timed against
    tiktoken's). The tests check them against what the running ``regex``
    gives (``test_the_ascii_tables_are_the_full_tables_ascii_part``), and
    stored tables are used only if their ASCII part agrees (``shipped_tables``).
    """
    classes = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    for characters, bits in ((string.ascii_uppercase, PROPERTY_BITS[r"\p{Lu}"]),
                             (string.ascii_lowercase, PROPERTY_BITS[r"\p{Ll}"]),
                             (string.digits, PROPERTY_BITS[r"\p{N}"]), ("\t\n\v\f\r ", PROPERTY_BITS[r"\s"])):
        classes[[ord(c) for c in characters]] = bits
    fold = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    for letter in CONTRACTION_LETTERS:
        fold[ord(letter)] = fold[ord(letter.upper())] = ord(letter)
    return classes, fold


def _derive(stop: int) -> tuple[np.ndarray, np.ndarray]:
    """``tables`` for the code points below ``stop``, zero above them."""
    import regex

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
