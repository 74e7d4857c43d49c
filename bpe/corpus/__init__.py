"""Whole corpora: corpora as they come (``sources``, ``records``), cut into
chunks (``chunking``), counted for training (``counting``), encoded into
memory-mapped token arrays (``driver``, with ``chunk_writer`` and
``document_writer``) or shards of them (``shards``), read back
(``token_array``, ``dataset``).

The building blocks of scale-out (``bpe.distributed`` runs them on Ray) are
named here; what a user types is in ``bpe`` itself, which also gives six of
these (``count_pretokens``, ``PretokenCounts``, ``TokenDataset``,
``open_tokens``, ``read_metadata``, ``read_document_index``): the same objects.
"""
import importlib as _importlib
from typing import TYPE_CHECKING

#: The names, imported on first use from the module that defines them: so
#: importing one module of the package never imports the others.
_LAZY = {
    "Chunk": "chunking", "plan_chunks": "chunking",
    "PretokenCounts": "counting", "count_chunks": "counting", "count_pretokens": "counting",
    "EncodeSummary": "driver", "encode_chunks": "driver",
    "encode_shards": "shards", "finalize_shards": "shards", "plan_shards": "shards",
    "TokenDataset": "dataset",
    "open_tokens": "token_array", "read_document_index": "token_array", "read_metadata": "token_array",
}

__all__ = sorted(_LAZY)

if TYPE_CHECKING:
    from bpe.corpus.chunking import Chunk, plan_chunks
    from bpe.corpus.counting import PretokenCounts, count_chunks, count_pretokens
    from bpe.corpus.dataset import TokenDataset
    from bpe.corpus.driver import EncodeSummary, encode_chunks
    from bpe.corpus.shards import encode_shards, finalize_shards, plan_shards
    from bpe.corpus.token_array import open_tokens, read_document_index, read_metadata


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'bpe.corpus' has no attribute {name!r}")
    value = getattr(_importlib.import_module(f"bpe.corpus.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
