"""``tiktoken.core``: tiktoken's ``Encoding``, so that code written for tiktoken runs
on bpe (``bpe.Encoding`` is this class).

A front door, not a second implementation: an ``Encoding`` holds a
``Tokenizer`` and calls its kernels and caches. What differs are tiktoken's
defaults and conventions: text that holds a special token raises unless the
token is allowed (``disallowed_special="all"``), unknown ids raise KeyError,
``decode`` replaces invalid UTF-8, batches default to 8 threads.
"""
from __future__ import annotations

import bisect
import functools
from typing import AbstractSet, Collection, Literal, Optional, Sequence, Union

import numpy as np

from bpe.encoder import utf8
from bpe.flat import RankTable
from bpe.patterns import pattern_regex, pretokenize
from bpe.specials import refuse_disallowed, special_spans
from bpe.tokenizer import Tokenizer
from bpe.vocabulary import Ranks, Vocabulary

#: The tiktoken release whose interface this package offers (``tiktoken.__version__``).
TIKTOKEN_VERSION = "0.14.0"

#: encode_with_unstable encodes its candidates this many bytes at a time.
UNSTABLE_BATCH_BYTES = 1 << 22

SpecialSet = Union[Literal["all"], AbstractSet[str]]
_ALL_SPACE = frozenset(b" \n\t")


