from bpe._types cimport offset_t, out_id_t


cdef class PrebuiltInts:
    cdef readonly tuple objects
    cdef readonly bint immortal
    cdef readonly frozenset far


cdef list ids_list(const out_id_t* ids, Py_ssize_t n, PrebuiltInts ints)
cdef list lists_of_ids(const out_id_t* ids, const offset_t* offsets, Py_ssize_t n_lists, PrebuiltInts ints)
cdef bint ids_below(const out_id_t* ids, Py_ssize_t n, out_id_t limit) noexcept nogil
