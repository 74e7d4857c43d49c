/* The random bytes and ids of the C checks (tests/classify_check.c,
 * tests/lanes_check.c): xorshift64*, seeded alike, so a mismatch they print
 * is met again on the next run. */
#ifndef BPE_CHECK_RANDOM_H
#define BPE_CHECK_RANDOM_H

#include <stdint.h>

static uint64_t state = 0x9E3779B97F4A7C15ULL;

static uint64_t next_random(void) {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1DULL;
}

#endif
