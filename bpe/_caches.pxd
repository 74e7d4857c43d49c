# The pre-token caches of an encoding session: where a pre-token's ids are
# looked up before it is merged, and remembered after.
#
# Three tiers, asked in turn: the session's short cache (``bpe/_shortcache.pxd``:
# pre-tokens of up to 15 bytes, up to four ids inline, or a run, or a marker of
# where the general cache keeps more); its general cache (``Scratch.cache``, a
# ``bpe/_bytestable.pxd`` of longer ones, started afresh at its budget: a new
# era, which makes older markers point at nothing); and, while the session
# shares them (``Session.share``), the shared caches (``bpe/_sharedgeneral.pxd``)
# behind its own. What misses them all is a token (the kernel's ``Tables``) or
# merged (``bpe/_mergerule.pxd``), then remembered.
#
# The kernel's batch loop (``bpe/_encode.pyx``) copies a short cache's hits
# itself; everything else of the caches is here, as inline functions over the
# kernel's tables and the session's ``Scratch``.
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

from bpe._bytestable cimport (BytesTable, bytestable_add_hashed, bytestable_clear, bytestable_hash,
                              bytestable_slot, hash_bytes, hash_by_words, slot_entry)
from bpe._memory cimport prefetch
from bpe._mergerule cimport MergeRule, Merging, ids_reserve, merge_piece
from bpe._session cimport Scratch
from bpe._sharedgeneral cimport sharedgeneral_find, sharedgeneral_store
from bpe._shortcache cimport (INLINE_IDS, SHORT_KEY_BYTES, BatchKey, ShortCache, ShortEntry, ShortKey,
                              batch_key_hashed, count_ids, run_start, shortcache_holds, shortcache_home,
                              shortcache_insert, shortcache_insert_run, shortcache_insert_spilled,
                              shortcache_mark_spilled, shortcache_run, shortcache_slot, shortcache_spilled,
                              shortcache_spilled_era, write_run)
from bpe._tokenfilter cimport TokenFilter, tokenfilter_may_hold
from bpe._types cimport out_id_t

cdef enum:
    CACHE_MAX_PIECE_BYTES = 256      # longer pre-tokens are rare; not worth caching
    CACHE_MAX_ENTRIES = 1 << 18      # then the general cache starts afresh: memory stays bounded
    OUT_SLACK = INLINE_IDS           # ids a short-cache hit writes: its four lanes, copied at once

cdef enum:                           # what encode_piece's caller knows of the piece
    PIECE_ANY = 0                    # nothing: it may be a token, or in the general cache
    PIECE_NEW_SHORT = 1              # short, no token, not seen since the short cache cleared (the caller caches it)


cdef struct Tables:
    # What the caches' misses ask of a kernel's vocabulary, built once and then
    # only read (``EncodeKernel.__cinit__``).
    MergeRule rule                  # what merging a pre-token reads (``bpe/_mergerule.pxd``)
    BytesTable tokens               # a pre-token that is itself a token -> its id
    ShortCache short_tokens         # the tokens of 2 to SHORT_KEY_BYTES bytes: a miss's first probe
    TokenFilter short_token_filter  # ... unless this says it is surely none of them
    TokenFilter long_token_filter   # whether a longer pre-token may be a token, by its hash in a session's
                                    # general cache (``hash_by_words``): most are none, and the token
                                    # table wants a hash of its own and a probe out of L2


