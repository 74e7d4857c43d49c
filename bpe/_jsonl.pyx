"""The text field of each record of JSON Lines, gathered into one UTF-8 buffer.

Why
---
Encoding a ``.jsonl`` corpus, parsing each line into a dict and taking its
text held the GIL for half as long as the kernels took to encode it: with
two workers, the records of a JSON Lines file encoded at half the speed of
the same documents in a ``.txt``. Here a worker validates each line and
copies the field's text, unescaped, into one buffer without the GIL, and the
kernel encodes that buffer as it is (``EncodeKernel.encode_texts``).

Only what is certain is read here: each line must be one JSON object (RFC 8259:
valid UTF-8, no raw control character in a string, numbers in JSON's grammar,
no NaN or Infinity) and hold a string at the field. On any other non-blank
line, ``text_fields`` gives up and returns None, and the caller parses the
block in Python (``bpe.corpus.records.Records.texts``), which accepts what Python's
``json`` accepts and names the line of any error. So this reader can only be
faster, never different. As ``json`` does, it takes the last of members with
the same key, joins a ``\\uD83D\\uDE00`` pair of escapes into one character,
and keeps a lone surrogate escape, which the encoder reads as U+FFFD: that
is what it writes.
"""
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memchr, memcmp, memcpy

from bpe._memory cimport mem_alloc, mem_free

import numpy as np

# Nesting deeper than this gives up (Python's parser would recurse as deep).
cdef int MAX_DEPTH = 512


cdef inline const uint8_t* skip_space(const uint8_t* p, const uint8_t* end) noexcept nogil:
    while p < end and (p[0] == 0x20 or p[0] == 0x09 or p[0] == 0x0D or p[0] == 0x0A):
        p += 1
    return p


cdef uint64_t ONES = 0x0101010101010101ULL
cdef uint64_t HIGHS = 0x8080808080808080ULL


cdef extern from "csrc/portable.h":
    int bpe_ctz64(uint64_t x) nogil

# What each escape \c stands for (0: not an escape JSON has; \u is read apart).
cdef uint8_t[256] ESCAPED
ESCAPED[:] = [0] * 256
for _c, _value in zip(b'"\\/bfnrt', b'"\\/\b\f\n\r\t'):
    ESCAPED[_c] = _value
del _c, _value


cdef inline uint64_t special_bytes(uint64_t word) noexcept nogil:
    """The high bit of each byte of ``word`` (read little-endian) that is a
    quote, a backslash, below 0x20 or not ASCII, exact from the lowest such
    byte up (the classic SWAR tests: a byte below n sets its high bit in
    ``x - n * ONES`` where it was clear in ``x``, a borrow only ever running
    upwards; a byte equal to c is a byte of ``x ^ c * ONES`` below 1)."""
    cdef uint64_t quote = word ^ (ONES * 0x22)
    cdef uint64_t backslash = word ^ (ONES * 0x5C)
    return ((word - ONES * 0x20) | (quote - ONES) | (backslash - ONES) | word) & HIGHS


cdef inline int hex_value(uint8_t c) noexcept nogil:
    if 0x30 <= c <= 0x39:
        return c - 0x30
    if 0x61 <= c <= 0x66:
        return c - 0x61 + 10
    if 0x41 <= c <= 0x46:
        return c - 0x41 + 10
    return -1


cdef inline int read_hex4(const uint8_t* p) noexcept nogil:
    """The code unit of the 4 hex digits at ``p``, or -1."""
    cdef int value = 0, k, digit
    for k in range(4):
        digit = hex_value(p[k])
        if digit < 0:
            return -1
        value = value * 16 + digit
    return value


cdef inline uint8_t* put_code_point(uint8_t* out, int code_point) noexcept nogil:
    if code_point < 0x80:
        out[0] = <uint8_t>code_point
        return out + 1
    if code_point < 0x800:
        out[0] = <uint8_t>(0xC0 | (code_point >> 6))
        out[1] = <uint8_t>(0x80 | (code_point & 0x3F))
        return out + 2
    if code_point < 0x10000:
        out[0] = <uint8_t>(0xE0 | (code_point >> 12))
        out[1] = <uint8_t>(0x80 | ((code_point >> 6) & 0x3F))
        out[2] = <uint8_t>(0x80 | (code_point & 0x3F))
        return out + 3
    out[0] = <uint8_t>(0xF0 | (code_point >> 18))
    out[1] = <uint8_t>(0x80 | ((code_point >> 12) & 0x3F))
    out[2] = <uint8_t>(0x80 | ((code_point >> 6) & 0x3F))
    out[3] = <uint8_t>(0x80 | (code_point & 0x3F))
    return out + 4


