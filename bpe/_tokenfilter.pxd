# Whether a pre-token may be a token, or surely is not: one bit per slot of
# a bitmap, set for each token of a set, found by a hash of the token's hash.
# A kernel keeps two (``bpe/_caches.pxd``'s ``Tables``): its tokens of 2 to
# SHORT_KEY_BYTES bytes by their short keys' hash (``ShortKey.hash``, see
# ``_shortcache.pxd``), and its longer ones by their hash in a session's
# general cache (``hash_by_words``), which a long pre-token has by then.
#
# Why: a pre-token that missed a session's cache asks the kernel's tokens
# whether it is a token, a probe of a table of 4 MiB (gpt2) to 16 MiB (o200k)
# at a random line: out of L2, and in a cold pass over code most of the wait
# of a miss outside its merges (`perf annotate`). Most such pre-tokens are no
# token (44 000 of 61 000 distinct short ones in 10 MB of code, gpt2; nearly
# every long one, a run of CJK under Llama 3's pattern). At 16 bits a token
# the short filter is 128 KiB (gpt2) to 512 KiB (o200k), the long one 512 B
# to 16 KiB: they stay in L2 and answer "surely not" for all but one in about
# sixteen (1 - e^(-1/16)), which then merge without the probe.
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memset

from bpe._memory cimport mem_alloc, mem_free, next_capacity, slot_shift


cdef enum:
    FILTER_BITS_PER_KEY = 16
    FILTER_LEAST_BITS = 512


cdef struct TokenFilter:
    uint64_t* words
    int shift                # 64 - log2(number of bits): a mixed hash's high bits pick a bit


cdef inline uint64_t _filter_bit(const TokenFilter* f, uint64_t hash) noexcept nogil:
    # The key's hash picks slots by its high bits too: multiplied again, so
    # that keys sharing a slot of a table do not also share a bit.
    return (hash * 0xD6E8FEB86659FD93ULL) >> f.shift


cdef inline int tokenfilter_init(TokenFilter* f, int64_t n_keys) noexcept nogil:
    """An empty filter for about ``n_keys`` keys. -1 when out of memory."""
    cdef int64_t n_bits = next_capacity(0, FILTER_LEAST_BITS, FILTER_BITS_PER_KEY * n_keys)
    f.words = <uint64_t*>mem_alloc(n_bits // 8)
    if f.words == NULL:
        return -1
    memset(f.words, 0, n_bits // 8)
    f.shift = slot_shift(n_bits)
    return 0


cdef inline void tokenfilter_free(TokenFilter* f) noexcept nogil:
    mem_free(f.words)
    f.words = NULL


cdef inline void tokenfilter_add(TokenFilter* f, uint64_t hash) noexcept nogil:
    cdef uint64_t bit = _filter_bit(f, hash)
    f.words[bit >> 6] |= <uint64_t>1 << (bit & 63)


cdef inline bint tokenfilter_may_hold(const TokenFilter* f, uint64_t hash) noexcept nogil:
    """False when no key of this hash was added; True when one may have been."""
    cdef uint64_t bit = _filter_bit(f, hash)
    return (f.words[bit >> 6] >> (bit & 63)) & 1
