/* The allocator's C (bpe/_memory.pyx): blocks on huge pages, and the blocks
 * id arrays are made from, which numpy hands back to be kept for the next
 * array (see ``empty_written_once``). */
#ifndef BPE_MEMORY_H
#define BPE_MEMORY_H

#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#include <string.h>
#if defined(__linux__) || defined(__APPLE__)
#define BPE_ID_BLOCKS 1
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#else
#define BPE_ID_BLOCKS 0
#endif

/* Blocks for the id arrays handed to callers, kept for the next call when
   numpy frees an array (see empty_written_once for why). Each block is a
   mapping of its own, advised ordinary pages once, with a header before
   the array's memory: the size mapped and the size the array last asked
   for. At most BPE_IDLE_BLOCKS idle blocks are kept, the largest, and none
   mapped larger than bpe_idle_largest; the rest are unmapped at once. */
#define BPE_BLOCK_HEADER 64
#define BPE_IDLE_BLOCKS 2
typedef struct { size_t mapped; size_t size; } bpe_block;
static size_t bpe_idle_largest = (size_t)64 << 20;   /* ids of a 16 MB text in one call */
static int (*bpe_block_fails)(void) = NULL;    /* the test hook, set by the module */

#if BPE_ID_BLOCKS
static bpe_block* bpe_idle[BPE_IDLE_BLOCKS];
static pthread_mutex_t bpe_idle_lock = PTHREAD_MUTEX_INITIALIZER;

static bpe_block* bpe_block_map(size_t size) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), mapped;
    void* base;
    if (size > ((size_t)-1) / 2)
        return NULL;
    mapped = (size + BPE_BLOCK_HEADER + page - 1) / page * page;
    base = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
#if defined(MADV_NOHUGEPAGE)
    /* Ordinary pages: numpy advises huge pages for every array of 4 MiB or
       more. On a VM that hands freed memory back to its host
       (virtio-balloon free page reporting, as on the machine these
       kernels were measured on), a huge page taken from memory freed a
       few seconds before waits for the host to back all 2 MiB again:
       15-18 ms a page, in system time, which made about half the warm
       10 MB passes of a benchmark 5x slower. Ordinary pages fault about
       as fast otherwise and come from memory the guest still holds. */
    (void)madvise(base, mapped, MADV_NOHUGEPAGE);
#endif
    ((bpe_block*)base)->mapped = mapped;
    return (bpe_block*)base;
}

/* The memory of an array of size bytes: an idle block that holds it (the
   smallest such), else a new one; NULL when out of memory. */
static void* bpe_block_take(size_t size) {
    bpe_block* block = NULL;
    int k, best = -1;
    pthread_mutex_lock(&bpe_idle_lock);
    for (k = 0; k < BPE_IDLE_BLOCKS; k++)
        if (bpe_idle[k] != NULL && bpe_idle[k]->mapped - BPE_BLOCK_HEADER >= size
                && (best < 0 || bpe_idle[k]->mapped < bpe_idle[best]->mapped))
            best = k;
    if (best >= 0) {
        block = bpe_idle[best];
        bpe_idle[best] = NULL;
    }
    pthread_mutex_unlock(&bpe_idle_lock);
    if (block == NULL) {
        if (bpe_block_fails != NULL && bpe_block_fails())
            return NULL;
        block = bpe_block_map(size);
        if (block == NULL)
            return NULL;
    }
    block->size = size;
    return (char*)block + BPE_BLOCK_HEADER;
}

/* An array's memory given back: kept idle in place of a smaller idle
   block (or an empty place), else unmapped. */
static void bpe_block_give(void* memory) {
    bpe_block* block = (bpe_block*)((char*)memory - BPE_BLOCK_HEADER);
    bpe_block* evicted = block;
    int k, smallest = -1;
    if (block->mapped <= bpe_idle_largest) {
        pthread_mutex_lock(&bpe_idle_lock);
        for (k = 0; k < BPE_IDLE_BLOCKS; k++)
            if (bpe_idle[k] == NULL || smallest < 0
                    || (bpe_idle[smallest] != NULL && bpe_idle[k]->mapped < bpe_idle[smallest]->mapped))
                smallest = k;
        if (bpe_idle[smallest] == NULL || bpe_idle[smallest]->mapped < block->mapped) {
            evicted = bpe_idle[smallest];
            bpe_idle[smallest] = block;
        }
        pthread_mutex_unlock(&bpe_idle_lock);
    }
    if (evicted != NULL)
        munmap(evicted, evicted->mapped);
}

/* A process forked while another thread held the lock would find it held
   for ever: the child starts with it new (it has one thread). */
static void bpe_blocks_after_fork(void) {
    pthread_mutex_init(&bpe_idle_lock, NULL);
}
static void bpe_blocks_init(void) {
    (void)pthread_atfork(NULL, NULL, bpe_blocks_after_fork);
}

