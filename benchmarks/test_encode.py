"""Encoding: per document (cold and warm), one batch, one short call, and bpe.pure.

Like with like: every candidate of a group gets the same input objects (cold
rounds: fresh copies of the documents, since tiktoken and gigatoken keep a
str's UTF-8 in the object), lists are compared with lists and numpy with
numpy, and the ids each returned are checked against bpe's after timing.
Cold rounds start from a fresh peer object, or bpe's caches emptied.
"""
from __future__ import annotations

import numpy as np
import pytest

import bpe
import bpe.tiktoken
from bpe import pure
from _measure import fresh_copies
from conftest import describe, require
from peers import factory

NAMES = ["gpt2", "cl100k_base", "o200k_base"]
CALLS_PER_ROUND = 2000
SHORT = {"2 chars": "hi",
         "83 chars": "The quick brown fox jumps over the lazy dog, then naps in the sun for an hour or two."}


def _bpe(name):
    tok = bpe.load(name)

    def fresh():
        tok.clear_cache()
        return tok
    return fresh


def _peer(library):
    def make(name):
        require(library)
        return factory(library, name)
    return make


# (library, call, output type, how to make a fresh encoder for a vocabulary, the call)
PER_DOCUMENT = [
    ("bpe", "encode(text)", "list", _bpe, lambda t, d: t.encode(d)),
    ("bpe", "encode_to_numpy(text)", "numpy", _bpe, lambda t, d: t.encode_to_numpy(d)),
    ("tiktoken", "encode(text)", "list", _peer("tiktoken"), lambda t, d: t.encode(d)),
    ("gigatoken", "encode(text)", "numpy", _peer("gigatoken"), lambda t, d: t.encode(d)),
    ("gigatoken", "encode(text).tolist()", "list", _peer("gigatoken"), lambda t, d: t.encode(d).tolist()),
    ("tokenizers", "encode(text).ids", "list", _peer("tokenizers"), lambda t, d: t.encode(d).ids),
]
BATCH = [
    ("bpe", "encode_batch(texts, num_threads=2)", "lists", _bpe, lambda t, ds: t.encode_batch(ds, num_threads=2)),
    ("tiktoken", "encode_batch(texts, num_threads=2)", "lists", _peer("tiktoken"),
     lambda t, ds: t.encode_batch(ds, num_threads=2)),
    ("gigatoken", "encode_batch_list(texts)", "lists", _peer("gigatoken"), lambda t, ds: t.encode_batch_list(ds)),
    ("tokenizers", "[e.ids for e in encode_batch(texts)]", "lists", _peer("tokenizers"),
     lambda t, ds: [e.ids for e in t.encode_batch(ds)]),
]
PER_CALL = PER_DOCUMENT[:5] + [
    ("bpe", "encode_ordinary(text)", "list", _bpe, lambda t, s: t.encode_ordinary(s)),
    ("tiktoken", "encode_ordinary(text)", "list", _peer("tiktoken"), lambda t, s: t.encode_ordinary(s)),
    ("bpe.tiktoken", "Encoding.encode(text)", "list", lambda name: lambda: bpe.tiktoken.get_encoding(name),
     lambda t, s: t.encode(s)),
]


def same_ids(got, expected, output: str) -> bool:
    kind = np.ndarray if output == "numpy" else list
    return len(got) == len(expected) and all(
        isinstance(g, kind) and np.array_equal(np.asarray(g), e) for g, e in zip(got, expected))


@pytest.fixture(scope="module")
def expected(sample):
    """bpe's ids for each document, per vocabulary (checked against tiktoken in tests/)."""
    return {name: [bpe.load(name).encode(d) for d in sample.documents] for name in NAMES}


def _label(candidate):
    return f"{candidate[0]} {candidate[1]}"


@pytest.mark.parametrize("state", ["cold", "warm"])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("candidate", PER_DOCUMENT, ids=_label)
def test_encode_per_document(benchmark, sample, expected, settings, candidate, name, state):
    library, call, output, make, run = candidate
    fresh = make(name)
    describe(benchmark, f"encode per document, {state}, {name}", library, call, output, sample.mb,
             documents=len(sample.documents))

    def encode_all(encoder, documents):
        return [run(encoder, d) for d in documents]

    if state == "cold":
        result = benchmark.pedantic(encode_all, setup=lambda: ((fresh(), fresh_copies(sample.documents)), {}),
                                    rounds=settings["rounds"])
    else:
        encoder = fresh()
        result = benchmark.pedantic(encode_all, args=(encoder, sample.documents), rounds=settings["rounds"],
                                    warmup_rounds=1)
    assert same_ids(result, expected[name], output)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("candidate", BATCH, ids=_label)
def test_encode_batch(benchmark, sample, expected, settings, candidate, name):
    library, call, output, make, run = candidate
    fresh = make(name)
    describe(benchmark, f"encode one batch, cold, 2 threads, {name}", library, call, output, sample.mb,
             documents=len(sample.documents))
    result = benchmark.pedantic(run, setup=lambda: ((fresh(), fresh_copies(sample.documents)), {}),
                                rounds=settings["rounds"])
    assert same_ids(result, expected[name], "list")


@pytest.mark.parametrize("text", list(SHORT), ids=str)
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("candidate", PER_CALL, ids=_label)
def test_encode_one_short_call(benchmark, settings, candidate, name, text):
    """The same shape for every library: rounds of CALLS_PER_ROUND calls, after
    warm-up rounds (bpe builds its tables on the first call, as gigatoken
    does when it loads); the time shown is one call's."""
    library, call, output, make, run = candidate
    encoder = make(name)()
    string = SHORT[text]
    describe(benchmark, f"one call on {text}, warm, {name}", library, call, output, len(string) / 1e6)
    result = benchmark.pedantic(run, args=(encoder, string), iterations=CALLS_PER_ROUND,
                                rounds=4 * settings["rounds"], warmup_rounds=2)
    assert same_ids([result], [bpe.load(name).encode(string)], output)


def test_encode_against_pure(benchmark, pure_sample, settings):
    """One text in one call, gpt2, on the sample bpe.pure finishes."""
    tok = bpe.load("gpt2")
    describe(benchmark, "encode one text, cold, gpt2 (bpe.pure's sample)", "bpe", "encode(text)", "list",
             pure_sample.mb)

    def cold():
        tok.clear_cache()
        return (fresh_copies([pure_sample.text])[0],), {}
    ids = benchmark.pedantic(tok.encode, setup=cold, rounds=settings["rounds"])
    assert tok.decode(ids) == pure_sample.text


def test_encode_pure(benchmark, pure_sample):
    tok = bpe.load("gpt2")
    describe(benchmark, "encode one text, cold, gpt2 (bpe.pure's sample)", "bpe.pure",
             "pure.encode(text, vocab, merges, special_tokens)", "list", pure_sample.mb)
    ids = benchmark.pedantic(pure.encode, args=(pure_sample.text, tok.vocab, tok.merges, tok.special_tokens),
                             rounds=1, iterations=1)
    assert ids == tok.encode(pure_sample.text)
