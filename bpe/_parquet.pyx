"""Parquet's encodings of a text column, decoded without the GIL.

Why
---
pyarrow decodes a column a page at a time, and decompresses each page whole
before it hands out a row: with pyarrow's writer, a page ends only every
1,024 rows, so a row group of long documents is one page (356 MB of text in
code_linux's largest). ``bpe.corpus.parquet`` streams a page's values
instead, a block at a time, and these kernels do what must go value by
value: PLAIN byte arrays (a 4-byte length before each value) moved end to end
in place (``plain_values``), the RLE / bit-packed hybrid of definition levels
and dictionary indices (``hybrid``), and a dictionary's values gathered by
index (``gather_plain``).
"""
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memmove

import numpy as np


cdef inline uint32_t read_u32(const uint8_t* p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


def plain_values(uint8_t[::1] block, Py_ssize_t start, Py_ssize_t end, Py_ssize_t written,
                 int64_t[::1] offsets, Py_ssize_t first, Py_ssize_t most):
    """The PLAIN byte arrays in ``block[start:end]``, each a 4-byte
    little-endian length and its bytes: at most ``most`` whole ones (and at
    most what ``offsets`` holds past ``first``), their bytes moved down to
    lie end to end from ``block[written]`` on: ``offsets[first]`` is set to
    ``written``, and the end of each value to ``offsets[first + 1 + k]``. Returns ``(n, start,
    written)`` after them: a value cut off at ``end`` starts at the ``start``
    returned, untouched."""
    cdef Py_ssize_t n = 0
    cdef uint32_t length
    cdef uint8_t* p
    if not 0 <= written <= start <= end <= block.shape[0]:
        raise ValueError(f"written {written}, start {start}, end {end} in a block of {block.shape[0]} bytes")
    if not 0 <= first < offsets.shape[0]:
        raise ValueError(f"offsets of {offsets.shape[0]} items past item {first}")
    most = min(most, offsets.shape[0] - 1 - first)
    offsets[first] = written
    if end == start or most <= 0:
        return 0, start, written
    p = &block[0]
    with nogil:
        while n < most and end - start >= 4:
            length = read_u32(p + start)
            if length > <uint64_t>(end - start - 4):
                break
            memmove(p + written, p + start + 4, length)
            start += 4 + length
            written += length
            n += 1
            offsets[first + n] = written
    return n, start, written


def hybrid(const uint8_t[::1] data, int bit_width, Py_ssize_t count, uint32_t[::1] out):
    """``count`` values of the RLE / bit-packed hybrid (Parquet's definition
    levels and dictionary indices) of ``bit_width`` bits from ``data`` into
    ``out``; returns the bytes read, or -1 when ``data`` ends first (or a run's
    value has more bits than ``bit_width``)."""
    if bit_width < 0 or bit_width > 32:
        raise ValueError(f"a bit width of {bit_width}")
    if count < 0 or count > out.shape[0]:
        raise ValueError(f"{count} values into {out.shape[0]}")
    if count == 0:
        return 0
    if data.shape[0] == 0:
        return -1
    cdef Py_ssize_t used
    with nogil:
        used = decode_hybrid(&data[0], data.shape[0], bit_width, count, &out[0])
    return used


cdef Py_ssize_t decode_hybrid(const uint8_t* data, Py_ssize_t size, int bit_width, Py_ssize_t count,
                              uint32_t* out) noexcept nogil:
    cdef Py_ssize_t pos = 0, done = 0, k, n, take, bit
    cdef Py_ssize_t byte_width = (bit_width + 7) // 8
    cdef uint64_t header, word
    cdef uint32_t value, mask = <uint32_t>((1ULL << bit_width) - 1)
    cdef int shift
    while done < count:
        header = 0                            # a ULEB128 varint
        shift = 0
        while True:
            if pos >= size or shift > 35:
                return -1
            header |= <uint64_t>(data[pos] & 0x7F) << shift
            shift += 7
            pos += 1
            if not (data[pos - 1] & 0x80):
                break
        if header & 1:                        # bit-packed: groups of 8 values, lowest bits first
            n = <Py_ssize_t>(header >> 1) * 8
            take = min(n, count - done)
            # The last run may end with the last value's byte, short of the rest
            # of its last group (pyarrow reads such files); not short of more.
            if pos + (take * bit_width + 7) // 8 > size or \
                    (pos + (n // 8) * bit_width > size and n - take >= 8):
                return -1
            for k in range(take):
                bit = k * bit_width
                word = 0
                for shift in range(<int>min(5, size - (pos + bit // 8))):
                    word |= <uint64_t>data[pos + bit // 8 + shift] << (8 * shift)
                out[done + k] = <uint32_t>(word >> (bit % 8)) & mask
            pos = min(pos + (n // 8) * bit_width, size)
        else:                                 # a run of one value
            n = <Py_ssize_t>(header >> 1)
            if pos + byte_width > size:
                return -1
            value = 0
            for k in range(byte_width):
                value |= <uint32_t>data[pos + k] << (8 * k)
            if value & ~mask:                 # more bits than the width: damage, not a value
                return -1
            pos += byte_width
            take = min(n, count - done)
            for k in range(take):
                out[done + k] = value & mask
        done += take
    return pos


def gather_plain(const uint8_t[::1] data, const int64_t[::1] offsets, const uint32_t[::1] indices,
                 Py_ssize_t k, int64_t within, uint8_t[::1] out):
    """The dictionary's values (value v at ``data[offsets[v]:offsets[v + 1]]``)
    at ``indices[k:]``, written PLAIN (each a 4-byte little-endian length, then
    its bytes) into ``out`` until it is full, from byte ``within`` of the first
    one's PLAIN form on: so a page's values stream out a block at a time.
    Every index must be below ``len(offsets) - 1`` (the caller checks them
    all at once). Returns ``(k, within, written)``: where the next call goes
    on, and the bytes written."""
    cdef Py_ssize_t n = indices.shape[0], size = out.shape[0], written = 0, take
    cdef int64_t length, start
    cdef uint8_t head[4]
    cdef uint32_t index
    if k < 0 or within < 0:
        raise ValueError("a negative place")
    with nogil:
        while k < n and written < size:
            index = indices[k]
            start = offsets[index]
            length = offsets[index + 1] - start
            if within < 4:
                head[0] = length & 0xFF
                head[1] = (length >> 8) & 0xFF
                head[2] = (length >> 16) & 0xFF
                head[3] = (length >> 24) & 0xFF
                take = min(4 - within, size - written)
                memcpy(&out[written], head + within, take)
                written += take
                within += take
            if within >= 4 and written < size:
                take = min(length - (within - 4), size - written)
                if take:
                    memcpy(&out[written], &data[start + within - 4], take)
                written += take
                within += take
            if within == 4 + length:
                k += 1
                within = 0
    return k, within, written
