"""Encoding whole corpora into memory-mapped token arrays.

The output is a flat array of token ids in native byte order, readable with
``np.memmap(path, dtype=..., mode="r")`` (the nanoGPT habit), beside

* ``PATH.json``: dtype, token count, n_vocab, fingerprints of the tokenizer and
  of the inputs, and the name of the document index;
* ``PATH.docs.npy``: a uint64 array of the token offsets where documents start
  (after each occurrence of the separator, the tokenizer's first special token,
  and at the start of each file).

Files are cut into chunks by the training rule (``bpe.chunking``, snapping to the
separator); worker processes encode chunks and write each chunk's ids straight
into a temporary file at its offset (see ``ChunkEncoder``), renamed only when
everything succeeded. The ids equal ``tok.encode`` of each file's text, for any
number of workers.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import hashlib
import json
import os
import pickle
import shutil
import signal
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from typing import Optional

import numpy as np

from bpe.chunking import iter_chunks
from bpe.pretokens import _progress_bar, _valid_utf8, check_errors, resolve_workers

#: Chunks have a fixed size (not one derived from the worker count), so the input
#: fingerprint, built from chunk digests, is the same for any number of workers.
CHUNK_BYTES = 2 << 20
#: With num_workers=None, one worker process per this many bytes of input, up to
#: the cores. Starting a second worker costs ~0.4 s, in which one encodes ~30 MB:
#: on code, 2 workers broke even with 1 at 32-64 MB (0.49 s against 0.52 at 32
#: MB, 0.95 against 0.91 at 64) and won at 128 MB (1.89 s against 1.43).
BYTES_PER_WORKER = 32 << 20
FORMAT_NAME = "bpe-token-array"
FORMAT_VERSION = 2   # 2: inputs_fingerprint from sha256 chunk digests (was BLAKE2b)


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

#: ``counts[k]`` while chunk k's token count is not yet known; then its count.
UNKNOWN = -1
#: ``counts[k]`` once encoding chunk k failed: whoever waits on it gives up.
FAILED = -2
#: How long a worker sleeps between looks at the counts of earlier chunks.
POLL_SECONDS = 0.0002
#: How long a worker waits for them before it sets the chunk's ids aside instead.
SPILL_AFTER_SECONDS = 0.002


class ChunkFailed(RuntimeError):
    """An earlier chunk failed, so this one has no place in the output; the
    caller reports the earlier chunk's own error."""


