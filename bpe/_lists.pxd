from bpe._types cimport out_id_t


cdef class PrebuiltInts:
    cdef readonly tuple objects
    cdef readonly bint immortal


cdef list ids_list(const out_id_t* ids, Py_ssize_t n, PrebuiltInts ints)
