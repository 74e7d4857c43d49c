# A cache of short pre-tokens: key bytes and ids inline, one probe touches one
# 32-byte entry (half a cache line) and nothing else. It serves an encoding
# session (pre-token -> ids), the kernel's short tokens (-> id) and the
# interner's front cache (-> its entry).
#
# Why: most pre-tokens are a few bytes long and repeat. In the general table
# (``_bytestable.pxd``) a hit chases slot -> key offsets -> key bytes -> value ->
# cached ids, four dependent loads, and the FNV hash walks the key byte by byte.
# Here a key of up to 15 bytes is two machine words, its length in the top
# byte of the second (so keys of different lengths differ, and no key is
# zero: the mark of an empty slot). It is loaded at once and masked by a row of
# a table (no branch on the length), hashed by two multiplies, and compared by
# two word compares; its ids (up to four: nearly every short pre-token) sit in
# the same entry, and are copied out with one 16-byte store. Longer
# pre-tokens, and short ones of more than four ids, use the general path.
#
# A short pre-token of more than four ids keeps its ids in the session's general
# cache, and a marker here: its key with SPILLED set in the stored second word
# (no probe key has that bit, so the hit loop passes it by), which
# ``shortcache_slot`` finds as it finds the key. So a miss here is a pre-token
# not seen since the cache was last cleared, and is merged without asking the
# general cache first (hashing it byte by byte for a probe that nearly always
# missed). The marker's lanes say where the ids are: lane 0 their place in the
# general cache's id array, lane 1 how many, lanes 2 and 3 the era of that
# cache (how often it had started afresh) when they were put there. A hit on
# a marker of the present era copies them from there at once, where finding
# them again in the general cache hashed the key byte by byte and chased its
# table's slot, key and value (in gpt2, 2.5 % of code's pre-tokens have five
# ids or more, runs included: warm passes over code_linux went 1-3 % faster).
#
# A short pre-token whose ids end in one id repeated (gpt2 has no token for two
# spaces: an indent of a newline and eight spaces is nine ids) keeps them
# here all the same, as a run: RUN set in the stored second word, lanes 0 and
# 1 the ids before the run (NO_ID where fewer), lane 2 the repeated id, lane
# 3 how many times. Code in gpt2 has one such pre-token in forty.
#
# An entry keeps no count: the lanes past its ids hold NO_ID, which no token
# has, and a compare of the four lanes at once counts them. (A count field
# took a lane, and the fourth id was worth more: gpt2 splits a newline and
# three spaces, a common indent, into four tokens.)
#
# The hash's high bits pick the home slot: a multiply carries every bit of its
# operand up into them, so one multiply per word mixes enough, where the low
# bits would need more rounds (three multiplies and shifts did, before).
#
# Linear probing at a load factor of at most 1/2. A table starts at a size
# that serves a busy call without growing (growing from small, doubling, cost
# a cold pass over 10 MB of prose 15 % of its time). Its owner may double it
# up to a largest size (``shortcache_make_room``, between batches of
# lookups); at its budget of entries an insert starts it afresh, so the
# memory of a session stays bounded however much text it sees. (A corpus has
# more distinct pre-tokens than a first table holds: prose_en's 129 MB has
# 369 000. Started afresh every 131 000, a session merged each common one
# again and again, a sixth of ``encode_file``'s time.)
#
# Sharing. The workers of one ``encode_file`` each encode their own chunks;
# with a cache each, a pre-token met by both is merged by both (on prose_en
# with gpt2, two workers' caches ended with 564 986 pieces between them, one
# worker's with 366 112), and two workers fell short of two independent
# processes by about what those merges cost. So they share one table (in an
# ``_session.SharedCache``), made at a session's largest size and never grown
# or cleared while shared. A slot is taken with a compare-and-swap of its
# empty second word to CLAIMED, which no key has; the first word and the ids
# are written, then the second word is stored with release. Every probe
# loads the second word with acquire before the rest (``bpe/_memory.pxd``),
# so a key found has its ids, and a slot being written matches no key. A
# session whose slot was taken meanwhile probes on (and stores nothing if
# the taker stored its key). An entry, once stored, is never written again,
# except the places in a SPILLED marker, which only the session that made it
# rewrites: the high half of an era names the session (lane 3), and another
# session that meets the marker asks its own general cache instead, then the
# shared one (``bpe/_sharedgeneral.pxd``). Each session adds its entries to
# the shared count SHARED_COUNT_EVERY at a time, not one by one, so that
# the count's cache line does not pass between the cores at every insert;
# near the budget the session goes back to its own table for the rest of
# its call.
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

