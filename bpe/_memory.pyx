"""The kernels' allocator: malloc and friends, with a test hook that fails one allocation.

``fail_allocation(n)`` makes the n-th allocation from now (in any kernel
module: they all allocate through here) return NULL, once. The tests use it to
run training and encoding with a failure injected at many points and check
that each surfaces as a MemoryError, never a crash, and that later calls give
the right results. Off (``n = 0``), the check costs one compare per allocation.

Also the pages memory asks for: huge ones for tables probed at random
(``mem_alloc_huge``), ordinary ones for id arrays handed to callers, whose
blocks are kept for the next call (``empty_written_once``).
"""
from libc.stdint cimport int64_t
from libc.stdlib cimport calloc, free, malloc, realloc

import numpy as np

cdef int64_t fail_countdown = 0


cdef inline bint injected_failure() noexcept nogil:
    global fail_countdown
    if fail_countdown <= 0:
        return False
    fail_countdown -= 1
    return fail_countdown == 0


cdef bint allocation_fails() noexcept nogil:
    """Whether an allocation made with another allocator (Python's, which a
    list's item array must come from) is to fail: it counts as one of ours."""
    return injected_failure()


cdef void* mem_alloc(size_t size) noexcept nogil:
    if injected_failure():
        return NULL
    return malloc(size)


cdef extern from *:
    """
    #include <stdlib.h>
    #if defined(__linux__)
    #include <sys/mman.h>
    #endif
    /* A block of at least 2 MiB on 2 MiB boundaries, advised to be backed by
       huge pages where Linux offers them (transparent huge pages in "madvise"
       mode, the common default, give them only to blocks that ask). The advice
       may be refused: the block then has ordinary pages. free() releases it. */
    static void* bpe_alloc_huge(size_t size) {
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        const size_t huge = (size_t)2 << 20;
        void* block = NULL;
        if (size >= huge) {
            if (posix_memalign(&block, huge, size) != 0)
                return NULL;
            /* Whole huge pages only: a tail past the last one (a cache's slot
               of alignment slack) would otherwise take a 2 MiB page itself. */
            (void)madvise(block, size & ~(huge - 1), MADV_HUGEPAGE);
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
        const size_t huge = (size_t)2 << 20;
        if (block != NULL && size >= 2 * huge) {
            size_t first = ((size_t)block + huge - 1) & ~(huge - 1);
            size_t end = ((size_t)block + size) & ~(huge - 1);
            if (end > first)
                (void)madvise((void*)first, end - first, MADV_HUGEPAGE);
        }
    #endif
        return block;
    }
    """
    void* bpe_alloc_huge(size_t size) nogil
    void* bpe_calloc_huge(size_t size) nogil

cdef enum:
    # The smallest id array made in a block of its own (``empty_written_once``),
    # numpy's own threshold for advising huge pages; smaller ones keep numpy's
    # allocator (a block is a mapping of its own, a page at least).
    ID_BLOCKS_FROM = 4 << 20


cdef extern from *:
    """
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

    static void* bpe_blocks_handler(void);
    """
    bint ID_BLOCKS "BPE_ID_BLOCKS"
    size_t bpe_idle_largest
    int (*bpe_block_fails)() noexcept nogil
    void bpe_blocks_init()
    int bpe_blocks_release() nogil
    int bpe_blocks_idle() nogil


cdef extern from *:
    """
    #define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
    #define NPY_TARGET_VERSION NPY_1_23_API_VERSION
    #include <numpy/arrayobject.h>
    #if BPE_ID_BLOCKS
    static PyDataMem_Handler bpe_id_blocks_handler = {
        "bpe_id_blocks", 1,
        {NULL, bpe_blocks_malloc, bpe_blocks_calloc, bpe_blocks_realloc, bpe_blocks_free}
    };
    static void* bpe_blocks_handler(void) { return &bpe_id_blocks_handler; }
    #else
    static void* bpe_blocks_handler(void) { return NULL; }
    #endif
    """
    int _import_array() except -1
    object PyDataMem_SetHandler(object handler)
    void* bpe_blocks_handler()
    object PyArray_SimpleNew(int nd, Py_ssize_t* dims, int typenum)
    void* PyArray_DATA(object array)
    enum:
        NPY_UINT16
        NPY_UINT32


cdef extern from "Python.h":
    object PyCapsule_New(void* pointer, const char* name, void* destructor)


_import_array()


cdef int _block_fails() noexcept nogil:
    return injected_failure()