class ChunkEncoder:
    """Encodes chunks and writes their ids straight into the output file.

    Chunk k's ids belong at the sum of the token counts of chunks 0..k-1.
    ``counts`` (shared between processes) holds each chunk's count once known,
    so after encoding chunk k a process publishes its count, waits until every
    earlier count is known, and writes at that offset: nothing is copied
    twice, and nothing is joined at the end. Chunks are handed out in order,
    so the earliest unfinished chunk never waits: no deadlock.

    Waiting is idle time, though: 2 workers waited 0.2-0.6 s of a 9 s run, in a
    few chunks finished just before the other worker's earlier one. So after
    ``spill_after`` seconds a worker writes the ids to a file of their own
    (``spill_path``), moves on, and the parent, which collects results in
    order and so knows the offset, copies them into place (``place_spilled``).

    Buffers are allocated once and reused: fresh buffers for each 2 MiB chunk
    cost a page fault per 4 KiB. With ``trim``, what the chunk freed besides is
    handed back to the OS after each chunk (worth it in a worker process, not
    in the caller's own): glibc otherwise keeps ~20 MiB more per worker.
    """

    def __init__(self, encoding, output_path: str, counts, dtype: np.dtype, allowed, errors: str,
                 separator_id: Optional[int], spill_after: float, trim: bool = False):
        self.encoding = encoding
        self.output_path = output_path
        self.spill_after = spill_after
        self.malloc_trim = _find_malloc_trim() if trim else None
        self.counts = np.frombuffer(counts, dtype=np.int64)   # a shared RawArray, or an array
        self.dtype = dtype
        self.allowed = allowed
        self.errors = errors
        self.separator_id = separator_id
        self.fd = os.open(output_path, os.O_WRONLY)
        self.parent_pid = os.getppid()
        self.known = 0             # counts[:known] are all known ...
        self.known_tokens = 0      # ... and sum to this
        self.raw = np.empty(0, dtype=np.uint8)
        self.ids = np.empty(0, dtype=np.uint32)
        self.narrow = np.empty(0, dtype=dtype)
        self.is_separator = np.empty(0, dtype=bool)

    def close(self) -> None:
        os.close(self.fd)

    def _reserve(self, n_bytes: int) -> None:
        """Buffers for a chunk of ``n_bytes``: it has at most as many ids as bytes."""
        if len(self.raw) < n_bytes:
            self.raw = np.empty(n_bytes, dtype=np.uint8)
            self.ids = np.empty(n_bytes, dtype=np.uint32)
            self.narrow = np.empty(n_bytes, dtype=self.dtype)
            self.is_separator = np.empty(n_bytes, dtype=bool)

    def encode(self, index: int, chunk) -> tuple[int, int, np.ndarray, str, bool]:
        """Encode chunk ``index`` into place; returns its index, token count, the local
        offsets where documents start after a separator, the chunk's digest, and
        whether its ids were spilled (left at ``spill_path`` for the caller to place)."""
        try:
            return self._encode(index, chunk)
        except BaseException:
            if self.counts[index] == UNKNOWN:
                self.counts[index] = FAILED
            raise
        finally:
            if self.malloc_trim is not None:
                self.malloc_trim(0)

    def _encode(self, index: int, chunk) -> tuple[int, int, np.ndarray, str, bool]:
        self._reserve(chunk.n_bytes)
        raw = memoryview(self.raw)[:chunk.n_bytes]
        with open(chunk.path, "rb") as file:
            file.seek(chunk.start)
            if file.readinto(raw) != chunk.n_bytes:
                raise CorpusEncodeError(f"{chunk.path}: changed while being encoded (bytes "
                                        f"{chunk.start}-{chunk.end} could not be read)")
        digest = hashlib.sha256(raw).hexdigest()
        data = _valid_utf8(raw, chunk.path, chunk.start, self.errors)
        self._reserve(len(data))   # errors="replace" may have made the text longer
        ids = self.encoding.encode_utf8(data, self.allowed, self.ids)
        n_tokens = len(ids)
        self.counts[index] = n_tokens
        if self.dtype != np.uint32:
            narrow = self.narrow[:n_tokens]
            np.copyto(narrow, ids, casting="unsafe")   # ids < n_vocab: the dtype was checked to hold them
            ids = narrow
        offset = self._offset(index)
        spilled = offset is None
        if spilled:
            with open(spill_path(self.output_path, index), "wb") as spill:
                spill.write(memoryview(ids).cast("B"))
        else:
            _pwrite_all(self.fd, memoryview(ids).cast("B"), offset * self.dtype.itemsize)
        if self.separator_id is None:
            return index, n_tokens, np.empty(0, dtype=np.uint64), digest, spilled
        is_separator = np.equal(ids, self.separator_id, out=self.is_separator[:n_tokens])
        return index, n_tokens, (np.flatnonzero(is_separator) + 1).astype(np.uint64), digest, spilled

    def _offset(self, index: int) -> Optional[int]:
        """The token offset of chunk ``index`` once every earlier count is known;
        None if that takes more than ``spill_after`` seconds."""
        polls = 0
        give_up = None
        while self.known < index:
            count = int(self.counts[self.known])
            if count >= 0:
                self.known_tokens += count
                self.known += 1
                continue
            if count == FAILED:
                raise ChunkFailed(f"chunk {self.known} failed")
            if give_up is None:
                give_up = time.monotonic() + self.spill_after
            elif time.monotonic() >= give_up:
                return None
            polls += 1
            if polls % 5000 == 0 and os.getppid() != self.parent_pid:
                raise ChunkFailed("the encoding process is gone")
            time.sleep(POLL_SECONDS)
        return self.known_tokens


def _pwrite_all(fd: int, view: memoryview, offset: int) -> None:
    """Write all of ``view`` at byte ``offset`` (pwrite may write less than asked)."""
    while len(view):
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def spill_path(output_path: str, index: int) -> str:
    """Where chunk ``index``'s ids wait when its offset was not known in time."""
    return f"{output_path}.chunk{index}"


def place_spilled(output_path: str, index: int, fd: int, offset: int) -> None:
    """Copy chunk ``index``'s spilled ids into the output (open as ``fd``) at byte
    ``offset``, within the kernel where it can (``copy_file_range``), and remove them."""
    path = spill_path(output_path, index)
    with open(path, "rb") as spill:
        size = os.fstat(spill.fileno()).st_size
        done = 0
        try:
            while done < size:
                copied = os.copy_file_range(spill.fileno(), fd, size - done, done, offset + done)
                if copied == 0:
                    raise CorpusEncodeError(f"{path}: ended after {done} of {size} bytes")
                done += copied
        except (AttributeError, OSError):      # no copy_file_range here: through a buffer
            _pwrite_all(fd, memoryview(spill.read())[done:], offset + done)
    os.unlink(path)