from bpe._memory cimport (add_count, load_acquire, mem_alloc_huge, mem_free_huge, prefetch, read_count, slot_shift,
                          store_release, swap_if)


cdef extern from "csrc/shortcache.h":
    bint LITTLE_ENDIAN "SHORTCACHE_LITTLE_ENDIAN"
    const uint64_t KEY_ROWS "SHORTCACHE_KEY_ROWS"[17][3]
    size_t copy_ids "shortcache_copy_ids" (uint32_t* out, const uint32_t* ids) noexcept nogil
    size_t count_ids "shortcache_count_ids" (const uint32_t* ids) noexcept nogil
    const uint32_t NO_ID "SHORTCACHE_NO_ID"
    const uint64_t SPILLED "SHORTCACHE_SPILLED"
    const uint64_t RUN "SHORTCACHE_RUN"
    const uint64_t CLAIMED "SHORTCACHE_CLAIMED"


cdef enum:
    SHORT_KEY_BYTES = 15     # the longest key
    INLINE_IDS = 4           # ids held in an entry


cdef struct ShortEntry:
    uint64_t key0            # key bytes 0-7, zero past its end
    uint64_t key1            # key bytes 8-14, zero past its end; the length in the top byte; 0: empty
    uint32_t ids[INLINE_IDS] # 1 to INLINE_IDS ids, then NO_ID


cdef struct ShortKey:
    uint64_t word0
    uint64_t word1
    uint64_t hash


cdef struct BatchKey:
    uint64_t word0           # as a ShortKey's
    uint64_t word1
    ShortEntry* home         # its home pair in the cache the batch looks up (no hash kept)


cdef struct SharedCount:
    int64_t entries          # a shared table's entries, as its sessions add theirs
    int64_t sharers          # the sessions sharing it now


cdef struct ShortCache:
    ShortEntry* slots        # 64-byte aligned: slots 2k and 2k + 1 share a cache line
    void* block              # what was allocated (slots points into it)
    int64_t mask             # number of slots - 1 (a power of two)
    int shift                # 64 - log2(number of slots): a hash's high bits pick its slot
    int64_t n_entries
    int64_t max_entries      # the budget: at this many entries an insert clears the table
    int64_t max_slots        # the most slots shortcache_make_room grows it to
    SharedCount* shared      # a table sessions share: their count (n_entries is then this
                             # session's, not yet added); else NULL


cdef inline uint64_t hash_words(uint64_t word0, uint64_t word1) noexcept nogil:
    """A multiply per word; only the high bits are used (see above)."""
    return (word0 * 0x9E3779B97F4A7C15ULL) ^ (word1 * 0xC2B2AE3D27D4EB4FULL)


cdef inline const uint64_t* key_row(Py_ssize_t length) noexcept nogil:
    """The row of ``KEY_ROWS`` for a piece of ``length`` bytes."""
    return KEY_ROWS[length if length <= SHORT_KEY_BYTES else SHORT_KEY_BYTES + 1]


cdef inline void short_key(ShortKey* key, const uint8_t* piece, int64_t n,
                           int64_t readable) noexcept nogil:
    """The words and hash of ``piece`` (1 to SHORT_KEY_BYTES bytes). ``readable``
    bytes from ``piece`` may be read: with 16 or more the words are loaded
    whole and masked (little-endian machines), else copied byte by byte."""
    cdef uint8_t padded[16]
    cdef const uint64_t* row = key_row(n)
    if LITTLE_ENDIAN and readable >= 16:
        memcpy(&key.word0, piece, 8)
        memcpy(&key.word1, piece + 8, 8)
        key.word0 &= row[0]
        key.word1 &= row[1]
    else:
        memset(padded, 0, 16)
        memcpy(padded, piece, n)
        memcpy(&key.word0, padded, 8)
        memcpy(&key.word1, padded + 8, 8)
    key.word1 |= row[2]
    key.hash = hash_words(key.word0, key.word1)


