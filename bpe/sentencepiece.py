"""SentencePiece-style BPE (Llama 2, Mistral 7B, ...) encoded exactly, by the kernel.

SentencePiece merges over characters, not bytes: the text's spaces become
``▁`` (with one more in front), each character is a symbol (a user-defined
piece matched in the text is one, and never merges), and then the adjacent
pair whose joined text is a piece of highest score merges, the leftmost among
equals, until none can. A character no piece covers becomes its UTF-8 bytes'
``<0xNN>`` pieces (``byte_fallback``) or the unknown piece.
``bpe.charlevel`` runs that on the byte kernel; here are the two ways these
models come, over what they share (``CharacterTokenizer``):

* ``SentencePieceTokenizer``, a ``.model``: pieces rank by score, and its
  normalizer and decoding are sentencepiece's. Ties: pieces of equal score
  merge leftmost first, which ranks cannot say in general. The models in use
  tie only runs of one character (``▁▁`` to ``▁`` * 16, all at -1e9), and
  for a run ranking the longer first gives the leftmost-first result; any
  other tie is refused.
* ``HuggingFaceSentencePiece``, the same models as Hugging Face converts them
  (``tokenizer.json``, read by ``bpe.huggingface.characters``): added tokens,
  normalizer and pre-tokenizer as ``tokenizers`` runs them, merges ranked as
  its listed pairs, and its decoders.
"""
from __future__ import annotations

import codecs
import hashlib
import itertools
import math
import os
import re
from typing import TYPE_CHECKING, Iterable, Iterator, Optional, Sequence

import numpy as np

from bpe._decode import DecodeTable
from bpe._lists import PrebuiltInts, ids_to_list, ids_to_lists
from bpe.charlevel import SPACE, UINT16, CharacterVocabulary
from bpe.encoder import utf8
from bpe.flat import flatten
from bpe.errors import TokenizerFileError
from bpe.huggingface.characters import CharacterFile, bytewise, decode_step, spaces_all_replaced, str_prefix
from bpe.formats.sentencepiece import (BYTE, CONTROL, MODEL_TYPES, NORMAL, TYPE_NAMES, UNKNOWN, UNUSED,
                                       USER_DEFINED, SentencePieceFile, read_sentencepiece)
from bpe.vocabulary import Ranks, ids_dtype
from bpe.workers import RecentlyBuilt, batch_chars, batches, map_on_threads, resolve_workers

if TYPE_CHECKING:
    from bpe.view import Token, TokenComparison

_SPACE_UTF8 = SPACE.encode("utf-8")
_SPACE_RUNS = re.compile(b" {2,}")

#: (class, _reuse_key) -> tokenizer: the few this process unpickled last.
_UNPICKLED = RecentlyBuilt(4)


def _unpickled(cls: type, reuse_key: tuple, made_from: tuple) -> "CharacterTokenizer":
    """The tokenizer this process already unpickled with that key (its
    fingerprint, and what else it was made from: ``_reuse_key``), or one built
    now from ``made_from`` (its constructor's arguments)."""
    return _UNPICKLED.get((cls, reuse_key), lambda: cls(*made_from))


def _not_strs(texts) -> Optional[TypeError]:
    """The TypeError naming the first of ``texts`` that is no str, or None."""
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            where = "" if len(texts) == 1 else f"texts[{index}] "
            return TypeError(f"{where}text is {type(text).__name__}, not str")
    return None