cdef inline int encode_piece(const Tables* t, Scratch* s, const uint8_t* piece, int64_t n,
                             int source) noexcept nogil:
    """Append the ids of one pre-token to ``s.out``: the general cache's ids,
    a token's id, or merged ones, which it then caches (a PIECE_NEW_SHORT's
    are its caller's to cache). ``source`` says what the caller knows (see
    PIECE_ANY and the others). -1 when out of memory.

    The cache is asked first, and keeps a token's id too: a pre-token met
    again (most long ones are) costs one hash of its words and one probe,
    where the token table wants a hash byte by byte (FNV-1a, for its long
    tokens' prefixes: see ``_register_splits``) and a probe of its own.
    While the session shares a general cache, that is asked next, and
    what it holds copied into the session's own; what neither holds goes
    into both."""
    cdef int64_t entry, value, offset, count, before
    cdef uint64_t h = 0
    cdef bint cached = n <= CACHE_MAX_PIECE_BYTES and source != PIECE_NEW_SHORT
    if n == 0:
        return 0
    if ids_reserve(&s.out, 1) < 0:
        return -1
    if n == 1:
        s.out.data[s.out.size] = <out_id_t>t.rule.byte_ids[piece[0]]
        s.out.size += 1
        return 0
    if cached:
        h = bytestable_hash(&s.cache, piece, n)
        entry = slot_entry(s.cache.slots[bytestable_slot(&s.cache, piece, n, h)])
        if entry >= 0:
            value = s.cache.values[entry]
            offset = value >> 16
            count = value & 0xFFFF
            if ids_reserve(&s.out, count) < 0:
                return -1
            memcpy(s.out.data + s.out.size, s.cached.data + offset, count * sizeof(out_id_t))
            s.out.size += count
            return 0
        if s.general_shared != NULL:
            count = from_shared_general(s, piece, n, h)
            if count != 0:
                return -1 if count < 0 else 0
    before = s.out.size
    entry = -1
    if source == PIECE_ANY and (n <= SHORT_KEY_BYTES or not cached or may_be_long_token(t, h)):
        entry = slot_entry(t.tokens.slots[bytestable_slot(&t.tokens, piece, n, hash_bytes(piece, n))])
    if entry >= 0:
        s.out.data[s.out.size] = <out_id_t>t.tokens.values[entry]
        s.out.size += 1
    elif merge_piece(&t.rule, &s.long_merge, piece, n, t.rule.n_ranks, &s.out) < 0:
        return -1
    # (A new short one is the caller's to remember: ``remember_short``.)
    if cached and cache_general(s, piece, n, h, s.out.data + before, s.out.size - before, True) < 0:
        return -1
    return 0


cdef inline int from_shared_general(Scratch* s, const uint8_t* piece, int64_t n, uint64_t h) noexcept nogil:
    """Append the ids the shared general cache holds for ``piece`` (``h`` its
    hash), if it holds them, and keep them in the session's own: their
    number (0 when it does not), or -1 when out of memory. (A function of
    its own: written into ``encode_piece``, it made sessions that do not
    share slower.)"""
    cdef int64_t count = 0
    cdef const out_id_t* ids = sharedgeneral_find(s.general_shared, piece, n, h, &count)
    if ids == NULL:
        return 0
    if ids_reserve(&s.out, count) < 0:
        return -1
    memcpy(s.out.data + s.out.size, ids, count * sizeof(out_id_t))
    s.out.size += count
    return -1 if cache_general(s, piece, n, h, ids, count, False) < 0 else <int>count


cdef inline int64_t cache_general(Scratch* s, const uint8_t* piece, int64_t n, uint64_t h,
                                  const out_id_t* ids, int64_t count, bint share) noexcept nogil:
    """Keep ``ids[:count]`` as the ids of ``piece`` (``h`` its hash in the cache) in the
    session's general cache, started afresh at its budget (a new era), and,
    with ``share``, in the general cache it shares, if any. Returns
    where in ``s.cached`` the ids went, or -1 when out of memory. (At most
    CACHE_MAX_ENTRIES pieces of CACHE_MAX_PIECE_BYTES: 2^26 ids, so a place
    fits in 32 bits.)"""
    cdef int64_t offset
    if share and s.general_shared != NULL:
        sharedgeneral_store(s.general_shared, piece, n, h, ids, count)
    if s.cache.n_entries >= CACHE_MAX_ENTRIES:
        bytestable_clear(&s.cache)
        s.cached.size = 0
        s.cache_era += 1
    if ids_reserve(&s.cached, count) < 0:
        return -1
    offset = s.cached.size
    memcpy(s.cached.data + offset, ids, count * sizeof(out_id_t))
    if bytestable_add_hashed(&s.cache, piece, n, h, (offset << 16) | count, False) < 0:
        return -1
    s.cached.size += count
    return offset


cdef inline int remember_short(Scratch* s, ShortEntry* entry, const ShortKey* key,
                               const uint8_t* piece, int64_t n, const out_id_t* ids,
                               int64_t count) noexcept nogil:
    """Cache the ids of a short pre-token (``key`` its key, ``entry`` the empty
    slot ``shortcache_slot`` gave for it): inline if at most INLINE_IDS, else
    as a run, else in the general cache with a marker here (see
    ``bpe/_shortcache.pxd``). -1 when out of memory."""
    cdef int64_t start
    if count <= INLINE_IDS:
        shortcache_insert(&s.short, entry, key, ids, count)
        return 0
    start = run_start(ids, count)
    if start >= 0:
        shortcache_insert_run(&s.short, entry, key, ids, count, start)
        return 0
    return spill(s, entry, key, piece, n, ids, count)


