"""Native pre-tokenizers for the built-in patterns, over UTF-8 bytes, and a pre-token interner.

Why
---
With the ``regex`` module pre-tokenization runs at ~8 MB/s per core and makes a
Python str per pre-token; it is most of training's time. These scanners walk the
UTF-8 bytes once, look each code point up in a class table and decide where
each pre-token ends exactly as ``regex`` would for that pattern — including the
backtracking the patterns imply. In ASCII text they go faster still: every
pre-token start of a 64-byte window is found at once from SIMD class masks
(see "64 bytes at once" below). Pre-tokens go straight into a C hash table
(``Interner``) keyed by their bytes, with no Python object per pre-token.

The class table comes from ``bpe.unicode`` on this module's first scan: the
Unicode of tiktoken's and ``tokenizers``' engines (16.0), which is also what
``regex`` sees through ``bpe.unicode.as_reference``;
``tests/test_native_pretok.py`` checks every code point in context.

Input must be valid UTF-8 (the callers decode it first, which validates it).

Why one room of 1,100 lines: each pattern's rule is spelt twice here, byte by
byte (``next_cl100k`` and the others) and 64 bytes at once (``cl100k_starts``
and the others), and the two spellings must give the same pre-tokens; kept
side by side, a change to one is seen beside the other. What stands apart
does: the SIMD classifier (``bpe/csrc/classify.h``), the class tables
(``bpe.unicode``), the special-token search (``bpe/_specials.pxd``).

The patterns, branch by branch (``i`` the start, ``c`` the code point there)
-------------------------------------------------------------------------------
gpt2    ``'(?:[sdmt]|ll|ve|re)| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``
cl100k  ``'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s``
llama3  ``(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+``
        (cl100k as tiktoken first spelt it, and Llama 3 ships it): the same
        pre-tokens but for a white-space run that reaches the text's end, which
        ``\\s*[\\r\\n]+`` splits after its last CR or LF, as o200k's does.
qwen2   llama3 with ``\\p{N}`` for ``\\p{N}{1,3}``: each digit a pre-token.
deepseek_v3  ``\\p{N}{1,3}`` first, then runs of CJK characters (``K``, a
        range of code points), then on each stretch between and each run of K
        ``[!-/:-@[-`{-~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*``
        ``|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+``, its unmatched runs kept: three
        Splits in turn, each stretch a text of its own.
o200k   ``P?U*W+C?|P?U+W*C?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+``
        with P = ``[^\\r\\n\\p{L}\\p{N}]``, U = ``[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]``,
        W = ``[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]``, C the case-insensitive contractions.

Whitespace runs: ``\\s+(?!\\S)`` before a non-space takes the run but its last
character (which then starts the next pre-token), and fails on a run of one;
``\\s*[\\r\\n]`` ends after the run's last CR or LF; ``\\s++$`` takes a run that
reaches the end. In o200k, ``P?U*W+`` backtracks: U* gives characters back until
W+ can start, and the optional P is dropped if nothing matches with it.
"""
from libc.stdint cimport INT64_MAX, int64_t, intptr_t, uint8_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memcpy, memset

from bpe._bytestable cimport (OVERFLOW, BytesTable, bytestable_add, bytestable_free, bytestable_init,
                              hash_bytes)
from bpe._checks cimport check_offsets
from bpe._shortcache cimport (SHORT_KEY_BYTES, ShortCache, ShortEntry, ShortKey, short_key,
                              shortcache_free, shortcache_holds, shortcache_init, shortcache_insert,
                              shortcache_slot)
from bpe._memory cimport mem_free, prefetch
from bpe._specials cimport Needles, find_spans, needles_free, needles_point_at
from bpe._types cimport count_t, offset_t
from bpe._utf8 cimport all_ascii, first_invalid_utf8 as c_first_invalid_utf8, wide_supported

import os
import threading

import numpy as np


cdef extern from "csrc/classify.h":
    int CLASSIFY_SCALAR, CLASSIFY_SSE2, CLASSIFY_AVX2, CLASSIFY_AVX512, CLASSIFY_NEON
    int classify_supported(int path) noexcept nogil
    classify_fn classify_function(int path) noexcept nogil
    classify_fn classify_gpt2_function(int path) noexcept nogil
    spread_fn spread_function(int path) noexcept nogil
    int classify_best() noexcept nogil
    int leading_zeros(uint64_t x) noexcept nogil

cdef enum:
    FRONT_CACHE_SLOTS = 1 << 17     # an interner's front cache: 4 MiB, 2^16 entries
    MIN_ASCII_WINDOW = 16           # the ASCII a metaspace window needs before a non-ASCII byte

cdef enum:
    LETTER = 1       # \p{L}
    NUMBER = 2       # \p{N}
    SPACE = 4        # \s
    UPPERISH = 8     # [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
    LOWERISH = 16    # [\p{Ll}\p{Lm}\p{Lo}\p{M}]
    MARK = 32        # \p{M}
    SYMBOL = 64      # [\p{P}\p{S}]

PATTERN_IDS = {"gpt2": PATTERN_GPT2, "cl100k": PATTERN_CL100K, "o200k": PATTERN_O200K,
               "llama3": PATTERN_LLAMA3, "qwen2": PATTERN_QWEN2, "deepseek_v3": PATTERN_DEEPSEEK_V3,
               "metaspace": PATTERN_METASPACE}

# The tables, owned by numpy arrays kept alive in _tables; built on first use,
# for the ASCII code points only until text that is not ASCII is scanned
# (see ensure_tables).
cdef const uint8_t* CLASS = NULL        # class bits by code point, 0x110000 entries
cdef const uint8_t* FOLD = NULL         # case-folded ASCII letter by code point, or 0
cdef bint _every_code_point = False     # whether CLASS and FOLD cover every code point
_tables = []
_tables_lock = threading.Lock()


def _renew_tables_lock():
    # A child forked while another thread built the tables would find this
    # lock held for ever (only the forking thread is copied): made afresh.
    global _tables_lock
    _tables_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_tables_lock)

# The block classifier scans use (bpe/csrc/classify.h), or NULL for the byte-by-byte
# scanner alone. Chosen when the tables are built: BPE_SIMD names a path, else
# the fastest the CPU runs; ``select_simd`` changes it.
cdef classify_fn CLASSIFY = NULL
cdef classify_fn CLASSIFY_GPT2 = NULL    # the same path's, for gpt2 (it reads fewer classes)
cdef spread_fn SPREAD = NULL
SIMD_PATHS = {"none": -1, "scalar": CLASSIFY_SCALAR, "sse2": CLASSIFY_SSE2, "avx2": CLASSIFY_AVX2,
              "avx512": CLASSIFY_AVX512, "neon": CLASSIFY_NEON}
_simd_path = None
# Whether a str's UTF-8 is written 16 code units at a time with AVX-512
# (``bpe/_utf8.pxd``): where the path is AVX-512's. Set before the tables
# are built (the first call transcodes before it scans), from BPE_SIMD and
# the CPU, then with the path.
cdef bint WIDE_UTF8 = False


cdef bint wide_utf8() noexcept nogil:
    return WIDE_UTF8


cdef void _set_wide_utf8(int path):
    global WIDE_UTF8
    WIDE_UTF8 = path == CLASSIFY_AVX512 and wide_supported()


def simd_paths():
    """The block-classifier paths this CPU can run: "none" (byte by byte),
    "scalar" (the masks built by a portable loop) and the SIMD ones."""
    return [name for name, path in SIMD_PATHS.items() if path < 0 or classify_supported(path)]


def select_simd(name):
    """Make scans use the block classifier ``name`` (one of ``simd_paths()``);
    returns the path used before. For tests and benchmarks: scans already
    running keep theirs."""
    global CLASSIFY, CLASSIFY_GPT2, SPREAD, _simd_path
    ensure_tables()
    if name not in simd_paths():
        raise ValueError(f"SIMD path {name!r} is not one of {simd_paths()} on this CPU")
    previous = _simd_path
    if name != "none" and not ascii_classes_agree(CLASS):
        raise ValueError("the Unicode tables disagree with the ASCII block classes; only 'none' can run")
    CLASSIFY = NULL if name == "none" else classify_function(SIMD_PATHS[name])
    CLASSIFY_GPT2 = NULL if name == "none" else classify_gpt2_function(SIMD_PATHS[name])
    SPREAD = spread_function(SIMD_PATHS[name])
    _set_wide_utf8(SIMD_PATHS[name])
    _simd_path = name
    return previous