def _find_malloc_trim():
    """glibc's ``malloc_trim``, or None (another C library: nothing to trim)."""
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


_worker: Optional[ChunkEncoder] = None


def _init_worker(state_path: str, state_ready, *args) -> None:
    """Set up a worker process: the parent's Unicode tables and Encoding, read from
    ``state_path`` once the parent has written it (not sent through the spawn
    pipe, which would hold the parent until the child had imported everything),
    and its ChunkEncoder. ``state_ready`` is a semaphore the parent releases once
    per worker when the file is written, or when the run stops without it."""
    global _worker
    from bpe import unicode

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    state_ready.acquire()
    if not os.path.exists(state_path):
        return          # the run stopped before the parent wrote it: no chunk will come
    with open(state_path, "rb") as f:
        unicode.install(pickle.load(f))
        encoding = pickle.load(f)
    _worker = ChunkEncoder(encoding, *args, trim=True)


def _ready() -> None:
    """A task that only makes the pool start a worker process."""


@contextlib.contextmanager
def _starting_workers():
    """Start worker processes inside. Ctrl-C signals the whole process group, and
    the parent alone should handle it (by stopping the pool):

    * the parent defers SIGINT until the processes are started, since a child
      whose start-up data was cut off prints a traceback;
    * the children inherit SIGINT blocked (a signal mask survives fork and
      exec), then ignore it and unblock it (``_init_worker``).

    The children also get one OpenBLAS thread: numpy's OpenBLAS otherwise starts
    a thread per core that spins ~0.1 s of CPU at import in every worker, and
    encoding never calls BLAS. A setting the user made is left alone.
    """
    deferred = []
    in_main_thread = threading.current_thread() is threading.main_thread()
    if in_main_thread:   # only the main thread may set handlers (and gets KeyboardInterrupt)
        previous_handler = signal.signal(signal.SIGINT, lambda signum, frame: deferred.append(signum))
    masked = hasattr(signal, "pthread_sigmask")
    if masked:
        previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    blas = "OPENBLAS_NUM_THREADS"
    set_blas = blas not in os.environ
    if set_blas:
        os.environ[blas] = "1"
    try:
        yield
    finally:
        if set_blas:
            os.environ.pop(blas, None)
        if masked:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)
        if in_main_thread:
            signal.signal(signal.SIGINT, previous_handler)
            if deferred:
                signal.raise_signal(signal.SIGINT)


def _encode_chunk(index: int, chunk) -> tuple[int, int, np.ndarray, str, bool]:
    if _worker is None:
        raise ChunkFailed("the run stopped before this worker was given the encoding")
    return _worker.encode(index, chunk)


# --------------------------------------------------------------------------- the driver

