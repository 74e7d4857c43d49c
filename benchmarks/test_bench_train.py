"""pytest-benchmark: bpe.train against its pure-Python twin on a small corpus.

    python -m pytest benchmarks/test_bench_train.py --benchmark-enable
"""
import os

import pytest

import bpe
from bpe import pure

SHAKESPEARE = os.path.join(os.path.dirname(bpe.__file__), "data", "tinyshakespeare.txt")
VOCAB_SIZE = 256 + 1 + 200


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    with open(SHAKESPEARE, encoding="utf-8") as f:
        text = f.read()[:200_000]
    path = tmp_path_factory.mktemp("corpus") / "shakespeare_200k.txt"
    path.write_text(text, encoding="utf-8")
    return str(path), text


def test_train_cython(benchmark, corpus):
    path, text = corpus
    tok = benchmark(bpe.train, path, VOCAB_SIZE, ["<|endoftext|>"], num_workers=1)
    assert len(tok.merges) == VOCAB_SIZE - 257


def test_train_pure(benchmark, corpus):
    path, text = corpus
    merges = benchmark.pedantic(pure.train, args=(text, VOCAB_SIZE, ["<|endoftext|>"]),
                                rounds=1, iterations=1)
    assert merges == bpe.train(path, VOCAB_SIZE, ["<|endoftext|>"], num_workers=1).merges
