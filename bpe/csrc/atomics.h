/* What the kernels' tables need of the CPU beyond plain loads and stores
 * (bpe/_memory.pxd): a prefetch, and the atomics of tables that several
 * threads fill and read at once. */
#ifndef BPE_ATOMICS_H
#define BPE_ATOMICS_H

#include <stdint.h>

/* Start loading the cache line at an address. Every prefetch of the
   kernels is this one, because a bare __builtin_prefetch can vanish: GCC
   12's mod-ref analysis finds a function whose only effect is a prefetch
   free of side effects, and deletes each call of it. pairranks_prefetch
   was such a function, and compiled to nothing. The empty volatile asm
   that takes the address is an effect no pass deletes; it emits no
   instruction. */
#if defined(__GNUC__)
#define BPE_PREFETCH(address) do { const void *bpe_prefetch_at = (address); \
    __builtin_prefetch(bpe_prefetch_at); __asm__ __volatile__("" : : "r"(bpe_prefetch_at)); } while (0)
#else
#define BPE_PREFETCH(address) ((void)(address))
#endif

#if defined(__GNUC__)
#define BPE_CAN_SHARE 1
static inline uint64_t bpe_load_acquire(const uint64_t *word) {
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}
static inline void bpe_store_release(uint64_t *word, uint64_t value) {
    __atomic_store_n(word, value, __ATOMIC_RELEASE);
}
/* Store `value` if the word holds `expected`; else leave in *seen what it holds. */
static inline int bpe_swap_if(uint64_t *word, uint64_t expected, uint64_t value, uint64_t *seen) {
    *seen = expected;
    return __atomic_compare_exchange_n(word, seen, value, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
static inline int64_t bpe_add_count(int64_t *count, int64_t n) {
    return __atomic_add_fetch(count, n, __ATOMIC_RELAXED);
}
static inline int64_t bpe_read_count(const int64_t *count) {
    return __atomic_load_n(count, __ATOMIC_RELAXED);
}
#else
#define BPE_CAN_SHARE 0
static inline uint64_t bpe_load_acquire(const uint64_t *word) { return *word; }
static inline void bpe_store_release(uint64_t *word, uint64_t value) { *word = value; }
static inline int bpe_swap_if(uint64_t *word, uint64_t expected, uint64_t value, uint64_t *seen) {
    *seen = *word;
    if (*seen != expected) return 0;
    *word = value;
    return 1;
}
static inline int64_t bpe_add_count(int64_t *count, int64_t n) { return *count += n; }
static inline int64_t bpe_read_count(const int64_t *count) { return *count; }
#endif

#endif
