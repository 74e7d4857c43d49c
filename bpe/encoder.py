"""The Encoder: the encoding kernel with what it needs and nothing more.

An ``Encoder`` holds the Cython kernel (``bpe._encode.EncodeKernel``) built
from flat arrays, the pattern and the special tokens, and a pool of per-call
sessions (scratch buffers and pre-token caches). It is what a ``Tokenizer``
encodes with; it pickles as those arrays (about a megabyte), not as the
tokenizer's Python dicts.
"""
from __future__ import annotations

import contextlib
import dataclasses
import weakref
from typing import ClassVar, Iterator, Mapping, Optional, Sequence

import numpy as np

from bpe._encode import SHORT_CALL_CHARS, EncodeKernel, ShortCalls, check_path_choices
from bpe._session import SHARED_CACHE_AVAILABLE, SHORT_CACHE_SIZES, Session, SharedCache, check_slots
from bpe._lists import PrebuiltInts, ids_to_list, ids_to_lists
from bpe._memory import empty_written_once
from bpe.flat import flatten
from bpe.patterns import compile_pattern, native_pattern_id, regex_pretokens
from bpe.specials import special_spans, split_special
from bpe.unicode import as_reference
from bpe.workers import fork_safe_lock, in_forked_child


#: Texts up to this many characters are encoded into a list in one kernel call
#: (``Encoder.encode_to_list``); the list of a longer one is built without the GIL.
ONE_CALL_CHARS = 1 << 16


