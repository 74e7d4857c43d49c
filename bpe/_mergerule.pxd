# The merge rule: how one pre-token's bytes become its ids.
#
# The adjacent pair of highest priority (lowest rank) merges first, the
# leftmost among equals, until no pair can merge: tiktoken's rule, and Hugging
# Face's where ranks are the listed merges' (``EncodeKernel`` says which pairs
# a vocabulary ranks). A ``MergeRule`` holds what the rule reads: each byte's
# token, the rank of each pair (``bpe/_pairranks.pxd``) and the token each
# rank makes. It is built once per tokenizer (``EncodeKernel.__cinit__``) and
# only read after, by any number of threads at once.
#
# Two ways to the same ids:
# * up to SHORT_PIECE bytes (nearly every pre-token), a ``Merging``: a small
#   array of parts and of their pairs' ranks, scanned for the lowest at each
#   step (``merging_step``). A caller may step several in turn, so that each
#   one's pair lookups are on their way while the others merge
#   (``EncodeKernel._merge_fresh``);
# * longer, a linked list of parts and a min-heap of ``(rank, position)`` with
#   lazy invalidation (``merge_piece``), so even a 1 MB pre-token takes
#   O(n log n), never O(n^2). Its work arrays (``LongMerge``) belong to the
#   caller: one per session, so threads never share them.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t

from bpe._memory cimport grow, mem_free, prefetch, reserve_fresh
from bpe._pairranks cimport PairRanks, byte_pair_rank, pair_rank, pairranks_free, pairranks_prefetch
from bpe._types cimport out_id_t, token_t

cdef extern from "csrc/mergerule.h":
    void close_gap "bpe_close_gap" (void* array, Py_ssize_t start, Py_ssize_t end) noexcept nogil

cdef enum:
    SHORT_PIECE = 32                    # pre-tokens up to this long merge without a heap
    GAP_SLACK = 4                       # entries past a short array of parts that close_gap may touch


cdef struct Ids:
    out_id_t* data
    int64_t size
    int64_t capacity
    bint borrowed        # the caller's buffer: never grown or freed here


cdef inline void ids_init(Ids* ids) noexcept nogil:
    ids.data = NULL
    ids.size = ids.capacity = 0
    ids.borrowed = False


cdef inline int ids_reserve(Ids* ids, int64_t extra) noexcept nogil:
    """Room for ``extra`` more ids. -1 when out of memory, or when a borrowed
    buffer is full (its caller sized it to hold every id)."""
    if ids.size + extra <= ids.capacity:
        return 0
    if ids.borrowed:
        return -1
    return grow(<void**>&ids.data, &ids.capacity, ids.size + extra, sizeof(out_id_t), 1024)


cdef struct MergeRule:
    token_t byte_ids[256]    # the token of each single byte
    PairRanks pairs          # the rank of each pair that merges
    token_t* merged_id       # merged_id[rank]: the token the rank makes
    int32_t n_ranks
    # merged_id[rank] == rank + merged_offset for every rank: the id follows
    # the rank, as in GPT-2's, tiktoken's and every vocabulary trained here
    # (256 bytes, the specials, then one token per merge). See ``rule_merged``.
    bint merged_in_order
    int64_t merged_offset


cdef inline void mergerule_free(MergeRule* r) noexcept nogil:
    pairranks_free(&r.pairs)
    mem_free(r.merged_id)
    r.merged_id = NULL


cdef inline int32_t rule_rank(const MergeRule* r, token_t left, token_t right) noexcept nogil:
    return pair_rank(&r.pairs, left, right)


cdef inline token_t rule_merged(const MergeRule* r, uint32_t rank) noexcept nogil:
    """The token that ``rank`` makes.

    Where ids follow ranks, an addition: a merge's new token is what its next
    pair lookups are keyed by, and reading it from ``merged_id`` (200 KB for
    gpt2, 800 KB for o200k: L2 or L3 in a cold call) put a dependent load on
    every merge's critical path."""
    if r.merged_in_order:
        return <token_t>(rank + r.merged_offset)
    return r.merged_id[rank]


cdef inline void rule_prefetch_merged(const MergeRule* r, uint32_t rank) noexcept nogil:
    """Start loading the id that ``rank`` makes (``merged_id``: 200 KB for
    gpt2, mostly out of L1 and L2 in a cold call), if it is one and is read
    (``rule_merged``)."""
    if not r.merged_in_order:
        prefetch(&r.merged_id[rank if rank < <uint32_t>r.n_ranks else 0])