def simd_path():
    """The block-classifier path scans use now."""
    ensure_tables()
    return _simd_path


def writes_utf8_wide():
    """Whether a str's UTF-8 is written 16 code units at a time with AVX-512
    now (``bpe/_utf8.pxd``), for tests to know."""
    return bool(WIDE_UTF8)


cdef bint ascii_classes_agree(const uint8_t* classes) noexcept nogil:
    """Whether the class table says of every ASCII byte what the block masks say
    (A-Z upper-case letters, a-z lower-case, 0-9 digits, nothing else a letter or
    number, whitespace as in csrc/classify.h): the fast paths read the masks where
    the scanners read the table."""
    cdef int b
    cdef bint upper, lower, digit, space
    for b in range(128):
        upper = 65 <= b <= 90
        lower = 97 <= b <= 122
        digit = 48 <= b <= 57
        space = 9 <= b <= 13 or b == 32
        if (((classes[b] & LETTER) != 0) != (upper or lower) or ((classes[b] & NUMBER) != 0) != digit
                or ((classes[b] & UPPERISH) != 0) != upper or ((classes[b] & LOWERISH) != 0) != lower
                or ((classes[b] & SPACE) != 0) != space):
            return False
    return True


cdef int ensure_tables(bint ascii_text=False) except -1:
    """Build the class and fold tables (``bpe.unicode``) once per process: for
    every code point, or with ``ascii_text`` (the text to scan is ASCII) for
    the ASCII ones at least.

    The full tables are read from a file (a few milliseconds of a fresh
    process's first encode) when a scan of ASCII text reads 128 entries. So
    until text that is not ASCII comes, the tables cover ASCII only (written
    out, well under a millisecond); then the full ones replace them. Their ASCII entries are the same, so a scan of ASCII
    text running meanwhile sees no change."""
    global CLASS, FOLD, _every_code_point
    cdef const uint8_t[::1] class_view
    cdef const uint8_t[::1] fold_view
    if _every_code_point or (ascii_text and CLASS != NULL):
        return 0
    with _tables_lock:
        if _every_code_point or (ascii_text and CLASS != NULL):
            return 0
        from bpe.unicode import ascii_tables, tables

        classes, fold = ascii_tables() if ascii_text else tables()
        classes = np.ascontiguousarray(classes, dtype=np.uint8)
        fold = np.ascontiguousarray(fold, dtype=np.uint8)
        if classes.shape != (0x110000,) or fold.shape != (0x110000,):
            raise ValueError("tables must have one entry per code point (0x110000)")
        _tables.append((classes, fold))       # kept alive: a running scan may read the last ones
        class_view = classes
        fold_view = fold
        FOLD = &fold_view[0]
        # CLASS is published last: a thread that sees it set reads the scanner
        # choice too (and FOLD).
        _choose_simd(&class_view[0])
        CLASS = &class_view[0]
        _every_code_point = not ascii_text
    return 0


cdef int _requested_path():
    """The path BPE_SIMD names, or the best this CPU runs."""
    name = os.environ.get("BPE_SIMD", "")
    path = SIMD_PATHS.get(name, classify_best())
    if name and (name not in SIMD_PATHS or (path >= 0 and not classify_supported(path))):
        path = classify_best()      # an unknown or unsupported request: the best there is
    return path


_set_wide_utf8(_requested_path())


cdef void _choose_simd(const uint8_t* classes):
    global CLASSIFY, CLASSIFY_GPT2, SPREAD, _simd_path
    path = _requested_path()
    if path >= 0 and not ascii_classes_agree(classes):
        path = -1
    CLASSIFY = NULL if path < 0 else classify_function(path)
    CLASSIFY_GPT2 = NULL if path < 0 else classify_gpt2_function(path)
    SPREAD = spread_function(path)
    _set_wide_utf8(path)
    _simd_path = next(key for key, value in SIMD_PATHS.items() if value == path)


# --------------------------------------------------------------------------- UTF-8 helpers

cdef inline uint32_t code_point(const uint8_t* s, Py_ssize_t i, Py_ssize_t* next_i) noexcept nogil:
    """The code point starting at byte ``i`` (valid UTF-8 assumed); sets the next start."""
    cdef int width
    cdef uint32_t cp
    if s[i] < 0x80:
        next_i[0] = i + 1
        return s[i]
    cp = lead_point(s, i, &width)
    next_i[0] = i + width
    return cp


cdef inline uint8_t class_at(const uint8_t* s, Py_ssize_t i, Py_ssize_t* next_i) noexcept nogil:
    return CLASS[code_point(s, i, next_i)]


cdef inline Py_ssize_t previous_start(const uint8_t* s, Py_ssize_t i) noexcept nogil:
    """The start of the code point that ends at byte ``i``."""
    i -= 1
    while (s[i] & 0xC0) == 0x80:
        i -= 1
    return i


cdef inline Py_ssize_t run_with(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, uint8_t mask) noexcept nogil:
    """The end of the run of code points from ``i`` whose class has a bit of ``mask``."""
    cdef Py_ssize_t j
    while i < n:
        if s[i] < 0x80:
            if not (CLASS[s[i]] & mask):
                break
            i += 1
        else:
            if not (class_at(s, i, &j) & mask):
                break
            i = j
    return i


