import numpy as np
import numpy.typing as npt

DEBUG_BUILD: bool

class MergeState:
    n_pairs: int
    max_merges: int
    n_merges: int
    exhausted: bool
    def __init__(self, data: npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64],
                 counts: npt.NDArray[np.int64], max_merges: int) -> None: ...
    def run(self, max_new_merges: int, min_frequency: int = 1) -> int: ...
    def merges(self) -> npt.NDArray[np.int32]: ...
    def count_of(self, left: int, right: int) -> int: ...
