"""Sharded, resumable token output: a corpus as many token arrays and a manifest.

A plan cuts the inputs into chunks (the rule of ``encode_file``) and groups
consecutive chunks into shards of about ``shard_bytes``. Each shard is encoded
into its own token array (``encode_chunks``: atomic, with sidecars); read in
order, the shards are exactly ``encode_file`` of the inputs, ids and document
starts alike. A shard already written for the same ranges of the same files
(sizes and modification times unchanged) by the same tokenizer is skipped, so
a run that stopped at 90 % redoes only the rest. ``rank`` and ``world_size``
split the shards among independent processes (a job array, a cluster); each
writes the plan it computed (the same for all) and its shards, and
``finalize`` writes the manifest once every shard is there. ``open_tokens``
reads the directory as one sequence.
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Optional

from bpe.corpus.chunking import Chunk, plan_chunks
from bpe.corpus.driver import CHUNK_BYTES, encode_chunks, encoding_settings, ranges_fingerprint, separator_token
from bpe.errors import TokenArrayError
from bpe.files import atomic_write_text
from bpe.corpus.sources import find_sources
from bpe.corpus.token_array import MANIFEST_FORMAT, MANIFEST_NAME, check_dtype, open_tokens, read_metadata

SHARD_BYTES = 256 << 20
PLAN_NAME = "plan.json"


@dataclasses.dataclass(frozen=True)
class Shard:
    """Consecutive chunks of the inputs, encoded into one token array ``name``."""

    index: int
    chunks: tuple[Chunk, ...]

    @property
    def name(self) -> str:
        return f"shard-{self.index:05d}.bin"

    @property
    def n_bytes(self) -> int:
        return sum(chunk.n_bytes for chunk in self.chunks)


@dataclasses.dataclass
class ShardsSummary:
    """What ``encode_shards`` did."""

    directory: str
    shards: int                 # in the plan
    written: list[str]          # shard names encoded by this call
    skipped: list[str]          # shard names already current
    bytes_in: int               # encoded by this call
    tokens_out: int             # encoded by this call
    seconds: float
    manifest: Optional[str]     # written, if this call finalized

    def __str__(self) -> str:
        done = f"; manifest {self.manifest}" if self.manifest else ""
        return (f"{len(self.written)} of {self.shards} shard(s) encoded ({len(self.skipped)} already "
                f"current), {self.bytes_in / 1e6:.1f} MB -> {self.tokens_out} tokens in "
                f"{self.seconds:.2f} s -> {self.directory}{done}")


def plan_shards(tokenizer, inputs, *, shard_bytes: int = SHARD_BYTES, chunk_size: int = CHUNK_BYTES,
                allowed_special="all", recursive: bool = False, glob: Optional[str] = None) -> list[Shard]:
    """The shards of ``inputs``: consecutive chunks, about ``shard_bytes`` each. A
    file that is not plain text (JSON Lines, Parquet, compressed) cannot be cut
    in place: it is one chunk, in a shard of such files only."""
    if shard_bytes < 1:
        raise ValueError(f"shard_bytes must be >= 1, got {shard_bytes}")
    sources = find_sources(inputs, recursive=recursive, glob=glob).sources
    separator = separator_token(tokenizer, allowed_special)
    shards, current, size, current_plain = [], [], 0, True

    def close() -> None:
        nonlocal current, size
        if current:
            shards.append(Shard(len(shards), tuple(current)))
        current, size = [], 0

    for source in sources:
        if source.plain_text:
            chunks = plan_chunks([source.path], chunk_size, list(tokenizer.special_tokens), tokenizer.pattern,
                                 snap_token=separator or "")
        else:
            chunks = [Chunk(source.path, 0, os.path.getsize(source.path))]
        if source.plain_text != current_plain:
            close()
            current_plain = source.plain_text
        for chunk in chunks:
            current.append(chunk)
            size += chunk.n_bytes
            if size >= shard_bytes:
                close()
    close()
    return shards


def write_plan(tokenizer, shards: list[Shard], directory: str, settings: Optional[dict] = None) -> dict:
    """Record the plan in ``directory`` (every rank computes and writes the same
    one); ``finalize_shards`` checks the shards against it."""
    plan = {"format": "bpe-shard-plan", "version": 1, "tokenizer_fingerprint": tokenizer.fingerprint(),
            "encoding_settings": settings,
            "shards": [{"name": shard.name, "ranges_fingerprint": ranges_fingerprint(shard.chunks),
                        "chunks": [[os.path.abspath(c.path), c.start, c.end] for c in shard.chunks]}
                       for shard in shards]}
    os.makedirs(directory, exist_ok=True)
    atomic_write_text(os.path.join(directory, PLAN_NAME), json.dumps(plan, indent=1))
    return plan


def is_current(directory: str, name: str, tokenizer_fingerprint: str, fingerprint: str,
               settings: Optional[dict] = None) -> bool:
    """Whether shard ``name`` is complete and was written for these ranges by this
    tokenizer, with these ``settings`` (``driver.encoding_settings``: the
    dtype, the special tokens recognised, the error policy), if given."""
    path = os.path.join(directory, name)
    try:
        metadata = read_metadata(path)
        open_tokens(path)                       # the array is the one its sidecar describes
    except (OSError, ValueError):
        return False
    return (metadata.get("tokenizer_fingerprint") == tokenizer_fingerprint
            and metadata.get("ranges_fingerprint") == fingerprint
            and (settings is None or metadata.get("encoding_settings") == settings))


def encode_shards(tokenizer, inputs, directory, *, shard_bytes: int = SHARD_BYTES, rank: int = 0,
                  world_size: int = 1, finalize: Optional[bool] = None, dtype=None,
                  num_workers: Optional[int] = None, allowed_special="all", errors: str = "strict",
                  chunk_size: int = CHUNK_BYTES, progress: bool = False, text_field: str = "text",
                  recursive: bool = False, glob: Optional[str] = None) -> ShardsSummary:
    """Encode the shards of ``inputs`` that fall to ``rank`` (of ``world_size``) into
    ``directory``, skipping those already current; with ``finalize`` (the default
    for one rank), write the manifest once all shards are there."""
    if not (isinstance(world_size, int) and world_size >= 1 and isinstance(rank, int)
            and 0 <= rank < world_size):
        raise ValueError(f"rank {rank!r} must be in [0, world_size={world_size!r})")
    started = time.perf_counter()
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    settings = encoding_settings(tokenizer, dtype, allowed_special, errors, text_field)
    check_dtype(settings["dtype"], "dtype")
    shards = plan_shards(tokenizer, inputs, shard_bytes=shard_bytes, chunk_size=chunk_size,
                         allowed_special=allowed_special, recursive=recursive, glob=glob)
    plan = write_plan(tokenizer, shards, directory, settings)
    written, skipped, bytes_in, tokens_out = [], [], 0, 0
    for shard, entry in zip(shards[rank::world_size], plan["shards"][rank::world_size]):
        if is_current(directory, shard.name, plan["tokenizer_fingerprint"], entry["ranges_fingerprint"],
                      settings):
            skipped.append(shard.name)
            continue
        summary = encode_chunks(tokenizer, shard.chunks, os.path.join(directory, shard.name), dtype=dtype,
                                num_workers=num_workers, allowed_special=allowed_special, errors=errors,
                                progress=progress, text_field=text_field)
        written.append(shard.name)
        bytes_in += summary.bytes_in
        tokens_out += summary.tokens_out
    manifest = None
    if finalize if finalize is not None else world_size == 1:
        manifest = finalize_shards(directory)
    return ShardsSummary(directory, len(shards), written, skipped, bytes_in, tokens_out,
                         time.perf_counter() - started, manifest)


def finalize_shards(directory) -> str:
    """Write the manifest of a sharded output whose shards are all current; raise
    naming the first that is missing or stale."""
    directory = os.fspath(directory)
    plan_file = os.path.join(directory, PLAN_NAME)
    try:
        with open(plan_file, encoding="utf-8") as f:
            plan = json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"{plan_file}: no such file (encode the shards into {directory} first)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TokenArrayError(f"{plan_file}: not a JSON plan: {e}") from None
    entries = []
    for entry in plan["shards"]:
        name = entry["name"]
        if not is_current(directory, name, plan["tokenizer_fingerprint"], entry["ranges_fingerprint"],
                          plan.get("encoding_settings")):
            raise TokenArrayError(f"{os.path.join(directory, name)}: missing or not current: encode it "
                                  "(every rank must finish) before finalizing")
        metadata = read_metadata(os.path.join(directory, name))
        entries.append({"path": name, "n_tokens": metadata["n_tokens"], "n_documents": metadata["n_documents"],
                        "ranges_fingerprint": entry["ranges_fingerprint"],
                        "inputs_fingerprint": metadata["inputs_fingerprint"], "dtype": metadata["dtype"]})
    dtypes = {entry.pop("dtype") for entry in entries}
    if len(dtypes) > 1:
        raise TokenArrayError(f"{directory}: shards of different dtypes {sorted(dtypes)}")
    first = read_metadata(os.path.join(directory, entries[0]["path"])) if entries else {}
    manifest = {"format": MANIFEST_FORMAT, "version": 1, "dtype": dtypes.pop() if dtypes else "uint32",
                "n_vocab": first.get("n_vocab"), "tokenizer_fingerprint": plan["tokenizer_fingerprint"],
                "n_tokens": sum(entry["n_tokens"] for entry in entries),
                "n_documents": sum(entry["n_documents"] for entry in entries), "shards": entries}
    path = os.path.join(directory, MANIFEST_NAME)
    atomic_write_text(path, json.dumps(manifest, indent=1))
    return path
