# The merge rank of each pair of tokens, as encoding asks it: each pair of a
# pre-token that missed every cache, and again after each merge.
#
# Why not the pair map (``_pairmap.pxd``) that training uses: a lookup there
# is murmur3's finaliser (a chain of five multiplies and shifts), then a key
# and a value in two arrays, two cache lines. Here both ids and the rank are
# packed into one 8-byte slot, found by one multiply whose high bits pick the
# slot: one line per probe, and half the memory (gpt2's 108 299 pairs take
# 2 MiB: L2 on a core with 2 MiB of it, L3 on one with 512 KiB, as Zen 3).
# This holds while ids and ranks fit 21 bits each (every vocabulary of up to
# two million tokens); a larger one keeps the pair map ("wide").
# The slots are on huge pages where the OS gives them (``mem_alloc_huge``), as
# the caches' are: a cold call probes them at random, and on 4 KiB pages each
# probe could also miss the TLB (512 pages for gpt2, beside the caches').
#
# Every pre-token's first round of lookups is of byte pairs, so their ranks
# are also kept in a grid by the two bytes: no hash, and a 256 KiB table.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memset

from bpe._memory cimport mem_alloc, mem_alloc_huge, mem_free, mem_free_huge, prefetch, slot_shift
from bpe._pairmap cimport PairMap, pairmap_free, pairmap_get, pairmap_init, pairmap_prefetch, pairmap_set
from bpe._types cimport pack_pair, pair_t, token_t


cdef enum:
    FIELD_BITS = 21                        # an id, or a rank, in a packed slot
    BYTE_PAIRS = 65536                     # the grid: one rank for each two bytes

cdef extern from *:
    """
    #define PAIRRANKS_FIELD_LIMIT ((int64_t)1 << 21)
    #define PAIRRANKS_EMPTY (~(uint64_t)0)
    """
    int64_t FIELD_LIMIT "PAIRRANKS_FIELD_LIMIT"   # ids and ranks below this pack
    uint64_t EMPTY_SLOT "PAIRRANKS_EMPTY"         # its key part exceeds every packed key


cdef struct PairRanks:
    uint64_t* slots          # (left << 42) | (right << 21) | rank, or EMPTY_SLOT
    int64_t mask             # number of slots - 1 (a power of two)
    int shift                # 64 - log2(number of slots)
    int64_t size
    bint wide                # ids or ranks too large to pack: ``pairs`` holds them
    PairMap pairs
    int32_t* byte_grid       # [b0 << 8 | b1]: the rank of the two bytes' tokens, or -1


cdef inline uint64_t _packed_key(token_t left, token_t right) noexcept nogil:
    return (<uint64_t>left << FIELD_BITS) | <uint64_t>right


cdef inline int64_t _home(const PairRanks* t, uint64_t key) noexcept nogil:
    return <int64_t>((key * 0x9E3779B97F4A7C15ULL) >> t.shift)


cdef inline int pairranks_init(PairRanks* t, int64_t expected, int64_t id_limit,
                               int64_t n_ranks) noexcept nogil:
    """Room for about ``expected`` pairs of ids below ``id_limit``, ranks below
    ``n_ranks``; the byte grid empty. -1 when out of memory (then free it)."""
    cdef int64_t n = 16
    t.slots = NULL
    t.pairs.keys = NULL
    t.pairs.values = NULL
    t.size = 0
    t.byte_grid = <int32_t*>mem_alloc(BYTE_PAIRS * sizeof(int32_t))
    if t.byte_grid == NULL:
        return -1
    memset(t.byte_grid, 0xFF, BYTE_PAIRS * sizeof(int32_t))      # -1 everywhere
    t.wide = id_limit > FIELD_LIMIT or n_ranks > FIELD_LIMIT
    if t.wide:
        return pairmap_init(&t.pairs, 2 * expected)
    while n < 2 * expected:
        n *= 2
    t.slots = <uint64_t*>mem_alloc_huge(n * sizeof(uint64_t))
    if t.slots == NULL:
        return -1
    memset(t.slots, 0xFF, n * sizeof(uint64_t))                   # EMPTY_SLOT everywhere
    t.mask = n - 1
    t.shift = slot_shift(n)
    return 0


cdef inline void pairranks_free(PairRanks* t) noexcept nogil:
    if t.slots != NULL:
        mem_free_huge(t.slots, (t.mask + 1) * sizeof(uint64_t))
    mem_free(t.byte_grid)
    pairmap_free(&t.pairs)
    t.slots = NULL
    t.byte_grid = NULL


