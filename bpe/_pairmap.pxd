# An open-addressing hash map from a packed token pair to a non-negative int32
# (a pair id while training, a merge rank while encoding). C struct + free
# functions so the hot loops stay nogil and read like C; every function is
# inline so each kernel module compiles its own copy.
from libc.stdint cimport int32_t, int64_t, uint64_t

from bpe._memory cimport mem_alloc, mem_free, prefetch
from bpe._types cimport pair_t

cdef struct PairMap:
    pair_t* keys
    int32_t* values         # -1 marks an empty slot
    int64_t mask            # number of slots - 1; the number of slots is a power of two
    int64_t size


cdef inline uint64_t _mix(pair_t key) noexcept nogil:
    # murmur3's 64-bit finaliser: packed pairs have structure in both halves.
    key ^= key >> 33
    key *= 0xff51afd7ed558ccdULL
    key ^= key >> 33
    key *= 0xc4ceb9fe1a85ec53ULL
    key ^= key >> 33
    return key


cdef inline int pairmap_init(PairMap* m, int64_t min_slots) noexcept nogil:
    """Allocate at least ``min_slots`` empty slots. Returns -1 when out of memory."""
    cdef int64_t n = 16
    cdef int64_t i
    while n < min_slots:
        n *= 2
    m.keys = <pair_t*>mem_alloc(n * sizeof(pair_t))
    m.values = <int32_t*>mem_alloc(n * sizeof(int32_t))
    if m.keys == NULL or m.values == NULL:
        mem_free(m.keys)
        mem_free(m.values)
        m.keys = NULL
        m.values = NULL
        return -1
    for i in range(n):
        m.values[i] = -1
    m.mask = n - 1
    m.size = 0
    return 0


cdef inline void pairmap_free(PairMap* m) noexcept nogil:
    mem_free(m.keys)
    mem_free(m.values)
    m.keys = NULL
    m.values = NULL
    m.size = 0


cdef inline int64_t _slot(const PairMap* m, pair_t key) noexcept nogil:
    """The slot holding ``key``, or the empty slot where it would go."""
    cdef int64_t i = <int64_t>(_mix(key) & <uint64_t>m.mask)
    while m.values[i] != -1 and m.keys[i] != key:
        i = (i + 1) & m.mask
    return i


cdef inline void pairmap_prefetch(const PairMap* m, pair_t key) noexcept nogil:
    """Start loading the slot where ``key`` is or would go: a caller with many
    keys to look up prefetches them all, then looks them up."""
    cdef int64_t i = <int64_t>(_mix(key) & <uint64_t>m.mask)
    prefetch(&m.values[i])
    prefetch(&m.keys[i])


cdef inline int32_t pairmap_get(const PairMap* m, pair_t key) noexcept nogil:
    """The value stored for ``key``, or -1."""
    return m.values[_slot(m, key)]


cdef inline int _pairmap_grow(PairMap* m) noexcept nogil:
    cdef PairMap bigger
    cdef int64_t i, j
    if pairmap_init(&bigger, 2 * (m.mask + 1)) < 0:
        return -1
    for i in range(m.mask + 1):
        if m.values[i] != -1:
            j = _slot(&bigger, m.keys[i])
            bigger.keys[j] = m.keys[i]
            bigger.values[j] = m.values[i]
    bigger.size = m.size
    pairmap_free(m)
    m[0] = bigger
    return 0


cdef inline int pairmap_set(PairMap* m, pair_t key, int32_t value) noexcept nogil:
    """Store ``value`` (>= 0) for ``key``. Returns -1 when out of memory."""
    cdef int64_t i
    # Keep the load factor under 3/4 so probe runs stay short.
    if 4 * (m.size + 1) > 3 * (m.mask + 1):
        if _pairmap_grow(m) < 0:
            return -1
    i = _slot(m, key)
    if m.values[i] == -1:
        m.keys[i] = key
        m.size += 1
    m.values[i] = value
    return 0
