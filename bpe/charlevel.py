"""Merges over characters (SentencePiece's BPE, in its own files and in Hugging
Face's), as the kernel runs them.

The kernel merges bytes. These models merge characters: each character the
model holds is a symbol, pieces are text, and a character it lacks becomes
its UTF-8 bytes' ``<0xNN>`` pieces (byte fallback) or the unknown piece. So
the kernel is given every piece as its UTF-8, each byte as its character's
piece (ASCII) or its ``<0xNN>`` piece, and each multi-byte character made
from its bytes by merges ranked before every real one: a proper prefix of a
character is a token of its own, numbered past the model's ids. Whatever of
those the merging leaves (the bytes of a character the model lacks, which
begin like one it holds) become the ids they stand for afterwards
(``bpe._lists.Expanding``; in the kernel's call, for one text). Where the
text can hold no space of its own, ``▁`` (three bytes) is written as a
space (one) in the kernel's text and pieces: a space stands for it alone.

A merge makes a piece of the two parts it joins, so it never crosses between
two characters that no piece holds side by side: where no piece holds ``▁``
after another character, the text is cut before each run of ``▁`` (the
native ``metaspace`` pattern), around each character that no piece of
several characters holds (an ideograph or a line feed, often), which then
is a pre-token of its own, and between two ASCII characters that no piece
holds side by side (``(b`` in code, often): fewer and shorter new
pre-tokens to merge. Such a character of several bytes always has the same
kernel ids (its own token; or its bytes' tokens where the model lacks it,
which expand to their ``<0xNN>`` pieces or to the unknown piece): the kernel
reads a run of them from a table (``alone_ids``) rather than the caches.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Optional, Sequence

import numpy as np

from bpe._encode import ALONE_BYTES
from bpe._lists import Expanding, PrebuiltInts, all_below, expand_ids, ids_to_list
from bpe.encoder import Encoder
from bpe.flat import flatten
from bpe.vocabulary import Ranks, Rule

SPACE = "\u2581"                     # ▁, which stands for a space in pieces
UINT16 = np.dtype(np.uint16)         # compared by identity: ``==`` with a dtype cost a short call ~40 ns
_SPACE_UTF8 = SPACE.encode("utf-8")


def character_cuts(pieces: Iterable[str], space: bool = False) -> tuple[Optional[str], dict[str, np.ndarray]]:
    """Where text may be cut with no merge of these pieces crossing (see the
    module's docstring): the pattern (None for no cut), and ``EncodeKernel``'s
    arrays for it: ``alone``, the code points that no piece of several
    characters holds, but ``▁``; ``joined``, the pairs of ASCII characters
    that some piece holds side by side. With ``space``, ``▁`` is written as
    an ASCII space in the kernel's text and pieces, so the pairs decide
    around it too."""
    pieces = [piece.replace(SPACE, " ") if space else piece for piece in pieces if len(piece) > 1]
    if any(SPACE in piece.lstrip(SPACE) for piece in pieces):
        return None, {}
    alone = np.ones(0x110000, dtype=bool)
    alone[sorted({ord(c) for piece in pieces for c in piece} | {ord(SPACE)})] = False
    joined = np.zeros(128 * 128, dtype=bool)
    pairs = {(ord(a) << 7) | ord(b) for piece in pieces for a, b in zip(piece, piece[1:]) if a < "\x80" and b < "\x80"}
    joined[sorted(pairs)] = True
    return "metaspace", {"alone": np.packbits(alone, bitorder="little"),
                         "joined": np.packbits(joined, bitorder="little")}


def alone_ids(alone: np.ndarray, ids: Mapping[str, int]) -> np.ndarray:
    """``EncodeKernel``'s ``alone_ids`` for the characters of several bytes in
    the Basic Multilingual Plane that stand alone (``alone``,
    ``character_cuts``'), each a pre-token of its own: 1 + the id of each
    character of ``ids`` (those the kernel makes from their bytes, with their
    tokens), always its token; ``ALONE_BYTES`` for the others, which are no
    piece the kernel makes (characters the model lacks; or a user-defined or
    control piece, which the kernel never meets in its text): whatever
    merging leaves of their bytes stands for the ids their bytes' tokens
    stand for (their ``<0xNN>`` pieces, or the unknown piece each); else 0.
    Surrogates keep 0: the kernel's text is UTF-8 made from a str, where
    each lone one became U+FFFD."""
    bits = np.unpackbits(alone[:0x10000 // 8], bitorder="little").astype(bool)
    table = np.zeros(0x10000, dtype=np.uint32)
    table[0x80:0x10000][bits[0x80:]] = ALONE_BYTES
    table[0xD800:0xE000] = 0
    for c, token_id in ids.items():
        if 0x80 <= ord(c) < 0x10000 and bits[ord(c)]:
            table[ord(c)] = token_id + 1
    return table


class CharacterVocabulary:
    """The kernel's form of a model whose merges run over characters.

    ``pieces``: the text of each piece the kernel may make (id by text);
    ``n_vocab``: one past the model's largest id; ``byte_pieces``: the
    ``<0xNN>`` piece of each byte (256 ids), or None without byte fallback;
    ``unk_id``: the unknown piece; ``characters``: the characters that are
    symbols (built from their bytes) though not all need be pieces; ``rule``:
    the merges, given by the pieces' ids (``Ranks``: the pieces of several
    characters in rank order; ``Merges``: pairs of ids, each making one).

    ``no_spaces``: the caller's normalized text holds no space of its own
    (each became ``▁``). Then, where no piece or special token holds a space
    and no special token holds ``▁``, the kernel's text and pieces write
    ``▁`` as an ASCII space (``space``, ``kernel_text``): one byte, not three,
    so no merges to make it and shorter pre-tokens, and the pairs of ASCII
    characters decide the cuts around it.
    """

    def __init__(self, pieces: Mapping[str, int], n_vocab: int, byte_pieces: Optional[Sequence[int]],
                 unk_id: int, characters: Iterable[str], rule: Rule, special_tokens: Mapping[str, int] = {},
                 no_spaces: bool = False):
        space = no_spaces and not any(" " in text for text in [*pieces, *special_tokens]) and not any(
            SPACE in text for text in special_tokens)
        self.space = space
        ids: dict[bytes, int] = {(text.replace(SPACE, " ") if space else text).encode("utf-8"): token_id
                                 for text, token_id in pieces.items()}
        extra = n_vocab
        fallback = {}                    # a token past the model's ids -> the ids it stands for
        byte_ids = np.empty(256, dtype=np.int32)
        for b in range(256):
            token = bytes([b])
            if token not in ids:
                if space and token == b" ":
                    # ▁, which is no piece: its bytes' pieces, or the unknown piece.
                    ids[token] = extra
                    fallback[extra] = [unk_id] if byte_pieces is None else [byte_pieces[x] for x in _SPACE_UTF8]
                    extra += 1
                elif byte_pieces is not None:
                    ids[token] = byte_pieces[b]
                else:
                    ids[token] = extra
                    fallback[extra] = [unk_id]
                    extra += 1
            byte_ids[b] = ids[token]
        if space:
            characters = [c for c in characters if c != SPACE]
        # Each multi-byte character from its bytes, a byte at a time: the
        # merge of a prefix and the next byte, shorter prefixes first.
        made: dict[bytes, tuple[int, int]] = {}        # prefix -> (its prefix's id, the byte's id)
        characters = list(characters)
        for c in characters:
            raw = c.encode("utf-8")
            for length in range(2, len(raw) + 1):
                part = raw[:length]
                if part not in ids:
                    ids[part] = extra
                    fallback[extra] = [byte_pieces[b] if byte_pieces is not None else unk_id for b in part]
                    extra += 1
                made[part] = (ids[part[:-1]], byte_ids[part[-1]])
        made_order = sorted(made, key=lambda part: (len(part), part))
        tokens = sorted(ids.items(), key=lambda item: item[1])
        data, offsets = flatten([token for token, _ in tokens])
        arrays = {"byte_ids": byte_ids, "token_data": data, "token_offsets": offsets,
                  "token_ids": np.array([token_id for _, token_id in tokens], dtype=np.int32),
                  "whole_tokens": np.array(False)}
        made_ids = np.array([ids[part] for part in made_order], dtype=np.int32)
        if isinstance(rule, Ranks):
            arrays["ranked_ids"] = np.concatenate([made_ids, np.asarray(rule.ranked, dtype=np.int32)])
        else:
            made_pairs = np.array([made[part] for part in made_order], dtype=np.int32).reshape(-1, 2)
            arrays["merge_pairs"] = np.ascontiguousarray(np.concatenate([
                made_pairs, np.asarray(rule.pairs, dtype=np.int32).reshape(-1, 2)]))
            arrays["ranked_ids"] = np.concatenate([made_ids, np.asarray(rule.merged, dtype=np.int32)])
        self.pattern, cuts = character_cuts(pieces, space)
        arrays.update(cuts)
        if cuts:
            arrays["alone_ids"] = alone_ids(cuts["alone"], {c: ids[c.encode("utf-8")] for c in characters})
        self.encoder = Encoder(arrays, self.pattern, special_tokens)
        self._special_names = list(special_tokens)
        #: The model's ids as Python ints, made once (``bpe._lists``).
        self.ints = PrebuiltInts(n_vocab)
        self.fuse_unknown = byte_pieces is None
        self.unk_id = unk_id
        # Row k: what token n_vocab + k stands for (at most a character's 4 bytes).
        fallback_lengths = np.array([len(fallback[t]) for t in range(n_vocab, extra)], dtype=np.uint8)
        fallback_ids = np.zeros((extra - n_vocab, 4), dtype=np.uint32)
        for t in range(n_vocab, extra):
            fallback_ids[t - n_vocab, :len(fallback[t])] = fallback[t]
        self._expanding = Expanding(n_vocab, fallback_ids, fallback_lengths, unk_id if self.fuse_unknown else -1)
        # One text in one kernel call (``encode_text``), its ids expanded
        # there; None where the kernel has no pattern of its own.
        self._short = self.encoder.short_calls(self.ints)
        if self._short is not None:
            self._short.expanding = self._expanding

    @property
    def short_calls(self):
        """The kernel's calls on one text (``ShortCalls``), its ids expanded; None without."""
        return self._short

    def kernel_text(self, data: bytes) -> bytes:
        """Normalized text (UTF-8) as the kernel reads it: with ``space``, ``▁`` as a space."""
        return data.replace(_SPACE_UTF8, b" ") if self.space else data

    def encode(self, data: np.ndarray, offsets: np.ndarray,
               special: Sequence[str] = ()) -> tuple[np.ndarray, np.ndarray]:
        """The ids of each text of ``data`` (``kernel_text``'s UTF-8, text t
        ``data[offsets[t]:offsets[t + 1]]``), ``special`` found in it, as ``(ids, offsets)``."""
        return self.finish(*self.encoder.encode_utf8_texts(data, offsets, special))

    def encode_strs(self, texts: Sequence[str], prefix: bool,
                    special: Sequence[str] = ()) -> tuple[np.ndarray, np.ndarray]:
        """``encode``'s ``(ids, offsets)`` of ``kernel_text`` of each str's
        normalized UTF-8, where the normalizer only writes each space as ``▁``
        (one more in front with ``prefix``) and ``space`` holds: made by the
        kernel, without the GIL (``Encoder.encode_metaspace_strs``)."""
        return self.finish(*self.encoder.encode_metaspace_strs(texts, prefix, special))

    def encode_text(self, data: bytes, narrow: bool = False) -> np.ndarray:
        """``encode``'s ids of one text (``kernel_text``'s UTF-8), every special
        token found in it: in one kernel call, without a batch's set-up (a
        pooled session, offsets, a cumulative sum), which cost a short text
        ten times sentencepiece's whole call. uint32, or with ``narrow`` (the
        model's ids all fit) uint16 where that call made them."""
        ids = self._short.utf8_to_array(data, narrow) if self._short is not None else None
        return ids if ids is not None else self._general(data)

    def list_text(self, data: bytes) -> list[int]:
        """``encode_text``'s ids as a list, made in the same kernel call."""
        got = self._short.utf8_to_list(data) if self._short is not None else None
        return got if got is not None else ids_to_list(self._general(data), self.ints)

    def _general(self, data: bytes) -> np.ndarray:
        """``encode_text``'s ids by the batch's path (a text the one-text call does not take)."""
        return self.encode(np.frombuffer(data, dtype=np.uint8), np.array([0, len(data)], dtype=np.int64),
                           self._special_names)[0]

    def finish(self, ids: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The kernel's ids of each text (``ids[offsets[t]:offsets[t + 1]]``) as
        the model's: a token past its ids (a partial character, or a byte with
        no piece) becomes the ids it stands for; without byte fallback, a run
        of unknown ids in a text becomes one."""
        if all_below(ids, self._expanding.first):
            return ids, offsets
        return expand_ids(ids, offsets, self._expanding)
