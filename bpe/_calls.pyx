# cython: binding=True, annotation_typing=False, embedsignature=False
"""``Tokenizer.encode`` and ``Tokenizer.encode_to_numpy`` as compiled functions,
placed in the class as its methods.

Their keyword-only options cost a Python method 35 ns a call whether given or
not (CPython fills each missing one from a dict, and does not specialise such
calls), about a tenth of encoding a short str. Compiled, the default call is
one C function that passes the text to the tokenizer's ``ShortCalls``; every
other call goes to the tokenizer's general path (``_encode_general``,
``_encode_to_numpy_general`` in ``bpe/tokenizer.py``), where the options are
read.
"""
from typing import AbstractSet, Collection, Literal, Union

import numpy as np


def encode(self, text: str, *, allowed_special: Union[Literal["all"], AbstractSet[str]] = "all",
           disallowed_special: Union[Literal["all"], Collection[str]] = (), offsets: bool = False,
           add_special_tokens: bool = False):
    """The token ids of ``text``; with ``offsets``, ``(ids, offsets)``: where each
    token starts in ``text`` (``decode_with_offsets``'s rule).

    Special tokens in ``allowed_special`` are recognised (longest first); a
    special token in ``disallowed_special`` found in the text raises
    ValueError; any other is encoded as ordinary text. With
    ``add_special_tokens``, a tokenizer read from a Hugging Face file adds
    what its post-processor adds (Llama 3's ``<|begin_of_text|>``, say).

    >>> import bpe
    >>> bpe.load("gpt2").encode("Hello world<|endoftext|>")
    [15496, 995, 50256]
    >>> bpe.load("gpt2").encode("naïve", offsets=True)
    ([2616, 38776], [0, 2])
    """
    if allowed_special == "all" and not disallowed_special and not offsets and not add_special_tokens:
        short = self._short or self._short_calls()   # a short text, the default policy: one C call
        if short is not None:
            ids = short(text)
            if ids is not None:
                return ids
    return self._encode_general(text, allowed_special, disallowed_special, offsets, add_special_tokens)


def encode_to_numpy(self, text: str, *, dtype=None, allowed_special="all", disallowed_special=(),
                    add_special_tokens: bool = False) -> np.ndarray:
    """The ids as a numpy array: uint16 when every id fits, else uint32 (or ``dtype``).

    >>> import bpe
    >>> bpe.load("gpt2").encode_to_numpy("Hello world")
    array([15496,   995], dtype=uint16)
    """
    if dtype is None and allowed_special == "all" and not disallowed_special and not add_special_tokens:
        short = self._short or self._short_calls()
        if short is not None:
            ids = short.to_array(text, self._narrow)
            if ids is not None:
                return ids
    return self._encode_to_numpy_general(text, dtype, allowed_special, disallowed_special, add_special_tokens)
