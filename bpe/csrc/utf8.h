/* Runs of ASCII in a str's storage, 16 code units at a time (bpe/_utf8.pxd).
 *
 * utf8_ascii_blocks_u8/u16/u32(data, n, out): whole blocks of 16 ASCII code
 * units from data[:n] written to out as bytes, up to the first block that
 * holds another code unit; returns how many code units were written (a
 * multiple of 16). SSE2 on x86-64 (which always has it), NEON on arm64 (which
 * always has it), else the portable loop. The portable ones keep their own
 * names so that tests/lanes_check.c can hold each path to them.
 */
#ifndef BPE_UTF8_H
#define BPE_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "portable.h"

#define UTF8_ASCII_BLOCKS_PORTABLE(name, unit)                               \
    static inline size_t name(const unit *data, size_t n, uint8_t *out) {    \
        size_t i = 0;                                                        \
        for (; i + 16 <= n; i += 16) {                                       \
            unit any = 0;                                                    \
            for (int k = 0; k < 16; k++)                                     \
                any |= data[i + k];                                          \
            if (any >= 0x80)                                                 \
                break;                                                       \
            for (int k = 0; k < 16; k++)                                     \
                out[i + k] = (uint8_t)data[i + k];                           \
        }                                                                    \
        return i;                                                            \
    }
UTF8_ASCII_BLOCKS_PORTABLE(utf8_ascii_blocks_u8_portable, uint8_t)
UTF8_ASCII_BLOCKS_PORTABLE(utf8_ascii_blocks_u16_portable, uint16_t)
UTF8_ASCII_BLOCKS_PORTABLE(utf8_ascii_blocks_u32_portable, uint32_t)

#if defined(__SSE2__) || defined(_M_X64)
#include <immintrin.h>
#define UTF8_ASCII_PATH "sse2"
/* One test a block; the packing narrows 16 code units into 16 bytes. */
static inline size_t utf8_ascii_blocks_u8(const uint8_t *data, size_t n, uint8_t *out) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(data + i));
        if (_mm_movemask_epi8(v))
            break;
        _mm_storeu_si128((__m128i *)(out + i), v);
    }
    return i;
}
static inline size_t utf8_ascii_blocks_u16(const uint16_t *data, size_t n, uint8_t *out) {
    const __m128i high = _mm_set1_epi16((short)0xFF80);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(data + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(data + i + 8));
        __m128i over = _mm_and_si128(_mm_or_si128(a, b), high);
        if (_mm_movemask_epi8(_mm_cmpeq_epi16(over, _mm_setzero_si128())) != 0xFFFF)
            break;
        _mm_storeu_si128((__m128i *)(out + i), _mm_packus_epi16(a, b));
    }
    return i;
}
static inline size_t utf8_ascii_blocks_u32(const uint32_t *data, size_t n, uint8_t *out) {
    const __m128i high = _mm_set1_epi32((int)0xFFFFFF80u);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(data + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(data + i + 4));
        __m128i c = _mm_loadu_si128((const __m128i *)(data + i + 8));
        __m128i d = _mm_loadu_si128((const __m128i *)(data + i + 12));
        __m128i over = _mm_and_si128(_mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d)), high);
        if (_mm_movemask_epi8(_mm_cmpeq_epi32(over, _mm_setzero_si128())) != 0xFFFF)
            break;
        /* every lane is below 0x80: the signed packs keep each as it is */
        _mm_storeu_si128((__m128i *)(out + i),
                         _mm_packus_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d)));
    }
    return i;
}

#if defined(__x86_64__) || defined(_M_X64)
/* Any code units, 16 at a time, with AVX-512 (F, BW, VBMI2): each widened to
 * a lane of its UTF-8 bytes (1 to 4), then the lanes' used bytes packed by
 * one compress (about 15 cycles a block, where a step per character took 5
 * a character: a sixth of a warm encode of text that mixes ASCII with
 * Chinese, say, changing width every few characters). A block of ASCII is
 * narrowed instead, as fast as utf8_ascii_blocks.
 *
 * utf8_wide_blocks_u8/u16/u32(data, n, &out): whole blocks of 16 code units
 * from data[:n] written as UTF-8 at out, moved past them, up to the first
 * block holding a surrogate (which the caller replaces or pairs); returns
 * how many code units were written (a multiple of 16). Writes up to
 * UTF8_WIDE_SLACK bytes past the end it leaves out at. */