cdef inline int64_t shortcache_budget(int64_t n_slots) noexcept nogil:
    """The entries a table of ``n_slots`` holds before an insert clears it: half,
    so that probes stay short."""
    return n_slots // 2


cdef inline int shortcache_init(ShortCache* c, int64_t n_slots, int64_t max_slots) noexcept nogil:
    """An empty cache of ``n_slots`` (a power of two, at least 2), for up to half
    as many entries, that may grow to ``max_slots`` (a power of two, at least
    ``n_slots``). -1 when out of memory (then ``shortcache_free`` it).

    The slots are zeroed here, in order, rather than left to calloc's lazy
    pages: probes touch pages at random, and faulting them in one by one made
    a cold pass over 10 MB of prose 15 % slower."""
    cdef void* block = mem_alloc_huge(shortcache_bytes(n_slots))
    if block != NULL:
        memset(block, 0, shortcache_bytes(n_slots))
    shortcache_place(c, block, n_slots, max_slots)
    return -1 if block == NULL else 0


cdef inline size_t shortcache_bytes(int64_t n_slots) noexcept nogil:
    """The block a table of ``n_slots`` takes: two slots more, for its alignment."""
    return (<size_t>n_slots + 2) * sizeof(ShortEntry)


cdef inline void shortcache_place(ShortCache* c, void* block, int64_t n_slots, int64_t max_slots) noexcept nogil:
    """Make ``c`` an empty table of ``n_slots`` (see ``shortcache_init``) in
    ``block`` (``shortcache_bytes`` of it, zeroed; NULL when it could not be
    had), a table of its own."""
    c.block = block
    c.slots = <ShortEntry*>((<size_t>block + 63) & ~(<size_t>63))
    c.mask = n_slots - 1
    c.shift = slot_shift(n_slots)
    c.n_entries = 0
    c.max_entries = shortcache_budget(n_slots)
    c.max_slots = max_slots
    c.shared = NULL


cdef inline void shortcache_none(ShortCache* c) noexcept nogil:
    """Make ``c`` no table at all (its slots NULL): one to be made later."""
    memset(c, 0, sizeof(ShortCache))


cdef inline void shortcache_free(ShortCache* c) noexcept nogil:
    mem_free_huge(c.block, shortcache_bytes(c.mask + 1))
    c.block = NULL
    c.slots = NULL


cdef inline void shortcache_clear(ShortCache* c) noexcept nogil:
    memset(c.slots, 0, <size_t>(c.mask + 1) * sizeof(ShortEntry))
    c.n_entries = 0


cdef inline uint64_t home_index(uint64_t hash, int shift) noexcept nogil:
    """The first of the two slots, in one cache line, that a key of this hash
    probes first (``shift`` the cache's): nearly every key is in one of them
    (see ``pair_holding``). Hot loops call it with the cache's fields in locals."""
    return (hash >> shift) & ~(<uint64_t>1)


cdef inline ShortEntry* shortcache_home(const ShortCache* c, uint64_t hash) noexcept nogil:
    """The slot ``home_index`` gives, in ``c``."""
    return &c.slots[home_index(hash, c.shift)]


cdef inline ShortEntry* pair_holding(const BatchKey* key) noexcept nogil:
    """The slot of the key's home pair that holds it, else NULL: one cache line
    read. A hit is one test, of the smaller of the two slots' differences
    from the key (a cmov): a branch per slot is mispredicted, as keys sit in
    either slot at random."""
    cdef ShortEntry* home = key.home
    cdef uint64_t key1_0 = load_acquire(&home[0].key1)
    cdef uint64_t key1_1 = load_acquire(&home[1].key1)
    cdef uint64_t differs0 = (home[0].key0 ^ key.word0) | (key1_0 ^ key.word1)
    cdef uint64_t differs1 = (home[1].key0 ^ key.word0) | (key1_1 ^ key.word1)
    if (differs0 if differs0 < differs1 else differs1) != 0:
        return NULL
    return home + (differs0 != 0)