cdef inline int spill(Scratch* s, ShortEntry* entry, const ShortKey* key, const uint8_t* piece,
                      int64_t n, const out_id_t* ids, int64_t count) noexcept nogil:
    """Keep the ids of a short pre-token of more than INLINE_IDS in the general
    cache, then make ``entry`` the marker that says where: with ``key``, the
    empty slot for it; without, its marker of an earlier era. -1 when out of
    memory, with no marker made (an entry of the key without one would be
    taken for a pre-token of no ids). While the session shares a general
    cache, the ids go there too: a session that finds this one's marker
    in a shared short cache looks for them there (``encode_short``)."""
    cdef int64_t offset = cache_general(s, piece, n, bytestable_hash(&s.cache, piece, n), ids, count, True)
    if offset < 0:
        return -1
    if key != NULL:
        shortcache_insert_spilled(&s.short, entry, key, <uint32_t>offset, <uint32_t>count, s.cache_era)
    else:
        shortcache_mark_spilled(entry, <uint32_t>offset, <uint32_t>count, s.cache_era)
    return 0


cdef inline ShortEntry* short_token(const Tables* t, const ShortKey* key) noexcept nogil:
    """The short tokens' entry holding ``key``, or NULL when it is no token:
    the filter answers most that are not without a probe of the table."""
    cdef ShortEntry* token
    if not tokenfilter_may_hold(&t.short_token_filter, key.hash):
        return NULL
    token = shortcache_slot(&t.short_tokens, key)
    return token if shortcache_holds(token, key) else NULL


cdef inline int encode_short(const Tables* t, Scratch* s, const uint8_t* piece, int64_t n,
                             const ShortKey* key) noexcept nogil:
    """Append the ids of a pre-token of 1 to SHORT_KEY_BYTES bytes (``key`` its
    words and hash), from the short cache when it is there (or from the
    general cache, where its marker says); else found as ``encode_piece``
    finds them and cached here: the ids if at most INLINE_IDS, or as a run
    (see ``bpe/_shortcache.pxd``), else a marker.
    ``s.out`` has room for ``n`` more ids. Returns 0 for a hit, 1 for a miss
    (the short tokens asked), -1 when out of memory."""
    cdef ShortEntry* entry
    cdef ShortEntry* token
    cdef int64_t before, count
    entry = shortcache_slot(&s.short, key)
    if shortcache_holds(entry, key):
        if shortcache_run(entry):
            s.out.size += write_run(s.out.data + s.out.size, entry)
            return 0
        if shortcache_spilled(entry):
            if shortcache_spilled_era(entry) == s.cache_era:
                count = entry.ids[1]          # at most n: s.out has room
                memcpy(s.out.data + s.out.size, s.cached.data + entry.ids[0], count * sizeof(out_id_t))
                s.out.size += count
                return 0
            if (shortcache_spilled_era(entry) >> 32) != (s.cache_era >> 32):
                # Another session's marker, in a shared table: its place
                # is in that session's general cache, and its ids in the
                # shared one. This one's own is asked, then the shared
                # one (and given the ids if it lacks them); the marker
                # stays the other's.
                return -1 if encode_piece(t, s, piece, n, PIECE_ANY) < 0 else 0
            # The general cache started afresh since: merged again, and the
            # marker points anew.
            before = s.out.size
            if encode_piece(t, s, piece, n, PIECE_NEW_SHORT) < 0 \
                    or spill(s, entry, NULL, piece, n, s.out.data + before, s.out.size - before) < 0:
                return -1
            return 0
        # As _encode_batch copies a hit (its four lanes at once) where
        # there is room past them; else only its ids.
        count = count_ids(entry.ids)
        memcpy(s.out.data + s.out.size, entry.ids,
               (OUT_SLACK if s.out.size + OUT_SLACK <= s.out.capacity else count) * sizeof(out_id_t))
        s.out.size += count
        return 0
    before = s.out.size
    token = short_token(t, key)
    if token != NULL:
        s.out.data[s.out.size] = token.ids[0]
        s.out.size += 1
    elif encode_piece(t, s, piece, n, PIECE_NEW_SHORT) < 0:
        return -1
    if remember_short(s, entry, key, piece, n, s.out.data + before, s.out.size - before) < 0:
        return -1
    return 1


