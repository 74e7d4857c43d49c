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
# * longer, a linked list of parts and each one's rank with the next
#   (``merge_piece``): up to SCANNED_PARTS parts each merge is found by a
#   vectorized scan of the ranks; past that by a min-heap of ``(rank,
#   position)`` with lazy invalidation, so even a 1 MB pre-token takes
#   O(n log n), never O(n^2). Its work arrays (``LongMerge``) belong to the
#   caller: one per session, so threads never share them.
# Either starts from the pre-token's bytes, or, where it holds characters of
# two or more bytes, from their tokens where they merge alone
# (``whole_char_parts``; ``bpe/_wholechars.pxd`` says when that gives the
# same ids).
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from bpe._memory cimport grow, mem_free, prefetch, reserve_fresh
from bpe._pairranks cimport PairRanks, byte_pair_rank, pair_rank, pairranks_free, pairranks_prefetch
from bpe._types cimport out_id_t, token_t
from bpe._wholechars cimport CHAR_ALONE_NOT, WholeChars, char_entry, chars_ready, set_char_entry, wholechars_free

cdef extern from "csrc/mergerule.h":
    void close_gap "bpe_close_gap" (void* array, Py_ssize_t start, Py_ssize_t end) noexcept nogil

cdef enum:
    SHORT_PIECE = 32                    # pre-tokens up to this long merge in a Merging (arrays on the stack)
    SCANNED_PARTS = 256                 # longer ones, up to this many parts, find each merge by a scan; then a heap
    LOOK_UP = 0x7FFFFFFF                # whole_char_parts: a pair rank still to look up (no rank is as high)
    LOOKING_UP = -2                     # Merging.at: its ranks hold some LOOK_UP
    GAP_SLACK = 4                       # entries past a short array of parts that close_gap may touch

cdef extern from *:
    """
    #define MERGERULE_NO_RANK 0xFFFFFFFFu
    """
    uint32_t NO_RANK "MERGERULE_NO_RANK"  # a pair that does not merge, as a uint32 (above every rank)


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
    # The characters that merge alone (``bpe/_wholechars.pxd``), or NULL. A
    # pointer: its tables are filled as characters are met, by rules that are
    # otherwise only read.
    WholeChars* chars


cdef inline void mergerule_free(MergeRule* r) noexcept nogil:
    pairranks_free(&r.pairs)
    mem_free(r.merged_id)
    r.merged_id = NULL
    if r.chars != NULL:
        wholechars_free(r.chars)
        mem_free(r.chars)
        r.chars = NULL


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
    int32_t at                       # the last merge's part, whose neighbours' ranks are on their way; -1: none;
                                     # LOOKING_UP: ranks to look up (``look_up_ranks``) before the first merge


cdef inline void merging_start(const MergeRule* r, Merging* w, const uint8_t* piece, int64_t n,
                               int32_t max_rank) noexcept nogil:
    """Set ``w`` to a pre-token of 1 to SHORT_PIECE bytes, split into bytes (or
    whole characters, where they merge alone by pairs below ``max_rank``)."""
    cdef int64_t i
    cdef uint8_t high = 0
    w.at = -1
    for i in range(n):
        w.token[i] = r.byte_ids[piece[i]]
        high |= piece[i]
    if high >= 0x80 and starts_whole(r):
        w.m = <int32_t>whole_char_parts(r, piece, n, max_rank, w.token, w.ranks)
        w.at = LOOKING_UP            # its first step reads the ranks, by then on their way
        return
    for i in range(n - 1):
        # -1 (no merge) becomes the largest uint32: never below a max_rank.
        w.ranks[i] = <uint32_t>byte_pair_rank(&r.pairs, piece[i], piece[i + 1])
    w.m = <int32_t>n


cdef inline bint starts_whole(const MergeRule* r) noexcept nogil:
    """Whether merges may start from whole characters (the first call that
    asks builds what they need: ``chars_ready``)."""
    return r.chars != NULL and chars_ready(r.chars, &r.pairs)


cdef inline bint holds_multibyte(const uint8_t* piece, int64_t n) noexcept nogil:
    """Whether ``piece[:n]`` holds a byte of 0x80 or more: a character of
    several bytes, maybe one that merges alone."""
    cdef int64_t i
    cdef uint8_t high = 0
    for i in range(n):
        high |= piece[i]
    return high >= 0x80


cdef inline bint continues(uint8_t byte) noexcept nogil:
    """Whether ``byte`` continues a character in UTF-8 (0x80-0xBF)."""
    return (byte & 0xC0) == 0x80


