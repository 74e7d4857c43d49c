# C types shared by the kernels, each matched to its numpy dtype (tests/test_types.py
# passes arrays of each dtype through bpe/_types.pyx, the scikit-learn pattern).
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t

ctypedef int32_t token_t    # a token id inside the kernels   <-> numpy.int32
ctypedef uint32_t out_id_t  # a token id handed to callers    <-> numpy.uint32
ctypedef int64_t count_t    # an occurrence count             <-> numpy.int64
ctypedef int64_t offset_t   # a byte or item offset, a length <-> numpy.int64
ctypedef uint64_t pair_t    # two token ids packed            <-> numpy.uint64


cdef inline pair_t pack_pair(token_t left, token_t right) noexcept nogil:
    return (<pair_t><uint32_t>left << 32) | <pair_t><uint32_t>right


cdef inline token_t pair_left(pair_t pair) noexcept nogil:
    return <token_t>(pair >> 32)


cdef inline token_t pair_right(pair_t pair) noexcept nogil:
    return <token_t>(pair & 0xFFFFFFFFu)
