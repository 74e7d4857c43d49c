/* The ASCII-run and id-lane helpers of the kernels (bpe/csrc/utf8.h,
 * bpe/csrc/shortcache.h) against their portable twins, for
 * tests/test_emulated_cpus.py: compiled for aarch64 and run under
 * qemu-aarch64 it drives the NEON paths, natively the SSE2 ones. Every length
 * up to several blocks, at every alignment, with a unit that is not ASCII at
 * every place (or none), for each storage width; every layout of an entry's
 * lanes. Prints the paths and how many cases it checked, or the first mismatch.
 *
 *   aarch64-linux-gnu-gcc -O2 -static tests/lanes_check.c -o check && qemu-aarch64 ./check
 */
#include <stdio.h>
#include <string.h>

#include "../bpe/csrc/shortcache.h"
#include "../bpe/csrc/utf8.h"
#include "check_random.h"

/* Code units that are not ASCII, each just past a boundary the paths test. */
static const uint32_t OTHERS[] = {0x80, 0x81, 0xC3, 0xFF, 0x100, 0x180, 0x7FF, 0x800, 0xFF80, 0xFFFF,
                                  0x10000, 0x10FFFF, 0x80000000u, 0xFFFFFFFFu};

#define CHECK_WIDTH(unit, fast, portable, limit)                                          \
    static long check_##unit(void) {                                                      \
        static unit data[128 + 16];                                                       \
        static uint8_t got[128 + 16], want[128 + 16];                                     \
        long checked = 0;                                                                 \
        for (size_t offset = 0; offset < 16; offset++)                                    \
            for (size_t n = 0; n <= 128; n++)                                             \
                for (long at = -1; at < (long)n; at++)                                    \
                    for (size_t o = 0; o < sizeof OTHERS / sizeof OTHERS[0]; o++) {        \
                        if (OTHERS[o] > (limit) || (at < 0 && o > 0))                     \
                            continue;                                                     \
                        unit *text = data + offset;                                       \
                        for (size_t k = 0; k < n; k++)                                    \
                            text[k] = (unit)(next_random() % 0x80);                       \
                        if (at >= 0)                                                      \
                            text[at] = (unit)OTHERS[o];                                   \
                        memset(got, 0xAA, sizeof got);                                    \
                        memset(want, 0xAA, sizeof want);                                  \
                        size_t a = fast(text, n, got), b = portable(text, n, want);       \
                        if (a != b || memcmp(got, want, sizeof got) != 0) {               \
                            printf("MISMATCH %s: n %zu, offset %zu, unit %lx at %ld: %zu, portable %zu\n", \
                                   #unit, n, offset, (unsigned long)OTHERS[o], at, a, b); \
                            return -1;                                                    \
                        }                                                                 \
                        checked++;                                                        \
                    }                                                                     \
        return checked;                                                                   \
    }
CHECK_WIDTH(uint8_t, utf8_ascii_blocks_u8, utf8_ascii_blocks_u8_portable, 0xFF)
CHECK_WIDTH(uint16_t, utf8_ascii_blocks_u16, utf8_ascii_blocks_u16_portable, 0xFFFF)
CHECK_WIDTH(uint32_t, utf8_ascii_blocks_u32, utf8_ascii_blocks_u32_portable, 0xFFFFFFFFu)

static long check_lanes(void) {
    static const uint32_t IDS[] = {0, 1, 0x7FFFFFFF, 0x80000000u, 0xFFFFFFFEu, 0xFFFF, 0x10000};
    uint32_t storage[4 + 4], got[4], want[4];
    long checked = 0;
    for (int offset = 0; offset < 4; offset++)
        for (int used = 0; used <= 4; used++)
            for (int round = 0; round < 2000; round++) {
                uint32_t *lanes = storage + offset;
                for (int k = 0; k < 4; k++)
                    lanes[k] = k < used ? (round < 7 ? IDS[(round + k) % 7] : (uint32_t)next_random())
                                        : SHORTCACHE_NO_ID;
                if (round >= 7)
                    for (int k = 0; k < used; k++)
                        if (lanes[k] == SHORTCACHE_NO_ID)
                            lanes[k] = 0;
                size_t a = shortcache_copy_ids(got, lanes), b = shortcache_copy_ids_portable(want, lanes);
                if (a != b || a != (size_t)used || memcmp(got, want, sizeof got) != 0) {
                    printf("MISMATCH lanes: %d ids, offset %d: %zu, portable %zu\n", used, offset, a, b);
                    return -1;
                }
                checked++;
            }
    return checked;
}

int main(void) {
    long counts[] = {check_uint8_t(), check_uint16_t(), check_uint32_t(), check_lanes()};
    long total = 0;
    for (int k = 0; k < 4; k++) {
        if (counts[k] < 0)
            return 1;
        total += counts[k];
    }
    printf("%s %s %ld\n", UTF8_ASCII_PATH, SHORTCACHE_LANES_PATH, total);
    return 0;
}
