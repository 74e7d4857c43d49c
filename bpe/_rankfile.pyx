"""tiktoken rank files (``<base64 token> <rank>`` per line) parsed into flat arrays.

Why
---
Read in Python (split each line, decode its base64, convert its rank, build a
dict), o200k's 200 000 lines take 0.2 s: most of what a fresh process pays to
load a shipped vocabulary, where tiktoken pays 0.3 s for all of it. One pass
over the bytes here takes a few milliseconds.

Only the shape tiktoken writes is read here: each line is standard base64 (4k
characters, ``=`` padding only at its end, unused low bits zero), one space and
a rank of ASCII digits, ending in ``\\n`` (the last line may lack it). On any
other line the parser gives up and returns None, and the caller reads the file
with ``bpe.formats.rankfile.read_tiktoken_ranks``, which accepts what Python accepts and
names the line of any error. So this parser can only be faster, never
different. A token given twice is an error there, so it makes this parser give
up too.
"""
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp

from bpe._bytestable cimport hash_bytes
from bpe._memory cimport mem_calloc, mem_free

import numpy as np

# A rank has at most this many digits here (it then fits an int64 with room to spare).
cdef int64_t MAX_RANK_DIGITS = 18

cdef uint8_t NOT_BASE64 = 0xFF
cdef uint8_t PAD = 0xFE
cdef uint8_t[256] SEXTET          # the 6-bit value of each base64 character


cdef void _fill_sextets() noexcept:
    cdef int c
    for c in range(256):
        SEXTET[c] = NOT_BASE64
    for c in range(26):
        SEXTET[ord("A") + c] = c
        SEXTET[ord("a") + c] = 26 + c
    for c in range(10):
        SEXTET[ord("0") + c] = 52 + c
    SEXTET[ord("+")] = 62
    SEXTET[ord("/")] = 63
    SEXTET[ord("=")] = PAD


_fill_sextets()


cdef int64_t _decode(const uint8_t* text, int64_t n, uint8_t* out) noexcept nogil:
    """The bytes of base64 ``text[:n]`` written to ``out``: how many, or -1 if it is
    not in the canonical shape (see the module's docstring)."""
    cdef int64_t i, written = 0
    cdef uint8_t a, b, c, d
    if n == 0 or n % 4 != 0:
        return -1
    for i in range(0, n, 4):
        a = SEXTET[text[i]]
        b = SEXTET[text[i + 1]]
        c = SEXTET[text[i + 2]]
        d = SEXTET[text[i + 3]]
        if a >= 64 or b >= 64:
            return -1
        out[written] = (a << 2) | (b >> 4)
        written += 1
        if c == PAD:                     # "xx==": one byte, and the quartet must be the last
            if d != PAD or i + 4 != n or (b & 0x0F) != 0:
                return -1
            return written
        if c >= 64:
            return -1
        out[written] = ((b & 0x0F) << 4) | (c >> 2)
        written += 1
        if d == PAD:                     # "xxx=": two bytes
            if i + 4 != n or (c & 0x03) != 0:
                return -1
            return written
        if d >= 64:
            return -1
        out[written] = ((c & 0x03) << 6) | d
        written += 1
    return written


cdef int64_t _rank(const uint8_t* text, int64_t n) noexcept nogil:
    """The rank written in ASCII digits ``text[:n]``, or -1 if it is not one."""
    cdef int64_t i, rank = 0
    if n < 1 or n > MAX_RANK_DIGITS:
        return -1
    for i in range(n):
        if not 48 <= text[i] <= 57:
            return -1
        rank = rank * 10 + (text[i] - 48)
    return rank


cdef int _has_duplicate(const uint8_t* data, const int64_t* offsets, int64_t n) noexcept nogil:
    """1 if two of the ``n`` tokens are equal, 0 if not, -1 when out of memory."""
    cdef int64_t slots = 16, i, length
    cdef uint64_t at
    cdef uint32_t other
    while slots < 2 * n:
        slots *= 2
    cdef uint32_t* table = <uint32_t*>mem_calloc(slots, sizeof(uint32_t))   # token index + 1
    if table == NULL:
        return -1
    for i in range(n):
        length = offsets[i + 1] - offsets[i]
        at = hash_bytes(data + offsets[i], length) & <uint64_t>(slots - 1)
        while table[at] != 0:
            other = table[at] - 1
            if (offsets[other + 1] - offsets[other] == length
                    and memcmp(data + offsets[other], data + offsets[i], length) == 0):
                mem_free(table)
                return 1
            at = (at + 1) & <uint64_t>(slots - 1)
        table[at] = <uint32_t>(i + 1)
    mem_free(table)
    return 0


def parse_rank_lines(const uint8_t[::1] raw):
    """``(token_data, token_offsets, ranks)`` of a rank file's bytes, in file order:
    line i's token is ``token_data[token_offsets[i]:token_offsets[i + 1]]`` (uint8,
    int64 offsets) and its rank ``ranks[i]`` (int64). None if any line is not in
    the canonical shape, or a token is given twice."""
    cdef int64_t size = raw.shape[0]
    cdef int64_t n_lines = 0, i, at = 0, line_end, space, written, rank, line = 0
    cdef int duplicate = 0
    cdef const uint8_t* text = &raw[0] if size > 0 else NULL
    for i in range(size):
        if text[i] == 10:
            n_lines += 1
    if size > 0 and text[size - 1] != 10:
        n_lines += 1                      # a last line without its newline
    if n_lines >= 0xFFFFFFFF:             # token indices must fit _has_duplicate's table
        return None
    token_data = np.empty(size * 3 // 4 + 3, dtype=np.uint8)
    token_offsets = np.zeros(n_lines + 1, dtype=np.int64)
    ranks = np.empty(n_lines, dtype=np.int64)
    cdef uint8_t[::1] data_view = token_data
    cdef int64_t[::1] offset_view = token_offsets
    cdef int64_t[::1] rank_view = ranks
    with nogil:
        while at < size:
            line_end = at
            while line_end < size and text[line_end] != 10:
                line_end += 1
            space = at
            while space < line_end and text[space] != 32:
                space += 1
            written = _decode(text + at, space - at, &data_view[0] + offset_view[line])
            rank = _rank(text + space + 1, line_end - space - 1)
            if written < 0 or rank < 0:
                break
            offset_view[line + 1] = offset_view[line] + written
            rank_view[line] = rank
            line += 1
            at = line_end + 1
        if line == n_lines:
            duplicate = _has_duplicate(&data_view[0], &offset_view[0], n_lines)
    if duplicate < 0:
        raise MemoryError()
    if line != n_lines or duplicate:
        return None
    return token_data[:token_offsets[n_lines]], token_offsets, ranks
