from typing import Optional

import numpy as np
import numpy.typing as npt

def parse_rank_lines(raw: bytes) -> Optional[tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64],
                                                    npt.NDArray[np.int64]]]: ...
