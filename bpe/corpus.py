"""Encoding whole corpora into memory-mapped token arrays.

The output is a flat array of token ids in native byte order, readable with
``np.memmap(path, dtype=..., mode="r")`` (the nanoGPT habit), beside

* ``PATH.json``: dtype, token count, n_vocab, fingerprints of the tokenizer and
  of the inputs, and the name of the document index;
* ``PATH.docs.npy``: a uint64 array of the token offsets where documents start
  (after each occurrence of the separator, the tokenizer's first special token,
  and at the start of each file).

Files are cut into chunks by the training rule (``bpe.chunking``, snapping to the
separator); worker processes encode chunks into part files that the parent joins
in order into a temporary file, renamed only when everything succeeded. The ids
equal ``tok.encode`` of each file's text, for any number of workers.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from typing import Optional

import numpy as np

from bpe.chunking import plan_chunks
from bpe.pretokens import _progress_bar, _valid_utf8, check_errors, resolve_workers

#: Chunks have a fixed size (not one derived from the worker count), so the input
#: fingerprint, built from chunk digests, is the same for any number of workers.
CHUNK_BYTES = 2 << 20
FORMAT_NAME = "bpe-token-array"
FORMAT_VERSION = 1


class CorpusEncodeError(RuntimeError):
    """Encoding a corpus failed; names the input at fault. No output was left behind."""


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

    @property
    def bytes_per_token(self) -> float:
        return self.bytes_in / self.tokens_out if self.tokens_out else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.bytes_in / 1e6 / self.seconds if self.seconds else 0.0

    def __str__(self) -> str:
        return (f"{len(self.files)} file(s), {self.bytes_in / 1e6:.1f} MB -> {self.tokens_out} tokens "
                f"({self.dtype}), {self.documents} documents, {self.bytes_per_token:.2f} bytes/token, "
                f"{self.seconds:.2f} s, {self.mb_per_s:.1f} MB/s -> {self.output}")


def resolve_inputs(inputs) -> list[str]:
    """A path, a list of paths, or a directory (its ``*.txt`` files, sorted)."""
    if isinstance(inputs, (str, bytes, os.PathLike)):
        inputs = [inputs]
    paths = []
    for item in inputs:
        path = os.fsdecode(item)
        if os.path.isdir(path):
            found = sorted(os.path.join(path, name) for name in os.listdir(path) if name.endswith(".txt"))
            if not found:
                raise FileNotFoundError(f"{path}: directory has no *.txt files")
            paths.extend(found)
        elif os.path.exists(path):
            paths.append(path)
        else:
            raise FileNotFoundError(f"{path}: no such file")
    if not paths:
        raise ValueError("no input files given")
    return paths


# --------------------------------------------------------------------------- workers

_worker_encoding = None
_malloc_trim = None


def _init_worker(encoding, trim: bool = True) -> None:
    """Set up a process to encode chunks; ``trim``: return freed memory to the OS
    after each chunk (worth it in a worker process, not in the caller's own)."""
    global _worker_encoding, _malloc_trim
    _worker_encoding = encoding
    _malloc_trim = None
    if not trim:
        return
    try:
        import ctypes

        _malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):   # not glibc: nothing to trim
        _malloc_trim = None
    if _malloc_trim is not None:
        _malloc_trim(0)   # what building the Unicode tables and the kernel left behind


def _encode_chunk(task) -> tuple[int, int, np.ndarray, str]:
    """Encode one chunk into its part file; returns its token count, the local
    offsets where documents start after a separator, and the chunk's digest."""
    index, chunk, part_path, dtype, allowed_special, errors, separator_id = task
    with open(chunk.path, "rb") as file:
        file.seek(chunk.start)
        raw = file.read(chunk.n_bytes)
    digest = hashlib.blake2b(raw, digest_size=16).hexdigest()
    data = _valid_utf8(raw, chunk.path, chunk.start, errors)
    ids = _worker_encoding.encode_utf8(data, allowed_special).astype(dtype, copy=False)
    with open(part_path, "wb") as part:
        ids.tofile(part)
    starts = (np.flatnonzero(ids == separator_id) + 1) if separator_id is not None else np.empty(0)
    n_tokens = len(ids)
    del raw, data, ids
    if _malloc_trim is not None:
        # glibc keeps freed chunk-sized buffers in the heap (its mmap threshold
        # rises after the first large free); hand them back so RSS stays flat.
        _malloc_trim(0)
    return index, n_tokens, starts.astype(np.uint64), digest


