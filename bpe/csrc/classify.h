/* Classify 64 bytes at once: which are ASCII upper-case letters, lower-case
 * letters, digits, whitespace, spaces, CR/LF, apostrophes, slashes and
 * non-ASCII bytes, one bit per byte (bit k for byte k).
 *
 * Why: from these masks the scanners (bpe/_scanner.pyx, "64 bytes at once")
 * find every pre-token start of a window with shifts and ands, instead of
 * walking the text byte by byte. Every path gives the same masks (AVX2's
 * classifier for gpt2 only those gpt2 reads); which one
 * runs is chosen once, at run time, from what the CPU supports (never from the
 * build machine's flags, so a wheel built here runs on any CPU of its
 * architecture): AVX-512 (F, BW, VBMI, VBMI2), AVX2 or SSE2 on x86-64, NEON
 * on arm64, a portable loop elsewhere. BPE_SIMD or bpe._scanner.select_simd forces one.
 */
#ifndef BPE_CLASSIFY_H
#define BPE_CLASSIFY_H

#include <stdint.h>
#include <string.h>

#include "portable.h"

typedef struct {
    uint64_t upper;   /* A-Z */
    uint64_t lower;   /* a-z */
    uint64_t digit;   /* 0-9 */
    uint64_t space;   /* ASCII \s as regex has it: \t \n \v \f \r and ' ' */
    uint64_t blank;   /* ' ' */
    uint64_t newline; /* \r and \n */
    uint64_t quote;   /* "'" */
    uint64_t slash;   /* "/" */
    uint64_t high;    /* 0x80 and up: part of a non-ASCII character */
} ClassMasks;

typedef void (*classify_fn)(const uint8_t *p, ClassMasks *out);

/* The index of the lowest set bit of a non-zero word. */
static inline int trailing_zeros(uint64_t x) { return bpe_ctz64(x); }

/* The number of set bits, by adding neighbours' counts in ever wider fields:
 * __builtin_popcountll is a call to libgcc where the build may not assume the
 * popcnt instruction (we never build for the build machine's CPU). */
static inline int count_bits(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
}

/* The number of zero bits above the highest set bit of a non-zero word. */
static inline int leading_zeros(uint64_t x) { return bpe_clz64(x); }

enum { CLASSIFY_SCALAR = 0, CLASSIFY_SSE2 = 1, CLASSIFY_AVX2 = 2, CLASSIFY_NEON = 3, CLASSIFY_AVX512 = 4 };

/* Spreading a window's starts into offsets: write base + k for each set bit k
 * of bits, lowest first, to out (which has room for 64 more than it is given:
 * writes go 8 at a time, whether or not there are as many); return how many.
 * The scanners write a window's pre-token ends so; a path that can compress
 * a mask in one instruction does it there (see classify_function). */
typedef intptr_t (*spread_fn)(uint64_t bits, intptr_t base, intptr_t *out);

/* One lane at a time. A loop that stopped at the last bit would mispredict
 * its exit once per window; the lanes past it are junk: the top bit or'ed in
 * spares the count of trailing zeros a test for zero, and changes no lowest
 * set bit. */
static intptr_t spread_scalar(uint64_t bits, intptr_t base, intptr_t *out) {
    intptr_t count = count_bits(bits);
    intptr_t k = 0;
    do {
        for (int j = 0; j < 8; j++) {
            out[k + j] = base + trailing_zeros(bits | (1ULL << 63));
            bits &= bits - 1;
        }
        k += 8;
    } while (k < count);
    return count;
}

/* The portable path, eight bytes at a time in a 64-bit word: each test
 * leaves a byte's top bit set where it holds, exactly (no carry or borrow
 * crosses a byte), and one multiply gathers the eight top bits into eight
 * bits. Why: CPUs without SSE2 or NEON run this path for every block, and a
 * loop over the 64 bytes, nine tests each, scanned half as fast (x86-64 with
 * this path forced, cl100k's pattern: 175 MB/s of Shakespeare against 339,
 * and 6 against 19 on every code point's UTF-8). */
