/* An entry's four id lanes in the short cache (bpe/_shortcache.pxd): its ids
 * first, then NO_ID in the lanes it does not use.
 *
 * shortcache_copy_ids(out, ids): copy the four lanes to out (which has room
 * for them) and return how many are ids, not NO_ID: one load serves both.
 * SSE2 on x86-64, NEON on arm64, else a copy and a count. The portable one
 * keeps its own name so that tests/lanes_check.c can hold each path to it.
 */
#ifndef BPE_SHORTCACHE_H
#define BPE_SHORTCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "_portable.h"

#define SHORTCACHE_NO_ID 0xFFFFFFFFu   /* above every token id (MAX_TOKEN_ID) */

/* How many of an entry's four lanes are ids, not NO_ID. */
static inline size_t shortcache_count_ids(const uint32_t *ids) {
    return (size_t)((ids[0] != SHORTCACHE_NO_ID) + (ids[1] != SHORTCACHE_NO_ID)
                    + (ids[2] != SHORTCACHE_NO_ID) + (ids[3] != SHORTCACHE_NO_ID));
}

static inline size_t shortcache_copy_ids_portable(uint32_t *out, const uint32_t *ids) {
    memcpy(out, ids, 16);
    return shortcache_count_ids(ids);
}

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define SHORTCACHE_LANES_PATH "sse2"
static inline size_t shortcache_copy_ids(uint32_t *out, const uint32_t *ids) {
    __m128i lanes = _mm_loadu_si128((const __m128i *)ids);
    _mm_storeu_si128((__m128i *)out, lanes);
    int unused = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(lanes, _mm_set1_epi32(-1))));
    return (size_t)bpe_ctz32((uint32_t)(unused | 16));
}

#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define SHORTCACHE_LANES_PATH "neon"
/* The lanes equal to NO_ID, narrowed to 16 bits each: the first of them is
 * the lowest set bit over 16. */
static inline size_t shortcache_copy_ids(uint32_t *out, const uint32_t *ids) {
    uint32x4_t lanes = vld1q_u32(ids);
    vst1q_u32(out, lanes);
    uint64_t unused = vget_lane_u64(vreinterpret_u64_u16(vmovn_u32(vceqq_u32(lanes, vdupq_n_u32(SHORTCACHE_NO_ID)))), 0);
    return unused ? (size_t)(bpe_ctz64(unused) >> 4) : 4;
}

#else
#define SHORTCACHE_LANES_PATH "portable"
#define shortcache_copy_ids shortcache_copy_ids_portable
#endif

#endif
