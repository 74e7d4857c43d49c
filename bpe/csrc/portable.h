/* The compiler-specific spellings of the kernels, in one place: GCC's and
 * Clang's, and MSVC's or a portable fallback.
 *
 * Why: a bit scan, a per-function instruction-set target and a run-time CPU
 * check are all the kernels need beyond C99, and each compiler spells them
 * its own way. With MSVC (configured for Windows wheels, not yet built), the
 * x86 paths past SSE2 are never chosen: it has no __builtin_cpu_supports, so
 * the check says no and the scanners take SSE2, which x86-64 always has. The
 * atomics (atomics.h) and the OS's memory calls (memory.h) have
 * their own guards, with plain fallbacks. Also the size of a core's L2
 * cache, where the C library tells it, and the process's id.
 */
#ifndef BPE_PORTABLE_H
#define BPE_PORTABLE_H

#include <stdint.h>

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
/* The index of the lowest set bit of a non-zero word. */
static inline int bpe_ctz64(uint64_t x) { unsigned long i; _BitScanForward64(&i, x); return (int)i; }
static inline int bpe_ctz32(uint32_t x) { unsigned long i; _BitScanForward(&i, x); return (int)i; }
/* The number of zero bits above the highest set bit of a non-zero word. */
static inline int bpe_clz64(uint64_t x) { unsigned long i; _BitScanReverse64(&i, x); return 63 - (int)i; }
/* Compile one function for these instruction sets (MSVC needs nothing to use their intrinsics). */
#define BPE_TARGET(features)
/* Whether the running CPU has a feature: never, without the builtin (see above). */
#define BPE_CPU_INIT() ((void)0)
#define BPE_CPU_SUPPORTS(feature) 0
#else
static inline int bpe_ctz64(uint64_t x) { return __builtin_ctzll(x); }
static inline int bpe_ctz32(uint32_t x) { return __builtin_ctz(x); }
static inline int bpe_clz64(uint64_t x) { return __builtin_clzll(x); }
#define BPE_TARGET(features) __attribute__((target(features)))
#define BPE_CPU_INIT() __builtin_cpu_init()
#define BPE_CPU_SUPPORTS(feature) __builtin_cpu_supports(feature)
#endif

#if !defined(_WIN32)
#include <unistd.h>
/* This process's id: a forked child's differs from its parent's. */
static inline uint64_t bpe_process_id(void) { return (uint64_t)getpid(); }
#else
#include <process.h>
static inline uint64_t bpe_process_id(void) { return (uint64_t)_getpid(); }
#endif
/* The bytes of one core's L2 cache, or 0 where the C library does not say
   (glibc reads it from the CPU; other libraries may lack the name). */
static inline long bpe_l2_cache_bytes(void) {
#if defined(_SC_LEVEL2_CACHE_SIZE) && !defined(_WIN32)
    long n = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return n > 0 ? n : 0;
#else
    return 0;
#endif
}

#endif
