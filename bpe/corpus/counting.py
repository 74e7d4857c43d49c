"""Counting pre-tokens: the first stage of training, parallel over file chunks.

Workers read their chunk, split out special tokens, run the pattern and return
the distinct pre-tokens as flat arrays (``PretokenCounts``), which the caller
adds up. Counts can be saved, combined across machines and trained on later.
Built-in patterns are counted by the native scanner on threads; custom ones by
``regex`` in processes (``bpe.workers``).
"""
from __future__ import annotations

import os
import threading
import warnings
from collections import Counter
from typing import Iterable, Mapping, Optional, Sequence, Union

import numpy as np
import regex

from bpe._scanner import Interner, hash_pieces
from bpe.corpus.chunking import Chunk, plan_chunks
from bpe.files import check_errors, check_regular_files, checked_utf8, create_temporary, read_into
from bpe.flat import take_pieces
from bpe.patterns import canonical_pattern, compile_pattern, native_pattern_id, regex_pretokens
from bpe.progress import progress_bar
from bpe.corpus.records import Problems, Unit, dataset_texts, is_dataset, texts_of, units
from bpe.corpus.sources import find_sources
from bpe.specials import check_special_tokens, special_spans, split_special
from bpe.workers import map_in_processes, map_ordered, resolve_workers

PathLike = Union[str, "os.PathLike[str]"]
FORMAT_VERSION = 1
MIN_CHUNK_BYTES = 1 << 20
MAX_CHUNK_BYTES = 16 << 20
_LONE_SURROGATE = regex.compile(r"[\ud800-\udfff]")