cdef inline int64_t whole_char_parts(const MergeRule* r, const uint8_t* piece, int64_t n, int32_t max_rank,
                                     token_t* token, uint32_t* ranks) noexcept nogil:
    """Write the parts a merge of ``piece`` starts from, and ``ranks[j]``, the
    rank of parts j and j + 1 (-1, the largest uint32, if they do not merge;
    LOOK_UP where a character's pair is still to look up, its slot on its
    way: ``look_up_ranks``); return how many parts. The parts are each
    byte's token, but for a character of two or three bytes that merges
    alone by pairs below ``max_rank``, between neighbours that allow it
    (``bpe/_wholechars.pxd``): its token. Characters of four bytes (rare,
    and past the table) stay bytes."""
    cdef WholeChars* c = r.chars
    cdef int64_t i = 0, m = 0, k = 1
    cdef uint32_t point
    cdef uint64_t entry
    cdef uint8_t byte
    cdef bint whole
    # Each pair of bytes' rank comes from the byte grid; each pair with a
    # character's is prefetched here and read later: the pair table's slots
    # (most not in any cache, cold) are then all on their way at once.
    while i < n:
        byte = piece[i]
        whole = False
        if 0xC2 <= byte <= 0xEF:
            k = 2 if byte < 0xE0 else 3
            if (i + k <= n and continues(piece[i + 1]) and (k == 2 or continues(piece[i + 2]))
                    and (i == 0 or continues(piece[i - 1])) and (i + k == n or piece[i + k] >= 0xC0)):
                if k == 2:
                    point = ((byte & 0x1F) << 6) | (piece[i + 1] & 0x3F)
                else:
                    point = ((byte & 0x0F) << 12) | ((piece[i + 1] & 0x3F) << 6) | (piece[i + 2] & 0x3F)
                if point >= 0x800 or k == 2:         # not an overlong form, which another point's bytes own
                    entry = char_entry(c, point)
                    if entry == 0:
                        entry = char_alone(r, c, piece + i, k)
                        set_char_entry(c, point, entry)
                    if entry != CHAR_ALONE_NOT and <int64_t>(entry >> 32) < max_rank:
                        token[m] = <token_t>((entry & 0xFFFFFFFFULL) - 2)
                        whole = True
        if not whole:
            token[m] = r.byte_ids[byte]
            k = 1
        if m > 0:
            if whole or ranks[m - 1] == LOOK_UP:
                ranks[m - 1] = LOOK_UP
                pairranks_prefetch(&r.pairs, token[m - 1], token[m])
            else:
                ranks[m - 1] = <uint32_t>byte_pair_rank(&r.pairs, piece[i - 1], byte)
        # The pair this part makes with the next is looked up if it is a character.
        ranks[m] = LOOK_UP if whole else 0
        m += 1
        i += k
    return m


cdef inline void look_up_ranks(const MergeRule* r, const token_t* token, uint32_t* ranks, int64_t m) noexcept nogil:
    """Look up the ranks ``whole_char_parts`` left to look up (LOOK_UP)."""
    cdef int64_t j
    for j in range(m - 1):
        if ranks[j] == LOOK_UP:
            ranks[j] = <uint32_t>rule_rank(r, token[j], token[j + 1])


cdef inline uint64_t char_alone(const MergeRule* r, WholeChars* c, const uint8_t* piece, int n) noexcept nogil:
    """The entry (``bpe/_wholechars.pxd``) of the character ``piece[:n]``, 2 or
    3 bytes: merged alone, by every rank, does it end as one token, and do
    the pairs across its edges all rank above the highest it used?"""
    cdef token_t part[3]
    cdef token_t edge[2][5]         # [0]: each part at its left edge in turn; [1]: at its right
    cdef int m = n, n_edges = 1, i, at
    cdef int32_t rank, best, highest = -1
    for i in range(n):
        part[i] = r.byte_ids[piece[i]]
    edge[0][0], edge[1][0] = part[0], part[n - 1]
    while m > 1:
        best, at = -1, -1
        for i in range(m - 1):
            rank = rule_rank(r, part[i], part[i + 1])
            if rank >= 0 and (best < 0 or rank < best):
                best, at = rank, i
        if at < 0:
            return CHAR_ALONE_NOT
        part[at] = rule_merged(r, <uint32_t>best)
        for i in range(at + 1, m - 1):
            part[i] = part[i + 1]
        m -= 1
        highest = best if best > highest else highest
        edge[0][n_edges], edge[1][n_edges] = part[0], part[m - 1]
        n_edges += 1
    for i in range(n_edges):
        if c.after_continued[edge[0][i]] <= highest or c.before_lead[edge[1][i]] <= highest:
            return CHAR_ALONE_NOT
    return (<uint64_t>highest << 32) | <uint64_t>(part[0] + 2)


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
    if at == LOOKING_UP:
        look_up_ranks(r, w.token, w.ranks, m)
    elif at >= 0:
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
    merging_start(r, &w, piece, n, max_rank)
    return merging_finish(r, &w, max_rank, out)


