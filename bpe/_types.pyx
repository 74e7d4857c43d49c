"""The kernels' C types checked against numpy dtypes: each function below takes a
typed memoryview, so passing an array of the matching dtype works and any other
raises ("Buffer dtype mismatch"). ``tests/test_types.py`` calls them."""
import numpy as np

from bpe._types cimport count_t, offset_t, out_id_t, pair_t, token_t

DTYPES = {"token_t": np.int32, "out_id_t": np.uint32, "count_t": np.int64,
          "offset_t": np.int64, "pair_t": np.uint64}


def sizes():
    """The byte size of each C type."""
    return {"token_t": sizeof(token_t), "out_id_t": sizeof(out_id_t), "count_t": sizeof(count_t),
            "offset_t": sizeof(offset_t), "pair_t": sizeof(pair_t)}


def take_token_t(token_t[::1] a):
    return a.shape[0]


def take_out_id_t(out_id_t[::1] a):
    return a.shape[0]


def take_count_t(count_t[::1] a):
    return a.shape[0]


def take_offset_t(offset_t[::1] a):
    return a.shape[0]


def take_pair_t(pair_t[::1] a):
    return a.shape[0]