#define UTF8_WIDE_PATH 1
#define UTF8_WIDE_SLACK 64

static inline int utf8_wide_supported(void) {
    BPE_CPU_INIT();
    return BPE_CPU_SUPPORTS("avx512f") && BPE_CPU_SUPPORTS("avx512bw") && BPE_CPU_SUPPORTS("avx512vbmi2")
           && BPE_CPU_SUPPORTS("popcnt");
}

/* 16 code points (no surrogate, below 0x110000) as UTF-8 at out; returns the end. */
BPE_TARGET("avx512f,avx512bw,avx512vbmi2,popcnt")
static inline uint8_t *utf8_wide_put(__m512i c, uint8_t *out) {
    const __m512i six = _mm512_set1_epi32(0x3F), continued = _mm512_set1_epi32(0x80);
    __mmask16 two = _mm512_cmpge_epu32_mask(c, _mm512_set1_epi32(0x80));
    if (!two) {   /* all ASCII, as most blocks of most text: narrowed, a third of the work */
        _mm_storeu_si128((__m128i *)out, _mm512_cvtepi32_epi8(c));
        return out + 16;
    }
    __mmask16 three = _mm512_cmpge_epu32_mask(c, _mm512_set1_epi32(0x800));
    __mmask16 four = _mm512_cmpge_epu32_mask(c, _mm512_set1_epi32(0x10000));
    /* The low six bits of c, of c >> 6 and of c >> 12, each as a continuation byte. */
    __m512i t0 = _mm512_or_si512(_mm512_and_si512(c, six), continued);
    __m512i t1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(c, 6), six), continued);
    __m512i t2 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(c, 12), six), continued);
    /* Each width's bytes, the first in the lane's lowest byte. */
    __m512i w2 = _mm512_or_si512(_mm512_or_si512(_mm512_srli_epi32(c, 6), _mm512_set1_epi32(0xC0)),
                                 _mm512_slli_epi32(t0, 8));
    __m512i w3 = _mm512_or_si512(_mm512_or_si512(_mm512_srli_epi32(c, 12), _mm512_set1_epi32(0xE0)),
                                 _mm512_or_si512(_mm512_slli_epi32(t1, 8), _mm512_slli_epi32(t0, 16)));
    __m512i w4 = _mm512_or_si512(
        _mm512_or_si512(_mm512_srli_epi32(c, 18), _mm512_set1_epi32(0xF0)),
        _mm512_or_si512(_mm512_slli_epi32(t2, 8),
                        _mm512_or_si512(_mm512_slli_epi32(t1, 16), _mm512_slli_epi32(t0, 24))));
    __m512i w = _mm512_mask_blend_epi32(two, c, w2);
    w = _mm512_mask_blend_epi32(three, w, w3);
    w = _mm512_mask_blend_epi32(four, w, w4);
    /* The bytes each lane uses: its first, and one more for each width passed. */
    __m512i used = _mm512_set1_epi32(0xFF);
    used = _mm512_mask_or_epi32(used, two, used, _mm512_set1_epi32(0xFF00));
    used = _mm512_mask_or_epi32(used, three, used, _mm512_set1_epi32(0xFF0000));
    used = _mm512_mask_or_epi32(used, four, used, _mm512_set1_epi32((int)0xFF000000u));
    __mmask64 keep = _mm512_test_epi8_mask(used, used);
    _mm512_storeu_si512((void *)out, _mm512_maskz_compress_epi8(keep, w));
    return out + _mm_popcnt_u64(keep);
}

BPE_TARGET("avx512f,avx512bw,avx512vbmi2,popcnt")
static inline int utf8_wide_surrogates(__m512i c) {
    return _mm512_cmpeq_epi32_mask(_mm512_and_si512(c, _mm512_set1_epi32((int)0xFFFFF800u)),
                                   _mm512_set1_epi32(0xD800)) != 0;
}

/* One loop a storage width: its code units widened to 32-bit lanes by
 * ``load``; ``checked`` where the width can hold a surrogate. */
