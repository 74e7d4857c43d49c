# Every allocation of the kernels, and the one way buffers grow.
#
# Why one module: a growth routine that updates its capacity before realloc has
# succeeded leaves a buffer that claims room it does not have, and the next
# write after a failed growth goes past its end. Here the capacity is written
# only after success, and a failed realloc keeps the old block (freed later by
# its owner as usual), so after a MemoryError every structure is still whole.
#
# All allocations go through mem_alloc/mem_calloc/mem_resize (bpe/_memory.pyx),
# one shared implementation, so a test can make the N-th allocation of any
# kernel fail (``fail_allocation``) and check that the failure surfaces as a
# MemoryError and leaves nothing broken.
from libc.stdint cimport int64_t, uint64_t

cdef void* mem_alloc(size_t size) noexcept nogil
cdef void* mem_calloc(size_t count, size_t size) noexcept nogil
# For tables of megabytes probed at random: on huge pages where the OS gives
# them, so a probe does not also miss the TLB. Freed with mem_free_huge, with
# the size asked for: a few are kept for the next table of that size, their
# pages backed (bpe/csrc/memory.h says why).
cdef void* mem_alloc_huge(size_t size) noexcept nogil
cdef void mem_free_huge(void* block, size_t size) noexcept nogil
# The same, zeroed, its pages faulted in by the threads that first touch them.
cdef void* mem_calloc_huge(size_t size) noexcept nogil
cdef void* mem_resize(void* block, size_t size) noexcept nogil
# An id array handed to a caller, its memory kept for the next when freed (see bpe/_memory.pyx).
cpdef object empty_written_once(Py_ssize_t n, object dtype)
# A short call's ids: uint16 with ``narrow``, else uint32 (numpy's allocator).
cdef object short_ids(Py_ssize_t n, bint narrow, void** data)
cdef void mem_free(void* block) noexcept nogil
cdef bint allocation_fails() noexcept nogil


cdef extern from "csrc/atomics.h":
    void prefetch "BPE_PREFETCH" (const void* address) noexcept nogil


# The atomics of tables that several threads fill and read at once (a shared
# short cache, a shared general cache; see bpe/_shortcache.pxd and
# bpe/_sharedgeneral.pxd): a word stored last, with release, after what it
# vouches for, and loaded with acquire, before it (on x86-64 both are plain
# moves: they only keep the compiler from reordering); a compare-and-swap;
# counts, added and read without ordering. Where the compiler offers no
# atomics (``CAN_SHARE`` 0), plain accesses, and no table is shared.
cdef extern from "csrc/atomics.h":
    bint CAN_SHARE "BPE_CAN_SHARE"
    uint64_t load_acquire "bpe_load_acquire" (const uint64_t* word) noexcept nogil
    void store_release "bpe_store_release" (uint64_t* word, uint64_t value) noexcept nogil
    bint swap_if "bpe_swap_if" (uint64_t* word, uint64_t expected, uint64_t value, uint64_t* seen) noexcept nogil
    int64_t add_count "bpe_add_count" (int64_t* count, int64_t n) noexcept nogil     # the count after
    int64_t read_count "bpe_read_count" (const int64_t* count) noexcept nogil


cdef inline int64_t next_capacity(int64_t capacity, int64_t smallest, int64_t needed) noexcept nogil:
    """The capacity, doubling from ``capacity`` (or ``smallest``), that holds ``needed``:
    buffers grown this way are copied O(1) times per element overall."""
    if capacity < smallest:
        capacity = smallest
    while capacity < needed:
        capacity *= 2
    return capacity


cdef inline int slot_shift(int64_t n_slots) noexcept nogil:
    """64 - log2(n_slots) (a power of two): the shift that leaves a 64-bit
    hash's high bits, which pick a slot of the tables that mix by multiplying."""
    cdef int shift = 64
    while (<int64_t>1 << (64 - shift)) < n_slots:
        shift -= 1
    return shift


cdef inline int resize_array(void** buffer, int64_t n_items, size_t item_size) noexcept nogil:
    """Make ``*buffer`` hold ``n_items`` items, keeping its contents. -1 when out of
    memory (or the size overflows), and then ``*buffer`` is unchanged."""
    cdef void* resized
    if n_items < 1:
        n_items = 1          # realloc(p, 0) may free p
    if <size_t>n_items > (<size_t>-1) // 2 // item_size:
        return -1
    resized = mem_resize(buffer[0], <size_t>n_items * item_size)
    if resized == NULL:
        return -1
    buffer[0] = resized
    return 0


cdef inline int grow(void** buffer, int64_t* capacity, int64_t needed, size_t item_size,
                     int64_t smallest) noexcept nogil:
    """Make ``*buffer`` (``*capacity`` items) hold at least ``needed``, doubling and
    keeping its contents. -1 when out of memory; ``*capacity`` changes only on success."""
    cdef int64_t new_capacity
    if needed <= capacity[0]:
        return 0
    new_capacity = next_capacity(capacity[0], smallest, needed)
    if resize_array(buffer, new_capacity, item_size) < 0:
        return -1
    capacity[0] = new_capacity
    return 0


cdef inline int reserve_fresh(void** buffer, int64_t* capacity, int64_t needed, size_t item_size,
                              int64_t smallest) noexcept nogil:
    """As ``grow``, for scratch space whose contents need not be kept (no copy). On
    failure the old block is kept with its capacity."""
    cdef int64_t new_capacity
    cdef void* fresh
    if needed <= capacity[0]:
        return 0
    new_capacity = next_capacity(capacity[0], smallest, needed)
    if <size_t>new_capacity > (<size_t>-1) // 2 // item_size:
        return -1
    fresh = mem_alloc(<size_t>new_capacity * item_size)
    if fresh == NULL:
        return -1
    mem_free(buffer[0])
    buffer[0] = fresh
    capacity[0] = new_capacity
    return 0
