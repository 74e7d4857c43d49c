from typing import AbstractSet, Collection, Literal, Union

import numpy as np

def encode(self, text: str, *, allowed_special: Union[Literal["all"], AbstractSet[str]] = "all",
           disallowed_special: Union[Literal["all"], Collection[str]] = (), offsets: bool = False,
           add_special_tokens: bool = False): ...
def encode_to_numpy(self, text: str, *, dtype=None, allowed_special="all", disallowed_special=(),
                    add_special_tokens: bool = False) -> np.ndarray: ...