#define SWAR_ONES 0x0101010101010101ULL
#define SWAR_HIGH 0x8080808080808080ULL

/* Bytes p[0..7] as a word, p[k] in bits 8k..8k+7 whatever the byte order. */
static inline uint64_t swar_load(const uint8_t *p) {
    uint64_t w;
    memcpy(&w, p, sizeof w);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

/* Top bits of the bytes equal to byte. */
static inline uint64_t swar_equal(uint64_t w, uint8_t byte) {
    uint64_t x = w ^ (SWAR_ONES * byte);
    return ~(((x & ~SWAR_HIGH) + ~SWAR_HIGH) | x) & SWAR_HIGH;
}

/* Top bits of the bytes in [lo, hi) (hi <= 0x80): low7 is w with each top bit
 * cleared, ascii the top bits of w's bytes below 0x80. low7's byte plus
 * 0x80 - lo reaches 0x80 exactly when it is lo or more. */
static inline uint64_t swar_in_range(uint64_t low7, uint64_t ascii, uint8_t lo, uint8_t hi) {
    return (low7 + SWAR_ONES * (uint8_t)(0x80 - lo)) & ~(low7 + SWAR_ONES * (uint8_t)(0x80 - hi)) & ascii;
}

/* The eight top bits, byte k's as bit k: each lands in the top byte at its own
 * place, and no two partial products meet, so nothing carries. */
static inline uint64_t swar_gather(uint64_t top_bits) {
    return ((top_bits & SWAR_HIGH) * 0x0002040810204081ULL) >> 56;
}

static inline void classify_scalar(const uint8_t *p, ClassMasks *out) {
    ClassMasks m = {0};
    for (int j = 0; j < 8; j++) {
        uint64_t w = swar_load(p + 8 * j);
        uint64_t low7 = w & ~SWAR_HIGH, ascii = ~w & SWAR_HIGH;
        uint64_t blank = swar_equal(w, ' ');
        int at = 8 * j;
        m.upper |= swar_gather(swar_in_range(low7, ascii, 'A', 'Z' + 1)) << at;
        m.lower |= swar_gather(swar_in_range(low7, ascii, 'a', 'z' + 1)) << at;
        m.digit |= swar_gather(swar_in_range(low7, ascii, '0', '9' + 1)) << at;
        m.space |= swar_gather(swar_in_range(low7, ascii, 0x09, 0x0E) | blank) << at;
        m.blank |= swar_gather(blank) << at;
        m.newline |= swar_gather(swar_equal(w, '\r') | swar_equal(w, '\n')) << at;
        m.quote |= swar_gather(swar_equal(w, '\'')) << at;
        m.slash |= swar_gather(swar_equal(w, '/')) << at;
        m.high |= swar_gather(w) << at;
    }
    *out = m;
}

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define CLASSIFY_X86 1

/* Bytes in [lo, lo + width): shift the range to the bottom of the signed
 * order, then one signed compare (SSE2 has no unsigned one). */
static inline uint64_t in_range_sse2(__m128i v, uint8_t lo, uint8_t width) {
    __m128i shifted = _mm_add_epi8(v, _mm_set1_epi8((char)(0x80 - lo)));
    return (uint16_t)_mm_movemask_epi8(_mm_cmplt_epi8(shifted, _mm_set1_epi8((char)(0x80 + width))));
}

static inline uint64_t equal_sse2(__m128i v, uint8_t byte) {
    return (uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8((char)byte)));
}

static void classify_sse2(const uint8_t *p, ClassMasks *out) {
    ClassMasks m = {0};
    for (int k = 0; k < 4; k++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + 16 * k));
        int at = 16 * k;
        uint64_t blanks = equal_sse2(v, ' ');
        m.upper |= in_range_sse2(v, 'A', 26) << at;
        m.lower |= in_range_sse2(v, 'a', 26) << at;
        m.digit |= in_range_sse2(v, '0', 10) << at;
        m.space |= (in_range_sse2(v, 0x09, 5) | blanks) << at;
        m.blank |= blanks << at;
        m.newline |= (equal_sse2(v, '\r') | equal_sse2(v, '\n')) << at;
        m.quote |= equal_sse2(v, '\'') << at;
        m.slash |= equal_sse2(v, '/') << at;
        m.high |= (uint64_t)(uint16_t)_mm_movemask_epi8(v) << at;
    }
    *out = m;
}

