"""The tests' way into the encoder's choices: tokenizers whose encoders take
one path where the kernel would choose, or whose caches are small enough to
grow and start afresh within a short text. Every path gives the same ids;
these let a test see that each does (``bpe.encoder.EncoderOptions``)."""
from __future__ import annotations

import contextlib
import copy
import dataclasses
from typing import Iterator

from bpe._encode import EVERY_BATCH_GROUPED, NONE_GROUPED
from bpe.encoder import Encoder, EncoderOptions
from bpe.tokenizer import Tokenizer
from bpe.workers import fork_safe_lock

#: The ways a cold batch's new short pre-tokens may be merged.
MISS_PATHS = {"batched": EVERY_BATCH_GROUPED, "one by one": NONE_GROUPED}

_tuned: dict = {}


def small_sizes(first: int, largest: int) -> dict:
    """The options of sessions whose short caches start with ``first`` slots
    and grow to ``largest``: small ones grow and start afresh within a short text."""
    return {"short_cache_slots": first, "short_cache_max_slots": largest}


def tuned(tok: Tokenizer, **changes) -> Tokenizer:
    """A copy of ``tok`` whose encoder is made with ``changes`` to its
    options (``EncoderOptions``' fields); the same copy for the same
    tokenizer and changes, so that a test run many times builds it once."""
    options = dataclasses.replace(tok.encoder.options, **changes)
    key = (id(tok), options)
    if key not in _tuned:
        copied = copy.copy(tok)
        fork_safe_lock(copied, "_encoder_lock")
        encoder = tok.encoder
        copied._set_encoder(Encoder(encoder._arrays, encoder.pattern, encoder.special_tokens, encoder.source,
                                    encoder.pipeline, encoder.keep_unmatched, options))
        _tuned[key] = (tok, copied)      # tok kept alive: its id names no other meanwhile
    return _tuned[key][1]


@contextlib.contextmanager
def encoder_defaults(**changes) -> Iterator[EncoderOptions]:
    """Meanwhile, encoders made without options of their own (those of the
    tokenizers a test loads, trains or reads inside the block) take
    ``changes`` to the defaults."""
    before = Encoder.default_options
    Encoder.default_options = dataclasses.replace(before, **changes)
    try:
        yield Encoder.default_options
    finally:
        Encoder.default_options = before
