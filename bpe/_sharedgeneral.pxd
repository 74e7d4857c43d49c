# A general cache that several sessions fill and look up at once: the pieces a
# short cache cannot hold (pre-tokens longer than SHORT_KEY_BYTES, and short
# ones of more ids than fit inline), behind each session's own general cache.
#
# Why: the workers of one ``encode_file`` share a short cache, but each kept
# its long pre-tokens to itself, so a long one both met was merged by both.
# On prose that is some 37 000 pieces a run, and with o200k, whose long
# pre-tokens (mostly CJK runs) take about 27 merges each, some 55 ms of CPU
# in 0.85 s. A session asks this table only when its own general cache
# misses, and copies what it finds there into its own: the hit path of a
# session is what it was.
#
# Shape: a table of 8-byte slots and an arena of entries, both of a fixed
# size, never grown or moved while shared (readers hold no lock). A slot is 0
# while empty, else the top TAG_BITS of the key's hash over the entry's place
# in the arena, in words. An entry is a header word (key length << 32 | id
# count), the key bytes padded to a word, then the ids.
#
# Storing: a key not found (up to the first empty slot) is counted, its
# entry's room taken from the arena with an atomic add, the entry written
# there, then published by a compare-and-swap of an empty slot. A probe
# loads each slot with acquire, so a slot it finds always has its entry
# written (the atomics are ``bpe/_memory.pxd``'s). If the swap fails, the
# slot's new value is compared like any other: the same key, stored by
# another session meanwhile, ends the store (its room in the arena is left
# unused), another key sends it on. Slots are never rewritten. When the
# arena or the slots are at their budget, stores do nothing: the sessions
# keep such pieces in their own caches. It starts afresh
# (``sharedgeneral_clear``) only while no session shares it.
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memcmp, memcpy, memset

from bpe._memory cimport add_count, load_acquire, mem_calloc_huge, mem_free, swap_if
from bpe._types cimport out_id_t


cdef extern from *:
    """
    #define SHAREDGENERAL_TAG_SHIFT 40
    #define SHAREDGENERAL_PLACE_MASK ((1ULL << 40) - 1)
    """
    int TAG_SHIFT "SHAREDGENERAL_TAG_SHIFT"
    uint64_t PLACE_MASK "SHAREDGENERAL_PLACE_MASK"


cdef struct SharedGeneral:
    uint64_t* slots          # 0, or (hash >> TAG_SHIFT) << TAG_SHIFT | the entry's place in words
    int64_t mask             # number of slots - 1 (a power of two)
    uint8_t* arena           # the entries, each at a word boundary
    int64_t arena_bytes
    int64_t used             # bytes of the arena taken (atomic): from 8, so that no place is 0
    int64_t entries          # entries published, and being stored (atomic)
    int64_t max_entries      # half the slots: probes stay short and always end


cdef inline int sharedgeneral_init(SharedGeneral* g, int64_t n_slots, int64_t arena_bytes) noexcept nogil:
    """An empty table of ``n_slots`` (a power of two) and an arena of
    ``arena_bytes``, both zero until first touched (calloc). -1 when out of
    memory (then nothing is held)."""
    g.slots = <uint64_t*>mem_calloc_huge(n_slots * sizeof(uint64_t))
    g.arena = <uint8_t*>mem_calloc_huge(arena_bytes)
    if g.slots == NULL or g.arena == NULL:
        sharedgeneral_free(g)
        return -1
    g.mask = n_slots - 1
    g.arena_bytes = arena_bytes
    g.used = 8
    g.entries = 0
    g.max_entries = n_slots // 2
    return 0


cdef inline void sharedgeneral_free(SharedGeneral* g) noexcept nogil:
    mem_free(g.slots)
    mem_free(g.arena)
    g.slots = NULL
    g.arena = NULL


cdef inline void sharedgeneral_clear(SharedGeneral* g) noexcept nogil:
    """Start afresh. Only while no session shares it."""
    memset(g.slots, 0, (g.mask + 1) * sizeof(uint64_t))
    g.used = 8
    g.entries = 0


