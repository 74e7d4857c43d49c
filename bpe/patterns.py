"""Pre-tokenization rules: the named patterns, ``pretokenize``, safe cut points.

Each rule lives here once; the trainer, the encoder, the chunker and ``bpe.pure``
all refer to these definitions. (Special tokens have their own module,
``bpe.specials``.)
"""
from __future__ import annotations

import functools
import re
from typing import Optional

from bpe._scanner import PATTERN_IDS, split_offsets
from bpe.unicode import as_reference

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

#: cl100k as tiktoken first spelt it, which Llama 3 ships (its tokenizer.json and
#: tokenizer.model): it differs from CL100K_PATTERN only on a white-space run
#: that reaches the text's end (split after its last CR or LF).
LLAMA3_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                  r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
#: Qwen2's (its tokenizer.json, and qwen.tiktoken's): Llama 3's with one digit a pre-token.
QWEN2_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")

#: DeepSeek V3's pre-tokenizer (its tokenizer.json) is three isolated Splits in
#: turn, as the file spells them (CR and LF as characters): digits by threes, then runs of CJK ideographs
#: and kana, then this pattern on each stretch left between.
DEEPSEEK_V3_SPLITS = (
    r"\p{N}{1,3}",
    "[一-龥\u3040-ゟ゠-ヿ]+",
    (r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"""
     r"""| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""").replace(r"\r\n", "\r\n"),
)
_CJK = "一-龥\u3040-ゟ゠-ヿ"
#: ... which is this one pattern. The third Split runs on every piece the first
#: two make: a run of digits stays whole (no branch of it matches a digit), but
#: a run of CJK characters is cut as any text is (``゠`` is punctuation, ``ー``
#: a letter, ``\u3040`` unassigned). So the third's branches come twice, once
#: held to CJK characters and once to the rest, each with ``(?!\S)`` true where
#: its stretch ends, and a last branch for each for the runs they leave
#: unmatched (which a Split keeps as pieces). ``tests/test_huggingface_pipeline.py``
#: checks it against ``tokenizers`` running the three Splits.
_NOT = f"(?![{_CJK}])"     # the next character is not a CJK one ...
_IS = f"(?=[{_CJK}])"      # ... or is
DEEPSEEK_V3_PATTERN = "|".join([
    r"\p{N}{1,3}",
    # CJK characters: letters and marks (after a mark or an unassigned one), punctuation, the rest
    rf"(?:{_IS}[^\p{{L}}\p{{P}}\p{{S}}])?(?:{_IS}[\p{{L}}\p{{M}}])+",
    rf"(?:{_IS}[\p{{P}}\p{{S}}])+",
    rf"(?:{_IS}[^\p{{L}}\p{{M}}\p{{P}}\p{{S}}](?!{_IS}[\p{{L}}\p{{M}}]))+",
    # the rest
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+""",
    rf"[^\r\n\p{{L}}\p{{P}}\p{{S}}\p{{N}}{_CJK}]?(?:{_NOT}[\p{{L}}\p{{M}}])+",
    rf" ?(?:{_NOT}[\p{{P}}\p{{S}}])+[\r\n]*",
    r"\s*[\r\n]+",
    rf"\s+(?![^\s\p{{N}}{_CJK}])",
    r"\s+",
    rf"(?:[^\s\p{{L}}\p{{M}}\p{{P}}\p{{S}}\p{{N}}{_CJK}](?!{_NOT}[\p{{L}}\p{{M}}]))+",
])

#: SentencePiece's words (``bpe.sentencepiece``): a run of "▁" (U+2581, which
#: stands for a space there) and what follows it up to the next one, a tab or a
#: line feed, which stand alone.
METASPACE_PATTERN = "\u2581+[^\u2581\t\n]*|[^\u2581\t\n]+|[\t\n]"

#: The built-in patterns by name; tiktoken's encoding names are aliases.
PATTERNS = {"gpt2": GPT2_PATTERN, "cl100k": CL100K_PATTERN, "o200k": O200K_PATTERN,
            "llama3": LLAMA3_PATTERN, "qwen2": QWEN2_PATTERN, "deepseek_v3": DEEPSEEK_V3_PATTERN,
            "metaspace": METASPACE_PATTERN}
#: The patterns ``is_safe_cut``'s shapes hold for (metaspace cuts only before "▁").
SAFE_CUT_PATTERNS = ("gpt2", "cl100k", "o200k", "llama3", "qwen2", "deepseek_v3")
#: tiktoken's own spelling of GPT-2's pattern (possessive, for its regex engine's
#: speed): it matches exactly what GPT2_PATTERN matches, so it is the same built-in.
TIKTOKEN_GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
#: How bpe writes cl100k's pattern into tokenizer.json (Oniguruma reads "{1,3}+"
#: otherwise; see huggingface.tokenizer_json.write): the same matches, read back as cl100k.
HUGGINGFACE_CL100K_PATTERN = CL100K_PATTERN.replace(r"\p{N}{1,3}+", r"\p{N}{1,3}")
#: GPT-2's pattern as Hugging Face's ByteLevel pre-tokenizer and Whisper spell it:
#: the contractions as alternatives of their own, matching the same.
SPELLED_OUT_GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
_EQUIVALENT_SOURCES = {TIKTOKEN_GPT2_PATTERN: "gpt2", HUGGINGFACE_CL100K_PATTERN: "cl100k",
                       SPELLED_OUT_GPT2_PATTERN: "gpt2"}
