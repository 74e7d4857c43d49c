"""pytest-benchmark: bpe's encode against its pure-Python twin.

    python -m pytest benchmarks/test_bench_encode.py --benchmark-enable
"""
import os

import pytest

import bpe
from bpe import pure

SHAKESPEARE = os.path.join(os.path.dirname(bpe.__file__), "data", "tinyshakespeare.txt")


@pytest.fixture(scope="module")
def setup():
    with open(SHAKESPEARE, encoding="utf-8") as f:
        text = f.read()
    tok = bpe.train_from_iterator([text], 256 + 1 + 1000, ["<|endoftext|>"], num_workers=1)
    return tok, text[:100_000]


def test_encode_cython(benchmark, setup):
    tok, text = setup
    ids = benchmark(tok.encode, text)
    assert tok.decode(ids) == text


def test_encode_pure(benchmark, setup):
    tok, text = setup
    ids = benchmark.pedantic(pure.encode, args=(text, tok.vocab, tok.merges, tok.special_tokens),
                             rounds=1, iterations=1)
    assert ids == tok.encode(text)
