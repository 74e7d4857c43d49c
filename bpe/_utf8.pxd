# A str's text as UTF-8, read straight from its PEP 393 storage without the
# GIL: the caller holds a reference, and a str never changes. Lone surrogates
# (a str may hold them; UTF-8 may not) become U+FFFD and a high surrogate
# followed by a low one becomes the character they encode, as tiktoken does
# with ``encode("utf-16", "surrogatepass").decode("utf-16", "replace")``.
#
# One loop per storage width (a fused type), so the width is not tested per
# character, and one pass: the output is sized by ``utf8_bound``, not measured.
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t

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


cdef inline uint8_t* write_utf8_of(const code_unit* data, Py_ssize_t n, uint8_t* out) noexcept nogil:
    cdef Py_ssize_t i = 0
    cdef uint32_t c
    while i < n:
        if data[i] < 0x80:
            out[0] = <uint8_t>data[i]
            out += 1
            i += 1
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


cdef inline uint8_t* write_utf8(int kind, const void* data, Py_ssize_t n, uint8_t* out) noexcept nogil:
    """Write the UTF-8 of a str's ``n`` code points at ``out``; returns the end."""
    if kind == 1:
        return write_utf8_of(<const uint8_t*>data, n, out)
    if kind == 2:
        return write_utf8_of(<const uint16_t*>data, n, out)
    return write_utf8_of(<const uint32_t*>data, n, out)
