"""``tiktoken.model``: which encoding a model uses (tiktoken 0.14's table), for
``encoding_for_model``. Every encoding it names ships with bpe."""
from __future__ import annotations

from bpe.pretrained import MODEL_PREFIX_TO_ENCODING, MODEL_TO_ENCODING, encoding_name_for_model
from bpe.tiktoken.core import Encoding
from bpe.tiktoken.registry import get_encoding

__all__ = ["MODEL_PREFIX_TO_ENCODING", "MODEL_TO_ENCODING", "encoding_for_model", "encoding_name_for_model"]


def encoding_for_model(model_name: str) -> Encoding:
    """The encoding a model uses (see ``encoding_name_for_model``)."""
    return get_encoding(encoding_name_for_model(model_name))