cdef inline int64_t _slot(const PairRanks* t, uint64_t key) noexcept nogil:
    """The slot holding ``key``, or the empty one where it would go."""
    cdef int64_t i = _home(t, key)
    while t.slots[i] != EMPTY_SLOT and (t.slots[i] >> FIELD_BITS) != key:
        i = (i + 1) & t.mask
    return i


cdef inline int32_t pair_rank(const PairRanks* t, token_t left, token_t right) noexcept nogil:
    """The rank of the pair, or -1 when it does not merge."""
    cdef uint64_t slot
    if t.wide:
        return pairmap_get(&t.pairs, pack_pair(left, right))
    slot = t.slots[_slot(t, _packed_key(left, right))]
    return -1 if slot == EMPTY_SLOT else <int32_t>(slot & ((<uint64_t>1 << FIELD_BITS) - 1))


cdef inline int64_t pairranks_bytes(const PairRanks* t) noexcept nogil:
    """The bytes of the slots a lookup probes (the byte grid aside)."""
    if t.wide:
        return (t.pairs.mask + 1) * <int64_t>(sizeof(pair_t) + sizeof(int32_t))
    return (t.mask + 1) * <int64_t>sizeof(uint64_t)


cdef inline int32_t byte_pair_rank(const PairRanks* t, uint8_t first, uint8_t second) noexcept nogil:
    """The rank of the pair of the two bytes' tokens, or -1 (``pairranks_fill_bytes``)."""
    return t.byte_grid[(<int>first << 8) | second]


cdef inline void pairranks_prefetch(const PairRanks* t, token_t left, token_t right) noexcept nogil:
    """Start loading the slot where the pair is or would go: a caller with many
    pairs to enter prefetches them all, then enters them."""
    if t.wide:
        pairmap_prefetch(&t.pairs, pack_pair(left, right))
    else:
        prefetch(&t.slots[_home(t, _packed_key(left, right))])


cdef inline int _grow(PairRanks* t) noexcept nogil:
    cdef uint64_t* old = t.slots
    cdef int64_t old_n = t.mask + 1
    cdef int64_t i, n = 2 * old_n
    t.slots = <uint64_t*>mem_alloc_huge(n * sizeof(uint64_t))
    if t.slots == NULL:
        t.slots = old
        return -1
    memset(t.slots, 0xFF, n * sizeof(uint64_t))
    t.mask = n - 1
    t.shift -= 1
    for i in range(old_n):
        if old[i] != EMPTY_SLOT:
            t.slots[_slot(t, old[i] >> FIELD_BITS)] = old[i]
    mem_free_huge(old, old_n * sizeof(uint64_t))
    return 0


cdef inline int pairranks_add(PairRanks* t, token_t left, token_t right, int32_t rank) noexcept nogil:
    """Enter the pair as made by ``rank`` unless it is there already (callers
    enter ranks in order: the earliest stays). -1 when out of memory."""
    cdef uint64_t key
    cdef int64_t i
    if t.wide:
        if pairmap_get(&t.pairs, pack_pair(left, right)) >= 0:
            return 0
        return pairmap_set(&t.pairs, pack_pair(left, right), rank)
    key = _packed_key(left, right)
    i = _slot(t, key)
    if t.slots[i] != EMPTY_SLOT:
        return 0
    if 2 * (t.size + 1) > t.mask + 1:         # keep the load at most 1/2: short probes
        if _grow(t) < 0:
            return -1
        i = _slot(t, key)
    t.slots[i] = (key << FIELD_BITS) | <uint64_t>rank
    t.size += 1
    return 0


cdef inline void pairranks_fill_bytes(PairRanks* t, const token_t* byte_ids) noexcept nogil:
    """The grid, once every pair is entered: the rank of each two bytes' tokens.
    Most pairs are absent, each a probe of a random line: a row's slots are
    prefetched while the row before is looked up, or loading a vocabulary
    would wait milliseconds on them one by one."""
    cdef int first, second
    for second in range(256):
        pairranks_prefetch(t, byte_ids[0], byte_ids[second])
    for first in range(256):
        if first < 255:
            for second in range(256):
                pairranks_prefetch(t, byte_ids[first + 1], byte_ids[second])
        for second in range(256):
            t.byte_grid[(first << 8) | second] = pair_rank(t, byte_ids[first], byte_ids[second])
