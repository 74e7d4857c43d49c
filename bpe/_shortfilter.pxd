# Whether a short key may be in a set, or surely is not: one bit per slot of
# a bitmap, set for each key of the set, found by a hash of the key's hash
# (``ShortKey.hash``, see ``_shortcache.pxd``).
#
# Why: a short pre-token that missed a session's cache asks the kernel's short
# tokens whether it is a token, a probe of a table of 4 MiB (gpt2) to 16 MiB
# (o200k) at a random line: out of L2, and in a cold pass over code most of
# the wait of a miss outside its merges (`perf annotate`). Most such
# pre-tokens are no token (44 000 of 61 000 distinct ones in 10 MB of code,
# gpt2). At 16 bits a key the filter is 128 KiB (gpt2) to 512 KiB (o200k):
# it stays in L2 and answers "surely not" for all but one in about sixteen of
# them (1 - e^(-1/16)), which then merge without the probe.
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memset

from bpe._memory cimport mem_alloc, mem_free, next_capacity, slot_shift


cdef enum:
    FILTER_BITS_PER_KEY = 16
    FILTER_LEAST_BITS = 512


cdef struct ShortFilter:
    uint64_t* words
    int shift                # 64 - log2(number of bits): a mixed hash's high bits pick a bit


cdef inline uint64_t _filter_bit(const ShortFilter* f, uint64_t hash) noexcept nogil:
    # The key's hash picks slots by its high bits too: multiplied again, so
    # that keys sharing a slot of a table do not also share a bit.
    return (hash * 0xD6E8FEB86659FD93ULL) >> f.shift


cdef inline int shortfilter_init(ShortFilter* f, int64_t n_keys) noexcept nogil:
    """An empty filter for about ``n_keys`` keys. -1 when out of memory."""
    cdef int64_t n_bits = next_capacity(0, FILTER_LEAST_BITS, FILTER_BITS_PER_KEY * n_keys)
    f.words = <uint64_t*>mem_alloc(n_bits // 8)
    if f.words == NULL:
        return -1
    memset(f.words, 0, n_bits // 8)
    f.shift = slot_shift(n_bits)
    return 0


cdef inline void shortfilter_free(ShortFilter* f) noexcept nogil:
    mem_free(f.words)
    f.words = NULL


cdef inline void shortfilter_add(ShortFilter* f, uint64_t hash) noexcept nogil:
    cdef uint64_t bit = _filter_bit(f, hash)
    f.words[bit >> 6] |= <uint64_t>1 << (bit & 63)


cdef inline bint shortfilter_may_hold(const ShortFilter* f, uint64_t hash) noexcept nogil:
    """False when no key of this hash was added; True when one may have been."""
    cdef uint64_t bit = _filter_bit(f, hash)
    return (f.words[bit >> 6] >> (bit & 63)) & 1
