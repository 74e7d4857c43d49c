"""The BPE merge loop: incremental pair counts over interned pre-tokens.

Why it is shaped like this
--------------------------
Training repeats one step thousands of times: take the most frequent adjacent
pair, merge it everywhere, update the counts. Recounting every pair each step
costs O(corpus) per merge. Instead this kernel keeps

* ``words``: each distinct pre-token once, as a run of token ids in one flat
  buffer, with its occurrence count as a weight;
* ``pairs``: a hash map from a packed pair to a pair id, and per id a 64-bit
  count and an inverted index (the words that contain it);
* a max-heap of ``(count, pair)`` with lazy invalidation.

A merge visits only the words listed for the chosen pair. In each, every merge
site withdraws the pairs it destroys and registers the pairs it creates, so
long words (``pattern=None``) cost work proportional to the sites, plus one
scan. Word lists are append-only; a word listed for a pair it no longer holds
is scanned and skipped.

The heap is sound without a decrease-key because a pair's count never grows
after the step that creates it: a merge makes new adjacencies only next to the
new token, so only pairs that involve the new token gain, and those are all new
pairs. Every heap entry therefore holds an upper bound of its pair's count; an
entry popped with a stale count is pushed back with the current one, and the
first entry popped with a current count is the true maximum.

The tie-break (``_greater``) compares equal counts by the pair's bytes as
a tuple ``(bytes_left, bytes_right)``, the rule ``bpe.pure`` states in Python.
The whole loop runs without the GIL.
"""
from libc.stdint cimport INT64_MAX, int32_t, int64_t, uint8_t
from libc.string cimport memcmp, memcpy

import numpy as np

from bpe._checks cimport check_offsets
from bpe._memory cimport grow, mem_alloc, mem_free, next_capacity, prefetch, resize_array
from bpe._pairmap cimport PairMap, pairmap_free, pairmap_get, pairmap_init, pairmap_set
from bpe._types cimport count_t, offset_t, pack_pair, pair_left, pair_right, pair_t, token_t

cdef enum:
    N_BYTE_TOKENS = 256
    INVARIANT_BROKEN = -2
    COUNT_OVERFLOW = -3      # a pair's count would pass int64
    WORD_PREFETCH = 16       # words of a merge prefetched ahead of the one rewritten
    WORD_LIST_SMALLEST = 4   # a pair's first list of words: most pairs made by merges are in few

cdef extern from *:
    """
    #ifndef BPE_DEBUG_BUILD
    #define BPE_DEBUG_BUILD 0
    #endif
    """
    # 1 in a BPE_CYTHON_DEBUG=1 build: the kernel then also checks its invariants.
    const int BPE_DEBUG_BUILD

DEBUG_BUILD = bool(BPE_DEBUG_BUILD)
_OVERFLOW_MESSAGE = ("a pair's count passed 2^63 - 1 (int64): pre-token counts this large cannot "
                     "be trained on exactly")


cdef struct WordList:
    int32_t* ids
    int32_t size
    int32_t capacity


cdef struct HeapEntry:
    count_t count
    int32_t pair


