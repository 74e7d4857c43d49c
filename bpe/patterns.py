"""Pre-tokenization rules: the named patterns, special-token splitting, safe cut points.

Each rule lives here once; the trainer, the encoder, the chunker and ``bpe.pure``
all refer to these definitions.
"""
from __future__ import annotations

import functools
from typing import Iterator, Optional, Sequence

import regex

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

#: The built-in patterns by name; tiktoken's encoding names are aliases.
PATTERNS = {"gpt2": GPT2_PATTERN, "cl100k": CL100K_PATTERN, "o200k": O200K_PATTERN}
_ALIASES = {"r50k_base": "gpt2", "cl100k_base": "cl100k", "o200k_base": "o200k"}


def canonical_pattern(pattern: Optional[str]) -> Optional[str]:
    """The name of a built-in pattern (aliases resolved), or a custom regex as given.

    Raises ValueError naming the pattern if it is a regex that does not compile.
    """
    if pattern is None:
        return None
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str or None, not {type(pattern).__name__}")
    pattern = _ALIASES.get(pattern, pattern)
    if pattern in PATTERNS:
        return pattern
    for name, source in PATTERNS.items():
        if pattern == source:
            return name
    try:
        regex.compile(pattern)
    except regex.error as e:
        raise ValueError(f"pattern {pattern!r} is neither a built-in name "
                         f"({', '.join(PATTERNS)}) nor a valid regex: {e}") from None
    return pattern


def pattern_regex(pattern: Optional[str]) -> Optional[str]:
    """The regex source of a pattern name or custom regex; None for no pre-tokenization."""
    pattern = canonical_pattern(pattern)
    return PATTERNS.get(pattern, pattern) if pattern is not None else None


def compile_pattern(pattern: Optional[str]):
    source = pattern_regex(pattern)
    return None if source is None else regex.compile(source)


def pretokenize(text: str, pattern: Optional[str] = "gpt2") -> list[str]:
    """Split ``text`` into pre-tokens: exactly ``regex.findall(pattern, text)``.

    Built-in patterns use the native scanners (``bpe/_pretok.pyx``), custom ones
    ``regex``. ``pattern=None`` keeps the text whole (one pre-token, none if empty).

    >>> pretokenize("Hello world's  end")
    ['Hello', ' world', "'s", ' ', ' end']
    """
    native = native_pattern_id(pattern)
    if native is not None:
        from bpe import _pretok

        data = text.encode("utf-8", "surrogatepass")
        offsets = _pretok.split_offsets(data, native).tolist()
        return [data[a:b].decode("utf-8", "surrogatepass") for a, b in zip(offsets, offsets[1:])]
    compiled = compile_pattern(pattern)
    if compiled is None:
        return [text] if text else []
    return compiled.findall(text)


# --------------------------------------------------------------------------- special tokens

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
        if token in seen:
            raise ValueError(f"special token {token!r} is given twice")
        seen.add(token)
    return tokens


def special_regex(special_tokens: Sequence[str], as_bytes: bool = False):
    return _special_regex(tuple(special_tokens), as_bytes)


@functools.lru_cache(maxsize=64)
def _special_regex(special_tokens: tuple[str, ...], as_bytes: bool):
    """A regex matching any of ``special_tokens``, the longest first where they overlap.

    With ``as_bytes`` it matches their UTF-8 bytes in UTF-8 text, at the same
    places: a valid UTF-8 string can only match at character boundaries.
    None when there are no special tokens.
    """
    if not special_tokens:
        return None
    ordered = sorted(special_tokens, key=len, reverse=True)
    if as_bytes:
        return regex.compile(b"|".join(regex.escape(token.encode("utf-8")) for token in ordered))
    return regex.compile("|".join(regex.escape(token) for token in ordered))


