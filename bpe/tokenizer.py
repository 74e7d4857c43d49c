"""The Tokenizer: a vocabulary (``bpe.vocabulary``), the rule that merges it, special
tokens and a pattern; and ``load``, which reads one by name or from a file.

Why one room of 850 lines: it is the public face users call, one class whose
methods each hand their work down in a few lines (to ``bpe.encoder``, the
``bpe.formats`` readers and writers, ``bpe.corpus``, ``bpe/_calls.pyx`` for the
calls on one str); split, the face would be spread over several rooms."""
from __future__ import annotations

import functools
import json
import os
from typing import TYPE_CHECKING, Iterable, Iterator, Mapping, Optional, Sequence, Union

import numpy as np

from bpe import _calls
from bpe._lists import PrebuiltInts, ids_to_list
from bpe._memory import empty_written_once
from bpe.encoder import Encoder
from bpe.errors import TokenizerFileError
from bpe.huggingface import characters, tokenizer_json
from bpe.flat import RankTable, take_pieces
from bpe.formats.common import FILE_NAME, HF_FILE_NAME, TokenizerData, read_json
from bpe.formats.gpt2 import read_gpt2_files, write_gpt2_files
from bpe.formats.own import read_own, write_own
from bpe.formats.rankfile import read_tiktoken_table, write_tiktoken
from bpe.formats.sentencepiece import looks_like_sentencepiece
from bpe.formats.tekken import looks_like_tekken, read_tekken
from bpe.huggingface.tokenizer_json import huggingface_path
from bpe.patterns import (canonical_pattern, compile_pattern, find_safe_cut, native_pattern_id,
                          regex_pretokens)
from bpe.pretrained import (ALIASES, FINGERPRINTS, MODEL_TO_ENCODING, PRETRAINED, encoding_name_for_model,
                            pretrained_table)
from bpe.sentencepiece import HuggingFaceSentencePiece, SentencePieceTokenizer, from_sentencepiece
from bpe.specials import refuse_disallowed, special_policy, special_spans
from bpe.vocabulary import (Merges, Ranks, Rule, Vocabulary, ids_dtype, merge_pairs, ranks_from_merges,
                            rule_records)
from bpe.workers import (RecentlyBuilt, batch_chars, batches, fork_safe_lock, map_on_threads,
                         resolve_workers)

if TYPE_CHECKING:
    from bpe.view import Token, TokenComparison

Pair = tuple[bytes, bytes]
#: The version of what ``fingerprint`` hashes: a change of it makes token arrays
#: and shards written before look stale, as they should when the hash means
#: something else.
FINGERPRINT_VERSION = 2