def utf8(text: str) -> bytes:
    """``text`` as UTF-8; lone surrogates (not Unicode scalar values) become U+FFFD, as in tiktoken.

    The kernel's own conversion (``EncodeKernel.encode_strs``) does the same; this is
    its reference, and the path for patterns the kernel cannot scan.
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


@dataclasses.dataclass(frozen=True)
class EncoderOptions:
    """How an ``Encoder``'s kernel and sessions run: choices among paths that
    give the same ids, and cache sizes. The defaults are for use; the tests
    make others (``bpe._testing``) to force each path and to see caches grow
    and start afresh within a short text."""

    #: The slots a session's short cache starts with and may grow to (powers of two).
    short_cache_slots: int = SHORT_CACHE_SIZES[0]
    short_cache_max_slots: int = SHORT_CACHE_SIZES[1]
    #: Misses in a batch after which the next merges its new short pre-tokens
    #: side by side: 0 every batch, -1 none, None the kernel's choice from its
    #: pair table's size and the L2 cache's (``EncodeKernel``).
    group_after_misses: Optional[int] = None
    #: The L2 cache that choice assumes: None the machine's, 0 unknown.
    l2_cache_bytes: Optional[int] = None
    #: Whether a merge's token is its rank plus an offset where every merged id
    #: follows its rank; False reads it from the table always.
    merged_ids_by_offset: bool = True
    #: Whether merges may start from a character's token where its bytes merge
    #: alone (``bpe/_wholechars.pxd``); False starts every merge from bytes.
    whole_chars: bool = True
    #: Whether characters that stand alone are read from the kernel's table
    #: of their ids (``alone_ids``, SentencePiece-style models'); False sends
    #: them through the caches as any pre-token.
    read_alone_ids: bool = True
    #: Whether a tokenizer's ``ShortCalls`` takes documents too (up to
    #: ``ONE_CALL_CHARS``); False leaves them to the pooled sessions.
    document_calls: bool = True

    def __post_init__(self):
        check_slots(self.short_cache_slots, self.short_cache_max_slots)
        check_path_choices(self.group_after_misses, self.l2_cache_bytes)
        for name in ("merged_ids_by_offset", "whole_chars", "read_alone_ids", "document_calls"):
            if type(getattr(self, name)) is not bool:
                raise ValueError(f"{name} must be a bool, not {getattr(self, name)!r}")

    def kernel(self) -> dict:
        """The ``EncodeKernel`` arguments among them (which it checks)."""
        return {"group_after_misses": self.group_after_misses, "l2_cache_bytes": self.l2_cache_bytes,
                "merged_ids_by_offset": self.merged_ids_by_offset, "whole_chars": self.whole_chars,
                "read_alone_ids": self.read_alone_ids}


class Encoder:
    """Encode text with one vocabulary (thread-safe; pools per-call sessions)."""

    #: The options of encoders made without any (``bpe._testing.encoder_defaults``
    #: changes them for a block, so that the encoders a test's tokenizers make
    #: inside take a path it forces).
    default_options: ClassVar[EncoderOptions] = EncoderOptions()

    def __init__(self, arrays: Mapping[str, np.ndarray], pattern: Optional[str],
                 special_tokens: Mapping[str, int], source: Optional[str] = None, pipeline=None,
                 keep_unmatched: bool = True, options: Optional[EncoderOptions] = None):
        self.options = options if options is not None else Encoder.default_options
        self._arrays = dict(arrays)
        self.keep_unmatched = keep_unmatched      # see Tokenizer._keep_unmatched
        self.pattern = pattern
        self.source = source          # where the pattern came from, for errors
        self.special_tokens = dict(special_tokens)
        # A Hugging Face file's steps before the model (``bpe.huggingface.pipeline.Pipeline``),
        # where they are more than the pattern and the special tokens: None when
        # the kernel alone encodes every text as they would.
        self.pipeline = pipeline if pipeline is not None and not (
            pipeline.simple and pipeline.normalizer.identity) else None
        self._kernel = EncodeKernel(**self._arrays, **self.options.kernel())
        self._native = native_pattern_id(pattern)
        self._lock = fork_safe_lock(self, "_lock")
        self._idle_sessions: list = []
        self._shared_cache = None     # a SharedCache, made by the first ``sharing_cache``
        self._sharing = 0             # ``sharing_cache`` blocks open
        self._shared_leases = 0       # sessions lent out that share it
        self._needles_made: dict = {}
        self._needles_last = (None, None)
        # Every tokenizer's ShortCalls, to clear and pause: weakly, since the
        # tokenizers unpickled in a process share one encoder and come and go.
        self._short_calls = weakref.WeakSet()
        # The last of them made, which lends its session to the general path
        # while idle (``_Lease``): a weak reference, read without the lock.
        self._lender = None
        in_forked_child(self, "short calls", Encoder._restart_busy_short_calls)

    @classmethod
    def from_tokens(cls, ids_by_bytes: Mapping[bytes, int], ranked_ids: Sequence[int],
                    pattern: Optional[str], special_tokens: Mapping[str, int],
                    source: Optional[str] = None) -> "Encoder":
        """``ids_by_bytes``: every ordinary token; ``ranked_ids``: merged tokens in merge order."""
        tokens = sorted(ids_by_bytes.items(), key=lambda item: item[1])
        token_data, token_offsets = flatten([token for token, _ in tokens])
        arrays = {
            "byte_ids": np.array([ids_by_bytes[bytes([b])] for b in range(256)], dtype=np.int32),
            "token_data": token_data,
            "token_offsets": token_offsets,
            "token_ids": np.array([token_id for _, token_id in tokens], dtype=np.int32),
            "ranked_ids": np.array(ranked_ids, dtype=np.int32),
        }
        return cls(arrays, pattern, special_tokens, source)

    def __getstate__(self):
        return {"arrays": self._arrays, "pattern": self.pattern, "special_tokens": self.special_tokens,
                "source": self.source, "pipeline": self.pipeline, "keep_unmatched": self.keep_unmatched,
                "options": self.options}

    def __setstate__(self, state):
        self.__init__(state["arrays"], state["pattern"], state["special_tokens"], state.get("source"),
                      state.get("pipeline"), state.get("keep_unmatched", True), state.get("options"))

    def split_ranked(self, token_data: np.ndarray, token_offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each token k of ``token_data`` (``flatten``'s arrays; at least 2 bytes)
        merged with only the merges of rank < k, in one kernel call: ``(parts,
        n_parts)``, the ids of the first two parts of each (-1 where there are
        fewer) and how many there were. A merged token of rank k comes out as
        exactly the two parts its merge joined."""
        return self._kernel.split_ranked(token_data, token_offsets)

    def short_calls(self, ints: PrebuiltInts) -> Optional[ShortCalls]:
        """A ``ShortCalls`` (a str in, its ids out, in one C call) recognising
        every special token (or, asked, none); None where the kernel does not
        encode text alone (a custom pattern, a Hugging Face pipeline).
        ``clear_cache`` clears it too."""
        if self._native is None or self.pipeline is not None:
            return None
        tokens = sorted(self.special_tokens)
        short = ShortCalls(self._kernel, self._native, *self._needles(tokens), ints, self._new_session(),
                           ONE_CALL_CHARS if self.options.document_calls else SHORT_CALL_CHARS)
        with self._lock:
            short.paused = self._sharing > 0
            self._short_calls.add(short)
            if self.options.document_calls:
                self._lender = weakref.ref(short)
        return short

    def _restart_busy_short_calls(self) -> None:
        # In a forked child: a document's call runs without the GIL, and one
        # running on another thread at the fork left its ShortCalls busy for
        # ever there, its session half written.
        for short in list(self._short_calls):
            short.after_fork(self._new_session())

    def _new_session(self) -> Session:
        return Session(self.options.short_cache_slots, self.options.short_cache_max_slots)

    def _session(self) -> "_Lease":
        """Scratch buffers and a warm pre-token cache for one call: ``with
        self._session() as session``.

        Sessions are pooled here rather than kept per thread, so caches stay warm
        across calls even when thread pools come and go; a session serves one
        call at a time. An idle ``ShortCalls`` lends its own first, so that a
        tokenizer's documents, short and long, share one session's caches.
        """
        return _Lease(self)

    @contextlib.contextmanager
    def sharing_cache(self) -> Iterator[None]:
        """A ``with`` block in which every call's session looks up and fills
        caches shared (``bpe._session.SharedCache``): one short cache instead of
        its own, and one general cache behind its own. For threads that encode
        parts of one corpus at once, each of which would otherwise merge again
        what the others have merged.

        The shared caches are kept for the next block, as sessions keep theirs,
        and start afresh in one when either is crowded. Where it cannot be made
        (out of memory, or a compiler without atomics), sessions keep their own."""
        with self._lock:
            if self._shared_cache is None:
                try:
                    self._shared_cache = (SharedCache(self.options.short_cache_max_slots)
                                          if SHARED_CACHE_AVAILABLE else None)
                except MemoryError:
                    pass                   # sessions keep their own; the next block tries again
            elif self._sharing == 0 and self._shared_leases == 0 and self._shared_cache.crowded():
                self._shared_cache.clear()
            self._sharing += 1
            for short in self._short_calls:
                short.paused = True
        try:
            yield
        finally:
            with self._lock:
                self._sharing -= 1
                for short in self._short_calls:
                    short.paused = self._sharing > 0

    def clear_cache(self) -> None:
        """Drop the pooled sessions: their pre-token caches and scratch buffers.
        A call in progress keeps its own session, which it returns afterwards."""
        with self._lock:
            self._idle_sessions.clear()
            self._shared_cache = None
            for short in self._short_calls:
                short.clear(self._new_session())

    def encode_utf8(self, data, allowed: Sequence[str], out: Optional[np.ndarray] = None) -> np.ndarray:
        """The ids (uint32) of valid UTF-8 ``data`` (bytes-like), the ``allowed``
        special tokens recognised; written into ``out`` (uint32, at least
        ``len(data)`` long: see ``EncodeKernel.encode_texts``) when given, and then a
        view of it."""
        if self.pipeline is not None:
            text = bytes(data).decode("utf-8")
            if not self._kernel_may_encode(text, allowed):
                return self._encode_many_with_pipeline([text], allowed, out)[0]
        if self._native is None and self.pattern is not None:
            return self._encode_many_with_regex([bytes(data).decode("utf-8")], allowed, out)[0]
        data = np.frombuffer(data, dtype=np.uint8)
        with self._session() as session:
            return self._kernel.encode_texts(session, data, np.array([0, len(data)], dtype=np.int64),
                                             self._pattern_id(), *self._needles(allowed), out)[0]

    def encode_utf8_texts(self, data: np.ndarray, offsets: np.ndarray, allowed: Sequence[str],
                          out: Optional[np.ndarray] = None) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, id_offsets)`` of valid UTF-8 texts in one buffer (uint8), text t
        at ``data[offsets[t]:offsets[t + 1]]`` (int64): one GIL-free kernel call,
        no str per text (a Parquet column's buffers, as they are). With ``out``,
        as ``encode_utf8``."""
        if self.pipeline is not None or (self._native is None and self.pattern is not None):
            bounds = offsets.tolist()
            raw = data.tobytes()
            return self.encode_strs([raw[a:b].decode("utf-8") for a, b in zip(bounds, bounds[1:])], allowed, out)
        with self._session() as session:
            return self._kernel.encode_texts(session, data, offsets, self._pattern_id(), *self._needles(allowed),
                                             out)

    def encode_strs(self, texts: Sequence[str], allowed: Sequence[str],
                    out: Optional[np.ndarray] = None) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, id_offsets)`` for str texts, converted to UTF-8 and encoded in one
        GIL-free kernel call (lone surrogates become U+FFFD); the ids of text t are
        ``ids[id_offsets[t]:id_offsets[t + 1]]``. With ``out``, the ids are written
        there (see ``EncodeKernel.encode_strs``)."""
        if self.pipeline is not None and not all(self._kernel_may_encode(text, allowed) for text in texts):
            return self._encode_many_with_pipeline(texts, allowed, out)
        if self._native is None and self.pattern is not None:
            # utf8 replaces lone surrogates, which the regex path could not encode.
            return self._encode_many_with_regex([utf8(text).decode("utf-8") for text in texts],
                                                allowed, out)
        with self._session() as session:
            return self._kernel.encode_strs(session, texts, self._pattern_id(), *self._needles(allowed), out)

    def encode_metaspace_strs(self, texts: Sequence[str], prefix: bool,
                              allowed: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``encode_strs`` of the texts SentencePiece's normalizer makes of ``texts``
        where all it does is write each space as ``▁`` (with one more in front
        if ``prefix``), made by the kernel as it reads them (``EncodeKernel.encode_strs``'
        ``metaspace_prefix``): the metaspace pattern only."""
        with self._session() as session:
            return self._kernel.encode_strs(session, texts, self._pattern_id(), *self._needles(allowed),
                                            metaspace_prefix=prefix)

    def encode_to_list(self, text: str, allowed: Sequence[str], ints: PrebuiltInts) -> list:
        """The ids of one str as a list of the prebuilt ``ints``.

        A document's worth of text takes the kernel's one-call path; a longer
        text the array path, whose list is built mostly without the GIL."""
        if self.pipeline is not None and not self._kernel_may_encode(text, allowed):
            return ids_to_list(self._encode_many_with_pipeline([text], allowed, None)[0], ints)
        if self._native is None or len(text) > ONE_CALL_CHARS:
            return ids_to_list(self.encode_strs([text], allowed)[0], ints)
        with self._session() as session:
            return self._kernel.encode_str_to_list(session, text, self._native, *self._needles(allowed),
                                                   ints)

    def encode_to_array(self, text: str, allowed: Sequence[str], narrow: bool) -> np.ndarray:
        """The ids of one str as a numpy array of exactly their number, uint16
        with ``narrow`` (every id must fit), else uint32: a document's worth of
        text in one kernel call into the session's buffer; a longer text (or
        one the kernel does not encode alone) by ``encode_strs``."""
        if self._native is None or len(text) > ONE_CALL_CHARS or (
                self.pipeline is not None and not self._kernel_may_encode(text, allowed)):
            ids = self.encode_strs([text], allowed)[0]
            if not narrow:
                return ids
            out = empty_written_once(ids.size, np.uint16)     # not astype's: see bpe/_memory.pyx
            out[...] = ids
            return out
        with self._session() as session:
            return self._kernel.encode_str_to_array(session, text, self._native, *self._needles(allowed), narrow)

    def encode_strs_to_lists(self, texts: Sequence[str], allowed: Sequence[str], ints: PrebuiltInts) -> list:
        """The ids of each str as a list of the prebuilt ``ints``: ``encode_strs``
        and ``ids_to_lists`` in one kernel call, for the native patterns."""
        if self._native is None or (self.pipeline is not None and
                                    not all(self._kernel_may_encode(text, allowed) for text in texts)):
            return ids_to_lists(*self.encode_strs(texts, allowed), ints)
        with self._session() as session:
            return self._kernel.encode_strs_to_lists(session, texts, self._native, *self._needles(allowed),
                                                     ints)

    def encode_piece(self, piece: bytes) -> np.ndarray:
        """The ids (uint32) of one pre-token's bytes, merged by priority."""
        with self._session() as session:
            return self._kernel.encode_pieces(session, [bytes(piece)])

    def _pattern_id(self) -> int:
        return -1 if self._native is None else self._native

    def _needles(self, allowed: Sequence[str]) -> tuple[tuple[bytes, ...], np.ndarray]:
        """The kernel's form of the ``allowed`` special tokens: their UTF-8 and ids,
        made once for each set asked for (a call per short document made them
        again each time)."""
        if allowed is self._needles_last[0]:          # the same list as last time: most calls
            return self._needles_last[1]
        key = tuple(allowed)
        needles = self._needles_made.get(key)
        if needles is None:
            needles = (tuple(token.encode("utf-8") for token in key),
                       np.array([self.special_tokens[token] for token in key], dtype=np.uint32))
            needles[1].flags.writeable = False
            self._needles_made[key] = needles
        self._needles_last = (allowed, needles)
        return needles

    def _encode_many_with_regex(self, texts: Sequence[str], allowed: Sequence[str],
                                out: Optional[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        parts = [self._encode_with_regex(text, allowed) for text in texts]
        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([len(part) for part in parts], out=offsets[1:])
        ids = np.concatenate(parts) if parts else np.empty(0, np.uint32)
        if out is not None:
            out[:len(ids)] = ids
            ids = out[:len(ids)]
        return ids, offsets

    def _kernel_may_encode(self, text: str, allowed: Sequence[str]) -> bool:
        """Whether the kernel alone gives the pipeline's ids for ``text``: the
        pipeline's steps are a pattern and plain added tokens (or tokens of
        both kinds, none of the normalized kind in ``text``), and its normalizer
        leaves each stretch between those tokens as it is (ASCII text, always,
        under Unicode normalization forms)."""
        pipeline = self.pipeline
        if not pipeline.simple:
            return pipeline.second_kind is not None and pipeline.lacks_second_kind(text, allowed)
        if pipeline.normalizer.surely_unchanged(text):
            return True
        return pipeline.unchanged(text, special_spans(text, allowed) if allowed else ())

    def _encode_many_with_pipeline(self, texts: Sequence[str], allowed: Sequence[str],
                                   out: Optional[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        parts = [self._encode_with_pipeline(utf8(text).decode("utf-8"), allowed) for text in texts]
        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([len(part) for part in parts], out=offsets[1:])
        ids = np.concatenate(parts) if parts else np.empty(0, np.uint32)
        if out is not None:
            out[:len(ids)] = ids
            ids = out[:len(ids)]
        return ids, offsets

    def _encode_with_pipeline(self, text: str, allowed: Sequence[str]) -> np.ndarray:
        """A Hugging Face file's steps in Python (added tokens, normalizer,
        pre-tokenizer), then the kernel merges each run of pre-tokens."""
        parts, pending = [], []
        with self._session() as session:
            for token_id, pieces in self.pipeline.pieces(text, frozenset(allowed)):
                if token_id is None:
                    pending.extend(piece.encode("utf-8") for piece in pieces)
                    continue
                if pending:
                    parts.append(self._kernel.encode_pieces(session, pending))
                    pending = []
                parts.append(np.array([token_id], dtype=np.uint32))
            if pending:
                parts.append(self._kernel.encode_pieces(session, pending))
        return np.concatenate(parts) if parts else np.empty(0, np.uint32)

    def _encode_with_regex(self, text: str, allowed: Sequence[str]) -> np.ndarray:
        """Custom patterns: ``regex`` pre-tokenizes, the kernel merges."""
        compiled = compile_pattern(self.pattern)
        parts = []
        for segment, special in split_special(text, allowed):
            if self.keep_unmatched:
                found = regex_pretokens(compiled, segment, self.source)
            else:                               # tiktoken's: the matches alone
                found = [segment[match.start():match.end()] for match in compiled.finditer(as_reference(segment))
                         if match.end() > match.start()]
            pieces = [p.encode("utf-8") for p in found]
            with self._session() as session:
                parts.append(self._kernel.encode_pieces(session, pieces))
            if special is not None:
                parts.append(np.array([self.special_tokens[special]], dtype=np.uint32))
        return np.concatenate(parts)


class _Lease:
    """``Encoder._session``: an idle ShortCalls' session or a pooled one, lent
    for a ``with`` block; a pooled one sharing the encoder's shared caches
    while a ``sharing_cache`` block is open. (An interrupt between ``lend``
    and the block leaves the ShortCalls busy: its calls then go the general
    way, exact but slower, until ``clear_cache``.) A
    plain class, not a generator-based context manager: that cost 2 us a
    call, a seventh of encoding a short document."""

    __slots__ = ("encoder", "session", "shared", "lender")

    def __init__(self, encoder: Encoder):
        self.encoder = encoder

    def __enter__(self) -> Session:
        encoder = self.encoder
        # An idle ShortCalls' session first: its caches hold what the
        # tokenizer's calls on documents met. Asked without the lock (``lend``
        # takes it or not in one step, holding the GIL) and without making
        # an object, which could start a garbage collection whose finalizer
        # encodes with this encoder. Never while calls share caches (the
        # ShortCalls are paused then, and lend nothing).
        lender = encoder._lender() if encoder._lender is not None else None
        if lender is not None:
            self.session = lender.lend()
            if self.session is not None:
                self.lender = lender
                self.shared = None
                return self.session
        self.lender = None
        with encoder._lock:
            self.session = encoder._idle_sessions.pop() if encoder._idle_sessions else None
            self.shared = encoder._shared_cache if encoder._sharing else None
            if self.shared is not None:
                encoder._shared_leases += 1
        try:
            if self.session is None:
                self.session = encoder._new_session()
        except BaseException:
            if self.shared is not None:
                with encoder._lock:
                    encoder._shared_leases -= 1
            raise
        if self.shared is not None:
            self.session.share(self.shared)
        return self.session

    def __exit__(self, *exc_info) -> None:
        if self.lender is not None:
            self.lender.take_back(self.session)
            return
        if self.shared is not None:
            self.session.unshare()
        with self.encoder._lock:
            self.encoder._idle_sessions.append(self.session)
            if self.shared is not None:
                self.encoder._shared_leases -= 1