cdef inline int64_t _ids_at(int64_t n) noexcept nogil:
    """Where an entry's ids start: past its header and its key of ``n`` bytes,
    padded to a word."""
    return 8 + ((n + 7) & ~7)


cdef inline const out_id_t* _ids_held(const SharedGeneral* g, uint64_t slot, uint64_t tag,
                                      const uint8_t* piece, int64_t n, int64_t* count) noexcept nogil:
    """The ids of the entry ``slot`` names (their number in ``count``) if its key
    is ``piece[:n]`` (``tag`` that of its hash), else NULL."""
    cdef const uint8_t* entry
    cdef uint64_t header
    if slot & ~PLACE_MASK != tag:
        return NULL
    entry = g.arena + 8 * (slot & PLACE_MASK)
    memcpy(&header, entry, 8)
    if <int64_t>(header >> 32) != n or memcmp(entry + 8, piece, n) != 0:
        return NULL
    count[0] = <int64_t>(header & 0xFFFFFFFFULL)
    return <const out_id_t*>(entry + _ids_at(n))


cdef inline const out_id_t* _probe(const SharedGeneral* g, const uint8_t* piece, int64_t n, uint64_t h,
                                   int64_t* at, int64_t* count) noexcept nogil:
    """The ids of ``piece[:n]`` (``h`` its hash), their number in ``count``, from
    its home slot on; NULL when an empty slot comes first, left in ``at``."""
    cdef uint64_t tag = (h >> TAG_SHIFT) << TAG_SHIFT
    cdef int64_t i = <int64_t>(h & <uint64_t>g.mask)
    cdef uint64_t slot
    cdef const out_id_t* ids
    while True:
        slot = load_acquire(&g.slots[i])
        if slot == 0:
            at[0] = i
            return NULL
        ids = _ids_held(g, slot, tag, piece, n, count)
        if ids != NULL:
            return ids
        i = (i + 1) & g.mask


cdef inline const out_id_t* sharedgeneral_find(const SharedGeneral* g, const uint8_t* piece, int64_t n,
                                               uint64_t h, int64_t* count) noexcept nogil:
    """The ids of ``piece[:n]`` (``h`` its hash, by words), their number in
    ``count``; NULL when it is not here."""
    cdef int64_t at
    return _probe(g, piece, n, h, &at, count)


cdef inline bint sharedgeneral_store(SharedGeneral* g, const uint8_t* piece, int64_t n, uint64_t h,
                                     const out_id_t* ids, int64_t count) noexcept nogil:
    """Keep ``ids[:count]`` as the ids of ``piece[:n]`` (``h`` its hash, by
    words), unless it is here already. False when the table is at its budget
    and nothing was stored."""
    cdef uint64_t tag = (h >> TAG_SHIFT) << TAG_SHIFT
    cdef int64_t size = (_ids_at(n) + count * <int64_t>sizeof(out_id_t) + 7) & ~7
    cdef int64_t place, i, found
    cdef uint64_t header, seen, value
    cdef uint8_t* entry
    # Probed first, so that a key here already takes no room: from the first
    # empty slot on, the swaps below see what others store meanwhile.
    if _probe(g, piece, n, h, &i, &found) != NULL:
        return True
    # The entry is counted first, a place reserved, and uncounted if it is
    # not stored: sessions storing at once never pass the budget together.
    if add_count(&g.entries, 1) > g.max_entries:
        add_count(&g.entries, -1)
        return False
    place = add_count(&g.used, size) - size
    if place + size > g.arena_bytes:
        add_count(&g.entries, -1)
        return False
    entry = g.arena + place
    header = (<uint64_t>n << 32) | <uint64_t>count
    memcpy(entry, &header, 8)
    memcpy(entry + 8, piece, n)
    memcpy(entry + _ids_at(n), ids, count * sizeof(out_id_t))
    value = tag | <uint64_t>(place // 8)
    while True:
        if swap_if(&g.slots[i], 0, value, &seen):
            return True
        if _ids_held(g, seen, tag, piece, n, &found) != NULL:
            add_count(&g.entries, -1)
            return True
        i = (i + 1) & g.mask