/* Unmap every idle block; how many there were. */
static int bpe_blocks_release(void) {
    bpe_block* idle[BPE_IDLE_BLOCKS];
    int k, n = 0;
    pthread_mutex_lock(&bpe_idle_lock);
    for (k = 0; k < BPE_IDLE_BLOCKS; k++) {
        idle[k] = bpe_idle[k];
        bpe_idle[k] = NULL;
    }
    pthread_mutex_unlock(&bpe_idle_lock);
    for (k = 0; k < BPE_IDLE_BLOCKS; k++)
        if (idle[k] != NULL) {
            munmap(idle[k], idle[k]->mapped);
            n++;
        }
    return n;
}

static int bpe_blocks_idle(void) {
    int k, n = 0;
    pthread_mutex_lock(&bpe_idle_lock);
    for (k = 0; k < BPE_IDLE_BLOCKS; k++)
        n += bpe_idle[k] != NULL;
    pthread_mutex_unlock(&bpe_idle_lock);
    return n;
}

/* numpy's allocator interface (a PyDataMem_Handler), over the blocks. */
static void* bpe_blocks_malloc(void* ctx, size_t size) {
    (void)ctx;
    return bpe_block_take(size);
}
static void* bpe_blocks_calloc(void* ctx, size_t count, size_t item) {
    void* memory;
    (void)ctx;
    if (item != 0 && count > ((size_t)-1) / item)
        return NULL;
    memory = bpe_block_take(count * item);
    if (memory != NULL)
        memset(memory, 0, count * item);      /* an idle block holds old ids */
    return memory;
}
static void* bpe_blocks_realloc(void* ctx, void* memory, size_t size) {
    bpe_block* block;
    void* moved;
    (void)ctx;
    if (memory == NULL)
        return bpe_block_take(size);
    block = (bpe_block*)((char*)memory - BPE_BLOCK_HEADER);
    if (size <= block->mapped - BPE_BLOCK_HEADER) {     /* shrinking, mostly: in place */
        block->size = size;
        return memory;
    }
    moved = bpe_block_take(size);
    if (moved == NULL)
        return NULL;
    memcpy(moved, memory, block->size);
    bpe_block_give(memory);
    return moved;
}
static void bpe_blocks_free(void* ctx, void* memory, size_t size) {
    (void)ctx;
    (void)size;
    if (memory != NULL)
        bpe_block_give(memory);
}
#else
static void bpe_blocks_init(void) {}
static int bpe_blocks_release(void) { return 0; }
static int bpe_blocks_idle(void) { return 0; }
#endif

/* Huge blocks (bpe_alloc_huge's) given back (bpe_free_huge), kept idle
   for the next of the same size: a session's short cache, dropped by
   clear_cache or with its tokenizer, is taken by the next session's as it
   is, its pages backed. glibc could not reuse it (an aligned block needs its
   size and the alignment free), so each new one grew the heap onto pages
   never touched; and on a VM that hands freed memory back to its host, a
   huge page faulted in there waits for the host to back it (see
   bpe_block_map): 30-45 ms of system time in each cold pass over 10 MB of
   code, half the pass. At most BPE_IDLE_HUGE blocks and bpe_idle_huge_bytes
   in all: the last ones given back. Only bpe_alloc_huge's blocks come here
   (a calloc'd one would break its promise of 2 MiB boundaries). */
#define BPE_IDLE_HUGE 4
#define BPE_HUGE_PAGE ((size_t)2 << 20)
typedef struct { void* block; size_t size; unsigned long long kept; } bpe_huge;
/* Two sessions' short caches at their largest: 32 MiB and two slots each. */
static size_t bpe_idle_huge_bytes = ((size_t)64 << 20) + 4096;
#if BPE_ID_BLOCKS
static bpe_huge bpe_idle_huge[BPE_IDLE_HUGE];
static unsigned long long bpe_huge_kept = 0;    /* blocks kept so far: each one's order */

/* An idle block of exactly size bytes, taken; NULL if none. */
static void* bpe_huge_take(size_t size) {
    void* block = NULL;
    int k;
    pthread_mutex_lock(&bpe_idle_lock);
    for (k = 0; k < BPE_IDLE_HUGE; k++)
        if (bpe_idle_huge[k].block != NULL && bpe_idle_huge[k].size == size) {
            block = bpe_idle_huge[k].block;
            bpe_idle_huge[k].block = NULL;
            break;
        }
    pthread_mutex_unlock(&bpe_idle_lock);
    return block;
}
/* Keep block (of size bytes) idle, in place of the blocks kept longest
   before it if there is no room else (a table of a size no cache asks for
   any more goes in time); whether it was kept. */
