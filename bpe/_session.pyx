"""Sessions: a call's scratch buffers and pre-token caches, and caches that
sessions share (see ``bpe/_session.pxd``)."""
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

import numpy as np

from bpe._bytestable cimport bytestable_free, bytestable_init_sized, hash_by_words
from bpe._memory cimport CAN_SHARE, add_count, mem_calloc_huge, mem_free, read_count
from bpe._mergerule cimport ids_init, longmerge_free, longmerge_init
from bpe._sharedgeneral cimport (sharedgeneral_clear, sharedgeneral_find, sharedgeneral_free, sharedgeneral_init,
                                  sharedgeneral_store)
from bpe._shortcache cimport (SHORT_KEY_BYTES, ShortEntry, ShortKey, short_key, shortcache_bytes, shortcache_clear,
                              shortcache_free, shortcache_holds, shortcache_init, shortcache_insert, shortcache_none,
                              shortcache_place, shortcache_slot)
from bpe._types cimport out_id_t

#: A session's short cache: the slots it starts with and may grow to, unless
#: made with others (``bpe.encoder.EncoderOptions``; tests make them small, so
#: that a cache grows and starts afresh within a short text).
SHORT_CACHE_SIZES = (SHORT_CACHE_SLOTS, SHORT_CACHE_MAX_SLOTS)

# Sessions made so far: each one's number names it in its eras (``scratch_init``).
cdef uint64_t _sessions_made = 0


def check_slots(first, largest):
    """Refuse short-cache sizes that are not powers of two with 2 <= first <= largest."""
    if not (isinstance(first, int) and isinstance(largest, int) and 2 <= first <= largest
            and first & (first - 1) == 0 and largest & (largest - 1) == 0):
        raise ValueError(f"short cache sizes must be powers of two with 2 <= first <= largest, "
                         f"not {first!r} and {largest!r}")


cdef int scratch_init(Scratch* s, int64_t short_slots, int64_t short_max_slots) noexcept nogil:
    ids_init(&s.out)
    ids_init(&s.cached)
    ids_init(&s.held)
    s.text.data = NULL
    s.text.capacity = 0
    longmerge_init(&s.long_merge)
    s.missed = SCAN_BATCH               # a new session is cold: as if a whole batch had missed
    # An era's high half names the session: a marker another session made in
    # a shared short cache is then never taken for one of this one's.
    global _sessions_made
    _sessions_made += 1
    s.cache_era = <uint64_t>_sessions_made << 32
    s.general_shared = NULL
    s.short_slots = short_slots
    s.short_max_slots = short_max_slots
    # The short cache is made on first use (``Session.ready``).
    shortcache_none(&s.short)
    shortcache_none(&s.own_short)
    # The general cache holds only what the short one cannot (longer pre-tokens,
    # more ids), yet is sized for a busy call from the start: growing from small
    # rehashes every key several times over in each cold call. Its keys are
    # hashed a word at a time: only this session looks them up.
    if bytestable_init_sized(&s.cache, 1 << 13, 1 << 16) < 0:
        return -1
    s.cache.by_words = True
    return 0


cdef void scratch_free(Scratch* s) noexcept nogil:
    scratch_unshare(s)
    mem_free(s.out.data)
    mem_free(s.cached.data)
    mem_free(s.held.data)
    mem_free(s.text.data)
    longmerge_free(&s.long_merge)
    shortcache_free(&s.short)
    bytestable_free(&s.cache)


#: Whether sessions can share caches here (``SharedCache``): where the
#: compiler offers atomics (GCC and Clang).
SHARED_CACHE_AVAILABLE = bool(CAN_SHARE)


