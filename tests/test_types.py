import numpy as np
import pytest

from bpe import _types

ALL_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
              np.float32, np.float64]


@pytest.mark.parametrize("name", sorted(_types.DTYPES))
def test_c_types_match_their_numpy_dtypes(name):
    dtype = np.dtype(_types.DTYPES[name])
    assert _types.sizes()[name] == dtype.itemsize
    take = getattr(_types, f"take_{name}")
    assert take(np.zeros(3, dtype=dtype)) == 3
    for other in ALL_DTYPES:
        if np.dtype(other) != dtype:
            with pytest.raises(ValueError, match="dtype mismatch"):
                take(np.zeros(3, dtype=other))
