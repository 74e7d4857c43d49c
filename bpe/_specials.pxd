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
    # From this many needles on, when they do not all share a first byte, the text is
    # searched for their first bytes instead (one memchr each while there are
    # at most FIRST_BYTES of them), and the needles that begin there are found
    # by their first two bytes: DeepSeek V3's 1,283 special tokens, searched
    # one by one, held its encoding to 19 MB/s.
    INDEXED_NEEDLES = 16
    FIRST_BYTES = 4


cdef extern from "string.h" nogil:
    int memcmp(const void* a, const void* b, size_t n)


cdef struct Needles:
    Py_ssize_t count
    const uint8_t** data     # borrowed from bytes objects the caller keeps alive
    Py_ssize_t* lengths
    Py_ssize_t* next         # per needle: its next occurrence, NOT_SEARCHED or NOT_FOUND
    Py_ssize_t prefix        # the bytes every needle starts with, when searched for them (else 0)
    Py_ssize_t candidate     # the next place the prefix occurs, NOT_SEARCHED or NOT_FOUND
    # The first-byte index (``order`` NULL without it): the needles in the
    # order of their first two bytes (a one-byte needle first), those
    # beginning with byte b at order[bucket[b]:bucket[b + 1]]; and the first
    # bytes, with the next place each occurs, while there are at most FIRST_BYTES.
    Py_ssize_t* order
    Py_ssize_t* bucket
    bint borrowed            # data, lengths, order, bucket belong to another Needles (needles_borrow)
    int n_firsts
    uint8_t firsts[FIRST_BYTES]
    Py_ssize_t first_next[FIRST_BYTES]


cdef inline int needles_init(Needles* needles, Py_ssize_t count) noexcept nogil:
    needles.count = count
    needles.data = <const uint8_t**>mem_alloc((count + 1) * sizeof(uint8_t*))
    needles.lengths = <Py_ssize_t*>mem_alloc((count + 1) * sizeof(Py_ssize_t))
    needles.next = <Py_ssize_t*>mem_alloc((count + 1) * sizeof(Py_ssize_t))
    needles.order = NULL
    needles.bucket = NULL
    needles.borrowed = False
    if needles.data == NULL or needles.lengths == NULL or needles.next == NULL:
        return -1
    return 0


cdef inline int second_key(const Needles* needles, Py_ssize_t j) noexcept nogil:
    """A needle's second byte, or -1 for a needle of one byte."""
    return needles.data[j][1] if needles.lengths[j] > 1 else -1


cdef inline int index_first_bytes(Needles* needles) noexcept nogil:
    """Build the first-byte index: a counting sort by the second byte, then a
    stable one by the first (O(needles + 256): once per set the kernel
    prepares, but on every ``find_special_spans`` call)."""
    cdef Py_ssize_t j, b, total
    cdef Py_ssize_t* by_second
    cdef Py_ssize_t seconds[258]
    cdef Py_ssize_t filled[256]
    needles.order = <Py_ssize_t*>mem_alloc((needles.count + 1) * sizeof(Py_ssize_t))
    needles.bucket = <Py_ssize_t*>mem_alloc(257 * sizeof(Py_ssize_t))
    by_second = <Py_ssize_t*>mem_alloc((needles.count + 1) * sizeof(Py_ssize_t))
    if needles.order == NULL or needles.bucket == NULL or by_second == NULL:
        mem_free(by_second)
        return -1
    for b in range(258):
        seconds[b] = 0
    for b in range(257):
        needles.bucket[b] = 0
    for j in range(needles.count):
        seconds[second_key(needles, j) + 2] += 1
        needles.bucket[needles.data[j][0] + 1] += 1
    for b in range(1, 258):
        seconds[b] += seconds[b - 1]
    for j in range(needles.count):
        b = second_key(needles, j) + 1
        by_second[seconds[b]] = j
        seconds[b] += 1
    for b in range(1, 257):
        needles.bucket[b] += needles.bucket[b - 1]
    # bucket[b] is where byte b's needles start; fill each in the second-byte order
    for b in range(256):
        filled[b] = needles.bucket[b]
    for total in range(needles.count):
        j = by_second[total]
        needles.order[filled[needles.data[j][0]]] = j
        filled[needles.data[j][0]] += 1
    mem_free(by_second)
    needles.n_firsts = 0
    for b in range(256):
        if needles.bucket[b + 1] > needles.bucket[b]:
            if needles.n_firsts < FIRST_BYTES:
                needles.firsts[needles.n_firsts] = <uint8_t>b
            needles.n_firsts += 1
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
    if needles.prefix == 0 and needles.count >= INDEXED_NEEDLES:
        for j in range(needles.count):
            if needles.lengths[j] == 0:
                break           # an empty needle: the plain search, which skips it
        else:
            if index_first_bytes(needles) < 0:
                needles_free(needles)
                raise MemoryError()
    needles_restart(needles)
    return 0


