"""The readable pure-Python BPE: the oracle for the Cython kernels and their baseline.

Everything here is written for clarity, not speed. The fast paths must give
exactly the same results; the tests check that they do.

>>> merges = train("low low low lower lowest", 259, pattern="gpt2")  # (o, w) ties (l, o) and is greater
>>> merges
[(b'o', b'w'), (b'l', b'ow'), (b' ', b'low')]
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Optional, Sequence

from bpe.patterns import pretokenize, split_special

Pair = tuple[bytes, bytes]


def count_pretokens(texts: Iterable[str], special_tokens: Sequence[str] = (),
                    pattern: Optional[str] = "gpt2") -> Counter:
    """How often each pre-token (as UTF-8 bytes) occurs; special tokens are not counted."""
    counts: Counter = Counter()
    for text in texts:
        for segment, _special in split_special(text, special_tokens):
            for pretoken in pretokenize(segment, pattern):
                counts[pretoken.encode("utf-8")] += 1
    return counts


def merge_word(word: tuple[bytes, ...], pair: Pair) -> tuple[bytes, ...]:
    """Replace each occurrence of ``pair`` in one left-to-right pass.

    >>> merge_word((b"a", b"b", b"a", b"b"), (b"a", b"b"))
    (b'ab', b'ab')
    >>> merge_word((b"a", b"a", b"a"), (b"a", b"a"))
    (b'aa', b'a')
    """
    merged = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            merged.append(word[i] + word[i + 1])
            i += 2
        else:
            merged.append(word[i])
            i += 1
    return tuple(merged)


def pair_counts(words: Counter) -> Counter:
    """Every adjacent pair in every word, overlapping ones too, weighted by the word's count."""
    counts: Counter = Counter()
    for word, count in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] += count
    return counts


def best_pair(counts: Counter) -> Pair:
    """THE tie-break rule: the highest count; among equal counts, the greater
    ``(bytes_a, bytes_b)`` tuple."""
    return max(counts, key=lambda pair: (counts[pair], pair))


def train_from_counts(pretoken_counts: Counter, n_merges: int, min_frequency: int = 1) -> list[Pair]:
    """Learn up to ``n_merges`` merges from pre-token counts (bytes -> count)."""
    words: Counter = Counter()
    for pretoken, count in pretoken_counts.items():
        if count > 0:
            words[tuple(bytes([b]) for b in pretoken)] += count
    merges = []
    while len(merges) < n_merges:
        counts = pair_counts(words)
        if not counts:
            break
        pair = best_pair(counts)
        if counts[pair] < min_frequency:
            break
        merges.append(pair)
        merged: Counter = Counter()
        for word, count in words.items():
            merged[merge_word(word, pair)] += count
        words = merged
    return merges


def train(text, vocab_size: int, special_tokens: Sequence[str] = (),
          pattern: Optional[str] = "gpt2", min_frequency: int = 1) -> list[Pair]:
    """Learn merges from ``text`` (a str, or an iterable of separate texts).

    ``vocab_size`` counts 256 bytes, the special tokens and one token per merge.
    """
    texts = [text] if isinstance(text, str) else list(text)
    n_merges = vocab_size - 256 - len(special_tokens)
    return train_from_counts(count_pretokens(texts, special_tokens, pattern), n_merges, min_frequency)
