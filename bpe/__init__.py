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

from bpe.errors import BpeError
from bpe.patterns import PATTERNS, pretokenize
from bpe.tiktoken import Encoding, encoding_for_model, encoding_name_for_model, get_encoding, list_encoding_names
from bpe.tiktoken import install as install_as_tiktoken
from bpe.tokenizer import Tokenizer, load

#: Names imported on first use, from the module that defines them: training and
#: whole-corpus work bring in multiprocessing, progress bars and the file
#: writers, which a script that loads a tokenizer and encodes text never needs
#: (30 ms of a fresh process's 0.1 s import).
_LAZY = {
    "train": "trainer", "train_from_counts": "trainer", "train_from_iterator": "trainer",
    "PretokenCounts": "corpus.counting", "count_pretokens": "corpus.counting",
    "TokenDataset": "corpus.dataset",
    "open_tokens": "corpus.token_array", "read_document_index": "corpus.token_array",
    "read_metadata": "corpus.token_array",
}

if TYPE_CHECKING:
    from bpe.corpus.counting import PretokenCounts, count_pretokens
    from bpe.corpus.dataset import TokenDataset
    from bpe.corpus.token_array import open_tokens, read_document_index, read_metadata
    from bpe.trainer import train, train_from_counts, train_from_iterator


#: Names ``bpe`` gave before they moved to where they live: still found, with
#: a warning that says where.
_MOVED = {
    "Chunk": "corpus", "plan_chunks": "corpus", "count_chunks": "corpus", "EncodeSummary": "corpus",
    "encode_chunks": "corpus", "encode_shards": "corpus", "finalize_shards": "corpus", "plan_shards": "corpus",
    "TokenizerFileError": "errors", "TokenArrayError": "errors", "CorpusEncodeError": "errors",
    "CorpusDecodeError": "errors",
}


def __getattr__(name: str):
    import importlib

    if name == "corpus":                  # the building blocks, as ``bpe.corpus.plan_chunks``
        return importlib.import_module("bpe.corpus")
    if name in _MOVED:
        import warnings

        warnings.warn(f"bpe.{name} is bpe.{_MOVED[name]}.{name}", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(f"bpe.{_MOVED[name]}"), name)
    if name not in _LAZY:
        raise AttributeError(f"module 'bpe' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"bpe.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"corpus"})


#: What a user types. The building blocks of scale-out are ``bpe.corpus``'s;
#: the kinds of error, ``bpe.errors``'s (every one is a ``BpeError``).
__all__ = [
    # a tokenizer: load, train, encode
    "Tokenizer", "load", "train", "train_from_iterator", "train_from_counts",
    "count_pretokens", "PretokenCounts", "PATTERNS", "pretokenize",
    # token arrays, read back
    "open_tokens", "read_metadata", "read_document_index", "TokenDataset",
    # tiktoken's front door: ``import bpe as tiktoken``
    "Encoding", "get_encoding", "encoding_for_model", "encoding_name_for_model", "list_encoding_names",
    "install_as_tiktoken",
    "BpeError",
]
__version__ = "0.1.0"
