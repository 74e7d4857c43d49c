"""Priority-based BPE encoding over typed buffers, without the GIL.

Why it is shaped like this
--------------------------
Encoding a pre-token repeatedly merges the adjacent pair of highest priority
(lowest rank), the leftmost among equals, until no pair can merge: tiktoken's
rule. A pair (x, y) can merge when the bytes x + y are a merged token; its rank
is that token's place in merge order. The kernel keeps

* ``rule``: the merge rule's tables (``bpe/_mergerule.pxd``, where a
  pre-token's bytes become its ids): the rank of each pair of ids, the token
  each rank makes, built once per tokenizer;
* ``tokens``: byte string -> id, so a pre-token that is itself a token maps
  straight to it (tiktoken does the same);
* per session (pooled, serving one call at a time, kept from call to call),
  caches from pre-token bytes to their ids: text repeats its words.

Scratch state lives in a ``Session`` (``bpe/_session.pyx``) that serves one
call at a time, so one EncodeKernel is safely shared by threads that encode
at the same time.

Why one room of 1,500 lines: the path every pre-token takes (a batch scanned,
keyed, looked up; what missed merged and remembered) runs in the batch loops
here, which must see the kernel's tables and the session's ``Scratch``
inline. What stands apart does: the pre-token caches (``bpe/_caches.pxd``),
the merge rule (``bpe/_mergerule.pxd``), the sessions, each table
(``bpe/_shortcache.pxd``, ``bpe/_bytestable.pxd``, ``bpe/_pairranks.pxd``).
Read it in this order: building (``EncodeKernel.__cinit__``), the pipeline
(``_encode_segment``, ``_encode_batch``, ``_encode_cold``, ``_merge_fresh``),
the entry points, and ``ShortCalls``.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.string cimport memchr, memcpy, memmove

import numpy as np

from bpe._bytestable cimport (FNV_OFFSET, FNV_PRIME, bytestable_add, bytestable_free, bytestable_init_sized,
                              bytestable_slot, hash_by_words, hash_bytes, slot_entry)
from bpe._caches cimport (CACHE_MAX_PIECE_BYTES, OUT_SLACK, PIECE_ANY, Tables, cache_merged, cache_merged_long,
                          encode_missed, encode_piece, is_new, is_new_long, short_token)
from bpe._checks cimport check_ids, check_offsets
from bpe._lists cimport Expanding, PrebuiltInts, expand_run, ids_below, ids_list, lists_of_ids
from bpe._mergerule cimport (SCANNED_PARTS, SHORT_PIECE, Ids, LongMerge, Merging, holds_multibyte, ids_init, ids_reserve,
                             longmerge_free, longmerge_init, longmerge_reserve, merge_piece, merging_start,
                             merging_start_whole, merging_step, mergerule_free, starts_whole, whole_char_parts)
from bpe._memory cimport empty_written_once, mem_alloc, mem_free, next_capacity, prefetch, short_ids
from bpe._pairranks cimport pairranks_add, pairranks_bytes, pairranks_fill_bytes, pairranks_init, pairranks_prefetch
from bpe._session cimport (SCAN_BATCH, Bytes, Scratch, Session, bytes_reserve, release_output, scratch_leave_shared,
                           shared_nearly_full)
from bpe._scanner import metaspace_pair_cuts
from bpe._scanner cimport (FILL_SLACK, N_PATTERNS, PATTERN_METASPACE, Scanner, check_pattern, lead_point,
                           read_ahead, scanner_fill, scanner_init, wide_utf8)
from bpe._shortcache cimport (SHORT_KEY_BYTES, BatchKey, ShortEntry, ShortKey, batch_key_hashed, copy_ids,
                              pair_holding, short_key, short_keys, shortcache_free, shortcache_holds,
                              shortcache_home, shortcache_init, shortcache_insert, shortcache_make_room,
                              shortcache_slot)
from bpe._tokenfilter cimport tokenfilter_add, tokenfilter_free, tokenfilter_init, tokenfilter_may_hold
from bpe._specials cimport Needles, needles_borrow, needles_free, needles_point_at, needles_restart, next_special
from bpe._types cimport offset_t, out_id_t, pack_pair, pair_left, pair_right, pair_t, token_t
from bpe._utf8 cimport UTF8_WIDE_SLACK, utf8_bound, write_utf8
from bpe._wholechars cimport WholeChars, wholechars_init

cdef extern from "csrc/portable.h":
    long detected_l2_cache_bytes "bpe_l2_cache_bytes" () noexcept nogil

cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object text)
    unsigned int PyUnicode_KIND(object text)
    void* PyUnicode_DATA(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)

cdef enum:
    MAX_TOKEN_ID = 0x7FFFFFFE           # ids are token_t (int32) inside the kernel
    WHOLE_SEGMENT = -1               # "pattern" id: no pre-tokenization
    COLD_BATCH = 256                 # pre-tokens scanned at once while the session is cold (else SCAN_BATCH)
    PAIR_BATCH = 16                  # pairs of a token prefetched before they are entered
    MERGE_GROUP = 16                 # new short pre-tokens merged side by side (``_merge_fresh``)
    GROUP_AFTER_MISSES = 2           # a batch after one with this many misses merges its new ones side by side
    NEVER_GROUPED = -1               # ... or none does (``EncodeKernel.group_after_misses``)
    NOT_METASPACE = -1               # ``utf8_of_strs``: a str's UTF-8 as it is (0, 1: ``write_metaspace``'s)



cdef inline void str_parts(object text, const void** source, Py_ssize_t* n_points,
                           int* kind):
    """Where a str's characters are, how many, and their width: 0 for ASCII
    (read in place as UTF-8), else ``PyUnicode_KIND``."""
    source[0] = PyUnicode_DATA(text)
    n_points[0] = PyUnicode_GET_LENGTH(text)
    kind[0] = 0 if PyUnicode_IS_ASCII(text) else PyUnicode_KIND(text)


cdef inline uint32_t point_at(const void* source, int kind, Py_ssize_t k) noexcept nogil:
    """The code point ``k`` of a str's characters (``str_parts``' kind)."""
    if kind == 0 or kind == 1:
        return (<const uint8_t*>source)[k]
    if kind == 2:
        return (<const uint16_t*>source)[k]
    return (<const uint32_t*>source)[k]


def holds_any(text, const uint8_t[::1] marked):
    """Whether ``text`` (a str) holds a code point whose bit is set in ``marked``
    (a bitmap of 0x110000 bits, one byte per eight code points), read in place
    without the GIL: a Hugging Face normalizer asks it of every text, where a
    set of the characters cost more than encoding them."""
    cdef const void* source
    cdef Py_ssize_t n, k
    cdef int kind
    cdef uint32_t point
    cdef bint found = False
    if not isinstance(text, str):
        raise TypeError(f"text is {type(text).__name__}, not str")
    if marked.shape[0] < 0x110000 // 8:
        raise ValueError(f"marked holds {marked.shape[0]} bytes, not {0x110000 // 8}")
    str_parts(text, &source, &n, &kind)
    with nogil:
        for k in range(n):
            point = point_at(source, kind, k)
            if (marked[point >> 3] >> (point & 7)) & 1:
                found = True
                break
    return found


cdef enum:
    PAIR_FILTER_BITS = 1 << 16      # StrNeedles' filter of a needle's first two code points
    FIRST_POINTS = 4                # StrNeedles' first code points that memchr looks for, at most


cdef inline uint32_t pair_slot(uint32_t first, uint32_t second) noexcept nogil:
    return ((first * 0x9E3779B1u) ^ (second * 0x85EBCA77u)) >> 16


#: The longest str ``ShortCalls`` encodes (and ``StrNeedles.found_in`` searches)
#: holding the GIL throughout, in characters: for such a text, releasing and
#: taking back the GIL cost more than the work, and other threads wait no
#: longer than a Python call's worth. A longer one (a document) lets them run.
cdef Py_ssize_t SHORT_CHARS = 1024
SHORT_CALL_CHARS = SHORT_CHARS


cdef class StrNeedles:
    """Needles (non-empty str), prepared once to ask of many texts whether one
    occurs (``found_in``): a Hugging Face pipeline asks it of every text for
    its added tokens (771 in Mistral v0.3's files, most starting with "[").

    A text is read once, in place and without the GIL. At a code point that
    starts some needle, a filter of the needles' first two code points (a bit
    for each pair's hash) passes over most places (``[i]`` in code, where the
    needles are ``[INST]`` and ``[control_8]``); only where it passes are the
    needles with that first code point compared, found by binary search in
    an order sorted by it. A search per needle, and then a comparison with
    each needle at each first code point, each cost more than encoding.
    Where the needles start with at most FIRST_POINTS code points, all below
    256, a str of one byte a character is searched for them by memchr: code
    point by code point, the search ran at 1 GB/s, a seventh of encoding
    code with Mistral's ``<s>`` and ``</s>``."""
    cdef tuple needles                  # sorted by first code point; holds the str alive
    cdef object order                   # order[j]: where needles[j] was among those given
    cdef const void** sources
    cdef Py_ssize_t* lengths
    cdef int* kinds
    cdef uint32_t* firsts               # each needle's first code point, ascending
    cdef Py_ssize_t count
    cdef object first_bits, single_bits, pair_bits
    cdef const uint8_t* first_points    # a bit per code point: some needle starts with it
    cdef const uint8_t* single_points   # ... some needle is it alone
    cdef const uint8_t* pairs           # a bit per pair_slot: some needle starts so
    cdef uint8_t first_bytes[FIRST_POINTS]  # the needles' first code points, where memchr finds them
    cdef int n_first_bytes              # how many; 0 where the search goes code point by code point

    def __cinit__(self, needles):
        self.sources = NULL
        self.lengths = NULL
        self.kinds = NULL
        self.firsts = NULL
        needles = tuple(needles)
        for needle in needles:
            if not isinstance(needle, str) or not needle:
                raise ValueError(f"a needle is {needle!r}, not a non-empty str")
        self.order = sorted(range(len(needles)), key=lambda j: ord(needles[j][0]))
        self.needles = tuple(needles[j] for j in self.order)
        self.count = len(self.needles)
        self.sources = <const void**>mem_alloc((self.count + 1) * sizeof(void*))
        self.lengths = <Py_ssize_t*>mem_alloc((self.count + 1) * sizeof(Py_ssize_t))
        self.kinds = <int*>mem_alloc((self.count + 1) * sizeof(int))
        self.firsts = <uint32_t*>mem_alloc((self.count + 1) * sizeof(uint32_t))
        if self.sources == NULL or self.lengths == NULL or self.kinds == NULL or self.firsts == NULL:
            raise MemoryError()
        first = np.zeros(0x110000, dtype=bool)
        single = np.zeros(0x110000, dtype=bool)
        pairs = np.zeros(PAIR_FILTER_BITS, dtype=bool)
        cdef Py_ssize_t j
        for j in range(self.count):
            needle = self.needles[j]
            str_parts(needle, &self.sources[j], &self.lengths[j], &self.kinds[j])
            self.firsts[j] = ord(needle[0])
            first[ord(needle[0])] = True
            if len(needle) == 1:
                single[ord(needle[0])] = True
            else:
                pairs[pair_slot(ord(needle[0]), ord(needle[1]))] = True
        starts = sorted({ord(needle[0]) for needle in self.needles})
        self.n_first_bytes = len(starts) if len(starts) <= FIRST_POINTS and all(point < 256 for point in starts) else 0
        for j in range(self.n_first_bytes):
            self.first_bytes[j] = starts[j]
        self.first_bits = np.packbits(first, bitorder="little")
        self.single_bits = np.packbits(single, bitorder="little")
        self.pair_bits = np.packbits(pairs, bitorder="little")
        cdef const uint8_t[::1] view = self.first_bits
        self.first_points = &view[0]
        view = self.single_bits
        self.single_points = &view[0]
        view = self.pair_bits
        self.pairs = &view[0]

    def __dealloc__(self):
        mem_free(self.sources)
        mem_free(self.lengths)
        mem_free(self.kinds)
        mem_free(self.firsts)

    def __len__(self):
        return self.count

    @property
    def memchr_bytes(self) -> bytes:
        """The first code points memchr looks for in a str of one byte a
        character (empty where the search goes code point by code point)."""
        return bytes(self.first_bytes[:self.n_first_bytes])

    def found_in(self, text) -> bool:
        """Whether one of the needles occurs in ``text`` (a str)."""
        cdef const void* source
        cdef Py_ssize_t n, k = 0
        cdef int kind
        if not isinstance(text, str):
            raise TypeError(f"text is {type(text).__name__}, not str")
        cdef Py_ssize_t next_at[FIRST_POINTS]
        str_parts(text, &source, &n, &kind)
        self._restart(next_at)
        if n <= SHORT_CHARS:
            return self._next_match(source, kind, n, 0, NULL, next_at) >= 0
        with nogil:
            k = self._next_match(source, kind, n, 0, NULL, next_at)
        return k >= 0

    def spans(self, text) -> list:
        """``(start, end, index)`` of each needle found in ``text`` (a str), ``index``
        among the needles as given: the leftmost first, the longest at one
        position, none overlapping an earlier one (``bpe.specials.special_spans``)."""
        cdef const void* source
        cdef Py_ssize_t n, k = 0, which = 0
        cdef int kind
        if not isinstance(text, str):
            raise TypeError(f"text is {type(text).__name__}, not str")
        cdef Py_ssize_t next_at[FIRST_POINTS]
        str_parts(text, &source, &n, &kind)
        self._restart(next_at)
        found = []
        while True:
            with nogil:
                k = self._next_match(source, kind, n, k, &which, next_at)
            if k < 0:
                return found
            found.append((k, k + self.lengths[which], self.order[which]))
            k += self.lengths[which]

    cdef void _restart(self, Py_ssize_t* next_at) noexcept nogil:
        """Start ``_next_match``'s places of the first bytes afresh, for a new text."""
        cdef Py_ssize_t j
        for j in range(FIRST_POINTS):
            next_at[j] = -2

    cdef Py_ssize_t _next_match(self, const void* source, int kind, Py_ssize_t n, Py_ssize_t k,
                                Py_ssize_t* which, Py_ssize_t* next_at) noexcept nogil:
        """Where the first needle found from ``k`` of the text (``n`` code points) starts,
        with the longest one there in ``which`` (unless NULL: then any); -1 if none.
        ``next_at``: each first byte's next place found in this text (-1 none
        left, -2 not searched: ``_restart``), kept by the caller from one call
        to the next, so that a text is searched once for each, whatever its
        matches (searched again at each, a first byte the text lacks was
        looked for to its end each time)."""
        cdef uint32_t point, slot
        cdef Py_ssize_t j, best, nearest
        cdef const uint8_t* found
        cdef bint by_bytes = kind <= 1 and self.n_first_bytes > 0
        while k < n:
            if by_bytes:
                nearest = n
                for j in range(self.n_first_bytes):
                    if next_at[j] != -1 and next_at[j] < k:
                        found = <const uint8_t*>memchr(<const uint8_t*>source + k, self.first_bytes[j], n - k)
                        next_at[j] = found - <const uint8_t*>source if found != NULL else -1
                    if 0 <= next_at[j] < nearest:
                        nearest = next_at[j]
                if nearest == n:
                    return -1
                k = nearest
            point = point_at(source, kind, k)
            if (self.first_points[point >> 3] >> (point & 7)) & 1:
                if not (self.single_points[point >> 3] >> (point & 7)) & 1:
                    if k + 1 == n:
                        return -1
                    slot = pair_slot(point, point_at(source, kind, k + 1))
                    if not (self.pairs[slot >> 3] >> (slot & 7)) & 1:
                        k += 1
                        continue
                best = -1
                j = self._first_of(point)
                while j < self.count and self.firsts[j] == point:
                    if (best < 0 or self.lengths[j] > self.lengths[best]) and self._at(source, kind, n, k, j):
                        best = j
                        if which == NULL:
                            break
                    j += 1
                if best >= 0:
                    if which != NULL:
                        which[0] = best
                    return k
            k += 1
        return -1

    cdef Py_ssize_t _first_of(self, uint32_t point) noexcept nogil:
        """The first needle that starts with ``point``, or after it (binary search)."""
        cdef Py_ssize_t low = 0, high = self.count, middle
        while low < high:
            middle = (low + high) >> 1
            if self.firsts[middle] < point:
                low = middle + 1
            else:
                high = middle
        return low

    cdef bint _at(self, const void* source, int kind, Py_ssize_t n, Py_ssize_t k, Py_ssize_t j) noexcept nogil:
        """Whether needle ``j`` occurs at ``k`` of the text."""
        cdef Py_ssize_t m = 0
        if self.lengths[j] > n - k:
            return False
        while m < self.lengths[j] and point_at(self.sources[j], self.kinds[j], m) == point_at(source, kind, k + m):
            m += 1
        return m == self.lengths[j]


