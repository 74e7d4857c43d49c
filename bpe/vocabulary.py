"""A vocabulary: ordinary tokens as ranked byte strings, special tokens by name,
and the rule that merges parts into tokens.

This is the one representation a ``Tokenizer`` keeps. Tokens live in flat
arrays (a ``RankTable``); the dicts users ask for (``vocab``, ids by bytes)
are built from them on demand.

The rules, as the formats' own libraries define them:

* **Ranks** (tiktoken's, and bpe's own): two adjacent parts merge when their
  bytes joined are a token, the lowest rank first, the leftmost among equals;
  a pre-token that is itself a token maps straight to it. A token's rank is
  its place in merge order: by default its id order, or the order a list of
  merges learned them in. Any ranked vocabulary works: a token no merge of two
  earlier tokens makes, a token ranked below its parts, an empty token.
* **Merges** (Hugging Face's): only listed pairs merge, the one listed
  earliest first; a pair's rank is its place in the list, whatever token it
  makes, so several merges may make one token. A pre-token maps straight to a
  token only with ``whole_tokens`` (``ignore_merges``); otherwise it is merged
  like any other.

Special tokens: names to ids; several names may share an id (tiktoken's
``o200k_harmony``), and an id may sit anywhere, far above the vocabulary or
on an ordinary token's id. Decoding an id gives the ordinary token's bytes
first (tiktoken looks in its ordinary decoder first), else the first special
name given for it.
"""
from __future__ import annotations

import json
from typing import Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np

from bpe._decode import DecodeTable
from bpe.flat import RankTable, take_pieces, with_headers
from bpe.specials import check_special_tokens

#: The largest id a token may have: the kernels hold ids as int32, and one more
#: than the largest is ``n_vocab``.
MAX_ID = 2**31 - 2
#: Ids between the largest and the vocabulary's size for which a list of ids is
#: built from prebuilt ints; ids further out (a special token far above the
#: vocabulary) take a slower path, so no id can make memory grow past this.
PREBUILT_SLACK = 1 << 16


class Ranks(NamedTuple):
    """Tiktoken's rule: ``ranked`` holds the tokens of two or more bytes in rank
    order (int32 ids), or is None for their id order."""

    ranked: Optional[np.ndarray] = None


class Merges(NamedTuple):
    """Hugging Face's rule: ``pairs[k]`` (int32 ids) is merge k and makes
    ``merged[k]``; ``whole_tokens``: a pre-token that is a token maps to it."""

    pairs: np.ndarray
    merged: np.ndarray
    whole_tokens: bool


Rule = Union[Ranks, Merges]


def ids_dtype(n_vocab: int, dtype=None) -> np.dtype:
    """``dtype`` checked to hold every id below ``n_vocab``; None: uint16 when every
    id fits, else uint32 (what a token array of them is written as)."""
    if dtype is None:
        return np.dtype(np.uint16 if n_vocab <= 2**16 else np.uint32)
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu" or np.iinfo(dtype).max < n_vocab - 1:
        raise ValueError(f"dtype {dtype} cannot hold token id {n_vocab - 1}")
    return dtype