cdef inline bint shortcache_holds(const ShortEntry* e, const ShortKey* key) noexcept nogil:
    """Whether a slot ``shortcache_slot`` returned for ``key`` holds it (else it
    was empty). The key is compared again, not only the slot's emptiness: in a
    shared table another session may have taken the empty slot since."""
    return holds_key(e, load_acquire(&e.key1), key)


cdef inline bint holds_key(const ShortEntry* e, uint64_t key1, const ShortKey* key) noexcept nogil:
    """Whether ``e``, whose second key word was loaded as ``key1`` (acquired, in a
    shared table), holds ``key``: its marks (SPILLED, RUN) aside."""
    return e.key0 == key.word0 and (key1 & ~(SPILLED | RUN)) == key.word1


cdef inline void short_keys(BatchKey* keys, const uint8_t* data, Py_ssize_t n, Py_ssize_t start,
                            const Py_ssize_t* ends, Py_ssize_t count, const ShortCache* cache) noexcept nogil:
    """The keys of the ``count`` pieces of ``data[:n]`` from ``start`` to each of
    ``ends`` in turn, with their home pairs in ``cache``, prefetched. A piece
    of more than SHORT_KEY_BYTES gets a key that no entry holds (length 255).

    Where every piece has 16 bytes to read, each key is two loads and a row
    of ``KEY_ROWS`` (no branch on its length: the lengths of consecutive
    pre-tokens are random, and a branch on them is mispredicted). The home
    is kept, not the hash: the lookup then needs neither the hash nor the
    table's shape, and a miss, rare, hashes its key again."""
    cdef Py_ssize_t k
    cdef uint64_t word0, word1
    cdef const uint64_t* row
    cdef ShortKey key
    cdef ShortEntry* slots = cache.slots
    cdef int shift = cache.shift
    cdef Py_ssize_t last_start = ends[count - 2] if count > 1 else start
    if LITTLE_ENDIAN and last_start + 16 <= n:
        for k in range(count):
            memcpy(&word0, data + start, 8)
            memcpy(&word1, data + start + 8, 8)
            row = key_row(ends[k] - start)
            word0 &= row[0]
            word1 = (word1 & row[1]) | row[2]
            keys[k].word0 = word0
            keys[k].word1 = word1
            keys[k].home = &slots[home_index(hash_words(word0, word1), shift)]
            prefetch(keys[k].home)
            start = ends[k]
        return
    for k in range(count):
        if ends[k] - start <= SHORT_KEY_BYTES:
            short_key(&key, data + start, ends[k] - start, n - start)
        else:
            key.word0 = 0
            key.word1 = key_row(ends[k] - start)[2]
            key.hash = hash_words(key.word0, key.word1)
        keys[k].word0 = key.word0
        keys[k].word1 = key.word1
        keys[k].home = shortcache_home(cache, key.hash)
        prefetch(keys[k].home)
        start = ends[k]


cdef inline void batch_key_hashed(ShortKey* key, const BatchKey* batch_key) noexcept nogil:
    """The ShortKey of a batch's key (its hash made again)."""
    key.word0 = batch_key.word0
    key.word1 = batch_key.word1
    key.hash = hash_words(key.word0, key.word1)


cdef inline ShortEntry* shortcache_slot(const ShortCache* c, const ShortKey* key) noexcept nogil:
    """The entry holding the key (or its SPILLED marker), or the empty one where
    it would go: probed from its home pair on. ``key`` is of 1 to
    SHORT_KEY_BYTES bytes."""
    cdef uint64_t i = home_index(key.hash, c.shift)
    cdef ShortEntry* e
    cdef uint64_t key1
    while True:
        e = &c.slots[i]
        key1 = load_acquire(&e.key1)
        if key1 == 0 or holds_key(e, key1, key):
            return e
        i = (i + 1) & <uint64_t>c.mask


cdef inline uint64_t stored_word1(const ShortEntry* e) noexcept nogil:
    """An entry's second key word without its SPILLED and RUN marks: its key's."""
    return e.key1 & ~(SPILLED | RUN)