def encode_file(tokenizer, inputs, output, *, dtype=None, num_workers: Optional[int] = None,
                allowed_special="all", errors: str = "strict", progress: bool = False,
                chunk_size: int = CHUNK_BYTES, spill_after: float = SPILL_AFTER_SECONDS) -> EncodeSummary:
    """Encode text files into a flat token array at ``output``; see the module docstring."""
    started = time.perf_counter()
    dtype = tokenizer._dtype(dtype)                      # a too-small dtype fails before any work
    paths = resolve_inputs(inputs)
    errors = check_errors(errors)
    default_workers = num_workers is None
    num_workers = resolve_workers(num_workers)
    output = os.fspath(output)
    allowed, _ = tokenizer._special_policy(allowed_special, ())   # unknown names fail early too
    specials = list(tokenizer.special_tokens)
    separator = specials[0] if specials and specials[0] in allowed else None
    separator_id = tokenizer.special_tokens[separator] if separator else None

    directory = os.path.dirname(os.path.abspath(output))
    os.makedirs(directory, exist_ok=True)
    work = tempfile.mkdtemp(dir=directory, prefix=".bpe-encode-")
    tmp_output = os.path.join(work, "tokens.bin")
    bar = None
    try:
        open(tmp_output, "wb").close()                   # workers write into it by offset
        sizes = [os.path.getsize(path) for path in paths]
        total_bytes = sum(sizes)                         # the chunks cover every byte
        # iter_chunks makes at most one chunk per chunk_size bytes of each file.
        max_chunks = sum(-(-size // chunk_size) for size in sizes)
        if default_workers:    # a small input is done before another process could start
            num_workers = min(num_workers, max(1, total_bytes // BYTES_PER_WORKER))
        settings = (tmp_output, dtype, allowed, errors, separator_id, spill_after)
        with _Workers(work, max_chunks, settings, num_workers) as workers:
            workers.load(tokenizer._encoding())
            bar = _progress_bar(progress, total_bytes, "encoding", unit="B")
            # Cuts are searched as chunks are handed out: encoding starts at once.
            chunks = iter_chunks(paths, chunk_size, specials, tokenizer.pattern, snap_token=separator or "")
            n_tokens, document_starts, digests = _collect(workers.encode(chunks), bar, tmp_output,
                                                          dtype.itemsize)
        if os.path.getsize(tmp_output) != n_tokens * dtype.itemsize:
            raise CorpusEncodeError(f"{tmp_output}: holds {os.path.getsize(tmp_output)} bytes, "
                                    f"expected {n_tokens} ids of {dtype.itemsize} bytes")
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
        if bar is not None:
            bar.close()
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return EncodeSummary(files=paths, bytes_in=total_bytes, tokens_out=n_tokens,
                         documents=len(document_starts), seconds=time.perf_counter() - started,
                         output=output, metadata=output + ".json",
                         document_index=output + ".docs.npy", dtype=dtype.name,
                         workers=workers.n_processes)


class _Workers:
    """Where chunks are encoded: this process for one worker (or one chunk),
    else a pool of spawned processes. They are started first, and are given the
    Encoding once it is built (``load``): building it and starting a Python
    process with numpy and bpe both take ~0.3 s, and they overlap."""

    def __init__(self, work: str, max_chunks: int, settings: tuple, num_workers: int):
        self.work = work
        self.max_chunks = max_chunks
        self.settings = settings
        self.n_processes = min(num_workers, max_chunks)
        self.local = self.pool = None

    def __enter__(self) -> "_Workers":
        if self.n_processes <= 1:
            self.counts = np.full(self.max_chunks, UNKNOWN, dtype=np.int64)
            return self
        context = get_context("spawn")
        self.counts = context.RawArray("q", self.max_chunks)
        np.frombuffer(self.counts, dtype=np.int64)[:] = UNKNOWN
        self.state_path = os.path.join(self.work, "encoding.pickle")
        # A semaphore, not an Event: Event.set waits for every waiter to wake, and
        # hangs for good when a waiting worker has been killed.
        self.state_ready = context.Semaphore(0)
        try:
            # Spawned, not forked: a worker holds only the Encoding's flat arrays,
            # not a copy of everything the parent process has in memory.
            with _starting_workers():
                self.pool = ProcessPoolExecutor(
                    self.n_processes, mp_context=context, initializer=_init_worker,
                    initargs=(self.state_path, self.state_ready, self.settings[0], self.counts,
                              *self.settings[1:]))
                self._start_processes()
        except BaseException:    # Ctrl-C is delivered as _starting_workers unblocks it
            self.__exit__(BaseException)
            raise
        return self

    def _start_processes(self) -> None:
        """Start every worker process now, before the pool's manager thread.

        Left to itself, the pool starts a process per task submitted, while its
        manager thread runs: a worker that dies as the next one starts then races
        with that thread (CPython 3.11: "dictionary changed size during iteration"
        printed from the thread, "handle is closed" raised here). The pool's own
        ``_launch_processes`` starts them all up front, as it does for fork; where
        it is missing, tasks that do nothing make the pool start them.
        """
        launch = getattr(self.pool, "_launch_processes", None)
        if launch is not None and getattr(self.pool, "_executor_manager_thread", None) is None:
            launch()
            return
        for _ in range(self.n_processes):
            try:
                self._submit(_ready)
            except BrokenProcessPool:
                return   # reported, naming the input, when the first chunk is submitted

    def _submit(self, function, *args):
        """``pool.submit``. A pool that breaks while it starts a worker can fail a
        submit with ValueError or OSError ("handle is closed": CPython 3.11 closes
        the pool's pipes under it) rather than BrokenProcessPool; once the pool
        says it is broken, they mean the same here."""
        try:
            return self.pool.submit(function, *args)
        except (ValueError, OSError) as e:
            if getattr(self.pool, "_broken", False):
                raise BrokenProcessPool(f"the process pool broke: {e}") from e
            raise

    def load(self, encoding) -> None:
        """Hand the workers the Encoding and the Unicode tables, through a file."""
        if self.pool is None:
            self.local = ChunkEncoder(encoding, self.settings[0], self.counts, *self.settings[1:])
            return
        from bpe import unicode

        with open(self.state_path + ".tmp", "wb") as f:
            pickle.dump(unicode.tables(), f, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.dump(encoding, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(self.state_path + ".tmp", self.state_path)
        self._release_workers()

    def _release_workers(self) -> None:
        """Let every worker past its wait for the state (a release never blocks;
        spare ones, if this runs twice, are never taken)."""
        for _ in range(self.n_processes):
            self.state_ready.release()

    def __exit__(self, exc_type=None, *exc_rest) -> None:
        if self.pool is not None:
            # Workers still waiting for the state find no file and stop, rather than wait forever.
            self._release_workers()
            if exc_type is not None:
                # The run failed: what the workers are encoding is discarded. Stop them
                # rather than wait: a pool that broke while it was starting a worker
                # (one killed at start-up) may never stop that worker itself, and
                # shutdown would wait for it forever (CPython 3.11 terminates only the
                # workers it knew of when it broke). ``_processes`` is the pool's own
                # record of its workers; 3.14 adds ``terminate_workers`` for this.
                for process in list(getattr(self.pool, "_processes", {}).values()):
                    process.terminate()
            self.pool.shutdown(wait=True, cancel_futures=True)
        elif self.local is not None:
            self.local.close()

    def encode(self, chunks):
        """Yield ``(chunk, result)`` for each chunk of the iterable, in order."""
        numbered = enumerate(chunks)
        if self.local is not None:
            for index, chunk in numbered:
                self._check_room(index)
                yield chunk, self.local.encode(index, chunk)
            return
        # A few chunks in flight: enough to keep every worker busy while results
        # are collected in order.
        window = 2 * self.n_processes
        pending = collections.deque()
        broken = False
        while True:
            while len(pending) < window and not broken:
                index, chunk = next(numbered, (None, None))
                if chunk is None:
                    break
                self._check_room(index)
                try:
                    pending.append((chunk, self._submit(_encode_chunk, index, chunk)))
                except BrokenProcessPool:
                    if not pending:    # no chunk in flight: e.g. workers that could not start
                        raise CorpusEncodeError(
                            f"a worker process died before encoding {chunk.path} (bytes {chunk.start}-"
                            f"{chunk.end}; its error, if any, is printed above); no output was written"
                        ) from None
                    # A worker died with chunks in flight: the earliest of them reports it below,
                    # whether the pool noticed before this submit or only at that result.
                    broken = True
            if not pending:
                return
            chunk, future = pending.popleft()
            try:
                yield chunk, future.result()
            except BrokenProcessPool:
                raise CorpusEncodeError(
                    f"a worker process died while encoding {chunk.path} (bytes "
                    f"{chunk.start}-{chunk.end}); no output was written") from None

    def _check_room(self, index: int) -> None:
        if index >= self.max_chunks:     # the shared counts have room for max_chunks
            raise RuntimeError(f"iter_chunks made more chunks than its bound {self.max_chunks}")


def _collect(results, bar, output_path: str, itemsize: int):
    """The token count, document starts and digests from ``(chunk, result)`` pairs, in
    order; spilled ids are placed into ``output_path`` on the way."""
    n_tokens = 0
    document_starts = []
    digests = []
    previous_path = None
    fd = os.open(output_path, os.O_WRONLY)
    try:
        for chunk, (index, count, starts, digest, spilled) in results:
            if chunk.path != previous_path:            # a file's start is a document's start
                document_starts.append(np.array([n_tokens], dtype=np.uint64))
                previous_path = chunk.path
            if spilled:
                place_spilled(output_path, index, fd, n_tokens * itemsize)
            document_starts.append(starts + np.uint64(n_tokens))
            n_tokens += count
            digests.append(digest)
            bar.update(chunk.n_bytes)
    finally:
        os.close(fd)
    starts = np.concatenate(document_starts) if document_starts else np.empty(0, np.uint64)
    starts = np.unique(starts)                       # a separator at a file's end, then a new file
    return n_tokens, starts[starts < n_tokens] if n_tokens else starts[:0], digests


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