BPE_TARGET("avx2")
static inline uint64_t in_range_avx2(__m256i v, uint8_t lo, uint8_t width) {
    __m256i shifted = _mm256_add_epi8(v, _mm256_set1_epi8((char)(0x80 - lo)));
    __m256i inside = _mm256_cmpgt_epi8(_mm256_set1_epi8((char)(0x80 + width)), shifted);
    return (uint32_t)_mm256_movemask_epi8(inside);
}

BPE_TARGET("avx2")
static inline uint64_t equal_avx2(__m256i v, uint8_t byte) {
    return (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8((char)byte)));
}

BPE_TARGET("avx2")
static void classify_avx2(const uint8_t *p, ClassMasks *out) {
    __m256i a = _mm256_loadu_si256((const __m256i *)p);
    __m256i b = _mm256_loadu_si256((const __m256i *)(p + 32));
    out->upper = in_range_avx2(a, 'A', 26) | (in_range_avx2(b, 'A', 26) << 32);
    out->lower = in_range_avx2(a, 'a', 26) | (in_range_avx2(b, 'a', 26) << 32);
    out->digit = in_range_avx2(a, '0', 10) | (in_range_avx2(b, '0', 10) << 32);
    out->blank = equal_avx2(a, ' ') | (equal_avx2(b, ' ') << 32);
    out->newline = equal_avx2(a, '\r') | equal_avx2(a, '\n') | ((equal_avx2(b, '\r') | equal_avx2(b, '\n')) << 32);
    out->space = in_range_avx2(a, 0x09, 5) | (in_range_avx2(b, 0x09, 5) << 32) | out->blank;
    out->quote = equal_avx2(a, '\'') | (equal_avx2(b, '\'') << 32);
    out->slash = equal_avx2(a, '/') | (equal_avx2(b, '/') << 32);
    out->high = (uint64_t)(uint32_t)_mm256_movemask_epi8(a) | ((uint64_t)(uint32_t)_mm256_movemask_epi8(b) << 32);
}

/* gpt2's rules read fewer classes (bpe/_scanner.pyx, gpt2_starts): letters
 * whatever their case, and no CR, LF or "/" of their own. So its classifier
 * makes those it reads: `upper` holds every letter, and `lower`, `newline`
 * and `slash` stay empty. A byte or'ed with 0x20 is a lower-case letter
 * exactly when the byte is a letter. About a third fewer instructions than
 * classify_avx2. */
BPE_TARGET("avx2")
static void classify_avx2_gpt2(const uint8_t *p, ClassMasks *out) {
    __m256i a = _mm256_loadu_si256((const __m256i *)p);
    __m256i b = _mm256_loadu_si256((const __m256i *)(p + 32));
    __m256i case_bit = _mm256_set1_epi8(0x20);
    out->upper = in_range_avx2(_mm256_or_si256(a, case_bit), 'a', 26)
                 | (in_range_avx2(_mm256_or_si256(b, case_bit), 'a', 26) << 32);
    out->lower = 0;
    out->digit = in_range_avx2(a, '0', 10) | (in_range_avx2(b, '0', 10) << 32);
    out->blank = equal_avx2(a, ' ') | (equal_avx2(b, ' ') << 32);
    out->newline = 0;
    out->space = in_range_avx2(a, 0x09, 5) | (in_range_avx2(b, 0x09, 5) << 32) | out->blank;
    out->quote = equal_avx2(a, '\'') | (equal_avx2(b, '\'') << 32);
    out->slash = 0;
    out->high = (uint64_t)(uint32_t)_mm256_movemask_epi8(a) | ((uint64_t)(uint32_t)_mm256_movemask_epi8(b) << 32);
}

