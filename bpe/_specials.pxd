# Finding special tokens in UTF-8 bytes without the GIL: the leftmost match,
# the longest at one position. The rule is defined once, in Python, by
# ``bpe.specials.special_spans``; this is its nogil twin, tested against it
# (tests/test_chunking.py). A C struct and inline functions, so the encoding
# kernel and the scanner module each compile their own copy and call it from
# nogil loops.
from libc.stdint cimport int64_t, uint8_t

from bpe._memory cimport grow, mem_alloc, mem_free

cdef extern from "string.h" nogil:
    void* memchr(const void* s, int c, size_t n)

cdef enum:
    NOT_SEARCHED = -2    # a needle's next occurrence is not known yet
    NOT_FOUND = -1       # a needle does not occur again before the end


cdef enum:
    # From this many needles on, when they share a first byte or more, the text
    # is searched once for what they share, and each needle checked only where
    # that occurs: Llama 3's 256 special tokens all start "<|", and a memmem
    # each made a search for them cost more than encoding a document; cl100k's
    # five, a third of a call on an 83-character string.
    SHARED_PREFIX_NEEDLES = 2


cdef extern from "string.h" nogil:
    int memcmp(const void* a, const void* b, size_t n)


cdef struct Needles:
    Py_ssize_t count
    const uint8_t** data     # borrowed from bytes objects the caller keeps alive
    Py_ssize_t* lengths
    Py_ssize_t* next         # per needle: its next occurrence, NOT_SEARCHED or NOT_FOUND
    Py_ssize_t prefix        # the bytes every needle starts with, when searched for them (else 0)
    Py_ssize_t candidate     # the next place the prefix occurs, NOT_SEARCHED or NOT_FOUND


cdef inline int needles_init(Needles* needles, Py_ssize_t count) noexcept nogil:
    needles.count = count
    needles.data = <const uint8_t**>mem_alloc((count + 1) * sizeof(uint8_t*))
    needles.lengths = <Py_ssize_t*>mem_alloc((count + 1) * sizeof(Py_ssize_t))
    needles.next = <Py_ssize_t*>mem_alloc((count + 1) * sizeof(Py_ssize_t))
    if needles.data == NULL or needles.lengths == NULL or needles.next == NULL:
        return -1
    return 0


cdef inline int needles_point_at(Needles* needles, tuple tokens) except -1:
    """Set up ``needles`` for ``tokens`` (bytes, kept alive by the caller). On
    success, free them with ``needles_free``; on an error nothing is held."""
    cdef Py_ssize_t j
    for token in tokens:
        if not isinstance(token, bytes):
            raise TypeError(f"special tokens are searched as bytes, not {type(token).__name__}")
    if needles_init(needles, len(tokens)) < 0:
        needles_free(needles)
        raise MemoryError()
    for j in range(needles.count):
        needles.data[j] = <const uint8_t*><bytes>tokens[j]
        needles.lengths[j] = len(<bytes>tokens[j])
    needles.prefix = shared_prefix(needles) if needles.count >= SHARED_PREFIX_NEEDLES else 0
    needles.candidate = NOT_SEARCHED
    return 0


cdef inline Py_ssize_t shared_prefix(const Needles* needles) noexcept nogil:
    """How many first bytes every needle shares (in C: this runs on every call)."""
    cdef Py_ssize_t j, k
    cdef Py_ssize_t shared = needles.lengths[0]
    for j in range(1, needles.count):
        k = 0
        while k < shared and k < needles.lengths[j] and needles.data[j][k] == needles.data[0][k]:
            k += 1
        shared = k
    return shared


cdef inline void needles_free(Needles* needles) noexcept nogil:
    mem_free(needles.data)
    mem_free(needles.lengths)
    mem_free(needles.next)


cdef inline void needles_restart(Needles* needles) noexcept nogil:
    """Forget the occurrences found: the next search is in another text."""
    cdef Py_ssize_t j
    needles.candidate = NOT_SEARCHED
    for j in range(needles.count):
        needles.next[j] = NOT_SEARCHED