cdef inline int utf8_length(const uint8_t* p, const uint8_t* end) noexcept nogil:
    """The length of the valid UTF-8 sequence of 2-4 bytes at ``p``, or 0."""
    cdef uint8_t lead = p[0]
    cdef uint8_t low = 0x80, high = 0xBF
    cdef int n, k
    if 0xC2 <= lead <= 0xDF:
        n = 2
    elif 0xE0 <= lead <= 0xEF:
        n = 3
        if lead == 0xE0:
            low = 0xA0
        elif lead == 0xED:          # no encoded surrogates
            high = 0x9F
    elif 0xF0 <= lead <= 0xF4:
        n = 4
        if lead == 0xF0:
            low = 0x90
        elif lead == 0xF4:
            high = 0x8F
    else:
        return 0
    if end - p < n or not (low <= p[1] <= high):
        return 0
    for k in range(2, n):
        if not (0x80 <= p[k] <= 0xBF):
            return 0
    return n


cdef const uint8_t* read_string(const uint8_t* p, const uint8_t* end, uint8_t* out,
                                int64_t* out_length) noexcept nogil:
    """The string whose opening quote is at ``p``: the position after its closing
    quote, or NULL if it is not valid JSON. With ``out``, its text is written
    there as UTF-8 and its length set: never longer than the JSON of it, and
    ``out`` must hold as many bytes as are left in the input."""
    cdef int64_t w = 0                      # bytes of text so far
    cdef int unit, low, n
    cdef uint64_t word
    p += 1
    while True:
        # Eight bytes at a time while none is a quote, a backslash, a control
        # character or not ASCII: most of a text, at a few cycles per word.
        # Each word is stored whole, then the part of it that is plain text
        # kept (``w`` never runs ahead of ``p``, so eight bytes always fit).
        while end - p >= 8:
            memcpy(&word, p, 8)
            if out != NULL:
                memcpy(out + w, &word, 8)
            word = special_bytes(word)
            if word != 0:
                n = bpe_ctz64(word) >> 3
                p += n
                w += n
                break
            p += 8
            w += 8
        while p < end and 0x20 <= p[0] < 0x80 and p[0] != 0x22 and p[0] != 0x5C:
            if out != NULL:
                out[w] = p[0]
            w += 1
            p += 1
        if p >= end:
            return NULL
        if p[0] == 0x22:                                    # the closing quote
            if out != NULL:
                out_length[0] = w
            return p + 1
        if p[0] < 0x20:                                     # a raw control character
            return NULL
        if p[0] >= 0x80:
            n = utf8_length(p, end)
            if n == 0:
                return NULL
            if out != NULL:
                memcpy(out + w, p, n)
            w += n
            p += n
            continue
        # A backslash.
        if end - p < 2:
            return NULL
        unit = p[1]
        if unit == 0x75:                                    # \uXXXX
            if end - p < 6:
                return NULL
            unit = read_hex4(p + 2)
            if unit < 0:
                return NULL
            p += 6
            if 0xD800 <= unit <= 0xDBFF and end - p >= 6 and p[0] == 0x5C and p[1] == 0x75:
                low = read_hex4(p + 2)
                if 0xDC00 <= low <= 0xDFFF:
                    unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    p += 6
            if 0xD800 <= unit <= 0xDFFF:
                unit = 0xFFFD                               # a lone surrogate: what the encoder reads
            if out != NULL:
                w = put_code_point(out + w, unit) - out
            else:
                w += 1
            continue
        unit = ESCAPED[unit]
        if unit == 0:
            return NULL
        if out != NULL:
            out[w] = <uint8_t>unit
        w += 1
        p += 2