/* Every CPU with AVX2 has BMI1 and POPCNT too (Intel from Haswell, AMD from
 * Excavator): so the AVX2 path spreads with them. tzcnt of no bit is 64, a
 * junk lane past the last start, so the word needs no guard bit; blsr and
 * popcnt are one instruction each where the portable loop takes two and twelve. */
BPE_TARGET("bmi,popcnt")
static intptr_t spread_bmi(uint64_t bits, intptr_t base, intptr_t *out) {
    intptr_t count = (intptr_t)_mm_popcnt_u64(bits);
    intptr_t k = 0;
    do {
        for (int j = 0; j < 8; j++) {
            out[k + j] = base + (intptr_t)_tzcnt_u64(bits);
            bits = _blsr_u64(bits);
        }
        k += 8;
    } while (k < count);
    return count;
}

/* AVX-512BW compares all 64 bytes at once into a mask register: no movemask,
 * no halves to join. */
BPE_TARGET("avx512f,avx512bw")
static inline uint64_t in_range_avx512(__m512i v, uint8_t lo, uint8_t width) {
    return (uint64_t)_mm512_cmplt_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8((char)lo)),
                                            _mm512_set1_epi8((char)width));
}

BPE_TARGET("avx512f,avx512bw")
static inline uint64_t equal_avx512(__m512i v, uint8_t byte) {
    return (uint64_t)_mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8((char)byte));
}

BPE_TARGET("avx512f,avx512bw")
static void classify_avx512(const uint8_t *p, ClassMasks *out) {
    __m512i v = _mm512_loadu_si512((const void *)p);
    out->upper = in_range_avx512(v, 'A', 26);
    out->lower = in_range_avx512(v, 'a', 26);
    out->digit = in_range_avx512(v, '0', 10);
    out->blank = equal_avx512(v, ' ');
    out->newline = equal_avx512(v, '\r') | equal_avx512(v, '\n');
    out->space = in_range_avx512(v, 0x09, 5) | out->blank;
    out->quote = equal_avx512(v, '\'');
    out->slash = equal_avx512(v, '/');
    out->high = (uint64_t)_mm512_movepi8_mask(v);
}

/* VBMI2 compresses the set bits' indices (bytes 0 to 63) to the front in one
 * instruction; each 8 of them are widened to 64 bits and offset by base, and
 * the next 8 moved down by a permute (VBMI), in registers throughout. */
BPE_TARGET("avx512f,avx512bw,avx512vbmi,avx512vbmi2,popcnt")
static intptr_t spread_avx512(uint64_t bits, intptr_t base, intptr_t *out) {
    static const uint8_t iota[128] = {
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
        22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43,
        44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63,
        64, 65, 66, 67, 68, 69, 70, 71};
    intptr_t count = (intptr_t)_mm_popcnt_u64(bits);
    __m512i offset = _mm512_set1_epi64((long long)base);
    __m512i next_eight = _mm512_loadu_si512((const void *)(iota + 8));  /* lane i takes lane i + 8 */
    __m512i at = _mm512_maskz_compress_epi8(bits, _mm512_loadu_si512((const void *)iota));
    intptr_t k = 0;
    do {
        __m512i eight = _mm512_cvtepu8_epi64(_mm512_castsi512_si128(at));
        _mm512_storeu_si512((void *)(out + k), _mm512_add_epi64(eight, offset));
        at = _mm512_permutexvar_epi8(next_eight, at);
        k += 8;
    } while (k < count);
    return count;
}
#endif

#if defined(__aarch64__)
#include <arm_neon.h>
#define CLASSIFY_ARM 1

