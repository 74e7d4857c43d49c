"""``encode_file``: whole corpora into memory-mapped token arrays (``bpe.corpus.token_array``).

Files are cut into chunks by the training rule (``bpe.corpus.chunking``, snapping to
the separator); worker threads encode chunks and write each chunk's ids
straight into a temporary file at its offset (``bpe.corpus.chunk_writer``), which is
renamed, with its sidecars, only when everything succeeded. The ids equal
``tok.encode`` of each file's text, for any number of workers.

The tokenizer is passed in, not imported: this module sits below
``bpe.tokenizer``, which calls it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable, Optional, Sequence

import numpy as np

from bpe.corpus.chunk_writer import ChunkSettings, ChunkWriter
from bpe.corpus.chunking import Chunk, iter_chunks
from bpe.errors import CorpusEncodeError
from bpe.corpus.document_writer import DocumentEncoder, collect
from bpe.files import check_errors, check_regular_files, refuse_overwriting_inputs
from bpe.progress import progress_bar
from bpe.corpus.records import Problems, text_units, units
from bpe.corpus.sources import Source, find_sources, source_of
from bpe.specials import special_policy
from bpe.corpus.token_array import (OutputLock, build_metadata, check_dtype, commit, index_path, metadata_path,
                             temporary_prefix)
from bpe.workers import map_ordered, resolve_workers

#: Chunks have a fixed size (not one derived from the worker count), so the input
#: fingerprint, built from chunk digests, is the same for any number of workers.
CHUNK_BYTES = 2 << 20


@dataclasses.dataclass
class EncodeSummary:
    """What ``encode_file`` did."""

    files: list[str]
    bytes_in: int
    tokens_out: int
    documents: int
    seconds: float
    output: str
    metadata: str
    document_index: str
    dtype: str
    workers: int = 1
    problems: str = ""     # records skipped under errors="replace", named
    skipped: str = ""      # files of the directories given that are not corpora

    @property
    def bytes_per_token(self) -> float:
        return self.bytes_in / self.tokens_out if self.tokens_out else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.bytes_in / 1e6 / self.seconds if self.seconds else 0.0

    def __str__(self) -> str:
        return (f"{len(self.files)} file(s), {self.bytes_in / 1e6:.1f} MB -> {self.tokens_out} tokens "
                f"({self.dtype}), {self.documents} documents, {self.bytes_per_token:.2f} bytes/token, "
                f"{self.seconds:.2f} s, {self.mb_per_s:.1f} MB/s with {self.workers} worker(s) "
                f"-> {self.output}")


def encode_file(tokenizer, inputs, output, *, dtype=None, num_workers: Optional[int] = None,
                allowed_special="all", errors: str = "strict", progress: bool = False,
                chunk_size: int = CHUNK_BYTES, text_field: str = "text", recursive: bool = False,
                glob: Optional[str] = None) -> EncodeSummary:
    """Encode corpus files into a flat token array at ``output``; see the module docstring.

    ``num_workers``: threads (None: one per core, at most one per chunk).
    ``inputs``: files and directories (``bpe.corpus.sources.find_sources``: text, JSON
    Lines and Parquet, compressed or not; ``recursive``, ``glob``); a record's
    text is at ``text_field``.
    """
    plan = find_sources(inputs, recursive=recursive, glob=glob)
    if not plan.all_plain_text:
        summary = _write_array(tokenizer, plan.paths, output, _RecordsJob(plan.sources, text_field),
                               dtype=dtype, num_workers=num_workers, allowed_special=allowed_special,
                               errors=errors, progress=progress, text_field=text_field)
    else:
        separator = separator_token(tokenizer, allowed_special)
        # iter_chunks makes at most one chunk per chunk_size bytes of each file; cuts are
        # searched as chunks are handed out, so encoding starts at once.
        chunks = iter_chunks(plan.paths, chunk_size, list(tokenizer.special_tokens), tokenizer.pattern,
                             snap_token=separator or "")
        max_chunks = sum(-(-os.path.getsize(path) // chunk_size) for path in plan.paths)
        summary = _write_array(tokenizer, plan.paths, output, _ChunksJob(chunks, max_chunks), dtype=dtype,
                               num_workers=num_workers, allowed_special=allowed_special, errors=errors,
                               progress=progress, text_field=text_field)
    summary.skipped = plan.skipped_note()
    return summary


def encode_documents(tokenizer, texts, output, *, dtype=None, num_workers: Optional[int] = None,
                     errors: str = "strict", progress: bool = False, text_field: str = "text") -> EncodeSummary:
    """Encode Python texts into a token array, one document each: an iterable of
    str, or a Hugging Face ``datasets.Dataset`` / ``IterableDataset`` (its
    ``text_field`` column). Each text's ids are ``encode_ordinary``'s, then the
    separator (the first special token), as for the records of a JSON Lines file."""
    return _write_array(tokenizer, [], output, _RecordsJob(None, text_field, texts), dtype=dtype,
                        num_workers=num_workers, allowed_special="all", errors=errors, progress=progress,
                        text_field=text_field)


def encode_chunks(tokenizer, chunks: Sequence[Chunk], output, *, dtype=None,
                  num_workers: Optional[int] = None, allowed_special="all", errors: str = "strict",
                  progress: bool = False, text_field: str = "text") -> EncodeSummary:
    """Encode byte ranges of files (``bpe.corpus.plan_chunks``, snapped to the separator
    as ``encode_file`` snaps) into one token array: a shard. The shards of
    consecutive ranges, read one after the other, are ``encode_file`` of the
    files; the sidecar records the ranges and their fingerprint. A file that is
    not plain text (JSON Lines, Parquet, compressed: ``bpe.corpus.shards`` plans them
    so) is one range, the whole file."""
    chunks = list(chunks)
    paths = list(dict.fromkeys(chunk.path for chunk in chunks))
    sources = [source_of(path, named=True) for path in paths]
    if all(source.plain_text for source in sources):
        job = _ChunksJob(chunks, len(chunks))
    else:
        for chunk in chunks:
            if chunk.start != 0 or chunk.end != os.path.getsize(chunk.path):
                raise ValueError(f"{chunk.path}: bytes {chunk.start}-{chunk.end} of a file that is not plain "
                                 "text; such a file is encoded whole")
        job = _RecordsJob(sources, text_field)
    return _write_array(tokenizer, paths, output, job, dtype=dtype, num_workers=num_workers,
                        allowed_special=allowed_special, errors=errors, progress=progress,
                        text_field=text_field)


def separator_token(tokenizer, allowed_special) -> Optional[str]:
    """The document separator: the first special token, if it is recognised."""
    allowed, _ = special_policy(tokenizer.special_tokens, allowed_special, ())   # unknown names fail early
    specials = list(tokenizer.special_tokens)
    return specials[0] if specials and specials[0] in allowed else None


def encoding_settings(tokenizer, dtype, allowed_special, errors: str, text_field: str = "text") -> dict:
    """Everything besides the tokenizer and the input ranges that changes the bytes
    of a token array: what a resumed run compares before it keeps one."""
    allowed, _ = special_policy(tokenizer.special_tokens, allowed_special, ())
    # ``framing``: the ids a tokenizer puts around each document besides a
    # separator (a SentencePiece model's BOS and EOS, ``bpe.sentencepiece``).
    return {"dtype": tokenizer.token_dtype(dtype).name, "allowed_special": sorted(allowed),
            "errors": check_errors(errors), "text_field": text_field, **getattr(tokenizer, "framing", {})}


def ranges_fingerprint(chunks: Sequence[Chunk]) -> str:
    """sha256 of where each range is and of its file's size and modification time: a
    re-run can tell, from the files' status alone, that a shard is still current."""
    digest = hashlib.sha256()
    statuses = {}
    for chunk in chunks:
        if chunk.path not in statuses:
            status = os.stat(chunk.path)
            statuses[chunk.path] = (status.st_size, status.st_mtime_ns)
        digest.update(json.dumps([os.path.abspath(chunk.path), chunk.start, chunk.end,
                                  *statuses[chunk.path]]).encode())
    return digest.hexdigest()


