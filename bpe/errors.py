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


class MissingExtraError(BpeError, ImportError):
    """An optional package that the input or option asked for needs (a ``.zst``
    or Parquet file, Ray) is not installed; names the file or option and the
    extra that brings it."""


class TokenizerFileError(BpeError, ValueError):
    """A tokenizer file that is corrupt, truncated or inconsistent; names the file and line."""


class CorpusDecodeError(BpeError, ValueError):
    """Input bytes that are not valid UTF-8; names the file and byte offset at fault."""

    def __init__(self, path: str, offset: int, reason: str):
        self.path, self.offset, self.reason = path, offset, reason
        super().__init__(f"{path}: invalid UTF-8 at byte offset {offset} ({reason}); "
                         "pass errors='replace' to read such bytes as U+FFFD")

    def __reduce__(self):
        return type(self), (self.path, self.offset, self.reason)


class CorpusEncodeError(BpeError, OSError):
    """Encoding a corpus failed (an input changed or could not be read, or the output
    could not be written); names the file at fault. No output was left behind."""


class TokenArrayError(BpeError, ValueError):
    """A token array whose sidecar does not describe it (an interrupted or concurrent
    run, or a corrupt sidecar); names the file at fault."""


class CorpusFileError(BpeError, ValueError):
    """A corpus file that cannot be read as what it is named (a ``.parquet`` that
    is no Parquet, or is damaged); names the file and where in it."""

    def __init__(self, path: str, where: str, reason: str):
        self.path, self.where, self.reason = path, where, reason
        super().__init__(f"{path}, {where}: {reason}")

    def __reduce__(self):
        return type(self), (self.path, self.where, self.reason)


class CorpusRecordError(BpeError, ValueError):
    """A record of a corpus (a line of JSON Lines, a row of Parquet) that holds no
    text where asked; names the file, the record and the field."""

    def __init__(self, path: str, where: str, field: str, reason: str, skippable: bool = True):
        self.path, self.where, self.field, self.reason = path, where, field, reason
        self.skippable = skippable        # a record errors="replace" skips (not the file's schema)
        hint = "; pass errors='replace' to skip such records (they are counted and reported)" if skippable else ""
        super().__init__(f"{path}, {where}, field {field!r}: {reason}{hint}")

    def __reduce__(self):
        return type(self), (self.path, self.where, self.field, self.reason, self.skippable)