def _is_id(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


class Vocabulary:
    """Ordinary tokens by id (a ``RankTable``: ids strictly increase, no bytes
    given twice) and special tokens by name. Checks what every rule needs: ids
    in range, a token for every byte, valid special names."""

    def __init__(self, table: RankTable, special_tokens: Mapping[str, int],
                 decode_as: Optional[Mapping[int, bytes]] = None):
        check_special_tokens(list(special_tokens))
        specials = {}
        for name, token_id in special_tokens.items():
            if not _is_id(token_id) or not 0 <= token_id <= MAX_ID:
                raise ValueError(f"special token {name!r} has id {token_id!r}, not an int in [0, {MAX_ID}]")
            specials[name] = int(token_id)
        data, offsets, ids = table
        if len(ids) and (ids[0] < 0 or ids[-1] > MAX_ID):
            bad = ids[0] if ids[0] < 0 else ids[-1]
            raise ValueError(f"vocab id {bad} is not in [0, {MAX_ID}]")
        lengths = np.diff(offsets)
        single = lengths == 1
        byte_ids = np.full(256, -1, dtype=np.int32)
        byte_ids[data[offsets[:-1][single]]] = ids[single]       # tokens are distinct: one each
        if (byte_ids < 0).any():
            raise ValueError(f"the vocab has no token for byte {int(np.argmin(byte_ids)):#04x}")
        self.table = table
        self.special_tokens = specials
        self.byte_ids = byte_ids
        largest = max([int(ids[-1]) if len(ids) else -1, *specials.values(), *(decode_as or {})])
        #: One more than the largest id (tiktoken's meaning).
        self.n_vocab = largest + 1
        #: Bytes some ids decode to: a special token's, instead of its name's UTF-8
        #: (Hugging Face's ByteLevel decoder reads an added token's text as byte
        #: characters); or a control token's, an id text never encodes to (Mistral's
        #: Tekken files number their special tokens so, and never find them in text).
        self.decode_as = dict(decode_as or {})
        for token_id in self.decode_as:
            if not _is_id(token_id) or not 0 <= token_id <= MAX_ID:
                raise ValueError(f"token id {token_id!r} is not an int in [0, {MAX_ID}]")
        self._decoder: Optional[dict[int, bytes]] = None
        self._ids_by_bytes: Optional[dict[bytes, int]] = None
        self._decode_table: Optional[DecodeTable] = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_decoder"] = state["_ids_by_bytes"] = state["_decode_table"] = None   # made again on demand
        return state

    @classmethod
    def from_dict(cls, vocab: Mapping[int, bytes],
                  special_tokens: Union[Mapping[str, int], Sequence[str], None]) -> "Vocabulary":
        """From ``{id: bytes}`` and special tokens (names looked up in ``vocab`` by
        their bytes, or ``{name: id}``). An entry at a special token's id that
        holds its name is that special token; every other entry is ordinary."""
        items = {}
        for token_id, token in vocab.items():
            if not _is_id(token_id):
                raise ValueError(f"vocab id {token_id!r} is not an int")
            if not isinstance(token, (bytes, bytearray, memoryview)):
                raise ValueError(f"vocab id {token_id}: {token!r} is not bytes")
            if int(token_id) in items:
                raise ValueError("the vocab gives one id twice (as equal numbers of different types)")
            items[int(token_id)] = bytes(token)
        if special_tokens is None:
            special_tokens = {}
        elif not isinstance(special_tokens, Mapping):
            names = check_special_tokens(special_tokens)
            by_bytes = {token: token_id for token_id, token in sorted(items.items(), reverse=True)}
            missing = [name for name in names if name.encode("utf-8") not in by_bytes]
            if missing:
                raise ValueError(f"special token {missing[0]!r} is not in the vocab")
            special_tokens = {name: by_bytes[name.encode("utf-8")] for name in names}
        names_at: dict[int, set] = {}
        for name, token_id in special_tokens.items():
            if isinstance(name, str) and _is_id(token_id):
                names_at.setdefault(int(token_id), set()).add(name.encode("utf-8", "surrogatepass"))
        ordinary = {token_id: token for token_id, token in items.items()
                    if token not in names_at.get(token_id, ())}
        seen: dict[bytes, int] = {}
        for token_id, token in sorted(ordinary.items()):
            if token_id < 0:
                raise ValueError(f"vocab id {token_id} is negative")
            if token in seen:
                raise ValueError(f"token {token!r} is given twice (ids {seen[token]} and {token_id})")
            seen[token] = token_id
        return cls(RankTable.from_vocab(ordinary), special_tokens)

    # ------------------------------------------------------------------ views

    @property
    def decoder(self) -> dict[int, bytes]:
        """Every id's bytes: an ordinary token's, else its first special name's."""
        if self._decoder is None:
            decoder = self._named_bytes()
            decoder.update(zip(self.table.ranks.tolist(), self.table.tokens()))
            self._decoder = decoder
        return self._decoder

    def _named_bytes(self) -> dict[int, bytes]:
        """The bytes of the ids a special name or ``decode_as`` gives, where no
        ordinary token has the id (an ordinary token's bytes come first)."""
        named: dict[int, bytes] = {}
        for name, token_id in self.special_tokens.items():
            named.setdefault(token_id, self.decode_as.get(token_id, name.encode("utf-8")))
        for token_id, token in self.decode_as.items():
            named.setdefault(token_id, token)
        return named

    @property
    def decode_table(self) -> DecodeTable:
        """``decoder`` as decode's kernel reads it: flat arrays for the ids below
        ``prebuilt_limit`` (the ordinary tokens' bytes where they are, the other
        ids' after them), a dict for the ids beyond."""
        if self._decode_table is None:
            data, offsets, ranks = self.table
            limit = self.prebuilt_limit()
            starts = np.zeros(limit, dtype=np.int64)
            lengths = np.full(limit, -1, dtype=np.int32)
            near = ranks < limit
            starts[ranks[near]] = offsets[:-1][near]
            lengths[ranks[near]] = np.diff(offsets)[near]
            far: dict[int, bytes] = {}
            if not near.all():
                tokens = self.table.tokens()
                far.update((int(ranks[k]), tokens[k]) for k in np.flatnonzero(~near))
            extra = bytearray()
            for token_id, token in self._named_bytes().items():
                if token_id >= limit:
                    far.setdefault(token_id, token)
                elif lengths[token_id] < 0:
                    starts[token_id], lengths[token_id] = len(data) + len(extra), len(token)
                    extra += token
            self._decode_table = DecodeTable(np.concatenate([data, np.frombuffer(bytes(extra), np.uint8)]),
                                             starts, lengths, far)
        return self._decode_table

    @property
    def ids_by_bytes(self) -> dict[bytes, int]:
        """Each ordinary token's id by its bytes."""
        if self._ids_by_bytes is None:
            self._ids_by_bytes = dict(zip(self.table.tokens(), self.table.ranks.tolist()))
        return self._ids_by_bytes

    def vocab(self) -> dict[int, bytes]:
        """``{id: bytes}`` of every token, as ``decoder`` (sorted by id)."""
        return dict(sorted(self.decoder.items()))

    @property
    def control_ids(self) -> set[int]:
        """Ids that only decoding knows (``decode_as``'s, past every token's)."""
        special = set(self.special_tokens.values())
        return {token_id for token_id in self.decode_as if token_id not in special}

    @property
    def n_ordinary(self) -> int:
        return len(self.table.ranks)

    def merged_ids(self) -> np.ndarray:
        """The ids of the ordinary tokens of two or more bytes, in id order (int32)."""
        return self.table.ranks[np.diff(self.table.token_offsets) > 1].astype(np.int32)

    def prebuilt_limit(self) -> int:
        """The ids below which lists of ids are built from prebuilt ints: the
        longest run from 0 in which at most PREBUILT_SLACK ids are unused, so
        that a far id (a special token, or a rank far past the others) costs
        no memory by its size."""
        # Sorted and made unique by hand: np.unique imports numpy.ma, 12 ms of a first encode.
        ids = np.sort(np.concatenate([self.table.ranks, np.fromiter([*self.special_tokens.values(),
                                                                     *self.decode_as], np.int64)]))
        ids = ids[np.concatenate([[True], ids[1:] != ids[:-1]])] if len(ids) else ids
        dense = np.flatnonzero(ids - np.arange(len(ids)) <= PREBUILT_SLACK)   # a prefix: gaps only grow
        return int(ids[dense[-1]]) + 1 if len(dense) else 0

    def encoder_arrays(self, rule: Rule) -> dict[str, np.ndarray]:
        """What ``Encoder`` (and so ``EncodeKernel``) is built from, for ``rule``.
        The empty token (tiktoken's files may hold one) is never a pre-token's."""
        data, offsets, ids = self.table
        nonempty = np.diff(offsets) > 0
        if not nonempty.all():
            data, offsets = take_pieces(data, offsets, np.flatnonzero(nonempty))
            ids = ids[nonempty]
        arrays = {"byte_ids": self.byte_ids, "token_data": data, "token_offsets": offsets,
                  "token_ids": ids.astype(np.int32)}
        if isinstance(rule, Merges):
            arrays.update(ranked_ids=rule.merged.astype(np.int32),
                          merge_pairs=np.ascontiguousarray(rule.pairs, dtype=np.int32).reshape(-1, 2),
                          whole_tokens=np.array(rule.whole_tokens))
        else:
            arrays["ranked_ids"] = self.merged_ids() if rule.ranked is None else rule.ranked.astype(np.int32)
        return arrays

    # ------------------------------------------------------------------ identity

    def records(self) -> bytes:
        """Every token with its id and length, ordinary ones by id then special
        ones by name: the bytes a fingerprint hashes for the vocabulary."""
        data, offsets, ids = self.table
        header = np.stack([ids.astype("<u4"), np.diff(offsets).astype("<u4")], axis=1).view(np.uint8)
        ordinary = with_headers(header, data, offsets)
        special = sorted(self.special_tokens.items())
        if self.decode_as:
            special = [special, sorted((token_id, token.hex()) for token_id, token in self.decode_as.items())]
        special = json.dumps(special, ensure_ascii=False).encode("utf-8")
        return ordinary + len(special).to_bytes(8, "little") + special


def rule_records(rule: Rule) -> bytes:
    """The bytes a fingerprint hashes for the rule."""
    if isinstance(rule, Merges):
        pairs = np.ascontiguousarray(rule.pairs, dtype="<i4").tobytes()
        return (b"merges" + bytes([rule.whole_tokens]) + len(pairs).to_bytes(8, "little") + pairs
                + np.ascontiguousarray(rule.merged, dtype="<i4").tobytes())
    if rule.ranked is None:
        return b"ranks by id"
    return b"ranks" + np.ascontiguousarray(rule.ranked, dtype="<i4").tobytes()


def ranks_from_merges(vocabulary: Vocabulary, merges: Sequence[tuple[bytes, bytes]]) -> Ranks:
    """Tiktoken's rule with the ranks a list of merges gives (the first merge to
    make a token ranks it): None where that is the id order, as bpe trains."""
    ids = vocabulary.ids_by_bytes
    ranked, seen = [], set()
    for index, (left, right) in enumerate(merges):
        token_id = ids.get(left + right)
        if token_id is None:
            raise ValueError(f"merge {index} {(left, right)!r}: token {left + right!r} is not in the vocab")
        if token_id not in seen:
            seen.add(token_id)
            ranked.append(token_id)
    ranked = np.array(ranked, dtype=np.int32)
    in_id_order = vocabulary.merged_ids()
    if len(ranked) == len(in_id_order) and np.array_equal(ranked, in_id_order):
        return Ranks(None)
    return Ranks(ranked)


def merge_pairs(vocabulary: Vocabulary, merges: Sequence[tuple[bytes, bytes]], whole_tokens: bool,
                where=lambda index: f"merge {index}") -> Merges:
    """Hugging Face's rule from merges as byte pairs, each part and their join
    a token; ``where(index)`` names a merge in errors."""
    ids = vocabulary.ids_by_bytes
    pairs = np.empty((len(merges), 2), dtype=np.int32)
    merged = np.empty(len(merges), dtype=np.int32)
    for index, (left, right) in enumerate(merges):
        for part in (left, right, left + right):
            if part not in ids:
                raise ValueError(f"{where(index)} {(left, right)!r}: token {part!r} is not in the vocab")
        pairs[index] = ids[left], ids[right]
        merged[index] = ids[left + right]
    return Merges(pairs, merged, whole_tokens)

