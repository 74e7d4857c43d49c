"""The kernels' allocator: malloc and friends, with a test hook that fails one allocation.

``fail_allocation(n)`` makes the n-th allocation from now (in any kernel
module: they all allocate through here) return NULL, once. The tests use it to
run training and encoding with a failure injected at many points and check
that each surfaces as a MemoryError, never a crash, and that later calls give
the right results. Off (``n = 0``), the check costs one compare per allocation.

Also the pages memory asks for: huge ones for tables probed at random
(``mem_alloc_huge``), ordinary ones for id arrays handed to callers
(``empty_written_once``).
"""
from libc.stdint cimport int64_t, uintptr_t
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
    """
    void* bpe_alloc_huge(size_t size) nogil

cdef extern from *:
    """
    #include <stdint.h>
    #if defined(__linux__)
    #include <sys/mman.h>
    #include <unistd.h>
    #endif
    /* Advise ordinary pages for the whole pages inside [block, block + size),
       for output written once, front to back. numpy advises huge pages for
       every array of 4 MiB or more. On a VM that hands freed memory back to
       its host (virtio-balloon free page reporting, as on the machine these
       kernels were measured on), a huge page taken from memory freed a few
       seconds before waits for the host to back all 2 MiB again: 15-18 ms a
       page, in system time, which made about half the warm 10 MB passes of a
       benchmark 5x slower. Ordinary pages fault about as fast otherwise (a
       warm 10 MB pass: 3 600 of them in the same time as 8 huge ones) and come
       from memory the guest still holds. A hint: refused, nothing changes. */
    static void bpe_advise_small_pages(void* block, size_t size) {
    #if defined(__linux__) && defined(MADV_NOHUGEPAGE)
        static uintptr_t page = 0;
        uintptr_t start, end;
        if (page == 0) {
            long got = sysconf(_SC_PAGESIZE);
            page = got > 0 ? (uintptr_t)got : 4096;
        }
        start = ((uintptr_t)block + page - 1) & ~(page - 1);
        end = ((uintptr_t)block + size) & ~(page - 1);
        if (end > start)
            (void)madvise((void*)start, end - start, MADV_NOHUGEPAGE);
    #else
        (void)block;
        (void)size;
    #endif
    }
    """
    void bpe_advise_small_pages(void* block, size_t size) nogil


cdef enum:
    # numpy's own threshold for advising huge pages. A smaller array, often
    # carved from the heap, keeps the advice its mapping has: advice on part
    # of a mapping splits it in two.
    SMALL_PAGES_FROM = 4 << 20


cpdef object empty_written_once(Py_ssize_t n, object dtype):
    """``np.empty(n, dtype)`` for an array to be written once, front to back (ids
    returned to a caller): from 4 MiB up, on ordinary pages (``bpe_advise_small_pages``
    says why). Every id array the kernels hand out is made here."""
    out = np.empty(n, dtype=dtype)
    if out.nbytes >= SMALL_PAGES_FROM:       # ctypes costs ~1.5 us: only where it pays
        bpe_advise_small_pages(<void*><uintptr_t>out.ctypes.data, <size_t>out.nbytes)
    return out


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
