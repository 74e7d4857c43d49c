"""bpe on Ray: count, train and encode a corpus across a cluster, with exactly the
single-machine result.

A thin adapter over the engine-free building blocks, which any other engine
or a plain loop can call too: ``plan_chunks`` / ``count_chunks`` /
``PretokenCounts.partition`` for counting, ``plan_shards`` / ``encode_chunks``
/ ``finalize_shards`` for encoding. Counting reduces by pre-token hash: each
task splits its counts into ``n_buckets`` by a stable hash, one reducer per
bucket adds them up, so no process holds more than one full table (the
driver, at the end), and training runs once on the result. Encoding writes one
shard per task into a directory on storage every node sees; Ray retries a task
whose worker dies, and a shard is written atomically, so a retried task gives
the same bytes. A finished shard is skipped on a re-run.

Uses the cluster the caller connected to (``ray.init(address=...)``), else
connects to ``address`` if given, else starts a local one.
"""
from __future__ import annotations

import os
import time
from typing import Optional, Sequence

from bpe.errors import MissingExtraError

try:
    import ray
except ImportError:
    raise MissingExtraError('bpe.distributed runs on Ray, which is not installed: pip install "bpe[ray]"') from None

from bpe.corpus.chunking import plan_chunks
from bpe.corpus.counting import PretokenCounts, count_chunks, default_chunk_size
from bpe.corpus.driver import CHUNK_BYTES, encode_chunks, encoding_settings
from bpe.files import check_errors, check_regular_files
from bpe.patterns import canonical_pattern
from bpe.progress import progress_bar
from bpe.corpus.shards import SHARD_BYTES, ShardsSummary, finalize_shards, is_current, plan_shards, write_plan
from bpe.corpus.sources import text_paths
from bpe.specials import check_special_tokens
from bpe.trainer import train_from_counts

#: Fault injection for tests: a file of this name in the directory named by the
#: environment variable BPE_FAULT_DIR makes the first task that finds it (and
#: removes it) kill its worker process, as a crashed or preempted node would.
KILL_MARKER = "kill-next-task"


def _connect(address: Optional[str]):
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 **({} if address else {"num_cpus": os.cpu_count() or 1}))
    return ray


def _maybe_die() -> None:
    marker = os.path.join(os.environ.get("BPE_FAULT_DIR", ""), KILL_MARKER)
    if os.environ.get("BPE_FAULT_DIR") and os.path.exists(marker):
        try:
            os.remove(marker)           # only one task wins the marker
        except FileNotFoundError:
            return
        os._exit(1)


@ray.remote
def _count_task(chunks, special_tokens, pattern, errors, n_buckets):
    _maybe_die()
    buckets = count_chunks(chunks, special_tokens, pattern=pattern, errors=errors).partition(n_buckets)
    return buckets[0] if n_buckets == 1 else tuple(buckets)


@ray.remote
def _reduce_task(*parts):
    return PretokenCounts.sum(parts)


@ray.remote
def _encode_task(tokenizer, chunks, output, dtype, allowed_special, errors, text_field):
    _maybe_die()
    summary = encode_chunks(tokenizer, chunks, output, dtype=dtype, num_workers=1,
                            allowed_special=allowed_special, errors=errors, text_field=text_field)
    return summary.bytes_in, summary.tokens_out


def _wait_all(refs_and_sizes, bar):
    """``ray.get`` of every ref, in order, advancing ``bar`` by each task's bytes as
    it finishes; a task's error is raised as soon as it is seen."""
    sizes = dict(refs_and_sizes)
    results = {}
    pending = list(sizes)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for ref in done:
            results[ref] = ray.get(ref)
            bar.update(sizes[ref])
    return [results[ref] for ref, _ in refs_and_sizes]