/* NEON has no movemask: keep one weight bit per lane, then add up each half. */
static inline uint64_t in_range_neon(uint8x16_t v, uint8_t lo, uint8_t width) {
    static const uint8_t weights[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    uint8x16_t inside = vcltq_u8(vsubq_u8(v, vdupq_n_u8(lo)), vdupq_n_u8(width));
    uint8x16_t bits = vandq_u8(inside, vld1q_u8(weights));
    return (uint64_t)vaddv_u8(vget_low_u8(bits)) | ((uint64_t)vaddv_u8(vget_high_u8(bits)) << 8);
}

static void classify_neon(const uint8_t *p, ClassMasks *out) {
    ClassMasks m = {0};
    for (int k = 0; k < 4; k++) {
        uint8x16_t v = vld1q_u8(p + 16 * k);
        int at = 16 * k;
        uint64_t blanks = in_range_neon(v, ' ', 1);
        m.upper |= in_range_neon(v, 'A', 26) << at;
        m.lower |= in_range_neon(v, 'a', 26) << at;
        m.digit |= in_range_neon(v, '0', 10) << at;
        m.space |= (in_range_neon(v, 0x09, 5) | blanks) << at;
        m.blank |= blanks << at;
        m.newline |= (in_range_neon(v, '\r', 1) | in_range_neon(v, '\n', 1)) << at;
        m.quote |= in_range_neon(v, '\'', 1) << at;
        m.slash |= in_range_neon(v, '/', 1) << at;
        m.high |= in_range_neon(v, 0x80, 128) << at;
    }
    *out = m;
}
#endif

/* Whether this CPU can run a path. */
static inline int classify_supported(int path) {
    switch (path) {
    case CLASSIFY_SCALAR:
        return 1;
#ifdef CLASSIFY_X86
    case CLASSIFY_SSE2:
        return 1;   /* part of x86-64 itself */
    case CLASSIFY_AVX2:
        BPE_CPU_INIT();
        return BPE_CPU_SUPPORTS("avx2") && BPE_CPU_SUPPORTS("bmi")
               && BPE_CPU_SUPPORTS("popcnt");
    case CLASSIFY_AVX512:
        BPE_CPU_INIT();
        return BPE_CPU_SUPPORTS("avx512f") && BPE_CPU_SUPPORTS("avx512bw")
               && BPE_CPU_SUPPORTS("avx512vbmi") && BPE_CPU_SUPPORTS("avx512vbmi2")
               && BPE_CPU_SUPPORTS("popcnt");
#endif
#ifdef CLASSIFY_ARM
    case CLASSIFY_NEON:
        return 1;   /* part of AArch64 itself */
#endif
    default:
        return 0;
    }
}

static inline classify_fn classify_function(int path) {
    switch (path) {
#ifdef CLASSIFY_X86
    case CLASSIFY_SSE2:
        return classify_sse2;
    case CLASSIFY_AVX2:
        return classify_avx2;
    case CLASSIFY_AVX512:
        return classify_avx512;
#endif
#ifdef CLASSIFY_ARM
    case CLASSIFY_NEON:
        return classify_neon;
#endif
    default:
        return classify_scalar;
    }
}

/* The classifier a path uses for gpt2's pattern: its own where the path has
 * one (classify_avx2_gpt2), else the path's. */
static inline classify_fn classify_gpt2_function(int path) {
#ifdef CLASSIFY_X86
    if (path == CLASSIFY_AVX2)
        return classify_avx2_gpt2;
#endif
    return classify_function(path);
}

/* How a path spreads a window's starts. */
static inline spread_fn spread_function(int path) {
#ifdef CLASSIFY_X86
    if (path == CLASSIFY_AVX512)
        return spread_avx512;
    if (path == CLASSIFY_AVX2)
        return spread_bmi;
#endif
    (void)path;
    return spread_scalar;
}

/* The fastest path this CPU supports. */
static inline int classify_best(void) {
    if (classify_supported(CLASSIFY_AVX512))
        return CLASSIFY_AVX512;
    if (classify_supported(CLASSIFY_AVX2))
        return CLASSIFY_AVX2;
    if (classify_supported(CLASSIFY_SSE2))
        return CLASSIFY_SSE2;
    if (classify_supported(CLASSIFY_NEON))
        return CLASSIFY_NEON;
    return CLASSIFY_SCALAR;
}

#endif
