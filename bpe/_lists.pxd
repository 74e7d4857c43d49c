from libc.stdint cimport int64_t, uint8_t

from bpe._types cimport offset_t, out_id_t


cdef class PrebuiltInts:
    cdef readonly tuple objects
    cdef readonly bint immortal
    cdef readonly frozenset far


cdef list ids_list(const out_id_t* ids, Py_ssize_t n, PrebuiltInts ints)
cdef list lists_of_ids(const out_id_t* ids, const offset_t* offsets, Py_ssize_t n_lists, PrebuiltInts ints)
cdef bint ids_below(const out_id_t* ids, Py_ssize_t n, out_id_t limit) noexcept nogil


cdef struct Expansion:
    out_id_t first               # the ids from here on stand for others
    const out_id_t* rows         # row k (``width`` ids): what id first + k stands for
    const uint8_t* lengths       # how many of row k's ids it stands for
    Py_ssize_t n_rows
    Py_ssize_t width
    int64_t fused                # an id whose runs in a text are kept once, or -1


cdef class Expanding:
    cdef Expansion e
    cdef object rows_array       # the arrays ``e`` points into
    cdef object lengths_array
    cdef Py_ssize_t count_checked(self, const out_id_t* ids, Py_ssize_t n) except -1


cdef Py_ssize_t expand_run(const Expansion* e, const out_id_t* ids, Py_ssize_t n, out_id_t* out) noexcept nogil
