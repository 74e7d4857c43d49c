"""Oniguruma's patterns, as Hugging Face ``tokenizers`` runs them, in the ``regex`` module.

``tokenizers`` compiles a ``Split`` pre-tokenizer's (and a ``Replace``
normalizer's) pattern with Oniguruma in its Ruby-like default syntax. Most of
a pattern means the same in ``regex``; where it does not, ``translate``
rewrites it exactly or refuses it, naming the construct (``ValueError``):

* ``^`` and ``$`` are line anchors there; ``\\Z`` also matches before a final
  newline; ``(?m)`` is dot-all (Ruby's spelling); ``\\h`` is a hex digit.
* ``\\w`` is letters, marks, numbers (``½`` and ``²`` too) and connector
  punctuation, and ``\\b`` is the boundary of that class.
* ``X{n,m}+`` repeats the interval (``regex`` reads it as possessive), and
  ``(?i)`` folds ``ss`` to ``ß``: both are refused, but for the
  case-insensitive ASCII contractions every real file uses.
* Classes (``\\p{L}``, ``\\s``...) are Oniguruma's Unicode 16: text is
  matched as ``bpe.unicode.as_reference`` gives it, whatever Unicode the
  installed ``regex`` carries.

And ``find_iter`` walks matches by Oniguruma's rule for empty ones: an empty
match where the last match ended is skipped (``regex`` keeps one after a
non-empty match). ``split`` is a ``Split`` pre-tokenizer's cut, for each of
its behaviours.
"""
from __future__ import annotations

import functools
from typing import Iterator

from bpe.unicode import as_reference

#: Oniguruma's ``\w``: letters, marks, numbers (all of N) and connector punctuation.
WORD = r"\p{L}\p{M}\p{N}\p{Pc}"
#: Escapes that mean the same in both engines (the letter after the backslash).
_SAME_ESCAPES = set("sSdDtnrfvae0\\-[](){}|.^$*+?/'\"#&~ !,:;<=>@%`_")
_REFUSED_ESCAPES = {"c": "a control escape", "N": "\\N", "O": "\\O", "R": "\\R (any line break)",
                    "X": "\\X (an extended grapheme)", "K": "\\K", "G": "\\G", "y": "\\y", "Y": "\\Y",
                    "k": "a named back-reference", "g": "a subexpression call", "A": None, "z": None}
#: Pairs of letters that Oniguruma's case folding maps to one character (ß, ﬆ, ﬀ, ﬁ, ﬂ...).
_MULTI_FOLDS = ("ss", "st", "ff", "fi", "fl")


def translate(pattern: str) -> str:
    """``pattern`` (Oniguruma) as a ``regex`` pattern that matches exactly the same,
    or ValueError naming the construct that has no exact translation."""
    out = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                raise ValueError("the pattern ends in a lone backslash")
            escape, i = _escape(pattern, i, in_class)
            out.append(escape)
            continue
        if in_class:
            if c == "[":
                raise ValueError(f"a nested class or POSIX bracket at {i} (Ruby's class syntax differs)")
            if c == "&" and pattern[i + 1:i + 2] == "&":
                raise ValueError(f"a class intersection (&&) at {i}")
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            if pattern[i:i + 1] == "^":
                out.append("^")
                i += 1
            if pattern[i:i + 1] == "]":           # a literal ] first in a class
                out.append("\\]")
                i += 1
            continue
        if c == "{":
            close = pattern.find("}", i)
            if close > 0 and _is_interval(pattern[i + 1:close]) and pattern[close + 1:close + 2] == "+":
                raise ValueError(f"{pattern[i:close + 2]!r} at {i}: Oniguruma repeats the interval, regex "
                                 "reads it as possessive")
            out.append(c)
            i += 1
            continue
        if c == "^":
            out.append(r"(?:\A|(?<=\n)(?!\Z))")      # a line start, but not after a final newline
        elif c == "$":
            out.append(r"(?=\n|\Z)")                  # a line end
        elif c == "(" and pattern[i + 1:i + 2] == "?":
            group, i = _group(pattern, i)
            out.append(group)
            continue
        else:
            out.append(c)
        i += 1
    if in_class:
        raise ValueError("a class is not closed")
    return "".join(out)