@dataclasses.dataclass
class _Encoded:
    """What a job wrote into the temporary token array."""

    n_tokens: int
    document_starts: np.ndarray
    digests: list[str]          # of the input, in order: the sidecar's inputs_fingerprint
    ranges: list[Chunk]         # the byte ranges read: the sidecar's ranges_fingerprint
    bytes_in: int               # UTF-8 bytes of the text encoded
    workers: int
    problems: str = ""          # records skipped under errors="replace"


def _write_array(tokenizer, paths, output, job, *, dtype, num_workers, allowed_special, errors, progress,
                 text_field) -> EncodeSummary:
    """Run ``job`` into a temporary file beside ``output``, then commit it with its
    sidecars; nothing is left at ``output`` unless everything succeeded."""
    started = time.perf_counter()
    dtype = tokenizer.token_dtype(dtype)                 # a too-small dtype fails before any work
    check_dtype(dtype, "dtype")
    if not dtype.isnative:
        raise ValueError(f"dtype {dtype.str} is not in this machine's byte order; token arrays hold "
                         f"native ids (pass {dtype.newbyteorder('=').name})")
    errors = check_errors(errors)
    num_workers = resolve_workers(num_workers)
    output = os.fspath(output)
    if os.path.isdir(output) or output.endswith(os.sep):
        raise IsADirectoryError(f"{output}: is a directory; give the path of the token array to write")
    refuse_overwriting_inputs([output, metadata_path(output), index_path(output)], paths)
    statuses = check_regular_files(paths)
    allowed, _ = special_policy(tokenizer.special_tokens, allowed_special, ())
    separator = separator_token(tokenizer, allowed_special)
    separator_id = tokenizer.special_tokens[separator] if separator else None
    settings = ChunkSettings(dtype, allowed, errors, separator_id)

    directory = os.path.dirname(os.path.abspath(output))
    os.makedirs(directory, exist_ok=True)
    # The sidecar records the tokenizer's fingerprint, which costs 0.03-0.25 s the
    # first time: made beside the encoding, not after it.
    with OutputLock(output), ThreadPoolExecutor(1, thread_name_prefix="bpe-fingerprint") as beside:
        fingerprint = beside.submit(tokenizer.fingerprint)
        work = tempfile.mkdtemp(dir=directory, prefix=temporary_prefix(output))
        try:
            tmp_output = os.path.join(work, "tokens.bin")
            fd = os.open(tmp_output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)    # the umask applies
            try:
                encoded = job.run(tokenizer.encoder, fd, settings, output, num_workers, progress,
                                  sum(status.st_size for status in statuses))
            finally:
                os.close(fd)
            itemsize = settings.dtype.itemsize
            if os.path.getsize(tmp_output) != encoded.n_tokens * itemsize:
                raise CorpusEncodeError(f"{output}: the ids written hold {os.path.getsize(tmp_output)} "
                                        f"bytes, expected {encoded.n_tokens} ids of {itemsize} bytes")
            _check_unchanged(paths, statuses)
            metadata = build_metadata(
                dtype=dtype, n_tokens=encoded.n_tokens, n_documents=len(encoded.document_starts),
                n_vocab=tokenizer.n_vocab, separator=separator, output=output,
                tokenizer_fingerprint=fingerprint.result(),
                inputs=[{"path": os.path.abspath(path), "bytes": status.st_size}
                        for path, status in zip(paths, statuses)],
                inputs_fingerprint=hashlib.sha256("".join(encoded.digests).encode()).hexdigest())
            metadata["ranges_fingerprint"] = ranges_fingerprint(encoded.ranges)
            metadata["encoding_settings"] = encoding_settings(tokenizer, dtype, allowed_special, errors,
                                                              text_field)
            commit(output, work, tmp_output, metadata, encoded.document_starts)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return EncodeSummary(files=paths, bytes_in=encoded.bytes_in, tokens_out=encoded.n_tokens,
                         documents=len(encoded.document_starts), seconds=time.perf_counter() - started,
                         output=output, metadata=metadata_path(output), document_index=index_path(output),
                         dtype=dtype.name, workers=encoded.workers, problems=encoded.problems)


