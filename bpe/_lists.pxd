from bpe._types cimport out_id_t

cdef list ids_list(const out_id_t* ids, Py_ssize_t n, tuple id_objects)
