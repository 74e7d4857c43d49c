# UTF-8 in the kernels: checking it (``first_invalid_utf8``), and writing it.
#
# A str's text as UTF-8, read straight from its PEP 393 storage without the
# GIL: the caller holds a reference, and a str never changes. Lone surrogates
# (a str may hold them; UTF-8 may not) become U+FFFD and a high surrogate
# followed by a low one becomes the character they encode, as tiktoken does
# with ``encode("utf-16", "surrogatepass").decode("utf-16", "replace")``.
#
# One loop per storage width (a fused type), so the width is not tested per
# character, and one pass: the output is sized by ``utf8_bound``, not measured.
# Runs of ASCII go 16 code units at a time (``ascii_blocks``): most text that
# is not ASCII is ASCII but for a few characters (a name, a dash, a quote
# mark), yet its whole str is stored two or four bytes a code point, and a
# loop of one code unit a step spent a tenth of a warm encode of prose there.
# Where the CPU has AVX-512 and the scanners use it (``bpe/_scanner.pyx``'s
# SIMD path), any 16 code units go at once (``wide_blocks``).
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy


cdef extern from "csrc/utf8.h":
    size_t ascii_blocks_u8 "utf8_ascii_blocks_u8" (const uint8_t* data, size_t n, uint8_t* out) noexcept nogil
    size_t ascii_blocks_u16 "utf8_ascii_blocks_u16" (const uint16_t* data, size_t n, uint8_t* out) noexcept nogil
    size_t ascii_blocks_u32 "utf8_ascii_blocks_u32" (const uint32_t* data, size_t n, uint8_t* out) noexcept nogil
    bint wide_supported "utf8_wide_supported" () noexcept nogil
    size_t wide_blocks_u8 "utf8_wide_blocks_u8" (const uint8_t* data, size_t n, uint8_t** out) noexcept nogil
    size_t wide_blocks_u16 "utf8_wide_blocks_u16" (const uint16_t* data, size_t n, uint8_t** out) noexcept nogil
    size_t wide_blocks_u32 "utf8_wide_blocks_u32" (const uint32_t* data, size_t n, uint8_t** out) noexcept nogil
    enum: UTF8_WIDE_SLACK