class PretokenCounts:
    """Distinct pre-tokens and how often each occurs, as flat numpy arrays.

    Attributes
    ----------
    data : uint8 array
        The pre-tokens' UTF-8 bytes, concatenated.
    offsets : int64 array of length ``len(self) + 1``
        Pre-token ``i`` is ``data[offsets[i]:offsets[i + 1]]``.
    counts : int64 array
        Occurrences of each pre-token.
    pattern : str or None
        The pattern that produced them (a built-in name or a regex).

    >>> counts = PretokenCounts.from_mapping({"low": 5, " lower": 2})
    >>> counts + counts == PretokenCounts.from_mapping({"low": 10, " lower": 4})
    True
    """

    def __init__(self, data, offsets, counts, pattern: Optional[str] = "gpt2", *, copy: bool = True):
        # The arrays are checked once, here, and the kernels trust them after: so
        # they are this object's own (copied unless ``copy=False`` hands them
        # over) and read-only.
        self.data = np.array(data, dtype=np.uint8, copy=copy, order="C")
        self.offsets = np.array(offsets, dtype=np.int64, copy=copy, order="C")
        self.counts = np.array(counts, dtype=np.int64, copy=copy, order="C")
        for array in (self.data, self.offsets, self.counts):
            array.flags.writeable = False
        self.pattern = canonical_pattern(pattern)
        n = len(self.counts)
        if self.data.ndim != 1 or self.counts.ndim != 1 or self.offsets.shape != (n + 1,):
            raise ValueError(f"offsets must have {n + 1} entries (one more than counts), "
                             f"got {self.offsets.shape[0]}")
        if self.offsets[0] != 0 or self.offsets[-1] != len(self.data) or np.any(np.diff(self.offsets) < 0):
            raise ValueError("offsets must rise from 0 to len(data)")
        if n and self.counts.min() < 0:
            raise ValueError(f"counts must be >= 0; pre-token {int(self.counts.argmin())} "
                             f"has {int(self.counts.min())}")

    @classmethod
    def from_mapping(cls, counts: Mapping[Union[str, bytes], int],
                     pattern: Optional[str] = "gpt2") -> "PretokenCounts":
        """Build from a mapping of pre-token (str or UTF-8 bytes) to count."""
        keys = [key.encode("utf-8") if isinstance(key, str) else bytes(key) for key in counts]
        lengths = np.fromiter((len(key) for key in keys), dtype=np.int64, count=len(keys))
        offsets = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(keys), dtype=np.uint8)
        values = np.fromiter(counts.values(), dtype=np.int64, count=len(keys))
        return cls(data.copy(), offsets, values, pattern, copy=False)

    def __len__(self) -> int:
        return len(self.counts)

    def items(self) -> Iterable[tuple[bytes, int]]:
        """Each pre-token's bytes with its count."""
        data = self.data.tobytes()
        offsets = self.offsets.tolist()
        return zip((data[a:b] for a, b in zip(offsets, offsets[1:])), self.counts.tolist())

    def to_dict(self) -> dict[bytes, int]:
        return dict(self.items())

    @property
    def total(self) -> int:
        """All pre-token occurrences counted (exact: Python ints, no int64 wrap-around)."""
        return sum(self.counts.tolist())

    def __add__(self, other: "PretokenCounts") -> "PretokenCounts":
        if not isinstance(other, PretokenCounts):
            return NotImplemented
        return PretokenCounts.sum([self, other])

    @staticmethod
    def sum(parts: Iterable["PretokenCounts"], pattern: Optional[str] = "gpt2") -> "PretokenCounts":
        """Add up counts made with the same pattern (``pattern`` if there are none)."""
        interner = Interner()
        patterns = set()
        for part in parts:
            patterns.add(part.pattern)
            interner.add_arrays(part.data, part.offsets, part.counts)
        if len(patterns) > 1:
            raise ValueError(f"cannot add pre-token counts made with different patterns: "
                             f"{sorted(map(repr, patterns))}")
        return PretokenCounts(*interner.arrays(), patterns.pop() if patterns else pattern, copy=False)

    def take(self, indices) -> "PretokenCounts":
        """The pre-tokens at ``indices`` (in that order), with their counts."""
        indices = np.asarray(indices, dtype=np.int64)
        data, offsets = take_pieces(self.data, self.offsets, indices)
        return PretokenCounts(data, offsets, self.counts[indices], self.pattern, copy=False)

    def partition(self, n: int) -> list["PretokenCounts"]:
        """``n`` buckets by a stable hash of each pre-token's bytes (FNV-1a): a
        pre-token lands in the same bucket on every machine and Python version, so
        counts made apart can be added up bucket by bucket, and no process ever
        holds more than its buckets."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        buckets = hash_pieces(self.data, self.offsets) % np.uint64(n)
        order = np.argsort(buckets, kind="stable")
        bounds = np.searchsorted(buckets[order], np.arange(n + 1, dtype=np.uint64))
        return [self.take(order[bounds[k]:bounds[k + 1]]) for k in range(n)]

    @staticmethod
    def concat(parts: Sequence["PretokenCounts"], pattern: Optional[str] = "gpt2") -> "PretokenCounts":
        """Parts that share no pre-token (the buckets of ``partition``) as one; for
        parts that may overlap, add them (``sum``)."""
        parts = list(parts)
        patterns = {part.pattern for part in parts}
        if len(patterns) > 1:
            raise ValueError(f"cannot join pre-token counts made with different patterns: "
                             f"{sorted(map(repr, patterns))}")
        if not parts:
            return PretokenCounts.from_mapping({}, pattern)
        shifts = np.cumsum([0] + [len(part.data) for part in parts[:-1]])
        offsets = np.concatenate([parts[0].offsets[:1]] + [part.offsets[1:] + shift
                                                            for part, shift in zip(parts, shifts)])
        return PretokenCounts(np.concatenate([part.data for part in parts]), offsets,
                              np.concatenate([part.counts for part in parts]), patterns.pop(), copy=False)

    def prune(self, min_count: int) -> "PretokenCounts":
        """Only the pre-tokens seen at least ``min_count`` times. Not exact: training
        on pruned counts can learn other merges than on all of them (a rare
        pre-token still adds to its pairs' counts); it trades that for memory."""
        if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
            raise ValueError(f"min_count must be a positive int, got {min_count!r}")
        return self.take(np.flatnonzero(self.counts >= min_count))

    def __eq__(self, other) -> bool:
        if not isinstance(other, PretokenCounts):
            return NotImplemented
        return self.pattern == other.pattern and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return (f"PretokenCounts({len(self)} distinct pre-tokens, {self.total} in all, "
                f"pattern={self.pattern!r})")

    def save(self, path: PathLike) -> None:
        """Write to ``path`` as ``.npz`` (under a temporary name, renamed when complete)."""
        path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(path))
        fd, tmp = create_temporary(directory, suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as file:
                np.savez(file, format_version=np.int64(FORMAT_VERSION), data=self.data,
                         offsets=self.offsets, counts=self.counts,
                         pattern=np.array("" if self.pattern is None else self.pattern),
                         has_pattern=np.bool_(self.pattern is not None))
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path: PathLike) -> "PretokenCounts":
        """Read counts written by ``save``; errors name the file and the field at fault."""
        path = os.fspath(path)
        try:
            archive = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise FileNotFoundError(f"{path}: no such file") from None
        except (OSError, ValueError) as e:
            raise ValueError(f"{path}: not a pre-token counts file (.npz): {e}") from None
        with archive:
            fields = {}
            for field in ("format_version", "data", "offsets", "counts", "pattern", "has_pattern"):
                if field not in archive.files:
                    raise ValueError(f"{path}: field {field!r} is missing")
                fields[field] = archive[field]
        if int(fields["format_version"]) != FORMAT_VERSION:
            raise ValueError(f"{path}: field 'format_version' is {int(fields['format_version'])}; "
                             f"this bpe reads version {FORMAT_VERSION}")
        pattern = str(fields["pattern"]) if bool(fields["has_pattern"]) else None
        try:
            return cls(fields["data"], fields["offsets"], fields["counts"], pattern, copy=False)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None


