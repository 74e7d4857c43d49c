# A hash table from byte strings to int64 values, keys stored in one growable
# arena. Shared by the pre-token interner (value = count) and the encoder (value
# = token id, or a cached slice of ids). C struct + inline free functions.
from libc.stdint cimport INT64_MAX, INT64_MIN, int64_t, uint8_t, uint64_t
from libc.string cimport memcmp, memcpy

from bpe._memory cimport grow, mem_alloc, mem_free
from bpe._types cimport offset_t

cdef struct BytesTable:
    uint8_t* data          # the keys, concatenated
    offset_t data_size
    offset_t data_capacity
    offset_t* starts       # key e is data[starts[e]:starts[e + 1]]
    int64_t* values        # a count (interner) or a token id / packed cache slice (encoder)
    int64_t n_entries
    int64_t entry_capacity # starts has room for entry_capacity + 1, values for entry_capacity
    # (high 32 bits of the key's hash) << 32 | entry index, or EMPTY. A probe
    # compares the hash bits kept in the slot before it touches the entry's
    # key: in a cache of ~10^5 pre-tokens each array touched is a cache miss.
    uint64_t* slots
    int64_t mask           # number of slots - 1 (a power of two)
    bint by_words          # keys hashed by ``hash_by_words``, else by FNV-1a (``bytestable_hash``)


cdef extern from *:
    """
    #define BYTESTABLE_EMPTY ((uint64_t)-1)
    #define BYTESTABLE_MAX_ENTRIES ((int64_t)0xFFFFFFFE)
    #define BYTESTABLE_OVERFLOW (-2)
    """
    uint64_t EMPTY "BYTESTABLE_EMPTY"
    int64_t MAX_ENTRIES "BYTESTABLE_MAX_ENTRIES"   # entry indices fit a slot's low 32 bits
    int64_t OVERFLOW "BYTESTABLE_OVERFLOW"         # bytestable_add: the sum passed int64


cdef extern from *:
    """
    #define BYTESTABLE_FNV_OFFSET 14695981039346656037ULL
    #define BYTESTABLE_FNV_PRIME 1099511628211ULL
    """
    uint64_t FNV_OFFSET "BYTESTABLE_FNV_OFFSET"
    uint64_t FNV_PRIME "BYTESTABLE_FNV_PRIME"


cdef inline uint64_t hash_bytes(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """FNV-1a, 64-bit: the keys are short (a few bytes), so a byte loop is fast enough.
    It extends byte by byte, so a caller can hash every prefix of a key in one pass."""
    cdef uint64_t h = FNV_OFFSET
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ s[i]) * FNV_PRIME
    return h


