"""Corpora as they come: which inputs are what, and which files of a directory are read.

``find_sources`` says what each input is (by its suffix, and by its first bytes
for compression: text, JSON Lines or Parquet) and which files of a directory
are read, counting the ones it skips by suffix, so nothing is left out
without a word. ``bpe.corpus.records`` reads them.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import os
import stat
from collections import Counter
from typing import Optional


#: Read as text from a directory; any file named on its own is read as text too.
TEXT_SUFFIXES = (".txt", ".text")
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
#: Read as JSON Lines when named (or matched by a glob) only: a directory's .json
#: files are as often settings, or the sidecars of token arrays written there.
NAMED_ONLY_SUFFIXES = (".json",)
PARQUET_SUFFIXES = (".parquet",)
COMPRESSION_SUFFIXES = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd", ".zstd": "zstd"}
#: Each compression's first bytes: a compressed file is known whatever its name.
MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"))
SUBDIRECTORY = "subdirectory"


@dataclasses.dataclass(frozen=True)
class Source:
    """One input file: ``kind`` "text", "jsonl" or "parquet", its ``compression`` if any."""

    path: str
    kind: str
    compression: Optional[str] = None

    @property
    def plain_text(self) -> bool:
        """A text file read in place: cut into chunks by byte ranges, in parallel."""
        return self.kind == "text" and self.compression is None


@dataclasses.dataclass
class SourcePlan:
    """The sources of some inputs, and the files of their directories skipped."""

    sources: list[Source]
    skipped: Counter = dataclasses.field(default_factory=Counter)     # suffix -> files

    @property
    def paths(self) -> list[str]:
        return [source.path for source in self.sources]

    @property
    def all_plain_text(self) -> bool:
        return all(source.plain_text for source in self.sources)

    def skipped_note(self) -> str:
        """"skipped 3 files: 2 .md, 1 .png; 1 subdirectory (read with recursive)", or ""."""
        files = {suffix: count for suffix, count in sorted(self.skipped.items(), key=lambda item: (-item[1], item[0]))
                 if suffix != SUBDIRECTORY}
        parts = []
        if files:
            total = sum(files.values())
            parts.append(f"skipped {total} file{'s' if total != 1 else ''}: "
                         + ", ".join(f"{count} {suffix}" for suffix, count in files.items()))
        if self.skipped[SUBDIRECTORY]:
            count = self.skipped[SUBDIRECTORY]
            parts.append(f"{'' if files else 'skipped '}{count} "
                         f"subdirector{'ies' if count != 1 else 'y'} (read with --recursive)")
        return "; ".join(parts)


def _suffixes(name: str) -> tuple[str, Optional[str]]:
    """The format suffix and the compression of a file name (".jsonl", "zstd")."""
    lower = name.lower()
    compression = None
    for suffix, kind in COMPRESSION_SUFFIXES.items():
        if lower.endswith(suffix):
            compression = kind
            lower = lower[:-len(suffix)]
            break
    return os.path.splitext(lower)[1], compression


def _sniff(path: str) -> Optional[str]:
    """The compression the file's first bytes say, if any (a regular file's only:
    opening a pipe would wait for a writer; such inputs are refused later)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as file:
            head = file.read(6)
    except OSError:
        return None
    return next((kind for magic, kind in MAGIC if head.startswith(magic)), None)


def source_of(path: str, *, named: bool) -> Optional[Source]:
    """The source a file is, or None for a file of a directory that is not a
    corpus (``named``: the user gave it by name, so it is read as text if its
    suffix says nothing else)."""
    suffix, compression = _suffixes(os.path.basename(path))
    if suffix in NAMED_ONLY_SUFFIXES and not named:
        return None
    compression = compression or _sniff(path)
    if suffix in JSONL_SUFFIXES:
        return Source(path, "jsonl", compression)
    if suffix in PARQUET_SUFFIXES:
        return Source(path, "parquet", None)
    if suffix in TEXT_SUFFIXES or named:
        return Source(path, "text", compression)
    return None


def find_sources(inputs, *, recursive: bool = False, glob: Optional[str] = None) -> SourcePlan:
    """The sources of ``inputs`` (a path, a list, or directories): files named
    are read whatever their suffix; a directory gives its corpus files (text,
    JSON Lines, Parquet, compressed or not; those matching ``glob`` when given,
    a pattern of their path below the directory), sorted, and its
    subdirectories' too with ``recursive``. Everything else it holds is
    counted as skipped."""
    if isinstance(inputs, (str, bytes, os.PathLike)):
        inputs = [inputs]
    plan = SourcePlan([])
    for item in inputs:
        path = os.fsdecode(item)
        if os.path.isdir(path):
            found = _directory(path, recursive, glob, plan.skipped)
            if not found:
                what = f"no files matching {glob!r}" if glob else "no text, JSON Lines or Parquet files"
                raise FileNotFoundError(f"{path}: directory has {what}"
                                        + (f" ({plan.skipped_note()})" if plan.skipped else ""))
            plan.sources.extend(found)
        elif os.path.exists(path):
            plan.sources.append(source_of(path, named=True))
        else:
            raise FileNotFoundError(f"{path}: no such file")
    if not plan.sources:
        raise ValueError("no input files given")
    return plan


def text_paths(inputs, *, recursive: bool = False, glob: Optional[str] = None,
               reader: str = "this reader") -> list[str]:
    """The paths of ``inputs``, which must all be plain text files (for readers
    that cut files into byte ranges), else an error naming the first that is not."""
    plan = find_sources(inputs, recursive=recursive, glob=glob)
    for source in plan.sources:
        if not source.plain_text:
            what = f"{source.compression}-compressed" if source.compression else source.kind
            raise ValueError(f"{source.path}: {what} input; {reader} reads plain text files only "
                             "(bpe.train and bpe encode without --ray read it)")
    return plan.paths


def _directory(root: str, recursive: bool, glob: Optional[str], skipped: Counter) -> list[Source]:
    found = []
    for directory, subdirectories, files in os.walk(root):
        subdirectories.sort()
        if not recursive:
            skipped[SUBDIRECTORY] += len(subdirectories)
            subdirectories.clear()
        for name in sorted(files):
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, root)
            if glob is not None:
                source = source_of(path, named=True) if fnmatch.fnmatch(relative, glob) else None
            else:
                source = None if name.startswith(".") else source_of(path, named=False)
            if source is None:
                skipped[_suffix_label(name)] += 1
            else:
                found.append(source)
    return sorted(found, key=lambda source: source.path)


def _suffix_label(name: str) -> str:
    suffix, compression = _suffixes(name)
    if compression:
        suffix += {"gzip": ".gz", "bz2": ".bz2", "xz": ".xz", "zstd": ".zst"}[compression]
    return suffix or "without a suffix"