# --------------------------------------------------------------------------- counting

def _count_utf8(texts: Sequence[bytes], special_tokens: Sequence[str],
                pattern: Optional[str]) -> PretokenCounts:
    """Count the pre-tokens of valid UTF-8 texts (no pre-token spans two texts).

    Built-in patterns run the native scanner straight into a C interner; custom
    patterns and ``None`` go through ``regex`` and a Counter.
    """
    native = native_pattern_id(pattern)
    if native is None:
        compiled = compile_pattern(pattern)
        counter: Counter = Counter()
        for data in texts:
            text = data.decode("utf-8", "surrogatepass")
            for segment, _special in split_special(text, special_tokens):
                if compiled is None:
                    if segment:
                        counter[segment] += 1
                else:
                    counter.update(regex_pretokens(compiled, segment))
        return PretokenCounts.from_mapping(
            {key.encode("utf-8", "surrogatepass"): count for key, count in counter.items()}, pattern)
    interner = Interner()
    specials = [token.encode("utf-8") for token in special_tokens]
    for data in texts:
        start = 0
        for special_start, special_end, _index in special_spans(data, specials):
            interner.count(data, native, start, special_start)
            start = special_end
        interner.count(data, native, start, len(data))
    return PretokenCounts(*interner.arrays(), pattern, copy=False)


