from bpe._bytestable cimport BytesTable

cdef enum:
    PATTERN_GPT2 = 0
    PATTERN_CL100K = 1
    PATTERN_O200K = 2

# The end of the pre-token that starts at byte ``i`` of valid UTF-8 ``s[:n]``.
cdef Py_ssize_t next_pretoken(int pattern, const unsigned char* s, Py_ssize_t i,
                              Py_ssize_t n) noexcept nogil

cdef int check_pattern(int pattern) except -1

cdef class Interner:
    cdef BytesTable table