cdef inline uint64_t hash_by_words(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """A hash of ``s[:n]`` eight bytes at a time, for tables that live in memory
    only (it differs between byte orders, and may change between versions).

    Why: FNV-1a waits for a multiply per byte, about 100 cycles for the 27
    bytes of a typical pre-token too long for the short cache; this waits for
    one per word. A key of 8 or more bytes ends with its last 8 bytes (which
    may overlap the word before): no byte past the key is read. The length
    goes in first, and the end mixes the high bits down, since a table picks
    its slot by the low bits."""
    cdef uint64_t h = <uint64_t>n * 0x9E3779B97F4A7C15ULL
    cdef uint64_t word = 0
    cdef Py_ssize_t i = 0
    if n < 8:
        memcpy(&word, s, n)
    else:
        while i + 8 < n:
            memcpy(&word, s + i, 8)
            h = (h ^ word) * 0xC2B2AE3D27D4EB4FULL
            h ^= h >> 32
            i += 8
        memcpy(&word, s + n - 8, 8)
    h = (h ^ word) * 0xC2B2AE3D27D4EB4FULL
    h ^= h >> 29
    h *= 0xD6E8FEB86659FD93ULL
    return h ^ (h >> 32)


cdef inline uint64_t bytestable_hash(const BytesTable* t, const uint8_t* key, Py_ssize_t length) noexcept nogil:
    """The hash ``t`` keeps ``key`` by (see ``by_words``)."""
    return hash_by_words(key, length) if t.by_words else hash_bytes(key, length)


cdef inline int bytestable_init(BytesTable* t) noexcept nogil:
    """An empty table. -1 when out of memory (then ``bytestable_free`` it)."""
    return bytestable_init_sized(t, 1 << 11, 1 << 14)


cdef inline int bytestable_init_sized(BytesTable* t, int64_t entries, int64_t data_bytes) noexcept nogil:
    """An empty table with room for ``entries`` keys of ``data_bytes`` in all before
    it grows (growing rehashes every key: a table whose size is known is sized
    once). -1 when out of memory (then ``bytestable_free`` it)."""
    cdef int64_t i
    cdef int64_t slots = 1 << 12
    entries = max(entries, 16)
    while slots < 2 * entries:            # the load factor stays at most 1/2
        slots *= 2
    t.mask = slots - 1
    t.entry_capacity = entries
    t.data_capacity = max(data_bytes, 16)
    t.data_size = 0
    t.n_entries = 0
    t.by_words = False
    t.slots = <uint64_t*>mem_alloc((t.mask + 1) * sizeof(uint64_t))
    t.starts = <offset_t*>mem_alloc((t.entry_capacity + 1) * sizeof(offset_t))
    t.values = <int64_t*>mem_alloc(t.entry_capacity * sizeof(int64_t))
    t.data = <uint8_t*>mem_alloc(t.data_capacity)
    if t.slots == NULL or t.starts == NULL or t.values == NULL or t.data == NULL:
        return -1
    for i in range(t.mask + 1):
        t.slots[i] = EMPTY
    t.starts[0] = 0
    return 0


cdef inline void bytestable_free(BytesTable* t) noexcept nogil:
    mem_free(t.slots)
    mem_free(t.starts)
    mem_free(t.values)
    mem_free(t.data)
    t.slots = NULL
    t.starts = NULL
    t.values = NULL
    t.data = NULL


cdef inline void bytestable_clear(BytesTable* t) noexcept nogil:
    cdef int64_t i
    for i in range(t.mask + 1):
        t.slots[i] = EMPTY
    t.n_entries = 0
    t.data_size = 0


cdef inline uint64_t slot_of(int64_t entry, uint64_t h) noexcept nogil:
    return (h & 0xFFFFFFFF00000000ULL) | <uint64_t>entry


cdef inline int64_t slot_entry(uint64_t slot) noexcept nogil:
    """The entry a slot holds, or -1 if it is empty."""
    return -1 if slot == EMPTY else <int64_t>(slot & 0xFFFFFFFFULL)


cdef inline bint same_bytes(const uint8_t* a, const uint8_t* b, Py_ssize_t n) noexcept nogil:
    """``a[:n] == b[:n]``. Keys are mostly a few bytes: a loop here beats a call
    to memcmp (7 % of encoding's time, when it was called for every match)."""
    cdef Py_ssize_t i
    if n > 16:
        return memcmp(a, b, n) == 0
    for i in range(n):
        if a[i] != b[i]:
            return False
    return True


cdef inline int64_t bytestable_slot(const BytesTable* t, const uint8_t* key, Py_ssize_t length,
                                    uint64_t h) noexcept nogil:
    """The slot holding ``key``, or the empty slot where it would go."""
    cdef int64_t i = <int64_t>(h & <uint64_t>t.mask)
    cdef uint64_t tag = h & 0xFFFFFFFF00000000ULL
    cdef uint64_t slot
    cdef int64_t e
    while True:
        slot = t.slots[i]
        if slot == EMPTY:
            return i
        if (slot & 0xFFFFFFFF00000000ULL) == tag:
            e = <int64_t>(slot & 0xFFFFFFFFULL)
            if t.starts[e + 1] - t.starts[e] == length and same_bytes(t.data + t.starts[e], key, length):
                return i
        i = (i + 1) & t.mask


cdef inline int64_t bytestable_find(const BytesTable* t, const uint8_t* key,
                                    Py_ssize_t length) noexcept nogil:
    """The entry of ``key``, or -1."""
    return slot_entry(t.slots[bytestable_slot(t, key, length, bytestable_hash(t, key, length))])


cdef inline int _bytestable_grow_slots(BytesTable* t) noexcept nogil:
    """Double the slots; hashes are recomputed from the keys (rare: no array of them kept).
    -1 when out of memory, and then the table is unchanged."""
    cdef int64_t new_mask = 2 * t.mask + 1
    cdef uint64_t* new_slots = <uint64_t*>mem_alloc((new_mask + 1) * sizeof(uint64_t))
    cdef int64_t i, e
    cdef uint64_t h
    if new_slots == NULL:
        return -1
    for i in range(new_mask + 1):
        new_slots[i] = EMPTY
    for e in range(t.n_entries):
        h = bytestable_hash(t, t.data + t.starts[e], t.starts[e + 1] - t.starts[e])
        i = <int64_t>(h & <uint64_t>new_mask)
        while new_slots[i] != EMPTY:
            i = (i + 1) & new_mask
        new_slots[i] = slot_of(e, h)
    mem_free(t.slots)
    t.slots = new_slots
    t.mask = new_mask
    return 0


cdef inline int64_t bytestable_add(BytesTable* t, const uint8_t* key, Py_ssize_t length,
                                   int64_t value, bint accumulate) noexcept nogil:
    return bytestable_add_hashed(t, key, length, bytestable_hash(t, key, length), value, accumulate)


cdef inline int64_t bytestable_add_hashed(BytesTable* t, const uint8_t* key, Py_ssize_t length,
                                          uint64_t h, int64_t value, bint accumulate) noexcept nogil:
    """Store ``value`` for ``key`` (or add it to the stored one if ``accumulate``).
    Returns the entry; -1 when out of memory: then nothing was added and the
    table is as it was (every buffer grows before anything is written);
    ``OVERFLOW`` when the sum would pass int64 (the stored value is unchanged).
    ``h`` is ``bytestable_hash(t, key, length)``, for a caller that has it already.
    """
    cdef int64_t i = bytestable_slot(t, key, length, h)
    cdef int64_t e = slot_entry(t.slots[i])
    cdef int64_t starts_capacity
    if e != -1:
        if accumulate:
            if (value > 0 and t.values[e] > INT64_MAX - value) or (value < 0 and t.values[e] < INT64_MIN - value):
                return OVERFLOW
            t.values[e] += value
        else:
            t.values[e] = value
        return e
    if t.n_entries >= MAX_ENTRIES:
        return -1
    # A load factor of at most 1/2 keeps probe runs short; growing first means a
    # failure leaves the load where it was, and an empty slot always remains.
    if 2 * (t.n_entries + 1) > t.mask + 1:
        if _bytestable_grow_slots(t) < 0:
            return -1
        i = bytestable_slot(t, key, length, h)
    if t.n_entries == t.entry_capacity:
        # starts holds one more than values: grow it with a capacity of its own,
        # then values, whose capacity is the table's.
        starts_capacity = t.entry_capacity + 1
        if grow(<void**>&t.starts, &starts_capacity, 2 * t.entry_capacity + 1, sizeof(offset_t), 1) < 0:
            return -1
        if grow(<void**>&t.values, &t.entry_capacity, t.entry_capacity + 1, sizeof(int64_t), 1) < 0:
            return -1
    if grow(<void**>&t.data, &t.data_capacity, t.data_size + length, 1, 1) < 0:
        return -1
    memcpy(t.data + t.data_size, key, length)
    t.data_size += length
    e = t.n_entries
    t.starts[e + 1] = t.data_size
    t.values[e] = value
    t.n_entries += 1
    t.slots[i] = slot_of(e, h)
    return e