cdef inline Py_ssize_t run_other(const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """The end of the run of [^\\s\\p{L}\\p{N}] from ``i``."""
    cdef Py_ssize_t j
    while i < n:
        if s[i] < 0x80:
            if CLASS[s[i]] & (LETTER | NUMBER | SPACE):
                break
            i += 1
        else:
            if class_at(s, i, &j) & (LETTER | NUMBER | SPACE):
                break
            i = j
    return i


cdef inline Py_ssize_t run_numbers(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, int at_most) noexcept nogil:
    """The end of at most ``at_most`` \\p{N} code points from ``i``."""
    cdef Py_ssize_t j
    cdef int taken = 0
    while i < n and taken < at_most:
        if not (class_at(s, i, &j) & NUMBER):
            break
        i = j
        taken += 1
    return i


cdef inline Py_ssize_t run_bytes(const uint8_t* s, Py_ssize_t i, Py_ssize_t n,
                                 bint slash) noexcept nogil:
    """The end of the run of CR and LF (and '/' if ``slash``) bytes from ``i``."""
    while i < n and (s[i] == 13 or s[i] == 10 or (slash and s[i] == 47)):
        i += 1
    return i


cdef inline Py_ssize_t punctuation(const uint8_t* s, Py_ssize_t i, Py_ssize_t j, Py_ssize_t n,
                                   uint8_t c, bint slash) noexcept nogil:
    """`` ?[^\s\p{L}\p{N}]+`` then CR/LF (cl100k), or CR/LF/'/' (o200k, ``slash``):
    the end, or -1. ``c`` is the class of the code point at ``i``, ``j`` the next start."""
    cdef Py_ssize_t k
    if s[i] == 32 and j < n and not (class_at(s, j, &k) & (LETTER | NUMBER | SPACE)):
        return run_bytes(s, run_other(s, k, n), n, slash)
    if not (c & SPACE):
        return run_bytes(s, run_other(s, j, n), n, slash)
    return -1


cdef inline uint8_t folded(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, bint ignore_case,
                           Py_ssize_t* next_i) noexcept nogil:
    """The ASCII letter at ``i`` (case-folded if ``ignore_case``), or 0."""
    cdef uint32_t cp
    if i >= n:
        return 0
    cp = code_point(s, i, next_i)
    if ignore_case:
        return FOLD[cp]
    return <uint8_t>cp if 97 <= cp <= 122 else 0


cdef inline Py_ssize_t contraction(const uint8_t* s, Py_ssize_t i, Py_ssize_t n,
                                   bint ignore_case) noexcept nogil:
    """The end of '(?:s|d|m|t|ll|ve|re) at ``i`` (s[i] == "'"), or -1."""
    cdef Py_ssize_t j, k
    cdef uint8_t first = folded(s, i + 1, n, ignore_case, &j)
    cdef uint8_t second
    if first == c"s" or first == c"d" or first == c"m" or first == c"t":
        return j
    if first == c"l" or first == c"v" or first == c"r":
        second = folded(s, j, n, ignore_case, &k)
        if (first == c"l" and second == c"l") or (first != c"l" and second == c"e"):
            return k
    return -1


cdef inline Py_ssize_t whitespace(const uint8_t* s, Py_ssize_t i, Py_ssize_t n,
                                  Py_ssize_t* last_start, Py_ssize_t* last_newline_end) noexcept nogil:
    """The end of the \\s run from ``i``; also where its last code point starts and
    where its last CR or LF ends (-1 if none)."""
    cdef Py_ssize_t j
    last_newline_end[0] = -1
    last_start[0] = i
    while i < n:
        if not (class_at(s, i, &j) & SPACE):
            break
        if s[i] == 13 or s[i] == 10:
            last_newline_end[0] = j
        last_start[0] = i
        i = j
    return i


# --------------------------------------------------------------------------- the scanners

cdef Py_ssize_t next_gpt2(const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t j, k, end, last_start, last_newline_end
    cdef uint8_t c = class_at(s, i, &j)
    cdef uint8_t c2
    if s[i] == 39:
        end = contraction(s, i, n, False)
        if end > 0:
            return end
    if s[i] == 32 and j < n:
        c2 = class_at(s, j, &k)
        if c2 & LETTER:
            return run_with(s, k, n, LETTER)
        if c2 & NUMBER:
            return run_with(s, k, n, NUMBER)
        if not (c2 & SPACE):
            return run_other(s, k, n)
    if c & LETTER:
        return run_with(s, j, n, LETTER)
    if c & NUMBER:
        return run_with(s, j, n, NUMBER)
    if not (c & SPACE):
        return run_other(s, j, n)
    end = whitespace(s, i, n, &last_start, &last_newline_end)
    if end == n or last_start == i:
        return end                # \s+(?!\S) to the end, or \s+ for a run of one
    return last_start             # \s+(?!\S): leave the last space to the next pre-token


cdef inline Py_ssize_t next_cl100k(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, int digits,
                                   bint whole_final_run) noexcept nogil:
    """cl100k (``digits`` 3, ``whole_final_run``), llama3 (3, not) or qwen2 (1, not)."""
    cdef Py_ssize_t j, k, end, last_start, last_newline_end
    cdef uint8_t c = class_at(s, i, &j)
    if s[i] == 39:
        end = contraction(s, i, n, True)
        if end > 0:
            return end
    if c & LETTER:
        return run_with(s, j, n, LETTER)
    if not (c & NUMBER) and s[i] != 13 and s[i] != 10 and j < n:
        # [^\r\n\p{L}\p{N}]?+\p{L}++ with the optional prefix taken
        if class_at(s, j, &k) & LETTER:
            return run_with(s, k, n, LETTER)
    if c & NUMBER:
        return run_numbers(s, i, n, digits)
    end = punctuation(s, i, j, n, c, False)
    if end >= 0:
        return end
    end = whitespace(s, i, n, &last_start, &last_newline_end)
    if end == n and (whole_final_run or last_newline_end < 0):
        return n                  # \s++$, or \s+(?!\S) to the end
    if last_newline_end > 0:
        return last_newline_end   # \s*[\r\n]
    if last_start != i:
        return last_start         # \s+(?!\S)
    return j                      # \s


cdef inline Py_ssize_t upper_then_lower(const uint8_t* s, Py_ssize_t p, Py_ssize_t n) noexcept nogil:
    """U*W+ at ``p`` as a backtracking regex matches it: the end, or -1."""
    cdef Py_ssize_t q = run_with(s, p, n, UPPERISH)
    cdef Py_ssize_t k = q
    cdef Py_ssize_t j
    while True:
        # U* holds [p, k); W+ must start at k.
        if k < n and (class_at(s, k, &j) & LOWERISH):
            return run_with(s, j, n, LOWERISH)
        if k == p:
            return -1
        k = previous_start(s, k)


cdef inline Py_ssize_t upper_plus_lower(const uint8_t* s, Py_ssize_t p, Py_ssize_t n) noexcept nogil:
    """U+W* at ``p``: the end, or -1."""
    cdef Py_ssize_t j
    if p >= n or not (class_at(s, p, &j) & UPPERISH):
        return -1
    return run_with(s, run_with(s, j, n, UPPERISH), n, LOWERISH)


cdef inline Py_ssize_t with_contraction(const uint8_t* s, Py_ssize_t end, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t longer
    if end < n and s[end] == 39:
        longer = contraction(s, end, n, True)
        if longer > 0:
            return longer
    return end


cdef Py_ssize_t next_o200k(const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t j, k, end, last_start, last_newline_end
    cdef uint8_t c = class_at(s, i, &j)
    cdef bint prefix = not (c & (LETTER | NUMBER)) and s[i] != 13 and s[i] != 10
    # P?U*W+C?, then P?U+W*C?; each first with the optional prefix P, then without.
    if prefix:
        end = upper_then_lower(s, j, n)
        if end >= 0:
            return with_contraction(s, end, n)
    end = upper_then_lower(s, i, n)
    if end >= 0:
        return with_contraction(s, end, n)
    if prefix:
        end = upper_plus_lower(s, j, n)
        if end >= 0:
            return with_contraction(s, end, n)
    end = upper_plus_lower(s, i, n)
    if end >= 0:
        return with_contraction(s, end, n)
    if c & NUMBER:
        return run_numbers(s, i, n, 3)
    end = punctuation(s, i, j, n, c, True)
    if end >= 0:
        return end
    end = whitespace(s, i, n, &last_start, &last_newline_end)
    if last_newline_end > 0:
        return last_newline_end   # \s*[\r\n]+
    if end == n or last_start == i:
        return end                # \s+(?!\S) to the end, or \s+
    return last_start             # \s+(?!\S)


cdef inline bint is_cjk(uint32_t cp) noexcept nogil:
    """Whether DeepSeek V3's second Split takes the code point: [一-龥\u3040-ゟ゠-ヿ]."""
    return 0x3040 <= cp <= 0x30FF or 0x4E00 <= cp <= 0x9FA5


cdef inline Py_ssize_t run_within(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, uint8_t mask,
                                  bint cjk) noexcept nogil:
    """The end of the run of code points from ``i`` whose class has a bit of
    ``mask`` and that are CJK characters (``cjk``) or are not."""
    cdef Py_ssize_t j
    cdef uint32_t cp
    while i < n:
        if s[i] < 0x80:
            if cjk or not (CLASS[s[i]] & mask):
                break
            i += 1
        else:
            cp = code_point(s, i, &j)
            if not (CLASS[cp] & mask) or is_cjk(cp) != cjk:
                break
            i = j
    return i


cdef inline bint word_within(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, bint cjk,
                             Py_ssize_t* next_i) noexcept nogil:
    """Whether ``[\\p{L}\\p{M}]`` of the same stretch (CJK or not) is at ``i``."""
    cdef uint32_t cp
    if i >= n:
        return False
    cp = code_point(s, i, next_i)
    return (CLASS[cp] & (LETTER | MARK)) != 0 and is_cjk(cp) == cjk


cdef Py_ssize_t next_deepseek_v3(const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t j, k, end, last_start, last_newline_end
    cdef uint32_t next_cp
    cdef uint32_t cp = code_point(s, i, &j)
    cdef uint8_t c = CLASS[cp]
    cdef bint cjk = is_cjk(cp)
    if c & NUMBER:
        return run_numbers(s, i, n, 3)                  # the first Split's pieces stay whole
    # [!-/:-@[-`{-~][A-Za-z]+
    if cp < 0x80 and (c & SYMBOL) and j < n and s[j] < 0x80 and (CLASS[s[j]] & LETTER):
        k = j
        while k < n and s[k] < 0x80 and (CLASS[s[k]] & LETTER):
            k += 1
        return k
    # [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+, first with the optional character
    if cp != 13 and cp != 10 and not (c & (LETTER | SYMBOL)) and word_within(s, j, n, cjk, &k):
        return run_within(s, k, n, LETTER | MARK, cjk)
    if c & (LETTER | MARK):
        return run_within(s, j, n, LETTER | MARK, cjk)
    # " ?[\p{P}\p{S}]+[\r\n]*" (a space, CR and LF are never CJK characters)
    if cp == 32 and j < n:
        next_cp = code_point(s, j, &k)
        if (CLASS[next_cp] & SYMBOL) and not is_cjk(next_cp):
            return run_bytes(s, run_within(s, k, n, SYMBOL, False), n, False)
    if c & SYMBOL:
        end = run_within(s, j, n, SYMBOL, cjk)
        return end if cjk else run_bytes(s, end, n, False)
    if c & SPACE:
        end = whitespace(s, i, n, &last_start, &last_newline_end)
        if last_newline_end > 0:
            return last_newline_end   # \s*[\r\n]+
        if end == n or last_start == i:
            return end                # \s+(?!\S) to the stretch's end, or \s+
        next_cp = code_point(s, end, &k)
        if (CLASS[next_cp] & NUMBER) or is_cjk(next_cp):
            return end                # \s+(?!\S) where the stretch ends
        return last_start             # \s+(?!\S)
    # Unmatched: up to where a branch matches, or the stretch ends.
    k = j
    while k < n:
        cp = code_point(s, k, &end)
        if (CLASS[cp] & (NUMBER | SPACE | LETTER | MARK | SYMBOL)) or is_cjk(cp) != cjk:
            break
        if word_within(s, end, n, cjk, &last_start):
            break
        k = end
    return k


cdef Py_ssize_t next_metaspace(const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """metaspace: ``▁+[^▁\\t\\n]*|[^▁\\t\\n]+|[\\t\\n]``: a run of U+2581 (E2 96 81) and
    what follows up to the next one, a tab or a line feed, which stand alone."""
    cdef Py_ssize_t k = i
    cdef uint8_t c
    if s[i] == 0x09 or s[i] == 0x0A:
        return i + 1
    while k + 3 <= n and s[k] == 0xE2 and s[k + 1] == 0x96 and s[k + 2] == 0x81:
        k += 3
    while k < n:
        c = s[k]
        if c == 0x09 or c == 0x0A or (c == 0xE2 and k + 3 <= n and s[k + 1] == 0x96 and s[k + 2] == 0x81):
            return k
        k += 1
    return n


cdef Py_ssize_t next_metaspace_alone(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, const uint8_t* alone,
                                     const uint8_t* joined) noexcept nogil:
    """metaspace where the code points set in ``alone`` stand alone (SentencePiece
    models' characters that no piece of several characters holds, which no
    merge can join to another): such a code point, or a run of U+2581 and what
    follows up to the next one or such a code point; and, with ``joined``, up
    to two ASCII characters side by side that no piece holds so. U+2581 is
    never alone."""
    cdef Py_ssize_t k = i, end
    cdef uint32_t cp = code_point(s, i, &end)
    if (alone[cp >> 3] >> (cp & 7)) & 1:
        return end
    while k + 3 <= n and s[k] == 0xE2 and s[k + 1] == 0x96 and s[k + 2] == 0x81:
        k += 3
    return metaspace_rest(s, k, n, alone, joined)


cdef inline Py_ssize_t metaspace_rest(const uint8_t* s, Py_ssize_t k, Py_ssize_t n, const uint8_t* alone,
                                      const uint8_t* joined) noexcept nogil:
    """``next_metaspace_alone``'s rule on from ``k``, inside a pre-token. No
    pair is read across ``k``: it is the pre-token's start, the end of its
    run of U+2581, or a character that is not ASCII."""
    cdef Py_ssize_t end
    cdef uint32_t before = 0x80           # the character before k where it is ASCII, else 0x80
    cdef uint32_t cp, pair
    while k < n:
        if s[k] == 0xE2 and k + 3 <= n and s[k + 1] == 0x96 and s[k + 2] == 0x81:
            return k
        cp = code_point(s, k, &end)
        if (alone[cp >> 3] >> (cp & 7)) & 1:
            return k
        if joined != NULL and before < 0x80 and cp < 0x80:
            pair = (before << 7) | cp
            if not (joined[pair >> 3] >> (pair & 7)) & 1:
                return k
        before = cp
        k = end
    return n


cdef Py_ssize_t metaspace_ascii(const Scanner* sc, Py_ssize_t i) noexcept nogil:
    """``next_metaspace_alone`` from an ASCII character where no window is
    (ASCII between other scripts' characters): its ASCII cut by the
    windows' table of pairs, a lookup a byte; on by the byte-by-byte rule
    from the first character that is not ASCII."""
    cdef const uint8_t* s = sc.s
    cdef Py_ssize_t k = i + 1, n = sc.n
    if (sc.alone[s[i] >> 3] >> (s[i] & 7)) & 1:
        return k
    while k < n and s[k] < 0x80:
        if sc.pair_cuts[(<uint32_t>s[k - 1] << 7) | s[k]]:
            return k
        k += 1
    return metaspace_rest(s, k, n, sc.alone, sc.joined)


cdef bint metaspace_window(Scanner* sc, Py_ssize_t i) noexcept nogil:
    """Load the window of metaspace starts at ``i`` (``next_metaspace_alone``'s,
    which in ASCII text cuts by pairs alone: a table lookup per byte, no
    branch) up to the first non-ASCII byte; whether it has a start. Without
    one (a run of ASCII as long as the window, or a non-ASCII byte near), the
    caller scans byte by byte, and no window is tried again until past the
    last non-ASCII byte this one met: in text of other scripts, windows
    would cost more than they save."""
    cdef const uint8_t* s = sc.s + i
    cdef Py_ssize_t left = sc.n - i
    cdef int known = 64 if left > 64 else <int>left
    cdef int j, ascii = known, last = -1
    cdef uint64_t word, starts = 0
    for j in range(0, known, 8):
        if j + 8 <= known:
            memcpy(&word, s + j, 8)
        else:
            word = 0
            memcpy(&word, s + j, known - j)
        word &= 0x8080808080808080ULL
        if word:
            if ascii == known:
                ascii = j + trailing_zeros(word) // 8
            last = j + (63 - leading_zeros(word)) // 8
    if last >= 0:
        sc.plain_until = i + last + 1
        if ascii < MIN_ASCII_WINDOW:
            return False
    for j in range(1, ascii):
        starts |= <uint64_t>sc.pair_cuts[(<uint32_t>s[j - 1] << 7) | s[j]] << j
    if ascii == left and left < 64:
        starts |= <uint64_t>1 << left      # the text's end, where its last pre-token ends
    sc.window = i
    sc.starts = starts
    sc.risky_starts = 0
    sc.risky_ends = 0
    return starts != 0


def metaspace_pair_cuts(const uint8_t[::1] alone, const uint8_t[::1] joined=None):
    """Where the metaspace scanner with ``alone`` and ``joined`` (as
    ``split_offsets`` takes them) cuts between two ASCII characters a and b:
    byte 128 * a + b is 1 where either stands alone or, with ``joined``, the
    pair is not joined (a uint8 array; the scanner's windows read it).

    >>> import numpy as np
    >>> alone = np.zeros(0x110000 // 8, np.uint8); alone[ord("\\n") >> 3] = 1 << (ord("\\n") & 7)
    >>> cuts = metaspace_pair_cuts(alone)
    >>> int(cuts[(ord("a") << 7) | ord("b")]), int(cuts[(ord("a") << 7) | ord("\\n")])
    (0, 1)
    """
    if alone.shape[0] != 0x110000 // 8 or (joined is not None and joined.shape[0] != 128 * 128 // 8):
        raise ValueError("alone: a bit for each code point; joined: a bit for each pair of ASCII characters")
    out = np.zeros(128 * 128, dtype=np.uint8)
    cdef uint8_t[::1] cuts = out
    cdef uint32_t a, b, pair
    for a in range(128):
        for b in range(128):
            pair = (a << 7) | b
            cuts[pair] = ((alone[a >> 3] >> (a & 7)) & 1) | ((alone[b >> 3] >> (b & 7)) & 1) | (
                joined is not None and not ((joined[pair >> 3] >> (pair & 7)) & 1))
    return out


cdef Py_ssize_t next_pretoken(int pattern, const uint8_t* s, Py_ssize_t i,
                              Py_ssize_t n) noexcept nogil:
    if pattern == PATTERN_METASPACE:
        return next_metaspace(s, i, n)
    if pattern == PATTERN_GPT2:
        return next_gpt2(s, i, n)
    if pattern == PATTERN_CL100K:
        return next_cl100k(s, i, n, 3, True)
    if pattern == PATTERN_LLAMA3:
        return next_cl100k(s, i, n, 3, False)
    if pattern == PATTERN_QWEN2:
        return next_cl100k(s, i, n, 1, False)
    if pattern == PATTERN_DEEPSEEK_V3:
        return next_deepseek_v3(s, i, n)
    return next_o200k(s, i, n)


cdef void scanner_init(Scanner* sc, int pattern, const uint8_t* s, Py_ssize_t n) noexcept nogil:
    sc.s = s
    sc.n = n
    sc.pattern = pattern
    sc.classify = CLASSIFY_GPT2 if pattern == PATTERN_GPT2 else (NULL if pattern == PATTERN_METASPACE else CLASSIFY)
    sc.alone = NULL
    sc.joined = NULL
    sc.pair_cuts = NULL
    sc.plain_until = 0
    sc.held = NULL
    sc.spread = SPREAD
    sc.window = -64             # no window of starts
    sc.starts = 0
    sc.risky_starts = 0
    sc.risky_ends = 0


# --------------------------------------------------------------------------- 64 bytes at once
#
# In ASCII text each pattern's pre-token starts follow from a few neighbouring
# bytes' classes (below, for each pattern), so one window's masks give every
# start in it with shifts and ands; the scan then hops from start to start by
# counting trailing zeros, with no branch on what the text says. What the
# rules leave out goes to the byte-by-byte scanners: a pre-token a contraction
# may start or extend, bytes too close to a non-ASCII one or to the window's
# end to be decided, and pre-tokens longer than a window. So the splits are the
# byte-by-byte scanners' by construction; tests/test_native_pretok.py checks
# them with every path forced.

cdef inline uint64_t gpt2_starts(const ClassMasks* m, uint64_t valid) noexcept nogil:
    """gpt2 starts a pre-token at byte k exactly when
      k is whitespace:  k - 1 is not whitespace (a run starts), or k + 1 is a
                        non-whitespace byte (\\s+(?!\\S) leaves the run's last
                        character to the next pre-token);
      k is not:         k - 1 is of another class (letter, digit, other), and is
                        not ' ' (" ?\\p{L}+" and the like take the space along).
    Bit k reads bytes k - 1 to k + 1."""
    cdef uint64_t letter = m.upper | m.lower
    cdef uint64_t space = m.space
    cdef uint64_t other = valid & ~(letter | m.digit | space)
    cdef uint64_t same = (letter & (letter << 1)) | (m.digit & (m.digit << 1)) | (other & (other << 1))
    return (space & (~(space << 1) | ((valid & ~space) >> 1))) | (~space & ~same & ~(m.blank << 1))


cdef inline uint64_t digit_groups(uint64_t digit) noexcept nogil:
    """The first digit of each run and every third after it ("\\p{N}{1,3}")."""
    cdef uint64_t groups = digit & ~(digit << 1)
    cdef uint64_t three = digit & (digit << 1) & (digit << 2)
    cdef uint64_t step = groups
    while step:
        step = (step << 3) & three
        groups |= step
    return groups


cdef inline uint64_t fill_up(uint64_t seeds, uint64_t through) noexcept nogil:
    """Bits of ``through`` reached from a seed going up (to later bytes) without
    leaving ``through``: six steps, each doubling the reach."""
    cdef int shift = 1
    seeds &= through
    while shift < 64:
        seeds |= (seeds << shift) & through
        through &= through << shift
        shift *= 2
    return seeds


cdef inline uint64_t fill_down(uint64_t seeds, uint64_t through) noexcept nogil:
    """As ``fill_up``, going down (to earlier bytes)."""
    cdef int shift = 1
    seeds &= through
    while shift < 64:
        seeds |= (seeds >> shift) & through
        through &= through >> shift
        shift *= 2
    return seeds


cdef inline uint64_t whitespace_starts(const ClassMasks* m, uint64_t valid, uint64_t absorbed,
                                       uint64_t final, uint64_t stretch_ends, Py_ssize_t known, bint at_end,
                                       uint64_t* decided) noexcept nogil:
    """cl100k's and o200k's whitespace rules: a run's first byte not ``absorbed``
    by the other bytes before it; the first after its last CR or LF (but not in
    ``final``); its last byte when that is not CR or LF and a non-space follows
    that is not in ``stretch_ends`` (where ``(?!\\S)`` sees the end of a text).
    These need the run's end: a run that reaches past the known bytes cuts
    ``decided`` after its first byte."""
    cdef uint64_t space = m.space
    cdef uint64_t kept = space & ~absorbed
    cdef uint64_t later_newline = fill_down(m.newline, space)
    cdef uint64_t below
    if not at_end and known > 0 and (space >> (known - 1)) & 1:
        below = valid & ~space
        # that run starts right after ``below``'s top bit
        decided[0] &= ((<uint64_t>4 << (63 - leading_zeros(below))) - 1) if below else 1
    return ((kept & ~(kept << 1))
            | (kept & (m.newline << 1) & ~later_newline & ~final)
            | (space & ~m.newline & ((valid & ~space & ~stretch_ends) >> 1)))


cdef inline uint64_t cl100k_starts(const ClassMasks* m, uint64_t valid, Py_ssize_t known, bint at_end,
                                   uint64_t* decided, bint single_digits, bint whole_final_run) noexcept nogil:
    """cl100k starts a pre-token at byte k exactly when k is
      a letter:     k - 1 is not a letter, and does not prefix it: a non-letter,
                    non-digit other than CR or LF prefixes a letter when it
                    starts a pre-token itself ("[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++"):
                    whitespace there always does (it ends its run), an other
                    byte unless another other byte or a space comes before it;
      a digit:      the first of its run, or 3, 6, ... after it ("\\p{N}{1,3}+");
      other:        k - 1 is neither other nor a space (" ?[^\\s\\p{L}\\p{N}]++");
      whitespace:   not CR or LF right after other bytes ("[\\r\\n]*+" takes
                    those along), and as ``whitespace_starts`` says, with "\\s++$"
                    keeping a run that reaches the text's end whole.
    llama3 (``whole_final_run`` false) splits that run as o200k does; qwen2
    (``single_digits`` too) starts a pre-token at every digit."""
    cdef uint64_t letter = m.upper | m.lower
    cdef uint64_t space = m.space
    cdef uint64_t other = valid & ~(letter | m.digit | space)
    cdef uint64_t other_first = other & ~(other << 1) & ~(m.blank << 1)
    cdef uint64_t absorbed = fill_up((other << 1) & m.newline, m.newline)
    cdef uint64_t final = 0
    cdef uint64_t below
    if whole_final_run and at_end and known > 0 and (space >> (known - 1)) & 1:
        below = valid & ~space
        final = valid & ~(((<uint64_t>2 << (63 - leading_zeros(below))) - 1) if below else 0)
    return ((letter & ~(letter << 1) & ~((space & ~m.newline) << 1) & ~(other_first << 1))
            | (m.digit if single_digits else digit_groups(m.digit)) | other_first
            | whitespace_starts(m, valid, absorbed, final, 0, known, at_end, decided))


cdef inline uint64_t o200k_starts(const ClassMasks* m, uint64_t valid, Py_ssize_t known, bint at_end,
                                  uint64_t* decided) noexcept nogil:
    """o200k starts a pre-token at byte k exactly when k is
      a letter:     after a lower-case letter, an upper-case one ("U*W+" ends at
                    W's last letter; an upper-case run followed by lower-case
                    letters is one pre-token); after a non-letter, unless that
                    prefixes it as in cl100k ("[^\\r\\n\\p{L}\\p{N}]?");
      a digit:      the first of its run, or 3, 6, ... after it ("\\p{N}{1,3}");
      other:        k - 1 is neither a space nor other that other bytes own
                    (" ?[^\\s\\p{L}\\p{N}]+");
      whitespace:   as in cl100k, where "[\\r\\n/]*" takes along CR, LF and
                    "/" after other bytes, and a run that reaches the text's end
                    splits after its last CR or LF too ("\\s*[\\r\\n]+" comes
                    first).
    A contraction may follow a letter ("(?i:'s|'t|...)?"): the caller leaves
    a pre-token that ends at "'" after a letter to the byte-by-byte scanner."""
    cdef uint64_t letter = m.upper | m.lower
    cdef uint64_t space = m.space
    cdef uint64_t other = valid & ~(letter | m.digit | space)
    cdef uint64_t absorbed, owned, other_first
    absorbed = fill_up((other << 1) & m.newline, m.newline | m.slash)
    owned = other & ~absorbed
    other_first = owned & ~(owned << 1) & ~(m.blank << 1)
    return ((letter & ~(letter << 1) & ~((space & ~m.newline) << 1) & ~(other_first << 1))
            | (m.lower << 1) & m.upper
            | digit_groups(m.digit) | other_first
            | whitespace_starts(m, valid, absorbed, 0, 0, known, at_end, decided))


cdef inline uint64_t deepseek_v3_starts(const ClassMasks* m, uint64_t valid, Py_ssize_t known, bint at_end,
                                        uint64_t* decided) noexcept nogil:
    """deepseek_v3 starts a pre-token at byte k (ASCII, no control characters:
    the caller leaves those unknown) exactly when k is
      a digit:      the first of its run, or 3, 6, ... after it (the first
                    Split); whatever follows a digit starts a stretch;
      a letter:     k - 1 is not a letter, not white space other than CR or
                    LF ("[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"), and not a
                    punctuation byte that starts a pre-token
                    ("[!-/:-@[-`{-~][A-Za-z]+");
      punctuation:  k - 1 is neither punctuation nor a space (" ?[\\p{P}\\p{S}]+");
      white space:  as in o200k, where "[\\r\\n]*" takes CR and LF after
                    punctuation along, and a run before a digit keeps its last
                    byte ("\\s+(?!\\S)" ends the stretch there)."""
    cdef uint64_t letter = m.upper | m.lower
    cdef uint64_t space = m.space
    cdef uint64_t other = valid & ~(letter | m.digit | space)
    cdef uint64_t other_first = other & ~(other << 1) & ~(m.blank << 1)
    cdef uint64_t absorbed = fill_up((other << 1) & m.newline, m.newline)
    return ((letter & ~(letter << 1) & ~((space & ~m.newline) << 1) & ~(other_first << 1))
            | digit_groups(m.digit) | other_first
            | whitespace_starts(m, valid, absorbed, 0, m.digit, known, at_end, decided))


cdef inline Py_ssize_t first_control(const uint8_t* window, uint64_t candidates) noexcept nogil:
    """The first of the ``candidates`` bytes (ASCII, neither letters, digits nor
    white space) that is a control character, or 64."""
    cdef int k
    while candidates:
        k = trailing_zeros(candidates)
        if window[k] < 0x21 or window[k] == 0x7F:
            return k
        candidates &= candidates - 1
    return 64


cdef inline uint64_t gpt2_contractions(const uint8_t* s, uint64_t quotes, uint64_t starts) noexcept nogil:
    """``starts`` with gpt2's contractions ("'s", "'t", "'m", "'d", "'ll", "'ve",
    "'re") made pre-tokens of their own, at each of ``quotes`` (starts holding
    "'", each with three known bytes after it): the next start moves to the
    contraction's end, whatever class the letters after it are."""
    cdef int k, length
    cdef uint8_t first, second
    while quotes:
        k = trailing_zeros(quotes)
        quotes &= quotes - 1
        first = s[k + 1]
        second = s[k + 2]
        if first == 115 or first == 116 or first == 109 or first == 100:        # s t m d
            length = 2
        elif (first == 108 and second == 108) or ((first == 118 or first == 114) and second == 101):
            length = 3                                                        # ll ve re
        else:
            continue
        starts = (starts & ~(<uint64_t>6 << k)) | (<uint64_t>1 << (k + length))
    return starts


cdef void load_window(Scanner* sc, Py_ssize_t p) noexcept nogil:
    """Find the pre-token starts after ``p`` (itself a start) that the 64 bytes
    from ``p`` decide; where the text ends among them, its end counts as one."""
    cdef ClassMasks m
    cdef uint8_t padded[64]
    cdef Py_ssize_t left = sc.n - p
    cdef Py_ssize_t known, control
    cdef bint at_end
    cdef uint64_t valid, starts, decided
    prefetch(<const void*>(<uintptr_t>sc.s + p + READ_AHEAD))     # see read_ahead
    if left >= 64:
        sc.classify(sc.s + p, &m)
        known = 64
    else:
        memset(padded, 0, 64)
        memcpy(padded, sc.s + p, left)
        sc.classify(padded, &m)
        known = left
    at_end = known == left
    if m.high:
        # Bytes from the first non-ASCII one on are unknown (a character's class).
        known = trailing_zeros(m.high)
        at_end = False
    if sc.pattern == PATTERN_DEEPSEEK_V3:
        # So are control characters, for deepseek_v3 (a run the third Split leaves unmatched).
        control = first_control(sc.s + p if left >= 64 else padded,
                                ~(m.upper | m.lower | m.digit | m.space | m.high)
                                & (~(<uint64_t>0) if known >= 64 else (<uint64_t>1 << known) - 1))
        if control < known:
            known = control
            at_end = False
    valid = ~(<uint64_t>0) if known >= 64 else (<uint64_t>1 << known) - 1
    # Bit k reads byte k + 1: known up to the text's end, else one short of
    # the unknown bytes.
    decided = valid if at_end else ((<uint64_t>1 << (known - 1)) - 1 if known > 0 else 0)
    if sc.pattern == PATTERN_GPT2:
        starts = gpt2_starts(&m, valid)
    elif sc.pattern == PATTERN_CL100K:
        starts = cl100k_starts(&m, valid, known, at_end, &decided, False, True)
    elif sc.pattern == PATTERN_LLAMA3:
        starts = cl100k_starts(&m, valid, known, at_end, &decided, False, False)
    elif sc.pattern == PATTERN_QWEN2:
        starts = cl100k_starts(&m, valid, known, at_end, &decided, True, False)
    elif sc.pattern == PATTERN_DEEPSEEK_V3:
        starts = deepseek_v3_starts(&m, valid, known, at_end, &decided)
    else:
        starts = o200k_starts(&m, valid, known, at_end, &decided)
    starts &= decided
    if at_end:
        starts |= <uint64_t>1 << left
    sc.window = p
    sc.risky_ends = 0
    if sc.pattern == PATTERN_O200K:
        # A contraction may extend a pre-token that ends at "'" after a letter.
        sc.risky_starts = 0
        sc.risky_ends = m.quote & ((m.upper | m.lower) << 1)
    elif sc.pattern == PATTERN_DEEPSEEK_V3:
        sc.risky_starts = 0       # no contractions
    elif sc.pattern == PATTERN_GPT2 and m.quote:
        # gpt2's contractions are lower-case and stand alone: one read here
        # of the two bytes after each "'" that starts a pre-token. Those too
        # near the unknown bytes are left to the byte-by-byte scanner.
        sc.risky_starts = m.quote & ~(((<uint64_t>1 << (known - 4)) - 1) if known > 4 else 0)
        starts = gpt2_contractions(sc.s + p, m.quote & (starts | 1) & ~sc.risky_starts, starts)
    else:
        # A contraction may start at "'" (cl100k: tried first at every start).
        sc.risky_starts = m.quote
    sc.starts = starts & ~(<uint64_t>1)


cdef Py_ssize_t scanner_next_slow(Scanner* sc, Py_ssize_t i) noexcept nogil:
    """(See _scanner.pxd.) A window loaded afresh at ``i``, whose first start after
    ``i`` ends the pre-token; else (and for a start holding "'") the byte-by-byte
    scanner's end. The scanner without a classifier never has a window."""
    cdef int end
    if sc.classify == NULL:
        if sc.alone != NULL:
            if sc.pair_cuts != NULL and i >= sc.plain_until and metaspace_window(sc, i):
                return i + trailing_zeros(sc.starts)
            if sc.pair_cuts != NULL and sc.s[i] < 0x80:
                return metaspace_ascii(sc, i)
            return next_metaspace_alone(sc.s, i, sc.n, sc.alone, sc.joined)
        return next_pretoken(sc.pattern, sc.s, i, sc.n)
    load_window(sc, i)
    if sc.starts and not (sc.risky_starts & 1):
        end = trailing_zeros(sc.starts)
        if not ((sc.risky_ends >> end) & 1):
            return i + end
    return next_pretoken(sc.pattern, sc.s, i, sc.n)


cdef Py_ssize_t scanner_fill(Scanner* sc, Py_ssize_t i, Py_ssize_t* ends, Py_ssize_t room) noexcept nogil:
    """(See _scanner.pxd.) A window's starts after ``i`` are written all at once
    up to the first that a contraction may concern: the pre-tokens between them
    are the ones ``scanner_next`` would return one by one, and the one at such
    a start goes through ``scanner_next_slow`` as it would there."""
    cdef Py_ssize_t count = 0, run
    cdef uint64_t after, risky, first, taken
    while count < room and i < sc.n:
        after = window_after(sc, i)
        risky = after & (sc.risky_starts | sc.risky_ends)
        taken = after
        if risky:
            # Up to the first risky start: a pre-token may end there unless it
            # is a risky end; the next one is the byte-by-byte scanner's.
            first = risky & (~risky + 1)
            taken = after & (first - 1)
            if not (sc.risky_ends & first):
                taken |= first
        if taken:
            count += sc.spread(taken, sc.window, <intptr_t*>(ends + count))
            i = sc.window + 63 - leading_zeros(taken)       # the last end, not read back
            continue
        if sc.alone != NULL and sc.s[i] >= 0xC0:
            run = alone_run(sc, i, ends + count, room - count)
            if run:
                count += run
                i = ends[count - 1]
                continue
            if count > 0 and sc.held != NULL and holds(sc, i):
                break
        i = scanner_next_slow(sc, i)
        ends[count] = i
        count += 1
    return count


cdef Py_ssize_t alone_run(const Scanner* sc, Py_ssize_t i, Py_ssize_t* ends, Py_ssize_t room) noexcept nogil:
    """metaspace: the ends of the characters of several bytes that stand alone
    from the start ``i`` on (each a pre-token, ``next_metaspace_alone``'s
    first answer), up to ``room`` of them and the first ``held`` one; how
    many. Why apart: text in Chinese or Japanese is mostly such characters,
    and each cost the whole scanner's call (a window tried, then the
    character read twice)."""
    cdef const uint8_t* s = sc.s
    cdef const uint8_t* alone = sc.alone
    cdef Py_ssize_t count = 0, n = sc.n
    cdef uint32_t cp
    cdef int width
    while count < room and i < n and s[i] >= 0xC0:
        cp = lead_point(s, i, &width)
        if not (alone[cp >> 3] >> (cp & 7)) & 1 or (sc.held != NULL and held_point(sc, cp)):
            break
        i += width
        ends[count] = i
        count += 1
    return count


cdef inline bint holds(const Scanner* sc, Py_ssize_t i) noexcept nogil:
    """Whether the character of several bytes at ``i`` is one of ``held``'s."""
    cdef int width
    return held_point(sc, lead_point(sc.s, i, &width))


cdef inline bint held_point(const Scanner* sc, uint32_t cp) noexcept nogil:
    """Whether ``held`` (not NULL) holds code point ``cp``: one of the Basic Multilingual Plane's."""
    return cp < 0x10000 and sc.held[cp] != 0


cdef int check_pattern(int pattern, const uint8_t* s, Py_ssize_t n) except -1:
    """A valid native pattern id, with the tables its scanner reads for the
    UTF-8 ``s[:n]`` built (looking at the text only while they cover ASCII alone)."""
    if not 0 <= pattern < N_PATTERNS:
        raise ValueError(f"unknown native pattern id {pattern}")
    cdef bint ascii_text
    if _every_code_point:
        return 0
    with nogil:                 # a pass over the text: other threads need not wait for it
        ascii_text = all_ascii(s, n)
    return ensure_tables(ascii_text)


def split_offsets(const uint8_t[::1] data, int pattern, const uint8_t[::1] alone=None,
                  const uint8_t[::1] joined=None, bint windows=True):
    """The byte offsets where pre-tokens start, plus ``len(data)``: an int64 array.
    ``alone``, ``joined``: for metaspace, the code points that stand alone and
    the ASCII pairs that stay joined (``EncodeKernel``'s); without ``windows``,
    scanned byte by byte (for tests to hold the two ways to the same cuts).

    >>> split_offsets(b"Hi  there", PATTERN_IDS["gpt2"]).tolist()
    [0, 2, 3, 9]
    """
    cdef Py_ssize_t n = data.shape[0]
    out = np.empty(n + 1, dtype=np.int64)
    cdef offset_t[::1] offsets = out
    cdef Py_ssize_t i = 0
    cdef Py_ssize_t count = 0
    cdef Scanner scanner
    pair_cuts = _test_scanner(&scanner, data, pattern, alone, joined, windows)
    with nogil:
        while i < n:
            offsets[count] = i
            count += 1
            i = scanner_next(&scanner, i)
        offsets[count] = n
    return out[:count + 1].copy()


def fill_offsets(const uint8_t[::1] data, int pattern, Py_ssize_t room, const uint8_t[::1] alone=None,
                 const uint8_t[::1] joined=None, bint windows=True, const uint32_t[::1] held=None):
    """``split_offsets``' answer, found ``room`` pre-tokens (or a window's) at a
    time by ``scanner_fill``, as the encoder finds them: for tests to hold the
    two ways to the same splits. ``held``: the scanner's (a word for each
    code point of the Basic Multilingual Plane), where batches end early."""
    cdef Py_ssize_t n = data.shape[0]
    if room < 1:
        raise ValueError(f"room must be at least 1, got {room}")
    out = np.empty(n + 1 + room + FILL_SLACK, dtype=np.int64)
    cdef offset_t[::1] offsets = out
    cdef Py_ssize_t count = 0
    cdef Scanner scanner
    pair_cuts = _test_scanner(&scanner, data, pattern, alone, joined, windows)
    if held is not None:
        if alone is None or held.shape[0] != 0x10000:
            raise ValueError("held goes with alone: a word for each code point of the Basic Multilingual Plane")
        scanner.held = &held[0]
    offsets[0] = 0
    with nogil:
        while offsets[count] < n:
            count += scanner_fill(&scanner, offsets[count], <Py_ssize_t*>&offsets[count + 1], room)
    return out[:count + 1].copy()


cdef object _test_scanner(Scanner* scanner, const uint8_t[::1] data, int pattern, const uint8_t[::1] alone,
                          const uint8_t[::1] joined, bint windows):
    """``scanner`` set up as ``split_offsets`` and ``fill_offsets`` ask; returns
    the array it points into (the caller holds it while it scans)."""
    cdef Py_ssize_t n = data.shape[0]
    cdef const uint8_t* s = &data[0] if n > 0 else NULL
    check_pattern(pattern, s, n)
    if alone is not None and (pattern != PATTERN_METASPACE or alone.shape[0] != 0x110000 // 8):
        raise ValueError("alone is for the metaspace pattern: a bit for each code point")
    if joined is not None and (alone is None or joined.shape[0] != 128 * 128 // 8):
        raise ValueError("joined goes with alone: a bit for each pair of ASCII characters")
    scanner_init(scanner, pattern, s, n)
    scanner.alone = &alone[0] if alone is not None else NULL
    scanner.joined = &joined[0] if joined is not None else NULL
    cdef const uint8_t[::1] pair_cuts
    if alone is not None and windows:
        cuts = metaspace_pair_cuts(alone, joined)
        pair_cuts = cuts
        scanner.pair_cuts = &pair_cuts[0]
        return cuts
    return None


# --------------------------------------------------------------------------- the interner

cdef int _raise_for(int64_t status) except -1:
    """The error a failed ``bytestable_add`` stands for."""
    if status == OVERFLOW:
        raise OverflowError("a pre-token's count passed 2^63 - 1 (int64): counts this large cannot "
                            "be added exactly")
    if status < 0:
        raise MemoryError()
    return 0


cdef class Interner:
    """Distinct byte strings with counts, in flat arrays, behind an open-addressing table.

    Add pre-tokens by scanning text (``count``), or whole ``PretokenCounts``
    arrays (``add_arrays``); read the result with ``arrays()``.
    """

    def __cinit__(self):
        self.front.block = NULL           # allocated by the first count
        if bytestable_init(&self.table) < 0:
            bytestable_free(&self.table)
            raise MemoryError()

    def __dealloc__(self):
        bytestable_free(&self.table)
        shortcache_free(&self.front)

    def __len__(self):
        return self.table.n_entries

    def count(self, const uint8_t[::1] data, int pattern, Py_ssize_t start=0, Py_ssize_t stop=-1):
        """Pre-tokenize ``data[start:stop]`` with a built-in pattern and count each pre-token."""
        if stop < 0:
            stop = data.shape[0]
        if not 0 <= start <= stop <= data.shape[0]:
            raise ValueError(f"bad range [{start}, {stop}) of {data.shape[0]} bytes")
        check_pattern(pattern, &data[start] if start < stop else NULL, stop - start)
        if start == stop:
            return
        cdef const uint8_t* s = &data[0]
        cdef Py_ssize_t i = start
        cdef Py_ssize_t end, length
        cdef int64_t status = 0
        cdef Scanner scanner
        cdef ShortCache* front
        cdef ShortKey key
        cdef ShortEntry* slot
        cdef uint32_t entry
        scanner_init(&scanner, pattern, s, stop)
        if self.front.block == NULL:
            if shortcache_init(&self.front, FRONT_CACHE_SLOTS, FRONT_CACHE_SLOTS) < 0:
                shortcache_free(&self.front)
                raise MemoryError()
        front = &self.front
        with nogil:
            while i < stop:
                end = scanner_next(&scanner, i)
                length = end - i
                if length > SHORT_KEY_BYTES:
                    status = bytestable_add(&self.table, s + i, length, 1, True)
                    if status < 0:
                        break
                    i = end
                    continue
                short_key(&key, s + i, length, stop - i)
                slot = shortcache_slot(front, &key)
                if shortcache_holds(slot, &key):
                    if self.table.values[slot.ids[0]] == INT64_MAX:
                        status = OVERFLOW
                        break
                    self.table.values[slot.ids[0]] += 1
                    i = end
                    continue
                status = bytestable_add(&self.table, s + i, length, 1, True)
                if status < 0:
                    break
                entry = <uint32_t>status      # entries fit 32 bits (MAX_ENTRIES)
                shortcache_insert(front, slot, &key, &entry, 1)
                i = end
        _raise_for(status)

    def add_arrays(self, const uint8_t[::1] data, const offset_t[::1] offsets,
                   const count_t[::1] counts):
        """Add every entry of flat arrays (as in ``PretokenCounts``), checked first."""
        cdef Py_ssize_t n = counts.shape[0]
        cdef Py_ssize_t e
        cdef int64_t status = 0
        check_offsets(offsets, n, data.shape[0], "pre-token arrays")
        for e in range(n):
            if counts[e] < 0:
                raise ValueError(f"pre-token arrays: count {counts[e]} of pre-token {e} is negative")
        if n == 0:
            return
        cdef const uint8_t* s = &data[0] if data.shape[0] > 0 else NULL
        with nogil:
            for e in range(n):
                status = bytestable_add(&self.table, s + offsets[e], offsets[e + 1] - offsets[e],
                                        counts[e], True)
                if status < 0:
                    break
        _raise_for(status)

    def arrays(self):
        """``(data, offsets, counts)`` as numpy arrays, in first-seen order."""
        cdef BytesTable* t = &self.table
        data = np.empty(t.data_size, dtype=np.uint8)
        offsets = np.empty(t.n_entries + 1, dtype=np.int64)
        counts = np.empty(t.n_entries, dtype=np.int64)
        cdef uint8_t[::1] data_view = data
        cdef offset_t[::1] offsets_view = offsets
        cdef count_t[::1] counts_view = counts
        if t.data_size:
            memcpy(&data_view[0], t.data, t.data_size)
        memcpy(&offsets_view[0], t.starts, (t.n_entries + 1) * sizeof(offset_t))
        if t.n_entries:
            memcpy(&counts_view[0], t.values, t.n_entries * sizeof(count_t))
        return data, offsets, counts


def find_special_spans(const uint8_t[::1] data, needles):
    """``(start, end, index)`` of each special token (``needles``, bytes) in
    ``data``: the leftmost first, the longest at one position; found without
    the GIL, so threads pre-tokenizing chunks search them in parallel."""
    cdef tuple held = tuple(needles)    # our own references while the GIL is released
    cdef Py_ssize_t n = data.shape[0]
    cdef const uint8_t* s = &data[0] if n > 0 else NULL
    cdef Needles found
    cdef Py_ssize_t j
    cdef int64_t count = 0
    cdef int64_t* spans = NULL          # start, end, index: three per span
    cdef int status
    needles_point_at(&found, held)
    try:
        with nogil:
            status = find_spans(&found, s, n, &spans, &count)
        if status < 0:
            raise MemoryError()
        return [(spans[3 * j], spans[3 * j + 1], spans[3 * j + 2]) for j in range(count)]
    finally:
        needles_free(&found)
        mem_free(spans)


def first_invalid_utf8(const uint8_t[::1] data):
    """The offset of the first byte that makes ``data`` invalid UTF-8 (as Python's
    strict decoder judges: no overlong forms, surrogates or code points past
    U+10FFFF), or -1 if it is valid. Runs without the GIL, and makes no str."""
    cdef Py_ssize_t n = data.shape[0]
    cdef Py_ssize_t bad
    if n == 0:
        return -1
    with nogil:
        bad = c_first_invalid_utf8(&data[0], n)
    return bad


def hash_pieces(const uint8_t[::1] data, const offset_t[::1] offsets):
    """FNV-1a (64-bit) of each piece ``data[offsets[i]:offsets[i + 1]]``: the same on
    every machine and Python version (unlike ``hash``), for bucketing pre-tokens."""
    check_offsets(offsets, -1, data.shape[0], "pieces")
    cdef Py_ssize_t n = offsets.shape[0] - 1 if offsets.shape[0] > 0 else 0
    cdef Py_ssize_t i
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] hashes = out
    cdef const uint8_t* s = &data[0] if data.shape[0] > 0 else NULL
    with nogil:
        for i in range(n):
            hashes[i] = hash_bytes(s + offsets[i], offsets[i + 1] - offsets[i])
    return out
