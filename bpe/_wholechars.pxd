# Characters that merge alone: where a merge may start from a character's
# token instead of its bytes.
#
# Why: a cold document of Chinese, Japanese or Korean is mostly new
# pre-tokens, long runs of three-byte characters, and two of every three
# merges only put a character's own bytes back together. Starting such a run
# from one part per character skips them.
#
# When it gives the same ids. Say a character c's bytes, merged alone by the
# rule, end as one token T, the highest rank used on the way being R. Its
# left edge is whatever part holds its first byte at some step (its first
# byte's token, ..., T); its right edge likewise. Let c's left neighbour be
# empty or end in a continuation byte (0x80-0xBF), its right neighbour be
# empty or start with a byte of 0xC0 or more: so within a run of multi-byte
# characters. If every pair (X, e) of a token X ending in a continuation byte
# and an e of c's left edge, and every pair (e, Y) of an e of its right edge
# and a token Y starting with 0xC0 or more, ranks above R (or does not
# merge), then:
# * nothing merges across c's edges before c is whole: while it is not, one
#   of its own pairs, of rank at most R, is there to merge first;
# * so c's own merges are those it makes alone, in that order;
# * every other merge is the one the rule picks with c already whole: the
#   pairs c's token makes with its neighbours rank above R, so above the pair
#   picked (which ranked at or below c's next own pair);
# and the merge ends where it would. ``char_entry`` keeps, for each code
# point of the Basic Multilingual Plane met so far, whether its character
# merges alone (with its T and R); ``whole_char_parts`` (bpe/_mergerule.pxd)
# starts a merge from those tokens where the neighbours allow.
#
# The tables are built the first time a merge meets a character of two or
# more bytes after the kernel is made (an English-only user never pays for
# them), by one thread while the others merge bytes as before; a
# character's entry is filled by the first thread that needs it, every
# thread writing the same word. Without atomics (``CAN_SHARE`` 0), or with a
# wide pair table, there are none.
from libc.stdint cimport INT32_MAX, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memset

from bpe._memory cimport CAN_SHARE, load_acquire, mem_alloc, mem_calloc, mem_free, store_release, swap_if
from bpe._pairranks cimport EMPTY_SLOT, FIELD_BITS, PairRanks
from bpe._types cimport offset_t, token_t

cdef extern from "csrc/portable.h":
    uint64_t process_id "bpe_process_id" () noexcept nogil     # a forked child's differs

cdef enum:
    CHARS_UNBUILT = 0                   # ``chars_ready`` builds them
    CHARS_BUILDING = 1                  # a thread of the process in the state's high bits is building them
    CHARS_READY = 2
    CHARS_NONE = 3                      # never (no atomics, a wide pair table, out of memory)
    CHARS_STATE_BITS = 8
    CHAR_POINTS = 0x10000               # code points with an entry: the Basic Multilingual Plane
    # A character's entry: 0 not known yet, CHAR_ALONE_NOT that it does not
    # merge alone, else (its R << 32) | (its token + 2).
    CHAR_ALONE_NOT = 1

# A token's edge bytes, while the tables are built.
cdef enum:
    ENDS_CONTINUED = 1                  # its last byte is 0x80-0xBF
    STARTS_LEAD = 2                     # its first byte is 0xC0 or more


cdef struct WholeChars:
    uint64_t state                      # CHARS_* (with the builder's pid), read with acquire
    int32_t* after_continued            # [id]: the lowest rank of a pair (X, id), X ending in a continuation byte
    int32_t* before_lead                # [id]: the lowest rank of a pair (id, Y), Y starting with 0xC0 or more
    uint64_t* char_entry                # [code point]: see CHAR_ALONE_NOT
    int64_t id_limit
    # The vocabulary's tokens (kept alive by the kernel), read once, by the build.
    const uint8_t* token_data
    const offset_t* token_offsets
    const token_t* token_ids
    int64_t n_tokens
    token_t byte_ids[256]


cdef inline void wholechars_init(WholeChars* c, const uint8_t* token_data, const offset_t* token_offsets,
                                 const token_t* token_ids, int64_t n_tokens, const token_t* byte_ids,
                                 int64_t id_limit, bint possible) noexcept nogil:
    """Unbuilt tables over a vocabulary (or none, unless ``possible``)."""
    cdef int k
    c.state = CHARS_UNBUILT if possible and CAN_SHARE else CHARS_NONE
    c.after_continued = c.before_lead = NULL
    c.char_entry = NULL
    c.id_limit = id_limit
    c.token_data, c.token_offsets, c.token_ids, c.n_tokens = token_data, token_offsets, token_ids, n_tokens
    for k in range(256):
        c.byte_ids[k] = byte_ids[k]


