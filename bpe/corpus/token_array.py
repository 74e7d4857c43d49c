"""The token array format: a flat file of ids beside two sidecars, committed as one unit.

The array holds token ids in native byte order, readable with
``np.memmap(path, dtype=..., mode="r")`` (the nanoGPT habit); beside it

* ``PATH.docs.npy``: a uint64 array of the token offsets where documents start;
* ``PATH.json``: dtype, token count, n_vocab, fingerprints of the tokenizer and
  of the inputs, and the commit record: the array's size and a digest of a
  sample of it, and the index's digest.

A run writes all three under temporary names and renames the array, then the
index, then the sidecar: the sidecar is written last and names what it
describes, so ``open_tokens`` and ``read_document_index`` can tell an array or
index from another run (a failure between the renames, two runs at once) and
refuse it rather than return the wrong ids. ``OutputLock`` keeps two runs from
writing the same output at once, and lets the next run remove what a killed
run left behind.
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
from typing import Optional
import shutil

import numpy as np

from bpe.errors import CorpusEncodeError, TokenArrayError

FORMAT_NAME = "bpe-token-array"
FORMAT_VERSION = 3   # 3: the sidecar is a commit record (array size and sample digest, index digest)
#: The array's digest covers its first and last SAMPLE_BLOCK bytes and SAMPLE_BLOCKS
#: blocks spread between: a few reads, whatever the size.
SAMPLE_BLOCK = 1 << 16
SAMPLE_BLOCKS = 64
READABLE_VERSIONS = (2, 3)   # 2 has no commit record: its arrays are read unchecked
TEMPORARY_PREFIX = ".bpe-encode-"


def metadata_path(output: str) -> str:
    return output + ".json"


def index_path(output: str) -> str:
    return output + ".docs.npy"


def temporary_prefix(output: str) -> str:
    """The name prefix of the working directories of runs writing ``output``. The
    name's length comes first, so no other output's prefix starts with this one
    (``tok`` and ``tok-val`` give ``.bpe-encode-3-tok-`` and
    ``.bpe-encode-7-tok-val-``): a run removes only its own output's."""
    name = os.path.basename(output)
    return f"{TEMPORARY_PREFIX}{len(name)}-{name}-"


def check_dtype(dtype, where: str) -> np.dtype:
    """The one rule writer and reader share: token arrays hold unsigned ids.
    (An id is never negative; a signed array read as unsigned, or the other way,
    would give other ids.) ``where`` names the file or option at fault."""
    try:
        checked = np.dtype(dtype)
    except (TypeError, ValueError):
        checked = None
    if checked is None or checked.kind != "u":
        raise TokenArrayError(f"{where}: dtype {dtype!r} is not an unsigned integer dtype; token arrays "
                              "hold uint16 or uint32 ids (read them as int64 with "
                              "np.asarray(tokens, dtype=np.int64))")
    return checked


def sample_digest(path: str) -> str:
    """sha256 of the size and of sampled blocks of the file at ``path``."""
    size = os.path.getsize(path)
    digest = hashlib.sha256(size.to_bytes(8, "little"))
    with open(path, "rb") as file:
        if size <= 2 * SAMPLE_BLOCK * (SAMPLE_BLOCKS + 2):
            digest.update(file.read())
        else:
            step = (size - SAMPLE_BLOCK) // (SAMPLE_BLOCKS + 1)
            for k in range(SAMPLE_BLOCKS + 2):
                file.seek(min(k * step, size - SAMPLE_BLOCK))
                digest.update(file.read(SAMPLE_BLOCK))
    return digest.hexdigest()


def file_digest(path: str) -> str:
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


def build_metadata(*, dtype: np.dtype, n_tokens: int, n_documents: int, n_vocab: int,
                   separator, output: str, tokenizer_fingerprint: str, inputs: list[dict],
                   inputs_fingerprint: str) -> dict:
    """The sidecar's content, less the commit record ``commit`` adds."""
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "read_with": f"numpy.memmap(path, dtype='{dtype.name}', mode='r')",
        "dtype": dtype.name,
        "byte_order": "little" if np.little_endian else "big",
        "n_tokens": n_tokens,
        "n_documents": n_documents,
        "n_vocab": n_vocab,
        "document_separator": separator,
        "document_index": os.path.basename(index_path(output)),
        "tokenizer_fingerprint": tokenizer_fingerprint,
        "inputs": inputs,
        "inputs_fingerprint": inputs_fingerprint,
    }