cdef inline int merging_finish(const MergeRule* r, Merging* w, int32_t max_rank, Ids* out) noexcept nogil:
    """Merge ``w`` to the end and append its ids to ``out``. -1 when out of memory."""
    cdef int32_t i
    while merging_step(r, w, max_rank):
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
    uint32_t* part_rank  # the rank of each part and the next, as merges leave it (NO_RANK: none)
    int64_t* heap        # (rank << 32) | position, a min-heap
    int64_t token_capacity
    int64_t next_capacity
    int64_t prev_capacity
    int64_t rank_capacity
    int64_t heap_capacity


cdef inline void longmerge_init(LongMerge* work) noexcept nogil:
    work.part_token = NULL
    work.part_next = work.part_prev = NULL
    work.part_rank = NULL
    work.heap = NULL
    work.token_capacity = work.next_capacity = work.prev_capacity = work.rank_capacity = work.heap_capacity = 0


cdef inline void longmerge_free(LongMerge* work) noexcept nogil:
    mem_free(work.part_token)
    mem_free(work.part_next)
    mem_free(work.part_prev)
    mem_free(work.part_rank)
    mem_free(work.heap)
    longmerge_init(work)


cdef inline int longmerge_reserve(LongMerge* work, int64_t n) noexcept nogil:
    """Work arrays for a pre-token of ``n`` bytes. -1 when out of memory."""
    if (reserve_fresh(<void**>&work.part_token, &work.token_capacity, n, sizeof(token_t), 256) < 0
            or reserve_fresh(<void**>&work.part_next, &work.next_capacity, n, sizeof(int32_t), 256) < 0
            or reserve_fresh(<void**>&work.part_prev, &work.prev_capacity, n, sizeof(int32_t), 256) < 0
            or reserve_fresh(<void**>&work.part_rank, &work.rank_capacity, n, sizeof(uint32_t), 256) < 0
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


cdef inline int64_t merging_start_whole(const MergeRule* r, Merging* w, LongMerge* work, const uint8_t* piece,
                                        int64_t n, int32_t max_rank) noexcept nogil:
    """For a pre-token longer than SHORT_PIECE bytes (``work`` reserved for it):
    its parts by whole characters (``whole_char_parts``) in ``work``, and how
    many; if at most SHORT_PIECE, ``w`` started from them. 0, and neither
    touched, where it holds no character of several bytes (or none merge
    alone, before their tables are built)."""
    cdef int64_t i, m
    if not holds_multibyte(piece, n) or not starts_whole(r):
        return 0
    m = whole_char_parts(r, piece, n, max_rank, work.part_token, work.part_rank)
    if m <= SHORT_PIECE:
        for i in range(m):
            w.token[i] = work.part_token[i]
            w.ranks[i] = work.part_rank[i]
        w.m = <int32_t>m
        w.at = LOOKING_UP
    return m


cdef inline int merge_piece(const MergeRule* r, LongMerge* work, const uint8_t* piece, int64_t n,
                            int32_t max_rank, Ids* out) noexcept nogil:
    """Append the ids of ``piece`` (n >= 2 bytes), merged by the pairs of rank
    below ``max_rank``, to ``out``. -1 when out of memory.

    Each part's rank with the next is kept (``part_rank``), NO_RANK where
    they do not merge. Up to SCANNED_PARTS parts (bytes, or whole characters
    where a merge starts from them), the next merge is found by a scan of
    them (``lowest_rank``); past that, by a heap of (rank, position), whose
    entry is stale where the part's rank has changed since (a rank is one
    token's: two pairs of that rank at one place would merge into it, over
    the same bytes). The heap's upkeep (a branch a level, each a coin toss)
    was most of a long pre-token's time: a line of ``-`` and ``+`` in a
    table of docs, or a run of spaces."""
    cdef int64_t i, m, heap_size = 0
    cdef int64_t key, position, before
    cdef uint32_t rank
    cdef token_t* token
    cdef int32_t* next_part
    cdef int32_t* prev_part
    cdef uint32_t* rank_of
    cdef Merging w
    if n <= SHORT_PIECE:
        return merge_short(r, piece, n, max_rank, out)
    if longmerge_reserve(work, n) < 0:
        return -1
    token = work.part_token
    next_part = work.part_next
    prev_part = work.part_prev
    rank_of = work.part_rank
    m = merging_start_whole(r, &w, work, piece, n, max_rank)
    if 0 < m <= SHORT_PIECE:
        return merging_finish(r, &w, max_rank, out)
    if m > SHORT_PIECE:
        look_up_ranks(r, token, rank_of, m)
    else:
        m = n
        for i in range(n):
            token[i] = r.byte_ids[piece[i]]
        for i in range(n - 1):
            rank_of[i] = <uint32_t>byte_pair_rank(&r.pairs, piece[i], piece[i + 1])
    for i in range(m - 1):
        rank_of[i] = ranked_below(<int32_t>rank_of[i], max_rank)
    rank_of[m - 1] = NO_RANK
    for i in range(m):
        next_part[i] = <int32_t>(i + 1)
        prev_part[i] = <int32_t>(i - 1)
    if m <= SCANNED_PARTS:
        position = lowest_rank(rank_of, m)
        while position >= 0:
            merge_part(r, token, next_part, prev_part, rank_of, m, position, max_rank)
            position = lowest_rank(rank_of, m)
    else:
        for i in range(m - 1):
            if rank_of[i] != NO_RANK:
                heap_push(work.heap, &heap_size, (<int64_t>rank_of[i] << 32) | i)
        while heap_size > 0:
            key = heap_pop(work.heap, &heap_size)
            rank = <uint32_t>(key >> 32)
            position = key & 0xFFFFFFFFLL
            if token[position] < 0 or rank_of[position] != rank:
                continue                # stale: the part was absorbed, or its pair changed since
            before = merge_part(r, token, next_part, prev_part, rank_of, m, position, max_rank)
            if rank_of[position] != NO_RANK:
                heap_push(work.heap, &heap_size, (<int64_t>rank_of[position] << 32) | position)
            if before >= 0 and rank_of[before] != NO_RANK:
                heap_push(work.heap, &heap_size, (<int64_t>rank_of[before] << 32) | before)
    i = 0
    while i < m:
        if ids_reserve(out, 1) < 0:
            return -1
        out.data[out.size] = <out_id_t>token[i]
        out.size += 1
        i = next_part[i]
    return 0


cdef inline int64_t lowest_rank(const uint32_t* rank_of, int64_t m) noexcept nogil:
    """The leftmost of ``m`` parts whose rank with the next (``merge_piece``'s
    ``part_rank``) is the lowest, or -1 where none merges: the lowest by a
    loop the compiler vectorizes, then its first place."""
    cdef uint32_t lowest = NO_RANK
    cdef int64_t i
    for i in range(m):
        lowest = rank_of[i] if rank_of[i] < lowest else lowest
    if lowest == NO_RANK:
        return -1
    i = 0
    while rank_of[i] != lowest:
        i += 1
    return i


cdef inline int64_t merge_part(const MergeRule* r, token_t* token, int32_t* next_part, int32_t* prev_part,
                               uint32_t* rank_of, int64_t m, int64_t position, int32_t max_rank) noexcept nogil:
    """Merge part ``position`` (of ``merge_piece``'s ``m``) with the next, by its
    rank, and update the ranks of its pairs with its new neighbours (both
    prefetched, then looked up). Returns the part before it, or -1."""
    cdef int64_t q = next_part[position]
    cdef int64_t after = next_part[q]
    cdef int64_t before = prev_part[position]
    token[position] = rule_merged(r, rank_of[position])
    token[q] = -1
    rank_of[q] = NO_RANK
    next_part[position] = <int32_t>after
    if after < m:
        prev_part[after] = <int32_t>position
        pairranks_prefetch(&r.pairs, token[position], token[after])
    if before >= 0:
        pairranks_prefetch(&r.pairs, token[before], token[position])
    rank_of[position] = ranked_below(rule_rank(r, token[position], token[after]), max_rank) if after < m else NO_RANK
    if before >= 0:
        rank_of[before] = ranked_below(rule_rank(r, token[before], token[position]), max_rank)
    return before


cdef inline uint32_t ranked_below(int32_t rank, int32_t max_rank) noexcept nogil:
    """``rank`` where it is one (not -1) below ``max_rank``, else NO_RANK."""
    return <uint32_t>rank if <uint32_t>rank < <uint32_t>max_rank else NO_RANK
