import numpy as np
import numpy.typing as npt
from typing import Iterable

class DecodeTable:
    def __init__(self, data: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int32],
                 far: dict[int, bytes]) -> None: ...
    def decode(self, ids: Iterable[int] | npt.NDArray[np.integer]) -> bytes: ...