cdef struct Merging:
    # A pre-token of up to SHORT_PIECE bytes being merged (``merging_step``),
    # alone or among others (``EncodeKernel._merge_fresh``).
    token_t token[SHORT_PIECE + GAP_SLACK]   # its parts
    uint32_t ranks[SHORT_PIECE + GAP_SLACK]  # ranks[i]: of parts i and i + 1; -1 (the largest) if they do not merge
    int32_t m                        # parts left
    int32_t at                       # the last merge's part, whose neighbours' ranks are on their way; -1: none


cdef inline void merging_start(const MergeRule* r, Merging* w, const uint8_t* piece, int64_t n) noexcept nogil:
    """Set ``w`` to a pre-token of 1 to SHORT_PIECE bytes, split into bytes."""
    cdef int64_t i
    for i in range(n):
        w.token[i] = r.byte_ids[piece[i]]
    for i in range(n - 1):
        # -1 (no merge) becomes the largest uint32: never below a max_rank.
        w.ranks[i] = <uint32_t>byte_pair_rank(&r.pairs, piece[i], piece[i + 1])
    w.m = <int32_t>n
    w.at = -1


cdef inline bint merging_step(const MergeRule* r, Merging* w, int32_t max_rank) noexcept nogil:
    """One merge of ``w``, by pairs of rank below ``max_rank``: the lowest rank
    first, the leftmost among equals. The ranks its last merge asked for are
    read first; the two it asks for now are prefetched, so that a caller
    merging several side by side finds them there. False when it has no merge
    left."""
    cdef int32_t at = w.at
    cdef int32_t m = w.m
    cdef uint32_t best = <uint32_t>max_rank
    cdef int32_t i
    if at >= 0:
        if at + 1 < m:
            w.ranks[at] = <uint32_t>rule_rank(r, w.token[at], w.token[at + 1])
            rule_prefetch_merged(r, w.ranks[at])
        if at > 0:
            w.ranks[at - 1] = <uint32_t>rule_rank(r, w.token[at - 1], w.token[at])
            rule_prefetch_merged(r, w.ranks[at - 1])
    at = -1
    for i in range(m - 1):
        if w.ranks[i] < best:            # strictly lower: the leftmost wins ties
            best = w.ranks[i]
            at = i
    if at < 0:
        return False
    w.token[at] = rule_merged(r, best)
    close_gap(w.token, at + 1, m - 1)    # the gap left by token[at + 1]
    close_gap(w.ranks, at + 1, m - 1)
    m -= 1
    w.m = m
    w.at = at
    if at + 1 < m:
        pairranks_prefetch(&r.pairs, w.token[at], w.token[at + 1])
    if at > 0:
        pairranks_prefetch(&r.pairs, w.token[at - 1], w.token[at])
    return m > 1


cdef inline int merge_short(const MergeRule* r, const uint8_t* piece, int64_t n, int32_t max_rank,
                            Ids* out) noexcept nogil:
    """``merge_piece`` for a pre-token of 1 to SHORT_PIECE bytes: the same rule,
    found by scanning a small array of pair ranks (``merging_step``) instead of
    keeping a heap, whose upkeep costs more than the scan at these lengths."""
    cdef Merging w
    cdef int32_t i
    merging_start(r, &w, piece, n)
    while merging_step(r, &w, max_rank):
        pass
    if ids_reserve(out, w.m) < 0:
        return -1
    for i in range(w.m):
        out.data[out.size + i] = <out_id_t>w.token[i]
    out.size += w.m
    return 0


cdef struct LongMerge:
    # Work arrays for merging one long pre-token, grown as needed, each with its own capacity.
    token_t* part_token  # token of the part starting at each byte, -1 once absorbed
    int32_t* part_next   # start of the next part (n at the end)
    int32_t* part_prev   # start of the previous part (-1 at the start)
    int64_t* heap        # (rank << 32) | position, a min-heap
    int64_t token_capacity
    int64_t next_capacity
    int64_t prev_capacity
    int64_t heap_capacity


cdef inline void longmerge_init(LongMerge* work) noexcept nogil:
    work.part_token = NULL
    work.part_next = work.part_prev = NULL
    work.heap = NULL
    work.token_capacity = work.next_capacity = work.prev_capacity = work.heap_capacity = 0


