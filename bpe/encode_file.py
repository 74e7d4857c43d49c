"""``encode_file``: whole corpora into memory-mapped token arrays (``bpe.token_array``).

Files are cut into chunks by the training rule (``bpe.chunking``, snapping to
the separator); worker threads encode chunks and write each chunk's ids
straight into a temporary file at its offset (``bpe.chunk_writer``), which is
renamed, with its sidecars, only when everything succeeded. The ids equal
``tok.encode`` of each file's text, for any number of workers.

The tokenizer is passed in, not imported: this module sits below
``bpe.tokenizer``, which calls it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import shutil
import tempfile
import time
from typing import Optional

import numpy as np

from bpe.chunk_writer import ChunkSettings, ChunkWriter
from bpe.chunking import iter_chunks
from bpe.errors import CorpusEncodeError
from bpe.files import check_errors, check_regular_files, refuse_overwriting_inputs, resolve_inputs
from bpe.progress import progress_bar
from bpe.specials import special_policy
from bpe.token_array import (OutputLock, build_metadata, commit, index_path, metadata_path,
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
                chunk_size: int = CHUNK_BYTES) -> EncodeSummary:
    """Encode text files into a flat token array at ``output``; see the module docstring.

    ``num_workers``: threads (None: one per core, at most one per chunk).
    """
    started = time.perf_counter()
    dtype = tokenizer.token_dtype(dtype)                 # a too-small dtype fails before any work
    if not dtype.isnative:
        raise ValueError(f"dtype {dtype.str} is not in this machine's byte order; token arrays hold "
                         f"native ids (pass {dtype.newbyteorder('=').name})")
    paths = resolve_inputs(inputs)
    errors = check_errors(errors)
    num_workers = resolve_workers(num_workers)
    output = os.fspath(output)
    if os.path.isdir(output) or output.endswith(os.sep):
        raise IsADirectoryError(f"{output}: is a directory; give the path of the token array to write")
    refuse_overwriting_inputs([output, metadata_path(output), index_path(output)], paths)
    statuses = check_regular_files(paths)
    allowed, _ = special_policy(tokenizer.special_tokens, allowed_special, ())   # unknown names fail early
    specials = list(tokenizer.special_tokens)
    separator = specials[0] if specials and specials[0] in allowed else None
    separator_id = tokenizer.special_tokens[separator] if separator else None
    settings = ChunkSettings(dtype, allowed, errors, separator_id)

    directory = os.path.dirname(os.path.abspath(output))
    os.makedirs(directory, exist_ok=True)
    with OutputLock(output):
        work = tempfile.mkdtemp(dir=directory, prefix=temporary_prefix(output))
        try:
            n_tokens, document_starts, digests, num_workers = _encode_into(
                tokenizer, paths, output, os.path.join(work, "tokens.bin"), settings, specials,
                separator, num_workers, chunk_size, progress)
            _check_unchanged(paths, statuses)
            metadata = build_metadata(
                dtype=dtype, n_tokens=n_tokens, n_documents=len(document_starts),
                n_vocab=tokenizer.n_vocab, separator=separator, output=output,
                tokenizer_fingerprint=tokenizer.fingerprint(),
                inputs=[{"path": os.path.abspath(path), "bytes": status.st_size}
                        for path, status in zip(paths, statuses)],
                inputs_fingerprint=hashlib.sha256("".join(digests).encode()).hexdigest())
            commit(output, work, os.path.join(work, "tokens.bin"), metadata, document_starts)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return EncodeSummary(files=paths, bytes_in=sum(status.st_size for status in statuses),
                         tokens_out=n_tokens, documents=len(document_starts),
                         seconds=time.perf_counter() - started, output=output,
                         metadata=metadata_path(output), document_index=index_path(output),
                         dtype=dtype.name, workers=num_workers)


def _encode_into(tokenizer, paths, output, tmp_output, settings, specials, separator, num_workers,
                 chunk_size, progress):
    """Encode every chunk into ``tmp_output``; returns the token count, document
    starts, chunk digests and the number of workers that ran."""
    sizes = [os.path.getsize(path) for path in paths]
    # iter_chunks makes at most one chunk per chunk_size bytes of each file.
    max_chunks = sum(-(-size // chunk_size) for size in sizes)
    num_workers = max(1, min(num_workers, max_chunks))
    encoder = tokenizer.encoder
    fd = os.open(tmp_output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)    # the umask applies
    try:
        writer = ChunkWriter(encoder, fd, settings, name=output)
        # Cuts are searched as chunks are handed out: encoding starts at once.
        chunks = enumerate(iter_chunks(paths, chunk_size, specials, tokenizer.pattern,
                                       snap_token=separator or ""))
        with progress_bar(progress, sum(sizes), "encoding", unit="B") as bar, \
                contextlib.closing(map_ordered(lambda item: writer.encode(*item), chunks,
                                               num_workers)) as results:
            n_tokens, document_starts, digests = _collect(results, writer, bar)
    finally:
        os.close(fd)
    itemsize = settings.dtype.itemsize
    if os.path.getsize(tmp_output) != n_tokens * itemsize:
        raise CorpusEncodeError(f"{output}: the ids written hold {os.path.getsize(tmp_output)} "
                                f"bytes, expected {n_tokens} ids of {itemsize} bytes")
    return n_tokens, document_starts, digests, num_workers


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
    previous_path = None
    for (_, chunk), result in results:
        if chunk.path != previous_path:            # a file's start is a document's start
            document_starts.append(np.array([n_tokens], dtype=np.uint64))
            previous_path = chunk.path
        writer.place(result, n_tokens)
        document_starts.append(result.document_starts + np.uint64(n_tokens))
        n_tokens += result.n_tokens
        digests.append(result.digest)
        bar.update(chunk.n_bytes)
    starts = np.concatenate(document_starts) if document_starts else np.empty(0, np.uint64)
    starts = np.unique(starts)                       # a separator at a file's end, then a new file
    return n_tokens, starts[starts < n_tokens] if n_tokens else starts[:0], digests
