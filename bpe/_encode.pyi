from typing import Optional, Sequence

import numpy as np
import numpy.typing as npt

from bpe._lists import PrebuiltInts

def short_cache_sizes(first: Optional[int] = None, largest: Optional[int] = None) -> tuple[int, int]: ...

class Session:
    @property
    def cached_pieces(self) -> int: ...
    @property
    def short_cache_slots(self) -> int: ...

class EncodeKernel:
    def __init__(self, byte_ids: npt.NDArray[np.int32], token_data: npt.NDArray[np.uint8],
                 token_offsets: npt.NDArray[np.int64], token_ids: npt.NDArray[np.int32],
                 ranked_ids: npt.NDArray[np.int32]) -> None: ...
    def encode_texts(self, session: Session, data: npt.NDArray[np.uint8], text_offsets: npt.NDArray[np.int64],
                     pattern: int, needles: Sequence[bytes], needle_ids: npt.NDArray[np.uint32],
                     out: Optional[npt.NDArray[np.uint32]] = None
                     ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]: ...
    def encode_strs(self, session: Session, texts: Sequence[str], pattern: int, needles: Sequence[bytes],
                    needle_ids: npt.NDArray[np.uint32], out: Optional[npt.NDArray[np.uint32]] = None
                    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]: ...
    def encode_str_to_list(self, session: Session, text: str, pattern: int, needles: tuple[bytes, ...],
                           needle_ids: npt.NDArray[np.uint32], ints: PrebuiltInts) -> list[int]: ...
    def encode_pieces(self, session: Session, pieces: Sequence[bytes]) -> npt.NDArray[np.uint32]: ...
    def split_ranked(self, data: npt.NDArray[np.uint8], offsets: npt.NDArray[np.int64]
                     ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
