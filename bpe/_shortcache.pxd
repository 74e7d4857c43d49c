# A cache of short pre-tokens: key bytes and ids inline, one probe touches one
# 32-byte entry (half a cache line) and nothing else. It serves an encoding
# session (pre-token -> ids), the kernel's short tokens (-> id) and the
# interner's front cache (-> its entry).
#
# Why: most pre-tokens are a few bytes long and repeat. In the general table
# (``_bytestable.pxd``) a hit chases slot -> key offsets -> key bytes -> value ->
# cached ids, four dependent loads, and the FNV hash walks the key byte by byte.
# Here a key of up to 16 bytes is two machine words, loaded at once, hashed by
# two multiplies and compared by two word compares, and its ids (up to three:
# nearly every short pre-token) sit in the same entry. Longer pre-tokens, and
# short ones of more than three ids, use the general path.
#
# Linear probing at a load factor of at most 1/2, in a table of fixed size: at
# its budget of entries an insert starts it afresh, so the memory of a session
# stays bounded however much text it sees. (Growing by
# doubling instead cost a cold pass over 10 MB of prose 15 % of its time.)
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

from bpe._memory cimport mem_alloc_huge, mem_free


cdef extern from *:
    """
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    #define SHORTCACHE_LITTLE_ENDIAN 1
    #else
    #define SHORTCACHE_LITTLE_ENDIAN 0
    #endif
    """
    bint LITTLE_ENDIAN "SHORTCACHE_LITTLE_ENDIAN"


cdef enum:
    SHORT_KEY_BYTES = 16     # the longest key
    INLINE_IDS = 3           # ids held in an entry


cdef struct ShortEntry:
    uint64_t key0            # key bytes 0-7, zero past its end
    uint64_t key1            # key bytes 8-15, zero past its end
    uint8_t length           # the key's length; 0 marks an empty slot
    uint8_t n_ids            # 1 to INLINE_IDS
    uint16_t unused
    uint32_t ids[INLINE_IDS]


cdef struct ShortKey:
    uint64_t word0
    uint64_t word1
    uint64_t hash


cdef struct ShortCache:
    ShortEntry* slots        # 32-byte aligned, so no entry straddles two cache lines
    void* block              # what was allocated (slots points into it)
    int64_t mask             # number of slots - 1 (a power of two)
    int64_t n_entries
    int64_t max_entries      # the budget: at this many entries an insert clears the table


cdef inline uint64_t low_bytes(uint64_t word, int64_t n) noexcept nogil:
    """The first ``n`` (0 to 8) bytes of a little-endian word, the rest zero."""
    if n >= 8:
        return word
    return word & ((<uint64_t>1 << (8 * n)) - 1)


cdef inline uint64_t hash_words(uint64_t word0, uint64_t word1, int64_t n) noexcept nogil:
    """Two multiplies and folds: short keys differ in their low bytes, and the
    folds bring the products' well-mixed high bits down to the slot index."""
    cdef uint64_t h = (word0 ^ (<uint64_t>n << 59)) * 0x9E3779B97F4A7C15ULL
    h ^= (word1 + <uint64_t>n) * 0xC2B2AE3D27D4EB4FULL
    h ^= h >> 31
    h *= 0xD6E8FEB86659FD93ULL
    return h ^ (h >> 32)


cdef inline void short_key(ShortKey* key, const uint8_t* piece, int64_t n,
                           int64_t readable) noexcept nogil:
    """The words and hash of ``piece`` (1 to 16 bytes). ``readable`` bytes from
    ``piece`` may be read: with 16 or more the words are loaded whole and
    masked (little-endian machines), else copied byte by byte."""
    cdef uint8_t padded[SHORT_KEY_BYTES]
    if LITTLE_ENDIAN and readable >= SHORT_KEY_BYTES:
        memcpy(&key.word0, piece, 8)
        memcpy(&key.word1, piece + 8, 8)
        key.word1 = low_bytes(key.word1, n - 8) if n > 8 else 0
        key.word0 = low_bytes(key.word0, n)
    else:
        memset(padded, 0, SHORT_KEY_BYTES)
        memcpy(padded, piece, n)
        memcpy(&key.word0, padded, 8)
        memcpy(&key.word1, padded + 8, 8)
    key.hash = hash_words(key.word0, key.word1, n)


cdef inline int shortcache_init(ShortCache* c, int64_t n_slots) noexcept nogil:
    """An empty cache of ``n_slots`` (a power of two), for up to half as many
    entries. -1 when out of memory (then ``shortcache_free`` it).

    The slots are zeroed here, in order, rather than left to calloc's lazy
    pages: probes touch pages at random, and faulting them in one by one made
    a cold pass over 10 MB of prose 15 % slower."""
    c.block = mem_alloc_huge((<size_t>n_slots + 1) * sizeof(ShortEntry))
    if c.block != NULL:
        memset(c.block, 0, (<size_t>n_slots + 1) * sizeof(ShortEntry))
    c.slots = <ShortEntry*>((<size_t>c.block + 31) & ~(<size_t>31))
    c.mask = n_slots - 1
    c.n_entries = 0
    c.max_entries = n_slots // 2
    return -1 if c.block == NULL else 0


cdef inline void shortcache_free(ShortCache* c) noexcept nogil:
    mem_free(c.block)
    c.block = NULL
    c.slots = NULL


cdef inline void shortcache_clear(ShortCache* c) noexcept nogil:
    memset(c.slots, 0, <size_t>(c.mask + 1) * sizeof(ShortEntry))
    c.n_entries = 0


cdef inline ShortEntry* shortcache_slot(const ShortCache* c, const ShortKey* key,
                                        int64_t n) noexcept nogil:
    """The entry holding the key, or the empty one where it would go."""
    cdef int64_t i = <int64_t>(key.hash & <uint64_t>c.mask)
    cdef ShortEntry* e
    while True:
        e = &c.slots[i]
        if e.length == 0 or (e.key0 == key.word0 and e.key1 == key.word1 and e.length == n):
            return e
        i = (i + 1) & c.mask


cdef inline void shortcache_insert(ShortCache* c, ShortEntry* slot, const ShortKey* key, int64_t n,
                                   const uint32_t* ids, int64_t n_ids) noexcept nogil:
    """Store ``ids`` (1 to INLINE_IDS) for the key whose empty slot ``shortcache_slot``
    returned. A table at its budget is cleared first, so the load factor stays
    at most 1/2 and an empty slot always remains."""
    cdef int64_t k
    if c.n_entries >= c.max_entries:
        shortcache_clear(c)
        slot = shortcache_slot(c, key, n)
    slot.key0 = key.word0
    slot.key1 = key.word1
    for k in range(n_ids):
        slot.ids[k] = ids[k]
    for k in range(n_ids, INLINE_IDS):
        slot.ids[k] = 0
    slot.n_ids = <uint8_t>n_ids
    slot.length = <uint8_t>n
    c.n_entries += 1