cdef const uint8_t* read_number(const uint8_t* p, const uint8_t* end) noexcept nogil:
    if p < end and p[0] == 0x2D:
        p += 1
    if p >= end:
        return NULL
    if p[0] == 0x30:
        p += 1
    elif 0x31 <= p[0] <= 0x39:
        while p < end and 0x30 <= p[0] <= 0x39:
            p += 1
    else:
        return NULL
    if p < end and p[0] == 0x2E:
        p += 1
        if p >= end or not (0x30 <= p[0] <= 0x39):
            return NULL
        while p < end and 0x30 <= p[0] <= 0x39:
            p += 1
    if p < end and (p[0] == 0x65 or p[0] == 0x45):
        p += 1
        if p < end and (p[0] == 0x2B or p[0] == 0x2D):
            p += 1
        if p >= end or not (0x30 <= p[0] <= 0x39):
            return NULL
        while p < end and 0x30 <= p[0] <= 0x39:
            p += 1
    return p


cdef inline const uint8_t* read_word(const uint8_t* p, const uint8_t* end, const char* word,
                                     int n) noexcept nogil:
    if end - p < n or memcmp(p, word, n) != 0:
        return NULL
    return p + n


cdef const uint8_t* read_value(const uint8_t* p, const uint8_t* end, int depth, uint8_t* scratch,
                               const uint8_t* key, int64_t key_length, const uint8_t** found,
                               uint8_t* out, int64_t* out_length) noexcept nogil:
    """The value at ``p`` (no space before it): the position after it, or NULL if
    it is not valid JSON. For an object, with ``key``, ``found`` is set to the
    value of its last member of that key (NULL if none); ``scratch`` holds a
    key's text while it is compared. With ``out``, a string value of that key
    is written there as it is read (a later one of the same key over it), so
    the text is read once, not validated and then copied."""
    cdef int64_t length = 0
    cdef const uint8_t* value
    cdef const uint8_t* member_key
    if p >= end or depth > MAX_DEPTH:
        return NULL
    if p[0] == 0x22:
        return read_string(p, end, NULL, NULL)
    if p[0] == 0x7B:                                        # {
        if found != NULL:
            found[0] = NULL
        p = skip_space(p + 1, end)
        if p < end and p[0] == 0x7D:
            return p + 1
        while True:
            if p >= end or p[0] != 0x22:
                return NULL
            member_key = p
            p = read_string(p, end, scratch if key != NULL else NULL, &length)
            if p == NULL:
                return NULL
            p = skip_space(p, end)
            if p >= end or p[0] != 0x3A:                    # :
                return NULL
            p = skip_space(p + 1, end)
            value = p
            if key != NULL and length == key_length and memcmp(scratch, key, key_length) == 0:
                found[0] = value                            # the last of the same key wins, as in json
                if out != NULL and p[0] == 0x22:
                    p = read_string(p, end, out, out_length)
                else:
                    p = read_value(p, end, depth + 1, scratch, NULL, 0, NULL, NULL, NULL)
            else:
                p = read_value(p, end, depth + 1, scratch, NULL, 0, NULL, NULL, NULL)
            if p == NULL:
                return NULL
            p = skip_space(p, end)
            if p < end and p[0] == 0x2C:                    # ,
                p = skip_space(p + 1, end)
                continue
            if p < end and p[0] == 0x7D:
                return p + 1
            return NULL
    if p[0] == 0x5B:                                        # [
        p = skip_space(p + 1, end)
        if p < end and p[0] == 0x5D:
            return p + 1
        while True:
            p = read_value(p, end, depth + 1, scratch, NULL, 0, NULL, NULL, NULL)
            if p == NULL:
                return NULL
            p = skip_space(p, end)
            if p < end and p[0] == 0x2C:
                p = skip_space(p + 1, end)
                continue
            if p < end and p[0] == 0x5D:
                return p + 1
            return NULL
    if p[0] == 0x74:
        return read_word(p, end, b"true", 4)
    if p[0] == 0x66:
        return read_word(p, end, b"false", 5)
    if p[0] == 0x6E:
        return read_word(p, end, b"null", 4)
    return read_number(p, end)


