from typing import Iterable

import numpy as np
import numpy.typing as npt

class PrebuiltInts:
    objects: tuple[int, ...]
    immortal: bool
    far: frozenset[int]
    def __init__(self, n: int, immortal: bool = True, far: Iterable[int] = ()) -> None: ...
    def __len__(self) -> int: ...

def ids_to_list(ids: npt.NDArray[np.uint32], ints: PrebuiltInts) -> list[int]: ...
def ids_to_lists(ids: npt.NDArray[np.uint32], offsets: npt.NDArray[np.int64],
                 ints: PrebuiltInts) -> list[list[int]]: ...


def ids_with_separators(ids: npt.NDArray[np.uint32], offsets: npt.NDArray[np.int64], separator: int,
                        out: npt.NDArray[np.uint16] | npt.NDArray[np.uint32],
                        ends: npt.NDArray[np.uint8] | None = None) -> None: ...
class Expanding:
    first: int
    def __init__(self, first: int, rows: npt.NDArray[np.uint32], lengths: npt.NDArray[np.uint8],
                 fused: int = -1) -> None: ...

def expand_ids(ids: npt.NDArray[np.uint32], offsets: npt.NDArray[np.int64],
               expanding: Expanding) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]: ...
def all_below(ids: npt.NDArray[np.uint32], limit: int) -> bool: ...
