"""bpe: fast, exact byte-level BPE tokenizers — training and encoding whole corpora.

>>> import bpe
>>> bpe.pretokenize("Hello, world!")
['Hello', ',', ' world', '!']
"""
from bpe.counting import PretokenCounts, count_pretokens
from bpe.encode_file import EncodeSummary
from bpe.errors import BpeError, CorpusDecodeError, CorpusEncodeError, TokenArrayError, TokenizerFileError
from bpe.patterns import PATTERNS, pretokenize
from bpe.token_array import open_tokens, read_document_index, read_metadata
from bpe.tokenizer import Tokenizer, load
from bpe.trainer import train, train_from_counts, train_from_iterator

__all__ = [
    "PATTERNS",
    "BpeError",
    "CorpusDecodeError",
    "CorpusEncodeError",
    "EncodeSummary",
    "PretokenCounts",
    "TokenArrayError",
    "Tokenizer",
    "TokenizerFileError",
    "count_pretokens",
    "load",
    "open_tokens",
    "read_document_index",
    "read_metadata",
    "pretokenize",
    "train",
    "train_from_counts",
    "train_from_iterator",
]
__version__ = "0.1.0"