cdef class SharedCache:
    """Pre-token caches that several sessions fill and look up at once: the
    workers of one ``encode_file``, each encoding its own chunks, so that a
    pre-token one merged the other finds.

    A short cache (see "shared" in ``bpe/_shortcache.pxd``), which the
    sessions use instead of their own: ``short_slots``, a session's largest; it
    never grows, and a session that would fill it goes back to its own cache
    for the rest of its call. And a general cache (``bpe/_sharedgeneral.pxd``),
    which they ask behind their own general caches and add to: a table of
    ``general_slots`` slots and ``general_bytes`` of entries (smaller in
    tests), which takes nothing more at its budget. Both start afresh only
    when no session uses them (``clear``).

    Its pages are left to calloc, zero until first touched, and so faulted in
    by the workers as they probe, not all by the thread that makes it. (Unlike
    a session's own table, which is zeroed in order when made: there, pages
    faulted one by one at random cost a cold call 15 %. A shared table is on
    huge pages, and zeroing it first on one thread measured no faster.)"""
    def __cinit__(self, int64_t short_slots=SHORT_CACHE_MAX_SLOTS, int64_t general_slots=SHARED_GENERAL_SLOTS,
                  int64_t general_bytes=SHARED_GENERAL_BYTES):
        cdef int64_t n_slots = short_slots
        cdef void* block
        check_slots(short_slots, short_slots)
        if general_slots < 2 or general_slots & (general_slots - 1) or general_bytes < 64:
            raise ValueError(f"general_slots must be a power of two >= 2 and general_bytes >= 64, "
                             f"not {general_slots} and {general_bytes}")
        shortcache_none(&self.c)
        self.general.slots = NULL
        self.general.arena = NULL
        block = mem_calloc_huge(shortcache_bytes(n_slots))
        if block == NULL:
            raise MemoryError()
        shortcache_place(&self.c, block, n_slots, n_slots)
        self.c.shared = &self.count
        self.count.entries = 0
        self.count.sharers = 0
        if sharedgeneral_init(&self.general, general_slots, general_bytes) < 0:
            raise MemoryError()

    def __dealloc__(self):
        # calloc's block (mem_calloc_huge), not bpe_alloc_huge's: freed, not
        # kept for a table that is promised 2 MiB boundaries.
        mem_free(self.c.block)
        self.c.block = NULL
        self.c.slots = NULL
        sharedgeneral_free(&self.general)

    @property
    def entries(self):
        """Its short cache's entries, as far as the sessions have added theirs
        (they add them SHARED_COUNT_EVERY at a time, and all when they stop
        sharing it)."""
        return read_count(&self.count.entries)

    @property
    def general_entries(self):
        """The pieces in its general cache."""
        return read_count(&self.general.entries)

    @property
    def slots(self):
        return self.c.mask + 1

    def crowded(self):
        """Whether either cache holds three quarters of its budget: then both
        start afresh before sessions share them again (``Encoder.sharing_cache``)."""
        return (4 * read_count(&self.count.entries) >= 3 * self.c.max_entries
                or 4 * read_count(&self.general.entries) >= 3 * self.general.max_entries
                or 4 * read_count(&self.general.used) >= 3 * self.general.arena_bytes)

    def clear(self):
        """Start afresh. Only while no session shares it."""
        shortcache_clear(&self.c)
        self.count.entries = 0
        sharedgeneral_clear(&self.general)

    def find_general(self, bytes piece):
        """For tests: the ids its general cache holds for ``piece``, or None."""
        cdef int64_t count = 0
        cdef const out_id_t* ids = sharedgeneral_find(&self.general, <const uint8_t*>piece, len(piece),
                                                      hash_by_words(<const uint8_t*>piece, len(piece)), &count)
        return None if ids == NULL else [ids[i] for i in range(count)]

    def store_general(self, bytes piece, ids):
        """For tests: keep ``ids`` as those of ``piece`` in its general cache, as a
        session does; whether it holds ``piece`` now (False for a new one at its
        budget)."""
        cdef uint32_t[::1] held = np.asarray(ids, dtype=np.uint32)
        return sharedgeneral_store(&self.general, <const uint8_t*>piece, len(piece),
                                   hash_by_words(<const uint8_t*>piece, len(piece)),
                                   <const out_id_t*>&held[0] if held.shape[0] else NULL, held.shape[0])


def store_after_a_race(SharedCache shared not None, bytes piece, uint32_t piece_id,
                       bytes taker, uint32_t taker_id):
    """For tests: store ``piece`` (1 to SHORT_KEY_BYTES bytes) as its one id in
    ``shared``, as a session does whose probe found an empty slot that another
    session then took, before it stored, for ``taker`` (the store must go on
    to an empty slot past it) or for ``piece`` itself (then it must store
    nothing). Returns whether it stored, the id ``piece`` is found with
    afterwards, and how many slots past the taken one it is."""
    cdef ShortKey key, taker_key
    cdef ShortCache mine = shared.c
    cdef ShortCache other = shared.c
    cdef ShortEntry* slot
    cdef ShortEntry* found
    cdef ShortEntry* stored
    if not (1 <= len(piece) <= SHORT_KEY_BYTES and 1 <= len(taker) <= SHORT_KEY_BYTES):
        raise ValueError(f"pieces must be 1 to {SHORT_KEY_BYTES} bytes")
    short_key(&key, <const uint8_t*>piece, len(piece), len(piece))
    short_key(&taker_key, <const uint8_t*>taker, len(taker), len(taker))
    slot = shortcache_slot(&shared.c, &key)
    if shortcache_holds(slot, &key):
        raise ValueError(f"{piece!r} is in the cache already")
    shortcache_insert(&other, slot, &taker_key, &taker_id, 1)
    stored = shortcache_insert(&mine, slot, &key, &piece_id, 1)
    add_count(&shared.count.entries, mine.n_entries + other.n_entries)
    found = shortcache_slot(&shared.c, &key)
    return stored != NULL, found.ids[0] if shortcache_holds(found, &key) else None, \
        <int64_t>((<uint64_t>(found - slot)) & <uint64_t>shared.c.mask)