cdef inline bint all_ascii(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """Whether ``s[:n]`` is all ASCII: eight bytes at a time."""
    cdef Py_ssize_t i = 0
    cdef uint64_t word
    while i + 8 <= n:
        memcpy(&word, s + i, 8)
        if word & 0x8080808080808080ULL:
            return False
        i += 8
    while i < n:
        if s[i] >= 0x80:
            return False
        i += 1
    return True


ctypedef fused code_unit:
    uint8_t
    uint16_t
    uint32_t


cdef inline uint32_t scalar_value(const code_unit* data, Py_ssize_t n, Py_ssize_t* i) noexcept nogil:
    """The character at ``i`` (not ASCII), moving ``i`` past it: a surrogate
    pair is one character, a lone surrogate is U+FFFD."""
    cdef uint32_t c = data[i[0]]
    cdef uint32_t low
    i[0] += 1
    if c < 0xD800 or c > 0xDFFF:
        return c
    if c <= 0xDBFF and i[0] < n:
        low = data[i[0]]
        if 0xDC00 <= low <= 0xDFFF:
            i[0] += 1
            return 0x10000 + ((c - 0xD800) << 10) + (low - 0xDC00)
    return 0xFFFD


cdef inline size_t ascii_blocks(const code_unit* data, Py_ssize_t n, uint8_t* out) noexcept nogil:
    """How many code units from ``data`` (of ``n``) were written to ``out``: the
    whole blocks of 16 ASCII ones there (none where the first block is not)."""
    if code_unit is uint8_t:
        return ascii_blocks_u8(data, n, out)
    elif code_unit is uint16_t:
        return ascii_blocks_u16(data, n, out)
    else:
        return ascii_blocks_u32(data, n, out)


cdef inline size_t wide_blocks(const code_unit* data, Py_ssize_t n, uint8_t** out) noexcept nogil:
    """How many code units from ``data`` (of ``n``) were written at ``out[0]``,
    moved past them: whole blocks of 16, up to one holding a surrogate
    (``csrc/utf8.h``, AVX-512)."""
    if code_unit is uint8_t:
        return wide_blocks_u8(data, n, out)
    elif code_unit is uint16_t:
        return wide_blocks_u16(data, n, out)
    else:
        return wide_blocks_u32(data, n, out)


cdef inline uint8_t* write_utf8_of(const code_unit* data, Py_ssize_t n, uint8_t* out, bint wide) noexcept nogil:
    cdef Py_ssize_t i = 0
    cdef Py_ssize_t copied
    cdef uint32_t c
    while i < n:
        if wide:
            i += <Py_ssize_t>wide_blocks(data + i, n - i, &out)
            if i == n:
                break
        if data[i] < 0x80:
            # Blocks are tried only at an ASCII code unit, so text with none
            # (Chinese, say) pays nothing for them.
            copied = <Py_ssize_t>ascii_blocks(data + i, n - i, out)
            if copied == 0:
                out[0] = <uint8_t>data[i]
                copied = 1
            out += copied
            i += copied
            continue
        c = scalar_value(data, n, &i)
        if c < 0x800:
            out[0] = <uint8_t>(0xC0 | (c >> 6))
            out[1] = <uint8_t>(0x80 | (c & 0x3F))
            out += 2
        elif c < 0x10000:
            out[0] = <uint8_t>(0xE0 | (c >> 12))
            out[1] = <uint8_t>(0x80 | ((c >> 6) & 0x3F))
            out[2] = <uint8_t>(0x80 | (c & 0x3F))
            out += 3
        else:
            out[0] = <uint8_t>(0xF0 | (c >> 18))
            out[1] = <uint8_t>(0x80 | ((c >> 12) & 0x3F))
            out[2] = <uint8_t>(0x80 | ((c >> 6) & 0x3F))
            out[3] = <uint8_t>(0x80 | (c & 0x3F))
            out += 4
    return out


cdef inline int64_t utf8_bound(int kind, Py_ssize_t n) noexcept nogil:
    """The most bytes the UTF-8 of ``n`` code points of ``kind`` bytes can take:
    two for U+0080..U+00FF, three for the rest of the BMP (a surrogate pair,
    two code points, takes four), four for the rest."""
    return n * (kind + 1 if kind < 4 else 4)


cdef inline uint8_t* write_utf8(int kind, const void* data, Py_ssize_t n, uint8_t* out, bint wide) noexcept nogil:
    """Write the UTF-8 of a str's ``n`` code points at ``out``; returns the end.
    ``wide``: 16 code units at a time with AVX-512 (``utf8_wide_supported``),
    which writes up to UTF8_WIDE_SLACK bytes past the end."""
    if kind == 1:
        return write_utf8_of(<const uint8_t*>data, n, out, wide)
    if kind == 2:
        return write_utf8_of(<const uint16_t*>data, n, out, wide)
    return write_utf8_of(<const uint32_t*>data, n, out, wide)


cdef inline Py_ssize_t first_invalid_utf8(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """The offset of the first byte that makes ``s[:n]`` invalid UTF-8 as Python's
    strict decoder judges it (no overlong forms, surrogates or code points past
    U+10FFFF), or -1 if it is valid. Runs of ASCII, most of nearly any
    corpus, are read eight bytes at a time (a byte at a time, checking a
    chunk for ``encode_file`` cost a tenth of its encoding)."""
    cdef Py_ssize_t i = 0
    cdef Py_ssize_t k
    cdef uint8_t b
    cdef int need
    cdef uint8_t low, high
    cdef uint64_t word
    while i < n:
        b = s[i]
        if b < 0x80:
            i += 1
            while i + 8 <= n:
                memcpy(&word, s + i, 8)
                if word & 0x8080808080808080ULL:
                    break
                i += 8
            continue
        # The allowed range of the second byte depends on the first (RFC 3629).
        low = 0x80
        high = 0xBF
        if 0xC2 <= b <= 0xDF:
            need = 1
        elif b == 0xE0:
            need = 2
            low = 0xA0
        elif 0xE1 <= b <= 0xEC or b == 0xEE or b == 0xEF:
            need = 2
        elif b == 0xED:
            need = 2
            high = 0x9F
        elif b == 0xF0:
            need = 3
            low = 0x90
        elif 0xF1 <= b <= 0xF3:
            need = 3
        elif b == 0xF4:
            need = 3
            high = 0x8F
        else:
            return i
        if i + 1 >= n or not (low <= s[i + 1] <= high):
            return i
        for k in range(2, need + 1):
            if i + k >= n or (s[i + k] & 0xC0) != 0x80:
                return i
        i += need + 1
    return -1