cdef inline void wholechars_free(WholeChars* c) noexcept nogil:
    mem_free(c.after_continued)
    mem_free(c.before_lead)
    mem_free(c.char_entry)
    c.after_continued = c.before_lead = NULL
    c.char_entry = NULL


cdef inline int _edges(WholeChars* c, uint8_t* edges) noexcept nogil:
    """Each id's ENDS_CONTINUED and STARTS_LEAD; an id of unknown bytes gets
    both, which only makes fewer characters merge alone."""
    cdef int64_t t, start, end
    cdef token_t token
    memset(edges, ENDS_CONTINUED | STARTS_LEAD, c.id_limit)
    for t in range(c.n_tokens):
        start, end = c.token_offsets[t], c.token_offsets[t + 1]
        token = c.token_ids[t]
        if end > start and 0 <= token < c.id_limit:
            edges[token] = ((ENDS_CONTINUED if 0x80 <= c.token_data[end - 1] <= 0xBF else 0)
                            | (STARTS_LEAD if c.token_data[start] >= 0xC0 else 0))
    for t in range(256):
        if 0 <= c.byte_ids[t] < c.id_limit:
            edges[c.byte_ids[t]] = (ENDS_CONTINUED if 0x80 <= t <= 0xBF else 0) | (STARTS_LEAD if t >= 0xC0 else 0)
    return 0


cdef inline int _build(WholeChars* c, const PairRanks* pairs) noexcept nogil:
    """The lowest ranks across a character's edges, from every pair; the
    characters' entries empty. -1 when out of memory."""
    cdef uint8_t* edges
    cdef int64_t i
    cdef uint64_t slot, field = (<uint64_t>1 << FIELD_BITS) - 1
    cdef int64_t left, right
    cdef int32_t rank
    if pairs.wide:
        return -1
    c.after_continued = <int32_t*>mem_alloc(c.id_limit * sizeof(int32_t))
    c.before_lead = <int32_t*>mem_alloc(c.id_limit * sizeof(int32_t))
    c.char_entry = <uint64_t*>mem_calloc(CHAR_POINTS, sizeof(uint64_t))
    edges = <uint8_t*>mem_alloc(c.id_limit)
    if c.after_continued == NULL or c.before_lead == NULL or c.char_entry == NULL or edges == NULL:
        mem_free(edges)
        return -1
    _edges(c, edges)
    for i in range(c.id_limit):
        c.after_continued[i] = INT32_MAX
        c.before_lead[i] = INT32_MAX
    for i in range(pairs.mask + 1):
        slot = pairs.slots[i]
        if slot == EMPTY_SLOT:
            continue
        left = <int64_t>(slot >> (2 * FIELD_BITS))
        right = <int64_t>((slot >> FIELD_BITS) & field)
        rank = <int32_t>(slot & field)
        if edges[left] & ENDS_CONTINUED and rank < c.after_continued[right]:
            c.after_continued[right] = rank
        if edges[right] & STARTS_LEAD and rank < c.before_lead[left]:
            c.before_lead[left] = rank
    mem_free(edges)
    return 0


cdef inline bint chars_ready(WholeChars* c, const PairRanks* pairs) noexcept nogil:
    """Whether the tables are there to read; the first caller builds them,
    and callers meanwhile are told no. A process forked while its parent
    built them finds them being built by a thread it does not have: its
    first caller builds them anew."""
    cdef uint64_t seen
    cdef uint64_t state = load_acquire(&c.state)
    cdef uint64_t building
    if state == CHARS_READY:
        return True
    if state == CHARS_NONE:
        return False
    building = (process_id() << CHARS_STATE_BITS) | CHARS_BUILDING
    if state == building or not swap_if(&c.state, state, building, &seen):
        return False
    if (state & ((1 << CHARS_STATE_BITS) - 1)) == CHARS_BUILDING:
        wholechars_free(c)                  # what the parent's build had made when it forked
    if _build(c, pairs) < 0:
        wholechars_free(c)
        store_release(&c.state, CHARS_NONE)
        return False
    store_release(&c.state, CHARS_READY)
    return True


cdef inline uint64_t char_entry(const WholeChars* c, uint32_t point) noexcept nogil:
    return load_acquire(&c.char_entry[point])


cdef inline void set_char_entry(WholeChars* c, uint32_t point, uint64_t entry) noexcept nogil:
    store_release(&c.char_entry[point], entry)
