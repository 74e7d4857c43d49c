"""SentencePiece BPE (Llama 2, Mistral 7B, ...) encoded exactly, by the kernel.

SentencePiece merges over characters, not bytes: the text's spaces become
``▁`` (with one more in front), each character is a symbol (a user-defined
piece matched in the text is one, and never merges), and then the adjacent
pair whose joined text is a piece of highest score merges, the leftmost among
equals, until none can. A character no piece covers becomes its UTF-8 bytes'
``<0xNN>`` pieces (``byte_fallback``) or the unknown piece.

That is tiktoken's rule over a ranked vocabulary, with ranks by score, once
characters are tokens: so each multi-byte character is made from its bytes by
merges ranked before every real one (a proper prefix of a character is a
token of its own here, numbered past the model's pieces), and a piece of
several characters has the rank of its score. A pre-token is merged even when
it is a token (SentencePiece has no such shortcut), and no merge crosses a
``▁`` that follows another character where no piece holds one so: there the
text is cut into pre-tokens. The kernel does all the merging; ids are the
model's own, except for the rare character that is no piece but shares its
first bytes with one, whose partial token is turned back into its bytes' ids.

Ties: pieces of equal score merge leftmost first, which ranks cannot say in
general. The models in use tie only runs of one character (``▁▁`` to
``▁`` * 16, all at -1e9), and for a run ranking the longer first gives the
leftmost-first result; any other tie is refused.
"""
from __future__ import annotations

import codecs
import hashlib
import math
import os
import re
from typing import Iterable, Optional, Sequence

import numpy as np

from bpe._lists import PrebuiltInts, ids_to_list, ids_to_lists
from bpe.encoder import Encoder, utf8
from bpe.errors import TokenizerFileError
from bpe.flat import flatten
from bpe.formats.sentencepiece import (BYTE, CONTROL, MODEL_TYPES, NORMAL, TYPE_NAMES, UNKNOWN, UNUSED,
                                       USER_DEFINED, SentencePieceFile, read_sentencepiece)
from bpe.vocabulary import ids_dtype

SPACE = "\u2581"                     # ▁, which stands for a space in pieces
_SPACE_UTF8 = SPACE.encode("utf-8")
_SPACE_RUNS = re.compile(b" {2,}")
#: The cuts before each run of ▁ alone, for models with pieces that hold a tab or a line feed.
WORDS = f"{SPACE}+[^{SPACE}]*|[^{SPACE}]+"


