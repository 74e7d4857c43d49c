"""bpe: fast, exact byte-level BPE tokenizers — training and encoding whole corpora.

Code written for tiktoken runs with ``import bpe as tiktoken`` (``get_encoding``,
``encoding_for_model``, ``Encoding``), or, for libraries that import tiktoken
themselves, after ``bpe.install_as_tiktoken()`` (the whole module: see
``bpe.tiktoken``); ``Tokenizer`` is bpe's own interface.

>>> import bpe
>>> bpe.pretokenize("Hello, world!")
['Hello', ',', ' world', '!']
"""
import os as _os
from typing import TYPE_CHECKING

try:
    import bpe._types  # noqa: F401 - the smallest kernel: are the compiled modules here?
except ImportError as _error:
    if _error.name == "bpe._types" and _os.path.exists(_os.path.join(_os.path.dirname(__file__), "_types.pyx")):
        # As numpy says it: the source tree shadows the installed package.
        raise ImportError(
            f"bpe's compiled kernels are not built in {_os.path.dirname(__file__)}: this is bpe's source "
            "tree, which hides an installed bpe while it is the current directory (or on the path). "
            "Run Python from another directory, or build the kernels here with `pip install -e .`") from None
    raise

from bpe.errors import BpeError, CorpusDecodeError, CorpusEncodeError, TokenArrayError, TokenizerFileError
from bpe.patterns import PATTERNS, pretokenize
from bpe.tiktoken import Encoding, encoding_for_model, encoding_name_for_model, get_encoding, list_encoding_names
from bpe.tiktoken import install as install_as_tiktoken
from bpe.tokenizer import Tokenizer, load

#: Names imported on first use, from the module that defines them: training and
#: whole-corpus work bring in multiprocessing, progress bars and the file
#: writers, which a script that loads a tokenizer and encodes text never needs
#: (30 ms of a fresh process's 0.1 s import).
_LAZY = {
    "Chunk": "chunking", "plan_chunks": "chunking",
    "PretokenCounts": "counting", "count_chunks": "counting", "count_pretokens": "counting",
    "TokenDataset": "dataset",
    "EncodeSummary": "encode_file", "encode_chunks": "encode_file",
    "encode_shards": "shards", "finalize_shards": "shards", "plan_shards": "shards",
    "open_tokens": "token_array", "read_document_index": "token_array", "read_metadata": "token_array",
    "train": "trainer", "train_from_counts": "trainer", "train_from_iterator": "trainer",
}

if TYPE_CHECKING:
    from bpe.chunking import Chunk, plan_chunks
    from bpe.counting import PretokenCounts, count_chunks, count_pretokens
    from bpe.dataset import TokenDataset
    from bpe.encode_file import EncodeSummary, encode_chunks
    from bpe.shards import encode_shards, finalize_shards, plan_shards
    from bpe.token_array import open_tokens, read_document_index, read_metadata
    from bpe.trainer import train, train_from_counts, train_from_iterator


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'bpe' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"bpe.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Chunk",
    "Encoding",
    "PATTERNS",
    "BpeError",
    "CorpusDecodeError",
    "CorpusEncodeError",
    "EncodeSummary",
    "PretokenCounts",
    "TokenArrayError",
    "TokenDataset",
    "Tokenizer",
    "TokenizerFileError",
    "count_chunks",
    "encode_chunks",
    "encode_shards",
    "finalize_shards",
    "count_pretokens",
    "encoding_for_model",
    "encoding_name_for_model",
    "get_encoding",
    "install_as_tiktoken",
    "list_encoding_names",
    "load",
    "open_tokens",
    "plan_chunks",
    "plan_shards",
    "read_document_index",
    "read_metadata",
    "pretokenize",
    "train",
    "train_from_counts",
    "train_from_iterator",
]
__version__ = "0.1.0"