def special_spans(text, special_tokens) -> list[tuple[int, int, int]]:
    """``(start, end, index)`` of each special token in ``text``, the rule of
    ``split_special`` computed with ``find`` (memchr speed) instead of a regex.

    ``text`` and ``special_tokens`` are both str or both bytes; ``index`` points
    into ``special_tokens``. Leftmost first; at one position the longest wins.
    """
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


def native_pattern_id(pattern: Optional[str]) -> Optional[int]:
    """The native scanner's id for a built-in pattern (tables installed), else None."""
    pattern = canonical_pattern(pattern)
    if pattern not in PATTERNS:
        return None
    from bpe import _pretok, unicode

    unicode.install()
    return _pretok.PATTERN_IDS[pattern]


def split_special(text: str, special_tokens: Sequence[str]) -> Iterator[tuple[str, Optional[str]]]:
    """Yield ``(segment, special)`` pairs: ordinary text, then the special token that ends it.

    The last pair's special is None. At any position the longest special token
    that matches wins, so ``<|endoftext|><|endoftext|>`` beats ``<|endoftext|>``
    when both are registered; the earliest match wins over a later, longer one.

    >>> list(split_special("a<|x|>b", ["<|x|>"]))
    [('a', '<|x|>'), ('b', None)]
    """
    matcher = special_regex(special_tokens)
    if matcher is None:
        yield text, None
        return
    start = 0
    for match in matcher.finditer(text):
        yield text[start:match.start()], match.group()
        start = match.end()
    yield text[start:], None


# --------------------------------------------------------------------------- safe cuts

_ASCII_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_ASCII_VISIBLE_BYTES = frozenset(range(0x21, 0x7F))


def is_safe_cut(before: bytes, after: bytes, pattern: Optional[str]) -> bool:
    """Whether splitting text between ``before`` and ``after`` provably leaves its
    pre-tokens unchanged (for the built-in patterns only).

    ``before`` must end with at least two bytes and ``after`` start with one. The
    cut qualifies when the text reads ``V "\\n" W`` across it: ``V`` an ASCII
    visible (non-space) character, ``W`` an ASCII letter or digit. Why this holds
    for gpt2, cl100k and o200k:

    * The newline is a whitespace run of length one (``V`` is not whitespace and
      ``W`` is not), so no whitespace branch reaches past it; it is matched alone
      (``\\s+`` / ``\\s*[\\r\\n]``), or appended to a punctuation run by cl100k's
      ``[\\r\\n]*`` / o200k's ``[\\r\\n/]*``, which stop at ``W`` with or without
      the text after the cut.
    * No branch may start with a newline and continue into a letter or digit: the
      optional leading character of the letter branches excludes ``\\r\\n``, and
      the space-prefixed branches take only ``' '``.
    * So a match ends exactly at the cut in the whole text and in the left part
      (where end-of-text satisfies the same lookaheads ``(?!\\S)`` and ``$``), and
      the patterns look no further behind than the match start, so the right part
      is matched as in the whole text. ASCII bytes never occur inside a multi-byte
      UTF-8 sequence, so the cut is also a character boundary.

    Custom patterns and ``pattern=None`` have no safe cut except at special tokens.
    ``tests/test_chunking.py`` checks the claim against ``regex`` on random text.
    """
    if canonical_pattern(pattern) not in PATTERNS:
        return False
    return (
        len(before) >= 2
        and len(after) >= 1
        and before[-1] == 0x0A
        and before[-2] in _ASCII_VISIBLE_BYTES
        and after[0] in _ASCII_WORD_BYTES
    )


def find_safe_cut(window: bytes, pattern: Optional[str], start: int = 2) -> int:
    """The first position ``p >= start`` in ``window`` where ``is_safe_cut`` holds, or -1."""
    if canonical_pattern(pattern) not in PATTERNS:
        return -1
    position = max(start, 2) - 1
    while True:
        position = window.find(b"\n", position)
        if position < 0 or position + 1 >= len(window):
            return -1
        cut = position + 1
        if is_safe_cut(window[:cut], window[cut:cut + 1], pattern):
            return cut
        position += 1