def count(inputs, special_tokens: Sequence[str] = (), *, pattern: Optional[str] = "gpt2",
          errors: str = "strict", chunk_size: Optional[int] = None, n_buckets: Optional[int] = None,
          address: Optional[str] = None, progress: bool = False) -> PretokenCounts:
    """``bpe.count_pretokens`` on a Ray cluster: the same counts."""
    _connect(address)
    paths = text_paths(inputs, reader="counting on Ray")
    check_regular_files(paths)
    special_tokens = check_special_tokens(special_tokens)
    pattern = canonical_pattern(pattern)
    errors = check_errors(errors)
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    n_buckets = n_buckets or cpus
    total = sum(os.path.getsize(path) for path in paths)
    chunks = plan_chunks(paths, chunk_size or default_chunk_size(total, cpus), special_tokens, pattern)
    if not chunks:
        return PretokenCounts.from_mapping({}, pattern)
    task = _count_task.options(num_returns=n_buckets)
    with progress_bar(progress, total, "pre-tokenizing", unit="B") as bar:
        refs = [(task.remote([chunk], special_tokens, pattern, errors, n_buckets), chunk.n_bytes)
                for chunk in chunks]
        by_bucket = [[ref] if n_buckets == 1 else list(ref) for ref, _ in refs]
        first = [(parts[0], size) for parts, (_, size) in zip(by_bucket, refs)]
        _wait_all(first, bar)            # progress by tasks; the other buckets arrive with them
    reduced = [_reduce_task.remote(*[parts[k] for parts in by_bucket]) for k in range(n_buckets)]
    return PretokenCounts.concat(ray.get(reduced), pattern)


def train(inputs, vocab_size: int, special_tokens: Sequence[str] = (), *, pattern: Optional[str] = "gpt2",
          min_frequency: int = 1, errors: str = "strict", chunk_size: Optional[int] = None,
          address: Optional[str] = None, progress: bool = False):
    """``bpe.train`` on a Ray cluster: counts reduced across it, the merge loop run
    once here; the same merges."""
    counts = count(inputs, special_tokens, pattern=pattern, errors=errors, chunk_size=chunk_size,
                   address=address, progress=progress)
    return train_from_counts(counts, vocab_size, special_tokens, min_frequency=min_frequency,
                             progress=progress)


def encode(tokenizer, inputs, directory, *, shard_bytes: int = SHARD_BYTES, dtype=None,
           allowed_special="all", errors: str = "strict", chunk_size: int = CHUNK_BYTES,
           address: Optional[str] = None, progress: bool = False, text_field: str = "text") -> ShardsSummary:
    """``bpe.corpus.encode_shards`` on a Ray cluster: one task per shard not yet current,
    then the manifest. ``directory`` must be on storage every node sees."""
    started = time.perf_counter()
    _connect(address)
    directory = os.path.abspath(os.fspath(directory))
    settings = encoding_settings(tokenizer, dtype, allowed_special, errors, text_field)
    shards = plan_shards(tokenizer, inputs, shard_bytes=shard_bytes, chunk_size=chunk_size,
                         allowed_special=allowed_special)
    plan = write_plan(tokenizer, shards, directory, settings)
    tokenizer_ref = ray.put(tokenizer)      # sent once; each worker builds its encoder once
    todo, skipped = [], []
    for shard, entry in zip(shards, plan["shards"]):
        if is_current(directory, shard.name, plan["tokenizer_fingerprint"], entry["ranges_fingerprint"],
                      settings):
            skipped.append(shard.name)
        else:
            todo.append(shard)
    with progress_bar(progress, sum(shard.n_bytes for shard in todo), "encoding", unit="B") as bar:
        results = _wait_all([(_encode_task.remote(tokenizer_ref, shard.chunks,
                                                  os.path.join(directory, shard.name), dtype,
                                                  allowed_special, errors, text_field), shard.n_bytes)
                             for shard in todo], bar)
    manifest = finalize_shards(directory)
    return ShardsSummary(directory, len(shards), [shard.name for shard in todo], skipped,
                         sum(bytes_in for bytes_in, _ in results), sum(tokens for _, tokens in results),
                         time.perf_counter() - started, manifest)
