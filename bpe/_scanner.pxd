from libc.stdint cimport uint8_t, uint64_t

from bpe._bytestable cimport BytesTable


cdef extern from "_classify.h":
    ctypedef struct ClassMasks:
        uint64_t upper
        uint64_t lower
        uint64_t digit
    ctypedef void (*classify_fn)(const uint8_t* p, ClassMasks* out) noexcept nogil


cdef enum:
    PATTERN_GPT2 = 0
    PATTERN_CL100K = 1
    PATTERN_O200K = 2


# A scan of valid UTF-8 ``s[:n]`` with a built-in pattern. The masks classify
# the 64 bytes from ``block_start`` (see bpe/_classify.h); ``classify`` is NULL
# when the byte-by-byte scanner alone runs.
cdef struct Scanner:
    const uint8_t* s
    Py_ssize_t n
    int pattern
    Py_ssize_t block_start
    ClassMasks masks
    classify_fn classify


cdef void scanner_init(Scanner* sc, int pattern, const uint8_t* s, Py_ssize_t n) noexcept nogil

# The end of the pre-token that starts at byte ``i``.
cdef Py_ssize_t scanner_next(Scanner* sc, Py_ssize_t i) noexcept nogil

cdef int check_pattern(int pattern) except -1

cdef class Interner:
    cdef BytesTable table