cdef inline bint shortcache_run(const ShortEntry* e) noexcept nogil:
    """Whether a slot holding its key keeps its ids as a run."""
    return (e.key1 & RUN) != 0


cdef inline int64_t run_start(const uint32_t* ids, int64_t count) noexcept nogil:
    """Where the run of ``ids[:count]`` (more than INLINE_IDS) starts, if at most
    two ids come before it and the rest are one id: 0 to 2, else -1."""
    cdef int64_t start = count - 1
    while start > 0 and ids[start - 1] == ids[count - 1]:
        start -= 1
    return start if start <= 2 else -1


cdef inline void shortcache_insert_run(ShortCache* c, ShortEntry* slot, const ShortKey* key,
                                       const uint32_t* ids, int64_t count, int64_t start) noexcept nogil:
    """Store ``ids[:count]`` as a run from ``start`` (``run_start``'s answer) for the
    key whose empty slot ``shortcache_slot`` returned."""
    cdef uint32_t lanes[INLINE_IDS]
    lanes[0] = ids[0] if start > 0 else NO_ID
    lanes[1] = ids[1] if start > 1 else NO_ID
    lanes[2] = ids[count - 1]
    lanes[3] = <uint32_t>(count - start)
    shortcache_store(c, slot, key, key.word1 | RUN, lanes)


cdef inline int64_t write_run(uint32_t* out, const ShortEntry* e) noexcept nogil:
    """Write the ids of a run entry to ``out``; returns how many."""
    cdef int64_t start = (e.ids[0] != NO_ID) + (e.ids[1] != NO_ID)
    cdef int64_t k, length = e.ids[3]
    out[0] = e.ids[0]
    out[1] = e.ids[1]
    for k in range(length):
        out[start + k] = e.ids[2]
    return start + length


cdef inline bint shortcache_spilled(const ShortEntry* e) noexcept nogil:
    """Whether a slot holding its key is a marker: the ids are in the general cache."""
    return (e.key1 & SPILLED) != 0


cdef inline void shortcache_insert_spilled(ShortCache* c, ShortEntry* slot, const ShortKey* key,
                                           uint32_t offset, uint32_t count, uint64_t era) noexcept nogil:
    """Store the marker of ids kept elsewhere for the key whose empty slot
    ``shortcache_slot`` returned: ``count`` of them at ``offset`` of the
    general cache's id array, put there in ``era``."""
    cdef uint32_t lanes[INLINE_IDS]
    lanes[0] = offset
    lanes[1] = count
    lanes[2] = <uint32_t>era
    lanes[3] = <uint32_t>(era >> 32)
    shortcache_store(c, slot, key, key.word1 | SPILLED, lanes)


cdef inline void shortcache_mark_spilled(ShortEntry* e, uint32_t offset, uint32_t count,
                                         uint64_t era) noexcept nogil:
    """Point a marker anew: ``count`` ids at ``offset`` of the general cache's id
    array, put there in ``era``. Only the session whose era the marker holds
    may: in a shared table, another reads its lanes 2 and 3 only, to see
    that the marker is not its own (the session's half of an era, lane 3,
    stays as it was)."""
    e.ids[0] = offset
    e.ids[1] = count
    e.ids[2] = <uint32_t>era
    e.ids[3] = <uint32_t>(era >> 32)


cdef inline uint64_t shortcache_spilled_era(const ShortEntry* e) noexcept nogil:
    """The era of the general cache a marker's place is in."""
    return e.ids[2] | (<uint64_t>e.ids[3] << 32)


cdef inline void shortcache_make_room(ShortCache* c, int64_t inserts) noexcept nogil:
    """Grow the table if ``inserts`` more entries would reach its budget and it
    is below its largest size: to the smallest size whose budget holds them,
    or its largest. Called between batches, so that no slot found before is
    kept (growing moves every entry). Out of memory, it stays as it is, and
    at its budget an insert clears it."""
    cdef int64_t n_slots = c.mask + 1
    if c.n_entries + inserts < c.max_entries or n_slots >= c.max_slots:
        return
    while n_slots < c.max_slots and c.n_entries + inserts >= shortcache_budget(n_slots):
        n_slots *= 2
    shortcache_grow(c, n_slots)