#define UTF8_WIDE_BLOCKS(name, unit, load, checked)                                      \
    BPE_TARGET("avx512f,avx512bw,avx512vbmi2,popcnt")                                     \
    static inline size_t name(const unit *data, size_t n, uint8_t **out) {               \
        uint8_t *o = *out;                                                               \
        size_t i = 0;                                                                    \
        for (; i + 16 <= n; i += 16) {                                                   \
            __m512i c = load(data + i);                                                  \
            if ((checked) && utf8_wide_surrogates(c))                                    \
                break;                                                                   \
            o = utf8_wide_put(c, o);                                                     \
        }                                                                                \
        *out = o;                                                                        \
        return i;                                                                        \
    }
#define UTF8_WIDE_LOAD_U8(p) _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p)))
#define UTF8_WIDE_LOAD_U16(p) _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(p)))
#define UTF8_WIDE_LOAD_U32(p) _mm512_loadu_si512((const void *)(p))
UTF8_WIDE_BLOCKS(utf8_wide_blocks_u8, uint8_t, UTF8_WIDE_LOAD_U8, 0)
UTF8_WIDE_BLOCKS(utf8_wide_blocks_u16, uint16_t, UTF8_WIDE_LOAD_U16, 1)
UTF8_WIDE_BLOCKS(utf8_wide_blocks_u32, uint32_t, UTF8_WIDE_LOAD_U32, 1)
#endif  /* x86-64 */

#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define UTF8_ASCII_PATH "neon"
/* One horizontal maximum a block; the narrowing moves keep each unit's low
 * byte, which is the unit once all are below 0x80. */
static inline size_t utf8_ascii_blocks_u8(const uint8_t *data, size_t n, uint8_t *out) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        uint8x16_t v = vld1q_u8(data + i);
        if (vmaxvq_u8(v) >= 0x80)
            break;
        vst1q_u8(out + i, v);
    }
    return i;
}
static inline size_t utf8_ascii_blocks_u16(const uint16_t *data, size_t n, uint8_t *out) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        uint16x8_t a = vld1q_u16(data + i), b = vld1q_u16(data + i + 8);
        if (vmaxvq_u16(vorrq_u16(a, b)) >= 0x80)
            break;
        vst1q_u8(out + i, vcombine_u8(vmovn_u16(a), vmovn_u16(b)));
    }
    return i;
}
static inline size_t utf8_ascii_blocks_u32(const uint32_t *data, size_t n, uint8_t *out) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        uint32x4_t a = vld1q_u32(data + i), b = vld1q_u32(data + i + 4);
        uint32x4_t c = vld1q_u32(data + i + 8), d = vld1q_u32(data + i + 12);
        if (vmaxvq_u32(vorrq_u32(vorrq_u32(a, b), vorrq_u32(c, d))) >= 0x80)
            break;
        uint16x8_t low = vcombine_u16(vmovn_u32(a), vmovn_u32(b));
        uint16x8_t high = vcombine_u16(vmovn_u32(c), vmovn_u32(d));
        vst1q_u8(out + i, vcombine_u8(vmovn_u16(low), vmovn_u16(high)));
    }
    return i;
}

#else
/* Elsewhere the portable loop, which compilers vectorize for their target. */
#define UTF8_ASCII_PATH "portable"
#define utf8_ascii_blocks_u8 utf8_ascii_blocks_u8_portable
#define utf8_ascii_blocks_u16 utf8_ascii_blocks_u16_portable
#define utf8_ascii_blocks_u32 utf8_ascii_blocks_u32_portable
#endif

#ifndef UTF8_WIDE_PATH
/* Elsewhere no wide path: never chosen, and never run. */
#define UTF8_WIDE_SLACK 0
static inline int utf8_wide_supported(void) { return 0; }
static inline size_t utf8_wide_blocks_u8(const uint8_t *d, size_t n, uint8_t **o) { (void)d; (void)n; (void)o; return 0; }
static inline size_t utf8_wide_blocks_u16(const uint16_t *d, size_t n, uint8_t **o) { (void)d; (void)n; (void)o; return 0; }
static inline size_t utf8_wide_blocks_u32(const uint32_t *d, size_t n, uint8_t **o) { (void)d; (void)n; (void)o; return 0; }
#endif

#endif