cdef inline const uint8_t* find_prefix(const uint8_t* s, Py_ssize_t n, const uint8_t* prefix,
                                       Py_ssize_t k) noexcept nogil:
    """The first place the ``k`` bytes of ``prefix`` (k >= 1) occur in ``s[:n]``,
    else NULL: memchr (vectorised in every libc) finds each place its first
    byte is, memcmp checks the rest (a special token is a few bytes, so a
    text full of its first byte costs a few compares a byte at worst). memmem
    cost 20-100 ns on an 83-byte text; this, a few where the byte is rare."""
    cdef const uint8_t* at
    cdef Py_ssize_t start = 0
    # Positions, not pointers: ``s`` may be NULL for an empty text, and ``s + n - k``
    # is then no place at all.
    while n - start >= k:
        at = <const uint8_t*>memchr(s + start, prefix[0], <size_t>(n - start - k + 1))
        if at == NULL:
            return NULL
        if memcmp(at + 1, prefix + 1, <size_t>(k - 1)) == 0:
            return at
        start = (at - s) + 1
    return NULL


cdef inline Py_ssize_t next_by_prefix(Needles* needles, const uint8_t* s, Py_ssize_t position,
                                      Py_ssize_t end, Py_ssize_t* which) noexcept nogil:
    """``next_special`` for needles that share their first ``prefix`` bytes: every
    match starts where the prefix occurs, so the first such place where a needle
    matches is the leftmost match; the longest needle there wins."""
    cdef Py_ssize_t at = needles.candidate
    cdef Py_ssize_t j, longest
    cdef const uint8_t* found
    while True:
        if at == NOT_SEARCHED or (at >= 0 and at < position):
            at = NOT_FOUND
            found = find_prefix(s + position, end - position, needles.data[0], needles.prefix)
            if found != NULL:
                at = found - s
        needles.candidate = at
        if at < 0:
            return -1
        longest = -1
        for j in range(needles.count):
            if 0 < needles.lengths[j] <= end - at and (longest < 0 or needles.lengths[j] > needles.lengths[longest]) \
                    and memcmp(s + at, needles.data[j], needles.lengths[j]) == 0:
                longest = j
        if longest >= 0:
            which[0] = longest
            return at
        position = at + 1
        at = NOT_SEARCHED


cdef inline Py_ssize_t next_special(Needles* needles, const uint8_t* s, Py_ssize_t position,
                                    Py_ssize_t end, Py_ssize_t* which) noexcept nogil:
    """The start of the first special token in ``s[position:end]`` (-1 if none),
    its needle in ``which``: the leftmost, and the longest of those starting there.

    Each needle's next occurrence is remembered, so a text with many special
    tokens is searched once per needle, not once per match. Calls for one text
    must not go backwards; call ``needles_restart`` before the next text. Empty
    needles never match.
    """
    cdef Py_ssize_t j, at
    cdef Py_ssize_t best = -1
    cdef const uint8_t* found
    if needles.prefix > 0:
        return next_by_prefix(needles, s, position, end, which)
    for j in range(needles.count):
        at = needles.next[j]
        if at == NOT_SEARCHED or (at >= 0 and at < position):
            at = NOT_FOUND
            if 0 < needles.lengths[j] <= end - position:
                found = find_prefix(s + position, end - position, needles.data[j], needles.lengths[j])
                if found != NULL:
                    at = found - s
            needles.next[j] = at
        if at >= 0 and (best < 0 or at < best
                        or (at == best and needles.lengths[j] > needles.lengths[which[0]])):
            best = at
            which[0] = j
    return best


cdef inline int find_spans(Needles* needles, const uint8_t* s, Py_ssize_t n, int64_t** spans,
                           int64_t* count) noexcept nogil:
    """Every special token in ``s[:n]``, as ``(start, end, needle)`` triples appended
    to ``*spans`` (grown as needed; the caller frees it), ``*count`` of them.
    -1 when out of memory."""
    cdef Py_ssize_t at, which = 0, position = 0
    cdef int64_t capacity = 0
    needles_restart(needles)
    count[0] = 0
    while True:
        at = next_special(needles, s, position, n, &which)
        if at < 0:
            return 0
        if grow(<void**>spans, &capacity, 3 * (count[0] + 1), sizeof(int64_t), 192) < 0:
            return -1
        position = at + needles.lengths[which]
        spans[0][3 * count[0]] = at
        spans[0][3 * count[0] + 1] = position
        spans[0][3 * count[0] + 2] = which
        count[0] += 1