# --------------------------------------------------------------------------- the driver

def encode_file(tokenizer, inputs, output, *, dtype=None, num_workers: Optional[int] = None,
                allowed_special="all", errors: str = "strict", progress: bool = False,
                chunk_size: int = CHUNK_BYTES) -> EncodeSummary:
    """Encode text files into a flat token array at ``output``; see the module docstring."""
    started = time.perf_counter()
    dtype = tokenizer._dtype(dtype)                      # a too-small dtype fails before any work
    paths = resolve_inputs(inputs)
    errors = check_errors(errors)
    num_workers = resolve_workers(num_workers)
    output = os.fspath(output)
    allowed = sorted(tokenizer.special_tokens) if allowed_special == "all" else sorted(allowed_special)
    tokenizer._allowed(allowed, (), "")                  # unknown special tokens fail early too
    specials = list(tokenizer.special_tokens)
    separator = specials[0] if specials and specials[0] in allowed else None
    separator_id = tokenizer.special_tokens[separator] if separator else None
    chunks = plan_chunks(paths, chunk_size, specials, tokenizer.pattern, snap_token=separator or "")
    file_first_chunk = {}
    for index, chunk in enumerate(chunks):
        file_first_chunk.setdefault(chunk.path, index)

    directory = os.path.dirname(os.path.abspath(output))
    os.makedirs(directory, exist_ok=True)
    work = tempfile.mkdtemp(dir=directory, prefix=".bpe-encode-")
    tmp_output = os.path.join(work, "tokens.bin")
    total_bytes = sum(chunk.n_bytes for chunk in chunks)
    bar = _progress_bar(progress, total_bytes, "encoding", unit="B")
    try:
        tasks = [(index, chunk, os.path.join(work, f"part-{index}.bin"), dtype, allowed, errors,
                  separator_id) for index, chunk in enumerate(chunks)]
        n_tokens, document_starts, digests = _run(tokenizer, tasks, num_workers, tmp_output, bar,
                                                  file_first_chunk)
        bar.close()
        index_path, metadata_path = output + ".docs.npy", output + ".json"
        tmp_index = os.path.join(work, "docs.npy")
        np.save(tmp_index, document_starts)
        metadata = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "read_with": f"numpy.memmap(path, dtype='{dtype.name}', mode='r')",
            "dtype": dtype.name,
            "byte_order": "little" if np.little_endian else "big",
            "n_tokens": n_tokens,
            "n_documents": len(document_starts),
            "n_vocab": tokenizer.n_vocab,
            "document_separator": separator,
            "document_index": os.path.basename(index_path),
            "tokenizer_fingerprint": tokenizer_fingerprint(tokenizer),
            "inputs": [{"path": os.path.abspath(path), "bytes": os.path.getsize(path)} for path in paths],
            "inputs_fingerprint": hashlib.sha256("".join(digests).encode()).hexdigest(),
        }
        tmp_metadata = os.path.join(work, "metadata.json")
        with open(tmp_metadata, "w", encoding="utf-8") as f:
            json.dump(metadata, f, indent=1)
        # The token array is renamed last: its presence means the run completed.
        os.replace(tmp_index, index_path)
        os.replace(tmp_metadata, metadata_path)
        os.replace(tmp_output, output)
    except BaseException:
        bar.close()
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return EncodeSummary(files=paths, bytes_in=total_bytes, tokens_out=n_tokens,
                         documents=len(document_starts), seconds=time.perf_counter() - started,
                         output=output, metadata=output + ".json",
                         document_index=output + ".docs.npy", dtype=dtype.name)


