"""Steps 1 to 3 of a ``tokenizer.json`` as ``tokenizers`` runs them: added
tokens, the normalizer, the pre-tokenizer (see ``bpe.huggingface``)."""
from __future__ import annotations

import functools
import json
import os
import unicodedata
from typing import Callable, NamedTuple, Optional, Sequence

from bpe._encode import StrNeedles, holds_any
from bpe.onig import compile_onig, find_iter, split
from bpe.patterns import DEEPSEEK_V3_PATTERN, DEEPSEEK_V3_SPLITS, SPELLED_OUT_GPT2_PATTERN
from bpe.unicode import as_reference


#: Unicode White_Space: what Rust's ``char::is_whitespace`` (Strip, lstrip and
#: rstrip, WhitespaceSplit) takes. Python's ``str.isspace`` also takes U+001C-1F.
WHITE_SPACE = "".join(map(chr, [9, 10, 11, 12, 13, 32, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028,
                               0x2029, 0x202F, 0x205F, 0x3000]))
#: The ByteLevel pre-tokenizer's own pattern: GPT-2's.
BYTE_LEVEL_PATTERN = SPELLED_OUT_GPT2_PATTERN
NORMALIZATION_FORMS = ("NFC", "NFD", "NFKC", "NFKD")


@functools.lru_cache(maxsize=None)
def rust_unicode() -> dict:
    """What ``tokenizers``' Unicode tables say unlike Python's (``data/huggingface_unicode.json``,
    measured from ``tokenizers`` and checked again by the tests)."""
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "huggingface_unicode.json")
    with open(path, encoding="utf-8") as file:
        return json.load(file)


@functools.lru_cache(maxsize=None)
def _inert():
    """A regex of the code points that ``tokenizers``' normalization tables lack."""
    import regex

    points = rust_unicode()["normalization_inert_in_rust"]
    return regex.compile("[" + "".join(f"\\U{point:08X}" for point in points) + "]")


def _bitmap(points):
    """``holds_any``'s bitmap (a bit per code point) with ``points`` set: code
    points, or a bool per code point."""
    import numpy as np

    bits = np.zeros(0x110000, dtype=bool)
    bits[points] = True
    return np.packbits(bits, bitorder="little")


@functools.lru_cache(maxsize=None)
def _inert_bitmap():
    """A bit for each code point, set for those ``_inert`` finds."""
    return _bitmap(rust_unicode()["normalization_inert_in_rust"])


def _normalize_form(form: str, text: str) -> str:
    """``unicodedata.normalize(form, text)`` as ``tokenizers`` does it: the code
    points its (Unicode 9) tables lack stay as they are, and the text between
    them is normalized on its own."""
    if text.isascii():
        return text
    # Asked of every text: a scan in C (a regex search for those code points ran
    # at 17 MB/s, slower than encoding the text).
    if not holds_any(text, _inert_bitmap()):
        return text if unicodedata.is_normalized(form, text) else unicodedata.normalize(form, text)
    inert = _inert()
    out, at = [], 0
    for match in inert.finditer(text):
        out.append(unicodedata.normalize(form, text[at:match.start()]))
        out.append(match.group())
        at = match.end()
    out.append(unicodedata.normalize(form, text[at:]))
    return "".join(out)


@functools.lru_cache(maxsize=None)
def _unstable(forms: frozenset):
    """``holds_any``'s bitmap of the code points that may make a text change
    under one of ``forms`` (by Python's tables, which bpe normalizes with): a
    combining mark; a code point the form maps elsewhere; one that may compose
    with the code point before it (the second part of a canonical decomposition;
    Hangul vowel and trailing jamo). A text of other code points passes every
    form's quick check, and so does each stretch of it: it is unchanged. Made
    once, in about 0.2 s: asked of every text, it replaces a check of the
    stretches between added tokens that cost more than encoding them."""
    import numpy as np

    marked = np.zeros(0x110000, dtype=bool)
    combining, decomposition, normalize = unicodedata.combining, unicodedata.decomposition, unicodedata.normalize
    for point in range(0x110000):
        character = chr(point)
        if combining(character):
            marked[point] = True
            continue
        parts = decomposition(character).split()
        if not parts:
            continue
        if not parts[0].startswith("<"):
            marked[[int(part, 16) for part in parts[1:]]] = True
        marked[point] |= any(normalize(form, character) != character for form in forms)
    marked[0x1161:0x1176] = marked[0x11A8:0x11C3] = True           # compose with a syllable before
    if forms & {"NFD", "NFKD"}:
        marked[0xAC00:0xD7A4] = True                                # Hangul syllables decompose
    return _bitmap(marked)