def _is_interval(body: str) -> bool:
    lower, _, upper = body.partition(",")
    return (lower.isdigit() or lower == "") and (upper.isdigit() or upper == "") and (lower or upper) != ""


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    """The translation of the escape at ``i`` and where the pattern goes on."""
    letter = pattern[i + 1]
    if letter in "pP":
        if pattern[i + 2:i + 3] != "{":
            raise ValueError(f"\\{letter}{pattern[i + 2:i + 3]} at {i}: Oniguruma reads no property "
                             "without braces")
        close = pattern.find("}", i)
        if close < 0:
            raise ValueError(f"\\{letter}{{ at {i} is not closed")
        return pattern[i:close + 1], close + 1
    if letter in "wW":
        if in_class:
            if letter == "W":
                raise ValueError(f"\\W inside a class at {i}")
            return WORD, i + 2
        return (f"[{WORD}]" if letter == "w" else f"[^{WORD}]"), i + 2
    if letter in "bB":
        if in_class:
            raise ValueError(f"\\{letter} inside a class at {i}")
        word = f"[{WORD}]"
        boundary = f"(?:(?<={word})(?!{word})|(?<!{word})(?={word}))"
        return (boundary if letter == "b" else f"(?:(?<={word})(?={word})|(?<!{word})(?!{word}))"), i + 2
    if letter in "hH":
        hex_digit = "0-9a-fA-F"
        if in_class:
            if letter == "H":
                raise ValueError(f"\\H inside a class at {i}")
            return hex_digit, i + 2
        return (f"[{hex_digit}]" if letter == "h" else f"[^{hex_digit}]"), i + 2
    if letter == "Z":
        return r"(?=\n?\Z)", i + 2
    if letter in "Az":
        return pattern[i:i + 2], i + 2
    if letter == "x":
        if pattern[i + 2:i + 3] == "{":
            close = pattern.find("}", i)
            try:
                code = int(pattern[i + 3:close], 16)
            except ValueError:
                raise ValueError(f"{pattern[i:close + 1]!r} at {i} is not a code point") from None
            return f"\\U{code:08X}", close + 1
        return pattern[i:i + 4], i + 4
    if letter == "u":
        return pattern[i:i + 6], i + 6
    if letter.isdigit() and letter != "0":
        raise ValueError(f"\\{letter} at {i}: a back-reference (Oniguruma) or an octal escape")
    if letter in _REFUSED_ESCAPES:
        raise ValueError(f"{_REFUSED_ESCAPES[letter]} at {i} has no exact translation")
    if letter in _SAME_ESCAPES or not letter.isalnum():
        return pattern[i:i + 2], i + 2
    raise ValueError(f"the escape \\{letter} at {i} has no exact translation")


def _group(pattern: str, i: int) -> tuple[str, int]:
    """A group opening ``(?`` at ``i``: its translation and where the pattern goes on."""
    rest = pattern[i + 2:]
    if rest[:1] in (":", "=", "!", ">") or rest[:2] in ("<=", "<!"):
        return "(?", i + 2
    flags_end = 0
    while flags_end < len(rest) and (rest[flags_end].isalpha() or rest[flags_end] == "-"):
        flags_end += 1
    flags, after = rest[:flags_end], rest[flags_end:flags_end + 1]
    if not flags or after not in (":", ")"):
        raise ValueError(f"the group {pattern[i:i + 2 + flags_end + 1]!r} at {i} has no exact translation")
    if set(flags) - set("imx-"):
        raise ValueError(f"the flags {flags!r} at {i} have no exact translation")
    if "i" in flags:
        if after == ")":
            raise ValueError(f"(?{flags}) at {i}: an unscoped case-insensitive flag")
        body, end = _group_body(pattern, i + 2 + flags_end + 1)
        if not _folds_alike(body):
            raise ValueError(f"(?{flags}:{body}) at {i}: Oniguruma folds case by other rules than regex "
                             "(ß is ss there) for anything but ASCII letters without i")
    translated = flags.replace("m", "s")       # Ruby's multiline is dot-all
    return f"(?{translated}{after}", i + 2 + flags_end + 1


