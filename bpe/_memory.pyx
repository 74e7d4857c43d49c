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


cdef extern from "csrc/memory.h":
    void* bpe_alloc_huge(size_t size) nogil
    void* bpe_calloc_huge(size_t size) nogil
    void bpe_free_huge(void* block, size_t size) nogil
    int bpe_huge_release() nogil
    int bpe_huge_idle() nogil

cdef enum:
    # The smallest id array made in a block of its own (``empty_written_once``),
    # numpy's own threshold for advising huge pages; smaller ones keep numpy's
    # allocator (a block is a mapping of its own, a page at least).
    ID_BLOCKS_FROM = 4 << 20


cdef extern from "csrc/memory.h":
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
    static void bpe_release_free_memory(void) { (void)bpe_huge_release(); (void)malloc_trim(0); }
    #else
    static void bpe_release_free_memory(void) { (void)bpe_huge_release(); }
    #endif
    """
    void bpe_release_free_memory() nogil


def release_free_memory():
    """Give the OS back what was freed but kept: the idle huge blocks
    (``mem_free_huge``), and what glibc keeps of freed blocks in its arenas,
    the worker threads' too.
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


cdef void mem_free_huge(void* block, size_t size) noexcept nogil:
    bpe_free_huge(block, size)


def idle_huge_blocks():
    """How many blocks of huge pages (freed caches' tables) are kept idle now."""
    return bpe_huge_idle()


def give_back_huge_blocks(sizes):
    """Take a block of huge pages of each of ``sizes`` (bytes), then give them
    all back (``mem_free_huge``), for tests of what is kept; their addresses."""
    cdef list blocks = []
    cdef void* block
    for size in sizes:
        block = mem_alloc_huge(size)
        if block == NULL:
            for address, taken in blocks:
                mem_free_huge(<void*><size_t>address, taken)
            raise MemoryError()
        blocks.append((<size_t>block, size))
    for address, taken in blocks:
        mem_free_huge(<void*><size_t>address, taken)
    return [address for address, _ in blocks]


def fail_allocation(int64_t n):
    """Make the ``n``-th kernel allocation from now fail, once (0: none). For tests."""
    global fail_countdown
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    fail_countdown = n


def allocation_failure_pending():
    """Whether an armed failure has not happened yet (the run made fewer allocations)."""
    return fail_countdown > 0