class AddedToken(NamedTuple):
    content: str
    id: int
    special: bool
    normalized: bool
    lstrip: bool
    rstrip: bool
    single_word: bool


# --------------------------------------------------------------------------- normalizers

class Normalizer:
    """A normalizer as ``tokenizers`` applies it: ``normalizer(text)``. ``steps``
    is its JSON (a Sequence flattened), kept as plain data for pickling."""

    def __init__(self, steps: Sequence[dict]):
        self.steps = list(steps)

    @property
    def identity(self) -> bool:
        return not self.steps

    @functools.cached_property
    def forms(self) -> Optional[frozenset]:
        """The normalization forms the steps are, or None if they are more."""
        forms = frozenset(step["type"] for step in self.steps)
        return forms if forms <= set(NORMALIZATION_FORMS) else None

    def __call__(self, text: str) -> str:
        for step in self.steps:
            if not text:
                return text
            text = _NORMALIZERS[step["type"]](step, text)
        return text

    def unchanged(self, text: str) -> bool:
        """Whether ``self(text) == text``, found quickly where it can be: ASCII
        text is unchanged by every Unicode normalization form."""
        if self.forms is not None:
            return self.surely_unchanged(text) or all(_normalize_form(step["type"], text) is text
                                                      for step in self.steps)
        return self(text) == text

    def surely_unchanged(self, text: str) -> bool:
        """Whether ``text`` and every stretch of it are unchanged for a reason
        found in one quick pass: the steps are normalization forms and the text
        holds no code point that one of them may change (``_unstable``)."""
        if self.forms is None:
            return False
        return not self.forms or text.isascii() or not holds_any(text, _unstable(self.forms))


def _lowercase(step: dict, text: str) -> str:
    # Character by character, as Rust's char::to_lowercase (no final-sigma rule),
    # with its newer table for what Python's lacks.
    exceptions = _lowercase_exceptions()
    if text.isascii():
        return text.lower()
    return "".join(exceptions.get(c) or c.lower() for c in text)


@functools.lru_cache(maxsize=None)
def _lowercase_exceptions() -> dict[str, str]:
    return {chr(int(point)): lowered for point, lowered in rust_unicode()["lowercase_exceptions"].items()}


def replace(step: dict, text: str) -> str:
    pattern = step["pattern"]
    if "String" in pattern:
        # A string's matches, leftmost and never overlapping, are str.replace's
        # (the Python loop below took longer than encoding the text).
        return text.replace(pattern["String"], step["content"])
    compiled = _replace_pattern(json.dumps(step["pattern"], sort_keys=True))
    out, at = [], 0
    for start, end in find_iter(compiled, text):
        out.append(text[at:start])
        out.append(step["content"])
        at = end
    out.append(text[at:])
    return "".join(out)


@functools.lru_cache(maxsize=64)
def _replace_pattern(pattern_json: str):
    return compile_split_pattern(json.loads(pattern_json))


def compile_split_pattern(pattern: dict):
    import regex

    if "String" in pattern:
        return regex.compile(regex.escape(pattern["String"]))
    return compile_onig(pattern["Regex"])


def _strip(step: dict, text: str) -> str:
    # Rust's char::is_whitespace: not str.strip()'s idea of white space.
    if step.get("strip_left"):
        text = text.lstrip(WHITE_SPACE)
    if step.get("strip_right"):
        text = text.rstrip(WHITE_SPACE)
    return text


_NORMALIZERS: dict[str, Callable[[dict, str], str]] = {
    **{form: (lambda form: lambda step, text: _normalize_form(form, text))(form) for form in NORMALIZATION_FORMS},
    "Lowercase": _lowercase,
    "Replace": replace,
    "Prepend": lambda step, text: step["prepend"] + text,
    "Strip": lambda step, text: _strip(step, text),
}


# --------------------------------------------------------------------------- pre-tokenizers