def commit(output: str, work: str, tmp_array: str, metadata: dict, document_starts: np.ndarray) -> None:
    """Write the sidecars into ``work`` and move them and the finished array into
    place: the array, the index, then the sidecar that names both."""
    tmp_index = os.path.join(work, "docs.npy")
    tmp_metadata = os.path.join(work, "metadata.json")
    try:
        np.save(tmp_index, document_starts)
        metadata = dict(metadata, array_bytes=os.path.getsize(tmp_array),
                        array_sample_sha256=sample_digest(tmp_array), index_sha256=file_digest(tmp_index))
        with open(tmp_metadata, "w", encoding="utf-8") as f:
            json.dump(metadata, f, indent=1)
    except OSError as e:
        raise CorpusEncodeError(f"{output}: cannot write the sidecars beside it: {e.strerror or e}") from e
    for source, destination in ((tmp_array, output), (tmp_index, index_path(output)),
                                (tmp_metadata, metadata_path(output))):
        try:
            os.replace(source, destination)
        except OSError as e:
            raise CorpusEncodeError(f"{destination}: cannot be written: {e.strerror or e}") from e


class OutputLock:
    """An exclusive lock on one output path, held while a run writes it.

    The lock file ``.NAME.lock`` sits beside the output and is removed when the
    run ends. A second run on the same output fails at once, naming it. Holding
    the lock also proves that no other run is writing that output, so working
    directories left for it by a run that was killed are removed.
    """

    def __init__(self, output: str):
        self.output = output
        directory, name = os.path.split(os.path.abspath(output))
        self.path = os.path.join(directory, f".{name}.lock")
        self.fd = -1

    def __enter__(self) -> "OutputLock":
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as e:
                # The lock file is ours to make: the error is about the output's place.
                raise CorpusEncodeError(f"{self.output}: cannot write there "
                                        f"({e.strerror or e}: {os.path.dirname(self.path)})") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(fd)
                if e.errno in (errno.EAGAIN, errno.EACCES):
                    raise CorpusEncodeError(f"{self.output}: another run is writing it now "
                                            f"(it holds {self.path})") from None
                raise
            # The holder before us may have removed the file after we opened it:
            # then our lock is on a file nobody else will find. Take it again.
            try:
                if os.stat(self.path).st_ino == os.fstat(fd).st_ino:
                    self.fd = fd
                    break
            except FileNotFoundError:
                pass
            os.close(fd)
        self._remove_stale_work()
        return self

    def _remove_stale_work(self) -> None:
        directory = os.path.dirname(os.path.abspath(self.output))
        prefix = temporary_prefix(self.output)
        for name in os.listdir(directory):
            if name.startswith(prefix):
                shutil.rmtree(os.path.join(directory, name), ignore_errors=True)

    def __exit__(self, *exc_info) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        os.close(self.fd)


def read_metadata(output) -> dict:
    """The sidecar of a token array written by ``encode_file``, checked for the
    fields readers rely on; errors name the sidecar."""
    path = metadata_path(os.fspath(output))
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file (is {output} a bpe token array?)")
    try:
        with open(path, encoding="utf-8") as f:
            metadata = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise TokenArrayError(f"{path}: not a JSON sidecar: {e}") from None
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT_NAME:
        raise TokenArrayError(f"{path}: not a {FORMAT_NAME} sidecar")
    if metadata.get("version") not in READABLE_VERSIONS:
        raise TokenArrayError(f"{path}: version {metadata.get('version')!r}; this bpe reads versions "
                              f"{', '.join(map(str, READABLE_VERSIONS))} (encode the corpus again)")
    itemsize = _itemsize(metadata, path)
    fields = [("n_tokens", int), ("n_documents", int), ("n_vocab", int)]
    if metadata["version"] >= 3:
        fields += [("array_bytes", int), ("array_sample_sha256", str), ("index_sha256", str)]
    for field, kind in fields:
        value = metadata.get(field)
        if not isinstance(value, kind) or isinstance(value, bool) or (kind is int and value < 0):
            raise TokenArrayError(f"{path}: field {field!r} is {value!r}, not a "
                                  f"{'non-negative int' if kind is int else 'string'}")
    if metadata["version"] == 2:      # written before the commit record: nothing to check it by
        metadata["array_bytes"] = metadata["n_tokens"] * itemsize
    if metadata["n_tokens"] * itemsize != metadata["array_bytes"]:
        raise TokenArrayError(f"{path}: {metadata['n_tokens']} ids of {metadata['dtype']} do not make "
                              f"{metadata['array_bytes']} bytes")
    return metadata


def _itemsize(metadata: dict, path: str) -> int:
    if not isinstance(metadata.get("dtype"), str):
        raise TokenArrayError(f"{path}: field 'dtype' is {metadata.get('dtype')!r}, not an unsigned "
                              "integer dtype")
    return check_dtype(metadata["dtype"], f"{path}: field 'dtype'").itemsize