class Tokenizer:
    """A byte-level BPE tokenizer.

    Parameters
    ----------
    vocab : dict[int, bytes]
        Every token's bytes by id (special tokens may be left out when given
        by id).
    merges : list[tuple[bytes, bytes]] or None
        The merges in the order they were learned (earliest = highest
        priority): a token's rank is the place of the first merge that makes
        it. None ranks the tokens by id, as tiktoken's rank files do; then any
        ranked vocabulary works (tiktoken's rule: parts merge when their bytes
        joined are a token, the lowest rank first).
    special_tokens : dict[str, int] or sequence of str, optional
        Special tokens by id (several names may share one; an id need not be in
        ``vocab``), or names looked up in ``vocab`` by their bytes.
    pattern : str or None
        "gpt2", "cl100k", "o200k", a custom regex, or None for no pre-tokenization.
    """

    def __init__(self, vocab: Mapping[int, bytes], merges: Optional[Sequence[Pair]],
                 special_tokens: Union[Mapping[str, int], Sequence[str], None] = None,
                 *, pattern: Optional[str] = "gpt2"):
        vocabulary = Vocabulary.from_dict(vocab, special_tokens)
        checked = None if merges is None else self._check_merges(merges)
        rule = Ranks(None) if checked is None else ranks_from_merges(vocabulary, checked)
        self._setup(vocabulary, rule, pattern, checked)

    def _setup(self, vocabulary: Vocabulary, rule: Rule, pattern: Optional[str],
               merges: Optional[list[Pair]] = None, source: Optional[str] = None, pipeline=None,
               keep_unmatched: bool = True) -> None:
        """The one place a tokenizer's state is made, whichever door it came in by."""
        self.pattern = canonical_pattern(pattern)
        #: Whether text a custom pattern does not match is kept, as pre-tokens of its
        #: own (Hugging Face's Split, bpe's rule), or dropped (tiktoken's findall).
        self._keep_unmatched = keep_unmatched
        #: A Hugging Face file's steps around the model (``bpe.huggingface.pipeline.Pipeline``), if any.
        self._pipeline = pipeline
        self._vocabulary = vocabulary
        self._rule = rule
        self._merges = merges             # the merges as given or read; else made on demand
        self._vocab: Optional[dict[int, bytes]] = None
        fork_safe_lock(self, "_encoder_lock")
        self._fingerprint: Optional[str] = None     # fingerprint(), once asked
        self._encoder: Optional[Encoder] = None
        # The encoder's ShortCalls, once it is built.
        self._short = None
        #: The file this tokenizer was read from, if any (named in errors about its pattern).
        self.source = source

    @classmethod
    def _from_parts(cls, vocabulary: Vocabulary, rule: Rule, pattern: Optional[str], source: Optional[str],
                    merges: Optional[list[Pair]] = None, pipeline=None, keep_unmatched: bool = True) -> "Tokenizer":
        tokenizer = cls.__new__(cls)
        tokenizer._setup(vocabulary, rule, pattern, merges, source, pipeline, keep_unmatched)
        return tokenizer

    @classmethod
    def _from_rank_table(cls, table: RankTable, special_tokens: Mapping[str, int], pattern: Optional[str],
                         source: str) -> "Tokenizer":
        """A tokenizer over a rank file's arrays (``formats.rankfile.read_tiktoken_table``),
        tiktoken's rule, the special tokens at the ids given; errors raise
        TokenizerFileError naming ``source``. Loading builds no dict: encoding
        and counting never need them, and building them was most of what
        loading o200k cost (0.7 s)."""
        try:
            vocabulary = Vocabulary(table, special_tokens)
            return cls._from_parts(vocabulary, Ranks(None), pattern, source)
        except (ValueError, TypeError) as e:
            raise TokenizerFileError(f"{source}: {e}") from None

    # ------------------------------------------------------------------ the vocabulary

    @property
    def special_tokens(self) -> dict[str, int]:
        """Special tokens by name (several names may share an id)."""
        return self._vocabulary.special_tokens

    @property
    def vocab(self) -> dict[int, bytes]:
        """Every token's bytes by id, special tokens included (an id that is both
        an ordinary and a special token's gives the ordinary token's bytes)."""
        if self._vocab is None:
            self._vocab = self._vocabulary.vocab()
        return self._vocab

    @property
    def merges(self) -> list[Pair]:
        """The merges in priority order (earliest first): as given or read, or
        made from the ranks (each token split as the ranks before it split it).
        ValueError where a ranked token is no merge of two tokens: such a
        vocabulary has ranks, not merges (tiktoken's rule encodes it)."""
        if self._merges is None:
            self._merges = self._merges_of_rule()
        return self._merges

    @property
    def _ids_by_bytes(self) -> dict[bytes, int]:
        """Each ordinary token's id by its bytes."""
        return self._vocabulary.ids_by_bytes

    def _ranked_ids(self) -> np.ndarray:
        ranked = self._rule.ranked
        return self._vocabulary.merged_ids() if ranked is None else ranked

    def _merges_of_rule(self) -> list[Pair]:
        decoder = self._vocabulary.decoder
        if isinstance(self._rule, Merges):
            return [(decoder[left], decoder[right]) for left, right in self._rule.pairs.tolist()]
        ranked = self._ranked_ids()
        parts, n_parts = self._split_ranked(ranked)
        bad = np.flatnonzero(n_parts != 2)
        if len(bad):
            token_id = int(ranked[bad[0]])
            raise ValueError(f"token {token_id} {decoder[token_id]!r} is no merge of two tokens ranked before "
                             f"it (the ranks before it split it into {n_parts[bad[0]]}): this vocabulary "
                             "has ranks, not merges; tiktoken's rule encodes it, but formats that list "
                             "merges cannot hold it")
        return [(decoder[left], decoder[right]) for left, right in parts.tolist()]

    def _split_ranked(self, ranked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each ranked token split by the ranks before it (``Encoder.split_ranked``)."""
        data, offsets, ids = self._vocabulary.table
        rows = np.searchsorted(ids, ranked)
        return self.encoder.split_ranked(*take_pieces(data, offsets, rows))

    @staticmethod
    def _check_merges(merges: Sequence[Pair]) -> list[Pair]:
        checked = []
        for index, merge in enumerate(merges):
            try:
                left, right = merge
                checked.append((bytes(left), bytes(right)))
            except (TypeError, ValueError):
                raise ValueError(f"merge {index} is {merge!r}, not a pair of bytes") from None
        return checked

    @property
    def encoder(self) -> Encoder:
        """The encoding kernel and its state, built on first use (thread-safe)."""
        if self._encoder is None:
            with self._encoder_lock:
                if self._encoder is None:
                    self._set_encoder(Encoder(self._vocabulary.encoder_arrays(self._rule), self.pattern,
                                              self.special_tokens, self.source, self._pipeline,
                                              self._keep_unmatched))
        return self._encoder

    def _set_encoder(self, encoder: Encoder) -> None:
        vocabulary = self._vocabulary
        limit = vocabulary.prebuilt_limit()
        ranks = vocabulary.table.ranks
        far = [*ranks[np.searchsorted(ranks, limit):].tolist(),
               *(token_id for token_id in [*vocabulary.special_tokens.values(), *vocabulary.decode_as]
                 if token_id >= limit)]
        self._ints = PrebuiltInts(limit, far=far)   # set first: readers test _encoder alone
        self._narrow = self.n_vocab <= 2**16           # before _short, which its readers test
        self._short = encoder.short_calls(self._ints)
        self._encoder = encoder

    def _short_calls(self):
        """The encoder's ``ShortCalls``, the encoder built first; None where the
        kernel does not encode text alone."""
        self.encoder
        return self._short

    def _to_list(self, ids: np.ndarray) -> list[int]:
        self.encoder
        return ids_to_list(ids, self._ints)

    # ------------------------------------------------------------------ encoding

    def _allowed(self, allowed_special, disallowed_special, text: str) -> list[str]:
        """The special tokens to recognise; raises if a disallowed one is in ``text``."""
        if allowed_special == "all" and not disallowed_special:
            # The default, on every call: the same list each time (Llama 3 has 256
            # special tokens, and sorting them anew cost more than a short text).
            every = self.__dict__.get("_every_special")
            if every is None:
                every = self._every_special = sorted(self.special_tokens)
            return every
        allowed, disallowed = special_policy(self.special_tokens, allowed_special, disallowed_special)
        refuse_disallowed(disallowed, text)
        return allowed

    def _encode_list(self, text: str, allowed: Sequence[str]) -> list[int]:
        """The ids of ``text`` as a list, ``allowed`` special tokens recognised."""
        encoder = self.encoder           # first: building it makes the prebuilt ints
        return encoder.encode_to_list(text, allowed, self._ints)

    def _encode_array(self, text: str, allowed: Sequence[str]) -> np.ndarray:
        """The ids of ``text`` (uint32), ``allowed`` special tokens recognised."""
        return self.encoder.encode_strs([text], allowed)[0]

    # encode and encode_to_numpy, the calls made once per short text, are
    # compiled (bpe/_calls.pyx: their docstrings, the default call's fast path);
    # what they do not take comes here.
    encode = _calls.encode
    encode_to_numpy = _calls.encode_to_numpy

    def _encode_general(self, text: str, allowed_special, disallowed_special, offsets: bool,
                        add_special_tokens: bool):
        """``encode`` for any text and options."""
        ids = self._encode_list(text, self._allowed(allowed_special, disallowed_special, text))
        if add_special_tokens:
            ids = self._post_processed(ids)
        return (ids, self.decode_with_offsets(ids, errors="replace")[1]) if offsets else ids

    def _post_processed(self, ids: list[int]) -> list[int]:
        """``ids`` with what the post-processor adds around a text's (Hugging Face's)."""
        pipeline = self._pipeline
        if pipeline is None or not (pipeline.prefix or pipeline.suffix):
            return ids
        return pipeline.prefix + ids + pipeline.suffix

    def encode_ordinary(self, text: str) -> list[int]:
        """The ids of ``text`` with special-token strings read as ordinary text."""
        short = self._short or self._short_calls()
        if short is not None:
            ids = short(text, False, True)
            if ids is not None:
                return ids
        return self._encode_list(text, [])

    def _encode_to_numpy_general(self, text: str, dtype, allowed_special, disallowed_special,
                                 add_special_tokens: bool) -> np.ndarray:
        """``encode_to_numpy`` for any text and options."""
        allowed = self._allowed(allowed_special, disallowed_special, text)
        dtype = self.token_dtype(dtype)
        added = add_special_tokens and self._pipeline is not None and (self._pipeline.prefix or self._pipeline.suffix)
        if not added and dtype in (np.uint16, np.uint32):
            return self.encoder.encode_to_array(text, allowed, dtype == np.uint16)
        ids = self._encode_array(text, allowed)
        if added:
            ids = np.concatenate([np.array(self._pipeline.prefix, np.uint32), ids,
                                  np.array(self._pipeline.suffix, np.uint32)])
        if ids.dtype == dtype:
            return ids
        out = empty_written_once(ids.size, dtype)      # not astype's: see bpe/_memory.pyx
        out[...] = ids
        return out

    def token_dtype(self, dtype=None) -> np.dtype:
        """``dtype`` checked to hold every id; None: uint16 when every id fits, else uint32."""
        return ids_dtype(self.n_vocab, dtype)

    def encode_batch(self, texts: Sequence[str], *, num_threads: Optional[int] = None,
                     allowed_special="all", disallowed_special=(),
                     add_special_tokens: bool = False) -> list[list[int]]:
        """Encode many texts on several threads; the kernel runs without the GIL.

        Texts go in batches (``batch_chars``: 2^18 to 2^20 characters): each
        batch is converted to UTF-8, encoded and made into lists in one kernel
        call (``Encoder.encode_strs_to_lists``), which holds the GIL only to
        make the lists, so one thread's kernel time overlaps the other's list
        making (text-by-text calls made the threads queue for the GIL).

        The calling thread is one of the workers, and each takes the next batch
        itself (``workers.map_on_threads``): an executor's futures woke the caller for
        every batch, to take the GIL the workers were waiting for.
        """
        threads = resolve_workers(num_threads, "num_threads")
        groups = batches(texts, batch_chars(sum(len(text) for text in texts), threads))
        encoder = self.encoder
        allowed, disallowed = special_policy(self.special_tokens, allowed_special, disallowed_special)

        def encode(batch: list[str]) -> list[list[int]]:
            for text in batch:
                refuse_disallowed(disallowed, text)
            return encoder.encode_strs_to_lists(batch, allowed, self._ints)

        encoded = [ids for part in map_on_threads(encode, groups, threads) for ids in part]
        return [self._post_processed(ids) for ids in encoded] if add_special_tokens else encoded

    def encode_iterable(self, texts: Iterable[str], *, allowed_special="all",
                        disallowed_special=(), flush_chars: int = 1 << 16,
                        max_buffer_chars: int = 1 << 20) -> Iterator[int]:
        """Lazily yield the ids of ``"".join(texts)``, holding only a window in memory.

        Text is encoded up to the last position where cutting cannot change the
        result: a safe cut of a built-in pattern (``patterns.is_safe_cut``) or
        the start of a special token, at least one special token's length
        before the end of what has been read (so no special token can straddle
        it). Memory is bounded by ``flush_chars`` plus the longest stretch of
        text without such a cut, and never more than ``max_buffer_chars``:

        A custom pattern (or None) has no provably safe cut but special tokens.
        After ``max_buffer_chars`` without one, the text is cut between two
        pre-tokens, keeping the last two pre-tokens for the next window: exact
        for patterns whose matches never look past the pre-token that follows
        them (as ``\\w+|\\s+``), approximate for others (a lookahead that reads
        across the cut); with ``pattern=None`` the one long pre-token is split.
        """
        for ids in self._encode_iterable_arrays(texts, allowed_special, disallowed_special, flush_chars,
                                                max_buffer_chars):
            yield from ids.tolist()

    def count_iterable(self, texts: Iterable[str], *, allowed_special="all", disallowed_special=()) -> int:
        """How many tokens ``"".join(texts)`` encodes to, holding only a window in
        memory (``encode_iterable``'s)."""
        return sum(len(ids) for ids in self._encode_iterable_arrays(texts, allowed_special, disallowed_special,
                                                                    1 << 16, 1 << 20))

    def _encode_iterable_arrays(self, texts: Iterable[str], allowed_special, disallowed_special,
                                flush_chars: int, max_buffer_chars: int) -> Iterator[np.ndarray]:
        """``encode_iterable``'s ids, a window's array at a time."""
        specials = list(self.special_tokens)
        room = max((len(token) for token in specials), default=0)
        pending: list[str] = []
        size = 0
        next_attempt = flush_chars
        for text in texts:
            pending.append(text)
            size += len(text)
            if size < next_attempt:
                continue
            buffer = "".join(pending)
            cut = self._last_stream_cut(buffer, specials, room)
            if cut <= 0 and len(buffer) >= max_buffer_chars:
                cut = self._forced_stream_cut(buffer, specials, room)
            if cut > 0:
                yield self.encode_to_numpy(buffer[:cut], dtype=np.uint32, allowed_special=allowed_special,
                                           disallowed_special=disallowed_special)
                buffer = buffer[cut:]
            pending, size = [buffer], len(buffer)
            # Without a cut, wait for the buffer to double: joins stay linear in total.
            next_attempt = max(flush_chars, 2 * size if cut <= 0 else flush_chars)
        yield self.encode_to_numpy("".join(pending), dtype=np.uint32, allowed_special=allowed_special,
                                   disallowed_special=disallowed_special)

    def _last_stream_cut(self, buffer: str, specials: list[str], room: int) -> int:
        """The last position of ``buffer`` where encoding may be split, or -1."""
        limit = len(buffer) - room
        spans = special_spans(buffer, specials) if specials else []
        if native_pattern_id(self.pattern) is None:
            starts = [start for start, end, _ in spans if end <= limit]
            return starts[-1] if starts else -1
        end = limit
        while end > 0:
            cut = find_safe_cut(buffer[:end], self.pattern, last=True)
            if cut <= 0:
                return -1
            if not any(start < cut < stop for start, stop, _ in spans):
                return cut
            end = cut
        return -1

    def _forced_stream_cut(self, buffer: str, specials: list[str], room: int) -> int:
        """A cut between two pre-tokens of ``buffer`` (not inside a special token),
        leaving the last two pre-tokens of the text before ``room`` for later."""
        limit = len(buffer) - room
        spans = special_spans(buffer, specials) if specials else []
        start = spans[-1][1] if spans else 0          # the text after the last special token
        if start >= limit:
            return -1
        compiled = compile_pattern(self.pattern)
        if compiled is None:
            return limit
        pieces = regex_pretokens(compiled, buffer[start:limit], self.source)
        if len(pieces) < 3:
            return limit if len(pieces) < 2 else start + len(pieces[0])
        return limit - len(pieces[-1]) - len(pieces[-2])

    def encode_file(self, inputs, output, *, dtype=None, num_workers: Optional[int] = None,
                    allowed_special="all", errors: str = "strict", progress: bool = False,
                    text_field: str = "text", recursive: bool = False, glob: Optional[str] = None):
        """Encode corpus files into a flat token array readable with ``bpe.open_tokens``.

        ``inputs``: a path, a list of paths, or a directory (its ``.txt``,
        ``.jsonl`` and ``.parquet`` files, compressed or not, sorted;
        ``recursive`` reads its subdirectories, ``glob`` picks files by a
        pattern of their path). A text file's documents are separated by the
        separator (the first special token) in its text; each record of JSON
        Lines or Parquet (its ``text_field``, dotted for a nested field) is a
        document, encoded as ``encode_ordinary`` encodes it, then the
        separator. Beside ``output`` go ``output.json`` (dtype, counts,
        n_vocab, fingerprints) and ``output.docs.npy`` (uint64 token offsets
        where documents start). The ids are the same for any ``num_workers``
        (threads; None: one per core); nothing is left at ``output`` unless
        the run completes. Returns an ``EncodeSummary``.
        """
        # Imported here, as show's views are: loading a tokenizer and encoding text
        # need neither, and a fresh process would pay for their imports (30 ms).
        from bpe.corpus.driver import encode_file

        return encode_file(self, inputs, output, dtype=dtype, num_workers=num_workers,
                           allowed_special=allowed_special, errors=errors, progress=progress,
                           text_field=text_field, recursive=recursive, glob=glob)

    def encode_documents(self, texts, output, *, dtype=None, num_workers: Optional[int] = None,
                         errors: str = "strict", progress: bool = False, text_field: str = "text"):
        """Encode Python texts into a token array as ``encode_file`` does records:
        each text a document, ``encode_ordinary``'s ids then the separator.
        ``texts``: an iterable of str (read once, lazily), or a Hugging Face
        ``datasets.Dataset`` / ``IterableDataset`` (its ``text_field`` column)."""
        from bpe.corpus.driver import encode_documents

        return encode_documents(self, texts, output, dtype=dtype, num_workers=num_workers, errors=errors,
                                progress=progress, text_field=text_field)

    def clear_cache(self) -> None:
        """Forget the pre-tokens encoded so far, releasing their memory (a few
        of the tables are kept for the next caches to be made in: docs/usage.md).
        Encoding keeps a cache of them per session, across calls: up to 2^19
        short pre-tokens and 2^18 longer ones in the session of the calls on one
        str (``encode``, ``encode_ordinary``, ``encode_to_numpy``: its
        ``ShortCalls``) and in each of the sessions pooled for batches and
        concurrent calls (``bpe.encoder``). The next call starts cold, as on a
        fresh tokenizer: what a benchmark should time, since a text encoded
        twice is all cache hits the second time."""
        if self._encoder is not None:
            self._encoder.clear_cache()

    def show(self, text: str, *, name: str = "tokenizer", max_chars: Optional[int] = None) -> TokenComparison:
        """The tokens of ``text``, to look at: ``print()`` it in a terminal (coloured
        there), or leave it last in a notebook cell for the page view."""
        from bpe.view import show

        return show(self, text, name, max_chars)

    def view_tokens(self, text: str) -> list["Token"]:
        """The tokens of ``text`` as ``bpe show`` draws them: each with its bytes and
        the characters of ``text`` it completes (special tokens recognised)."""
        from bpe.view import Token

        ids, offsets = self.encode(text, offsets=True)
        special_ids = set(self.special_tokens.values())
        ends = offsets[1:] + [len(text)]
        decoder = self._vocabulary.decoder
        return [Token(token_id, decoder[token_id], text[start:end], token_id in special_ids)
                for token_id, start, end in zip(ids, offsets, ends)]

    def token_id(self, token: bytes) -> Optional[int]:
        """The id of the ordinary token with these bytes, or None."""
        return self._ids_by_bytes.get(token)

    def encode_piece(self, piece: bytes) -> list[int]:
        """The ids of ``piece`` merged as one pre-token (bytes need not be UTF-8): no
        pattern, no special tokens."""
        return self._to_list(self.encoder.encode_piece(piece))

    def count(self, text: str) -> int:
        """How many tokens ``text`` encodes to (special tokens recognised)."""
        return len(self._encode_array(text, sorted(self.special_tokens)))

    def decode_bytes(self, ids: Iterable[int], *, skip_special_tokens: bool = False) -> bytes:
        """The bytes of ``ids``; an id not in the vocab raises ValueError naming it.
        With ``skip_special_tokens``, special tokens' ids give nothing."""
        if skip_special_tokens:
            ids = ids.tolist() if isinstance(ids, np.ndarray) else ids
            if self._pipeline is not None:         # Hugging Face's rule: see Pipeline.skipped
                special = self._pipeline.skipped
            else:
                special = set(self.special_tokens.values()) | self._vocabulary.control_ids
            ids = [token_id for token_id in ids if token_id not in special]
        try:
            return self._vocabulary.decode_table.decode(ids)
        except KeyError as e:
            raise ValueError(f"token id {e.args[0]!r} is not in the vocab (n_vocab={self.n_vocab})") from None

    def decode(self, ids: Iterable[int], errors: str = "replace", *, skip_special_tokens: bool = False) -> str:
        """The text of ``ids``; bytes that are not valid UTF-8 become U+FFFD (``errors``
        as in ``bytes.decode``). With ``skip_special_tokens``, special tokens' ids
        give nothing (Hugging Face's default; bpe's is to keep them)."""
        return self.decode_bytes(ids, skip_special_tokens=skip_special_tokens).decode("utf-8", errors=errors)

    def decode_batch(self, batch: Sequence[Iterable[int]], *, errors: str = "replace",
                     num_threads: Optional[int] = None) -> list[str]:
        """``decode`` of each sequence of ids."""
        threads = 1 if num_threads is None else resolve_workers(num_threads, "num_threads")
        if threads == 1 or len(batch) < 2:
            return [self.decode(ids, errors) for ids in batch]
        from concurrent.futures import ThreadPoolExecutor      # on use: loading never needs it

        with ThreadPoolExecutor(max_workers=threads) as pool:
            return list(pool.map(lambda ids: self.decode(ids, errors), batch))

    def decode_with_offsets(self, ids: Sequence[int], errors: str = "strict") -> tuple[str, list[int]]:
        """The text of ``ids`` and, for each token, the index of the first character
        holding any of its bytes (a token that starts inside a character points at
        that character). Invalid UTF-8 raises, as in tiktoken, unless ``errors``
        says otherwise (offsets then count the bytes of replaced characters as
        ``bytes.decode`` does not: use them with valid text)."""
        vocab = self._vocabulary.decoder
        try:
            pieces = [vocab[token_id] for token_id in ids]
        except KeyError as e:
            raise ValueError(f"token id {e.args[0]!r} is not in the vocab (n_vocab={self.n_vocab})") from None
        offsets, characters = [], 0
        for piece in pieces:
            continuation = bool(piece) and 0x80 <= piece[0] < 0xC0      # an empty token starts nowhere
            offsets.append(max(0, characters - continuation))
            characters += sum(1 for byte in piece if not 0x80 <= byte < 0xC0)
        return b"".join(pieces).decode("utf-8", errors=errors), offsets


    def __getstate__(self):
        # The encoder goes along as its flat arrays (a megabyte or two), so an
        # unpickled tokenizer encodes at once; and a process that unpickles the
        # same tokenizer again (a worker given it with every task) reuses the
        # encoder it built the first time (see _shared_encoder).
        state = self.__dict__.copy()
        state["_encoder"] = self.encoder.__getstate__()        # plain arrays: built on arrival
        state["_fingerprint"] = self.fingerprint()
        state["_vocab"] = None                                  # a view, made again on demand
        state.pop("_every_special", None)
        state.pop("_ints", None)
        for name in ("_short", "_narrow"):
            state.pop(name, None)
        del state["_encoder_lock"]
        return state

    def __setstate__(self, state):
        encoder_state = state.pop("_encoder")
        fingerprint = state.pop("_fingerprint", None)
        self.__dict__.update(state)
        fork_safe_lock(self, "_encoder_lock")
        self._fingerprint = fingerprint            # the sender's, of the same contents
        self._encoder = None
        self._short = None
        if encoder_state is not None:
            self._set_encoder(_shared_encoder(fingerprint, encoder_state))

    @property
    def special_tokens_set(self) -> set[str]:
        """The special tokens' names (tiktoken's name for them; its errors point here)."""
        return set(self.special_tokens)

    @property
    def n_vocab(self) -> int:
        """One more than the largest id (tiktoken's meaning)."""
        return self._vocabulary.n_vocab

    def fingerprint(self) -> str:
        """sha256 of everything that decides the ids: pattern, special tokens, the
        vocabulary and the rule that merges it.

        Made once per tokenizer (a tokenizer does not change), as every
        ``encode_file`` and every pickle records it."""
        if self._fingerprint is None:
            self._fingerprint = self._make_fingerprint()
        return self._fingerprint

    def _make_fingerprint(self) -> str:
        import hashlib                                       # on use: loading never needs it

        digest = hashlib.sha256()
        identity = [f"bpe fingerprint {FINGERPRINT_VERSION}", self.pattern, self._pipeline_identity()]
        if not self._keep_unmatched:
            identity.append("unmatched text dropped")
        digest.update(json.dumps(identity).encode())
        digest.update(self._vocabulary.records())
        digest.update(rule_records(self._rule))
        return digest.hexdigest()

    def _pipeline_identity(self):
        """What else decides the ids: a Hugging Face file's steps around the model."""
        return None if self._pipeline is None else self._pipeline.identity()

    # ------------------------------------------------------------------ files

    @classmethod
    def from_data(cls, data: TokenizerData, source: str) -> "Tokenizer":
        """A tokenizer from what a file held; inconsistencies raise TokenizerFileError
        naming ``source``. Files that list merges must list one per merged token,
        in id order, as bpe and GPT-2 write them: a merges file cut short or with
        two lines swapped would otherwise load and give other ids."""
        try:
            tokenizer = cls(data.vocab, data.merges, data.special_tokens, pattern=data.pattern)
            if data.merges is not None:
                tokenizer._check_merge_order()
        except (ValueError, TypeError) as e:
            raise TokenizerFileError(f"{source}: {e}") from None
        tokenizer.source = source
        return tokenizer

    def _check_merge_order(self) -> None:
        """Merge k makes the k-th merged token in id order, and every merged token is made."""
        merged_ids = self._vocabulary.merged_ids().tolist()
        made = [self._ids_by_bytes[left + right] for left, right in self.merges]
        for index, (made_id, expected_id) in enumerate(zip(made, merged_ids)):
            if made_id != expected_id:
                left, right = self.merges[index]
                raise ValueError(f"merge {index} {(left, right)!r} makes token {made_id}, but the "
                                 f"vocab's merged token number {index} is {expected_id} "
                                 f"{self.vocab[expected_id]!r} (merges out of order, or not this vocab's)")
        if len(made) != len(merged_ids):
            raise ValueError(f"the vocab has {len(merged_ids)} merged tokens but there are "
                             f"{len(made)} merges (a merges file cut short, or not this vocab's)")

    def _data(self, *, need_merges: bool = True) -> TokenizerData:
        """What the writers take. Without ``need_merges`` (bpe's own format), a
        vocabulary whose ranks make no merges list is written with its ranks."""
        if isinstance(self._rule, Merges) or need_merges:
            merges = self.merges
        else:
            try:
                merges = self.merges
            except ValueError:
                merges = None
        return TokenizerData(self.vocab, merges, self.special_tokens, self.pattern)

    @classmethod
    def from_huggingface(cls, path) -> Union["Tokenizer", HuggingFaceSentencePiece]:
        """Read a Hugging Face ``tokenizer.json`` (a file, or a directory holding one)
        with a BPE model, to encode exactly as ``tokenizers`` does; what bpe
        cannot reproduce is refused, naming the field (see ``bpe.huggingface``).
        A byte-level model gives a ``Tokenizer``; a character-level one
        (SentencePiece's, converted: Llama 2, Mistral 7B) a
        ``bpe.sentencepiece.HuggingFaceSentencePiece``."""
        path = huggingface_path(path)
        document = tokenizer_json.read_document(path)
        if characters.is_character_level(document):
            return HuggingFaceSentencePiece(characters.read(document, path), path)
        data = tokenizer_json.read(path, document)
        try:
            vocabulary = Vocabulary(data.table, data.special_tokens, data.decode_as)
            rule = merge_pairs(vocabulary, data.merges, data.ignore_merges,
                               where=lambda index: f"model.merges[{index}]")
            return cls._from_parts(vocabulary, rule, data.pattern, path, data.merges, data.pipeline)
        except (ValueError, TypeError) as e:
            raise TokenizerFileError(f"{path}: {e}") from None

    @classmethod
    def from_tekken(cls, path, document=None) -> "Tokenizer":
        """Read a Mistral Tekken ``tekken.json`` (tiktoken's rule; its special tokens
        are control tokens, as mistral-common keeps them: ids decoding knows, never
        found in text, so ``encode`` equals ``Tekkenizer.encode(text, bos=False,
        eos=False)``)."""
        path = os.fspath(path)
        data = read_tekken(path, document)
        try:
            vocabulary = Vocabulary(data.table, {}, data.control_tokens)
            return cls._from_parts(vocabulary, Ranks(None), data.pattern, path)
        except (ValueError, TypeError) as e:
            raise TokenizerFileError(f"{path}: {e}") from None

    @classmethod
    def from_files(cls, vocab_json, merges_txt, special_tokens=None, *,
                   pattern: Optional[str] = "gpt2") -> "Tokenizer":
        """Load GPT-2 style files: ``vocab.json``/``encoder.json`` and ``merges.txt``/``vocab.bpe``
        (with or without the ``#version`` line).

        ``special_tokens`` (names or name -> id) must be in the vocab; by default
        ``<|endoftext|>`` is special if the vocab has it.
        """
        vocab, merges = read_gpt2_files(vocab_json, merges_txt)
        if special_tokens is None:
            special_tokens = [t for t in ("<|endoftext|>",) if t.encode() in vocab.values()]
        return cls.from_data(TokenizerData(vocab, merges, special_tokens, pattern), os.fspath(merges_txt))

    def to_files(self, directory) -> tuple[str, str]:
        """Write GPT-2 style ``vocab.json`` and ``merges.txt`` into ``directory``."""
        return write_gpt2_files(os.fspath(directory), self._data())

    @classmethod
    def from_tiktoken(cls, path, *, pattern: Optional[str],
                      special_tokens: Optional[Mapping[str, int]] = None) -> "Tokenizer":
        """Load a tiktoken rank file (``base64 rank`` lines; ``.gz`` too), encoded
        by tiktoken's rule."""
        path = os.fspath(path)
        return cls._from_rank_table(read_tiktoken_table(path), dict(special_tokens or {}), pattern, path)

    @staticmethod
    def from_sentencepiece(path) -> "SentencePieceTokenizer":
        """Read a SentencePiece BPE ``tokenizer.model`` (Llama 2, Mistral 7B): a
        ``bpe.sentencepiece.SentencePieceTokenizer``, which encodes as
        sentencepiece does (another algorithm than this class's, on the same
        kernel). ``bpe.load`` finds these files too."""
        return from_sentencepiece(path)

    def to_tiktoken(self, path) -> str:
        """Write the ordinary tokens as a tiktoken rank file (rank = id).

        ``tiktoken.Encoding(name, pat_str=..., mergeable_ranks=tiktoken.load.load_tiktoken_bpe(path),
        special_tokens=tok.special_tokens)`` then encodes as this tokenizer does.
        """
        return write_tiktoken(os.fspath(path), self._data(need_merges=False))

    def to_huggingface(self, path, *, eos_token: Optional[str] = None, bos_token: Optional[str] = None,
                       pad_token: Optional[str] = None) -> str:
        """Write a Hugging Face ``tokenizer.json``: to ``path`` if it ends in ``.json``,
        else into the directory ``path`` (created if missing), beside a
        ``tokenizer_config.json`` and ``special_tokens_map.json`` so that
        ``transformers.AutoTokenizer.from_pretrained(path)`` loads it, with
        ``eos_token`` (default: the first special token) and the ``bos_token`` and
        ``pad_token`` named. Returns the tokenizer.json's path."""
        if self._pipeline is not None and not (self._pipeline.simple and self._pipeline.normalizer.identity
                                               and not self._pipeline.prefix and not self._pipeline.suffix):
            raise ValueError(f"{self.source}: this tokenizer's Hugging Face steps (its normalizer, "
                             "pre-tokenizer, added tokens' options or post-processor) are more than bpe "
                             "writes; copy the file it was read from")
        data = self._data()
        whole_tokens = self._rule.whole_tokens if isinstance(self._rule, Merges) else True
        return tokenizer_json.write(os.fspath(path), data.vocab, data.merges, data.special_tokens, data.pattern,
                                 eos_token=eos_token, bos_token=bos_token, pad_token=pad_token,
                                 ignore_merges=whole_tokens)

    def save(self, path) -> str:
        """Write this tokenizer in bpe's own format: to ``path`` if it ends in ``.bpe``,
        else into the directory ``path`` (created if missing) as ``tokenizer.bpe``.

        Returns the path written. The file is complete or absent: it is written
        under a temporary name and renamed.
        """
        if isinstance(self._rule, Merges):
            raise ValueError("this tokenizer merges by Hugging Face's rule (only listed pairs merge), "
                             "which bpe's own format does not hold: save it with to_huggingface")
        return write_own(path, self._data(need_merges=False))

    def __eq__(self, other) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return self.fingerprint() == other.fingerprint()

    __hash__ = None

    def __repr__(self) -> str:
        rule = "merges" if isinstance(self._rule, Merges) else "ranks"
        return (f"Tokenizer(n_vocab={self.n_vocab}, tokens={self._vocabulary.n_ordinary}, "
                f"special_tokens={len(self.special_tokens)}, pattern={self.pattern!r}, rule={rule!r})")


#: (fingerprint, options) -> Encoder: the few this process unpickled last.
_ENCODERS = RecentlyBuilt(4)


def _shared_encoder(fingerprint: Optional[str], encoder_state: dict) -> Encoder:
    """The encoder this process already built for that fingerprint and options,
    or one built now from ``encoder_state`` (what ``Encoder.__getstate__`` gives)."""
    def build() -> Encoder:
        encoder = Encoder.__new__(Encoder)
        encoder.__setstate__(encoder_state)
        return encoder

    if fingerprint is None:
        return build()
    return _ENCODERS.get((fingerprint, encoder_state.get("options")), build)


@functools.lru_cache(maxsize=None)
def _load_pretrained(name: str) -> Tokenizer:
    table, special_tokens, pattern = pretrained_table(name)
    tokenizer = Tokenizer._from_rank_table(table, special_tokens, pattern, name)
    tokenizer._fingerprint = FINGERPRINTS[name]
    return tokenizer


#: The files a model directory may hold, in the order ``load`` looks for them.
MODEL_FILES = (FILE_NAME, HF_FILE_NAME, "tekken.json", ("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe"))


def _is_sentencepiece(path: str) -> bool:
    with open(path, "rb") as file:
        return looks_like_sentencepiece(file.read(16))


def load(name_or_path) -> Union[Tokenizer, SentencePieceTokenizer, HuggingFaceSentencePiece]:
    """Load a vocabulary shipped in the package by name, offline (every encoding
    tiktoken knows: "gpt2" or "r50k_base", "p50k_base", "p50k_edit",
    "cl100k_base", "o200k_base", "o200k_harmony"; a model's name too, as
    ``encoding_for_model`` maps it: "gpt-4o"), or a tokenizer from a file or
    a model's directory: bpe's own (``Tokenizer.save``), a Hugging Face
    ``tokenizer.json``, a Mistral ``tekken.json``, GPT-2's ``vocab.json`` with
    ``merges.txt`` (or ``encoder.json`` with ``vocab.bpe``), a SentencePiece BPE
    ``tokenizer.model`` (a ``bpe.sentencepiece.SentencePieceTokenizer``). The tokenizer's
    ``source`` says which file it read. A tiktoken rank file holds no pattern:
    read it with ``Tokenizer.from_tiktoken(path, pattern=...)``."""
    if isinstance(name_or_path, str) and (name_or_path in PRETRAINED or name_or_path in ALIASES):
        return _load_pretrained(ALIASES.get(name_or_path, name_or_path))
    path = os.fspath(name_or_path)
    if os.path.isdir(path):
        for names in MODEL_FILES:
            if isinstance(names, tuple):
                if all(os.path.exists(os.path.join(path, name)) for name in names):
                    return Tokenizer.from_files(*(os.path.join(path, name) for name in names))
            elif os.path.exists(os.path.join(path, names)):
                return load(os.path.join(path, names))
        model = os.path.join(path, "tokenizer.model")
        if os.path.isfile(model) and _is_sentencepiece(model):
            return load(model)
        rank_files = sorted(name for name in os.listdir(path) if name.endswith((".tiktoken", ".model")))
        hint = (f"; {rank_files[0]} may be a tiktoken rank file: read it with "
                "bpe.Tokenizer.from_tiktoken(path, pattern=..., special_tokens=...)") if rank_files else ""
        names = ", ".join([*(name if isinstance(name, str) else " with ".join(name) for name in MODEL_FILES),
                           "tokenizer.model (SentencePiece BPE)"])
        raise FileNotFoundError(f"{path}: holds no tokenizer bpe reads ({names}){hint}")
    if path.endswith(".json") and os.path.exists(path):
        document = read_json(path)
        if looks_like_tekken(document):
            return Tokenizer.from_tekken(path, document)
        return Tokenizer.from_huggingface(path)
    if os.path.isfile(path) and _is_sentencepiece(path):      # tokenizer.model, or Mistral's .model.v3
        return from_sentencepiece(path)
    if path.endswith((".tiktoken", ".tiktoken.gz", ".model")) and os.path.exists(path):
        raise ValueError(f"{path}: a tiktoken rank file holds no pattern: read it with "
                         "bpe.Tokenizer.from_tiktoken(path, pattern=..., special_tokens=...)")
    if not os.path.exists(path) and isinstance(name_or_path, str) and os.sep not in name_or_path:
        try:
            return load(encoding_name_for_model(name_or_path))
        except KeyError:
            pass
        import difflib

        known = [*PRETRAINED, *ALIASES]
        close = difflib.get_close_matches(name_or_path, known + list(MODEL_TO_ENCODING), n=1)
        guess = f"; did you mean {close[0]!r}?" if close else ""
        raise FileNotFoundError(f"no tokenizer {name_or_path!r}: not a built-in name "
                                f"({', '.join(known)}) nor a tokenizer file or directory{guess}")
    if not os.path.exists(path):
        raise FileNotFoundError(f"no tokenizer at {path}: no such file or directory")
    return Tokenizer.from_data(read_own(path), path)
