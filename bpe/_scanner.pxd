from libc.stdint cimport intptr_t, uint8_t, uint32_t, uint64_t, uintptr_t

from bpe._bytestable cimport BytesTable
from bpe._memory cimport prefetch
from bpe._shortcache cimport ShortCache


cdef extern from "csrc/classify.h":
    ctypedef struct ClassMasks:
        uint64_t upper
        uint64_t lower
        uint64_t digit
        uint64_t space
        uint64_t blank
        uint64_t newline
        uint64_t quote
        uint64_t slash
        uint64_t high
    ctypedef void (*classify_fn)(const uint8_t* p, ClassMasks* out) noexcept nogil
    ctypedef intptr_t (*spread_fn)(uint64_t bits, intptr_t base, intptr_t* out) noexcept nogil
    int trailing_zeros(uint64_t x) noexcept nogil


cdef enum:
    FILL_SLACK = 72          # what scanner_fill may write past ``room``: a window's 63 starts, and 8 more
    READ_AHEAD = 512         # how far ahead of its window a scan asks for the text (see read_ahead)

cdef enum:
    PATTERN_GPT2 = 0
    PATTERN_CL100K = 1
    PATTERN_O200K = 2
    PATTERN_LLAMA3 = 3       # cl100k's older spelling, as Llama 3 ships it (see _scanner.pyx)
    PATTERN_QWEN2 = 4        # Llama 3's with one digit a pre-token
    PATTERN_DEEPSEEK_V3 = 5  # three Splits in turn (bpe.patterns.DEEPSEEK_V3_SPLITS)
    PATTERN_METASPACE = 6    # SentencePiece's words (a run of U+2581 and what follows), tabs and line feeds
    N_PATTERNS = 7


# A scan of valid UTF-8 ``s[:n]`` with a built-in pattern. ``classify`` makes
# the masks of 64 bytes (see bpe/csrc/classify.h), or is NULL when the byte-by-byte
# scanner alone runs. ``starts`` holds the pre-token starts found at once in
# the 64 bytes from ``window`` (bit k for byte window + k); a pre-token that
# starts at a bit of ``risky_starts``, or ends at one of ``risky_ends``, is
# left to the byte-by-byte scanner (contractions).
cdef struct Scanner:
    const uint8_t* s
    Py_ssize_t n
    int pattern
    classify_fn classify
    spread_fn spread
    Py_ssize_t window
    uint64_t starts
    uint64_t risky_starts
    uint64_t risky_ends
    # metaspace only: the code points that stand alone (a bit each, as
    # ``holds_any``'s bitmap), in place of tabs and line feeds; NULL for those.
    # With them, ``joined`` (or NULL): bit 128 * a + b for the ASCII characters
    # a and b that may stay side by side; the text is cut between any others.
    const uint8_t* alone
    const uint8_t* joined
    # With them, ``pair_cuts`` (or NULL: no windows): a byte for 128 * a + b,
    # 1 where the text is cut between the ASCII characters a and b
    # (``metaspace_pair_cuts``), for windows of ASCII text; and no window is
    # tried before ``plain_until`` (just past a non-ASCII byte a window met).
    const uint8_t* pair_cuts
    Py_ssize_t plain_until
    # With them, ``held`` (or NULL): a word for each code point of the Basic
    # Multilingual Plane, not 0 where the caller takes that character itself
    # (``EncodeKernel``'s ``alone_ids``); ``scanner_fill`` ends a batch before it.
    const uint32_t* held


cdef void scanner_init(Scanner* sc, int pattern, const uint8_t* s, Py_ssize_t n) noexcept nogil

# Whether a str's UTF-8 is written with AVX-512 (where the SIMD path is its).
cdef bint wide_utf8() noexcept nogil

# The end of the pre-token at ``i`` when ``scanner_next`` cannot read it from
# the window of starts it holds: a new window, or the byte-by-byte scanner.
cdef Py_ssize_t scanner_next_slow(Scanner* sc, Py_ssize_t i) noexcept nogil


cdef inline uint64_t window_after(const Scanner* sc, Py_ssize_t i) noexcept nogil:
    """The window's starts after the start ``i`` (bit k: byte window + k), or none
    where the window does not decide the pre-token at ``i`` (``i`` outside it, or
    a start a contraction may concern)."""
    cdef Py_ssize_t offset = i - sc.window
    if 0 <= offset < 63 and not ((sc.risky_starts >> offset) & 1):
        return sc.starts & (~(<uint64_t>0) << (offset + 1))
    return 0


cdef inline Py_ssize_t scanner_next(Scanner* sc, Py_ssize_t i) noexcept nogil:
    """The end of the pre-token that starts at byte ``i``: the window's next start
    where it has one (inline here, in the caller's loop: most pre-tokens end
    there), else ``scanner_next_slow``'s answer."""
    cdef uint64_t after = window_after(sc, i)
    cdef int end
    if after:
        end = trailing_zeros(after)
        if not ((sc.risky_ends >> end) & 1):
            return sc.window + end
    return scanner_next_slow(sc, i)

# The ends of the pre-tokens from the start ``i`` on, at least ``room`` of them
# unless the text ends first, written to ``ends`` (which holds room +
# FILL_SLACK): a window's pre-tokens at once, without a branch per pre-token.
# Returns how many; each is what ``scanner_next`` would have returned in turn.
cdef Py_ssize_t scanner_fill(Scanner* sc, Py_ssize_t i, Py_ssize_t* ends, Py_ssize_t room) noexcept nogil

# Before a scan of the UTF-8 ``s[:n]``: a valid pattern id, and the tables built.
cdef int check_pattern(int pattern, const uint8_t* s, Py_ssize_t n) except -1

cdef class Interner:
    cdef BytesTable table
    cdef ShortCache front     # short pre-tokens -> their entry in ``table``


# Reading ahead. A scan reads its text once, in order, and spends some 7
# cycles a pre-token on it; yet a warm encode of 10 MB waited on the text's
# lines more than on anything else: a text of a few KB (a document, a str of
# its own) starts on a page the hardware has not seen coming, and its
# prefetchers stop at every 4 KiB page. So each window asks for the line
# READ_AHEAD bytes past it (``load_window``), and a caller with texts in turn
# asks for the next one's first READ_AHEAD bytes as it starts one
# (``read_ahead``): one call over 10 MB of code went 10-16 % faster, one over
# prose 6-12 %. A prefetch never
# faults, so one past a text's end is harmless; the address is made as an
# integer, not a pointer past it.
cdef inline void read_ahead(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """Ask for the first READ_AHEAD bytes of ``s[:n]`` (which a scan reads next)."""
    cdef Py_ssize_t k = 0
    while k < n and k < READ_AHEAD:
        prefetch(<const void*>(<uintptr_t>s + k))
        k += 64


cdef inline uint32_t lead_point(const uint8_t* s, Py_ssize_t i, int* width) noexcept nogil:
    """The code point of the character of several bytes that starts at byte
    ``i`` of valid UTF-8 (``s[i]`` is 0xC0 or more), and its width."""
    cdef uint32_t b = s[i]
    if b < 0xE0:
        width[0] = 2
        return ((b & 0x1F) << 6) | (s[i + 1] & 0x3F)
    if b < 0xF0:
        width[0] = 3
        return ((b & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F)
    width[0] = 4
    return ((b & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F)