def _check_array(output: str, metadata: dict) -> None:
    if not os.path.exists(output):
        raise FileNotFoundError(f"{output}: no such file (its sidecar {metadata_path(output)} exists)")
    size = os.path.getsize(output)
    if size != metadata["array_bytes"] or (
            metadata["version"] >= 3 and sample_digest(output) != metadata["array_sample_sha256"]):
        raise TokenArrayError(f"{output}: the array is not the one its sidecar {metadata_path(output)} "
                              "describes (a run interrupted while committing, or two runs at once); "
                              "encode the corpus again")


MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "bpe-token-shards"


def manifest_path(path) -> Optional[str]:
    """The manifest ``path`` names (a sharded output's directory, or the file), or None."""
    path = os.fspath(path)
    if os.path.isdir(path):
        return os.path.join(path, MANIFEST_NAME)
    return path if os.path.basename(path) == MANIFEST_NAME else None


def read_manifest(path) -> dict:
    """The manifest of a sharded output, checked; errors name it."""
    manifest = manifest_path(path)
    if manifest is None or not os.path.exists(manifest):
        raise FileNotFoundError(f"{manifest or path}: no such file (is {path} a finished sharded output? "
                                "bpe encode --finalize writes the manifest)")
    try:
        with open(manifest, encoding="utf-8") as f:
            document = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise TokenArrayError(f"{manifest}: not a JSON manifest: {e}") from None
    if not isinstance(document, dict) or document.get("format") != MANIFEST_FORMAT \
            or not isinstance(document.get("shards"), list):
        raise TokenArrayError(f"{manifest}: not a {MANIFEST_FORMAT} manifest")
    return document