cdef int utf8_of_strs(Bytes* buffer, Py_ssize_t n_texts, const void** sources,
                      const Py_ssize_t* n_points, const int* kinds, const uint8_t** starts,
                      int64_t* lengths, int metaspace=NOT_METASPACE) noexcept nogil:
    """Point ``starts`` and ``lengths`` at each text's UTF-8 (``str_parts``'s): ASCII
    where it is, the others written one after another into ``buffer``, grown
    once for them all. With ``metaspace`` 0 or 1, each text as
    ``metaspace_text`` writes it (1: a space in front), every one into
    ``buffer``. -1 when out of memory."""
    cdef Py_ssize_t t
    cdef int64_t transcoded = 0
    cdef uint8_t* write_at
    for t in range(n_texts):
        if metaspace != NOT_METASPACE:
            transcoded += 1 + (n_points[t] if kinds[t] == 0 else utf8_bound(kinds[t], n_points[t]))
        elif kinds[t] != 0:
            transcoded += utf8_bound(kinds[t], n_points[t])
    cdef bint wide = wide_utf8()
    if bytes_reserve(buffer, transcoded + (UTF8_WIDE_SLACK if wide else 0)) < 0:
        return -1
    write_at = buffer.data
    for t in range(n_texts):
        if metaspace != NOT_METASPACE:
            starts[t] = write_at
            write_at = write_metaspace(write_at, sources[t], n_points[t], kinds[t], metaspace, wide)
            lengths[t] = write_at - starts[t]
        elif kinds[t] == 0:
            starts[t] = <const uint8_t*>sources[t]
            lengths[t] = n_points[t]
        else:
            starts[t] = write_at
            write_at = write_utf8(kinds[t], sources[t], n_points[t], write_at, wide)
            lengths[t] = write_at - starts[t]
    return 0


def machine_l2_cache_bytes():
    """The bytes of one core's L2 cache, as the C library tells it; 0 where it does not."""
    return detected_l2_cache_bytes()


def _entry_of_id(token_ids, ranked_ids):
    """For each ranked id, the index of the first token with that id, or -1
    (int64). Ids are non-negative (checked before)."""
    token_ids = np.asarray(token_ids, dtype=np.int64)
    ranked_ids = np.asarray(ranked_ids, dtype=np.int64)
    if len(token_ids) == 0:
        return np.full(len(ranked_ids), -1, dtype=np.int64)
    largest = max(int(token_ids.max()), int(ranked_ids.max()) if len(ranked_ids) else 0)
    if largest < 4 * len(token_ids) + 1024:         # dense ids, as every tokenizer's: a lookup table
        first = np.full(largest + 1, -1, dtype=np.int64)
        first[token_ids[::-1]] = np.arange(len(token_ids) - 1, -1, -1)   # the last write (first t) wins
        return first[ranked_ids]
    order = np.argsort(token_ids, kind="stable")
    at = np.minimum(np.searchsorted(token_ids[order], ranked_ids), len(order) - 1)
    return np.where(token_ids[order][at] == ranked_ids, order[at], -1)


cdef class PreparedNeedles:
    """Special tokens (a tuple of bytes) checked and indexed for searching, and
    kept for the next calls while they pass the same tuple (``needles_borrow``)."""
    cdef tuple tokens
    cdef Needles needles
    cdef bint made

    def __cinit__(self, tuple tokens):
        self.tokens = tokens
        needles_point_at(&self.needles, tokens)
        self.made = True

    def __dealloc__(self):
        if self.made:
            needles_free(&self.needles)


#: ``group_after_misses`` values that force one way (tests force each):
#: merging a batch's new pre-tokens side by side in every batch, or never.
EVERY_BATCH_GROUPED = 0
NONE_GROUPED = NEVER_GROUPED

#: A pre-token's length past which its merges are found by scanning its parts'
#: ranks, and the parts past which by a heap (``bpe/_mergerule.pxd``; tests force each).
MERGE_SHORT_PIECE = SHORT_PIECE
MERGE_SCANNED_PARTS = SCANNED_PARTS


def check_path_choices(group_after_misses, l2_cache_bytes) -> None:
    """``EncodeKernel``'s choices among paths that give the same ids, checked (see
    its parameters); ``bpe.encoder.EncoderOptions`` checks its own with this."""
    if group_after_misses is not None and (type(group_after_misses) is not int or group_after_misses < -1):
        raise ValueError(f"group_after_misses must be an int >= -1 or None, not {group_after_misses!r}")
    if l2_cache_bytes is not None and (type(l2_cache_bytes) is not int or l2_cache_bytes < 0):
        raise ValueError(f"l2_cache_bytes must be an int >= 0 or None, not {l2_cache_bytes!r}")


cdef extern from *:
    """
    #define BPE_ALONE_BYTES ((uint32_t)0xFFFFFFFFu)
    """
    uint32_t ALONE_BYTES_ENTRY "BPE_ALONE_BYTES"

# ``alone_ids``' entry for a character the model lacks that stands alone.
ALONE_BYTES = ALONE_BYTES_ENTRY


cdef inline uint32_t alone_entry(const uint32_t* alone_ids, const uint8_t* s, Py_ssize_t i,
                                 int* width) noexcept nogil:
    """``alone_ids``' entry for the character of several bytes at ``i`` (0 past
    the Basic Multilingual Plane, which the table does not cover), and its width."""
    cdef uint32_t cp = lead_point(s, i, width)
    return alone_ids[cp] if cp < 0x10000 else 0