def _run(tokenizer, tasks, num_workers, tmp_output, bar, file_first_chunk):
    """Encode all chunks and join their parts in order; returns counts, doc starts, digests."""
    n_tokens = 0
    document_starts = []
    digests = []
    first_chunks = set(file_first_chunk.values())

    def append(result, task):
        nonlocal n_tokens
        index, count, starts, digest = result
        part_path, chunk = task[2], task[1]
        if index in first_chunks:
            document_starts.append(np.array([n_tokens], dtype=np.uint64))
        document_starts.append(starts + np.uint64(n_tokens))
        _append_file(part_path, out)
        os.unlink(part_path)
        n_tokens += count
        digests.append(digest)
        bar.update(chunk.n_bytes)

    with open(tmp_output, "wb") as out:
        encoding = tokenizer._encoding()
        if num_workers == 1 or len(tasks) <= 1:
            _init_worker(encoding, trim=False)
            for task in tasks:
                append(_encode_chunk(task), task)
        else:
            # Spawned, not forked: a worker holds only the pickled Encoding (flat
            # arrays), not a copy of everything the parent process has in memory.
            with ProcessPoolExecutor(min(num_workers, len(tasks)), mp_context=get_context("spawn"),
                                     initializer=_init_worker, initargs=(encoding,)) as pool:
                # At most a few chunks in flight: parts on disk stay bounded too.
                window = 2 * num_workers
                pending = {}
                next_task = 0
                for position in range(len(tasks)):
                    while next_task < len(tasks) and next_task < position + window:
                        pending[next_task] = pool.submit(_encode_chunk, tasks[next_task])
                        next_task += 1
                    task = tasks[position]
                    try:
                        result = pending.pop(position).result()
                    except BrokenProcessPool:
                        raise CorpusEncodeError(
                            f"a worker process died while encoding {task[1].path} (bytes "
                            f"{task[1].start}-{task[1].end}); no output was written") from None
                    append(result, task)
    starts = np.concatenate(document_starts) if document_starts else np.empty(0, np.uint64)
    starts = np.unique(starts)                       # a separator at a file's end, then a new file
    return n_tokens, starts[starts < n_tokens] if n_tokens else starts[:0], digests


def _append_file(path: str, out) -> None:
    """Append the file at ``path`` to the open file ``out``, in the kernel where possible."""
    out.flush()
    with open(path, "rb") as part:
        remaining = os.fstat(part.fileno()).st_size
        try:
            while remaining > 0:
                copied = os.copy_file_range(part.fileno(), out.fileno(), remaining)
                if copied == 0:
                    break
                remaining -= copied
        except (AttributeError, OSError):
            pass
        if remaining > 0:
            part.seek(os.fstat(part.fileno()).st_size - remaining)
            shutil.copyfileobj(part, out, 1 << 20)
            out.flush()


def tokenizer_fingerprint(tokenizer) -> str:
    """sha256 of everything that decides the ids: pattern, special tokens, vocab, merges."""
    digest = hashlib.sha256()
    digest.update(json.dumps([tokenizer.pattern, sorted(tokenizer.special_tokens.items())]).encode())
    for token_id, token in sorted(tokenizer.vocab.items()):
        digest.update(token_id.to_bytes(4, "little") + len(token).to_bytes(4, "little") + token)
    for left, right in tokenizer.merges:
        digest.update(len(left).to_bytes(4, "little") + left + right)
    return digest.hexdigest()


def read_metadata(output) -> dict:
    """The sidecar of a token array written by ``encode_file``."""
    path = os.fspath(output) + ".json"
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file (is {output} a bpe token array?)")
    with open(path, encoding="utf-8") as f:
        metadata = json.load(f)
    if metadata.get("format") != FORMAT_NAME:
        raise ValueError(f"{path}: not a {FORMAT_NAME} sidecar")
    return metadata


def open_tokens(output) -> np.memmap:
    """The token array written by ``encode_file``, memory-mapped read-only."""
    metadata = read_metadata(output)
    if metadata["n_tokens"] == 0:
        return np.empty(0, dtype=np.dtype(metadata["dtype"]))   # an empty file cannot be mapped
    return np.memmap(os.fspath(output), dtype=np.dtype(metadata["dtype"]), mode="r",
                     shape=(metadata["n_tokens"],))