class ShardedTokens:
    """The shards of a sharded output read as one sequence of ids (each shard
    memory-mapped and checked against its sidecar), indexed as the numpy array
    it stands for: ``len``, an int, a slice (any step), an array of ints or a
    boolean mask, and ``np.asarray`` for all of it. A slice reads only what it
    gives.

    The manifest is not trusted about the shards: each is a file inside the
    directory, checked against its own sidecar, and its dtype and length are
    the sidecar's (the manifest must agree)."""

    ndim = 1

    def __init__(self, directory: str, manifest: dict):
        self.directory = directory
        self.manifest = manifest
        where = os.path.join(directory, MANIFEST_NAME)
        self.shards = []
        for index, shard in enumerate(manifest["shards"]):
            name = shard.get("path") if isinstance(shard, dict) else None
            if not isinstance(name, str) or not name or os.path.basename(name) != name or name in (".", "..") \
                    or os.path.isabs(name):
                raise TokenArrayError(f"{where}: shard {index}'s path {name!r} is not a file name in "
                                      f"{directory} (shards stay inside their directory)")
            self.shards.append(open_tokens(os.path.join(directory, name)))
        for shard, array in zip(manifest["shards"], self.shards):
            if len(array) != shard.get("n_tokens"):
                raise TokenArrayError(f"{os.path.join(directory, shard['path'])}: {len(array)} tokens, "
                                      f"the manifest says {shard.get('n_tokens')!r}")
        dtypes = {array.dtype for array in self.shards}
        if len(dtypes) > 1:
            raise TokenArrayError(f"{where}: its shards hold ids of different dtypes "
                                  f"({', '.join(sorted(d.name for d in dtypes))})")
        self.dtype = dtypes.pop() if dtypes else check_dtype(manifest.get("dtype"), f"{where}: field 'dtype'")
        if manifest.get("dtype") != self.dtype.name:
            raise TokenArrayError(f"{where}: field 'dtype' is {manifest.get('dtype')!r}, but its shards' "
                                  f"sidecars say {self.dtype.name}")
        self.starts = np.zeros(len(self.shards) + 1, dtype=np.int64)
        np.cumsum([len(array) for array in self.shards], out=self.starts[1:])
        self.shape = (int(self.starts[-1]),)

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return (f"ShardedTokens({self.directory!r}, {len(self)} tokens of {self.dtype.name} in "
                f"{len(self.shards)} shards)")

    def __array__(self, dtype=None, copy=None):
        whole = np.concatenate(self.shards) if self.shards else np.empty(0, self.dtype)
        return whole.astype(dtype) if dtype is not None else whole

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self._slice(*index.indices(len(self)))
        if isinstance(index, (int, np.integer)) and not isinstance(index, (bool, np.bool_)):
            position = int(index) + len(self) if index < 0 else int(index)
            if not 0 <= position < len(self):
                raise IndexError(f"index {index} is out of bounds for a sequence of {len(self)} tokens")
            shard = int(np.searchsorted(self.starts, position, side="right")) - 1
            return self.shards[shard][position - self.starts[shard]]
        refused = IndexError("only integers, slices (`:`), and integer or boolean arrays are valid "
                             f"indices, not {index!r:.60}")
        if isinstance(index, (bool, np.bool_, float, np.floating, str, bytes, tuple)) or index is None:
            raise refused
        try:
            chosen = np.asarray(index)
        except (TypeError, ValueError):
            raise refused from None
        if chosen.dtype == bool:
            if chosen.shape != self.shape:
                raise IndexError(f"boolean index of shape {chosen.shape} does not match {self.shape}")
            return self._take(np.flatnonzero(chosen))
        if chosen.size == 0:
            return np.empty(chosen.shape, self.dtype)          # as numpy takes an empty list
        if chosen.dtype.kind not in "iu":
            raise refused
        positions = chosen.astype(np.int64)
        if positions.size and (positions.min() < -len(self) or positions.max() >= len(self)):
            bad = positions[(positions < -len(self)) | (positions >= len(self))][0]
            raise IndexError(f"index {bad} is out of bounds for a sequence of {len(self)} tokens")
        return self._take(np.where(positions < 0, positions + len(self), positions))

    def _slice(self, start: int, stop: int, step: int) -> np.ndarray:
        """``self[start:stop:step]`` (``slice.indices``'s numbers), read shard by
        shard: the memory it takes is about its output's."""
        count = len(range(start, stop, step))
        if count == 0:
            return np.empty(0, self.dtype)
        if step < 0:                      # the same positions, read upwards, then reversed
            first = start + step * (count - 1)
            return self._slice(first, start + 1, -step)[::-1]
        parts = []
        for k, array in enumerate(self.shards):
            low, high = int(self.starts[k]), int(self.starts[k + 1])
            if high <= start or low >= stop or low == high:
                continue
            first = max(start, low)
            first += (start - first) % step                # the slice's first position in this shard
            if first < min(stop, high):
                parts.append(array[first - low:min(stop, high) - low:step])
        return np.concatenate(parts) if len(parts) != 1 else np.array(parts[0])

    def _take(self, positions: np.ndarray) -> np.ndarray:
        flat = positions.reshape(-1)
        shard = np.searchsorted(self.starts, flat, side="right") - 1
        out = np.empty(flat.shape, dtype=self.dtype)
        for k in np.unique(shard):
            where = shard == k
            out[where] = self.shards[k][flat[where] - self.starts[k]]
        return out.reshape(positions.shape)

    def document_starts(self) -> np.ndarray:
        """Where documents start, as token offsets into the whole sequence."""
        parts = [read_document_index(os.path.join(self.directory, shard["path"])) + np.uint64(start)
                 for shard, start in zip(self.manifest["shards"], self.starts[:-1])]
        return np.concatenate(parts) if parts else np.empty(0, np.uint64)

    @property
    def tokenizer_fingerprint(self) -> Optional[str]:
        return self.manifest.get("tokenizer_fingerprint")


def open_tokens(output):
    """The token array written by ``encode_file``, memory-mapped read-only, after
    checking that its sidecar describes it; for a sharded output (its directory or
    its manifest), a ``ShardedTokens`` that reads the shards as one sequence."""
    output = os.fspath(output)
    manifest = manifest_path(output)
    if manifest is not None and (os.path.exists(manifest) or os.path.isdir(output)):
        return ShardedTokens(os.path.dirname(manifest), read_manifest(output))
    metadata = read_metadata(output)
    _check_array(output, metadata)
    if metadata["n_tokens"] == 0:
        return np.empty(0, dtype=np.dtype(metadata["dtype"]))   # an empty file cannot be mapped
    return np.memmap(output, dtype=np.dtype(metadata["dtype"]), mode="r", shape=(metadata["n_tokens"],))


def read_document_index(output) -> np.ndarray:
    """Where documents start in the token array (or sharded output), checked
    against its sidecar."""
    output = os.fspath(output)
    if manifest_path(output) is not None and os.path.exists(manifest_path(output)):
        return open_tokens(output).document_starts()
    metadata = read_metadata(output)
    path = index_path(output)
    if not os.path.exists(path) or (metadata["version"] >= 3
                                    and file_digest(path) != metadata["index_sha256"]):
        raise TokenArrayError(f"{path}: missing, or not the index its sidecar {metadata_path(output)} "
                              "describes; encode the corpus again")
    return np.load(path)