class PreTokenizer:
    """A pre-tokenizer as ``tokenizers`` applies it to one stretch of text:
    ``pre_tokenizer(text)`` is its pieces. ``steps`` is its JSON (a Sequence
    flattened). Every step runs on every piece the steps before it made."""

    def __init__(self, steps: Sequence[dict]):
        self.steps = list(steps)

    @property
    def pattern(self) -> Optional[str]:
        """The one regex (Oniguruma's) whose isolated matches are the pieces, when
        the steps amount to that (DeepSeek V3's three Splits among them); "" for
        no split at all; None otherwise."""
        regexes = []
        for step in self.steps:
            kind = step["type"]
            if kind == "ByteLevel":
                if step.get("add_prefix_space", True):
                    return None
                if step.get("use_regex", True):
                    regexes.append(BYTE_LEVEL_PATTERN)
            elif kind == "Split" and step["behavior"] == "Isolated" and not step.get("invert"):
                source = step["pattern"]
                if "Regex" in source:
                    regexes.append(source["Regex"])
                else:
                    import regex

                    regexes.append(regex.escape(source["String"]))
            else:
                return None
        if tuple(regexes) == DEEPSEEK_V3_SPLITS:
            return DEEPSEEK_V3_PATTERN
        if len(regexes) > 1 or (regexes and _matches_empty(regexes[0])):
            return None
        return regexes[0] if regexes else ""

    def __call__(self, text: str, first: bool = True) -> list[str]:
        """``first``: whether ``text`` starts the text being encoded (where
        Metaspace's ``prepend_scheme: first`` prepends), as it is when Metaspace
        is the only step (the file's reader checks that)."""
        pieces = [text]
        for step in self.steps:
            if step["type"] == "Metaspace":
                pieces = [piece for text in pieces for piece in _metaspace(step, text, first)]
            else:
                pieces = [piece for text in pieces for piece in _PRE_TOKENIZERS[step["type"]](step, text)]
        return pieces


#: Texts on which a pattern that can match the empty string most likely does.
_EMPTY_PROBES = ("", "a", " ", "\n", "1", "ab", "a b", "a\n b", ".", "\u00e9", "日本", "a1 b.\n")


@functools.lru_cache(maxsize=64)
def _matches_empty(source: str) -> bool:
    """Whether a pattern matches the empty string somewhere: Oniguruma walks such
    matches by a rule of its own (``bpe.onig.find_iter``), so such a pattern
    takes the exact path, not the kernel's."""
    try:
        compiled = compile_onig(source)
    except ValueError:
        return True
    return any(match.start() == match.end() for probe in _EMPTY_PROBES for match in compiled.finditer(probe))


def _byte_level(step: dict, text: str) -> list[str]:
    if step.get("add_prefix_space", True) and not text.startswith(" "):
        text = " " + text
    if not step.get("use_regex", True):
        return [text]
    return split(compile_onig(BYTE_LEVEL_PATTERN), text, "Isolated")


def _metaspace(step: dict, text: str, first: bool) -> list[str]:
    """Spaces become the replacement (``▁``), which goes in front where the
    prepend scheme says and the text does not start with it; with ``split``,
    each replacement starts a piece."""
    replacement = step["replacement"]
    text = text.replace(" ", replacement)
    scheme = metaspace_scheme(step)
    if (scheme == "always" or (scheme == "first" and first)) and not text.startswith(replacement):
        text = replacement + text
    if not step.get("split", True):
        return [text]
    pieces = text.split(replacement)
    return ([pieces[0]] if pieces[0] else []) + [replacement + piece for piece in pieces[1:]]


def metaspace_scheme(step: dict) -> str:
    """A Metaspace step's prepend scheme; ``add_prefix_space: false`` is "never",
    as ``tokenizers`` reads older files."""
    if step.get("add_prefix_space") is False:
        return "never"
    return step.get("prepend_scheme", "always")


def _split(step: dict, text: str) -> list[str]:
    return split(_replace_pattern(json.dumps(step["pattern"], sort_keys=True)), text, step["behavior"],
                 bool(step.get("invert")))


@functools.lru_cache(maxsize=None)
def _class_pattern(name: str):
    import regex

    sources = {
        # Rust's char::is_numeric: N at Unicode 17 (Python 3.11's table lacks some).
        "numeric": r"[\p{N}" + "".join(f"\\U{p:08X}" for p in rust_unicode()["rust_is_numeric_extra_vs_python_N"])
                   + "]",
        # Rust's regex crate's \w+|[^\w\s]+ (\w: Unicode Word, the regex module's).
        "words": r"\w+|[^\w\s]+",
        "white": "[" + "".join(f"\\U{ord(c):08X}" for c in WHITE_SPACE) + "]",
    }
    return regex.compile(sources[name])


def _digits(step: dict, text: str) -> list[str]:
    return split(_class_pattern("numeric"), text, "Isolated" if step.get("individual_digits") else "Contiguous")


def _punctuation(step: dict, text: str) -> list[str]:
    return split(_punctuation_pattern(), text, step.get("behavior", "Isolated"))


