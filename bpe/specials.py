"""Special tokens: checking them, finding them in text, and which ones a call recognises.

The rule, defined once here (``special_spans``): scanning left to right, the
leftmost occurrence of any special token wins, and of those starting at one
position the longest; matches never overlap. ``split_special`` cuts text by
it, ``refuse_disallowed`` searches by it, and the kernels' ``memmem`` search
(``bpe/_specials.pxd``) is its nogil twin, tested against it.
"""
from __future__ import annotations

from typing import Collection, Iterator, Optional, Sequence, Union

from bpe._scanner import find_special_spans

#: Texts at least this long (bytes) are searched by the kernel, without the GIL,
#: so threads find special tokens in parallel; shorter ones by ``find``, whose
#: call costs less.
NOGIL_SEARCH_BYTES = 1 << 16


def check_special_tokens(special_tokens: Sequence[str]) -> list[str]:
    """Validate special tokens: non-empty, distinct strings. Returns them as a list."""
    if isinstance(special_tokens, str):
        raise TypeError("special_tokens must be a sequence of str, not a single str "
                        f"(did you mean [{special_tokens!r}]?)")
    tokens = list(special_tokens)
    seen = set()
    for token in tokens:
        if not isinstance(token, str):
            raise TypeError(f"special token {token!r} is not a str")
        if not token:
            raise ValueError("special tokens must not be empty strings")
        try:
            token.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"special token {token!r} is not valid Unicode (it holds a lone "
                             "surrogate), so it has no UTF-8 bytes") from None
        if token in seen:
            raise ValueError(f"special token {token!r} is given twice")
        seen.add(token)
    return tokens


def special_spans(text, special_tokens) -> list[tuple[int, int, int]]:
    """``(start, end, index)`` of each special token in ``text``: the leftmost first,
    the longest at one position, none overlapping an earlier one.

    ``text`` and ``special_tokens`` are both str or both bytes; ``index`` points
    into ``special_tokens``.

    >>> special_spans("a<|x|>b<|x|><|x|>", ["<|x|>", "<|x|><|x|>"])
    [(1, 6, 0), (7, 17, 1)]
    """
    if not isinstance(text, str) and (not isinstance(text, bytes) or len(text) >= NOGIL_SEARCH_BYTES):
        # The kernel's twin of the loop below. Other bytes-like objects (a reused
        # read buffer) have no find: they are searched there too.
        return find_special_spans(text, special_tokens)
    # Every occurrence (overlaps included), then the matches a left-to-right scan
    # makes: the leftmost first, the longest at one position, none overlapping a kept one.
    found = []
    for index, token in enumerate(special_tokens):
        position = text.find(token)
        while position >= 0:
            found.append((position, -len(token), index))
            position = text.find(token, position + 1)
    found.sort()
    spans = []
    end = 0
    for start, negative_length, index in found:
        if start >= end:
            end = start - negative_length
            spans.append((start, end, index))
    return spans


def split_special(text: str, special_tokens: Sequence[str]) -> Iterator[tuple[str, Optional[str]]]:
    """Yield ``(segment, special)`` pairs: ordinary text, then the special token that ends it.

    The last pair's special is None; the tokens are found by ``special_spans``.

    >>> list(split_special("a<|x|>b", ["<|x|>"]))
    [('a', '<|x|>'), ('b', None)]
    """
    start = 0
    for span_start, span_end, index in special_spans(text, special_tokens) if special_tokens else ():
        yield text[start:span_start], special_tokens[index]
        start = span_end
    yield text[start:], None


SpecialSet = Union[str, Collection[str]]   # "all", or a collection of special tokens


def special_policy(special_tokens: Collection[str], allowed_special: SpecialSet,
                   disallowed_special: SpecialSet) -> tuple[list[str], set[str]]:
    """The special tokens to recognise (sorted) and those whose text is refused, from
    tiktoken-style ``allowed_special`` and ``disallowed_special`` ("all" or a set)."""
    if not allowed_special and not disallowed_special:       # neither: the common call, at once
        return [], set()
    names = set(special_tokens)
    allowed = names if allowed_special == "all" else set(allowed_special)
    unknown = allowed - names
    if unknown:
        raise ValueError(f"allowed_special names {sorted(unknown)[0]!r}, which is not a "
                         "special token of this tokenizer")
    disallowed = names - allowed if disallowed_special == "all" else set(disallowed_special)
    return sorted(allowed), disallowed


def refuse_disallowed(disallowed: Collection[str], text: str) -> None:
    """Raise ValueError, as tiktoken does, if ``text`` holds a disallowed special token."""
    if not disallowed:
        return
    tokens = sorted(disallowed)
    spans = special_spans(text, tokens)
    if spans:
        token = tokens[spans[0][2]]
        raise ValueError(
            f"Encountered text corresponding to disallowed special token {token!r}.\n"
            f"If you want this text to be encoded as a special token, pass it to "
            f"`allowed_special`, e.g. `allowed_special={{{token!r}, ...}}`.\n"
            f"If you want this text to be encoded as normal text, disable the check for "
            f"this token by passing `disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
            f"To disable this check for all special tokens, pass `disallowed_special=()`.\n")
