/* The short cache's C (bpe/_shortcache.pxd): its key rows and markers, and an
 * entry's four id lanes: its ids first, then NO_ID in the lanes it does not use.
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

#include "portable.h"

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


#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SHORTCACHE_LITTLE_ENDIAN 1
#else
#define SHORTCACHE_LITTLE_ENDIAN 0
#endif
#define SHORTCACHE_SPILLED (1ULL << 63)  /* in a stored key1: the ids are in the general cache */
#define SHORTCACHE_RUN (1ULL << 62)      /* in a stored key1: the ids are a run (see bpe/_shortcache.pxd) */
/* A shared table's slot that a session has taken and is writing: a key1
   of length 63 once its marks are masked off, which no key has. */
#define SHORTCACHE_CLAIMED (0x7FULL << 56)
/* Row n (up to 15) keeps the first n bytes of a little-endian 16-byte
   load and tags the second word with n; row 16, for every longer piece,
   tags it with 255, which no entry has. */
#define SHORTCACHE_ROW(n) {(n) >= 8 ? ~0ULL : (1ULL << (8 * (n))) - 1, \
                           (n) <= 8 ? 0ULL : (1ULL << (8 * ((n) - 8))) - 1, \
                           (unsigned long long)(n) << 56}
static const uint64_t SHORTCACHE_KEY_ROWS[17][3] = {
    SHORTCACHE_ROW(0), SHORTCACHE_ROW(1), SHORTCACHE_ROW(2), SHORTCACHE_ROW(3),
    SHORTCACHE_ROW(4), SHORTCACHE_ROW(5), SHORTCACHE_ROW(6), SHORTCACHE_ROW(7),
    SHORTCACHE_ROW(8), SHORTCACHE_ROW(9), SHORTCACHE_ROW(10), SHORTCACHE_ROW(11),
    SHORTCACHE_ROW(12), SHORTCACHE_ROW(13), SHORTCACHE_ROW(14), SHORTCACHE_ROW(15),
    {0, 0, 255ULL << 56}};

#endif