cdef Py_ssize_t alone_ids_run(const uint32_t* alone_ids, const uint8_t* alone, const token_t* byte_ids,
                              const uint8_t* s, Py_ssize_t i, Py_ssize_t n, Ids* out) noexcept nogil:
    """Append the ids of the pre-tokens from ``i`` (where one starts) on that
    are one character known without the caches, and return where the first
    other one starts: a character of several bytes that ``alone_ids`` holds
    (always a pre-token of its own, and one token; or, where its entry is
    ALONE_BYTES, a character the model lacks: its bytes' tokens, which expand
    to the same ids as whatever merging leaves of them); and an ASCII one
    that stands alone in ``alone``, or that ends the segment or comes before
    such a character of several bytes (``next_metaspace_alone`` ends it
    there), its byte's token. Why the ASCII ones: in Chinese or Japanese
    text a line feed or a space between two such characters is most of the
    text that is not them, and each one ended a run to go through the
    scanner's batches alone. ``out`` has room (a byte of text, an id)."""
    cdef out_id_t* at = out.data + out.size
    cdef uint32_t entry
    cdef uint8_t c
    cdef int width, k
    while i < n:
        c = s[i]
        if (c & 0xF0) == 0xE0:
            # A character of three bytes with a token of its own first: most
            # of Chinese and Japanese text, one branch each. (Entries 0 and
            # ALONE_BYTES, one less, wrap to the two largest words.)
            entry = alone_ids[((c & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F)]
            if entry - 1 < ALONE_BYTES_ENTRY - 1:
                at[0] = entry - 1
                at += 1
                i += 3
                continue
        if c < 0x80:
            if (not (alone[c >> 3] >> (c & 7)) & 1 and i + 1 < n
                    and (s[i + 1] < 0xC0 or alone_entry(alone_ids, s, i + 1, &width) == 0)):
                break
            at[0] = byte_ids[c]
            at += 1
            i += 1
            continue
        if c < 0xC0:
            break
        entry = alone_entry(alone_ids, s, i, &width)
        if entry == 0:
            break
        if entry == ALONE_BYTES_ENTRY:
            for k in range(width):
                at[k] = byte_ids[s[i + k]]
            at += width
        else:
            at[0] = entry - 1
            at += 1
        i += width
    out.size = at - out.data
    return i


cdef int check_alone_ids(const uint32_t[::1] alone_ids, const uint8_t[::1] alone, int64_t id_limit) except -1:
    """ValueError unless ``alone_ids`` (``EncodeKernel``'s) holds a word for each
    code point of the Basic Multilingual Plane, 0 for each of one byte or
    that does not stand alone in ``alone``, and ids below ``id_limit`` (or
    ALONE_BYTES)."""
    cdef Py_ssize_t cp
    if alone_ids.shape[0] != 0x10000:
        raise ValueError(f"alone_ids has {alone_ids.shape[0]} entries, not 65536: one for each code point of "
                         "the Basic Multilingual Plane")
    for cp in range(0x10000):
        if alone_ids[cp] and (cp < 0x80 or not (alone[cp >> 3] >> (cp & 7)) & 1):
            raise ValueError(f"alone_ids holds U+{cp:04X}, which "
                             + ("is one byte" if cp < 0x80 else "does not stand alone"))
        if alone_ids[cp] > id_limit and alone_ids[cp] != ALONE_BYTES_ENTRY:
            raise ValueError(f"alone_ids gives U+{cp:04X} the id {alone_ids[cp] - 1}, not below {id_limit}")
    return 0


cdef uint8_t* metaspace_spaces(uint8_t* start, uint8_t* end) noexcept nogil:
    """Write each U+2581 (E2 96 81) of the UTF-8 ``start[:end - start]`` as a
    space, in place; return the new end. Moved down only after the first:
    most such text has none."""
    cdef uint8_t* read = start
    cdef uint8_t* write = start
    cdef uint8_t* found
    while True:
        found = <uint8_t*>memchr(read, 0xE2, end - read)
        if found == NULL:
            break
        if found + 3 <= end and found[1] == 0x96 and found[2] == 0x81:
            if write != read:
                memmove(write, read, found - read)
            write += found - read
            write[0] = 0x20
            write += 1
            read = found + 3
        else:
            if write != read:
                memmove(write, read, found + 1 - read)
            write += found + 1 - read
            read = found + 1
    if write != read:
        memmove(write, read, end - read)
    return write + (end - read)


cdef int metaspace_text(Bytes* buffer, const void* source, Py_ssize_t n_points, int kind, bint prefix,
                        int64_t* length) noexcept nogil:
    """Write into ``buffer`` a str's characters (``str_parts``') as
    ``ShortCalls.metaspace_to_list`` reads them (``write_metaspace``); its
    length in ``length``. -1 when out of memory."""
    cdef bint wide = wide_utf8()
    if bytes_reserve(buffer, 1 + (n_points if kind == 0 else utf8_bound(kind, n_points))
                     + (UTF8_WIDE_SLACK if wide else 0)) < 0:
        return -1
    length[0] = write_metaspace(buffer.data, source, n_points, kind, prefix, wide) - buffer.data
    return 0


cdef uint8_t* write_metaspace(uint8_t* out, const void* source, Py_ssize_t n_points, int kind, bint prefix,
                              bint wide) noexcept nogil:
    """Write at ``out`` a str's characters (``str_parts``') as the kernel reads
    SentencePiece's normalized text where all its normalizer does is write
    each space as ``▁`` (and, with ``prefix``, one more in front): a space in
    front with ``prefix`` (unless there are none), the UTF-8, each U+2581
    (E2 96 81) as a space (``CharacterVocabulary.space``); return the end.
    ``out`` has room for 1 + ``utf8_bound`` bytes (and UTF8_WIDE_SLACK with
    ``wide``)."""
    cdef uint8_t* start = out
    if n_points == 0:
        return out
    if prefix:
        out[0] = 0x20
        out += 1
    if kind == 0:
        memcpy(out, source, n_points)
        return out + n_points
    out = write_utf8(kind, source, n_points, out, wide)
    if kind >= 2:
        # U+2581 only in a str of two or four bytes a character.
        out = metaspace_spaces(start, out)
    return out


cdef class EncodeKernel:
    """The encoding kernel of one vocabulary.

    Parameters
    ----------
    byte_ids : int32 array of 256
        The token of each single byte.
    token_data, token_offsets, token_ids :
        Every ordinary token's bytes (concatenated, with int64 offsets) and id:
        the pre-tokens that map straight to a token.
    ranked_ids : int32 array
        The token each rank makes, rank 0 first; each must be in token_ids.
    merge_pairs : int32 array of (n_ranks, 2), optional
        None: tiktoken's rule. Ranks are the merged tokens' own, and every split
        of a ranked token into two tokens is a pair that makes it, so any two
        parts whose bytes join into a token merge. Given: Hugging Face's rule.
        Rank k is the pair ``merge_pairs[k]`` alone (which makes
        ``ranked_ids[k]``; a pair listed twice keeps its first rank), and only
        listed pairs merge.
    whole_tokens : bool
        Whether a pre-token that is itself a token maps straight to it
        (tiktoken's rule; Hugging Face's ``ignore_merges``). If not, only the
        tokens that the merges make of their own bytes do, which is what
        merging would give (Hugging Face's rule otherwise; SentencePiece's).

    The rest choose among paths that give the same ids (``bpe.encoder.EncoderOptions``
    holds an encoder's; tests force each path):

    group_after_misses : int, optional
        The misses in a batch after which the next merges its new short
        pre-tokens side by side (``_encode_cold``): 0 every batch, -1 none,
        None the kernel's choice (see the end of ``__cinit__``).
    l2_cache_bytes : int, optional
        A core's L2 cache, which that choice compares the pair table with:
        None the machine's (``machine_l2_cache_bytes``), 0 unknown.
    merged_ids_by_offset : bool
        Whether a merge's token is found by adding an offset to its rank where
        every merged id follows its rank (``rule_merged``), else always read
        from the table.
    whole_chars : bool
        Whether a merge may start from a character's token where its bytes
        merge alone (``bpe/_wholechars.pxd``), else always from bytes.

    alone : uint8 array of 0x110000 / 8, optional
        For the metaspace pattern: the code points (a bit each, as
        ``holds_any``'s bitmap) that stand alone as pre-tokens, in place of
        tabs and line feeds (``bpe.charlevel``: the characters no piece of
        several characters holds).
    joined : uint8 array of 128 * 128 / 8, optional
        With ``alone``: bit 128 * a + b set for the ASCII characters a and b
        that may stay side by side; the metaspace scanner cuts between others
        (those that no piece holds side by side).
    alone_ids : uint32 array of 0x10000, optional
        With ``alone``: for a character of several bytes of the Basic
        Multilingual Plane that stands alone, 1 + the token its bytes merge
        to, or ALONE_BYTES where its bytes' own tokens are as good (the ids
        they and any merge of them stand for are the same: a character the
        model lacks), else 0 (``bpe.charlevel``). Such a character is always
        a pre-token of its own and always the same ids, so a run of them is
        read straight into the ids, past the scanner's batches and the
        caches (``alone_ids_run``). Chinese and Japanese text is mostly such
        characters.
    read_alone_ids : bool
        Whether ``alone_ids`` is read, else such characters go through the
        caches as any pre-token.
    """
    cdef:
        Tables t                # the vocabulary as the caches' misses ask it (``bpe/_caches.pxd``)
        # The special tokens the last call searched for: most calls pass the same ones.
        PreparedNeedles prepared_needles
        # Misses in a batch after which the next merges its new pre-tokens side
        # by side: GROUP_AFTER_MISSES, or NEVER_GROUPED where the pair table fits
        # in a core's L2 cache (see the end of __cinit__).
        Py_ssize_t group_after_misses
        # The metaspace scanner's code points that stand alone (``alone``), held
        # here, and where they are; NULL for none.
        object alone_bits, joined_bits, pair_cut_bytes
        const uint8_t* alone
        const uint8_t* joined
        const uint8_t* pair_cuts    # ``metaspace_pair_cuts``' table, for windows of ASCII
        object alone_id_array
        const uint32_t* alone_ids   # ``alone_ids``, or NULL
        object token_arrays         # what the whole characters' tables are built from, kept alive

    def __cinit__(self, const token_t[::1] byte_ids, const uint8_t[::1] token_data,
                  const offset_t[::1] token_offsets, const token_t[::1] token_ids,
                  const token_t[::1] ranked_ids, const token_t[:, ::1] merge_pairs=None,
                  bint whole_tokens=True, group_after_misses=None, l2_cache_bytes=None,
                  bint merged_ids_by_offset=True, alone=None, joined=None, bint whole_chars=True,
                  alone_ids=None, bint read_alone_ids=True):
        cdef Py_ssize_t n_tokens = token_ids.shape[0]
        cdef Py_ssize_t t, k
        cdef int64_t start
        cdef const int64_t[::1] entry_of
        cdef const uint8_t* data = &token_data[0] if token_data.shape[0] > 0 else NULL
        cdef const uint8_t[::1] alone_view
        if byte_ids.shape[0] != 256:
            raise ValueError(f"byte_ids has {byte_ids.shape[0]} entries, not 256")
        check_path_choices(group_after_misses, l2_cache_bytes)
        self.alone = NULL
        if alone is not None:
            self.alone_bits = np.ascontiguousarray(alone, dtype=np.uint8)
            if self.alone_bits.shape != (0x110000 // 8,):
                raise ValueError(f"alone has shape {self.alone_bits.shape}, not ({0x110000 // 8},): a bit "
                                 "for each code point")
            if (self.alone_bits[0x2581 >> 3] >> (0x2581 & 7)) & 1:
                raise ValueError("alone holds U+2581, which the metaspace scanner never cuts alone")
            alone_view = self.alone_bits
            self.alone = &alone_view[0]
        self.joined = NULL
        if joined is not None:
            if alone is None:
                raise ValueError("joined goes with alone")
            self.joined_bits = np.ascontiguousarray(joined, dtype=np.uint8)
            if self.joined_bits.shape != (128 * 128 // 8,):
                raise ValueError(f"joined has shape {self.joined_bits.shape}, not ({128 * 128 // 8},): a bit "
                                 "for each pair of ASCII characters")
            alone_view = self.joined_bits
            self.joined = &alone_view[0]
        self.pair_cuts = NULL
        if alone is not None:
            self.pair_cut_bytes = metaspace_pair_cuts(self.alone_bits, self.joined_bits)
            alone_view = self.pair_cut_bytes
            self.pair_cuts = &alone_view[0]
        if merge_pairs is not None and (merge_pairs.shape[0] != ranked_ids.shape[0] or merge_pairs.shape[1] != 2):
            raise ValueError(f"merge_pairs is {merge_pairs.shape[0]} x {merge_pairs.shape[1]}, not "
                             f"{ranked_ids.shape[0]} x 2 (a pair for each rank)")
        cdef int64_t id_limit = max(int(np.max(token_ids)) if n_tokens > 0 else 0, int(np.max(byte_ids))) + 1
        cdef const uint32_t[::1] ids_view
        self.alone_ids = NULL
        if alone_ids is not None:
            if alone is None:
                raise ValueError("alone_ids goes with alone")
            self.alone_id_array = np.ascontiguousarray(alone_ids, dtype=np.uint32)
            check_alone_ids(self.alone_id_array, self.alone_bits, id_limit)
            if read_alone_ids:
                ids_view = self.alone_id_array
                self.alone_ids = &ids_view[0]
        # The tables are built first: __dealloc__ frees whatever was allocated.
        # A vocabulary has about two pairs for each rank (splits of its tokens).
        if (bytestable_init_sized(&self.t.tokens, n_tokens, token_data.shape[0]) < 0
                or pairranks_init(&self.t.rule.pairs, 2 * ranked_ids.shape[0], id_limit, ranked_ids.shape[0]) < 0):
            raise MemoryError()
        check_offsets(token_offsets, n_tokens, token_data.shape[0], "token arrays")
        # Ids become uint32 outputs and index the callers' tables: none may be negative.
        check_ids(token_ids, MAX_TOKEN_ID + 1, "token ids")
        check_ids(byte_ids, MAX_TOKEN_ID + 1, "byte_ids")
        check_ids(ranked_ids, MAX_TOKEN_ID + 1, "ranked ids")
        if merge_pairs is not None:
            # Pair keys pack ids below the limit the table was made for.
            check_ids(ranked_ids, id_limit, "ranked ids")
            for k in range(merge_pairs.shape[0]):
                if not (0 <= merge_pairs[k, 0] < id_limit and 0 <= merge_pairs[k, 1] < id_limit):
                    raise ValueError(f"merge pair {k} ({merge_pairs[k, 0]}, {merge_pairs[k, 1]}) holds an id "
                                     f"not in [0, {id_limit})")
        for t in range(256):
            self.t.rule.byte_ids[t] = byte_ids[t]
        self.t.rule.n_ranks = <int32_t>ranked_ids.shape[0]
        self.t.rule.merged_id = <token_t*>mem_alloc(max(self.t.rule.n_ranks, 1) * sizeof(token_t))
        if self.t.rule.merged_id == NULL:
            raise MemoryError()
        self.t.rule.merged_offset = ranked_ids[0] if self.t.rule.n_ranks > 0 else 0
        self.t.rule.merged_in_order = merged_ids_by_offset
        for k in range(self.t.rule.n_ranks):
            self.t.rule.merged_id[k] = ranked_ids[k]
            if ranked_ids[k] != self.t.rule.merged_offset + k:
                self.t.rule.merged_in_order = False
        if merge_pairs is not None:
            for k in range(self.t.rule.n_ranks):
                if pairranks_add(&self.t.rule.pairs, merge_pairs[k, 0], merge_pairs[k, 1], <int32_t>k) < 0:
                    raise MemoryError()
            pairranks_fill_bytes(&self.t.rule.pairs, self.t.rule.byte_ids)
            self._add_whole_tokens(token_data, token_offsets, token_ids,
                                   None if whole_tokens else self._merged_to_themselves(token_data, token_offsets,
                                                                                         token_ids))
        else:
            # Every split of a ranked token into two tokens is a pair that makes
            # it: the token table finds the splits, so it is made first.
            self._add_whole_tokens(token_data, token_offsets, token_ids, None)
            entry_of = _entry_of_id(token_ids, ranked_ids)
            for k in range(self.t.rule.n_ranks):
                t = entry_of[k]
                if t < 0:
                    raise ValueError(f"ranked id {ranked_ids[k]} (rank {k}) is not among the token ids")
                start = token_offsets[t]
                if self._register_splits(<int32_t>k, data + start, token_offsets[t + 1] - start,
                                         token_data.shape[0] - start) < 0:
                    raise MemoryError()
            pairranks_fill_bytes(&self.t.rule.pairs, self.t.rule.byte_ids)
            if not whole_tokens:
                # SentencePiece's rule: a pre-token is merged even when it is a
                # token. The tables the splits were found in are made again
                # with only the tokens that merging makes of their own bytes.
                kept = self._merged_to_themselves(token_data, token_offsets, token_ids)
                bytestable_free(&self.t.tokens)
                shortcache_free(&self.t.short_tokens)
                tokenfilter_free(&self.t.short_token_filter)
                tokenfilter_free(&self.t.long_token_filter)
                if bytestable_init_sized(&self.t.tokens, n_tokens, token_data.shape[0]) < 0:
                    raise MemoryError()
                self._add_whole_tokens(token_data, token_offsets, token_ids, kept)
        # Only now: the merges above (``_merged_to_themselves``) would build
        # the whole characters' tables while loading.
        self._start_whole_chars(token_data, token_offsets, token_ids, id_limit, whole_chars)
        # Merging a cold batch's new pre-tokens side by side (``_merge_fresh``)
        # lets one's pair lookups wait while the others merge, and costs a
        # mispredicted branch or two a step: the step before was another
        # pre-token's, of another length, so no branch history foretells where
        # this one's loops end. Where the pair table fits in a core's L2 cache
        # the lookups hardly wait, and one by one is faster; measured on a Xeon
        # with 2 MiB of L2, 10 MB cold: gpt2 (2 MiB of pairs) 8 % faster on
        # code_linux, level on prose_en; side by side level to 15 % faster for
        # cl100k and o200k (4 and 8 MiB), and level to 18 % faster for every
        # vocabulary on a Zen 3 with 512 KiB (docs/performance.md). Where the
        # size is unknown: side by side.
        if l2_cache_bytes is None:
            l2_cache_bytes = detected_l2_cache_bytes()
        if group_after_misses is not None:
            self.group_after_misses = group_after_misses
        elif l2_cache_bytes == 0 or pairranks_bytes(&self.t.rule.pairs) > l2_cache_bytes:
            self.group_after_misses = GROUP_AFTER_MISSES
        else:
            self.group_after_misses = NEVER_GROUPED

    cdef _start_whole_chars(self, const uint8_t[::1] token_data, const offset_t[::1] token_offsets,
                            const token_t[::1] token_ids, int64_t id_limit, bint whole_chars):
        """Let merges start from characters that merge alone (``bpe/_wholechars.pxd``:
        its tables are built when a merge first meets such a character, from
        the pair table, complete by now, and these arrays)."""
        self.t.rule.chars = <WholeChars*>mem_alloc(sizeof(WholeChars))
        if self.t.rule.chars == NULL:
            raise MemoryError()
        self.token_arrays = (token_data, token_offsets, token_ids)
        wholechars_init(self.t.rule.chars, &token_data[0] if token_data.shape[0] > 0 else NULL,
                        &token_offsets[0], &token_ids[0] if token_ids.shape[0] > 0 else NULL,
                        token_ids.shape[0], self.t.rule.byte_ids, id_limit, whole_chars)

    cdef _add_whole_tokens(self, const uint8_t[::1] token_data, const offset_t[::1] token_offsets,
                           const token_t[::1] token_ids, object keep):
        """Enter the tokens that pre-tokens map straight to (all, or those where
        ``keep``, a bool array, is true) in the token table, and those of 2 to
        SHORT_KEY_BYTES bytes again among the short tokens, in entries a short
        pre-token's key finds in one probe: the first thing a short pre-token
        missing from a session's cache asks is whether it is a token."""
        cdef Py_ssize_t n_tokens = token_ids.shape[0]
        cdef Py_ssize_t t
        cdef int64_t length
        cdef int64_t n_short = 0, n_long = 0
        cdef int64_t short_slots
        cdef ShortKey key
        cdef ShortEntry* slot
        cdef uint32_t token_id
        cdef const uint8_t* data = &token_data[0] if token_data.shape[0] > 0 else NULL
        cdef const uint8_t[::1] kept = (np.ones(n_tokens, dtype=np.uint8) if keep is None
                                        else np.ascontiguousarray(keep, dtype=np.uint8))
        for t in range(n_tokens):
            length = token_offsets[t + 1] - token_offsets[t]
            if not kept[t] or length == 0:
                continue
            if bytestable_add(&self.t.tokens, data + token_offsets[t], length, token_ids[t], False) < 0:
                raise MemoryError()
            if 2 <= length <= SHORT_KEY_BYTES:
                n_short += 1
            elif length > SHORT_KEY_BYTES:
                n_long += 1
        short_slots = next_capacity(0, 1024, 2 * n_short)
        if (shortcache_init(&self.t.short_tokens, short_slots, short_slots) < 0
                or tokenfilter_init(&self.t.short_token_filter, n_short) < 0
                or tokenfilter_init(&self.t.long_token_filter, n_long) < 0):
            raise MemoryError()
        for t in range(n_tokens):
            length = token_offsets[t + 1] - token_offsets[t]
            if kept[t] and length > SHORT_KEY_BYTES:
                tokenfilter_add(&self.t.long_token_filter, hash_by_words(data + token_offsets[t], length))
            if kept[t] and 2 <= length <= SHORT_KEY_BYTES:
                short_key(&key, data + token_offsets[t], length, token_data.shape[0] - token_offsets[t])
                slot = shortcache_slot(&self.t.short_tokens, &key)
                token_id = <uint32_t>token_ids[t]
                if not shortcache_holds(slot, &key):
                    shortcache_insert(&self.t.short_tokens, slot, &key, &token_id, 1)
                    tokenfilter_add(&self.t.short_token_filter, key.hash)
                else:
                    slot.ids[0] = token_id      # the later id, as in the token table

    cdef object _merged_to_themselves(self, const uint8_t[::1] token_data, const offset_t[::1] token_offsets,
                                      const token_t[::1] token_ids):
        """Which tokens the merges make of their own bytes (a bool array): under
        Hugging Face's rule a pre-token is merged even when it is a token, and
        for these the token is what merging gives, so they may map straight to
        it. One GIL release for the whole vocabulary."""
        cdef Py_ssize_t n = token_ids.shape[0]
        cdef Py_ssize_t t
        cdef int64_t length
        cdef int failed = 0
        cdef LongMerge work
        cdef Ids out
        kept = np.zeros(n, dtype=np.uint8)
        cdef uint8_t[::1] kept_view = kept
        ids_init(&out)
        longmerge_init(&work)
        try:
            with nogil:
                for t in range(n):
                    length = token_offsets[t + 1] - token_offsets[t]
                    if length < 2:
                        kept_view[t] = length == 1 and self.t.rule.byte_ids[token_data[token_offsets[t]]] == token_ids[t]
                        continue
                    out.size = 0
                    if merge_piece(&self.t.rule, &work, &token_data[token_offsets[t]], length,
                                   self.t.rule.n_ranks, &out) < 0:
                        failed = 1
                        break
                    kept_view[t] = out.size == 1 and out.data[0] == <out_id_t>token_ids[t]
            if failed:
                raise MemoryError()
            return kept.astype(bool)
        finally:
            mem_free(out.data)
            longmerge_free(&work)

    cdef int _register_splits(self, int32_t rank, const uint8_t* token, int64_t length,
                              int64_t readable) noexcept nogil:
        """Enter every split of ``token`` into two tokens in the pair map as made by
        ``rank`` (unless an earlier rank makes it). -1 when out of memory.

        Most of building a kernel is here, and each probe is a cache miss: so the
        slots of the short prefixes and suffixes are prefetched first, and then
        probed while the others are on their way; and the pairs found are
        prefetched in the pair map before they are entered."""
        cdef ShortKey prefix[SHORT_KEY_BYTES + 1]      # by length, 2 to SHORT_KEY_BYTES
        cdef ShortKey suffix[SHORT_KEY_BYTES + 1]
        cdef pair_t pairs[PAIR_BATCH]
        cdef int64_t split, n, left, right, n_pairs = 0
        cdef uint64_t prefix_hash = FNV_OFFSET
        for n in range(2, min(length, SHORT_KEY_BYTES + 1)):
            short_key(&prefix[n], token, n, readable)
            prefetch(shortcache_home(&self.t.short_tokens, prefix[n].hash))
            short_key(&suffix[n], token + length - n, n, readable - (length - n))
            prefetch(shortcache_home(&self.t.short_tokens, suffix[n].hash))
        for split in range(1, length):
            # Longer prefixes are hashed incrementally (FNV-1a extends byte by byte),
            # so finding which prefixes are tokens costs O(length), not O(length^2):
            # a legitimate token can be megabytes long. Only a prefix that is a
            # token has its suffix looked up.
            prefix_hash = (prefix_hash ^ token[split - 1]) * FNV_PRIME
            left = self._token_of(token, split, prefix, prefix_hash)
            if left < 0:
                continue
            n = length - split
            right = self._token_of(token + split, n, suffix,
                                   hash_bytes(token + split, n) if n > SHORT_KEY_BYTES else 0)
            if right < 0:
                continue
            pairs[n_pairs] = pack_pair(<token_t>left, <token_t>right)
            pairranks_prefetch(&self.t.rule.pairs, <token_t>left, <token_t>right)
            n_pairs += 1
            if n_pairs == PAIR_BATCH:
                if self._register_pairs(pairs, n_pairs, rank) < 0:
                    return -1
                n_pairs = 0
        return self._register_pairs(pairs, n_pairs, rank)

    cdef int _register_pairs(self, const pair_t* pairs, int64_t n, int32_t rank) noexcept nogil:
        """Enter each of ``pairs[:n]`` as made by ``rank`` unless an earlier rank makes
        it. -1 when out of memory."""
        cdef int64_t i
        for i in range(n):
            if pairranks_add(&self.t.rule.pairs, pair_left(pairs[i]), pair_right(pairs[i]), rank) < 0:
                return -1
        return 0

    cdef inline int64_t _token_of(self, const uint8_t* s, int64_t n, const ShortKey* keys,
                                  uint64_t hash) noexcept nogil:
        """The id of the token ``s[:n]``, or -1: a single byte from ``byte_ids``, up
        to SHORT_KEY_BYTES from one probe of the short tokens with ``keys[n]``, a
        longer one from the token table with its FNV-1a ``hash``."""
        cdef ShortEntry* slot
        cdef int64_t entry
        if n == 1:
            return self.t.rule.byte_ids[s[0]]
        if n <= SHORT_KEY_BYTES:
            slot = shortcache_slot(&self.t.short_tokens, &keys[n])
            return slot.ids[0] if shortcache_holds(slot, &keys[n]) else -1
        entry = slot_entry(self.t.tokens.slots[bytestable_slot(&self.t.tokens, s, n, hash)])
        return -1 if entry < 0 else self.t.tokens.values[entry]

    @property
    def pair_table(self):
        """``(layout, pairs, slots)`` of the pair ranks: "packed" or "wide" (see
        ``bpe/_pairranks.pxd``), for tests to know which they hold."""
        if self.t.rule.pairs.wide:
            return "wide", self.t.rule.pairs.pairs.size, self.t.rule.pairs.pairs.mask + 1
        return "packed", self.t.rule.pairs.size, self.t.rule.pairs.mask + 1

    def may_be_short_token(self, bytes piece):
        """False when the filter of short tokens says ``piece`` (2 to
        SHORT_KEY_BYTES bytes) is surely no token, True when it may be one:
        for tests, which check it says True for every token."""
        cdef ShortKey key
        if not 2 <= len(piece) <= SHORT_KEY_BYTES:
            raise ValueError(f"a short piece is of 2 to {SHORT_KEY_BYTES} bytes, not {len(piece)}")
        short_key(&key, <const uint8_t*><const char*>piece, len(piece), len(piece))
        return bool(tokenfilter_may_hold(&self.t.short_token_filter, key.hash))

    @property
    def merges_side_by_side(self):
        """Whether a cold batch's new pre-tokens are merged side by side unless
        its options force either path (``group_after_misses``), for tests to know."""
        return self.group_after_misses != NEVER_GROUPED

    def merges_alone(self, bytes char):
        """The token a merge starts the character ``char`` (its UTF-8 bytes) as,
        between neighbours of several bytes (``bpe/_wholechars.pxd``), or None
        where it starts from its bytes: for tests to know the path is taken."""
        cdef token_t parts[4]
        cdef uint32_t ranks[4]
        cdef const uint8_t* data = <const uint8_t*><const char*>char
        try:
            one = len(char.decode("utf-8")) == 1 and len(char) <= 3
        except UnicodeDecodeError:
            one = False
        if not one:
            raise ValueError(f"not one character of 1 to 3 bytes: {char!r}")
        if len(char) == 1 or not starts_whole(&self.t.rule):
            return None
        if whole_char_parts(&self.t.rule, data, len(char), self.t.rule.n_ranks, parts, ranks) != 1:
            return None
        return parts[0]

    @property
    def merged_ids(self):
        """How a merge's token is found: "offset" (its rank plus one offset: the
        ids follow the ranks) or "table" (``merged_id``), for tests to know."""
        return "offset" if self.t.rule.merged_in_order else "table"

    def __dealloc__(self):
        bytestable_free(&self.t.tokens)
        shortcache_free(&self.t.short_tokens)
        tokenfilter_free(&self.t.short_token_filter)
        tokenfilter_free(&self.t.long_token_filter)
        mergerule_free(&self.t.rule)

    cdef int _encode_segment(self, Scratch* s, const uint8_t* data, int64_t n,
                             int pattern) noexcept nogil:
        """Append the ids of one segment (text between special tokens).

        A batch at a time, in three passes: the scanner writes the pre-tokens'
        ends (a window's at once); their keys are made and their home slots
        in the short cache prefetched; then they are looked up. Each pass is a
        short loop with no branch on what the text says, and the lookups find
        their cache lines on the way. While the session is cold (the batch
        before missed GROUP_AFTER_MISSES or more), the lookup pass notes the
        batch's misses as it copies its hits, the new ones are merged side by
        side, and the misses' ids go in among the hits' (``_encode_cold``).
        """
        cdef Py_ssize_t i = 0
        cdef Py_ssize_t batch, missed
        cdef Py_ssize_t group_after = self.group_after_misses
        cdef bint cold
        cdef Scanner scanner
        cdef Py_ssize_t ends_from_start[1 + COLD_BATCH + FILL_SLACK]
        cdef Py_ssize_t* ends = ends_from_start + 1       # ends[-1]: where the batch starts
        cdef BatchKey keys[COLD_BATCH + FILL_SLACK]
        if pattern == WHOLE_SEGMENT:
            return encode_piece(&self.t, s, data, n, PIECE_ANY)
        scanner_init(&scanner, pattern, data, n)
        if pattern == PATTERN_METASPACE:
            scanner.alone, scanner.joined, scanner.pair_cuts = self.alone, self.joined, self.pair_cuts
            scanner.held = self.alone_ids
        # Every id covers at least one byte: room for n ids serves the segment.
        if ids_reserve(&s.out, n) < 0:
            return -1
        while i < n:
            if scanner.held != NULL and data[i] >= 0xC0:
                # The batch before ended here, before a character the table holds.
                i = alone_ids_run(scanner.held, self.alone, self.t.rule.byte_ids, data, i, n, &s.out)
                if i >= n:
                    break
            ends_from_start[0] = i           # ends[-1]
            cold = 0 <= group_after <= s.missed
            batch = scanner_fill(&scanner, i, ends, COLD_BATCH if cold else SCAN_BATCH)
            # Grown here if the batch's misses could fill it, not as they come:
            # growing moves every entry, and the keys hold their home slots.
            # A shared table, near its budget, is left here for the session's own.
            if s.short.shared != NULL and shared_nearly_full(&s.short, batch):
                scratch_leave_shared(s)
            shortcache_make_room(&s.short, batch)
            short_keys(keys, data, n, i, ends, batch, &s.short)
            if cold and s.out.size + OUT_SLACK * batch <= s.out.capacity:
                # Cold: the batch's misses are found as its hits are copied,
                # merged side by side, then put in among them. (Without room
                # for the hits' four lanes, near the end of a caller's exact
                # ``out``, its misses are merged one by one instead.)
                missed = self._encode_cold(s, data, ends, keys, batch)
            else:
                missed = self._encode_batch(s, data, ends, keys, batch)
            if missed < 0:
                return -1
            s.missed = missed
            if batch > SCAN_BATCH:          # a cold batch's, as if of SCAN_BATCH
                s.missed = s.missed * SCAN_BATCH // batch
            i = ends[batch - 1]
        return 0

    cdef int _merge_fresh(self, Scratch* s, const uint8_t* data, const Py_ssize_t* ends,
                          const BatchKey* keys, const Py_ssize_t* fresh, Py_ssize_t n_fresh) noexcept nogil:
        """Cache the ids of the batch's pre-tokens ``fresh`` (keys of short ones
        in neither session cache when they were found, and of long ones that
        hold characters of several bytes): a token's from the short tokens,
        the others' merged MERGE_GROUP at a time, side by side (a long one's
        from its whole characters, where they make few enough parts). -1
        when out of memory.

        Why: a cold call spends most of its time merging new pre-tokens, and a
        merge mostly waits for the pair table (megabytes: L3, or memory) to
        answer what its new part pairs with. One pre-token's next merge needs
        that answer; another pre-token's does not, so several are merged in
        turn while each one's answers are on their way. A place in the group
        takes the next new pre-token as soon as its own is done, so the group
        stays full until the batch's last few."""
        cdef Merging group[MERGE_GROUP]
        cdef Py_ssize_t place[MERGE_GROUP]       # the group's places still merging
        cdef Py_ssize_t member[MERGE_GROUP]      # the key of each place's pre-token
        cdef Py_ssize_t j, k, g, taken = 0, n_live = 0
        while n_live < MERGE_GROUP:
            k = self._start_next(s, data, ends, keys, fresh, n_fresh, &taken, &group[n_live])
            if k < 0:
                break
            member[n_live] = k
            place[n_live] = n_live
            n_live += 1
        while n_live > 0:
            j = 0
            while j < n_live:
                g = place[j]
                if merging_step(&self.t.rule, &group[g], self.t.rule.n_ranks):
                    j += 1
                    continue
                k = member[g]
                if ends[k] - ends[k - 1] > SHORT_KEY_BYTES:
                    if cache_merged_long(s, data + ends[k - 1], ends[k] - ends[k - 1], &group[g]) < 0:
                        return -1
                elif cache_merged(s, data + ends[k - 1], ends[k] - ends[k - 1], &keys[k], &group[g]) < 0:
                    return -1
                k = self._start_next(s, data, ends, keys, fresh, n_fresh, &taken, &group[g])
                if k >= 0:                       # its first merge comes in the next round
                    member[g] = k
                    j += 1
                else:
                    n_live -= 1
                    place[j] = place[n_live]
        return 0

    cdef Py_ssize_t _encode_cold(self, Scratch* s, const uint8_t* data, const Py_ssize_t* ends,
                                 const BatchKey* keys, Py_ssize_t count) noexcept nogil:
        """``_encode_batch`` for a cold batch, its new pre-tokens merged side by side.

        The pass copies each hit's ids, as ``_encode_batch`` does, and notes
        each miss and where its ids go; the new short ones, and the long ones
        holding characters of several bytes, are merged side by side
        (``_merge_fresh``); then every miss is encoded as
        ``_encode_batch`` would (``encode_missed``, mostly a hit by now) into
        ``s.held``, and the hits' ids after each miss are moved up to make
        its room. Why one pass: a pass that only found the misses, then the
        lookup, went twice over every pre-token of the batch for two or three
        new ones.

        ``s.out`` has room for ``count`` hits' OUT_SLACK lanes (the caller
        checks) and for the batch's ids (at most one a byte). Returns how
        many were in neither session cache, or -1 when out of memory."""
        cdef Py_ssize_t fresh[COLD_BATCH + FILL_SLACK]      # new short ones
        cdef Py_ssize_t miss_key[COLD_BATCH + FILL_SLACK]   # each miss's key
        cdef int64_t miss_at[COLD_BATCH + FILL_SLACK]       # where its ids go, among the hits'
        cdef int64_t miss_end[COLD_BATCH + FILL_SLACK]      # where its ids end in s.held
        cdef Py_ssize_t k, i, n_fresh = 0, n_new = 0, n_miss = 0, missed = 0
        cdef int64_t n, size, end, hits_end, length, miss_bytes = 0
        cdef int status = 0
        cdef ShortEntry* entry
        cdef Ids own
        cdef out_id_t* out = s.out.data
        size = s.out.size
        for k in range(count):
            entry = pair_holding(&keys[k])
            if entry != NULL:
                size += copy_ids(out + size, entry.ids)
                continue
            n = ends[k] - ends[k - 1]
            miss_key[n_miss] = k
            miss_at[n_miss] = size
            n_miss += 1
            miss_bytes += n
            if is_new(&self.t, s, &keys[k], n):
                fresh[n_fresh] = k
                n_fresh += 1
                n_new += 1
            elif SHORT_KEY_BYTES < n <= CACHE_MAX_PIECE_BYTES and holds_multibyte(data + ends[k - 1], n):
                # Merged side by side too, if new (``_start_next``): a long one
                # of several characters' bytes, whose whole characters make
                # few parts. (In ASCII, finding it new cost more than it saved.)
                fresh[n_fresh] = k
                n_fresh += 1
        s.out.size = size
        if n_miss == 0:
            return 0
        if self._merge_fresh(s, data, ends, keys, fresh, n_fresh) < 0:
            return -1
        # The misses' ids, in turn, into s.held (lent to s.out meanwhile: the
        # calls write there).
        own = s.out
        s.out = s.held
        s.out.size = 0
        status = ids_reserve(&s.out, miss_bytes + OUT_SLACK)
        i = 0
        while status >= 0 and i < n_miss:
            k = miss_key[i]
            status = encode_missed(&self.t, s, data + ends[k - 1], ends[k] - ends[k - 1], &keys[k])
            missed += status
            miss_end[i] = s.out.size
            i += 1
        s.held = s.out
        s.out = own
        if status < 0:
            return -1
        # From the last miss back: the hits' ids after it move up by the
        # misses' ids up to it, which go in before them.
        hits_end = size
        end = size + s.held.size
        i = n_miss - 1
        while i >= 0:
            length = hits_end - miss_at[i]
            end -= length
            memmove(out + end, out + miss_at[i], length * sizeof(out_id_t))
            length = miss_end[i] - (miss_end[i - 1] if i > 0 else 0)
            end -= length
            memcpy(out + end, s.held.data + miss_end[i] - length, length * sizeof(out_id_t))
            hits_end = miss_at[i]
            i -= 1
        s.out.size = size + s.held.size
        return n_new + missed

    cdef inline Py_ssize_t _start_next(self, Scratch* s, const uint8_t* data, const Py_ssize_t* ends,
                                       const BatchKey* keys, const Py_ssize_t* fresh, Py_ssize_t n_fresh,
                                       Py_ssize_t* taken, Merging* w) noexcept nogil:
        """Start ``w`` merging the next of ``fresh[taken[0]:]`` that needs it, and
        return its key; -1 when none is left. Those cached meanwhile (twice in
        the batch) are passed over, tokens cached from the short tokens; long
        ones that are cached or tokens, or too many parts for ``w``, are left
        to ``encode_missed``."""
        cdef Py_ssize_t k
        cdef int64_t n, parts
        cdef const uint8_t* piece
        cdef ShortKey key
        cdef ShortEntry* entry
        cdef ShortEntry* token
        while taken[0] < n_fresh:
            k = fresh[taken[0]]
            taken[0] += 1
            piece, n = data + ends[k - 1], ends[k] - ends[k - 1]
            if n > SHORT_KEY_BYTES:
                # A long one: side by side too where it has few enough parts
                # (by whole characters); else ``encode_missed`` merges it.
                if not is_new_long(&self.t, s, piece, n):
                    continue
                if n <= SHORT_PIECE:
                    merging_start(&self.t.rule, w, piece, n, self.t.rule.n_ranks)
                    return k
                if longmerge_reserve(&s.long_merge, n) < 0:
                    continue
                parts = merging_start_whole(&self.t.rule, w, &s.long_merge, piece, n, self.t.rule.n_ranks)
                if 0 < parts <= SHORT_PIECE:
                    return k
                continue
            batch_key_hashed(&key, &keys[k])
            entry = shortcache_slot(&s.short, &key)
            if shortcache_holds(entry, &key):
                continue
            token = short_token(&self.t, &key)
            if token != NULL:
                shortcache_insert(&s.short, entry, &key, token.ids, 1)
                continue
            merging_start(&self.t.rule, w, piece, n, self.t.rule.n_ranks)
            return k
        return -1

    cdef Py_ssize_t _encode_batch(self, Scratch* s, const uint8_t* data, const Py_ssize_t* ends,
                                  const BatchKey* keys, Py_ssize_t count) noexcept nogil:
        """Append the ids of the pre-tokens from ``ends[-1]`` to each of ``ends[:count]``
        in turn (``keys`` theirs, with their home pairs in ``s.short``).

        The inner loop has one branch per pre-token: whether one of its home
        pair holds it, when the entry's four lanes are copied in one go and
        the size moved past the ids among them. It runs while ``s.out`` has
        room for every such copy left; anything else (another slot, a miss, a
        longer pre-token) leaves it for ``encode_missed``, and it resumes
        after. Its state fits in registers because nothing else is live in
        it. Returns how many were in neither of the session's caches, or -1
        when out of memory."""
        cdef Py_ssize_t k = 0
        cdef Py_ssize_t missed = 0
        cdef int status
        cdef ShortEntry* entry
        cdef out_id_t* out
        cdef int64_t size
        while k < count:
            out = s.out.data
            size = s.out.size
            if size + OUT_SLACK * (count - k) <= s.out.capacity:
                while k < count:
                    entry = pair_holding(&keys[k])
                    if entry == NULL:
                        break
                    size += copy_ids(out + size, entry.ids)
                    k += 1
                s.out.size = size
                if k == count:
                    break
            status = encode_missed(&self.t, s, data + ends[k - 1], ends[k] - ends[k - 1], &keys[k])
            if status < 0:
                return -1
            missed += status
            k += 1
        return missed

    cdef int _encode_texts(self, Scratch* s, Py_ssize_t n_texts, const uint8_t** texts,
                           const int64_t* lengths, int pattern, Needles* needles,
                           const out_id_t* needle_ids, offset_t* id_offsets) noexcept nogil:
        """Encode each text, its special tokens found here; the ids of text t
        start at ``id_offsets[t]``. Returns -1 when out of memory (or ``out`` is
        too small)."""
        cdef Py_ssize_t t, which = 0
        cdef int64_t start, at, n
        cdef const uint8_t* text
        for t in range(n_texts):
            id_offsets[t] = s.out.size
            text = texts[t]
            n = lengths[t]
            if t + 1 < n_texts:
                read_ahead(texts[t + 1], lengths[t + 1])
            start = 0
            needles_restart(needles)
            while needles.count > 0:
                at = next_special(needles, text, start, n, &which)
                if at < 0:
                    break
                if self._encode_segment(s, text + start, at - start, pattern) < 0 \
                        or ids_reserve(&s.out, 1) < 0:
                    return -1
                s.out.data[s.out.size] = needle_ids[which]
                s.out.size += 1
                start = at + needles.lengths[which]
            if self._encode_segment(s, text + start, n - start, pattern) < 0:
                return -1
        id_offsets[n_texts] = s.out.size
        return 0

    cdef int _encode_checked(self, Scratch* scratch, Py_ssize_t n_texts, const uint8_t** texts,
                             const int64_t* lengths, int pattern, tuple needles,
                             const out_id_t[::1] needle_ids, offset_t* id_offsets) except -1:
        """Check the pattern and the special tokens, then encode the texts (pointers
        and byte lengths the caller keeps alive) into ``scratch.out``, which the
        caller has set up, in one GIL release; the ids of text t start at
        ``id_offsets[t]``."""
        cdef Needles found
        cdef Py_ssize_t t
        cdef int status
        if pattern != WHOLE_SEGMENT:
            for t in range(n_texts):
                check_pattern(pattern, texts[t], lengths[t])
        if needle_ids.shape[0] != len(needles):
            raise ValueError("one id is needed for each special token")
        cdef PreparedNeedles prepared = self.prepared_needles     # held: another call may replace it
        if prepared is None or prepared.tokens is not needles:
            prepared = PreparedNeedles(needles)
            self.prepared_needles = prepared
        if needles_borrow(&found, &prepared.needles) < 0:
            needles_free(&found)
            raise MemoryError()
        scratch.out.size = 0
        with nogil:
            status = self._encode_texts(scratch, n_texts, texts, lengths, pattern, &found,
                                        &needle_ids[0] if needle_ids.shape[0] > 0 else NULL, id_offsets)
            needles_free(&found)
        if status < 0:
            raise MemoryError()
        return 0

    cdef object _encode_prepared(self, Session session, Py_ssize_t n_texts, const uint8_t** texts,
                                 const int64_t* lengths, int pattern, tuple needles,
                                 const out_id_t[::1] needle_ids, out_id_t[::1] out):
        """``(ids, id_offsets)`` of texts given as pointers and byte lengths, which
        the caller keeps alive; one GIL release for them all."""
        cdef Scratch* scratch = session.ready()
        cdef Ids own_out = scratch.out
        cdef Py_ssize_t t
        cdef int64_t bound = 0
        cdef int64_t size
        for t in range(n_texts):
            bound += lengths[t]
        if out is not None and out.shape[0] < bound:
            raise ValueError(f"out holds {out.shape[0]} ids; these texts may need {bound}")
        id_offsets = np.empty(n_texts + 1, dtype=np.int64)
        cdef offset_t[::1] id_view = id_offsets
        # Any id covers at least one byte (empty special tokens never match), so
        # ``bound`` ids always fit and the buffer is never grown. Without ``out``
        # the ids go straight into the array returned, cut to size afterwards
        # (numpy's realloc shrinks it in place), not into scratch space then
        # copied: the copy, and faulting in scratch pages each call, cost more.
        # OUT_SLACK more let a short-cache hit store all its ids unconditionally.
        # (A view, not ``ids.ctypes.data``: that built a ctypes object, 1.5 us a call.)
        ids = empty_written_once(bound + OUT_SLACK, np.uint32) if out is None else np.asarray(out)
        cdef out_id_t[::1] ids_view = ids if out is None else out
        try:
            scratch.out.data = &ids_view[0] if ids_view.shape[0] > 0 else NULL
            scratch.out.capacity = ids_view.shape[0]
            scratch.out.borrowed = True
            self._encode_checked(scratch, n_texts, texts, lengths, pattern, needles, needle_ids,
                                 &id_view[0])
            size = scratch.out.size
        finally:
            scratch.out = own_out
            release_output(scratch)
        if out is not None:
            return ids[:size], id_offsets
        ids_view = None                     # let go of the buffer: realloc may move it
        ids.resize(size, refcheck=False)    # no other view of it exists yet
        return ids, id_offsets

    def encode_texts(self, Session session, const uint8_t[::1] data, const offset_t[::1] text_offsets,
                     int pattern, needles, const out_id_t[::1] needle_ids, out_id_t[::1] out=None):
        """Encode UTF-8 texts in one call without the GIL: ``(ids, id_offsets)`` (uint32, int64).

        Text t is ``data[text_offsets[t]:text_offsets[t + 1]]``; its ids are
        ``ids[id_offsets[t]:id_offsets[t + 1]]``. ``pattern`` is a native
        pattern id, or -1 to treat each segment whole. ``needles`` are the
        special tokens to recognise (bytes), leftmost first and the longest at
        one position; ``needle_ids`` their ids. One GIL release for a whole
        batch, so threads do not queue for the GIL text by text.

        With ``out`` (at least ``len(data)`` ids), the ids are written there and
        ``ids`` is a view of it: a caller encoding chunk after chunk reuses one
        buffer instead of faulting in fresh pages for every chunk.
        """
        cdef Py_ssize_t n_texts = text_offsets.shape[0] - 1
        cdef Py_ssize_t t
        cdef const uint8_t* s = &data[0] if data.shape[0] > 0 else NULL
        cdef const uint8_t** texts = NULL
        cdef int64_t* lengths = NULL
        check_offsets(text_offsets, -1, data.shape[0], "text offsets")
        texts = <const uint8_t**>mem_alloc((n_texts + 1) * sizeof(uint8_t*))
        lengths = <int64_t*>mem_alloc((n_texts + 1) * sizeof(int64_t))
        try:
            if texts == NULL or lengths == NULL:
                raise MemoryError()
            for t in range(n_texts):
                texts[t] = s + text_offsets[t]
                lengths[t] = text_offsets[t + 1] - text_offsets[t]
            return self._encode_prepared(session, n_texts, texts, lengths, pattern, tuple(needles),
                                         needle_ids, out)
        finally:
            mem_free(texts)
            mem_free(lengths)

    def encode_strs(self, Session session, texts, int pattern, needles,
                    const out_id_t[::1] needle_ids, out_id_t[::1] out=None, metaspace_prefix=None):
        """As ``encode_texts``, for a sequence of str: no ``str.encode``, no join.

        ASCII text is read in place; other text is written as UTF-8 into the
        session's buffer, both without the GIL, so threads encoding batches of
        str spend almost all their time in parallel. Lone surrogates become
        U+FFFD (see ``bpe/_utf8.pxd``). ``out`` must hold as many ids as the
        texts have UTF-8 bytes (and one more each with ``metaspace_prefix``).

        ``metaspace_prefix`` (a bool; None: not): each text as SentencePiece's
        normalizer leaves it where all it does is write each space as ``▁``,
        with one more in front if True, read as ``ShortCalls.metaspace_to_list``
        reads it (``write_metaspace``): a long document's or a batch's texts,
        which the one-text calls do not take, made here without the GIL, not
        in Python (a tenth to a fifth of encoding such a batch).
        """
        if metaspace_prefix is not None and type(metaspace_prefix) is not bool:
            raise TypeError(f"metaspace_prefix must be a bool or None, not {metaspace_prefix!r}")
        cdef int metaspace = NOT_METASPACE if metaspace_prefix is None else int(metaspace_prefix)
        if metaspace != NOT_METASPACE and pattern != PATTERN_METASPACE:
            raise ValueError("metaspace_prefix goes with the metaspace pattern")
        return self._encode_held_strs(session, tuple(texts), pattern, tuple(needles), needle_ids, out, None,
                                      metaspace)

    def encode_strs_to_lists(self, Session session, texts, int pattern, tuple needles,
                             const out_id_t[::1] needle_ids, PrebuiltInts ints):
        """``encode_strs`` as one list per text, of the prebuilt ``ints``: what
        ``Tokenizer.encode_batch`` returns for a batch, in one call.

        The ids go into the session's own buffer, kept from call to call, and the
        lists are built from there: no id array to fault in afresh, no offsets
        array or views to make, and one GIL release fewer than ``encode_strs``
        then ``ids_to_lists``, in a call that threads run side by side.
        """
        return self._encode_held_strs(session, tuple(texts), pattern, needles, needle_ids, None, ints,
                                      NOT_METASPACE)

    cdef object _encode_held_strs(self, Session session, tuple held, int pattern, tuple needles,
                                  const out_id_t[::1] needle_ids, out_id_t[::1] out, PrebuiltInts ints,
                                  int metaspace):
        """``encode_strs`` (``ints`` None) or ``encode_strs_to_lists``, of texts the
        caller holds references to while the GIL is released."""
        cdef Py_ssize_t n_texts = len(held)
        cdef Py_ssize_t t
        cdef int reserved
        cdef const void** sources = NULL
        cdef Py_ssize_t* n_points = NULL
        cdef int* kinds = NULL
        cdef const uint8_t** starts = NULL
        cdef int64_t* lengths = NULL
        cdef offset_t* id_offsets = NULL
        cdef Scratch* scratch = session.ready()
        for t in range(n_texts):
            if not isinstance(held[t], str):
                raise TypeError(f"text {t} is {type(held[t]).__name__}, not str")
        try:
            sources = <const void**>mem_alloc((n_texts + 1) * sizeof(void*))
            n_points = <Py_ssize_t*>mem_alloc((n_texts + 1) * sizeof(Py_ssize_t))
            kinds = <int*>mem_alloc((n_texts + 1) * sizeof(int))
            starts = <const uint8_t**>mem_alloc((n_texts + 1) * sizeof(uint8_t*))
            lengths = <int64_t*>mem_alloc((n_texts + 1) * sizeof(int64_t))
            if sources == NULL or n_points == NULL or kinds == NULL or starts == NULL or lengths == NULL:
                raise MemoryError()
            for t in range(n_texts):
                str_parts(held[t], &sources[t], &n_points[t], &kinds[t])
            with nogil:
                reserved = utf8_of_strs(&scratch.text, n_texts, sources, n_points, kinds, starts, lengths,
                                        metaspace)
            if reserved < 0:
                raise MemoryError()
            if ints is None:
                return self._encode_prepared(session, n_texts, starts, lengths, pattern, needles,
                                             needle_ids, out)
            id_offsets = <offset_t*>mem_alloc((n_texts + 1) * sizeof(offset_t))
            if id_offsets == NULL:
                raise MemoryError()
            self._encode_checked(scratch, n_texts, starts, lengths, pattern, needles, needle_ids, id_offsets)
            return lists_of_ids(scratch.out.data, id_offsets, n_texts, ints)
        finally:
            if ints is not None:
                release_output(scratch)
            mem_free(sources)
            mem_free(n_points)
            mem_free(kinds)
            mem_free(starts)
            mem_free(lengths)
            mem_free(id_offsets)

    def encode_str_to_list(self, Session session, object text, int pattern, tuple needles,
                           const out_id_t[::1] needle_ids, PrebuiltInts ints):
        """``encode_strs`` of one str, as a list of the prebuilt ``ints``
        (``ints.objects[i]`` for id i): what ``Tokenizer.encode`` returns, in one call.

        For a document of a few KB, the general path's arrays, views and calls
        (an id array, offsets, the list built from them: 15 us a call) cost
        more than encoding it. Here the ids go into the session's own buffer,
        kept from call to call, and the list is built from there.
        """
        cdef Scratch* scratch = session.ready()
        try:
            self._encode_one(scratch, text, pattern, needles, needle_ids)
            return ids_list(scratch.out.data, scratch.out.size, ints)
        finally:
            release_output(scratch)

    def encode_str_to_array(self, Session session, object text, int pattern, tuple needles,
                            const out_id_t[::1] needle_ids, bint narrow):
        """``encode_str_to_list``, the ids as a numpy array of exactly their
        number, uint16 with ``narrow`` (every id must fit), else uint32: what
        ``Tokenizer.encode_to_numpy`` returns for a document. The general path's
        array, sized for the worst case (an id per byte), was fresh memory the
        kernel faulted in, call after call: a fifth of a cold encode of prose."""
        cdef Scratch* scratch = session.ready()
        try:
            self._encode_one(scratch, text, pattern, needles, needle_ids)
            return ids_array(&scratch.out, narrow)
        finally:
            release_output(scratch)

    cdef int _encode_one(self, Scratch* scratch, object text, int pattern, tuple needles,
                         const out_id_t[::1] needle_ids) except -1:
        """Encode one str into ``scratch.out`` (the caller releases it): read in
        place where ASCII, else converted to UTF-8 into ``scratch.text``."""
        cdef const void* source
        cdef Py_ssize_t n_points
        cdef int kind
        cdef const uint8_t* start
        cdef int64_t length
        cdef offset_t id_offsets[2]
        cdef int reserved
        if not isinstance(text, str):       # str subclasses too (their characters are read where they are)
            raise TypeError(f"text is {type(text).__name__}, not str")
        str_parts(text, &source, &n_points, &kind)
        with nogil:
            reserved = utf8_of_strs(&scratch.text, 1, &source, &n_points, &kind, &start, &length)
        if reserved < 0:
            raise MemoryError()
        self._encode_checked(scratch, 1, &start, &length, pattern, needles, needle_ids, id_offsets)
        return 0

    def encode_pieces(self, Session session, pieces):
        """The ids of a list of pre-tokens (bytes), for patterns the native scanners lack."""
        cdef Scratch* scratch = session.ready()
        cdef bytes piece
        try:
            for piece in pieces:
                if encode_piece(&self.t, scratch, <const uint8_t*>piece, len(piece), PIECE_ANY) < 0:
                    raise MemoryError()
            return ids_to_array(&scratch.out)
        finally:
            release_output(scratch)

    def split_ranked(self, const uint8_t[::1] data, const offset_t[::1] offsets):
        """Recover merges from ranks, for a whole vocabulary in one call without the
        GIL: token k is ``data[offsets[k]:offsets[k + 1]]`` (at least 2 bytes),
        merged with only the merges of rank < k; a merged token of rank k must
        come out as exactly two parts. Returns ``(parts, n_parts)``: ``parts[k]``
        holds the first two parts (-1 where there are fewer), ``n_parts[k]`` how
        many there were. (A call per token took 0.4 s for o200k's 200 000.)
        """
        cdef Py_ssize_t n = offsets.shape[0] - 1 if offsets.shape[0] > 0 else 0
        parts = np.full((n, 2), -1, dtype=np.int64)
        n_parts = np.zeros(n, dtype=np.int64)
        cdef int64_t[:, ::1] part_view = parts
        cdef int64_t[::1] count_view = n_parts
        cdef Py_ssize_t k
        cdef int64_t length
        cdef int failed = 0
        cdef LongMerge work
        cdef Ids out
        check_offsets(offsets, -1, data.shape[0], "ranked tokens")
        for k in range(n):
            if offsets[k + 1] - offsets[k] < 2:
                raise ValueError(f"token {k} has {offsets[k + 1] - offsets[k]} bytes: nothing to split")
        ids_init(&out)
        longmerge_init(&work)
        try:
            with nogil:
                for k in range(n):
                    length = offsets[k + 1] - offsets[k]
                    out.size = 0
                    if merge_piece(&self.t.rule, &work, &data[offsets[k]], length, <int32_t>k, &out) < 0:
                        failed = 1
                        break
                    count_view[k] = out.size
                    part_view[k, 0] = out.data[0]
                    if out.size > 1:
                        part_view[k, 1] = out.data[1]
            if failed:
                raise MemoryError()
            return parts, n_parts
        finally:
            mem_free(out.data)
            longmerge_free(&work)


cdef object ids_array(const Ids* ids, bint narrow):
    """A numpy array of exactly ``ids``, uint16 with ``narrow`` (every id must
    fit), else uint32: a call's ids, copied out of its session's buffer."""
    cdef void* data
    cdef Py_ssize_t k
    out = short_ids(ids.size, narrow, &data)
    if narrow:
        for k in range(ids.size):
            (<uint16_t*>data)[k] = <uint16_t>ids.data[k]
    elif ids.size:
        memcpy(data, ids.data, ids.size * sizeof(out_id_t))
    return out


cdef object ids_to_array(const Ids* ids):
    """A uint32 numpy array holding a copy of ``ids`` (copied without the GIL: a
    batch's ids are megabytes)."""
    out = empty_written_once(ids.size, np.uint32)
    cdef out_id_t[::1] view = out
    if ids.size:
        with nogil:
            memcpy(&view[0], ids.data, ids.size * sizeof(out_id_t))
    return out



cdef class ShortCalls:
    """One tokenizer's calls on one str (a short one, or a document), prepared
    once: the native pattern, the special tokens' search structures, a session
    and the prebuilt ints.

    ``Tokenizer.encode("hi")`` took 1.8 us through the general path, 0.5 us of
    it encoding: leasing a pooled session under a lock, making the special
    tokens' needles, releasing and retaking the GIL twice cost the rest. Here a
    call is one C function call on text already in place.

    A document (up to ``longest`` characters) is one such call too: through
    the general path, a session leased from the encoder's pool, the needles
    borrowed and the calls between the layers cost 2 us a document, more than
    encoding 1,000 characters of it. It is encoded without the GIL, as the
    general path encodes it.

    Its session serves one call at a time. A short text holds the GIL
    throughout, but for the first scan of text that is not ASCII (the Unicode
    tables are read then) and while the list is made (a garbage collection may
    run a finalizer that encodes). A call that finds it busy returns None, and
    its caller takes the general path; so does a text longer than
    ``longest``, and every text while ``paused`` (calls then share their
    caches, which only the general path's sessions do). While idle, it lends
    its session to the general path (``lend``).
    """
    cdef EncodeKernel kernel
    cdef readonly Session session
    cdef int pattern
    cdef tuple tokens            # the special tokens' UTF-8, which the needles point into
    cdef object id_array         # their ids, which ``needle_ids`` points into
    cdef const out_id_t* needle_ids
    cdef Needles needles
    cdef bint needles_made
    cdef PrebuiltInts ints
    cdef bint busy
    cdef bint lent               # busy because ``lend`` lent its session
    cdef public bint paused      # set while the encoder's calls share caches (``Encoder.sharing_cache``)
    cdef public Py_ssize_t longest   # the longest str taken, in characters (the encoder gives ONE_CALL_CHARS)
    # Ids of the kernel's that stand for others, expanded as ``utf8_to_list``
    # and ``utf8_to_array`` make their results (SentencePiece models' partial
    # characters and bytes without a piece), or None.
    cdef public Expanding expanding
    cdef object __weakref__      # the encoder holds its tokenizers' ShortCalls weakly

    def __cinit__(self, EncodeKernel kernel not None, int pattern, tuple tokens, ids,
                  PrebuiltInts ints not None, Session session not None, Py_ssize_t longest=SHORT_CHARS):
        if not 0 <= pattern < N_PATTERNS:
            raise ValueError(f"unknown native pattern id {pattern}")
        self.id_array = np.ascontiguousarray(ids, dtype=np.uint32)
        if self.id_array.shape != (len(tokens),):
            raise ValueError("one id is needed for each special token")
        cdef const out_id_t[::1] view = self.id_array
        self.needle_ids = &view[0] if len(tokens) else NULL
        needles_point_at(&self.needles, tokens)
        self.needles_made = True
        self.tokens = tokens
        self.kernel = kernel
        self.pattern = pattern
        self.ints = ints
        self.session = session
        self.longest = longest

    def __dealloc__(self):
        if self.needles_made:
            needles_free(&self.needles)

    def clear(self, Session session not None):
        """Start afresh with ``session``, a new one, its caches empty (a call
        running meanwhile, a document's on another thread, keeps the one it
        started with until it ends; so does a loan, and this is free again)."""
        self.session = session
        if self.lent:
            self.busy = self.lent = False

    def lend(self):
        """Its session, for one call of the general path (``Encoder._session``),
        or None while it is busy or paused; it is busy until ``take_back``.
        Why: a document too long for it (over ``longest``) went to a pooled
        session with caches of its own, cold where this one's were warm: on
        code, a few long files among short ones were merged afresh, a tenth
        of a cold pass."""
        if self.busy or self.paused:
            return None
        self.busy = self.lent = True
        return self.session

    def take_back(self, Session session not None):
        """End the loan of ``session`` that ``lend`` made, unless ``clear`` ended
        it (then it is another session's to say)."""
        if self.lent and session is self.session:
            self.busy = self.lent = False

    @property
    def cached_pieces(self) -> int:
        """How many pre-tokens its session's caches hold."""
        return self.session.cached_pieces

    def after_fork(self, Session session not None):
        """In a child this process forked: a call that was running there on
        another thread (a document's, without the GIL) never ends, and left
        its session half written; start afresh with ``session``."""
        if self.busy:
            self.session = session
            self.busy = self.lent = False

    def __call__(self, object text, bint refuse_specials=False, bint ordinary=False):
        """The ids of ``text`` (a str) as a list of the prebuilt ints, its special
        tokens recognised (none with ``ordinary``: ``encode_ordinary``'s, in the
        same session, whose caches hold pre-tokens alone); None where the general
        path must take it: not a str, longer than ``longest``, the session busy,
        or, with ``refuse_specials``, a special token in it (the general path
        raises)."""
        if self.busy or self.paused or not isinstance(text, str) or PyUnicode_GET_LENGTH(text) > self.longest:
            return None
        session = self.session          # kept alive through the call, whatever ``clear`` does
        cdef Scratch* scratch = (<Session>session).ready()
        self.busy = True
        try:
            if not self._encode(scratch, text, refuse_specials, ordinary):
                return None
            return ids_list(scratch.out.data, scratch.out.size, self.ints)
        finally:
            release_output(scratch)
            self.busy = False

    def to_array(self, object text, bint narrow, bint refuse_specials=False):
        """``__call__``'s ids as a numpy array: uint16 with ``narrow`` (every id
        must fit), else uint32."""
        if self.busy or self.paused or not isinstance(text, str) or PyUnicode_GET_LENGTH(text) > self.longest:
            return None
        session = self.session
        cdef Scratch* scratch = (<Session>session).ready()
        self.busy = True
        try:
            if not self._encode(scratch, text, refuse_specials, False):
                return None
            return ids_array(&scratch.out, narrow)
        finally:
            release_output(scratch)
            self.busy = False

    def utf8_to_array(self, bytes data not None, bint narrow):
        """``to_array`` for ``data``, valid UTF-8 (the caller's to be sure of:
        SentencePiece models' normalized text, made from a str), of at most
        ``longest`` bytes, its ids expanded by ``expanding``; None where the
        general path must take it."""
        return self._utf8(data, narrow, False)

    def utf8_to_list(self, bytes data not None):
        """``utf8_to_array``'s ids as a list of the prebuilt ints."""
        return self._utf8(data, False, True)

    cdef object _utf8(self, bytes data, bint narrow, bint as_list):
        """``utf8_to_array``, or with ``as_list`` ``utf8_to_list``."""
        cdef const uint8_t* start = <const uint8_t*>PyBytes_AS_STRING(data)
        cdef int64_t length = PyBytes_GET_SIZE(data)
        if self.busy or self.paused or length > self.longest:
            return None
        session = self.session
        cdef Scratch* scratch = (<Session>session).ready()
        self.busy = True
        try:
            check_pattern(self.pattern, start, length)
            self._run(scratch, start, length, &self.needles, length > SHORT_CHARS)
            return self._expanded(scratch, narrow, as_list)
        finally:
            release_output(scratch)
            self.busy = False

    def metaspace_to_list(self, object text, bint prefix):
        """``utf8_to_list`` of the text SentencePiece's normalizer makes of
        ``text`` (a str) where all it does is write each space as ``▁`` and,
        with ``prefix``, one more in front; as the kernel reads it, where
        ``▁`` is a space (``CharacterVocabulary.space``): the text's UTF-8, its
        own ``▁`` as spaces, a space in front unless it is empty. Made here from
        the str's characters: in Python, its UTF-8, the replacement and the
        prefix were three copies, a seventh of a call on Chinese text. None
        where the general path must take it (not a str, too long, busy)."""
        return self._metaspace(text, prefix, False, True)

    def metaspace_to_array(self, object text, bint prefix, bint narrow):
        """``metaspace_to_list``'s ids as ``utf8_to_array`` gives them."""
        return self._metaspace(text, prefix, narrow, False)

    cdef object _metaspace(self, object text, bint prefix, bint narrow, bint as_list):
        if self.busy or self.paused or not isinstance(text, str) or PyUnicode_GET_LENGTH(text) > self.longest:
            return None
        cdef const void* source
        cdef Py_ssize_t n_points
        cdef int kind
        cdef int64_t length
        cdef int status
        str_parts(text, &source, &n_points, &kind)
        cdef bint document = n_points > SHORT_CHARS     # encoded letting other threads run
        session = self.session
        cdef Scratch* scratch = (<Session>session).ready()
        self.busy = True
        try:
            if document:
                with nogil:
                    status = metaspace_text(&scratch.text, source, n_points, kind, prefix, &length)
            else:
                status = metaspace_text(&scratch.text, source, n_points, kind, prefix, &length)
            if status < 0:
                raise MemoryError()
            check_pattern(self.pattern, scratch.text.data, length)
            self._run(scratch, scratch.text.data, length, &self.needles, document)
            return self._expanded(scratch, narrow, as_list)
        finally:
            release_output(scratch)
            self.busy = False

    cdef object _expanded(self, Scratch* scratch, bint narrow, bint as_list):
        """The call's ids (``scratch.out``), expanded by ``expanding``, as a list or an array."""
        cdef Ids* ids = &scratch.out
        cdef Expanding expanding = self.expanding
        cdef Py_ssize_t count
        if expanding is not None and not ids_below(ids.data, ids.size, expanding.e.first):
            # Into the batch's spare buffer (free between calls), in one pass.
            scratch.held.size = 0
            if ids_reserve(&scratch.held, ids.size * expanding.e.width) < 0:
                raise MemoryError()
            count = expand_run(&expanding.e, ids.data, ids.size, scratch.held.data)
            if count < 0:
                expanding.count_checked(ids.data, ids.size)         # raises, naming the id
            scratch.held.size = count
            ids = &scratch.held
        if as_list:
            return ids_list(ids.data, ids.size, self.ints)
        return ids_array(ids, narrow)

    cdef bint _encode(self, Scratch* scratch, object text, bint refuse_specials, bint ordinary) except -1:
        """Encode ``text`` into ``scratch.out`` (a document's without the GIL); False
        if ``refuse_specials`` and a special token is in it. With ``ordinary``,
        special tokens are read as text."""
        cdef const void* source
        cdef Py_ssize_t n_points
        cdef int kind
        cdef const uint8_t* start
        cdef int64_t length
        cdef Needles* needles = &self.needles
        cdef Needles none
        cdef Py_ssize_t which
        cdef int status
        str_parts(text, &source, &n_points, &kind)
        cdef bint document = n_points > SHORT_CHARS     # encoded letting other threads run
        if document:
            with nogil:
                status = utf8_of_strs(&scratch.text, 1, &source, &n_points, &kind, &start, &length)
        else:
            status = utf8_of_strs(&scratch.text, 1, &source, &n_points, &kind, &start, &length)
        if status < 0:
            raise MemoryError()
        check_pattern(self.pattern, start, length)
        if ordinary:
            none.count = 0
            needles = &none
        elif refuse_specials and needles.count > 0:
            needles_restart(needles)
            if next_special(needles, start, 0, length, &which) >= 0:
                return False
            none.count = 0                  # none there: the text need not be searched again
            needles = &none
        self._run(scratch, start, length, needles, document)
        return True

    cdef int _run(self, Scratch* scratch, const uint8_t* start, int64_t length, Needles* needles,
                  bint document) except -1:
        """The kernel on one text's UTF-8 into ``scratch.out``: a document's
        without the GIL (other threads run meanwhile), a short one's holding it
        (releasing and taking it back would cost more than the encoding)."""
        cdef offset_t id_offsets[2]
        cdef int status
        scratch.out.size = 0
        if document:
            with nogil:
                status = self.kernel._encode_texts(scratch, 1, &start, &length, self.pattern, needles,
                                                   self.needle_ids, id_offsets)
        else:
            status = self.kernel._encode_texts(scratch, 1, &start, &length, self.pattern, needles,
                                               self.needle_ids, id_offsets)
        if status < 0:
            raise MemoryError()
        return 0