class _ChunksJob:
    """Plain text files, cut into chunks that the workers read in place."""

    def __init__(self, chunks: Iterable[Chunk], max_chunks: int):
        self.chunks = chunks
        self.max_chunks = max_chunks

    def run(self, encoder, fd, settings, output, num_workers, progress, total_bytes) -> _Encoded:
        num_workers = max(1, min(num_workers, self.max_chunks))
        seen: list[Chunk] = []
        writer = ChunkWriter(encoder, fd, settings, name=output)
        chunks = (seen.append(chunk) or chunk for chunk in self.chunks)
        with progress_bar(progress, total_bytes, "encoding", unit="B") as bar, \
                (encoder.sharing_cache() if num_workers > 1 else contextlib.nullcontext()), \
                contextlib.closing(map_ordered(lambda item: writer.encode(*item), enumerate(chunks),
                                               num_workers)) as results:
            n_tokens, document_starts, digests = _collect(results, writer, bar)
        return _Encoded(n_tokens, document_starts, digests, seen, sum(chunk.n_bytes for chunk in seen),
                        num_workers)


class _RecordsJob:
    """Sources read as a stream (``bpe.corpus.records``), or Python ``texts``: read on
    this thread, parsed and encoded by the workers (``bpe.corpus.document_writer``)."""

    def __init__(self, sources: Optional[Sequence[Source]], text_field: str, texts=None):
        self.sources = sources
        self.text_field = text_field
        self.texts = texts

    def run(self, encoder, fd, settings, output, num_workers, progress, total_bytes) -> _Encoded:
        file_digests: list = []
        if self.sources is None:
            found = text_units(self.texts, self.text_field)
        else:
            separator = next((name for name, value in encoder.special_tokens.items()
                              if value == settings.separator_id), None)
            found = units(self.sources, self.text_field, settings.errors, list(encoder.special_tokens),
                          separator, encoder.pattern, file_digests)
        writer = DocumentEncoder(encoder, settings)
        problems = Problems()
        digests: list[str] = []
        with progress_bar(progress, None, "encoding", unit="char") as bar, \
                (encoder.sharing_cache() if num_workers > 1 else contextlib.nullcontext()), \
                contextlib.closing(map_ordered(writer.encode, found, num_workers)) as results:
            n_tokens, document_starts, n_bytes = collect(results, writer, fd, output, bar, problems, digests)
        if self.sources is None:
            return _Encoded(n_tokens, document_starts, digests, [], n_bytes, num_workers, str(problems))
        ranges = [Chunk(source.path, 0, os.path.getsize(source.path)) for source in self.sources]
        # bytes_in: the text's, as a plain file's are, not the files' on disk
        # (JSON's syntax and other fields, or a compressed size).
        return _Encoded(n_tokens, document_starts, [digest.sha256.hexdigest() for digest in file_digests],
                        ranges, n_bytes, num_workers, str(problems))