cdef inline int shortcache_grow(ShortCache* c, int64_t n_slots) noexcept nogil:
    """Make the table ``n_slots`` (a larger power of two), every entry moved to its
    slot there. -1 when out of memory (the table is then as it was)."""
    cdef ShortCache bigger
    cdef ShortEntry* old
    cdef ShortEntry* slot
    cdef ShortKey key
    cdef int64_t i
    if shortcache_init(&bigger, n_slots, c.max_slots) < 0:
        shortcache_free(&bigger)
        return -1
    for i in range(c.mask + 1):
        old = &c.slots[i]
        if old.key1 != 0:
            key.word0 = old.key0
            key.word1 = stored_word1(old)
            key.hash = hash_words(key.word0, key.word1)
            slot = shortcache_slot(&bigger, &key)
            slot[0] = old[0]
    bigger.n_entries = c.n_entries
    shortcache_free(c)
    c[0] = bigger
    return 0


cdef inline ShortEntry* shortcache_insert(ShortCache* c, ShortEntry* slot, const ShortKey* key,
                                          const uint32_t* ids, int64_t n_ids) noexcept nogil:
    """Store ``ids`` (1 to INLINE_IDS) for the key whose empty slot
    ``shortcache_slot`` returned (see ``shortcache_store``)."""
    cdef uint32_t lanes[INLINE_IDS]
    cdef int64_t k
    for k in range(n_ids):
        lanes[k] = ids[k]
    for k in range(n_ids, INLINE_IDS):
        lanes[k] = NO_ID
    return shortcache_store(c, slot, key, key.word1, lanes)


cdef inline ShortEntry* shortcache_store(ShortCache* c, ShortEntry* slot, const ShortKey* key,
                                         uint64_t key1, const uint32_t* lanes) noexcept nogil:
    """Store an entry of ``key`` (``key1`` its stored second word: the key's, with
    any marks) and ``lanes`` in the empty slot ``shortcache_slot`` returned
    for it; returns the slot written, NULL if none was. A table of its own
    at its budget is cleared first, so the load factor stays at most 1/2 and
    an empty slot always remains. (Growing is the caller's:
    ``shortcache_make_room``, where no slot found before is kept.)"""
    if c.shared != NULL:
        return shortcache_store_shared(c, slot, key, key1, lanes)
    if c.n_entries >= c.max_entries:
        shortcache_clear(c)
        slot = shortcache_slot(c, key)
    slot.key0 = key.word0
    memcpy(slot.ids, lanes, sizeof(slot.ids))
    slot.key1 = key1
    c.n_entries += 1
    return slot


cdef enum:
    SHARED_COUNT_EVERY = 64  # a session adds its entries to a shared table's count this many at a time


cdef inline ShortEntry* shortcache_store_shared(ShortCache* c, ShortEntry* slot, const ShortKey* key,
                                                uint64_t key1, const uint32_t* lanes) noexcept nogil:
    """``shortcache_store`` in a table other sessions write too: the empty slot is
    taken first (another may take it meanwhile: the probe then goes on), its
    key and ids written, and its key1 stored last, so that a session that
    finds the key finds its ids. Nothing is stored, and NULL returned, if
    another session stored the key first, or the table is at its budget
    (it is never cleared: its sessions go back to their own tables first)."""
    cdef uint64_t i = <uint64_t>(slot - c.slots)
    cdef uint64_t found
    cdef ShortEntry* e
    if read_count(&c.shared.entries) + c.n_entries >= c.max_entries:
        return NULL
    while True:
        e = &c.slots[i]
        found = load_acquire(&e.key1)
        if found == 0:
            if swap_if(&e.key1, 0, CLAIMED, &found):
                e.key0 = key.word0
                memcpy(e.ids, lanes, sizeof(e.ids))
                store_release(&e.key1, key1)
                c.n_entries += 1
                if c.n_entries >= SHARED_COUNT_EVERY:
                    add_count(&c.shared.entries, c.n_entries)
                    c.n_entries = 0
                return e
        if holds_key(e, found, key):         # (what it holds now, if the swap failed)
            return NULL
        i = (i + 1) & <uint64_t>c.mask