cdef inline void longmerge_free(LongMerge* work) noexcept nogil:
    mem_free(work.part_token)
    mem_free(work.part_next)
    mem_free(work.part_prev)
    mem_free(work.heap)
    longmerge_init(work)


cdef inline int longmerge_reserve(LongMerge* work, int64_t n) noexcept nogil:
    """Work arrays for a pre-token of ``n`` bytes. -1 when out of memory."""
    if (reserve_fresh(<void**>&work.part_token, &work.token_capacity, n, sizeof(token_t), 256) < 0
            or reserve_fresh(<void**>&work.part_next, &work.next_capacity, n, sizeof(int32_t), 256) < 0
            or reserve_fresh(<void**>&work.part_prev, &work.prev_capacity, n, sizeof(int32_t), 256) < 0
            # Each merge pushes at most two entries: 3n bounds the heap.
            or reserve_fresh(<void**>&work.heap, &work.heap_capacity, 3 * n, sizeof(int64_t), 768) < 0):
        return -1
    return 0


cdef inline void heap_push(int64_t* heap, int64_t* size, int64_t key) noexcept nogil:
    cdef int64_t i = size[0]
    cdef int64_t parent
    size[0] += 1
    while i > 0:
        parent = (i - 1) >> 1
        if heap[parent] <= key:
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = key


cdef inline int64_t heap_pop(int64_t* heap, int64_t* size) noexcept nogil:
    cdef int64_t top = heap[0]
    cdef int64_t last, i, child
    size[0] -= 1
    if size[0] > 0:
        last = heap[size[0]]
        i = 0
        while True:
            child = 2 * i + 1
            if child >= size[0]:
                break
            if child + 1 < size[0] and heap[child + 1] < heap[child]:
                child += 1
            if heap[child] >= last:
                break
            heap[i] = heap[child]
            i = child
        heap[i] = last
    return top


cdef inline int merge_piece(const MergeRule* r, LongMerge* work, const uint8_t* piece, int64_t n,
                            int32_t max_rank, Ids* out) noexcept nogil:
    """Append the ids of ``piece`` (n >= 2 bytes), merged by the pairs of rank
    below ``max_rank``, to ``out``. -1 when out of memory."""
    cdef int64_t i, q, heap_size = 0
    cdef int64_t key
    cdef int32_t rank, position
    cdef token_t* token
    cdef int32_t* next_part
    cdef int32_t* prev_part
    if n <= SHORT_PIECE:
        return merge_short(r, piece, n, max_rank, out)
    if longmerge_reserve(work, n) < 0:
        return -1
    token = work.part_token
    next_part = work.part_next
    prev_part = work.part_prev
    for i in range(n):
        token[i] = r.byte_ids[piece[i]]
        next_part[i] = <int32_t>(i + 1)
        prev_part[i] = <int32_t>(i - 1)
    for i in range(n - 1):
        rank = byte_pair_rank(&r.pairs, piece[i], piece[i + 1])
        if 0 <= rank < max_rank:
            heap_push(work.heap, &heap_size, (<int64_t>rank << 32) | i)
    while heap_size > 0:
        key = heap_pop(work.heap, &heap_size)
        rank = <int32_t>(key >> 32)
        position = <int32_t>(key & 0xFFFFFFFFLL)
        q = next_part[position]
        # Stale if the part was absorbed, or its pair changed since the push.
        if token[position] < 0 or q >= n or rule_rank(r, token[position], token[q]) != rank:
            continue
        token[position] = rule_merged(r, rank)
        token[q] = -1
        next_part[position] = next_part[q]
        if next_part[q] < n:
            prev_part[next_part[q]] = position
        if next_part[position] < n:
            rank = rule_rank(r, token[position], token[next_part[position]])
            if 0 <= rank < max_rank:
                heap_push(work.heap, &heap_size, (<int64_t>rank << 32) | position)
        if prev_part[position] >= 0:
            rank = rule_rank(r, token[prev_part[position]], token[position])
            if 0 <= rank < max_rank:
                heap_push(work.heap, &heap_size, (<int64_t>rank << 32) | prev_part[position])
    i = 0
    while i < n:
        if ids_reserve(out, 1) < 0:
            return -1
        out.data[out.size] = <out_id_t>token[i]
        out.size += 1
        i = next_part[i]
    return 0
