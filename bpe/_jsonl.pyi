from typing import Optional

import numpy as np
import numpy.typing as npt

def text_fields(data: bytes, keys: tuple[bytes, ...], text: Optional[npt.NDArray[np.uint8]] = None,
                offsets: Optional[npt.NDArray[np.int64]] = None) -> Optional[tuple[npt.NDArray[np.uint8],
                                                                                  npt.NDArray[np.int64]]]: ...
