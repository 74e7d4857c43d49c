"""bpe: fast, exact byte-level BPE tokenizers — training and encoding whole corpora.

>>> import bpe
>>> bpe.pretokenize("Hello, world!")
['Hello', ',', ' world', '!']
"""
from bpe.corpus import CorpusEncodeError, EncodeSummary, open_tokens
from bpe.formats import TokenizerFileError, load
from bpe.patterns import PATTERNS, pretokenize
from bpe.pretokens import CorpusDecodeError, PretokenCounts, count_pretokens
from bpe.tokenizer import Tokenizer
from bpe.trainer import train, train_from_counts, train_from_iterator

__all__ = [
    "PATTERNS",
    "CorpusDecodeError",
    "CorpusEncodeError",
    "EncodeSummary",
    "PretokenCounts",
    "Tokenizer",
    "TokenizerFileError",
    "count_pretokens",
    "load",
    "open_tokens",
    "pretokenize",
    "train",
    "train_from_counts",
    "train_from_iterator",
]
__version__ = "0.1.0"