cdef int64_t line_text(const uint8_t* line, const uint8_t* end, const uint8_t** keys,
                       const int64_t* key_lengths, int n_keys, uint8_t* scratch, uint8_t* out) noexcept nogil:
    """Write the text of the line's record at the key path into ``out``: its
    length, -1 for a blank line, -2 where Python must decide."""
    cdef const uint8_t* p = skip_space(line, end)
    cdef const uint8_t* value = NULL
    cdef const uint8_t* after
    cdef int64_t length = 0
    cdef int k
    if p == end:
        return -1
    if p[0] != 0x7B:
        return -2
    for k in range(n_keys):
        # The last key's string is written as it is read (a whole line, for one key).
        after = read_value(p, end, 0, scratch, keys[k], key_lengths[k], &value,
                           out if k == n_keys - 1 else NULL, &length)
        if after == NULL or (k == 0 and skip_space(after, end) != end) or value == NULL:
            return -2
        p = value
        if k < n_keys - 1 and p[0] != 0x7B:
            return -2
    if p[0] != 0x22:
        return -2
    return length


def text_fields(const uint8_t[::1] data, tuple keys, uint8_t[::1] text=None, int64_t[::1] offsets=None):
    """``(text, offsets)`` of the JSON Lines in ``data``: the UTF-8 of each
    record's string at the path ``keys`` (UTF-8 bytes, outermost first), record
    r at ``text[offsets[r]:offsets[r + 1]]``, blank lines skipped; or None if
    any other line is not one this reader takes (see the module docstring).
    Written into ``text`` and ``offsets`` where given (at least ``len(data)``
    long, and one more than the lines: a caller reusing them spares the pages
    a fresh array faults in), and views of them returned.

    >>> text, offsets = text_fields(b'{"text": "caf\\\\u00e9"}\\n\\n{"id": 2, "text": "a\\\\nb"}\\n', (b"text",))
    >>> bytes(text).decode(), offsets.tolist()
    ('caféa\\nb', [0, 5, 8])
    >>> text_fields(b'{"text": 3}\\n', (b"text",)) is None
    True
    """
    cdef Py_ssize_t n = data.shape[0]
    cdef int n_keys = len(keys)
    cdef const uint8_t* start = &data[0] if n > 0 else NULL
    cdef const uint8_t* end = start + n
    cdef const uint8_t* line
    cdef const uint8_t* line_end
    cdef int64_t n_records = 0, written = 0, length
    cdef bint gave_up = False
    cdef int k
    cdef (const uint8_t*)[64] key_data
    cdef int64_t[64] key_lengths
    if n_keys == 0 or n_keys > 64:
        return None
    for k in range(n_keys):
        if not isinstance(keys[k], bytes):
            raise TypeError(f"key {k} is {type(keys[k]).__name__}, not bytes")
        key_data[k] = <const uint8_t*><const char*>keys[k]
        key_lengths[k] = len(keys[k])
    # One record per line at most; a line is at least "{}" or empty plus its "\n".
    if text is None:
        text = np.empty(n, dtype=np.uint8)
    if offsets is None:
        offsets = np.empty(n // 2 + 2, dtype=np.int64)
    if text.shape[0] < n or offsets.shape[0] < 1:
        raise ValueError(f"text holds {text.shape[0]} bytes, not the {n} of data")
    cdef Py_ssize_t capacity = offsets.shape[0]
    cdef bint overflow = False
    cdef uint8_t* base = &text[0] if n > 0 else NULL
    cdef int64_t[::1] record_offsets = offsets
    cdef uint8_t* scratch = <uint8_t*>mem_alloc(n + 1)
    if scratch == NULL:
        raise MemoryError()
    try:
        with nogil:
            record_offsets[0] = 0
            line = start
            while line < end:
                line_end = <const uint8_t*>memchr(line, 0x0A, end - line)
                if line_end == NULL:
                    line_end = end
                length = line_text(line, line_end, key_data, key_lengths, n_keys, scratch, base + written)
                if length == -2:
                    gave_up = True
                    break
                if length >= 0:
                    if n_records + 1 >= capacity:
                        overflow = True
                        break
                    written += length
                    n_records += 1
                    record_offsets[n_records] = written
                line = line_end + 1
    finally:
        mem_free(scratch)
    if overflow:
        raise ValueError(f"offsets hold {capacity} entries: the data has more records")
    if gave_up:
        return None
    return np.asarray(text[:written]), np.asarray(offsets[:n_records + 1])