cdef inline bint is_new(const Tables* t, Scratch* s, const BatchKey* batch_key, int64_t n) noexcept nogil:
    """Whether a pre-token of ``n`` bytes, not in its home pair, is a short
    one in neither session cache; if so, its slot in the short tokens is
    prefetched, to be asked next (unless the filter says it is no token)."""
    cdef ShortKey key
    if n < 2 or n > SHORT_KEY_BYTES:
        return False
    batch_key_hashed(&key, batch_key)
    if shortcache_holds(shortcache_slot(&s.short, &key), &key):
        return False
    if tokenfilter_may_hold(&t.short_token_filter, key.hash):
        prefetch(shortcache_home(&t.short_tokens, key.hash))
    return True


cdef inline bint is_new_long(const Tables* t, Scratch* s, const uint8_t* piece, int64_t n) noexcept nogil:
    """Whether a pre-token of more than SHORT_KEY_BYTES bytes, up to
    CACHE_MAX_PIECE_BYTES, is in neither general cache and is no token: what
    ``encode_piece`` would merge."""
    cdef uint64_t h = bytestable_hash(&s.cache, piece, n)
    cdef int64_t count
    if slot_entry(s.cache.slots[bytestable_slot(&s.cache, piece, n, h)]) >= 0:
        return False
    if s.general_shared != NULL and sharedgeneral_find(s.general_shared, piece, n, h, &count) != NULL:
        return False
    return (not may_be_long_token(t, h)
            or slot_entry(t.tokens.slots[bytestable_slot(&t.tokens, piece, n, hash_bytes(piece, n))]) < 0)


cdef inline bint may_be_long_token(const Tables* t, uint64_t h) noexcept nogil:
    """False when a pre-token of more than SHORT_KEY_BYTES bytes, ``h`` its hash
    in a session's general cache (by words), is surely no token."""
    return tokenfilter_may_hold(&t.long_token_filter, h)


cdef inline int cache_merged_long(Scratch* s, const uint8_t* piece, int64_t n, const Merging* w) noexcept nogil:
    """Cache the ids ``w`` merged a pre-token of more than SHORT_KEY_BYTES bytes
    into, as ``encode_piece`` would have, unless a copy of it merged side by
    side was cached first. -1 when out of memory."""
    cdef uint64_t h = bytestable_hash(&s.cache, piece, n)
    if slot_entry(s.cache.slots[bytestable_slot(&s.cache, piece, n, h)]) >= 0:
        return 0
    if cache_general(s, piece, n, h, <const out_id_t*>w.token, w.m, True) < 0:
        return -1
    return 0


cdef inline int cache_merged(Scratch* s, const uint8_t* piece, int64_t n, const BatchKey* batch_key,
                             const Merging* w) noexcept nogil:
    """Cache the ids ``w`` merged ``piece`` into, unless a copy of it merged
    side by side was cached first. -1 when out of memory."""
    cdef ShortKey key
    cdef ShortEntry* entry
    batch_key_hashed(&key, batch_key)
    entry = shortcache_slot(&s.short, &key)
    if shortcache_holds(entry, &key):
        return 0
    return remember_short(s, entry, &key, piece, n, <const out_id_t*>w.token, w.m)


cdef inline int encode_missed(const Tables* t, Scratch* s, const uint8_t* piece, int64_t n,
                              const BatchKey* batch_key) noexcept nogil:
    """The ids of one pre-token ``_encode_batch`` did not find in its home pair:
    1 when they were in none of the session's caches, 0 when they were (or
    it is longer than a short key), -1 when out of memory.
    Single bytes too come here on a miss: their 256 entries stay in L1, and
    a branch on "one byte or more", a third of pre-tokens at random, cost
    more in mispredictions than the probe."""
    cdef ShortKey key
    if n <= SHORT_KEY_BYTES:
        batch_key_hashed(&key, batch_key)
        return encode_short(t, s, piece, n, &key)
    return -1 if encode_piece(t, s, piece, n, PIECE_ANY) < 0 else 0
