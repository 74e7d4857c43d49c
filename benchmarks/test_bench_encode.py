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
    # Each round starts cold, as the pure version does: the pre-token cache kept
    # across calls would make every round after the first all cache hits.
    tok, text = setup
    ids = benchmark.pedantic(tok.encode, args=(text,), setup=tok.clear_cache, rounds=20)
    assert tok.decode(ids) == text


def test_encode_pure(benchmark, setup):
    tok, text = setup
    ids = benchmark.pedantic(pure.encode, args=(text, tok.vocab, tok.merges, tok.special_tokens),
                             rounds=1, iterations=1)
    assert ids == tok.encode(text)