class Encoding:
    """A byte-level BPE vocabulary with tiktoken's interface.

    >>> import bpe
    >>> enc = bpe.get_encoding("cl100k_base")
    >>> enc.encode("hello world")
    [15339, 1917]
    >>> enc.decode(enc.encode("hello world"))
    'hello world'
    """

    def __init__(self, name: str, *, pat_str: str, mergeable_ranks: dict[bytes, int],
                 special_tokens: dict[str, int], explicit_n_vocab: Optional[int] = None):
        by_rank = {}
        for token, rank in mergeable_ranks.items():
            if rank in by_rank:
                raise ValueError(f"mergeable_ranks gives rank {rank} to two tokens, {by_rank[rank]!r} "
                                 f"and {token!r}")
            by_rank[rank] = bytes(token)
        vocabulary = Vocabulary(RankTable.from_vocab(by_rank), dict(special_tokens))
        tokenizer = Tokenizer._from_parts(vocabulary, Ranks(None), pat_str, None, keep_unmatched=False)
        self._setup(name, tokenizer, pat_str, dict(mergeable_ranks))
        if explicit_n_vocab:
            if len(mergeable_ranks) + len(special_tokens) != explicit_n_vocab \
                    or self.max_token_value != explicit_n_vocab - 1:
                raise ValueError(f"explicit_n_vocab={explicit_n_vocab}, but there are "
                                 f"{len(mergeable_ranks)} + {len(special_tokens)} tokens and the "
                                 f"largest id is {self.max_token_value}")

    @classmethod
    def from_tokenizer(cls, name: str, tokenizer: Tokenizer, pat_str: Optional[str] = None) -> "Encoding":
        """The tiktoken interface over an existing ``Tokenizer`` (sharing its caches)."""
        encoding = cls.__new__(cls)
        encoding._setup(name, tokenizer, pat_str or pattern_regex(tokenizer.pattern) or "", None)
        return encoding

    def _setup(self, name: str, tokenizer: Tokenizer, pat_str: str,
               mergeable_ranks: Optional[dict[bytes, int]]) -> None:
        self.name = name
        self._tokenizer = tokenizer
        self._pat_str = pat_str
        self._ranks = mergeable_ranks
        self._special_tokens = dict(tokenizer.special_tokens)
        self._special_token_values = set(self._special_tokens.values())
        self.max_token_value = tokenizer.n_vocab - 1

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    # ------------------------------------------------------------------ what tiktoken users reach for

    @property
    def _mergeable_ranks(self) -> dict[bytes, int]:
        """Every ordinary token's bytes and rank (its id), as tiktoken keeps them."""
        if self._ranks is None:
            self._ranks = dict(self._tokenizer._ids_by_bytes)
        return self._ranks

    @property
    def tokenizer(self) -> Tokenizer:
        """The ``Tokenizer`` behind this encoding: bpe's own interface to the same vocabulary."""
        return self._tokenizer

    @property
    def n_vocab(self) -> int:
        return self.max_token_value + 1

    @property
    def eot_token(self) -> int:
        return self._special_tokens["<|endoftext|>"]

    @functools.cached_property
    def special_tokens_set(self) -> set[str]:
        return set(self._special_tokens)

    def is_special_token(self, token: int) -> bool:
        assert isinstance(token, int)
        return token in self._special_token_values

    # ------------------------------------------------------------------ encoding

    def _special_sets(self, allowed_special, disallowed_special) -> tuple[list[str], Collection[str]]:
        """The special tokens to recognise and the texts to refuse, by tiktoken's rule:
        names in ``allowed_special`` that are not special tokens are ignored."""
        allowed = self.special_tokens_set if allowed_special == "all" else set(allowed_special)
        if disallowed_special == "all":
            disallowed_special = self.special_tokens_set - allowed
        return sorted(allowed & self.special_tokens_set), disallowed_special

    def _policy(self, text: str, allowed_special, disallowed_special) -> list[str]:
        """The special tokens to recognise, after refusing text with a disallowed one."""
        allowed, disallowed = self._special_sets(allowed_special, disallowed_special)
        refuse_disallowed(disallowed, text)
        return allowed

    def encode_ordinary(self, text: str) -> list[int]:
        return self._tokenizer.encode_ordinary(text)

    def encode(self, text: str, *, allowed_special: SpecialSet = set(),  # noqa: B006
               disallowed_special: Union[Literal["all"], Collection[str]] = "all") -> list[int]:
        if disallowed_special == "all" and not allowed_special:
            # tiktoken's default, on short text: one C call, which hands text
            # holding a special token (to be refused) back to the general path.
            short = self._tokenizer._short or self._tokenizer._short_calls()
            if short is not None:
                ids = short(text, True)
                if ids is not None:
                    return ids
        allowed = self._policy(text, allowed_special, disallowed_special)
        return self._tokenizer.encode(text, allowed_special=set(allowed), disallowed_special=())

    def encode_to_numpy(self, text: str, *, allowed_special: SpecialSet = set(),  # noqa: B006
                        disallowed_special: Union[Literal["all"], Collection[str]] = "all") -> np.ndarray:
        if disallowed_special == "all" and not allowed_special:
            short = self._tokenizer._short or self._tokenizer._short_calls()   # as in ``encode``
            if short is not None:
                ids = short.to_array(text, False, True)
                if ids is not None:
                    return ids
        allowed = self._policy(text, allowed_special, disallowed_special)
        return self._tokenizer.encode_to_numpy(text, dtype=np.uint32, allowed_special=set(allowed),
                                               disallowed_special=())

    def encode_ordinary_batch(self, text: list[str], *, num_threads: int = 8) -> list[list[int]]:
        return self._tokenizer.encode_batch(text, num_threads=num_threads, allowed_special=set(),
                                            disallowed_special=())

    def encode_batch(self, text: list[str], *, num_threads: int = 8,
                     allowed_special: SpecialSet = set(),  # noqa: B006
                     disallowed_special: Union[Literal["all"], Collection[str]] = "all") -> list[list[int]]:
        allowed, disallowed = self._special_sets(allowed_special, disallowed_special)
        for item in text:
            refuse_disallowed(disallowed, item)
        return self._tokenizer.encode_batch(text, num_threads=num_threads, allowed_special=set(allowed),
                                            disallowed_special=())

    def encode_single_token(self, text_or_bytes: Union[str, bytes]) -> int:
        """The id of the token whose text (or bytes) this is, special tokens included;
        KeyError if there is none."""
        if isinstance(text_or_bytes, str):
            text_or_bytes = text_or_bytes.encode("utf-8")
        token_id = self._tokenizer.token_id(text_or_bytes)
        if token_id is not None:
            return token_id
        try:
            return self._special_tokens[text_or_bytes.decode("utf-8")]
        except (UnicodeDecodeError, KeyError):
            raise KeyError(text_or_bytes) from None

    def _encode_single_piece(self, text_or_bytes: Union[str, bytes]) -> list[int]:
        if isinstance(text_or_bytes, str):
            text_or_bytes = text_or_bytes.encode("utf-8")
        if not text_or_bytes:        # a piece that is a token maps to it, the empty token too
            empty = self._tokenizer.token_id(b"")
            return [] if empty is None else [empty]
        return self._tokenizer.encode_piece(text_or_bytes)

    def _encode_only_native_bpe(self, text: str) -> list[int]:
        import regex      # on use, as everywhere in bpe: see patterns._LOOKS_LIKE_A_NAME

        ids = []
        for piece in regex.findall(self._pat_str, text):
            ids += self._tokenizer.encode_piece(piece.encode("utf-8"))
        return ids

    # ------------------------------------------------------------------ unstable ends

    def _encode_with_last_piece(self, text: str, allowed: list[str]) -> tuple[list[int], int]:
        """The ids of ``text`` and how many of them the last pre-token gave (0 if the
        text ends with a special token). Lone surrogates read as U+FFFD, as in ``encode``."""
        text = utf8(text).decode("utf-8")
        ids = self._tokenizer.encode(text, allowed_special=set(allowed), disallowed_special=())
        spans = special_spans(text, allowed) if allowed else []
        tail = text[spans[-1][1]:] if spans else text
        pieces = pretokenize(tail, self._tokenizer.pattern) if tail else []
        if not pieces:
            return ids, 0
        return ids, len(self._tokenizer.encode_piece(pieces[-1].encode("utf-8")))

    def _widen_to_spaces(self, ids: list[int], last: int) -> int:
        """Count whitespace-only tokens before a whitespace-only last piece into it: a
        regex split between runs of whitespace can disappear as text is added."""
        vocab = self._tokenizer.vocab
        special = self._special_token_values

        def all_space(token_id: int) -> bool:
            return token_id not in special and set(vocab[token_id]) <= _ALL_SPACE

        if last > 0 and all_space(ids[len(ids) - last]):
            while last < len(ids) and all_space(ids[len(ids) - last - 1]):
                last += 1
        return last

    def encode_with_unstable(self, text: str, *, allowed_special: SpecialSet = set(),  # noqa: B006
                             disallowed_special: Union[Literal["all"], Collection[str]] = "all"
                             ) -> tuple[list[int], list[list[int]]]:
        """The stable ids of ``text`` and the token sequences its unstable end may
        become as text is appended (tiktoken's rule; an unstable API there too)."""
        allowed = self._policy(text, allowed_special, disallowed_special)
        ids, last = self._encode_with_last_piece(text, allowed)
        if last == 0:
            return ids, []
        last = self._widen_to_spaces(ids, last)
        unstable = self._tokenizer.decode_bytes(ids[len(ids) - last:])
        ids = ids[:len(ids) - last]
        completions: set[tuple[int, ...]] = set()
        if not unstable:
            return ids, []
        sorted_tokens = self._sorted_token_bytes()
        ranks = self._mergeable_ranks
        for token in self._tokens_starting_with(sorted_tokens, unstable):
            completions.add((ranks[token],))
        # Every other place a token could straddle the end: the bytes before it, then a
        # token that starts with the rest. They are encoded a batch at a time (tens of
        # thousands of tokens start with a space), and only each one's start is
        # kept: what is held is a batch's worth, not every candidate at once.
        vocab = self._tokenizer._vocabulary.decoder
        batch: list[bytes] = []
        held = 0

        def flush() -> None:
            texts, encoded = [], []
            for possibility in batch:
                try:
                    texts.append(possibility.decode("utf-8"))
                except UnicodeDecodeError:
                    encoded.append(self._tokenizer.encode_piece(possibility))
            encoded += self._tokenizer.encode_batch(texts, num_threads=1, allowed_special=set(),
                                                    disallowed_special=())
            for sequence_ids in encoded:
                sequence, length = [], 0
                for token_id in sequence_ids:
                    sequence.append(token_id)
                    length += len(vocab[token_id])
                    if length >= len(unstable):
                        break
                completions.add(tuple(sequence))
            batch.clear()

        for split in range(1, len(unstable)):
            for token in self._tokens_starting_with(sorted_tokens, unstable[split:]):
                batch.append(unstable[:split] + token)
                held += split + len(token)
                if held >= UNSTABLE_BATCH_BYTES:
                    flush()
                    held = 0
        flush()
        if len(unstable) > 1:
            last_char = _last_utf8_character(unstable)
            if last_char is not None and len(last_char) < len(unstable) \
                    and _is_white_space(last_char.decode("utf-8")):
                cut = len(unstable) - len(last_char)
                completions.add(tuple(self._tokenizer.encode_piece(unstable[:cut])
                                      + self._tokenizer.encode_piece(unstable[cut:])))
        return ids, [list(sequence) for sequence in completions]

    def _sorted_token_bytes(self) -> list[bytes]:
        if getattr(self, "_sorted_tokens", None) is None:
            self._sorted_tokens = sorted(self._mergeable_ranks)
        return self._sorted_tokens

    @staticmethod
    def _tokens_starting_with(sorted_tokens: list[bytes], prefix: bytes):
        point = bisect.bisect_left(sorted_tokens, prefix)
        while point < len(sorted_tokens) and sorted_tokens[point].startswith(prefix):
            yield sorted_tokens[point]
            point += 1

    def _encode_bytes(self, text: bytes) -> list[int]:
        """The ids of bytes that need not be valid UTF-8: the valid prefix is encoded as
        text, and its last pre-token is encoded again together with the rest."""
        try:
            return self.encode_ordinary(text.decode("utf-8"))
        except UnicodeDecodeError as e:
            valid = e.start
        ids, last = self._encode_with_last_piece(text[:valid].decode("utf-8"), [])
        last = self._widen_to_spaces(ids, last)
        if ids and last > 0:
            rest = self._tokenizer.decode_bytes(ids[len(ids) - last:]) + text[valid:]
            ids = ids[:len(ids) - last]
        else:
            rest = text[valid:]
        if rest:
            ids += self._tokenizer.encode_piece(rest)
        return ids

    # ------------------------------------------------------------------ decoding

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        try:
            return self._tokenizer.decode_bytes(tokens)
        except ValueError:
            decoder = self._tokenizer._vocabulary.decoder
            bad = next(token for token in tokens if token not in decoder)
            raise KeyError(f"Invalid token for decoding: {bad}") from None

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        try:
            return self._tokenizer._vocabulary.decoder[token]
        except KeyError:
            raise KeyError(str(token)) from None

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> list[bytes]:
        return [self.decode_single_token_bytes(token) for token in tokens]

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """The text, and for each token the index of the first character that holds
        any of its bytes (a token that starts inside a character points at it)."""
        for token in tokens:
            self.decode_single_token_bytes(token)        # KeyError for an unknown id, as tiktoken
        return self._tokenizer.decode_with_offsets(tokens)

    def decode_batch(self, batch: Sequence[Sequence[int]], *, errors: str = "replace",
                     num_threads: int = 8) -> list[str]:
        from concurrent.futures import ThreadPoolExecutor      # on use: loading never needs it

        with ThreadPoolExecutor(num_threads) as pool:
            return list(pool.map(functools.partial(self.decode, errors=errors), batch))

    def decode_bytes_batch(self, batch: Sequence[Sequence[int]], *, num_threads: int = 8) -> list[bytes]:
        from concurrent.futures import ThreadPoolExecutor      # on use: loading never needs it

        with ThreadPoolExecutor(num_threads) as pool:
            return list(pool.map(self.decode_bytes, batch))

    def token_byte_values(self) -> list[bytes]:
        """Every ordinary token's bytes, sorted."""
        return list(self._sorted_token_bytes())

    # ------------------------------------------------------------------ pickling

    def __reduce__(self):
        # An encoding got by name pickles as its name, and unpickles as the very
        # object ``get_encoding`` gives (the registry marks those it made).
        by_name = self.__dict__.get("_by_name")
        if by_name is not None:
            return by_name, (self.name,)
        return _rebuild, (self.__getstate__(),)

    def __getstate__(self):
        return {"name": self.name, "pat_str": self._pat_str, "mergeable_ranks": self._mergeable_ranks,
                "special_tokens": self._special_tokens}

    def __setstate__(self, state) -> None:
        self.__init__(**state)


def _rebuild(state: dict) -> Encoding:
    encoding = Encoding.__new__(Encoding)
    encoding.__setstate__(state)
    return encoding


def _last_utf8_character(data: bytes) -> Optional[bytes]:
    """The last UTF-8 character of ``data``, or None if its end is not one."""
    for width in range(1, min(4, len(data)) + 1):
        try:
            data[-width:].decode("utf-8")
            return data[-width:]
        except UnicodeDecodeError:
            continue
    return None


@functools.lru_cache(maxsize=None)
def _white_space():
    import regex

    return regex.compile(r"\p{White_Space}")


def _is_white_space(character: str) -> bool:
    """Whether ``character`` is Unicode white space, as ``regex`` says."""
    return _white_space().fullmatch(character) is not None
