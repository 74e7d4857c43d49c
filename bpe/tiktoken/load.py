"""``tiktoken.load``: reading rank files and GPT-2's files, as tiktoken reads them.

tiktoken downloads its encodings' files from OpenAI's public blob store and
caches them; bpe ships them, so those addresses are answered from the package,
offline. Any other address is fetched and cached as tiktoken does.
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import tempfile
import uuid
from typing import Optional

from bpe.files import atomic_write_bytes
from bpe.formats.gpt2 import gpt2_byte_decoder
from bpe.pretrained import DATA, pretrained_table, rank_file

BLOB = "https://openaipublic.blob.core.windows.net/"


def _shipped_rank_file(name: str) -> bytes:
    table, _, _ = pretrained_table(name)
    return b"".join(base64.b64encode(token) + b" " + str(rank).encode() + b"\n"
                    for token, rank in zip(table.tokens(), table.ranks.tolist()))


def _gunzip(name: str) -> bytes:
    with gzip.open(os.path.join(DATA, name)) as file:
        return file.read()


def _read_plain(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


#: tiktoken's addresses -> the same bytes, from the package.
SHIPPED_FILES = {
    BLOB + "gpt-2/encodings/main/vocab.bpe": lambda: _gunzip("gpt2_vocab.bpe.gz"),
    BLOB + "gpt-2/encodings/main/encoder.json": lambda: _gunzip("gpt2_encoder.json.gz"),
    BLOB + "encodings/r50k_base.tiktoken": lambda: _shipped_rank_file("gpt2"),
    BLOB + "encodings/p50k_base.tiktoken": lambda: _shipped_rank_file("p50k_base"),
    BLOB + "encodings/cl100k_base.tiktoken": lambda: _read_plain(rank_file("cl100k_base"))
    if not rank_file("cl100k_base").endswith(".gz") else _gunzip("cl100k_base.tiktoken.gz"),
    BLOB + "encodings/o200k_base.tiktoken": lambda: _read_plain(rank_file("o200k_base"))
    if not rank_file("o200k_base").endswith(".gz") else _gunzip("o200k_base.tiktoken.gz"),
}


def read_file(blobpath: str) -> bytes:
    """The bytes at ``blobpath``: a local path, an http(s) address (tiktoken's own
    answered from the package), or a blob store path (through ``blobfile``)."""
    if "://" not in blobpath:
        with open(blobpath, "rb", buffering=0) as file:
            return file.read()
    if blobpath in SHIPPED_FILES:
        return SHIPPED_FILES[blobpath]()
    if blobpath.startswith(("http://", "https://")):
        import urllib.request

        with urllib.request.urlopen(blobpath) as response:       # noqa: S310 - tiktoken fetches too
            return response.read()
    try:
        import blobfile
    except ImportError as e:
        raise ImportError("blobfile is not installed. Please install it by running `pip install blobfile`.") from e
    with blobfile.BlobFile(blobpath, "rb") as file:
        return file.read()


def check_hash(data: bytes, expected_hash: str) -> bool:
    return hashlib.sha256(data).hexdigest() == expected_hash


def read_file_cached(blobpath: str, expected_hash: Optional[str] = None) -> bytes:
    """``read_file``, cached as tiktoken caches: under ``$TIKTOKEN_CACHE_DIR`` (else
    ``$DATA_GYM_CACHE_DIR``, else a directory in the temporary one), by the sha1
    of the address; ``expected_hash`` (sha256) checks what is read."""
    if blobpath in SHIPPED_FILES:
        contents = SHIPPED_FILES[blobpath]()
        if expected_hash and not check_hash(contents, expected_hash):
            raise ValueError(f"Hash mismatch for the copy of {blobpath} shipped with bpe "
                             f"(expected {expected_hash})")
        return contents
    user_specified_cache = True
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
        user_specified_cache = False
    if cache_dir == "":
        return read_file(blobpath)
    cache_path = os.path.join(cache_dir, hashlib.sha1(blobpath.encode()).hexdigest())
    if os.path.exists(cache_path):
        with open(cache_path, "rb") as file:
            data = file.read()
        if expected_hash is None or check_hash(data, expected_hash):
            return data
        try:
            os.remove(cache_path)
        except OSError:
            pass
    contents = read_file(blobpath)
    if expected_hash and not check_hash(contents, expected_hash):
        raise ValueError(f"Hash mismatch for data downloaded from {blobpath} (expected {expected_hash}). "
                         "This may indicate a corrupted download. Please try again.")
    try:
        os.makedirs(cache_dir, exist_ok=True)
        partial = f"{cache_path}.{uuid.uuid4()}.tmp"
        with open(partial, "wb") as file:
            file.write(contents)
        os.rename(partial, cache_path)
    except OSError:
        if user_specified_cache:
            raise
    return contents


def data_gym_to_mergeable_bpe_ranks(vocab_bpe_file: str, encoder_json_file: str,
                                    vocab_bpe_hash: Optional[str] = None,
                                    encoder_json_hash: Optional[str] = None,
                                    clobber_one_byte_tokens: bool = False) -> dict[bytes, int]:
    """Ranks from GPT-2's ``vocab.bpe`` and ``encoder.json`` (tiktoken's reading):
    the 256 bytes in GPT-2's order, then one token per merge; the json must agree."""
    decoder = gpt2_byte_decoder()
    printable = [b for b in range(256) if chr(b).isprintable() and chr(b) != " "]
    ranks = {bytes([b]): rank for rank, b in enumerate(printable + [b for b in range(256) if b not in printable])}

    def decode(text: str) -> bytes:
        return bytes(decoder[c] for c in text)

    vocab_bpe = read_file_cached(vocab_bpe_file, vocab_bpe_hash).decode()
    for line in vocab_bpe.split("\n")[1:-1]:
        first, second = line.split()
        ranks[decode(first) + decode(second)] = len(ranks)
    encoder = json.loads(read_file_cached(encoder_json_file, encoder_json_hash))
    loaded = {decode(text): rank for text, rank in encoder.items()}
    loaded.pop(b"<|endoftext|>", None)
    loaded.pop(b"<|startoftext|>", None)
    if clobber_one_byte_tokens:
        for token in ranks:
            if len(token) == 1:
                ranks[token] = loaded[token]
    if ranks != loaded:
        raise AssertionError("vocab.bpe and encoder.json do not describe the same ranks")
    return ranks


def dump_tiktoken_bpe(bpe_ranks: dict[bytes, int], tiktoken_bpe_file: str) -> None:
    """Write ranks as tiktoken's ``base64 rank`` lines, by rank (whole or not at all)."""
    lines = (base64.b64encode(token) + b" " + str(rank).encode() + b"\n"
             for token, rank in sorted(bpe_ranks.items(), key=lambda item: item[1]))
    atomic_write_bytes(tiktoken_bpe_file, b"".join(lines))


def load_tiktoken_bpe(tiktoken_bpe_file: str, expected_hash: Optional[str] = None) -> dict[bytes, int]:
    """``{token: rank}`` of a rank file (a path or an address), as tiktoken reads it:
    blank lines skipped, a later line for the same token wins."""
    contents = read_file_cached(tiktoken_bpe_file, expected_hash)
    ranks = {}
    for line in contents.splitlines():
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
        except Exception as e:
            raise ValueError(f"Error parsing line {line!r} in {tiktoken_bpe_file}") from e
    return ranks