def _group_body(pattern: str, start: int) -> tuple[str, int]:
    """The text of the group whose body starts at ``start``, up to its closing parenthesis."""
    depth, j = 1, start
    while j < len(pattern):
        if pattern[j] == "\\":
            j += 2
            continue
        if pattern[j] == "(":
            depth += 1
        elif pattern[j] == ")":
            depth -= 1
            if depth == 0:
                return pattern[start:j], j
        j += 1
    raise ValueError(f"the group at {start} is not closed")


def _folds_alike(body: str) -> bool:
    """Whether a case-insensitive group matches the same in both engines: an
    alternation of ASCII literals and classes (apostrophes and letters)
    without ``i`` and without two letters that fold to one character."""
    lowered = body.lower()
    if any(c not in "'|[]abcdefghjklmnopqrstuvwxyz" for c in lowered):
        return False
    letters = lowered.replace("[", "").replace("]", "")      # a class's letters may follow each other
    return not any(pair in letters for pair in _MULTI_FOLDS)


@functools.lru_cache(maxsize=64)
def compile_onig(pattern: str):
    """The compiled ``regex`` of an Oniguruma pattern (``translate``)."""
    import regex

    return regex.compile(translate(pattern))


def find_iter(compiled, text: str) -> Iterator[tuple[int, int]]:
    """The spans of ``compiled``'s matches in ``text`` in Oniguruma's order: each
    search starts where the last match ended, and an empty match there is
    skipped (the search goes on a character later). Where no match is empty
    that is ``finditer``'s order, which runs in C; from the first empty match
    on, the searches are made one by one."""
    text = as_reference(text)           # the same length: the spans are the text's
    last_end = -1
    for match in compiled.finditer(text):
        start, end = match.span()
        if start == end:
            break
        last_end = end
        yield start, end
    else:
        return
    position = start
    while position <= len(text):
        match = compiled.search(text, position)
        if match is None:
            return
        start, end = match.span()
        if start == end and end == last_end:
            position += 1
            continue
        position = last_end = end
        yield start, end


def segments(compiled, text: str) -> list[tuple[int, int, bool]]:
    """``(start, end, is_match)`` of ``text`` cut by ``compiled``'s matches (empty
    matches cut too), in order: Hugging Face's ``find_matches``."""
    if not text:
        return [(0, 0, False)]
    found = []
    at = 0
    for start, end in find_iter(compiled, text):
        if start > at:
            found.append((at, start, False))
        found.append((start, end, True))
        at = end
    if at < len(text):
        found.append((at, len(text), False))
    return found


BEHAVIORS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")


def split(compiled, text: str, behavior: str, invert: bool = False) -> list[str]:
    """``text`` cut as a ``Split`` pre-tokenizer with ``behavior`` cuts it (empty
    pieces dropped)."""
    pieces = [(start, end, is_match != invert) for start, end, is_match in segments(compiled, text)]
    if behavior == "Removed":
        kept = [(start, end) for start, end, is_match in pieces if not is_match]
    elif behavior == "Isolated":
        kept = [(start, end) for start, end, _ in pieces]
    elif behavior == "Contiguous":
        kept, previous = [], None
        for start, end, is_match in pieces:
            if kept and is_match == previous:
                kept[-1] = (kept[-1][0], end)
            else:
                kept.append((start, end))
            previous = is_match
    elif behavior == "MergedWithPrevious":
        kept, previous = [], False
        for start, end, is_match in pieces:
            if is_match and not previous and kept:
                kept[-1] = (kept[-1][0], end)
            else:
                kept.append((start, end))
            previous = is_match
    elif behavior == "MergedWithNext":
        kept, previous = [], False
        for start, end, is_match in reversed(pieces):
            if is_match and not previous and kept:
                kept[-1] = (start, kept[-1][1])
            else:
                kept.append((start, end))
            previous = is_match
        kept.reverse()
    else:
        raise ValueError(f"behavior {behavior!r} is not one of {', '.join(BEHAVIORS)}")
    return [text[start:end] for start, end in kept if end > start]
