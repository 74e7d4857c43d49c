import numpy as np

from bpe._train import _c_type_sizes


def test_c_types_match_their_numpy_dtypes():
    sizes = _c_type_sizes()
    assert sizes["token_t"] == np.dtype(np.int32).itemsize
    assert sizes["count_t"] == np.dtype(np.int64).itemsize
    assert sizes["pair_t"] == np.dtype(np.uint64).itemsize
