/* Every block classifier this build's architecture has, against the portable
 * one, for tests/test_emulated_cpus.py: compiled for aarch64 and run under
 * qemu-aarch64 it drives the NEON classifier, which no x86 machine runs
 * natively. Random blocks, every byte value at every place of a block, and
 * windows at every offset of a buffer (unaligned loads); each mask of each
 * path, the portable one ("scalar", eight bytes at a time) among them, must
 * equal those of a plain loop over the bytes, and each path's spread of
 * random masks the portable one's. Prints how many blocks it checked per
 * path, or the first mismatch.
 *
 *   aarch64-linux-gnu-gcc -O2 -static tests/classify_check.c -o check && qemu-aarch64 ./check
 */
#include <stdio.h>
#include <string.h>

#include "../bpe/csrc/classify.h"
#include "check_random.h"


static const char *const NAMES[] = {"upper", "lower", "digit", "space", "blank", "newline", "quote", "slash", "high"};

static int same(const ClassMasks *a, const ClassMasks *b, const uint8_t *block, const char *path) {
    const uint64_t *x = (const uint64_t *)a, *y = (const uint64_t *)b;
    for (int field = 0; field < 9; field++) {
        if (x[field] != y[field]) {
            printf("MISMATCH %s %s: %016llx, expected %016llx; block:", path, NAMES[field],
                   (unsigned long long)x[field], (unsigned long long)y[field]);
            for (int k = 0; k < 64; k++)
                printf(" %02x", block[k]);
            printf("\n");
            return 0;
        }
    }
    return 1;
}

/* The masks by their definition (classify.h), one byte at a time. */
static void classify_bytes(const uint8_t *p, ClassMasks *out) {
    ClassMasks m = {0};
    for (int k = 0; k < 64; k++) {
        uint8_t b = p[k];
        m.upper |= (uint64_t)(b >= 'A' && b <= 'Z') << k;
        m.lower |= (uint64_t)(b >= 'a' && b <= 'z') << k;
        m.digit |= (uint64_t)(b >= '0' && b <= '9') << k;
        m.space |= (uint64_t)((b >= 0x09 && b <= 0x0D) || b == ' ') << k;
        m.blank |= (uint64_t)(b == ' ') << k;
        m.newline |= (uint64_t)(b == '\r' || b == '\n') << k;
        m.quote |= (uint64_t)(b == '\'') << k;
        m.slash |= (uint64_t)(b == '/') << k;
        m.high |= (uint64_t)(b >= 0x80) << k;
    }
    *out = m;
}

/* A byte drawn so that every class turns up often: ASCII classes' edges, the
 * bytes around them, and any byte at all. */
static uint8_t random_byte(void) {
    static const uint8_t edges[] = {'@', 'A', 'Z', '[', '`', 'a', 'z', '{', '/', '0', '9', ':', 0x08, 0x09, 0x0D,
                                    0x0E, ' ', '\n', '\r', '\'', 0x7F, 0x80, 0xFF, 0xC3, 0xE6};
    uint64_t r = next_random();
    return (r & 1) ? edges[(r >> 8) % sizeof edges] : (uint8_t)(r >> 16);
}

static long check_path(int path, const char *name) {
    classify_fn classify = classify_function(path), gpt2 = classify_gpt2_function(path);
    spread_fn spread = spread_function(path);
    static uint8_t buffer[64 * 1024 + 64];
    ClassMasks expected, found;
    long checked = 0;
    for (size_t i = 0; i < sizeof buffer; i++)
        buffer[i] = random_byte();
    for (size_t offset = 0; offset + 64 <= sizeof buffer; offset++) {   /* every alignment */
        const uint8_t *block = buffer + offset;
        classify_bytes(block, &expected);
        classify(block, &found);
        if (!same(&found, &expected, block, name))
            return -1;
        /* gpt2's classifier gives the masks gpt2 reads: letters of either case
           in upper, no lower, newline or slash (where the path has its own). */
        gpt2(block, &found);
        if (gpt2 != classify) {
            expected.upper |= expected.lower;
            expected.lower = expected.newline = expected.slash = 0;
        }
        if (!same(&found, &expected, block, name))
            return -1;
        checked++;
    }
    for (int place = 0; place < 64; place++) {   /* every byte value at every place */
        for (int value = 0; value < 256; value++) {
            uint8_t block[64];
            for (int k = 0; k < 64; k++)
                block[k] = random_byte();
            block[place] = (uint8_t)value;
            classify_bytes(block, &expected);
            classify(block, &found);
            if (!same(&found, &expected, block, name))
                return -1;
            checked++;
        }
    }
    /* random masks spread into offsets, against the portable spread */
    for (int round = 0; path != CLASSIFY_SCALAR && round < 200000; round++) {
        static intptr_t want[128], got[128];
        uint64_t bits = next_random() & next_random();
        if (round % 3 == 0)
            bits = next_random();
        if (bits == 0)
            continue;
        intptr_t n = spread_scalar(bits, 1000, want), m = spread(bits, 1000, got);
        if (n != m || memcmp(want, got, (size_t)n * sizeof(intptr_t)) != 0) {
            printf("MISMATCH %s spread of %016llx\n", name, (unsigned long long)bits);
            return -1;
        }
    }
    return checked;
}

int main(void) {
    static const struct { int path; const char *name; } PATHS[] = {
        {CLASSIFY_SCALAR, "scalar"}, {CLASSIFY_SSE2, "sse2"}, {CLASSIFY_AVX2, "avx2"}, {CLASSIFY_AVX512, "avx512"}, {CLASSIFY_NEON, "neon"}};
    int ran = 0;
    for (size_t i = 0; i < sizeof PATHS / sizeof PATHS[0]; i++) {
        if (!classify_supported(PATHS[i].path))
            continue;
        long checked = check_path(PATHS[i].path, PATHS[i].name);
        if (checked < 0)
            return 1;
        printf("%s %ld\n", PATHS[i].name, checked);
        ran++;
    }
    return ran ? 0 : 2;
}
