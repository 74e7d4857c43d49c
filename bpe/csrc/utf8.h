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
#include <emmintrin.h>
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

#endif