def _check_unchanged(paths, statuses) -> None:
    """Fail, naming the input, if one changed while it was being encoded."""
    for path, status in zip(paths, statuses):
        now = os.stat(path)
        if (now.st_size, now.st_mtime_ns, now.st_ino) != (status.st_size, status.st_mtime_ns, status.st_ino):
            raise CorpusEncodeError(f"{path}: changed while being encoded ({status.st_size} bytes "
                                    f"when the run started, {now.st_size} now); nothing was written")


def _collect(results, writer: ChunkWriter, bar):
    """The token count, document starts and digests from ``((index, chunk), result)``
    pairs in chunk order; ids a worker could not write are written on the way."""
    n_tokens = 0
    document_starts = []
    digests = []
    for (_, chunk), result in results:
        if chunk.start == 0:                       # a file's start is a document's start
            document_starts.append(np.array([n_tokens], dtype=np.uint64))
        writer.place(result, n_tokens)
        document_starts.append(result.document_starts + np.uint64(n_tokens))
        n_tokens += result.n_tokens
        digests.append(result.digest)
        bar.update(chunk.n_bytes)
    starts = np.sort(np.concatenate(document_starts)) if document_starts else np.empty(0, np.uint64)
    # A separator at a file's end, then a new file: one start twice. (Not
    # np.unique: its first call imports numpy.ma, 0.03 s of a fresh process.)
    starts = starts[np.concatenate(([True], starts[1:] != starts[:-1]))] if len(starts) else starts
    return n_tokens, starts[starts < n_tokens] if n_tokens else starts[:0], digests
