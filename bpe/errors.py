"""The errors bpe raises for bad input, one class per kind of fault.

Each refines the built-in a caller would already catch (``ValueError`` for bad
data, ``OSError`` for a failed read or write) and shares ``BpeError``, so a
program can catch "what bpe refused" in one clause. Messages name the file,
line, offset or value at fault. The command line prints these (and
``OSError``, ``ValueError``) as one line; anything else is a bug and keeps its
traceback.
"""
from __future__ import annotations


class BpeError(Exception):
    """Base of the errors bpe raises for bad input."""


class TokenizerFileError(BpeError, ValueError):
    """A tokenizer file that is corrupt, truncated or inconsistent; names the file and line."""


class CorpusDecodeError(BpeError, ValueError):
    """Input bytes that are not valid UTF-8; names the file and byte offset at fault."""


class CorpusEncodeError(BpeError, OSError):
    """Encoding a corpus failed (an input changed or could not be read, or the output
    could not be written); names the file at fault. No output was left behind."""