class SentencePieceTokenizer:
    """A SentencePiece BPE model: ``encode`` gives ``SentencePieceProcessor.encode``'s
    ids, ``decode`` its text."""

    def __init__(self, model: SentencePieceFile, source: Optional[str] = None):
        self.source = source
        where = source or "the model"

        def refuse(field: str, why: str) -> TokenizerFileError:
            return TokenizerFileError(f"{where}: {field}: {why}")

        if model.model_type != 2:
            kind = MODEL_TYPES.get(model.model_type, str(model.model_type))
            raise refuse("trainer_spec.model_type", f"{kind}; bpe reads SentencePiece's BPE models only")
        for field, spec in (("normalizer_spec", model.normalizer), ("denormalizer_spec", model.denormalizer)):
            if spec.precompiled_charsmap:
                raise refuse(f"{field}.precompiled_charsmap", f"{spec.name!r} normalizes with a character "
                                                              "map, which bpe does not apply; only 'identity' "
                                                              "is read")
        if model.treat_whitespace_as_suffix:
            raise refuse("trainer_spec.treat_whitespace_as_suffix", "true; bpe reads prefix ▁ models only")
        self.add_dummy_prefix = model.normalizer.add_dummy_prefix
        self.remove_extra_whitespaces = model.normalizer.remove_extra_whitespaces
        self.escape_whitespaces = model.normalizer.escape_whitespaces
        pieces = model.pieces
        #: The model's pieces in id order: ``(text, score, type)``, the type one of
        #: ``bpe.formats.sentencepiece``'s (NORMAL, CONTROL, BYTE...).
        self.pieces = list(pieces)
        self.n_vocab = len(pieces)
        self._ints = PrebuiltInts(self.n_vocab)
        self.bos_id, self.eos_id, self.pad_id = model.bos_id, model.eos_id, model.pad_id
        self.byte_fallback = model.byte_fallback
        self.unk_surface = model.unk_surface
        seen: dict[str, int] = {}
        unk_ids = []
        for index, piece in enumerate(pieces):
            if piece.type not in TYPE_NAMES:
                raise refuse(f"pieces[{index}].type", f"{piece.type}, which sentencepiece does not define")
            if piece.type == UNUSED:
                raise refuse(f"pieces[{index}]", f"{piece.text!r} is an unused piece, which bpe does not read")
            if not piece.text:
                raise refuse(f"pieces[{index}]", "an empty piece")
            if piece.text in seen:
                raise refuse(f"pieces[{index}]", f"{piece.text!r} is also piece {seen[piece.text]}")
            seen[piece.text] = index
            if piece.type == UNKNOWN:
                unk_ids.append(index)
        if len(unk_ids) != 1:
            raise refuse("pieces", f"{len(unk_ids)} unknown pieces; sentencepiece needs exactly one")
        self.unk_id = unk_ids[0]
        if self.unk_id != model.unk_id:
            raise refuse("trainer_spec.unk_id", f"{model.unk_id}, but the unknown piece is {self.unk_id}")
        self.user_defined = {p.text: i for i, p in enumerate(pieces) if p.type == USER_DEFINED}
        spaced = [text for text in self.user_defined if " " in text]
        if spaced and self.remove_extra_whitespaces:
            raise refuse(f"pieces[{self.user_defined[spaced[0]]}]",
                         f"the user-defined {spaced[0]!r} holds a space, whose run sentencepiece's normalizer keeps "
                         "where remove_extra_whitespaces shortens every other; bpe does not read that yet")
        self._user_defined_names = list(self.user_defined)
        self._build(pieces, refuse)
        digest = hashlib.sha256(repr((
            [tuple(piece) for piece in pieces], model.byte_fallback, model.unk_surface, model.normalizer,
            (model.bos_id, model.eos_id))).encode("utf-8", "surrogatepass"))
        self._fingerprint = digest.hexdigest()

    # -- the kernel's vocabulary ------------------------------------------------

    def _build(self, pieces, refuse) -> None:
        n = len(pieces)
        ids: dict[bytes, int] = {}            # every token of the kernel: its bytes -> id
        byte_piece = [-1] * 256
        for index, piece in enumerate(pieces):
            if piece.type == BYTE:
                match = re.fullmatch(r"<0x([0-9A-F]{2})>", piece.text)
                if match is None:
                    raise refuse(f"pieces[{index}]", f"{piece.text!r} is a byte piece not named <0xNN>")
                byte_piece[int(match.group(1), 16)] = index
        if not self.byte_fallback and max(byte_piece) >= 0:
            index = max(byte_piece)
            raise refuse(f"pieces[{index}]", f"{pieces[index].text!r} is a byte piece, but trainer_spec.byte_fallback "
                                             "is false (sentencepiece refuses such a model)")
        if self.byte_fallback and min(byte_piece) < 0:
            raise refuse("pieces", f"byte_fallback is on, but no piece is <0x{byte_piece.index(-1):02X}>")
        normal = [(index, piece) for index, piece in enumerate(pieces) if piece.type == NORMAL]
        for index, piece in normal:
            ids[piece.text.encode("utf-8")] = index
        # Each byte's token: its character's piece (ASCII), else its <0xNN>
        # piece; else (no byte fallback) a token of its own past the pieces.
        extra = n
        fallback = {}                        # a token past the pieces -> the ids it stands for
        byte_ids = np.empty(256, dtype=np.int32)
        for b in range(256):
            token = bytes([b])
            if token not in ids:
                if byte_piece[b] >= 0 and self.byte_fallback:
                    ids[token] = byte_piece[b]
                else:
                    ids[token] = extra
                    fallback[extra] = [self.unk_id]          # (with byte fallback every byte has a piece)
                    extra += 1
            byte_ids[b] = ids[token]
        # Every character of a piece, made from its bytes: its proper prefixes
        # are tokens, and the character is one even where it is no piece itself.
        characters = sorted({c for _, piece in normal for c in piece.text if ord(c) >= 0x80},
                            key=lambda c: len(c.encode("utf-8")))
        made = []
        for c in characters:
            raw = c.encode("utf-8")
            for length in range(2, len(raw) + 1):
                part = raw[:length]
                if part not in ids:
                    ids[part] = extra
                    fallback[extra] = [byte_piece[b] if self.byte_fallback else self.unk_id for b in part]
                    extra += 1
                made.append(part)
        made = sorted(set(made), key=lambda part: (len(part), part))
        # Pieces of several characters, ranked by score (highest first).
        merged = [(_score_key(piece.score), index, piece.text) for index, piece in normal if len(piece.text) > 1]
        merged.sort(key=lambda item: item[0], reverse=True)
        ranked_pieces = []
        start = 0
        while start < len(merged):
            stop = start
            while stop < len(merged) and merged[stop][0] == merged[start][0]:
                stop += 1
            group = merged[start:stop]
            if len(group) > 1:
                self._check_tie(group, merged, refuse)
                group.sort(key=lambda item: -len(item[2]))
            ranked_pieces.extend(index for _, index, _ in group)
            start = stop
        tokens = sorted(ids.items(), key=lambda item: item[1])
        data, offsets = flatten([token for token, _ in tokens])
        ranked = [ids[part] for part in made] + ranked_pieces
        self._kernel_arrays = {
            "byte_ids": byte_ids, "token_data": data, "token_offsets": offsets,
            "token_ids": np.array([token_id for _, token_id in tokens], dtype=np.int32),
            "ranked_ids": np.array(ranked, dtype=np.int32), "whole_tokens": np.array(False),
        }
        # A merge makes a piece of the two parts it joins, so it never crosses
        # between two characters that no piece holds side by side. Where no
        # piece holds ▁ after another character, the text is cut before each
        # run of ▁; where no piece of several characters holds a tab or a line
        # feed, around each of them too (the metaspace pattern, natively).
        words = not any(SPACE in piece.text.lstrip(SPACE) for _, piece in normal)
        lines = not any(c in piece.text for _, piece in normal if len(piece.text) > 1 for c in "\t\n")
        self.pattern = ("metaspace" if lines else WORDS) if words else None
        self._encoder = Encoder(self._kernel_arrays, self.pattern, self.user_defined)
        # Row k: what token n + k stands for (at most a character's 4 bytes).
        self._first_extra = n
        self._fallback_lengths = np.array([len(fallback[t]) for t in range(n, extra)], dtype=np.int64)
        self._fallback_ids = np.zeros((extra - n, 4), dtype=np.uint32)
        for t in range(n, extra):
            self._fallback_ids[t - n, :len(fallback[t])] = fallback[t]
        self._texts = [piece.text for piece in pieces]
        self._types = [piece.type for piece in pieces]
        self._byte_of = {index: int(piece.text[3:5], 16) for index, piece in enumerate(pieces) if piece.type == BYTE}

    @staticmethod
    def _check_tie(group, merged, refuse) -> None:
        """Pieces of equal score (``(key, id, text)``) merge leftmost first, which
        ranking the longer first reproduces only where they are every run of one
        character that the model holds (``▁▁`` to ``▁`` * 16 in Mistral's);
        anything else is refused. (``▁▁`` -1, ``▁▁▁`` -2 and a tie of ``▁▁▁▁``
        and ``▁▁▁▁▁`` would not be.)"""
        a, b = group[0], group[1]
        character = a[2][0]
        runs = {text for _, _, text in merged if set(text) == {character}}
        if not all(set(text) == {character} for _, _, text in group) or runs != {text for _, _, text in group}:
            raise refuse(f"pieces[{b[1]}]", f"{b[2]!r} has the score of piece {a[1]} ({a[2]!r}), {a[0][0]}; bpe "
                                            "ranks equal scores only where they are all the runs of one character "
                                            "the model holds")

    # -- encoding ----------------------------------------------------------------

    def normalize(self, text: str) -> str:
        """The text as SentencePiece's identity normalizer leaves it: spaces as ``▁``,
        with one in front; with ``remove_extra_whitespaces``, no spaces in front,
        runs of spaces as one, and no ``▁`` at the end (a ``▁`` of the text's
        own too)."""
        return self._normalized_utf8(text).decode("utf-8")

    def _normalized_utf8(self, text: str) -> bytes:
        """``normalize(text)`` as UTF-8, made on the bytes: a str holding ``▁`` is
        no longer ASCII, and converting it to UTF-8 took a tenth of the time."""
        data = utf8(text)
        if self.remove_extra_whitespaces:
            data = data.lstrip(b" ")
            if b"  " in data:
                data = _SPACE_RUNS.sub(b" ", data)
        if not data:
            return data
        space = _SPACE_UTF8 if self.escape_whitespaces else b" "
        if self.escape_whitespaces:
            data = data.replace(b" ", space)
        if self.add_dummy_prefix:
            data = space + data
        if self.remove_extra_whitespaces:
            end = len(data)
            while data.endswith(space, 0, end):
                end -= len(space)
            data = data[:end]
        return data

    def _finish(self, ids: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The kernel's ids of each text (``ids[offsets[t]:offsets[t + 1]]``) as
        the model's: a token past the pieces (a partial character, or a byte
        with no piece) becomes the ids it stands for; without byte fallback, a
        run of unknown ids becomes one."""
        if not ids.size or int(ids.max()) < self._first_extra:
            return ids, offsets
        extra = ids >= self._first_extra
        rows = ids[extra].astype(np.int64) - self._first_extra
        lengths = np.ones(ids.size, dtype=np.int64)
        lengths[extra] = self._fallback_lengths[rows]
        ends = np.cumsum(lengths)
        starts = ends - lengths
        out = np.empty(int(ends[-1]), dtype=np.uint32)
        out[starts[~extra]] = ids[~extra]
        for j in range(self._fallback_ids.shape[1]):
            has = lengths[extra] > j
            out[starts[extra][has] + j] = self._fallback_ids[rows[has], j]
        offsets = np.concatenate([[0], ends])[offsets]
        if not self.byte_fallback:
            repeat = np.zeros(out.size, dtype=bool)
            repeat[1:] = (out[1:] == self.unk_id) & (out[:-1] == self.unk_id)
            repeat[offsets[:-1][offsets[:-1] < out.size]] = False      # a text's first id repeats nothing
            kept = np.concatenate([[0], np.cumsum(~repeat)])
            out, offsets = out[~repeat], kept[offsets]
        return out, offsets

    def _encode(self, texts: Sequence[str], add_bos: bool, add_eos: bool) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, offsets)``: the ids of text t are ``ids[offsets[t]:offsets[t + 1]]`` (uint32)."""
        for wanted, name, token_id in ((add_bos, "bos", self.bos_id), (add_eos, "eos", self.eos_id)):
            if wanted and not (0 <= token_id < self.n_vocab and self._types[token_id] == CONTROL):
                raise ValueError(f"{self.source or 'the model'}: add_{name}: the model's {name}_id is "
                                 f"{token_id}, not a control piece")
        normalized = [self._normalized_utf8(text) for text in texts]
        offsets = np.zeros(len(normalized) + 1, dtype=np.int64)
        np.cumsum([len(data) for data in normalized], out=offsets[1:])
        data = np.frombuffer(b"".join(normalized), dtype=np.uint8)
        ids, offsets = self._finish(*self._encoder.encode_utf8_texts(data, offsets, self._user_defined_names))
        if add_bos or add_eos:
            bounds = offsets.tolist()
            before = [self.bos_id] if add_bos else []
            after = [self.eos_id] if add_eos else []
            parts = [np.concatenate([np.array(before, np.uint32), ids[a:b], np.array(after, np.uint32)])
                     for a, b in zip(bounds, bounds[1:])]
            ids = np.concatenate(parts) if parts else np.empty(0, np.uint32)
            offsets = offsets + np.arange(len(offsets)) * (len(before) + len(after))
        return ids, offsets

    def encode(self, text: str, *, add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """The ids of ``text``, as ``SentencePieceProcessor.encode`` gives them;
        BOS and EOS only when asked for, as there."""
        return ids_to_list(self._encode([text], add_bos, add_eos)[0], self._ints)

    def encode_ordinary(self, text: str) -> list[int]:
        """``encode(text)``: no id but the text's (for code written for ``Tokenizer``)."""
        return self.encode(text)

    def count(self, text: str) -> int:
        """How many ids ``encode(text)`` gives."""
        return len(self._encode([text], False, False)[0])

    def encode_to_numpy(self, text: str, *, add_bos: bool = False, add_eos: bool = False) -> np.ndarray:
        """The ids of ``text`` as a uint32 array."""
        return self._encode([text], add_bos, add_eos)[0]

    def encode_batch(self, texts: Sequence[str], *, add_bos: bool = False, add_eos: bool = False) -> list[list[int]]:
        """The ids of each text, as lists, in one kernel call."""
        return ids_to_lists(*self._encode(texts, add_bos, add_eos), self._ints)

    def encode_batch_to_numpy(self, texts: Sequence[str], *, add_bos: bool = False,
                              add_eos: bool = False) -> list[np.ndarray]:
        """The ids of each text, as uint32 arrays, in one kernel call."""
        ids, offsets = self._encode(texts, add_bos, add_eos)
        bounds = offsets.tolist()
        return [ids[a:b] for a, b in zip(bounds, bounds[1:])]

    def fingerprint(self) -> str:
        """sha256 of everything in the model that decides ids and text."""
        return self._fingerprint

    # -- corpora -----------------------------------------------------------------

    def encode_file(self, inputs, output, *, add_bos: bool = False, add_eos: bool = False, dtype=None,
                    num_workers: Optional[int] = None, errors: str = "strict", progress: bool = False,
                    text_field: str = "text", recursive: bool = False, glob: Optional[str] = None):
        """Encode corpus files into a flat token array readable with ``bpe.open_tokens``,
        as ``Tokenizer.encode_file`` does, with one difference: a document is
        each record of JSON Lines or Parquet, or a whole text file (SentencePiece
        has no separator token to find in text), and its ids are ``encode``'s,
        with BOS and EOS as asked. The document index marks where each starts."""
        from bpe.corpus.driver import encode_file

        return encode_file(_CorpusView(self, add_bos, add_eos), inputs, output, dtype=dtype,
                           num_workers=num_workers, errors=errors, progress=progress, text_field=text_field,
                           recursive=recursive, glob=glob)

    def encode_documents(self, texts, output, *, add_bos: bool = False, add_eos: bool = False, dtype=None,
                         num_workers: Optional[int] = None, errors: str = "strict", progress: bool = False,
                         text_field: str = "text"):
        """Encode Python texts (an iterable of str, or a ``datasets`` dataset's
        ``text_field`` column) into a token array, one document each, as ``encode_file``."""
        from bpe.corpus.driver import encode_documents

        return encode_documents(_CorpusView(self, add_bos, add_eos), texts, output, dtype=dtype,
                                num_workers=num_workers, errors=errors, progress=progress, text_field=text_field)

    # -- decoding ----------------------------------------------------------------

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids``, as ``SentencePieceProcessor.decode`` gives it: byte
        pieces joined into characters (one U+FFFD for each byte that makes
        none), control pieces as nothing, the unknown piece as its surface,
        and the ``▁`` in front that the dummy prefix put there dropped."""
        out: list[str] = []
        pending = bytearray()           # byte pieces, decoded together at the next other piece
        strip = self.add_dummy_prefix or self.remove_extra_whitespaces
        at_start = True
        for token_id in ids:
            token_id = int(token_id)
            if not 0 <= token_id < self.n_vocab:
                raise ValueError(f"id {token_id} is not in [0, {self.n_vocab})")
            kind = self._types[token_id]
            if kind == BYTE:
                pending.append(self._byte_of[token_id])
                continue
            if pending:
                out.append(pending.decode("utf-8", "bpe-sentencepiece"))
                pending.clear()
            if out and out[-1]:
                at_start = False
            if kind == CONTROL:
                continue
            text = self.unk_surface if kind == UNKNOWN else self._texts[token_id]
            if at_start and strip and kind != UNKNOWN and text.startswith(SPACE):
                text = text[1:]
                if not self.remove_extra_whitespaces:
                    at_start = False
            out.append(text.replace(SPACE, " ") if kind != UNKNOWN else text)
        if pending:
            out.append(pending.decode("utf-8", "bpe-sentencepiece"))
        return "".join(out)

    def __repr__(self) -> str:
        return f"SentencePieceTokenizer(n_vocab={self.n_vocab}, source={self.source!r})"


def _score_key(score: float) -> tuple[float, bool]:
    """A score as sentencepiece orders them: by value, but -0.0 below +0.0 (it
    compares the floats' bits, and a trained model's first merge scores -0.0)."""
    return score, not math.copysign(1.0, score) < 0


def _per_byte_replace(error: UnicodeDecodeError) -> tuple[str, int]:
    """sentencepiece's decoding of bytes that are not UTF-8: one U+FFFD a byte."""
    return "\ufffd" * (error.end - error.start), error.end


codecs.register_error("bpe-sentencepiece", _per_byte_replace)


def from_sentencepiece(path) -> SentencePieceTokenizer:
    """Read a SentencePiece BPE ``.model`` file."""
    path = os.fspath(path)
    return SentencePieceTokenizer(read_sentencepiece(path), path)


class _CorpusView:
    """A SentencePiece tokenizer as ``bpe.corpus`` encodes with it (the tokenizer
    and the encoder it asks for, in one): every text it is given (a record, a
    whole file) is one document, normalized and encoded whole as
    SentencePiece encodes a text. So it offers no special token (none
    separates documents, none may cut a text) and no pattern (no cut is safe:
    the dummy prefix belongs to a document's start)."""

    special_tokens: dict = {}
    pattern = None

    def __init__(self, tokenizer: SentencePieceTokenizer, add_bos: bool, add_eos: bool):
        self.tokenizer = tokenizer
        self.encoder = self
        self.n_vocab = tokenizer.n_vocab
        self.add_bos, self.add_eos = add_bos, add_eos
        self.framing = {"add_bos": add_bos, "add_eos": add_eos}      # recorded in the array's sidecar

    def fingerprint(self) -> str:
        # The model's: the array is its ids (with BOS and EOS, as separators are
        # with other tokenizers), and decoding it checks it was encoded with it.
        return self.tokenizer.fingerprint()

    def token_dtype(self, dtype=None) -> np.dtype:
        return ids_dtype(self.n_vocab, dtype)

    def sharing_cache(self):
        return self.tokenizer._encoder.sharing_cache()

    # What the corpus writers call. ``out``, the buffer they offer for the ids
    # (one per byte), goes unused: a document may have more ids than bytes (the
    # dummy prefix, BOS, EOS), so the ids are new arrays, which the writers copy
    # from and make room for.
    def encode_strs(self, texts: Sequence[str], allowed=(), out=None) -> tuple[np.ndarray, np.ndarray]:
        return self.tokenizer._encode(texts, self.add_bos, self.add_eos)

    def encode_utf8(self, data, allowed=(), out=None) -> np.ndarray:
        return self.encode_strs([bytes(data).decode("utf-8")])[0]

    def encode_utf8_texts(self, data: np.ndarray, offsets: np.ndarray, allowed=(),
                          out=None) -> tuple[np.ndarray, np.ndarray]:
        raw, bounds = bytes(data), offsets.tolist()
        return self.encode_strs([raw[a:b].decode("utf-8") for a, b in zip(bounds, bounds[1:])])