cdef void scratch_leave_short(Scratch* s) noexcept nogil:
    """Go back to the session's own short cache (made when next needed, if it
    has none yet), if it was sharing one."""
    if s.short.shared == NULL:
        return
    add_count(&s.short.shared.entries, s.short.n_entries)
    add_count(&s.short.shared.sharers, -1)
    s.short = s.own_short
    shortcache_none(&s.own_short)


cdef void scratch_unshare(Scratch* s) noexcept nogil:
    """Go back to the session's own caches alone."""
    scratch_leave_short(s)
    s.general_shared = NULL


cdef int own_short_init(const Scratch* s, ShortCache* c) noexcept nogil:
    """Make the session's own short cache, at the sizes it was made with. -1,
    and none made, when out of memory."""
    if shortcache_init(c, s.short_slots, s.short_max_slots) < 0:
        shortcache_free(c)
        return -1
    return 0


cdef void scratch_leave_shared(Scratch* s) noexcept nogil:
    """``scratch_leave_short`` in the middle of a call, its own short cache made
    now; it goes on asking the shared general cache, which only stops taking
    pieces at its budget. Out of memory, it goes on with the shared short
    cache, which takes no entries past its budget: lookups still find what it
    holds."""
    if s.own_short.slots == NULL and own_short_init(s, &s.own_short) < 0:
        return
    scratch_leave_short(s)


cdef class Session:
    """Scratch buffers and pre-token caches (each bounded: then started afresh)
    for one encoding call at a time.

    ``bpe.encoder.Encoder`` pools sessions and lends one to each call, so the
    cache stays warm from call to call; a session is never used by two calls
    at once. While it shares a short cache (``share``), its own is kept for
    later; it is made on first use, so that a session that only ever shares
    never makes one.
    """
    def __cinit__(self, int64_t short_slots=SHORT_CACHE_SLOTS, int64_t short_max_slots=SHORT_CACHE_MAX_SLOTS):
        check_slots(short_slots, short_max_slots)
        if scratch_init(&self.scratch, short_slots, short_max_slots) < 0:
            scratch_free(&self.scratch)
            raise MemoryError()

    def __dealloc__(self):
        scratch_free(&self.scratch)

    cdef Scratch* ready(self) except NULL:
        """Its scratch, with a short cache to use (its own made if need be)."""
        if self.scratch.short.slots == NULL and own_short_init(&self.scratch, &self.scratch.short) < 0:
            raise MemoryError()
        return &self.scratch

    def share(self, SharedCache shared not None):
        """Look up and fill ``shared``'s short cache instead of its own (until
        the kernel finds it nearly full), and its general cache behind its
        own, until ``unshare``."""
        self.unshare()
        self.scratch.own_short = self.scratch.short
        self.scratch.short = shared.c
        add_count(&shared.count.sharers, 1)
        self.scratch.general_shared = &shared.general
        self.shared = shared

    def unshare(self):
        """Go back to its own caches alone."""
        scratch_unshare(&self.scratch)
        self.shared = None

    @property
    def sharing(self):
        """Whether it uses a shared short cache now."""
        return self.scratch.short.shared != NULL

    @property
    def sharing_general(self):
        """Whether it asks a shared general cache now."""
        return self.scratch.general_shared != NULL

    @property
    def cached_pieces(self):
        return self.scratch.short.n_entries + self.scratch.cache.n_entries

    @property
    def short_cache_slots(self):
        """The slots of the short cache now (it grows: see ``bpe/_shortcache.pxd``;
        0 before its first use)."""
        return 0 if self.scratch.short.slots == NULL else self.scratch.short.mask + 1


cdef enum:
    KEPT_PIECE_BYTES = 1 << 16   # the longest pre-token whose work arrays a session keeps after a call


cdef void release_output(Scratch* s) noexcept nogil:
    """Forget the call's ids; give back very large buffers. The work arrays of
    one outsized pre-token (36 bytes a byte of it: 360 MB for a 10 MB DNA line)
    go too, so one call does not leave a session, one per thread, holding them."""
    s.out.size = 0
    if s.out.capacity > (1 << 20):
        mem_free(s.out.data)
        s.out.data = NULL
        s.out.capacity = 0
    if s.held.capacity > (1 << 20):         # a long text's ids expanded (``ShortCalls``)
        mem_free(s.held.data)
        s.held.data = NULL
        s.held.capacity = 0
        s.held.size = 0
    if s.text.capacity > (1 << 22):
        mem_free(s.text.data)
        s.text.data = NULL
        s.text.capacity = 0
    if s.long_merge.token_capacity > KEPT_PIECE_BYTES:
        longmerge_free(&s.long_merge)