def count_chunks(chunks: Sequence[Chunk], special_tokens: Sequence[str] = (), *,
                 pattern: Optional[str] = "gpt2", num_workers: Optional[int] = 1,
                 errors: str = "strict", progress: bool = False) -> PretokenCounts:
    """The pre-token counts of byte ranges of files (``bpe.corpus.plan_chunks`` cuts them by
    the rule ``train`` uses): the building block for counting a corpus anywhere,
    one range per task. Counting all of a file's chunks equals counting the file."""
    special_tokens = check_special_tokens(special_tokens)
    pattern = canonical_pattern(pattern)
    errors = check_errors(errors)
    chunks = list(chunks)
    tasks = [(chunk, special_tokens, pattern, errors) for chunk in chunks]
    num_workers = min(resolve_workers(num_workers), max(len(tasks), 1))
    with progress_bar(progress, sum(chunk.n_bytes for chunk in chunks), "pre-tokenizing", unit="B") as bar:
        def counted():
            for chunk, part in zip(chunks, _map_counting(_count_chunk, tasks, num_workers, pattern)):
                bar.update(chunk.n_bytes)
                yield part
        try:
            return PretokenCounts.sum(counted(), pattern)
        finally:
            # One worker counts on this thread, whose read buffer would outlive the call.
            vars(_read_buffers).pop("buffer", None)


#: Each counting thread's read buffer, reused from chunk to chunk.
_read_buffers = threading.local()


def _count_chunk(task) -> PretokenCounts:
    chunk, special_tokens, pattern, errors = task
    # One buffer per thread, reused: a fresh bytes object per chunk (16 MiB) made
    # glibc raise its mmap threshold and keep the freed ones in its heaps, under
    # the merge loop's peak.
    buffer = getattr(_read_buffers, "buffer", None)
    if buffer is None or len(buffer) < chunk.n_bytes:
        buffer = _read_buffers.buffer = bytearray(chunk.n_bytes)
    view = memoryview(buffer)[:chunk.n_bytes]
    with open(chunk.path, "rb") as file:
        file.seek(chunk.start)
        raw = view[:read_into(file, view)]
    if native_pattern_id(pattern) is None:
        raw = bytes(raw)              # the regex path decodes it to a str
    return _count_utf8([checked_utf8(raw, chunk.path, chunk.start, errors)], special_tokens, pattern)


def _count_texts(task) -> tuple[PretokenCounts, list[str]]:
    """The counts of a batch of texts or units, and the problems of records skipped."""
    items, special_tokens, pattern, errors = task
    if any(isinstance(item, Unit) for _, item in items):
        found, problems = texts_of([item for _, item in items])
        items = list(enumerate(found))
    else:
        problems = []
    encoded = []
    for index, text in items:
        if isinstance(text, bytes):        # a stretch of a text file, checked UTF-8 (bpe.corpus.records)
            encoded.append(text)
            continue
        if not isinstance(text, str):
            raise TypeError(f"text {index} is a {type(text).__name__}, not a str")
        if errors == "replace":
            text = _LONE_SURROGATE.sub("\ufffd", text)
        else:
            match = _LONE_SURROGATE.search(text)
            if match:
                raise ValueError(f"text {index}: lone surrogate {match.group()!r} at character "
                                 f"{match.start()} is not valid Unicode; pass errors='replace' "
                                 "to read it as U+FFFD")
        encoded.append(text.encode("utf-8"))
    return _count_utf8(encoded, special_tokens, pattern), problems


def _map_counting(function, tasks, num_workers: int, pattern: Optional[str]):
    """``function`` over tasks in order: on threads for the native scanners, which
    release the GIL; in processes for ``regex``, which holds it."""
    if native_pattern_id(pattern) is not None:
        return (result for _, result in map_ordered(function, tasks, num_workers))
    return map_in_processes(function, tasks, num_workers)


