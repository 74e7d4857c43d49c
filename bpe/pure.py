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

from bpe.patterns import compile_pattern, regex_pretokens
from bpe.specials import split_special

Pair = tuple[bytes, bytes]


def pretokenize(text: str, pattern: Optional[str] = "gpt2") -> list[str]:
    """``regex.findall(pattern, text)`` for the built-in patterns — the definition the
    native scanners must meet — and for custom ones the matches and the text
    between them (``patterns.regex_pretokens``)."""
    compiled = compile_pattern(pattern)
    if compiled is None:
        return [text] if text else []
    return regex_pretokens(compiled, text)


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


# --------------------------------------------------------------------------- encoding

def encode_piece(piece: bytes, ranks: dict[bytes, int]) -> list[bytes]:
    """Merge one pre-token (not itself a token): repeatedly merge the adjacent pair
    whose concatenation has the lowest rank, the leftmost among equals, until none
    is a merged token. ``ranks`` maps each merged token to its place in merge order.

    >>> encode_piece(b"aaa", {b"aa": 0})
    [b'aa', b'a']
    """
    parts = [bytes([byte]) for byte in piece]
    while len(parts) > 1:
        best = None
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best is None or rank < best[0]):
                best = (rank, i)
        if best is None:
            break
        i = best[1]
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return parts


def encode(text: str, vocab: dict[int, bytes], merges: Sequence[Pair],
           special_tokens: dict[str, int], pattern: Optional[str] = "gpt2") -> list[int]:
    """The ids of ``text``, every special token recognised."""
    specials = set(special_tokens.values())
    ids_by_bytes: dict[bytes, int] = {}
    for token_id, token in sorted(vocab.items()):
        if token_id not in specials:
            ids_by_bytes.setdefault(token, token_id)
    ranks: dict[bytes, int] = {}
    for rank, (left, right) in enumerate(merges):
        ranks.setdefault(left + right, rank)
    ids = []
    for segment, special in split_special(text, list(special_tokens)):
        for pretoken in pretokenize(segment, pattern):
            piece = pretoken.encode("utf-8")
            if piece in ids_by_bytes:
                ids.append(ids_by_bytes[piece])
                continue
            ids.extend(ids_by_bytes[part] for part in encode_piece(piece, ranks))
        if special is not None:
            ids.append(special_tokens[special])
    return ids