cdef inline Py_ssize_t shared_prefix(const Needles* needles) noexcept nogil:
    """How many first bytes every needle shares (in C: this runs for every set
    prepared, and every ``find_special_spans`` call)."""
    cdef Py_ssize_t j, k
    cdef Py_ssize_t shared = needles.lengths[0]
    for j in range(1, needles.count):
        k = 0
        while k < shared and k < needles.lengths[j] and needles.data[j][k] == needles.data[0][k]:
            k += 1
        shared = k
    return shared


cdef inline void needles_free(Needles* needles) noexcept nogil:
    mem_free(needles.next)
    if not needles.borrowed:
        mem_free(needles.data)
        mem_free(needles.lengths)
        mem_free(needles.order)
        mem_free(needles.bucket)


cdef inline int needles_borrow(Needles* needles, const Needles* prepared) noexcept nogil:
    """Set up ``needles`` to search for ``prepared``'s (made by ``needles_point_at``,
    kept alive and unchanged meanwhile) with a search state of its own: one
    set of special tokens, searched by many calls and threads, is checked and
    indexed once (1,283 of them took 16 us a call). -1 when out of memory;
    free with ``needles_free`` either way."""
    needles[0] = prepared[0]
    needles.borrowed = True
    needles.next = <Py_ssize_t*>mem_alloc((needles.count + 1) * sizeof(Py_ssize_t))
    if needles.next == NULL:
        return -1
    needles_restart(needles)
    return 0


cdef inline void needles_restart(Needles* needles) noexcept nogil:
    """Forget the occurrences found: the next search is in another text."""
    cdef Py_ssize_t j
    needles.candidate = NOT_SEARCHED
    for j in range(needles.count):
        needles.next[j] = NOT_SEARCHED
    for j in range(FIRST_BYTES):
        needles.first_next[j] = NOT_SEARCHED


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


cdef inline Py_ssize_t next_first_byte(Needles* needles, const uint8_t* s, Py_ssize_t position,
                                       Py_ssize_t end) noexcept nogil:
    """The first place from ``position`` holding a needle's first byte, or -1."""
    cdef Py_ssize_t j, at
    cdef Py_ssize_t best = -1
    cdef const uint8_t* found
    if needles.n_firsts > FIRST_BYTES:
        while position < end:
            if needles.bucket[s[position] + 1] > needles.bucket[s[position]]:
                return position
            position += 1
        return -1
    for j in range(needles.n_firsts):
        at = needles.first_next[j]
        if at == NOT_SEARCHED or (at >= 0 and at < position):
            found = <const uint8_t*>memchr(s + position, needles.firsts[j], <size_t>(end - position)) \
                if end > position else NULL
            at = found - s if found != NULL else NOT_FOUND
            needles.first_next[j] = at
        if at >= 0 and (best < 0 or at < best):
            best = at
    return best


cdef inline Py_ssize_t longest_at(const Needles* needles, const uint8_t* s, Py_ssize_t at,
                                  Py_ssize_t end) noexcept nogil:
    """The longest needle that ``s[at:end]`` begins with (by the first-byte
    index), or -1: a one-byte needle, else those with the same second byte,
    found by bisection."""
    cdef Py_ssize_t lo = needles.bucket[s[at]]
    cdef Py_ssize_t hi = needles.bucket[s[at] + 1]
    cdef Py_ssize_t longest = -1
    cdef Py_ssize_t j, middle
    cdef int second
    if lo < hi and needles.lengths[needles.order[lo]] == 1:
        longest = needles.order[lo]
        lo += 1                 # one needle of one byte: they are all different
    if at + 1 >= end:
        return longest
    second = s[at + 1]
    while lo < hi:              # the first needle whose second byte is at least ``second``
        middle = (lo + hi) >> 1
        if second_key(needles, needles.order[middle]) < second:
            lo = middle + 1
        else:
            hi = middle
    while lo < needles.bucket[s[at] + 1]:
        j = needles.order[lo]
        if second_key(needles, j) != second:
            break
        if needles.lengths[j] <= end - at and (longest < 0 or needles.lengths[j] > needles.lengths[longest]) \
                and memcmp(s + at, needles.data[j], needles.lengths[j]) == 0:
            longest = j
        lo += 1
    return longest


cdef inline Py_ssize_t next_indexed(Needles* needles, const uint8_t* s, Py_ssize_t position,
                                    Py_ssize_t end, Py_ssize_t* which) noexcept nogil:
    """``next_special`` by the first-byte index: the first place from ``position``
    where a needle begins, the longest there."""
    cdef Py_ssize_t at, longest
    while True:
        at = next_first_byte(needles, s, position, end)
        if at < 0:
            return -1
        longest = longest_at(needles, s, at, end)
        if longest >= 0:
            which[0] = longest
            return at
        position = at + 1


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
    if needles.order != NULL:
        return next_indexed(needles, s, position, end, which)
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
