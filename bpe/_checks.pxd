# The checks every kernel entry makes on the buffers it is given, written once.
#
# A kernel follows offsets and ids without bounds checks (in a release build),
# so an entry that takes buffers checks each offset it will follow and each id
# it will index with, before it releases the GIL. O(n) compares, small beside
# the work that follows.
from bpe._types cimport offset_t, token_t


cdef inline int check_offsets(const offset_t[::1] offsets, Py_ssize_t n_items,
                              Py_ssize_t data_length, str what) except -1:
    """``offsets`` cut ``data_length`` items into ``n_items`` pieces (-1: as many as
    it has entries minus one): it starts at 0, never decreases, ends at the length."""
    cdef Py_ssize_t n = offsets.shape[0] - 1
    cdef Py_ssize_t i
    if n_items >= 0 and offsets.shape[0] != n_items + 1:
        raise ValueError(f"{what}: {offsets.shape[0]} offsets for {n_items} items; "
                         f"expected {n_items + 1}")
    if n < 0:
        if data_length != 0:
            raise ValueError(f"{what}: no offsets for {data_length} items of data")
        return 0
    if offsets[0] != 0:
        raise ValueError(f"{what}: offsets must start at 0, not {offsets[0]}")
    for i in range(n):
        if offsets[i + 1] < offsets[i]:
            raise ValueError(f"{what}: offset {i + 1} ({offsets[i + 1]}) is below offset {i} "
                             f"({offsets[i]})")
    if offsets[n] != data_length:
        raise ValueError(f"{what}: offsets end at {offsets[n]}, not at the data's length {data_length}")
    return 0


cdef inline int check_ids(const token_t[::1] ids, Py_ssize_t n_vocab, str what) except -1:
    """Every id in ``ids`` is in ``[0, n_vocab)``."""
    cdef Py_ssize_t i
    for i in range(ids.shape[0]):
        if ids[i] < 0 or ids[i] >= n_vocab:
            raise ValueError(f"{what}: id {ids[i]} at {i} is not in [0, {n_vocab})")
    return 0