_ALIASES = {"r50k_base": "gpt2", "cl100k_base": "cl100k", "o200k_base": "o200k"}
#: The standard library's ``re`` where it reads ASCII alone: the ``regex`` module
#: is imported only for custom patterns, table derivation and the like, so that
#: loading a built-in vocabulary and encoding ASCII text never pays its import
#: (7 ms, of a first encode timed against tiktoken's).
_LOOKS_LIKE_A_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
#: A custom pattern gets this long per call, plus SECONDS_PER_CHAR of its text,
#: before it is stopped: a pattern read from a file is code, and one like
#: ``(a|aa)+$`` backtracks exponentially.
PATTERN_TIMEOUT_SECONDS = 2.0
PATTERN_SECONDS_PER_CHAR = 1e-5


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
    if pattern in _EQUIVALENT_SOURCES:
        return _EQUIVALENT_SOURCES[pattern]
    if _LOOKS_LIKE_A_NAME.fullmatch(pattern):
        # A bare word is almost surely a misspelt name ("gpt5", "GPT2"), and as a
        # regex it would match nothing in most text. (?:word) says it is meant.
        raise ValueError(f"pattern {pattern!r} is not a built-in name: use one of "
                         f"{', '.join([*PATTERNS, *_ALIASES])}, or write a regex "
                         f"(a literal word as (?:{pattern}))")
    import regex

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
    """The compiled regex of a pattern (cached), or None for no pre-tokenization."""
    source = pattern_regex(pattern)
    return None if source is None else _compile(source)


@functools.lru_cache(maxsize=64)
def _compile(source: str):
    import regex

    return regex.compile(source)


def regex_pretokens(compiled, text: str, source: Optional[str] = None) -> list[str]:
    r"""The pre-tokens of a custom pattern: the text cut at both ends of every match.

    Text the pattern does not match is not dropped: each stretch of it is a
    pre-token of its own, and an empty match cuts where it matches, so
    ``decode(encode(text)) == text`` for every pattern. This is Hugging Face's
    ``Split`` with "isolated" behaviour, which bpe exports. The built-in
    patterns match all text, so for them this is ``regex.findall``. A pattern
    that runs too long (``PATTERN_TIMEOUT_SECONDS``) raises ValueError naming
    it and ``source`` (the file it came from), if given.

    >>> import regex
    >>> regex_pretokens(regex.compile(r"\w+"), "hello, world!")
    ['hello', ', ', 'world', '!']
    >>> regex_pretokens(regex.compile(r"b*"), "abba")
    ['a', 'bb', 'a']
    """
    pieces = []
    end = 0
    timeout = PATTERN_TIMEOUT_SECONDS + PATTERN_SECONDS_PER_CHAR * len(text)
    try:
        # Matched on the text as the reference engines see it: the same length,
        # so the spans cut the text itself.
        for match in compiled.finditer(as_reference(text), timeout=timeout):
            start, stop = match.span()
            if start > end:
                pieces.append(text[end:start])
            if stop > start:
                pieces.append(text[start:stop])
            end = max(end, stop)
    except TimeoutError:
        where = f" (the pattern of {source})" if source else ""
        raise ValueError(f"pattern {compiled.pattern!r} took more than {timeout:.1f} s on "
                         f"{len(text)} characters (catastrophic backtracking?){where}") from None
    if end < len(text):
        pieces.append(text[end:])
    return pieces


def pretokenize(text: str, pattern: Optional[str] = "gpt2") -> list[str]:
    """Split ``text`` into pre-tokens: for the built-in patterns exactly
    ``regex.findall(pattern, text)``; for custom ones ``regex_pretokens``.

    Built-in patterns use the native scanners (``bpe/_scanner.pyx``), custom ones
    ``regex``. ``pattern=None`` keeps the text whole (one pre-token, none if empty).

    >>> pretokenize("Hello world's  end")
    ['Hello', ' world', "'s", ' ', ' end']
    """
    native = native_pattern_id(pattern)
    if native is not None:
        data = text.encode("utf-8", "surrogatepass")
        offsets = split_offsets(data, native).tolist()
        return [data[a:b].decode("utf-8", "surrogatepass") for a, b in zip(offsets, offsets[1:])]
    compiled = compile_pattern(pattern)
    if compiled is None:
        return [text] if text else []
    return regex_pretokens(compiled, text)


def native_pattern_id(pattern: Optional[str]) -> Optional[int]:
    """The native scanner's id for a built-in pattern, else None."""
    pattern = canonical_pattern(pattern)
    return PATTERN_IDS.get(pattern)


# --------------------------------------------------------------------------- safe cuts

#: Positions where splitting text provably leaves the pre-tokens of gpt2, cl100k
#: and o200k unchanged, whatever follows (see ``is_safe_cut``).
SAFE_CUT_SOURCE = r"(?<=[!-~]\n)(?=[A-Za-z0-9])|(?<=[A-Za-z])(?= [A-Za-z])"


@functools.lru_cache(maxsize=None)
def _safe_cuts(kind: type, last: bool):
    """``SAFE_CUT_SOURCE`` compiled for str or bytes, searching backwards for ``last``."""
    import regex

    source = SAFE_CUT_SOURCE if issubclass(kind, str) else SAFE_CUT_SOURCE.encode()
    return regex.compile(source, regex.REVERSE if last else 0)


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
    if canonical_pattern(pattern) not in SAFE_CUT_PATTERNS:
        return False
    return _safe_cuts(type(text), False).match(text, position) is not None


def find_safe_cut(text, pattern: Optional[str], start: int = 0, last: bool = False) -> int:
    """The first (or ``last``) position ``>= start`` where ``is_safe_cut`` holds, or -1.

    A cut needs one character of context on its right, so the last position
    of ``text`` never qualifies.
    """
    if canonical_pattern(pattern) not in SAFE_CUT_PATTERNS:
        return -1
    match = _safe_cuts(type(text), last).search(text, start)
    return -1 if match is None else match.start()
