"""Engine-free building blocks for counting and encoding anywhere (a cluster, a job
array, a loop): planning byte ranges, counting ranges, bucketing counts by a
stable hash, and a tokenizer that arrives ready to encode."""
import pickle
import subprocess
import sys

import numpy as np
import pytest

import bpe
from bpe._scanner import hash_pieces

from conftest import SHAKESPEARE, random_corpus

EOT = "<|endoftext|>"


def fnv1a64(data: bytes) -> int:
    h = 14695981039346656037
    for byte in data:
        h = ((h ^ byte) * 1099511628211) % 2**64
    return h


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("corpus")
    paths = []
    for index in range(3):
        path = directory / f"part{index}.txt"
        path.write_text(random_corpus(20 + index, n_words=3000, special=EOT), encoding="utf-8")
        paths.append(str(path))
    return paths


def test_counting_planned_ranges_equals_counting_the_files(files):
    whole = bpe.count_pretokens(files, [EOT], num_workers=1)
    chunks = bpe.corpus.plan_chunks(files, 2000, [EOT], "gpt2")
    assert len(chunks) > 10 and all(isinstance(chunk, bpe.corpus.Chunk) for chunk in chunks)
    assert pickle.loads(pickle.dumps(chunks)) == chunks                    # small picklable values
    assert bpe.corpus.count_chunks(chunks, [EOT]) == whole
    # Any split of the ranges among tasks, added up, is the same.
    parts = [bpe.corpus.count_chunks(chunks[k::3], [EOT]) for k in range(3)]
    assert bpe.PretokenCounts.sum(parts) == whole
    assert bpe.corpus.count_chunks(chunks, [EOT], num_workers=2) == whole


def test_partition_is_stable_and_exact(files):
    counts = bpe.count_pretokens(files, [EOT], num_workers=1)
    assert hash_pieces(np.frombuffer(b"hello world", np.uint8), np.array([0, 5, 11])).tolist() == \
        [fnv1a64(b"hello"), fnv1a64(b" world")]
    buckets = counts.partition(4)
    assert sum(len(bucket) for bucket in buckets) == len(counts)
    for k, bucket in enumerate(buckets):                                  # the bucket is the hash's
        assert all(fnv1a64(token) % 4 == k for token, _ in bucket.items())
    assert bpe.PretokenCounts.concat(buckets) == counts
    # Counts made apart and bucketed apart add up bucket by bucket to the whole.
    halves = [bpe.count_pretokens(files[:2], [EOT], num_workers=1), bpe.count_pretokens(files[2:], [EOT], num_workers=1)]
    reduced = [bpe.PretokenCounts.sum([half.partition(4)[k] for half in halves]) for k in range(4)]
    assert bpe.PretokenCounts.concat(reduced) == counts
    assert bpe.train_from_counts(bpe.PretokenCounts.concat(reduced), 400, [EOT]).merges == \
        bpe.train_from_counts(counts, 400, [EOT]).merges
    with pytest.raises(ValueError, match="n must be a positive int"):
        counts.partition(0)


def test_prune_keeps_frequent_pre_tokens():
    counts = bpe.PretokenCounts.from_mapping({"a": 1, "bb": 5, "ccc": 2, "d": 9})
    assert counts.prune(2).to_dict() == {b"bb": 5, b"ccc": 2, b"d": 9}
    assert counts.prune(10).to_dict() == {}
    with pytest.raises(ValueError, match="min_count must be a positive int"):
        counts.prune(0)


def test_a_tokenizer_arrives_ready_to_encode_and_builds_once_per_process():
    tok = bpe.load("cl100k_base")
    data = pickle.dumps(tok)
    first, second = pickle.loads(data), pickle.loads(data)
    assert first._encoder is not None and first.encoder is second.encoder     # built once here
    text = open(SHAKESPEARE, encoding="utf-8").read()[:20_000]
    assert first.encode(text) == tok.encode(text) and first == tok
    # In a fresh process: encodes straight away, identically.
    script = ("import pickle, sys; tok = pickle.loads(sys.stdin.buffer.read()); "
              "assert tok._encoder is not None; print(tok.encode('hello world'))")
    result = subprocess.run([sys.executable, "-c", script], input=data, capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().strip() == str(tok.encode("hello world"))