class CharacterTokenizer:
    """What the tokenizers of SentencePiece-style BPE share: encoding texts
    (``_ids``, each subclass's) with what is asked around them (``_framing``)
    into lists, arrays and token arrays on disk."""

    source: Optional[str]
    n_vocab: int
    _ints: PrebuiltInts
    _vocabulary: CharacterVocabulary
    _fingerprint: str
    _made_from: tuple                  # the constructor's arguments: what pickling sends
    _reuse_key: tuple                  # the fingerprint and the rest of _made_from: equal, the same tokenizer
    _narrow: bool                      # every id fits uint16: arrays are uint16 unless asked otherwise
    # The kernel's calls that normalize a str themselves (``ShortCalls.metaspace_to_list``),
    # where that is all the normalizer does, with a ``▁`` in front or not; else None.
    _str_calls = None
    _str_prefix = False

    def __reduce__(self):
        # Sent as what it was built from (the parsed file, no kernel state); a
        # process that unpickles the same tokenizer again (a worker given it with
        # every task) gets the one it built the first time, not another 0.2 s.
        return _unpickled, (type(self), self._reuse_key, self._made_from)

    def _framing(self, **asked) -> tuple[list[int], list[int]]:
        """The ids before and after each text's, for what the caller asked."""
        raise NotImplementedError

    def _ids(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, offsets)``: the ids of text t, its own alone, are ``ids[offsets[t]:offsets[t + 1]]`` (uint32)."""
        raise NotImplementedError

    def _encode(self, texts: Sequence[str], **asked) -> tuple[np.ndarray, np.ndarray]:
        """``_ids``, with ``_framing``'s ids around each text's."""
        before, after = self._framing(**asked)
        try:
            ids, offsets = self._ids(texts)
        except (AttributeError, TypeError) as error:
            raise _not_strs(texts) or error from None
        if not (before or after):
            return ids, offsets
        bounds = offsets.tolist()
        head, tail = np.array(before, np.uint32), np.array(after, np.uint32)
        parts = [np.concatenate([head, ids[a:b], tail]) for a, b in zip(bounds, bounds[1:])]
        ids = np.concatenate(parts) if parts else np.empty(0, np.uint32)
        return ids, offsets + np.arange(len(offsets)) * (len(before) + len(after))

    def _kernel_bytes(self, text: str) -> Optional[bytes]:
        """The text as the kernel reads it, normalized, where it is one stretch
        of the kernel's (None: ``_ids`` must take it)."""
        raise NotImplementedError

    def _text_ids(self, text: str, narrow: bool = False) -> np.ndarray:
        """``_ids`` of one text: its own ids alone (uint32; or uint16 with
        ``narrow``, where the kernel made them so in one call)."""
        if self._str_calls is not None:
            ids = self._str_calls.metaspace_to_array(text, self._str_prefix, narrow)
            if ids is not None:
                return ids
            if isinstance(text, str):          # a long document's, made by the kernel too (``_ids``)
                return self._ids([text])[0]
        return self._bytes_ids(text, narrow)

    def _bytes_ids(self, text: str, narrow: bool = False) -> np.ndarray:
        """``_text_ids`` from the text's kernel bytes (``_kernel_bytes``), or by ``_ids``."""
        try:
            data = self._kernel_bytes(text)
            if data is None:
                return self._ids([text])[0]
        except (AttributeError, TypeError) as error:
            raise _not_strs([text]) or error from None
        return self._vocabulary.encode_text(data, narrow)

    def _text_list(self, text: str) -> list[int]:
        """``_text_ids`` as a list."""
        if self._str_calls is not None:
            got = self._str_calls.metaspace_to_list(text, self._str_prefix)
            if got is not None:
                return got
            if isinstance(text, str):
                return ids_to_list(self._ids([text])[0], self._ints)
        return self._bytes_list(text)

    def _bytes_list(self, text: str) -> list[int]:
        """``_text_list`` from the text's kernel bytes (``_kernel_bytes``), or by ``_ids``."""
        try:
            data = self._kernel_bytes(text)
            if data is None:
                return ids_to_list(self._ids([text])[0], self._ints)
        except (AttributeError, TypeError) as error:
            raise _not_strs([text]) or error from None
        return self._vocabulary.list_text(data)

    def _on_threads(self, texts: Sequence[str], num_threads: Optional[int], encode_group) -> list:
        """``encode_group`` of consecutive groups of ``texts`` (a list of results
        each), on ``num_threads`` threads (None: a thread per core), in order:
        each group one kernel call, which runs without the GIL (as
        ``Tokenizer.encode_batch``)."""
        threads = resolve_workers(num_threads, "num_threads")
        if not isinstance(texts, (list, tuple)):
            texts = list(texts)
        if threads == 1:
            return encode_group(texts)
        error = _not_strs(texts)
        if error is not None:
            raise error
        groups = batches(texts, batch_chars(sum(len(text) for text in texts), threads))
        if len(groups) < 2:
            return encode_group(texts)
        return [item for part in map_on_threads(encode_group, groups, threads) for item in part]

    def _array_of(self, ids: np.ndarray, dtype) -> np.ndarray:
        """``ids`` in ``token_dtype(dtype)``: uint16 where every id fits, as ``Tokenizer``'s."""
        if dtype is None:
            return ids.astype(np.uint16) if self._narrow and ids.dtype is not UINT16 else ids
        dtype = self.token_dtype(dtype)
        return ids if ids.dtype == dtype else ids.astype(dtype)

    def decode(self, ids: Iterable[int]) -> str:
        raise NotImplementedError

    def decode_bytes(self, ids: Iterable[int], **options) -> bytes:
        """``decode``'s text as UTF-8, as sentencepiece's ``decode(ids, out_type=bytes)``
        gives it: these models' decoding makes text (a byte piece that makes no
        character is U+FFFD in it), so this is ``Tokenizer.decode_bytes``'s
        counterpart for code that asks either."""
        return self.decode(ids, **options).encode("utf-8", "surrogatepass")

    def encode_iterable(self, texts: Iterable[str]) -> Iterator[int]:
        """The ids of ``"".join(texts)``, as ``Tokenizer.encode_iterable`` yields
        them: held whole (see ``count_iterable``)."""
        yield from self._text_list("".join(texts))

    def _one(self, text: str, **asked) -> np.ndarray:
        """``_encode`` of one text: its ids, with ``_framing``'s around them."""
        before, after = self._framing(**asked)
        ids = self._text_ids(text)
        if before or after:
            ids = np.concatenate([np.array(before, np.uint32), ids, np.array(after, np.uint32)])
        return ids

    def _list(self, text: str, **asked) -> list[int]:
        """``_one`` as a list."""
        before, after = self._framing(**asked)
        return before + self._text_list(text) + after

    def _arrays(self, texts: Sequence[str], **asked) -> list[np.ndarray]:
        ids, offsets = self._encode(texts, **asked)
        bounds = offsets.tolist()
        return [ids[a:b] for a, b in zip(bounds, bounds[1:])]

    def encode_ordinary(self, text: str) -> list[int]:
        """The text's own ids, nothing around them (for code written for ``Tokenizer``)."""
        return self._text_list(text)

    def count(self, text: str) -> int:
        """How many ids ``encode_ordinary(text)`` gives."""
        return len(self._text_ids(text))

    def count_iterable(self, texts: Iterable[str]) -> int:
        """How many ids the texts, read as one, give: they are one text to these
        models (a cut moves the dummy prefix and stops merges), so it is held whole."""
        return self.count("".join(texts))

    def _piece(self, token_id: int) -> tuple[bytes, bool]:
        """An id's bytes as its piece holds them, and whether it is special (never merged)."""
        raise NotImplementedError

    def show(self, text: str, *, name: str = "tokenizer", max_chars: Optional[int] = None) -> "TokenComparison":
        """The tokens of ``text``, to look at (as ``Tokenizer.show``): ``print()`` it,
        or leave it last in a notebook cell."""
        from bpe.view import show

        return show(self, text, name, max_chars)

    def view_tokens(self, text: str) -> list["Token"]:
        """The tokens of ``text`` as ``bpe show`` draws them: each with its piece's
        bytes (``▁`` for a space, as the model sees the text) and the characters
        those complete."""
        from bpe.view import Token

        characters = codecs.getincrementaldecoder("utf-8")("replace")
        tokens = []
        for token_id in self._ids([text])[0].tolist():
            data, special = self._piece(token_id)
            tokens.append(Token(token_id, data, characters.decode(data), special))
        return tokens

    def clear_cache(self) -> None:
        """Forget the pre-tokens merged so far (as ``Tokenizer.clear_cache``)."""
        self._vocabulary.encoder.clear_cache()

    def token_dtype(self, dtype=None) -> np.dtype:
        """The dtype of token arrays on disk: uint16 where every id fits, else uint32."""
        return ids_dtype(self.n_vocab, dtype)

    def fingerprint(self) -> str:
        """sha256 of everything in the model that decides ids and text."""
        return self._fingerprint


