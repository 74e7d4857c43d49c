"""The kernels' allocator: malloc and friends, with a test hook that fails one allocation.

``fail_allocation(n)`` makes the n-th allocation from now (in any kernel
module: they all allocate through here) return NULL, once. The tests use it to
run training and encoding with a failure injected at many points and check
that each surfaces as a MemoryError, never a crash, and that later calls give
the right results. Off (``n = 0``), the check costs one compare per allocation.
"""
from libc.stdint cimport int64_t
from libc.stdlib cimport calloc, free, malloc, realloc

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
    """
    void* bpe_alloc_huge(size_t size) nogil

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