@functools.lru_cache(maxsize=None)
def _punctuation_pattern():
    # Rust's char::is_ascii_punctuation or unicode_categories' is_punctuation (its
    # tables are older than Python's: measured, data/huggingface_unicode.json).
    import regex

    table = rust_unicode()
    extra = "".join(f"\\U{p:08X}" for p in table["punctuation_extra_vs_python_P_or_ascii_punct"])
    missing = {chr(p) for p in table["punctuation_missing_vs_python_P_or_ascii_punct"]}
    exclude = "".join(f"\\U{ord(c):08X}" for c in sorted(missing))
    source = r"[!-/:-@\[-`{-~" + extra + r"\p{P}]"
    if exclude:
        source = f"(?![{exclude}]){source}"
    return regex.compile(source)


_PRE_TOKENIZERS: dict[str, Callable[[dict, str], list[str]]] = {
    "ByteLevel": _byte_level,
    "Split": _split,
    "Digits": _digits,
    "Punctuation": _punctuation,
    "Whitespace": lambda step, text: split(_class_pattern("words"), text, "Removed", True),
    "WhitespaceSplit": lambda step, text: split(_class_pattern("white"), text, "Removed"),
}


# --------------------------------------------------------------------------- the pipeline

class Pipeline:
    """Steps 1 to 3 and 5 of a file (see the module's docstring), as plain data.

    ``added`` are the added tokens; ``prefix`` and ``suffix`` the ids the
    post-processor puts around a text's when asked."""

    def __init__(self, added: Sequence[AddedToken], normalizer: Normalizer, pre_tokenizer: PreTokenizer,
                 prefix: Sequence[int] = (), suffix: Sequence[int] = (), skipped: Sequence[int] = ()):
        self.added = list(added)
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        self.prefix = list(prefix)
        self.suffix = list(suffix)
        #: The ids ``decode(..., skip_special_tokens=True)`` drops: those whose text
        #: is a special added token's (tokenizers compares the text, not the id).
        self.skipped = frozenset(skipped)
        self._tries: dict = {}
        self._settle()

    def _settle(self) -> None:
        """What every call asks, worked out once."""
        #: id of a table of ``_tries`` -> its forms, prepared to look for (``_find``).
        self._probes: dict = {}
        #: allowed -> ``(needles, table)`` of each of its tables that is not empty (``finds_none``).
        self._searches: dict = {}
        #: The kernel alone can encode a text the normalizer leaves unchanged.
        self.simple = self._simple()
        #: Where ``simple`` is false only for added tokens of both kinds (``normalized``
        #: or not; DeepSeek V3's) with no normalizer: the normalized ones. In a text
        #: where none of these occurs tokenizers' second pass finds nothing, so the
        #: kernel's one pass gives its cuts (``lacks_second_kind``).
        self.second_kind = tuple(token.content for token in self.added if token.normalized) if (
            not self.simple and self.normalizer.identity and self.pre_tokenizer.pattern is not None
            and not any(token.lstrip or token.rstrip or token.single_word for token in self.added)) else None
        #: The same, prepared to look for.
        self._second_kind_needles = None if self.second_kind is None else StrNeedles(self.second_kind)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_tries"] = {}
        del state["_probes"]
        del state["_searches"]
        del state["_second_kind_needles"]            # made again by _settle
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._settle()

    def identity(self):
        """What decides ids, as plain data (for the fingerprint)."""
        return [[list(token) for token in self.added], self.normalizer.steps, self.pre_tokenizer.steps,
                self.prefix, self.suffix]

    @property
    def plain_added(self) -> bool:
        """Whether added tokens are found as bpe finds special tokens: in one pass
        (all ``normalized`` alike, and the normalizer changes nothing then),
        with no stripping and no word rule."""
        if any(token.lstrip or token.rstrip or token.single_word for token in self.added):
            return False
        return len({token.normalized for token in self.added}) <= 1 and (
            self.normalizer.identity or not any(token.normalized for token in self.added))

    def _simple(self) -> bool:
        """Whether the kernel alone can encode a text the normalizer leaves
        unchanged: plain added tokens and a pre-tokenizer that is one pattern."""
        return self.plain_added and self.pre_tokenizer.pattern is not None

    def unchanged(self, text: str, spans) -> bool:
        """Whether normalizing leaves each stretch of ``text`` between the added
        tokens found (``spans``: ``(start, end, index)``) as it is."""
        if self.normalizer.identity:
            return True
        at = 0
        for start, end, _ in spans:
            if not self.normalizer.unchanged(text[at:start]):
                return False
            at = end
        return self.normalizer.unchanged(text[at:])

    def lacks_second_kind(self, text: str, allowed) -> bool:
        """Whether no allowed token of ``second_kind`` occurs in ``text`` (which
        the kernel may then encode): one pass in C for them all, and only where
        one occurs a look at which (and whether it is allowed)."""
        if not self._second_kind_needles.found_in(text):
            return True
        return not any(form in text and form in allowed for form in self.second_kind)

    # ------------------------------------------------------------ added tokens

    def finds_none(self, text: str, allowed: frozenset) -> bool:
        """Whether no allowed added token, of either kind, is found in ``text`` as
        it is: where none occurs, one pass in C (asked of every text encoded,
        it was most of a call on a short one); else as ``_find`` finds them."""
        searches = self._searches.get(allowed)
        if searches is None:
            searches = self._searches[allowed] = [
                (self._needles(table), table) for table in (self._trie(allowed, False), self._trie(allowed, True))
                if table]
        for needles, table in searches:
            if needles.found_in(text) and self._find(text, table) != [(None, 0, len(text))]:
                return False
        return True

    def _needles(self, table: dict[str, int]) -> StrNeedles:
        """The forms of a table of ``_tries``, prepared to look for."""
        needles = self._probes.get(id(table))
        if needles is None:
            needles = self._probes[id(table)] = StrNeedles(table)
        return needles

    def _trie(self, allowed: frozenset, normalized: bool) -> dict[str, int]:
        """``{form: index into added}`` of the allowed tokens with that ``normalized``
        flag: their content, or for normalized ones their normalized content."""
        key = (allowed, normalized)
        found = self._tries.get(key)
        if found is None:
            found = {}
            for index, token in enumerate(self.added):
                if token.normalized == normalized and token.content in allowed:
                    form = self.normalizer(token.content) if normalized else token.content
                    found[form] = index
            self._tries[key] = found
        return found

    def _find(self, text: str, table: dict[str, int]) -> list[tuple[Optional[int], int, int]]:
        """``(index or None, start, end)`` of ``text`` cut by the added tokens of
        ``table``: tokenizers' ``find_matches`` (leftmost-longest, never looking
        inside a match again; single_word drops a match, lstrip and rstrip widen it)."""
        if not table:
            return [(None, 0, len(text))]
        spans = self._needles(table).spans(text)
        if not spans:
            # One pass in C finds that none occurs: most texts. (A search per
            # token, 771 of them in Mistral v0.3's files, cost more than encoding.)
            return [(None, 0, len(text))]
        forms = tuple(table)
        cuts, at = [], 0
        for start, stop, which in spans:
            token = self.added[table[forms[which]]]
            if token.single_word and ((start > 0 and _is_word(text[start - 1]))
                                      or (stop < len(text) and _is_word(text[stop]))):
                continue
            if token.lstrip:
                widened = start
                while widened > at and text[widened - 1] in WHITE_SPACE:
                    widened -= 1
                start = widened
            if token.rstrip:
                while stop < len(text) and text[stop] in WHITE_SPACE:
                    stop += 1
            if at < start:
                cuts.append((None, at, start))
            cuts.append((table[forms[which]], start, stop))
            at = stop
        if at < len(text):
            cuts.append((None, at, len(text)))
        return cuts

    def pieces(self, text: str, allowed: frozenset) -> list[tuple[Optional[int], list[str]]]:
        """Steps 1 to 3: ``(added token id, [])`` for each added token, and
        ``(None, pre-tokens)`` for each stretch between, in order."""
        out: list[tuple[Optional[int], list[str]]] = []
        raw, normalized = self._trie(allowed, False), self._trie(allowed, True)
        for index, start, end in self._find(text, raw):
            if index is not None:
                out.append((self.added[index].id, []))
                continue
            stretch = self.normalizer(text[start:end])
            if not stretch:
                continue
            for index2, start2, end2 in self._find(stretch, normalized):
                if index2 is not None:
                    out.append((self.added[index2].id, []))
                else:
                    out.append((None, self.pre_tokenizer(stretch[start2:end2], first=start == start2 == 0)))
        return out


@functools.lru_cache(maxsize=None)
def _word():
    import regex

    return regex.compile(r"\w")


def _is_word(character: str) -> bool:
    """Rust's regex crate's ``\\w`` (Unicode Word, as the ``regex`` module's)."""
    return _word().match(as_reference(character)) is not None