class SentencePieceTokenizer(CharacterTokenizer):
    """A SentencePiece BPE model: ``encode`` gives ``SentencePieceProcessor.encode``'s
    ids, ``decode`` its text."""

    def __init__(self, model: SentencePieceFile, source: Optional[str] = None):
        self.source = source
        self._made_from = (model, source)
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
        self._narrow = self.token_dtype() == np.uint16
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
        self._reuse_key = (self._fingerprint, source, model._replace(pieces=()))   # the pieces: in the fingerprint

    # -- the kernel's vocabulary ------------------------------------------------

    def _build(self, pieces, refuse) -> None:
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
        normal = {piece.text: index for index, piece in enumerate(pieces) if piece.type == NORMAL}
        # Pieces of several characters, ranked by score (highest first); every
        # character of a piece is a symbol, a piece or not (it may merge into one).
        merged = sorted(((_score_key(pieces[index].score), index, text) for text, index in normal.items()
                         if len(text) > 1), key=lambda item: item[0], reverse=True)
        ranked = []
        for _, tied in itertools.groupby(merged, key=lambda item: item[0]):
            group = list(tied)
            if len(group) > 1:
                self._check_tie(group, merged, refuse)
                group.sort(key=lambda item: -len(item[2]))
            ranked.extend(index for _, index, _ in group)
        characters = {c for text in normal for c in text if ord(c) >= 0x80}
        self._vocabulary = CharacterVocabulary(normal, self.n_vocab, byte_piece if self.byte_fallback else None,
                                               self.unk_id, characters, Ranks(np.array(ranked, dtype=np.int32)),
                                               self.user_defined, no_spaces=self.escape_whitespaces)
        self._ints = self._vocabulary.ints
        self.pattern = self._vocabulary.pattern
        if self._vocabulary.space and not self.remove_extra_whitespaces:
            # _normalized_utf8's kernel text is then the str's UTF-8, ▁ as a space, a space in front.
            self._str_calls, self._str_prefix = self._vocabulary.short_calls, self.add_dummy_prefix
        self._decoding = None
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

    def _normalized_utf8(self, text: str, kernel: bool = False) -> bytes:
        """``normalize(text)`` as UTF-8, made on the bytes: a str holding ``▁`` is
        no longer ASCII, and converting it to UTF-8 took a tenth of the time.
        With ``kernel``, as the kernel reads it (``CharacterVocabulary.kernel_text``,
        made at once: where ``▁`` is a space there, escaping is a no-op)."""
        data = utf8(text)
        if self.remove_extra_whitespaces:
            data = data.lstrip(b" ")
            if b"  " in data:
                data = _SPACE_RUNS.sub(b" ", data)
        if not data:
            return data
        space = _SPACE_UTF8 if self.escape_whitespaces else b" "
        if kernel and self._vocabulary.space:
            space = b" "
            if SPACE in text:               # O(1) in a str of ASCII or Latin-1 alone
                data = data.replace(_SPACE_UTF8, space)       # the text's own ▁, which is one with a space
        elif self.escape_whitespaces:
            data = data.replace(b" ", space)
        if self.add_dummy_prefix:
            data = space + data
        if self.remove_extra_whitespaces:
            end = len(data)
            while data.endswith(space, 0, end):
                end -= len(space)
            data = data[:end]
        return data

    def _framing(self, add_bos: bool = False, add_eos: bool = False) -> tuple[list[int], list[int]]:
        for wanted, name, token_id in ((add_bos, "bos", self.bos_id), (add_eos, "eos", self.eos_id)):
            if wanted and not (0 <= token_id < self.n_vocab and self._types[token_id] == CONTROL):
                raise ValueError(f"{self.source or 'the model'}: add_{name}: the model's {name}_id is "
                                 f"{token_id}, not a control piece")
        return [self.bos_id] if add_bos else [], [self.eos_id] if add_eos else []

    def _kernel_bytes(self, text: str) -> bytes:
        return self._normalized_utf8(text, kernel=True)

    def _ids(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        if self._str_calls is not None:
            # The normalizer only writes spaces as ▁: the kernel makes the texts it
            # reads from the str, without the GIL (``CharacterVocabulary.encode_strs``).
            return self._vocabulary.encode_strs(texts, self._str_prefix, self._user_defined_names)
        normalized = [self._normalized_utf8(text, kernel=True) for text in texts]
        offsets = np.zeros(len(normalized) + 1, dtype=np.int64)
        np.cumsum([len(data) for data in normalized], out=offsets[1:])
        data = np.frombuffer(b"".join(normalized), dtype=np.uint8)
        return self._vocabulary.encode(data, offsets, self._user_defined_names)

    def encode(self, text: str, *, add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """The ids of ``text``, as ``SentencePieceProcessor.encode`` gives them;
        BOS and EOS only when asked for, as there."""
        if add_bos or add_eos:
            return self._list(text, add_bos=add_bos, add_eos=add_eos)
        return self._text_list(text)

    def encode_to_numpy(self, text: str, *, add_bos: bool = False, add_eos: bool = False, dtype=None) -> np.ndarray:
        """The ids of ``text`` as a numpy array: uint16 when every id fits, else
        uint32 (or ``dtype``), as ``Tokenizer.encode_to_numpy``."""
        if add_bos or add_eos:
            return self._array_of(self._one(text, add_bos=add_bos, add_eos=add_eos), dtype)
        return self._array_of(self._text_ids(text, dtype is None and self._narrow), dtype)

    def encode_batch(self, texts: Sequence[str], *, add_bos: bool = False, add_eos: bool = False,
                     num_threads: Optional[int] = None) -> list[list[int]]:
        """The ids of each text, as lists, on ``num_threads`` threads (None: a
        thread per core), a kernel call for each group of texts."""
        return self._on_threads(texts, num_threads, lambda group: ids_to_lists(
            *self._encode(group, add_bos=add_bos, add_eos=add_eos), self._ints))

    def encode_batch_to_numpy(self, texts: Sequence[str], *, add_bos: bool = False, add_eos: bool = False,
                              num_threads: Optional[int] = None, dtype=None) -> list[np.ndarray]:
        """The ids of each text as arrays (``encode_to_numpy``'s dtype), as ``encode_batch``."""
        return self._on_threads(texts, num_threads, lambda group: [
            self._array_of(ids, dtype) for ids in self._arrays(group, add_bos=add_bos, add_eos=add_eos)])

    def _piece(self, token_id: int) -> tuple[bytes, bool]:
        kind = self._types[token_id]
        if kind == BYTE:
            return bytes([self._byte_of[token_id]]), False
        return self._texts[token_id].encode("utf-8"), kind != NORMAL

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

        return encode_file(_CorpusView(self, {"add_bos": add_bos, "add_eos": add_eos}), inputs, output, dtype=dtype,
                           num_workers=num_workers, errors=errors, progress=progress, text_field=text_field,
                           recursive=recursive, glob=glob)

    def encode_documents(self, texts, output, *, add_bos: bool = False, add_eos: bool = False, dtype=None,
                         num_workers: Optional[int] = None, errors: str = "strict", progress: bool = False,
                         text_field: str = "text"):
        """Encode Python texts (an iterable of str, or a ``datasets`` dataset's
        ``text_field`` column) into a token array, one document each, as ``encode_file``."""
        from bpe.corpus.driver import encode_documents

        return encode_documents(_CorpusView(self, {"add_bos": add_bos, "add_eos": add_eos}), texts, output, dtype=dtype,
                                num_workers=num_workers, errors=errors, progress=progress, text_field=text_field)

    # -- decoding ----------------------------------------------------------------

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids``, as ``SentencePieceProcessor.decode`` gives it: byte
        pieces joined into characters (one U+FFFD for each byte that makes
        none), control pieces as nothing, the unknown piece as its surface,
        and the ``▁`` in front that the dummy prefix put there dropped."""
        if isinstance(ids, np.ndarray):
            ids = ids.astype(np.int64, copy=False).reshape(-1)
        else:       # (twice as fast as np.asarray of a list)
            try:
                ids = np.fromiter(ids, dtype=np.int64, count=len(ids) if isinstance(ids, (list, tuple)) else -1)
            except OverflowError:
                raise ValueError(f"an id is not in [0, {self.n_vocab}): it is past 2**63") from None
        if ids.size and not (0 <= ids.min() and ids.max() < self.n_vocab):
            bad = ids[(ids < 0) | (ids >= self.n_vocab)][0]
            raise ValueError(f"id {bad} is not in [0, {self.n_vocab})")
        head, start = self._decode_head(ids)
        # The rest in the decode kernel, a stretch between control pieces at a
        # time: byte pieces make characters only with the byte pieces beside
        # them, and every other piece is whole UTF-8, so decoding a stretch's
        # bytes at once, one U+FFFD a bad byte, decodes each run of byte pieces.
        table, control = self._decode_table()
        rest = ids[start:]
        cuts = np.flatnonzero(control[rest])
        parts = [head]
        for segment in np.split(rest, cuts):
            if segment.size and control[segment[0]]:
                segment = segment[1:]
            parts.append(table.decode(segment).decode("utf-8", "bpe-sentencepiece"))
        return "".join(parts)

    def _decode_head(self, ids: np.ndarray) -> tuple[str, int]:
        """The text of the leading pieces that decoding treats apart, and how many
        they are: the dummy prefix's ``▁`` goes (with ``remove_extra_whitespaces``,
        each leading piece's), until some text is out or a byte piece comes."""
        if not (self.add_dummy_prefix or self.remove_extra_whitespaces):
            return "", 0
        out = []
        # The head ends within the first few ids most often: read them a few at a time.
        for index, token_id in enumerate(int(token_id) for token_id in ids):
            kind = self._types[token_id]
            if kind == BYTE:
                return "".join(out), index
            if kind == CONTROL:
                continue
            if kind == UNKNOWN:
                if self.unk_surface:
                    return self.unk_surface, index + 1
                continue
            text = self._texts[token_id]
            if text.startswith(SPACE):
                text = text[1:]
                if not self.remove_extra_whitespaces:
                    return text.replace(SPACE, " "), index + 1
            if text:
                return text.replace(SPACE, " "), index + 1
        return "", len(ids)

    def _decode_table(self) -> tuple[DecodeTable, np.ndarray]:
        """Each id's bytes in decoded text, made at the first decode; and which ids are control pieces."""
        if self._decoding is None:
            surfaces = []
            for token_id, (text, kind) in enumerate(zip(self._texts, self._types)):
                if kind == BYTE:
                    surfaces.append(bytes([self._byte_of[token_id]]))
                elif kind == CONTROL:
                    surfaces.append(b"")
                elif kind == UNKNOWN:
                    surfaces.append(self.unk_surface.encode("utf-8"))
                else:
                    surfaces.append(text.replace(SPACE, " ").encode("utf-8"))
            data, offsets = flatten(surfaces)
            table = DecodeTable(data, offsets[:-1].astype(np.int64), np.diff(offsets).astype(np.int32), {})
            self._decoding = table, np.array([kind == CONTROL for kind in self._types])
        return self._decoding

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


class HuggingFaceSentencePiece(CharacterTokenizer):
    """A ``tokenizer.json`` of SentencePiece-style BPE (Llama 2, Mistral 7B as
    Hugging Face converts them; ``bpe.huggingface.characters``): ``encode``
    gives ``tokenizers``' ids, ``decode`` its text.

    Added tokens are found in the text first, as ``tokenizers`` finds them;
    ``add_special_tokens`` puts the post-processor's ids around a text's."""

    def __init__(self, data: CharacterFile, source: Optional[str] = None):
        self.source = source
        self._made_from = (data, source)
        self.n_vocab = data.n_vocab
        self._narrow = self.token_dtype() == np.uint16
        self.special_tokens = dict(data.special_tokens)
        self._pipeline = data.pipeline
        self._added = frozenset(data.special_tokens)
        #: Every id's token as decoding gives it: its text (an added token's as it is
        #: matched: its content, normalized if it is matched so).
        self.tokens = data.texts
        self.n_merges = len(data.rule.merged)
        self._added_ids = frozenset(data.special_tokens.values())
        self._byte_of = {token_id: b for b, token_id in enumerate(data.byte_pieces)}
        self._decoder = data.decoder
        self._vocabulary = CharacterVocabulary(data.pieces, data.n_vocab, data.byte_pieces, -1, data.characters,
                                               data.rule, no_spaces=spaces_all_replaced(data.pipeline))
        self._ints = self._vocabulary.ints
        self._bytewise = bytewise(data.pipeline, self._vocabulary.space)
        prefix = str_prefix(data.pipeline, self._vocabulary.space)
        if prefix is not None:
            self._str_calls, self._str_prefix = self._vocabulary.short_calls, prefix
        self.pattern = self._vocabulary.pattern
        rule = data.rule
        digest = hashlib.sha256(repr((sorted(data.texts.items()), data.byte_pieces, rule.pairs.tolist(),
                                      rule.merged.tolist(), data.pipeline.identity(), data.decoder)
                                     ).encode("utf-8", "surrogatepass"))
        self._fingerprint = digest.hexdigest()
        self._reuse_key = (self._fingerprint, source, data.n_vocab, tuple(sorted(data.special_tokens.items())))

    def _framing(self, add_special_tokens: bool = False) -> tuple[list[int], list[int]]:
        if not add_special_tokens:
            return [], []
        return self._pipeline.prefix, self._pipeline.suffix

    def _kernel_bytes(self, text: str) -> Optional[bytes]:
        if self._bytewise is not None and self._pipeline.finds_none(text, self._added):
            return self._bytewise(text)
        return None

    # The kernel's str calls take a text only where no added token is found in
    # it (``_str_calls``: set where the steps are SentencePiece's, ``str_prefix``);
    # where the one-text call gives way (too long, busy, or while calls share
    # their caches), the batch's call makes it from the str too
    # (``CharacterVocabulary.encode_strs``); a text holding an added token goes
    # to ``_ids``, without searching it again first.

    def _text_ids(self, text: str, narrow: bool = False) -> np.ndarray:
        if self._str_calls is None or not isinstance(text, str):
            return self._bytes_ids(text, narrow)
        if not self._pipeline.finds_none(text, self._added):
            return self._ids([text])[0]
        ids = self._str_calls.metaspace_to_array(text, self._str_prefix, narrow)
        return ids if ids is not None else self._vocabulary.encode_strs([text], self._str_prefix)[0]

    def _text_list(self, text: str) -> list[int]:
        if self._str_calls is None or not isinstance(text, str):
            return self._bytes_list(text)
        if not self._pipeline.finds_none(text, self._added):
            return ids_to_list(self._ids([text])[0], self._ints)
        got = self._str_calls.metaspace_to_list(text, self._str_prefix)
        return got if got is not None else ids_to_list(self._vocabulary.encode_strs([text], self._str_prefix)[0],
                                                       self._ints)

    def _ids(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        # Which texts hold no added token, where the kernel or the steps on
        # their bytes may take them: searched once.
        plain = ([isinstance(text, str) and self._pipeline.finds_none(text, self._added) for text in texts]
                 if self._str_calls is not None or self._bytewise is not None else [False] * len(texts))
        if self._str_calls is not None and all(plain):
            # No added token in any: the kernel makes every text from its str
            # (``CharacterVocabulary.encode_strs``), as the one-text calls do.
            return self._vocabulary.encode_strs(texts, self._str_prefix)
        # Steps 1 to 3 in Python (added tokens, normalizer, pre-tokenizer), then
        # every stretch of every text in one kernel call.
        stretches: list[bytes] = []
        layout: list[list[int]] = []      # each text's parts: an added token's id, or -1 for its next stretch
        kernel_text = self._vocabulary.kernel_text
        for text, holds_none in zip(texts, plain):
            if holds_none and self._bytewise is not None:
                data = self._bytewise(text)
                if data:
                    stretches.append(data)
                layout.append([-1] if data else [])
                continue
            parts = []
            for token_id, pieces in self._pipeline.pieces(utf8(text).decode("utf-8"), self._added):
                if token_id is not None:
                    parts.append(token_id)
                    continue
                stretches.extend(kernel_text(piece.encode("utf-8")) for piece in pieces)
                parts.extend([-1] * len(pieces))
            layout.append(parts)
        offsets = np.zeros(len(stretches) + 1, dtype=np.int64)
        np.cumsum([len(data) for data in stretches], out=offsets[1:])
        ids, bounds = self._vocabulary.encode(np.frombuffer(b"".join(stretches), dtype=np.uint8), offsets)
        if all(parts == [-1] for parts in layout):
            return ids, bounds
        out, counts, at = [], [], 0
        bounds = bounds.tolist()
        for parts in layout:
            count = 0
            for part in parts:
                if part < 0:
                    out.append(ids[bounds[at]:bounds[at + 1]])
                    count += bounds[at + 1] - bounds[at]
                    at += 1
                else:
                    out.append(np.array([part], dtype=np.uint32))
                    count += 1
            counts.append(count)
        text_offsets = np.zeros(len(layout) + 1, dtype=np.int64)
        np.cumsum(counts, out=text_offsets[1:])
        return (np.concatenate(out) if out else np.empty(0, np.uint32)), text_offsets

    def _piece(self, token_id: int) -> tuple[bytes, bool]:
        if token_id in self._byte_of:
            return bytes([self._byte_of[token_id]]), False
        return self.tokens[token_id].encode("utf-8"), token_id in self._added_ids

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        """The ids of ``text``, as ``tokenizers``' ``encode(text, add_special_tokens=...)``
        gives them (this default is False, as ``bpe.Tokenizer``'s)."""
        if add_special_tokens:
            return self._list(text, add_special_tokens=True)
        return self._text_list(text)

    def encode_to_numpy(self, text: str, *, add_special_tokens: bool = False, dtype=None) -> np.ndarray:
        """The ids of ``text`` as a numpy array: uint16 when every id fits, else
        uint32 (or ``dtype``), as ``Tokenizer.encode_to_numpy``."""
        if add_special_tokens:
            return self._array_of(self._one(text, add_special_tokens=True), dtype)
        return self._array_of(self._text_ids(text, dtype is None and self._narrow), dtype)

    def encode_batch(self, texts: Sequence[str], *, add_special_tokens: bool = False,
                     num_threads: Optional[int] = None) -> list[list[int]]:
        """The ids of each text, as lists, on ``num_threads`` threads (None: a
        thread per core), a kernel call for each group of texts."""
        return self._on_threads(texts, num_threads, lambda group: ids_to_lists(
            *self._encode(group, add_special_tokens=add_special_tokens), self._ints))

    def encode_batch_to_numpy(self, texts: Sequence[str], *, add_special_tokens: bool = False,
                              num_threads: Optional[int] = None, dtype=None) -> list[np.ndarray]:
        """The ids of each text as arrays (``encode_to_numpy``'s dtype), as ``encode_batch``."""
        return self._on_threads(texts, num_threads, lambda group: [
            self._array_of(ids, dtype) for ids in self._arrays(group, add_special_tokens=add_special_tokens)])

    def encode_file(self, inputs, output, *, add_special_tokens: bool = False, dtype=None,
                    num_workers: Optional[int] = None, errors: str = "strict", progress: bool = False,
                    text_field: str = "text", recursive: bool = False, glob: Optional[str] = None):
        """Encode corpus files into a token array, as ``SentencePieceTokenizer.encode_file``
        does: a document is a record, or a whole text file."""
        from bpe.corpus.driver import encode_file

        return encode_file(_CorpusView(self, {"add_special_tokens": add_special_tokens}), inputs, output,
                           dtype=dtype, num_workers=num_workers, errors=errors, progress=progress,
                           text_field=text_field, recursive=recursive, glob=glob)

    def encode_documents(self, texts, output, *, add_special_tokens: bool = False, dtype=None,
                         num_workers: Optional[int] = None, errors: str = "strict", progress: bool = False,
                         text_field: str = "text"):
        """Encode Python texts into a token array, one document each, as ``encode_file``."""
        from bpe.corpus.driver import encode_documents

        return encode_documents(_CorpusView(self, {"add_special_tokens": add_special_tokens}), texts, output,
                                dtype=dtype, num_workers=num_workers, errors=errors, progress=progress,
                                text_field=text_field)

    def decode(self, ids: Iterable[int], *, skip_special_tokens: bool = False) -> str:
        """The text of ``ids`` as ``tokenizers``' ``decode`` gives it: each id's
        token (an id of none is left out), through the file's decoder. (This
        default keeps special tokens, as ``bpe.Tokenizer``'s; ``tokenizers``'
        skips them.)"""
        skipped = self._pipeline.skipped if skip_special_tokens else frozenset()
        ids = [int(i) for i in ids]
        bad = [i for i in ids if not 0 <= i < 1 << 32]
        if bad:
            raise ValueError(f"id {bad[0]} is not a token id (0 to 2**32 - 1)")
        tokens = [self.tokens[i] for i in ids if i in self.tokens and i not in skipped]
        if not self._decoder:
            return " ".join(tokens)
        for step in self._decoder:
            tokens = decode_step(step, tokens)
        return "".join(tokens)

    def __repr__(self) -> str:
        return f"HuggingFaceSentencePiece(n_vocab={self.n_vocab}, source={self.source!r})"


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

    def __init__(self, tokenizer: "CharacterTokenizer", framing: dict):
        self.tokenizer = tokenizer
        self.encoder = self
        self.n_vocab = tokenizer.n_vocab
        self.framing = framing                  # what is asked around each document, recorded in the sidecar
        tokenizer._framing(**framing)           # refused now if it is to be

    def fingerprint(self) -> str:
        # The model's: the array is its ids (with BOS and EOS, as separators are
        # with other tokenizers), and decoding it checks it was encoded with it.
        return self.tokenizer.fingerprint()

    def token_dtype(self, dtype=None) -> np.dtype:
        return self.tokenizer.token_dtype(dtype)

    def sharing_cache(self):
        return self.tokenizer._vocabulary.encoder.sharing_cache()

    # What the corpus writers call. ``out``, the buffer they offer for the ids
    # (one per byte), goes unused: a document may have more ids than bytes (the
    # dummy prefix, BOS, EOS), so the ids are new arrays, which the writers copy
    # from and make room for.
    def encode_strs(self, texts: Sequence[str], allowed=(), out=None) -> tuple[np.ndarray, np.ndarray]:
        return self.tokenizer._encode(texts, **self.framing)

    def encode_utf8(self, data, allowed=(), out=None) -> np.ndarray:
        return self.encode_strs([bytes(data).decode("utf-8")])[0]

    def encode_utf8_texts(self, data: np.ndarray, offsets: np.ndarray, allowed=(),
                          out=None) -> tuple[np.ndarray, np.ndarray]:
        raw, bounds = bytes(data), offsets.tolist()
        return self.encode_strs([raw[a:b].decode("utf-8") for a, b in zip(bounds, bounds[1:])])
