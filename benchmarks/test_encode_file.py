"""A corpus file to a token array on disk: bpe's ``encode_file`` against what a user
of each peer writes to get the same array (read, split at <|endoftext|>, encode
the documents in one threaded batch, put the separator's id back between them,
write), and against bpe.pure on its sample. Every array is compared with
``encode(text)`` after timing. Peak memory needs a process of its own:
``benchmarks/bench_encode_file.py``.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import bpe
from bpe import pure
from conftest import EOT, describe, require
from peers import factory

NAMES = ["gpt2", "o200k_base"]


def dtype_for(tok) -> type:
    return np.uint16 if tok.n_vocab <= 1 << 16 else np.uint32


def with_bpe(tok, path, out):
    tok.encode_file(path, out, num_workers=2)


def with_tiktoken(enc, path, out):
    with open(path, encoding="utf-8") as f:
        documents = f.read().split(EOT)
    separator = [enc.encode_single_token(EOT)]
    batch = enc.encode_ordinary_batch(documents, num_threads=2)
    ids = [token for k, document in enumerate(batch) for token in (separator if k else []) + document]
    np.asarray(ids, dtype=np.uint16 if enc.n_vocab <= 1 << 16 else np.uint32).tofile(out)


def with_gigatoken(tok, path, out):
    import awkward
    import gigatoken

    documents = tok.encode_files(gigatoken.TextFileSource([path], separator=EOT))
    ids = awkward.to_numpy(awkward.flatten(documents))
    starts = np.cumsum(awkward.to_numpy(awkward.num(documents)))[:-1]
    ids = np.insert(ids, starts, tok.encode(EOT)[0])
    ids.astype(np.uint16 if tok.vocab_size <= 1 << 16 else np.uint32).tofile(out)


def with_pure(tok, path, out):
    with open(path, encoding="utf-8") as f:
        ids = pure.encode(f.read(), tok.vocab, tok.merges, tok.special_tokens, tok.pattern)
    np.asarray(ids, dtype=dtype_for(tok)).tofile(out)


def _fresh_bpe(name):
    return lambda: bpe.load(name)


def _fresh_peer(library):
    return lambda name: factory(library, name)


#: library -> (the call, a fresh encoder per round for a vocabulary, the job)
WRITERS = {
    "bpe": ("tok.encode_file(path, out, num_workers=2)", _fresh_bpe, with_bpe),
    "tiktoken": ("encode_ordinary_batch(documents, num_threads=2), then tofile", _fresh_peer("tiktoken"),
                 with_tiktoken),
    "gigatoken": ("encode_files(TextFileSource([path])), then tofile", _fresh_peer("gigatoken"), with_gigatoken),
    "bpe.pure": ("pure.encode(text, ...), then tofile", _fresh_bpe, with_pure),
}


def measure(benchmark, sample, name, out, library, rounds):
    call, make, write = WRITERS[library]
    fresh_encoder = make(name)

    def fresh():
        if os.path.exists(out):
            os.unlink(out)
        return (fresh_encoder(), sample.path, out), {}
    benchmark.pedantic(write, setup=fresh, rounds=rounds)
    tok = bpe.load(name)
    expected = np.asarray(tok.encode(sample.text), dtype=dtype_for(tok))
    assert np.array_equal(np.fromfile(out, dtype=expected.dtype), expected)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("library", ["bpe", "tiktoken", "gigatoken"])
def test_encode_file(benchmark, sample, settings, tmp_path, library, name):
    if library != "bpe":
        require(library)
    describe(benchmark, f"a corpus file to a token array, 2 threads, {name}", library, WRITERS[library][0],
             "file", sample.mb)
    measure(benchmark, sample, name, str(tmp_path / "tokens.bin"), library, settings["rounds"])


@pytest.mark.parametrize("library", ["bpe", "bpe.pure"])
def test_encode_file_against_pure(benchmark, pure_sample, settings, tmp_path, library):
    describe(benchmark, "a corpus file to a token array, gpt2 (bpe.pure's sample)", library, WRITERS[library][0],
             "file", pure_sample.mb)
    measure(benchmark, pure_sample, "gpt2", str(tmp_path / "tokens.bin"), library,
            1 if library == "bpe.pure" else settings["rounds"])