bpe_block_fails = _block_fails
bpe_blocks_init()
# numpy's name for an allocator handed to PyDataMem_SetHandler.
cdef object _id_blocks = PyCapsule_New(bpe_blocks_handler(), "mem_handler", NULL) if ID_BLOCKS else None


cpdef object empty_written_once(Py_ssize_t n, object dtype):
    """``np.empty(n, dtype)`` for an array to be written once, front to back: the
    id arrays the kernels hand to callers. Every one is made here.

    From 4 MiB up, its memory comes from a block of this module's, which numpy
    gives back here when the array is freed (the allocator it asks for while
    the array is made, ``PyDataMem_SetHandler``, stays the array's): the next
    call writes into the same pages, where a fresh mapping faulted in every
    page afresh (3 600 faults for 10 MB of code, a quarter of a warm pass;
    with a buffer written before, 379 -> 515 MB/s median, gpt2). Everything
    else about the array is numpy's: it owns its memory, and resizing and
    freeing it go through the same allocator. Idle blocks are few and bounded
    (``BPE_IDLE_BLOCKS``, ``bpe_idle_largest``); ``release_id_blocks`` unmaps
    them. The blocks are on ordinary pages (``bpe_block_map`` says why).
    Elsewhere than Linux and macOS, numpy's own allocator.
    """
    cdef object previous
    if _id_blocks is None or n * (<Py_ssize_t>np.dtype(dtype).itemsize) < ID_BLOCKS_FROM:
        return np.empty(n, dtype=dtype)
    previous = PyDataMem_SetHandler(_id_blocks)
    try:
        return np.empty(n, dtype=dtype)
    finally:
        PyDataMem_SetHandler(previous)


cdef object short_ids(Py_ssize_t n, bint narrow, void** data):
    """An uninitialised uint16 (``narrow``) or uint32 array of ``n`` ids, for
    a short call's few, and where its ids go (``data``): made by numpy's C API
    (``np.empty`` through Python, and a memoryview of it, cost 0.25 us, more
    than encoding a short string)."""
    cdef Py_ssize_t dims[1]
    dims[0] = n
    array = PyArray_SimpleNew(1, dims, NPY_UINT16 if narrow else NPY_UINT32)
    data[0] = PyArray_DATA(array)
    return array


def release_id_blocks():
    """Unmap the idle blocks id arrays were made from (see ``empty_written_once``);
    how many there were."""
    cdef int released
    with nogil:
        released = bpe_blocks_release()
    return released


def idle_id_blocks():
    """How many blocks for id arrays are idle now."""
    return bpe_blocks_idle()


def largest_idle_id_block(size=None):
    """The largest block (bytes mapped) kept idle; given ``size``, set it first
    (tests make it small) and return the one before."""
    global bpe_idle_largest
    before = bpe_idle_largest
    if size is not None:
        bpe_idle_largest = size
    return before


cdef extern from *:
    """
    #if defined(__GLIBC__)
    #include <malloc.h>
    static void bpe_release_free_memory(void) { (void)malloc_trim(0); }
    #else
    static void bpe_release_free_memory(void) {}
    #endif
    """
    void bpe_release_free_memory() nogil


def release_free_memory():
    """Give the OS back what was freed but kept by the allocator (glibc keeps
    freed blocks in its arenas, the worker threads' too; elsewhere a no-op).
    Training calls it between counting and the merge loop, so the merge loop's
    memory is not stacked on what counting no longer uses."""
    with nogil:
        bpe_release_free_memory()


cdef void* mem_alloc_huge(size_t size) noexcept nogil:
    if injected_failure():
        return NULL
    return bpe_alloc_huge(size)


cdef void* mem_calloc_huge(size_t size) noexcept nogil:
    if injected_failure():
        return NULL
    return bpe_calloc_huge(size)


cdef void* mem_calloc(size_t count, size_t size) noexcept nogil:
    if injected_failure():
        return NULL
    return calloc(count, size)


cdef void* mem_resize(void* block, size_t size) noexcept nogil:
    if injected_failure():
        return NULL
    return realloc(block, size)


cdef void mem_free(void* block) noexcept nogil:
    free(block)


def fail_allocation(int64_t n):
    """Make the ``n``-th kernel allocation from now fail, once (0: none). For tests."""
    global fail_countdown
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    fail_countdown = n


def allocation_failure_pending():
    """Whether an armed failure has not happened yet (the run made fewer allocations)."""
    return fail_countdown > 0