def default_chunk_size(total_bytes: int, num_workers: int) -> int:
    """Several chunks per worker for balance, each large enough to amortise its start-up."""
    return int(min(max(total_bytes // (8 * num_workers), MIN_CHUNK_BYTES), MAX_CHUNK_BYTES))


def count_pretokens(
    input: Union[PathLike, Sequence[PathLike]],
    special_tokens: Sequence[str] = (),
    *,
    pattern: Optional[str] = "gpt2",
    num_workers: Optional[int] = None,
    errors: str = "strict",
    progress: bool = False,
    chunk_size: Optional[int] = None,
    text_field: str = "text",
    recursive: bool = False,
    glob: Optional[str] = None,
) -> PretokenCounts:
    """Count the pre-tokens of corpus files, in parallel.

    ``input``: files and directories, as ``encode_file`` reads them (text, JSON
    Lines and Parquet, compressed or not; ``recursive``, ``glob``). Special
    tokens are split out first (longest first) and not counted; the pattern
    runs on the text between them. A record of JSON Lines or Parquet (its
    ``text_field``) is a text of its own: the counts equal those of a text
    file holding the records joined by a special token. Plain text files are
    cut into chunks of ``chunk_size`` bytes, which only changes how work is
    shared: the counts are the same for any value and any ``num_workers``.
    Records skipped under ``errors="replace"`` are reported in a warning.
    """
    plan = find_sources(input, recursive=recursive, glob=glob)
    check_regular_files(plan.paths)
    special_tokens = check_special_tokens(special_tokens)
    pattern = canonical_pattern(pattern)
    check_errors(errors)
    num_workers = resolve_workers(num_workers)
    if not plan.all_plain_text:
        # Units are parsed where they are counted, on the workers (texts_of).
        found = units(plan.sources, text_field, errors, special_tokens, special_tokens[0] if special_tokens else None,
                      pattern)
        problems = Problems()
        counts = _count_stream(found, special_tokens, pattern, num_workers, errors, progress, problems)
        if problems.count:
            warnings.warn(str(problems), stacklevel=2)
        return counts
    paths = plan.paths
    if chunk_size is None:
        chunk_size = default_chunk_size(sum(os.path.getsize(path) for path in paths), num_workers)
    return count_chunks(plan_chunks(paths, chunk_size, special_tokens, pattern), special_tokens,
                        pattern=pattern, num_workers=num_workers, errors=errors, progress=progress)


def count_pretokens_from_iterator(
    texts: Iterable[str],
    special_tokens: Sequence[str] = (),
    *,
    pattern: Optional[str] = "gpt2",
    num_workers: Optional[int] = None,
    errors: str = "strict",
    progress: bool = False,
    batch_chars: int = 1 << 20,
    text_field: str = "text",
) -> PretokenCounts:
    """Count the pre-tokens of an iterable of texts (or a Hugging Face
    ``datasets.Dataset`` / ``IterableDataset``: its ``text_field`` column);
    no pre-token spans two texts."""
    special_tokens = check_special_tokens(special_tokens)
    pattern = canonical_pattern(pattern)
    errors = check_errors(errors)
    num_workers = resolve_workers(num_workers)
    if is_dataset(texts):
        texts = dataset_texts(texts, text_field)
    return _count_stream(texts, special_tokens, pattern, num_workers, errors, progress, Problems(), batch_chars)


def _count_stream(items, special_tokens, pattern, num_workers, errors, progress, problems: Problems,
                  batch_chars: int = 1 << 20) -> PretokenCounts:
    """Count texts, or ``bpe.corpus.records`` units (parsed on the workers), in batches of
    about ``batch_chars``; the problems of records skipped go to ``problems``."""
    def batches():
        batch, size = [], 0
        for index, item in enumerate(items):
            batch.append((index, item))
            size += item.n_chars if isinstance(item, Unit) else len(item) if isinstance(item, (str, bytes)) else 0
            if size >= batch_chars:
                yield (batch, special_tokens, pattern, errors)
                batch, size = [], 0
        if batch:
            yield (batch, special_tokens, pattern, errors)

    with progress_bar(progress, None, "pre-tokenizing", unit="batch") as bar:
        def counted():
            for part, skipped in _map_counting(_count_texts, batches(), num_workers, pattern):
                problems.extend(skipped)
                yield part
                bar.update(1)
        return PretokenCounts.sum(counted(), pattern)
