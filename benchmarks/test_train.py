"""Training: bpe against every installed trainer, and against bpe.pure.

Same file, GPT-2 pattern, vocabulary size and special token for all (rustbpe has
no special tokens: it gets one merge fewer and the documents split at it).
Each trainer uses the machine's cores its own way; bpe runs 2 worker threads.
Peak memory needs a process of its own: ``benchmarks/bench_train.py``.
"""
from __future__ import annotations

import pytest

import bpe
from bpe import pure
from conftest import EOT, describe, documents, require

PURE_VOCAB = 256 + 1 + 200


def train_bpe(path, text, vocab_size):
    return len(bpe.train(path, vocab_size, [EOT], num_workers=2).vocab)


def train_rustbpe(path, text, vocab_size):
    import rustbpe

    tok = rustbpe.Tokenizer()
    tok.train_from_iterator(iter(documents(text)), vocab_size - 1, pattern=bpe.PATTERNS["gpt2"])
    return tok.vocab_size + 1


def train_tokenizers(path, text, vocab_size):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOT], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train([path], trainer)
    return tok.get_vocab_size()


def train_gigatoken(path, text, vocab_size):
    import gigatoken

    vocab, merges = gigatoken.train_bpe(gigatoken.TextFileSource([path], separator=EOT), vocab_size, [EOT])
    return len(vocab)


TRAINERS = {"bpe": ("bpe.train(path, vocab_size, [EOT], num_workers=2)", train_bpe),
            "rustbpe": ("Tokenizer().train_from_iterator(documents, vocab_size - 1, pattern)", train_rustbpe),
            "tokenizers": ("Tokenizer(BPE()).train([path], BpeTrainer(...))", train_tokenizers),
            "gigatoken": ("train_bpe(TextFileSource([path]), vocab_size, [EOT])", train_gigatoken)}


@pytest.mark.parametrize("library", list(TRAINERS))
def test_train(benchmark, sample, settings, library, vocab_size):
    if library != "bpe":
        require(library)
    call, train = TRAINERS[library]
    describe(benchmark, f"train, vocab {vocab_size}", library, call, "a tokenizer", sample.mb)
    size = benchmark.pedantic(train, args=(sample.path, sample.text, vocab_size), rounds=settings["rounds"])
    assert size == vocab_size


@pytest.fixture(scope="module")
def pure_merges(pure_sample):
    return pure.train(pure_sample.text, PURE_VOCAB, [EOT])


def test_train_against_pure(benchmark, pure_sample, pure_merges, settings):
    describe(benchmark, f"train, vocab {PURE_VOCAB} (bpe.pure's sample)", "bpe",
             "bpe.train(path, vocab_size, [EOT], num_workers=2)", "merges", pure_sample.mb)
    tok = benchmark.pedantic(bpe.train, args=(pure_sample.path, PURE_VOCAB, [EOT]), kwargs={"num_workers": 2},
                             rounds=settings["rounds"])
    assert tok.merges == pure_merges


def test_train_pure(benchmark, pure_sample):
    describe(benchmark, f"train, vocab {PURE_VOCAB} (bpe.pure's sample)", "bpe.pure",
             "pure.train(text, vocab_size, [EOT])", "merges", pure_sample.mb)
    merges = benchmark.pedantic(pure.train, args=(pure_sample.text, PURE_VOCAB, [EOT]), rounds=1, iterations=1)
    assert merges == bpe.train(pure_sample.path, PURE_VOCAB, [EOT], num_workers=2).merges