cdef class MergeState:
    """The state of one training run over interned pre-tokens.

    Parameters
    ----------
    data : uint8 array
        The pre-tokens' UTF-8 bytes, concatenated.
    offsets : int64 array of length n + 1
        Pre-token ``i`` is ``data[offsets[i]:offsets[i + 1]]``.
    counts : int64 array of length n
        How often each pre-token occurs.
    max_merges : int
        Room for this many merges.

    Token ids here are the kernel's own: 0..255 are the bytes and merge ``k``
    makes token ``256 + k`` (special tokens are the Python layer's business).

    >>> import numpy as np
    >>> state = MergeState(np.frombuffer(b"aaab", np.uint8), np.array([0, 4]), np.array([1]), 1)
    >>> state.run(10, 1)
    1
    >>> state.merges().tolist()   # (a, a) occurs twice: "aaa" overlaps
    [[97, 97]]
    """
    cdef:
        # Words: distinct pre-tokens rewritten in place as merges apply.
        int64_t n_words
        token_t* word_tokens
        offset_t* word_start
        offset_t* word_length
        count_t* word_count
        # Pairs, by pair id.
        PairMap pair_ids
        readonly int64_t n_pairs  # distinct pairs seen so far (some may have fallen to 0)
        int64_t pair_capacity
        pair_t* pair_key
        count_t* pair_count
        WordList* pair_words
        int32_t* pair_last_word   # the word appended last, to keep each list free of repeats
        # Max-heap of pair ids by (count, bytes).
        HeapEntry* heap
        int64_t heap_size
        int64_t heap_capacity
        # The bytes of every token so far, for the tie-break.
        uint8_t* token_bytes
        int64_t token_bytes_size
        int64_t token_bytes_capacity
        offset_t* token_start     # token t is token_bytes[token_start[t]:token_start[t + 1]]
        # Merges done: merge k made token 256 + k from merge_pair[k].
        readonly int32_t max_merges
        readonly int32_t n_merges
        pair_t* merge_pair
        readonly bint exhausted   # no further merge can be made
        bint failed               # a merge failed part-way: the state is unusable

    def __cinit__(self, const uint8_t[::1] data, const offset_t[::1] offsets,
                  const count_t[::1] counts, int max_merges):
        cdef int64_t n_words = counts.shape[0]
        cdef int64_t w
        cdef int status
        check_offsets(offsets, n_words, data.shape[0], "pre-token arrays")
        for w in range(n_words):
            if counts[w] < 0:
                raise ValueError(f"pre-token arrays: count {counts[w]} of pre-token {w} is negative")
        if max_merges < 0:
            raise ValueError(f"max_merges must be >= 0, got {max_merges}")
        self.n_words = n_words
        self.max_merges = max_merges
        self.word_tokens = <token_t*>mem_alloc(max(data.shape[0], 1) * sizeof(token_t))
        self.word_start = <offset_t*>mem_alloc(max(n_words, 1) * sizeof(offset_t))
        self.word_length = <offset_t*>mem_alloc(max(n_words, 1) * sizeof(offset_t))
        self.word_count = <count_t*>mem_alloc(max(n_words, 1) * sizeof(count_t))
        self.token_start = <offset_t*>mem_alloc((N_BYTE_TOKENS + max_merges + 1) * sizeof(offset_t))
        self.merge_pair = <pair_t*>mem_alloc(max(max_merges, 1) * sizeof(pair_t))
        if (self.word_tokens == NULL or self.word_start == NULL or self.word_length == NULL
                or self.word_count == NULL or self.token_start == NULL or self.merge_pair == NULL):
            raise MemoryError()
        if pairmap_init(&self.pair_ids, 1024) < 0:
            raise MemoryError()
        with nogil:
            status = self._load_words(&data[0] if data.shape[0] > 0 else NULL,
                                      &offsets[0], &counts[0] if n_words > 0 else NULL)
            if status == 0:
                status = self._count_pairs()
        if status == COUNT_OVERFLOW:
            raise OverflowError(_OVERFLOW_MESSAGE)
        if status < 0:
            raise MemoryError()

    def __dealloc__(self):
        cdef int64_t i
        for i in range(self.n_pairs):
            mem_free(self.pair_words[i].ids)
        mem_free(self.word_tokens)
        mem_free(self.word_start)
        mem_free(self.word_length)
        mem_free(self.word_count)
        pairmap_free(&self.pair_ids)
        mem_free(self.pair_key)
        mem_free(self.pair_count)
        mem_free(self.pair_words)
        mem_free(self.pair_last_word)
        mem_free(self.heap)
        mem_free(self.token_bytes)
        mem_free(self.token_start)
        mem_free(self.merge_pair)

    # ------------------------------------------------------------------ setup

    cdef int _load_words(self, const uint8_t* data, const offset_t* offsets,
                         const count_t* counts) noexcept nogil:
        cdef int64_t w, i
        cdef int t
        for w in range(self.n_words):
            self.word_start[w] = offsets[w]
            self.word_count[w] = counts[w]
            # A word that never occurs contributes nothing; keep it out of the index.
            self.word_length[w] = offsets[w + 1] - offsets[w] if counts[w] > 0 else 0
            for i in range(offsets[w], offsets[w + 1]):
                self.word_tokens[i] = data[i]
        if grow(<void**>&self.token_bytes, &self.token_bytes_capacity, 4096, 1, 16) < 0:
            return -1
        for t in range(N_BYTE_TOKENS):
            self.token_bytes[t] = <uint8_t>t
            self.token_start[t] = t
        self.token_start[N_BYTE_TOKENS] = N_BYTE_TOKENS
        self.token_bytes_size = N_BYTE_TOKENS
        return 0

    cdef int _count_pairs(self) noexcept nogil:
        cdef int64_t w, i, p
        cdef token_t* tokens
        cdef int32_t pair
        for w in range(self.n_words):
            tokens = self.word_tokens + self.word_start[w]
            for i in range(self.word_length[w] - 1):
                pair = self._pair_id(pack_pair(tokens[i], tokens[i + 1]))
                if pair < 0 or self._list_word(pair, <int32_t>w) < 0:
                    return -1
                if self.pair_count[pair] > INT64_MAX - self.word_count[w]:
                    return COUNT_OVERFLOW
                self.pair_count[pair] += self.word_count[w]
        for p in range(self.n_pairs):
            if self.pair_count[p] > 0:
                if self._heap_append(self.pair_count[p], <int32_t>p) < 0:
                    return -1
        self._heapify()
        return 0

    # ------------------------------------------------------------------ pairs

    cdef int32_t _pair_id(self, pair_t key) noexcept nogil:
        """The id of ``key``, registering it with count 0 if new. -1 when out of memory."""
        cdef int64_t capacity
        cdef int32_t pair = pairmap_get(&self.pair_ids, key)
        if pair >= 0:
            return pair
        pair = <int32_t>self.n_pairs
        if self.n_pairs + 1 > self.pair_capacity:
            # Four arrays share one capacity, raised once all four have grown: if
            # one fails, those already grown are merely larger than needed.
            capacity = next_capacity(self.pair_capacity, 16, self.n_pairs + 1)
            if (resize_array(<void**>&self.pair_key, capacity, sizeof(pair_t)) < 0
                    or resize_array(<void**>&self.pair_count, capacity, sizeof(count_t)) < 0
                    or resize_array(<void**>&self.pair_words, capacity, sizeof(WordList)) < 0
                    or resize_array(<void**>&self.pair_last_word, capacity, sizeof(int32_t)) < 0):
                return -1
            self.pair_capacity = capacity
        if pairmap_set(&self.pair_ids, key, pair) < 0:
            return -1
        self.pair_key[pair] = key
        self.pair_count[pair] = 0
        self.pair_words[pair].ids = NULL
        self.pair_words[pair].size = 0
        self.pair_words[pair].capacity = 0
        self.pair_last_word[pair] = -1
        self.n_pairs += 1
        return pair

    cdef int _list_word(self, int32_t pair, int32_t word) noexcept nogil:
        """Record that ``word`` contains ``pair``. -1 when out of memory."""
        cdef WordList* words = &self.pair_words[pair]
        cdef int64_t capacity = words.capacity
        if self.pair_last_word[pair] == word:
            return 0
        if words.size == capacity:
            if grow(<void**>&words.ids, &capacity, words.size + 1, sizeof(int32_t), WORD_LIST_SMALLEST) < 0:
                return -1
            words.capacity = <int32_t>capacity
        words.ids[words.size] = word
        words.size += 1
        self.pair_last_word[pair] = word
        return 0

    cdef int _add(self, token_t left, token_t right, count_t delta, int32_t word) noexcept nogil:
        """Add ``delta`` to the count of (left, right); list ``word`` for it when delta > 0."""
        cdef int32_t pair = self._pair_id(pack_pair(left, right))
        if pair < 0:
            return -1
        if delta > 0 and self.pair_count[pair] > INT64_MAX - delta:
            return COUNT_OVERFLOW
        self.pair_count[pair] += delta
        if BPE_DEBUG_BUILD and self.pair_count[pair] < 0:
            return INVARIANT_BROKEN
        if delta > 0:
            return self._list_word(pair, word)
        return 0

    # ------------------------------------------------------------------ heap

    cdef inline int _compare_tokens(self, token_t x, token_t y) noexcept nogil:
        """Compare two tokens' bytes as Python compares ``bytes``: <0, 0 or >0."""
        cdef int64_t length_x = self.token_start[x + 1] - self.token_start[x]
        cdef int64_t length_y = self.token_start[y + 1] - self.token_start[y]
        cdef int order = memcmp(self.token_bytes + self.token_start[x],
                                self.token_bytes + self.token_start[y],
                                <size_t>min(length_x, length_y))
        if order != 0:
            return order
        return (length_x > length_y) - (length_x < length_y)

    cdef inline bint _greater(self, HeapEntry a, HeapEntry b) noexcept nogil:
        """The tie-break rule: higher count, then the greater (bytes_left, bytes_right)."""
        cdef int order
        if a.count != b.count:
            return a.count > b.count
        order = self._compare_tokens(pair_left(self.pair_key[a.pair]),
                                     pair_left(self.pair_key[b.pair]))
        if order == 0:
            order = self._compare_tokens(pair_right(self.pair_key[a.pair]),
                                         pair_right(self.pair_key[b.pair]))
        return order > 0

    cdef int _heap_append(self, count_t count, int32_t pair) noexcept nogil:
        if grow(<void**>&self.heap, &self.heap_capacity, self.heap_size + 1,
                sizeof(HeapEntry), 16) < 0:
            return -1
        self.heap[self.heap_size].count = count
        self.heap[self.heap_size].pair = pair
        self.heap_size += 1
        return 0

    cdef void _sift_down(self, int64_t i) noexcept nogil:
        cdef HeapEntry entry = self.heap[i]
        cdef int64_t child
        while True:
            child = 2 * i + 1
            if child >= self.heap_size:
                break
            if child + 1 < self.heap_size and self._greater(self.heap[child + 1], self.heap[child]):
                child += 1
            if not self._greater(self.heap[child], entry):
                break
            self.heap[i] = self.heap[child]
            i = child
        self.heap[i] = entry

    cdef void _sift_up(self, int64_t i) noexcept nogil:
        cdef HeapEntry entry = self.heap[i]
        cdef int64_t parent
        while i > 0:
            parent = (i - 1) // 2
            if not self._greater(entry, self.heap[parent]):
                break
            self.heap[i] = self.heap[parent]
            i = parent
        self.heap[i] = entry

    cdef void _heapify(self) noexcept nogil:
        cdef int64_t i
        for i in range(self.heap_size // 2 - 1, -1, -1):
            self._sift_down(i)

    cdef int _heap_push(self, count_t count, int32_t pair) noexcept nogil:
        if self._heap_append(count, pair) < 0:
            return -1
        self._sift_up(self.heap_size - 1)
        return 0

    cdef void _heap_pop(self) noexcept nogil:
        self.heap_size -= 1
        if self.heap_size > 0:
            self.heap[0] = self.heap[self.heap_size]
            self._sift_down(0)

    cdef int32_t _best_pair(self) noexcept nogil:
        """The pair to merge next (left on top of the heap), or -1 if none is left."""
        cdef HeapEntry top
        cdef count_t current
        while self.heap_size > 0:
            top = self.heap[0]
            current = self.pair_count[top.pair]
            if current == top.count:
                return top.pair
            # Stale: the count fell since this entry was pushed.
            self._heap_pop()
            if current > 0:
                self._heap_push(current, top.pair)   # cannot fail: the heap just shrank
        return -1

    # ------------------------------------------------------------------ merging

    cdef int _merge_word(self, int32_t w, token_t a, token_t b, token_t new) noexcept nogil:
        """Rewrite word ``w`` replacing each (a, b) by ``new`` in one left-to-right pass.

        Each site withdraws the pairs it breaks, (prev, a), (a, b) and (b, next),
        and registers the ones it makes, (prev, new) and (new, next). Between two
        adjacent sites ("abab") the shared pair (b, a) is withdrawn once, by the
        first, and (new, new) is registered once, by the second.
        """
        cdef token_t* tokens = self.word_tokens + self.word_start[w]
        cdef int64_t n = self.word_length[w]
        cdef count_t c = self.word_count[w]
        cdef int64_t i = 0
        cdef int64_t j = 0   # tokens written so far; tokens[j - 1] is the previous output
        cdef bint previous_merged = False
        cdef int status
        while i < n:
            if i + 1 < n and tokens[i] == a and tokens[i + 1] == b:
                # Each _add returns < 0 on failure (out of memory, or a broken
                # invariant in a debug build); stop at the first. The pair merged
                # is withdrawn only in a debug build, which then checks that its
                # count reached zero; _merge zeroes it at once otherwise.
                status = self._add(a, b, -c, w) if BPE_DEBUG_BUILD else 0
                if status == 0 and j > 0:
                    if not previous_merged:
                        status = self._add(tokens[j - 1], a, -c, w)
                    if status == 0:
                        status = self._add(tokens[j - 1], new, c, w)
                if status == 0 and i + 2 < n:
                    status = self._add(b, tokens[i + 2], -c, w)
                    # If another site follows, it registers (new, new) itself.
                    if status == 0 and not (i + 3 < n and tokens[i + 2] == a
                                            and tokens[i + 3] == b):
                        status = self._add(new, tokens[i + 2], c, w)
                if status < 0:
                    return status
                tokens[j] = new
                i += 2
                previous_merged = True
            else:
                tokens[j] = tokens[i]
                i += 1
                previous_merged = False
            j += 1
        self.word_length[w] = j
        return 0

    cdef int _merge(self, int32_t pair) noexcept nogil:
        """Apply the merge of ``pair``: new token, rewritten words, new pairs on the heap."""
        cdef token_t a = pair_left(self.pair_key[pair])
        cdef token_t b = pair_right(self.pair_key[pair])
        cdef token_t new = N_BYTE_TOKENS + self.n_merges
        cdef int64_t length_a = self.token_start[a + 1] - self.token_start[a]
        cdef int64_t length_b = self.token_start[b + 1] - self.token_start[b]
        cdef int64_t first_new_pair = self.n_pairs
        cdef int64_t k, p
        cdef int status
        # The list is copied out: _add may move the pair_words array, and this
        # list itself never grows here (new pairs all involve the new token).
        cdef int32_t* words = self.pair_words[pair].ids
        cdef int32_t n_listed = self.pair_words[pair].size

        if grow(<void**>&self.token_bytes, &self.token_bytes_capacity,
                self.token_bytes_size + length_a + length_b, 1, 16) < 0:
            return -1
        memcpy(self.token_bytes + self.token_bytes_size,
               self.token_bytes + self.token_start[a], length_a)
        memcpy(self.token_bytes + self.token_bytes_size + length_a,
               self.token_bytes + self.token_start[b], length_b)
        self.token_bytes_size += length_a + length_b
        self.token_start[new + 1] = self.token_bytes_size

        self.merge_pair[self.n_merges] = self.pair_key[pair]
        self.n_merges += 1
        self._heap_pop()

        for k in range(n_listed):
            # The words are scattered through memory, and each is a cache miss to
            # find and another to read: its place is fetched WORD_PREFETCH words
            # ahead, its tokens half as far ahead.
            if k + WORD_PREFETCH < n_listed:
                prefetch(&self.word_start[words[k + WORD_PREFETCH]])
                prefetch(&self.word_length[words[k + WORD_PREFETCH]])
                prefetch(&self.word_count[words[k + WORD_PREFETCH]])
            if k + WORD_PREFETCH // 2 < n_listed:
                prefetch(self.word_tokens + self.word_start[words[k + WORD_PREFETCH // 2]])
            status = self._merge_word(words[k], a, b, new)
            if status < 0:
                return status
        if BPE_DEBUG_BUILD and self.pair_count[pair] != 0:
            return INVARIANT_BROKEN   # some occurrence of the pair was not merged
        # Every occurrence was merged, and the pair can never form again.
        self.pair_count[pair] = 0
        mem_free(words)
        self.pair_words[pair].ids = NULL
        self.pair_words[pair].size = 0
        self.pair_words[pair].capacity = 0

        for p in range(first_new_pair, self.n_pairs):
            if self.pair_count[p] > 0:
                if self._heap_push(self.pair_count[p], <int32_t>p) < 0:
                    return -1
        return 0

    # ------------------------------------------------------------------ Python API

    def run(self, int max_new_merges, count_t min_frequency=1):
        """Do up to ``max_new_merges`` more merges; returns how many were done.

        Stops early, setting ``exhausted``, when no pair occurs at least
        ``min_frequency`` times (or at all), or when ``max_merges`` is reached.
        """
        cdef int done = 0
        cdef int32_t pair
        cdef int status = 0
        if self.failed:
            raise RuntimeError("this MergeState failed part-way through a merge and cannot continue")
        if min_frequency < 1:
            min_frequency = 1
        with nogil:
            while done < max_new_merges:
                if self.n_merges >= self.max_merges:
                    self.exhausted = True
                    break
                pair = self._best_pair()
                if pair < 0 or self.pair_count[pair] < min_frequency:
                    self.exhausted = True
                    break
                status = self._merge(pair)
                if status < 0:
                    self.exhausted = True   # the state is unusable after a failure
                    self.failed = True
                    break
                done += 1
        if status == COUNT_OVERFLOW:
            raise OverflowError(_OVERFLOW_MESSAGE)
        if status == INVARIANT_BROKEN:
            raise AssertionError(f"merge loop invariant broken at merge {self.n_merges}")
        if status < 0:
            raise MemoryError("out of memory in the BPE merge loop")
        return done

    def merges(self):
        """The merges done, as an int32 array of shape (n_merges, 2) in kernel ids."""
        out = np.empty((self.n_merges, 2), dtype=np.int32)
        cdef int32_t[:, ::1] view = out
        cdef int k
        for k in range(self.n_merges):
            view[k, 0] = pair_left(self.merge_pair[k])
            view[k, 1] = pair_right(self.merge_pair[k])
        return out

    def count_of(self, int left, int right):
        """The current count of (left, right), 0 if never seen. For tests."""
        cdef int32_t pair = pairmap_get(&self.pair_ids, pack_pair(left, right))
        return 0 if pair < 0 else self.pair_count[pair]
