"""The token array format: a flat file of ids beside two sidecars.

The array holds token ids in native byte order, readable with
``np.memmap(path, dtype=..., mode="r")`` (the nanoGPT habit); beside it

* ``PATH.json``: dtype, token count, n_vocab, fingerprints of the tokenizer and
  of the inputs, and the name of the document index;
* ``PATH.docs.npy``: a uint64 array of the token offsets where documents start.

``write_sidecars`` and ``commit`` are the writer's side (``bpe.encode_file``),
``read_metadata`` and ``open_tokens`` the reader's.
"""
from __future__ import annotations

import json
import os

import numpy as np

FORMAT_NAME = "bpe-token-array"
FORMAT_VERSION = 2   # 2: inputs_fingerprint from sha256 chunk digests (was BLAKE2b)


def metadata_path(output: str) -> str:
    return output + ".json"


def index_path(output: str) -> str:
    return output + ".docs.npy"


def build_metadata(*, dtype: np.dtype, n_tokens: int, n_documents: int, n_vocab: int,
                   separator, output: str, tokenizer_fingerprint: str, inputs: list[dict],
                   inputs_fingerprint: str) -> dict:
    """The sidecar's content."""
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


def write_sidecars(work: str, metadata: dict, document_starts: np.ndarray) -> tuple[str, str]:
    """Write the sidecars into the directory ``work``; returns their temporary paths
    (metadata, index) for ``commit``."""
    tmp_index = os.path.join(work, "docs.npy")
    np.save(tmp_index, document_starts)
    tmp_metadata = os.path.join(work, "metadata.json")
    with open(tmp_metadata, "w", encoding="utf-8") as f:
        json.dump(metadata, f, indent=1)
    return tmp_metadata, tmp_index


def commit(output: str, tmp_array: str, tmp_metadata: str, tmp_index: str) -> None:
    """Move a finished array and its sidecars into place. The array is renamed
    last: its presence means the run completed."""
    os.replace(tmp_index, index_path(output))
    os.replace(tmp_metadata, metadata_path(output))
    os.replace(tmp_array, output)


def read_metadata(output) -> dict:
    """The sidecar of a token array written by ``encode_file``."""
    path = metadata_path(os.fspath(output))
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
