# Sessions: the scratch buffers and pre-token caches of one encoding call at a
# time (``Session``), and the caches several sessions share (``SharedCache``).
#
# A session is kept from call to call (``bpe.encoder.Encoder`` pools them), so
# its caches stay warm; it is never used by two calls at once, so one
# ``EncodeKernel`` serves threads that encode at the same time. What the
# caches hold, and how they are looked up and filled, is
# ``bpe/_caches.pxd``'s; their tables are ``bpe/_shortcache.pxd``,
# ``bpe/_bytestable.pxd`` and ``bpe/_sharedgeneral.pxd``.
from libc.stdint cimport int64_t, uint8_t, uint64_t

from bpe._bytestable cimport BytesTable
from bpe._memory cimport read_count, reserve_fresh
from bpe._mergerule cimport Ids, LongMerge
from bpe._sharedgeneral cimport SharedGeneral
from bpe._shortcache cimport SHARED_COUNT_EVERY, SharedCount, ShortCache

cdef enum:
    SCAN_BATCH = 128                 # pre-tokens the kernel scans before it looks them up; ``missed`` counts per batch
    SHORT_CACHE_SLOTS = 1 << 18      # a session's short cache: 8 MiB to start with; half as many entries, then it grows ...
    SHORT_CACHE_MAX_SLOTS = 1 << 20  # ... to 32 MiB; then half as many entries, then afresh
    SHARED_GENERAL_SLOTS = 1 << 19   # a shared general cache's: 4 MiB, for as many entries as a session's own ...
    SHARED_GENERAL_BYTES = 1 << 25   # ... and 32 MiB of them (both touched only as filled)


cdef struct Bytes:
    uint8_t* data
    int64_t capacity


cdef inline int bytes_reserve(Bytes* b, int64_t n) noexcept nogil:
    """Room for ``n`` bytes; what was there is not kept."""
    return reserve_fresh(<void**>&b.data, &b.capacity, n, 1, 4096)


cdef struct Scratch:
    Ids out              # the ids of the call
    Bytes text           # the call's non-ASCII str texts, as UTF-8
    ShortCache short     # pre-tokens of up to SHORT_KEY_BYTES bytes -> their ids (see bpe/_shortcache.pxd)
    ShortCache own_short # its own table while ``short`` is a shared one (``Session.share``); slots NULL otherwise
    Ids cached           # ids of the other cached pre-tokens, sliced by the cache's values
    Ids held             # a cold batch's misses' ids, until they go in among its hits' (``_encode_cold``);
                         # a text's ids expanded (``ShortCalls``), between calls
    BytesTable cache     # their bytes -> (offset in cached) << 16 | count
    uint64_t cache_era   # how often ``cache`` started afresh: older short-cache markers point at nothing
    LongMerge long_merge # work arrays for merging a long pre-token
    Py_ssize_t missed    # pre-tokens of the last batch in neither session cache: a cold session's sign
    SharedGeneral* general_shared  # a general cache shared behind ``cache`` (``Session.share``), else NULL
    int64_t short_slots      # the slots its own short cache starts with ...
    int64_t short_max_slots  # ... and may grow to


cdef class SharedCache:
    cdef ShortCache c        # each session that shares it copies this (``Session.share``)
    cdef SharedCount count   # its entries and sharers, as the sessions count them
    cdef SharedGeneral general


cdef class Session:
    cdef Scratch scratch
    cdef SharedCache shared    # the caches it shares, kept alive meanwhile; else None
    cdef Scratch* ready(self) except NULL


cdef inline bint shared_nearly_full(const ShortCache* c, int64_t inserts) noexcept nogil:
    """Whether a shared short cache may reach its budget before the sessions that
    share it have each made ``inserts`` more entries and added to its count
    those they have not yet."""
    return (read_count(&c.shared.entries)
            + (inserts + SHARED_COUNT_EVERY) * read_count(&c.shared.sharers) >= c.max_entries)


cdef void scratch_leave_shared(Scratch* s) noexcept nogil
cdef void release_output(Scratch* s) noexcept nogil
