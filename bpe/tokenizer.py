"""The Tokenizer: a vocabulary, its ordered merges, special tokens and a pattern."""
from __future__ import annotations

from typing import Mapping, Optional, Sequence, Union

from bpe.patterns import canonical_pattern, check_special_tokens

Pair = tuple[bytes, bytes]


class Tokenizer:
    """A byte-level BPE tokenizer.

    Parameters
    ----------
    vocab : dict[int, bytes]
        Every token's bytes by id.
    merges : list[tuple[bytes, bytes]]
        The merges in the order they were learned (earliest = highest priority).
    special_tokens : dict[str, int] or sequence of str, optional
        Special tokens by id; a sequence is looked up in ``vocab`` by its bytes.
    pattern : str or None
        "gpt2", "cl100k", "o200k", a custom regex, or None for no pre-tokenization.
    """

    def __init__(self, vocab: Mapping[int, bytes], merges: Sequence[Pair],
                 special_tokens: Union[Mapping[str, int], Sequence[str], None] = None,
                 *, pattern: Optional[str] = "gpt2"):
        self.vocab = {int(i): bytes(b) for i, b in vocab.items()}
        for token_id, token in self.vocab.items():
            if token_id < 0:
                raise ValueError(f"vocab id {token_id} is negative")
            if not token:
                raise ValueError(f"vocab id {token_id} is an empty token")
        self.pattern = canonical_pattern(pattern)
        self.special_tokens = self._check_special_tokens(special_tokens)
        special_ids = set(self.special_tokens.values())
        self._ids_by_bytes = {}
        for token_id, token in sorted(self.vocab.items()):
            if token_id not in special_ids:
                self._ids_by_bytes.setdefault(token, token_id)
        self.merges = self._check_merges(merges)

    def _check_special_tokens(self, special_tokens) -> dict[str, int]:
        if special_tokens is None:
            return {}
        if not isinstance(special_tokens, Mapping):
            names = check_special_tokens(special_tokens)
            by_bytes = {token: token_id for token_id, token in self.vocab.items()}
            missing = [name for name in names if name.encode("utf-8") not in by_bytes]
            if missing:
                raise ValueError(f"special token {missing[0]!r} is not in the vocab")
            return {name: by_bytes[name.encode("utf-8")] for name in names}
        check_special_tokens(list(special_tokens))
        checked = {}
        for name, token_id in special_tokens.items():
            if self.vocab.get(token_id) != name.encode("utf-8"):
                raise ValueError(f"special token {name!r} has id {token_id}, but vocab[{token_id}] "
                                 f"is {self.vocab.get(token_id)!r}")
            checked[name] = int(token_id)
        return checked

    def _check_merges(self, merges: Sequence[Pair]) -> list[Pair]:
        checked = []
        for index, merge in enumerate(merges):
            try:
                left, right = merge
            except (TypeError, ValueError):
                raise ValueError(f"merge {index} is {merge!r}, not a pair of bytes") from None
            left, right = bytes(left), bytes(right)
            for part in (left, right, left + right):
                if part not in self._ids_by_bytes:
                    raise ValueError(f"merge {index} {(left, right)!r}: token {part!r} is not in the vocab")
            checked.append((left, right))
        return checked

    @property
    def n_vocab(self) -> int:
        """One more than the largest id (tiktoken's meaning)."""
        return max(self.vocab) + 1 if self.vocab else 0

    def save(self, path) -> str:
        """Write this tokenizer in bpe's own format; a directory gets ``tokenizer.bpe``.

        Returns the path written. The file is complete or absent: it is written
        under a temporary name and renamed.
        """
        from bpe.formats import save_own

        return save_own(self, path)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return (self.vocab == other.vocab and self.merges == other.merges
                and self.special_tokens == other.special_tokens and self.pattern == other.pattern)

    def __repr__(self) -> str:
        return (f"Tokenizer(n_vocab={self.n_vocab}, merges={len(self.merges)}, "
                f"special_tokens={len(self.special_tokens)}, pattern={self.pattern!r})")