static int bpe_huge_keep(void* block, size_t size) {
    void* evicted[BPE_IDLE_HUGE];
    size_t idle;
    int k, oldest, n_evicted = 0, kept = 0;
    if (size > bpe_idle_huge_bytes)
        return 0;
    pthread_mutex_lock(&bpe_idle_lock);
    for (;;) {
        int place = -1;
        idle = 0;
        oldest = -1;
        for (k = 0; k < BPE_IDLE_HUGE; k++) {
            if (bpe_idle_huge[k].block == NULL) {
                place = place < 0 ? k : place;
            } else {
                idle += bpe_idle_huge[k].size;
                if (oldest < 0 || bpe_idle_huge[k].kept < bpe_idle_huge[oldest].kept)
                    oldest = k;
            }
        }
        if (place >= 0 && size <= bpe_idle_huge_bytes - idle) {
            bpe_idle_huge[place].block = block;
            bpe_idle_huge[place].size = size;
            bpe_idle_huge[place].kept = ++bpe_huge_kept;
            kept = 1;
            break;
        }
        evicted[n_evicted++] = bpe_idle_huge[oldest].block;     /* some block is idle: size fits alone */
        bpe_idle_huge[oldest].block = NULL;
    }
    pthread_mutex_unlock(&bpe_idle_lock);
    for (k = 0; k < n_evicted; k++)
        free(evicted[k]);
    return kept;
}
/* Free every idle huge block; how many there were. */
static int bpe_huge_release(void) {
    void* idle[BPE_IDLE_HUGE];
    int k, n = 0;
    pthread_mutex_lock(&bpe_idle_lock);
    for (k = 0; k < BPE_IDLE_HUGE; k++) {
        idle[k] = bpe_idle_huge[k].block;
        bpe_idle_huge[k].block = NULL;
    }
    pthread_mutex_unlock(&bpe_idle_lock);
    for (k = 0; k < BPE_IDLE_HUGE; k++)
        if (idle[k] != NULL) {
            free(idle[k]);
            n++;
        }
    return n;
}
static int bpe_huge_idle(void) {
    int k, n = 0;
    pthread_mutex_lock(&bpe_idle_lock);
    for (k = 0; k < BPE_IDLE_HUGE; k++)
        n += bpe_idle_huge[k].block != NULL;
    pthread_mutex_unlock(&bpe_idle_lock);
    return n;
}
#else
static void* bpe_huge_take(size_t size) { (void)size; return NULL; }
static int bpe_huge_keep(void* block, size_t size) { (void)block; (void)size; return 0; }
static int bpe_huge_release(void) { return 0; }
static int bpe_huge_idle(void) { return 0; }
#endif

/* A block of at least 2 MiB on 2 MiB boundaries, advised to be backed by
   huge pages where Linux offers them (transparent huge pages in "madvise"
   mode, the common default, give them only to blocks that ask). The advice
   may be refused: the block then has ordinary pages. bpe_free_huge, with
   the size asked for, gives it back. */
static void* bpe_alloc_huge(size_t size) {
    void* block = size >= BPE_HUGE_PAGE ? bpe_huge_take(size) : NULL;
    if (block != NULL)
        return block;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= BPE_HUGE_PAGE) {
        if (posix_memalign(&block, BPE_HUGE_PAGE, size) != 0)
            return NULL;
        /* Whole huge pages only: a tail past the last one (a cache's slot
           of alignment slack) would otherwise take a 2 MiB page itself. */
        (void)madvise(block, size & ~(BPE_HUGE_PAGE - 1), MADV_HUGEPAGE);
        return block;
    }
#endif
    return malloc(size);
}
/* A zeroed block, advised as above. calloc maps a large block afresh from
   the OS (above glibc's mmap threshold, at most 32 MiB), whose pages are
   zero until first touched, and writes none of it: its pages are faulted
   in (and zeroed) by whichever thread first touches each, not all by the
   caller. A smaller block it may take from its heap and zero itself. */
static void* bpe_calloc_huge(size_t size) {
    void* block = calloc(1, size);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const size_t huge = BPE_HUGE_PAGE;
    if (block != NULL && size >= 2 * huge) {
        size_t first = ((size_t)block + huge - 1) & ~(huge - 1);
        size_t end = ((size_t)block + size) & ~(huge - 1);
        if (end > first)
            (void)madvise((void*)first, end - first, MADV_HUGEPAGE);
    }
#endif
    return block;
}

/* Give back a block of bpe_alloc_huge(size): kept idle, or freed. */
static void bpe_free_huge(void* block, size_t size) {
    if (block != NULL && !(size >= BPE_HUGE_PAGE && bpe_huge_keep(block, size)))
        free(block);
}

static void* bpe_blocks_handler(void);

#endif
