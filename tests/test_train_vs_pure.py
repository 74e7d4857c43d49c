"""The Cython trainer must produce exactly the merges of bpe.pure."""
import pytest

import bpe
from bpe import pure

from conftest import random_corpus

SPECIAL = "<|endoftext|>"
PATTERNS = ["gpt2", "cl100k", "o200k", None, r"\w+|[^\w\s]+|\s+"]


@pytest.mark.parametrize("pattern", PATTERNS, ids=str)
@pytest.mark.parametrize("seed", range(4))
def test_random_tied_corpora_match_pure(pattern, seed):
    text = random_corpus(seed, n_words=300, special=SPECIAL if seed % 2 else None)
    specials = [SPECIAL] if seed % 2 else []
    vocab_size = 256 + len(specials) + 120
    tok = bpe.train_from_iterator([text], vocab_size, specials, pattern=pattern, num_workers=1)
    assert tok.merges == pure.train(text, vocab_size, specials, pattern=pattern)


@pytest.mark.parametrize("num_workers", [1, 2, 3])
@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", None])
def test_files_match_pure_for_any_workers_and_chunk_size(write_text, pattern, num_workers):
    text = "".join(random_corpus(seed, n_words=200, special=SPECIAL) for seed in range(6))
    path = write_text(text)
    expected = pure.train(text, 256 + 1 + 150, [SPECIAL], pattern=pattern)
    for chunk_size in (97, 1000, 1 << 20):
        tok = bpe.train(path, 256 + 1 + 150, [SPECIAL], pattern=pattern,
                        num_workers=num_workers, chunk_size=chunk_size)
        assert tok.merges == expected, (chunk_size, num_workers)


def test_many_files_without_special_tokens(write_text):
    texts = [random_corpus(seed, n_words=150, unicode=seed % 2 == 0) for seed in range(3)]
    paths = [write_text(text) for text in texts]
    tok = bpe.train(paths, 256 + 80, num_workers=2, chunk_size=64)
    assert tok.merges == pure.train(texts, 256 + 80)


def test_shakespeare_matches_pure(shakespeare_path):
    with open(shakespeare_path, encoding="utf-8") as f:
        text = f.read()
    tok = bpe.train(shakespeare_path, 256 + 60, num_workers=2, chunk_size=50_000)
    assert tok.merges == pure.train(text, 256 + 60)


def test_min_frequency_matches_pure():
    text = random_corpus(11, n_words=300)
    with pytest.warns(UserWarning, match="occurs 9 times or more"):
        tok = bpe.train_from_iterator([text], 256 + 5000, min_frequency=9, num_workers=1)
    assert tok.merges == pure.train(text, 256 + 5000, min_frequency=9)
    assert len(tok.merges) > 0


def test_ids_bytes_then_specials_then_merges():
    tok = bpe.train_from_iterator(["hello hello world"], 256 + 2 + 3, ["<a>", "<b>"],
                                  num_workers=1)
    assert [tok.vocab[i] for i in range(256)] == [bytes([i]) for i in range(256)]
    assert tok.special_tokens == {"<a>": 256, "<b>": 257}
    assert tok.vocab[256] == b"<a>" and tok.vocab[257] == b"<b>"
    assert [tok.vocab[258 + k] for k in range(3)] == [a + b for a, b in tok.merges]


def test_longest_special_token_wins():
    double = "<|endoftext|><|endoftext|>"
    text = f"ab{double}ab<|endoftext|>ab<|endoftext|>|>"
    tok = bpe.train_from_iterator([text], 256 + 2 + 10, ["<|endoftext|>", double], num_workers=1)
    assert tok.merges == pure.train(text, 256 + 2 + 10, ["<|endoftext|>", double])
    # Special tokens are never merged: no learned token contains their bytes.
    assert not any(b"<|" in a + b for a, b in tok.merges)
