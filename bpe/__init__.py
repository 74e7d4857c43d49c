"""bpe: fast, exact byte-level BPE tokenizers — training and encoding whole corpora.

Code written for tiktoken runs with ``import bpe as tiktoken`` (``get_encoding``,
``encoding_for_model``, ``Encoding``); ``Tokenizer`` is bpe's own interface.

>>> import bpe
>>> bpe.pretokenize("Hello, world!")
['Hello', ',', ' world', '!']
"""
from bpe.chunking import Chunk, plan_chunks
from bpe.counting import PretokenCounts, count_chunks, count_pretokens
from bpe.dataset import TokenDataset
from bpe.encode_file import EncodeSummary, encode_chunks
from bpe.encoding import Encoding, get_encoding, list_encoding_names
from bpe.errors import BpeError, CorpusDecodeError, CorpusEncodeError, TokenArrayError, TokenizerFileError
from bpe.models import encoding_for_model, encoding_name_for_model
from bpe.patterns import PATTERNS, pretokenize
from bpe.shards import encode_shards, finalize_shards, plan_shards
from bpe.token_array import open_tokens, read_document_index, read_metadata
from bpe.tokenizer import Tokenizer, load
from bpe.trainer import train, train_from_counts, train_from_iterator

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
