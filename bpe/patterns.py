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


_NOGIL_SEARCH_BYTES = 1 << 16


def special_spans(text, special_tokens) -> list[tuple[int, int, int]]:
    """``(start, end, index)`` of each special token in ``text``, the rule of
    ``split_special`` computed with ``find`` (memchr speed) instead of a regex.

    ``text`` and ``special_tokens`` are both str or both bytes; ``index`` points
    into ``special_tokens``. Leftmost first; at one position the longest wins.
    """
    if not isinstance(text, str) and (not isinstance(text, bytes) or len(text) >= _NOGIL_SEARCH_BYTES):
        # Found without the GIL (memmem), so threads pre-tokenize in parallel; short
        # texts are searched faster by find, whose call costs less. Other bytes-like
        # objects (a reused read buffer) have no find: search them here too.
        from bpe._pretok import find_special_spans

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

#: Positions where splitting text provably leaves the pre-tokens of gpt2, cl100k
#: and o200k unchanged, whatever follows (see ``is_safe_cut``).
SAFE_CUT_SOURCE = r"(?<=[!-~]\n)(?=[A-Za-z0-9])|(?<=[A-Za-z])(?= [A-Za-z])"
_SAFE_CUT = {str: regex.compile(SAFE_CUT_SOURCE), bytes: regex.compile(SAFE_CUT_SOURCE.encode())}
_LAST_SAFE_CUT = {str: regex.compile(SAFE_CUT_SOURCE, regex.REVERSE),
                  bytes: regex.compile(SAFE_CUT_SOURCE.encode(), regex.REVERSE)}


def is_safe_cut(text, position: int, pattern: Optional[str]) -> bool:
    r"""Whether splitting ``text`` (str or UTF-8 bytes) at ``position`` provably
    leaves its pre-tokens unchanged, for the built-in patterns.

    Two shapes qualify (``SAFE_CUT_SOURCE``), each reading ASCII around the cut:

    1. ``V "\n" | W``: V a visible ASCII character, W an ASCII letter or digit.
       The newline is a whitespace run of one (V and W are not whitespace), so
       no whitespace branch reaches past it; it is matched alone
       (``\s+``, ``\s*[\r\n]``, or ``\s+(?!\S)`` at the end of the left
       part) or appended to a punctuation run by cl100k's ``[\r\n]*`` / o200k's
       ``[\r\n/]*``, which stop at W either way.
    2. ``L | " " L``: letters on both sides of a space. The letter run before the
       cut ends there in the whole text (the space is no letter) and at the end of
       the left part alike; o200k's backtracking and contraction suffix look only
       at that next character, which is no letter, mark or apostrophe either way.
       The space then starts the next pre-token (`` ?\p{L}+`` in gpt2, the
       optional leading character in cl100k and o200k).

    In both, a match ends exactly at the cut in the whole text and in the left
    part, and the patterns never look behind a match's start, so the right part
    is matched as in the whole text. ASCII bytes never occur inside a multi-byte
    UTF-8 sequence, so the cut is a character boundary too. Custom patterns and
    ``pattern=None`` have no safe cut except at special tokens.
    ``tests/test_chunking.py`` checks the claim against ``regex`` on random text.
    """
    if canonical_pattern(pattern) not in PATTERNS:
        return False
    return _SAFE_CUT[type(text)].match(text, position) is not None


def find_safe_cut(text, pattern: Optional[str], start: int = 0, last: bool = False) -> int:
    """The first (or ``last``) position ``>= start`` where ``is_safe_cut`` holds, or -1.

    A cut needs one character of context on its right, so the last position
    of ``text`` never qualifies.
    """
    if canonical_pattern(pattern) not in PATTERNS:
        return -1
    match = (_LAST_SAFE_CUT if last else _SAFE_CUT)[type(text)].search(text, start)
    return -1 if match is None else match.start()
