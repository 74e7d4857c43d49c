"""Hugging Face ``tokenizer.json`` files of byte-level BPE models, read and run as
``tokenizers`` runs them; and written.

``tokenizers`` encodes a text in five steps, and so does bpe for these files:

1. **Added tokens**, in two passes: those with ``normalized: false`` are found
   in the raw text, then those with ``normalized: true`` in each normalized
   stretch between them. Each pass takes the leftmost match, the longest at a
   position, and never looks inside a match again. ``single_word`` drops a
   match with a word character beside it; ``lstrip``/``rstrip`` let it absorb
   the white space beside it. Special or not, every added token is split out.
2. **The normalizer** (NFC, NFKC, NFD, NFKD, Lowercase, Replace, Prepend,
   Strip, Sequence) of each stretch between added tokens.
3. **The pre-tokenizer** (Split with any behaviour, ByteLevel, Digits,
   Punctuation, Whitespace, WhitespaceSplit, Sequence) of each stretch.
4. **The model**: byte-level BPE by Hugging Face's rule (``bpe.vocabulary``),
   in bpe's kernel.
5. **The post-processor**, only when asked (``add_special_tokens``):
   TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel (adds
   nothing), Sequence.

Where a file's steps are one pattern and plain added tokens (no normalizer,
or text it leaves unchanged), the kernel does steps 1 to 4 alone; otherwise
Python runs steps 1 to 3 and hands the kernel the pre-tokens
(``Pipeline.simple``). What ``tokenizers`` does that bpe does not reproduce
is refused when the file is read, naming the field and why.

Unicode tables are measured (docs/formats.md, "What is not exact"):
``tokenizers`` normalizes with Unicode 9 tables (bpe leaves the code points
those tables lack as they are, as ``tokenizers`` does), lowercases with
Unicode 17, and matches patterns with Oniguruma's Unicode 16 classes, as bpe
does (``bpe.unicode``).
"""
from __future__ import annotations

import functools
import json
import os
import unicodedata
from typing import Callable, NamedTuple, Optional, Sequence

from bpe._encode import holds_any, holds_any_of
from bpe.errors import TokenizerFileError
from bpe.files import atomic_write_text
from bpe.flat import RankTable
from bpe.formats.common import HF_FILE_NAME, read_bytes
from bpe.formats.gpt2 import from_gpt2_text, gpt2_byte_encoder, to_gpt2_text
from bpe.onig import compile_onig, find_iter, split
from bpe.patterns import (DEEPSEEK_V3_PATTERN, DEEPSEEK_V3_SPLITS, SPELLED_OUT_GPT2_PATTERN, canonical_pattern,
                          pattern_regex)
from bpe.unicode import as_reference
from bpe.vocabulary import MAX_ID

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
    path = os.path.join(os.path.dirname(__file__), "data", "huggingface_unicode.json")
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


def _replace(step: dict, text: str) -> str:
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
    return _compile_pattern(json.loads(pattern_json))


def _compile_pattern(pattern: dict):
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
    "Replace": _replace,
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

    def __call__(self, text: str) -> list[str]:
        pieces = [text]
        for step in self.steps:
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
        #: The kernel alone can encode a text the normalizer leaves unchanged.
        self.simple = self._simple()
        #: Where ``simple`` is false only for added tokens of both kinds (``normalized``
        #: or not; DeepSeek V3's) with no normalizer: the normalized ones. In a text
        #: where none of these occurs tokenizers' second pass finds nothing, so the
        #: kernel's one pass gives its cuts (``lacks_second_kind``).
        self.second_kind = tuple(token.content for token in self.added if token.normalized) if (
            not self.simple and self.normalizer.identity and self.pre_tokenizer.pattern is not None
            and not any(token.lstrip or token.rstrip or token.single_word for token in self.added)) else None
        #: Their first characters (``holds_any_of``'s bitmap).
        self._second_kind_first_points = None if self.second_kind is None else _bitmap(
            [ord(form[0]) for form in self.second_kind])

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_tries"] = {}
        del state["_second_kind_first_points"]       # made again by _settle
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
        if not holds_any_of(text, self._second_kind_first_points, self.second_kind):
            return True
        return not any(form in text and form in allowed for form in self.second_kind)

    # ------------------------------------------------------------ added tokens

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
        from bpe.specials import special_spans

        forms = list(table)
        cuts, at = [], 0
        for start, stop, which in special_spans(text, forms):
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
                    out.append((None, self.pre_tokenizer(stretch[start2:end2])))
        return out


@functools.lru_cache(maxsize=None)
def _word():
    import regex

    return regex.compile(r"\w")


def _is_word(character: str) -> bool:
    """Rust's regex crate's ``\\w`` (Unicode Word, as the ``regex`` module's)."""
    return _word().match(as_reference(character)) is not None


# --------------------------------------------------------------------------- reading

class HuggingFaceFile(NamedTuple):
    """What a ``tokenizer.json`` holds, checked: the model's byte-level tokens by
    id, the added tokens as special tokens (content -> id), the merges (byte
    pairs, in rank order; a pair listed again takes its last rank), whether a
    whole pre-token maps to its token (``ignore_merges``), the pattern when the
    pre-tokenizer is one, and the pipeline."""

    table: RankTable
    special_tokens: dict[str, int]
    merges: list[tuple[bytes, bytes]]
    ignore_merges: bool
    pattern: Optional[str]
    pipeline: Pipeline
    decode_as: dict[int, bytes]


def huggingface_path(path) -> str:
    """The ``tokenizer.json`` that ``path`` names: itself, or the one inside a directory."""
    path = os.fspath(path)
    return os.path.join(path, HF_FILE_NAME) if os.path.isdir(path) else path


class _Refusal:
    def __init__(self, path: str):
        self.path = path

    def __call__(self, field: str, why: str) -> TokenizerFileError:
        return TokenizerFileError(f"{self.path}: {field}: {why}")


def _expect(value, kind, field: str, refuse: _Refusal, what: str):
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise refuse(field, f"is {value!r:.60}, not {what}")
    return value


def read(path) -> HuggingFaceFile:
    """Read a ``tokenizer.json`` of a byte-level BPE model exactly, or refuse it with
    TokenizerFileError naming the field and why."""
    path = huggingface_path(path)
    try:
        document = json.loads(read_bytes(path).decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise TokenizerFileError(f"{path}: not a JSON tokenizer: {type(e).__name__}: {e}"[:300]) from None
    refuse = _Refusal(path)
    if not isinstance(document, dict) or not isinstance(document.get("model"), dict):
        raise refuse("model", "missing; not a Hugging Face tokenizer.json")
    for field in ("truncation", "padding"):
        if document.get(field) is not None:
            raise refuse(field, f"is set ({document[field]!r:.60}); bpe encodes whole texts, unpadded: "
                                "set it to null")
    model = document["model"]
    vocab, ids_by_text = _read_vocab(model, refuse)
    added = _read_added_tokens(document.get("added_tokens"), ids_by_text, refuse)
    added_texts = {token.content for token in added}
    normalizer = Normalizer(_flatten(document.get("normalizer"), "normalizer", "normalizers", _check_normalizer,
                                     refuse))
    pre_tokenizer = PreTokenizer(_flatten(document.get("pre_tokenizer"), "pre_tokenizer", "pretokenizers",
                                          _check_pre_tokenizer, refuse))
    kinds = [step["type"] for step in pre_tokenizer.steps]
    if "ByteLevel" not in kinds:
        raise refuse("pre_tokenizer", "has no ByteLevel step: not a byte-level BPE tokenizer")
    after = kinds[kinds.index("ByteLevel") + 1:]
    if after:
        raise refuse("pre_tokenizer", f"has {after[0]!r} after ByteLevel: tokenizers splits the byte-level text "
                                      "there (a space is 'Ġ'), which bpe does not reproduce")
    _check_added_forms(added, normalizer, refuse)
    prefix, suffix = _read_post_processor(document.get("post_processor"), refuse)
    _check_decoder(document.get("decoder"), refuse)

    # The model's tokens as bytes: each is GPT-2's printable form of its bytes,
    # but for an added token's own entry (its content, not byte-level text).
    ordinary = {}
    for text, token_id in vocab.items():
        try:
            ordinary[token_id] = from_gpt2_text(text, lambda: f"{path}: model.vocab[{text!r}]")
        except TokenizerFileError:
            if text not in added_texts:
                raise
    merges = _read_merges(model, vocab, refuse)
    special_tokens = {token.content: token.id for token in added}
    for token in added:
        if ordinary.get(token.id) is not None and vocab.get(token.content) != token.id:
            raise refuse("added_tokens", f"{token.content!r} has id {token.id}, which the model gives "
                                         f"to {ordinary[token.id]!r}")
    for token in added:
        # An added token that is also a model token is split out first, never merged.
        if vocab.get(token.content) == token.id:
            ordinary.pop(token.id, None)
    decode_as = {}
    for token in added:
        # Decoding gives an added token's text (normalized, if it is matched so),
        # through the ByteLevel decoder: a token all of whose characters are GPT-2's
        # byte characters decodes to those bytes; any other, to its own UTF-8.
        text = normalizer(token.content) if token.normalized else token.content
        try:
            decode_as[token.id] = from_gpt2_text(text, lambda: "")
        except TokenizerFileError:
            if text != token.content:
                decode_as[token.id] = text.encode("utf-8")
    pattern = pre_tokenizer.pattern
    if pattern is not None:
        pattern = _native_or_translated(pattern, refuse)
    special_texts = {token.content for token in added if token.special}
    skipped = {token.id for token in added
               if (normalizer(token.content) if token.normalized else token.content) in special_texts}
    skipped |= {token_id for text, token_id in vocab.items() if text in special_texts}
    pipeline = Pipeline(added, normalizer, pre_tokenizer, prefix, suffix, sorted(skipped))
    return HuggingFaceFile(RankTable.from_vocab(ordinary), special_tokens, merges,
                           bool(model.get("ignore_merges", False)), pattern or None, pipeline, decode_as)


def _native_or_translated(pattern: str, refuse: _Refusal) -> Optional[str]:
    """A Split's (or ByteLevel's) pattern as bpe's: the name of a built-in one it
    matches exactly, else its translation (``bpe.onig``)."""
    if pattern == "":
        return None
    from bpe.onig import translate

    try:
        translated = translate(pattern)
    except ValueError as e:
        raise refuse("pre_tokenizer", f"the pattern {pattern!r:.80}: {e}") from None
    if translated in _built_in_translations():
        return _built_in_translations()[translated]
    if translated.isidentifier():
        translated = f"(?:{translated})"      # a literal word, not a misspelt name of bpe's
    try:
        return canonical_pattern(translated)
    except ValueError as e:
        raise refuse("pre_tokenizer", f"the pattern {pattern!r:.80}: {e}") from None


@functools.lru_cache(maxsize=None)
def _built_in_translations() -> dict[str, str]:
    """The built-in patterns as files spell them (bpe's exports among them), by
    their translation: a file whose pattern is one of these runs on the native
    scanner. cl100k's ``\\s++$`` is a line end in Oniguruma, but a possessive
    white-space run ends at a character that is not white space or at the end
    of the text, never before a newline, so there it matches where regex's
    ``$`` does: at the end."""
    from bpe.onig import translate
    from bpe.patterns import HUGGINGFACE_CL100K_PATTERN, PATTERNS

    spellings = [*PATTERNS.items(), ("cl100k", HUGGINGFACE_CL100K_PATTERN), ("gpt2", SPELLED_OUT_GPT2_PATTERN)]
    found = {}
    for name, source in spellings:
        try:
            found[translate(source)] = name
        except ValueError:
            continue          # cl100k's own spelling: "{1,3}+" means another thing there
    return found


def _flatten(spec, field: str, key: str, check, refuse: _Refusal) -> list[dict]:
    """A normalizer's or pre-tokenizer's steps, a Sequence flattened, each checked."""
    if spec is None:
        return []
    _expect(spec, dict, field, refuse, "an object with a type")
    if spec.get("type") == "Sequence":
        steps = _expect(spec.get(key), list, f"{field}.{key}", refuse, "a list")
        out = []
        for index, step in enumerate(steps):
            out.extend(_flatten(step, f"{field}.{key}[{index}]", key, check, refuse))
        return out
    check(spec, field, refuse)
    return [spec]


def _check_normalizer(step: dict, field: str, refuse: _Refusal) -> None:
    kind = step.get("type")
    if kind in NORMALIZATION_FORMS or kind == "Lowercase":
        return
    if kind == "Prepend":
        _expect(step.get("prepend"), str, f"{field}.prepend", refuse, "a string")
        return
    if kind == "Strip":
        for side in ("strip_left", "strip_right"):
            _expect(step.get(side, False), bool, f"{field}.{side}", refuse, "true or false")
        return
    if kind == "Replace":
        _expect(step.get("content"), str, f"{field}.content", refuse, "a string")
        compiled = _checked_pattern(step.get("pattern"), f"{field}.pattern", refuse)
        if compiled.search("") is not None or any(start == end for start, end in find_iter(compiled, "a\n a")):
            raise refuse(f"{field}.pattern", "can match the empty string; tokenizers then corrupts the "
                                             "text's alignment (and panics in a later normalizer)")
        return
    raise refuse(field, f"{kind!r} is not a normalizer bpe reproduces exactly (NFC, NFD, NFKC, NFKD, "
                        "Lowercase, Replace, Prepend, Strip, Sequence)")


def _checked_pattern(pattern, field: str, refuse: _Refusal):
    if not isinstance(pattern, dict) or not (isinstance(pattern.get("Regex"), str)
                                             or isinstance(pattern.get("String"), str)):
        raise refuse(field, f"is {pattern!r:.60}, not {{\"Regex\": ...}} or {{\"String\": ...}}")
    if pattern.get("String") == "" or pattern.get("Regex") == "":
        raise refuse(field, "is empty: it would cut between every character")
    try:
        return _compile_pattern(pattern)
    except ValueError as e:
        raise refuse(field, f"{pattern.get('Regex', pattern.get('String'))!r:.80}: {e}") from None
    except Exception as e:   # noqa: BLE001 - regex.error: the pattern does not compile
        raise refuse(field, f"does not compile: {e}") from None


def _check_pre_tokenizer(step: dict, field: str, refuse: _Refusal) -> None:
    kind = step.get("type")
    if kind == "ByteLevel":
        for option in ("add_prefix_space", "use_regex", "trim_offsets"):
            _expect(step.get(option, True), bool, f"{field}.{option}", refuse, "true or false")
        return
    if kind == "Split":
        _checked_pattern(step.get("pattern"), f"{field}.pattern", refuse)
        from bpe.onig import BEHAVIORS

        if step.get("behavior") not in BEHAVIORS:
            raise refuse(f"{field}.behavior", f"is {step.get('behavior')!r}, not one of {', '.join(BEHAVIORS)}")
        _expect(step.get("invert", False), bool, f"{field}.invert", refuse, "true or false")
        return
    if kind == "Digits":
        _expect(step.get("individual_digits", False), bool, f"{field}.individual_digits", refuse, "true or false")
        return
    if kind == "Punctuation":
        from bpe.onig import BEHAVIORS

        if step.get("behavior", "Isolated") not in BEHAVIORS:
            raise refuse(f"{field}.behavior", f"is {step.get('behavior')!r}, not one of {', '.join(BEHAVIORS)}")
        return
    if kind in ("Whitespace", "WhitespaceSplit"):
        return
    raise refuse(field, f"{kind!r} is not a pre-tokenizer bpe reproduces exactly for byte-level models "
                        "(Split, ByteLevel, Digits, Punctuation, Whitespace, WhitespaceSplit, Sequence)")


def _read_vocab(model: dict, refuse: _Refusal) -> tuple[dict[str, int], dict[str, int]]:
    if model.get("type") != "BPE":
        raise refuse("model.type", f"is {model.get('type')!r}; bpe reads byte-level BPE models only")
    if model.get("dropout") not in (None, 0, 0.0):
        raise refuse("model.dropout", f"is {model.get('dropout')!r}: merges are skipped at random")
    for field in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(field) not in (None, ""):
            raise refuse(f"model.{field}", f"is {model.get(field)!r}, which byte-level BPE does not use")
    vocab = _expect(model.get("vocab"), dict, "model.vocab", refuse, "an object of token -> id")
    seen = {}
    for text, token_id in vocab.items():
        _expect(token_id, int, f"model.vocab[{text!r}]", refuse, "an integer id")
        if not 0 <= token_id <= MAX_ID:
            raise refuse(f"model.vocab[{text!r}]", f"id {token_id} is not in [0, {MAX_ID}]")
        if token_id in seen:
            raise refuse(f"model.vocab[{text!r}]", f"id {token_id} is given to {seen[token_id]!r} too")
        seen[token_id] = text
    if model.get("byte_fallback") or model.get("unk_token") is not None:
        # Never used where every byte has a token: check that it is so.
        missing = [c for c in gpt2_byte_encoder().values() if c not in vocab]
        if missing:
            field = "byte_fallback" if model.get("byte_fallback") else "unk_token"
            raise refuse(f"model.{field}", f"is set and the vocabulary lacks byte {missing[0]!r}: "
                                           "not byte-level BPE")
    return vocab, vocab


def _read_merges(model: dict, vocab: dict[str, int], refuse: _Refusal) -> list[tuple[bytes, bytes]]:
    merges = _expect(model.get("merges"), list, "model.merges", refuse, "a list of merges")
    strings = [isinstance(merge, str) for merge in merges]
    if any(strings) and not all(strings):
        raise refuse("model.merges", "mixes 'a b' strings and [a, b] pairs (tokenizers refuses that)")
    pairs = []
    for index, merge in enumerate(merges):
        if isinstance(merge, str):
            if merge.startswith("#version"):
                continue
            parts = merge.split(" ")
        else:
            parts = merge
        if not (isinstance(parts, list) and len(parts) == 2 and all(isinstance(part, str) for part in parts)):
            raise refuse(f"model.merges[{index}]", f"{merge!r:.60} is not 'a b' or [a, b]")
        for part in (parts[0], parts[1], parts[0] + parts[1]):
            if part not in vocab:
                raise refuse(f"model.merges[{index}]", f"{part!r} is not in the vocabulary")
        where = lambda: f"{refuse.path}: model.merges[{index}]"  # noqa: E731
        pairs.append((from_gpt2_text(parts[0], where), from_gpt2_text(parts[1], where)))
    # A pair listed twice takes the rank of its last listing: keep that one.
    last = {pair: index for index, pair in enumerate(pairs)}
    return [pair for index, pair in enumerate(pairs) if last[pair] == index]


def _read_added_tokens(field_value, vocab: dict[str, int], refuse: _Refusal) -> list[AddedToken]:
    if field_value is None:
        return []
    _expect(field_value, list, "added_tokens", refuse, "a list")
    added: dict[str, AddedToken] = {}
    next_id = len(vocab)
    model_ids = set(vocab.values())
    for index, item in enumerate(field_value):
        field = f"added_tokens[{index}]"
        _expect(item, dict, field, refuse, "an object")
        content = _expect(item.get("content"), str, f"{field}.content", refuse, "a string")
        flags = {}
        for option, default in (("special", False), ("normalized", True), ("lstrip", False),
                                ("rstrip", False), ("single_word", False)):
            flags[option] = _expect(item.get(option, default), bool, f"{field}.{option}", refuse, "true or false")
        if not content:
            continue                                 # tokenizers ignores an empty one
        if content in added:
            token_id = added[content].id
        elif content in vocab:
            token_id = vocab[content]
        else:
            token_id = next_id
            next_id += 1
        if content not in vocab and token_id in model_ids:
            raise refuse(f"{field}.id", f"tokenizers gives {content!r} id {token_id} (the next past the "
                                        f"vocabulary's {len(vocab)} tokens), which a model token has too")
        given = item.get("id")
        if given is not None and given != token_id:
            raise refuse(f"{field}.id", f"is {given!r}, but tokenizers gives {content!r} id {token_id} "
                                        "(from the vocabulary, or the next id past it in file order)")
        added[content] = AddedToken(content, token_id, **flags)
    tokens = list(added.values())
    if any(token.rstrip for token in tokens) and any(token.content[:1] in WHITE_SPACE for token in tokens):
        raise refuse("added_tokens", "an rstrip token and a token that starts with white space: tokenizers "
                                     "then emits that space twice (or panics)")
    return tokens


def _check_added_forms(added: list[AddedToken], normalizer: Normalizer, refuse: _Refusal) -> None:
    forms = {}
    for token in added:
        if not token.normalized:
            continue
        form = normalizer(token.content)
        if not form:
            raise refuse("added_tokens", f"{token.content!r} normalizes to nothing; tokenizers would "
                                         "cut the text between every character")
        if form in forms:
            raise refuse("added_tokens", f"{forms[form]!r} and {token.content!r} normalize alike; "
                                         "which one tokenizers finds changes from run to run")
        forms[form] = token.content


def _read_post_processor(spec, refuse: _Refusal) -> tuple[list[int], list[int]]:
    """The ids a single text gets before and after its own, with ``add_special_tokens``."""
    if spec is None:
        return [], []
    _expect(spec, dict, "post_processor", refuse, "an object with a type")
    kind = spec.get("type")
    if kind == "ByteLevel":
        return [], []
    if kind == "Sequence":
        prefix, suffix = [], []
        for index, step in enumerate(_expect(spec.get("processors"), list, "post_processor.processors", refuse,
                                             "a list")):
            before, after = _read_post_processor(step, _Refusal(f"{refuse.path}: post_processor.processors"
                                                                f"[{index}]"))
            prefix, suffix = before + prefix, suffix + after
        return prefix, suffix
    if kind == "TemplateProcessing":
        single = _expect(spec.get("single"), list, "post_processor.single", refuse, "a list")
        specials = _expect(spec.get("special_tokens"), dict, "post_processor.special_tokens", refuse, "an object")
        prefix, suffix, seen = [], [], False
        for index, piece in enumerate(single):
            if isinstance(piece, dict) and "Sequence" in piece:
                if piece["Sequence"].get("id") != "A" or seen:
                    raise refuse(f"post_processor.single[{index}]", "a single text's template holds $A once")
                seen = True
            elif isinstance(piece, dict) and "SpecialToken" in piece:
                name = piece["SpecialToken"].get("id")
                ids = specials.get(name, {}).get("ids") if isinstance(specials.get(name), dict) else None
                if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool)
                                                        and i >= 0 for i in ids):
                    raise refuse(f"post_processor.special_tokens[{name!r}]", "has no list of ids")
                (suffix if seen else prefix).extend(ids)
            else:
                raise refuse(f"post_processor.single[{index}]", f"{piece!r:.60} is neither a Sequence nor a "
                                                                "SpecialToken")
        return prefix, suffix
    if kind in ("RobertaProcessing", "BertProcessing"):
        ids = []
        for role in ("cls", "sep"):
            value = spec.get(role)
            if not (isinstance(value, list) and len(value) == 2 and isinstance(value[1], int)):
                raise refuse(f"post_processor.{role}", f"is {value!r:.60}, not [token, id]")
            ids.append(value[1])
        return [ids[0]], [ids[1]]
    raise refuse("post_processor", f"{kind!r} is not a post-processor bpe reproduces (TemplateProcessing, "
                                   "RobertaProcessing, BertProcessing, ByteLevel, Sequence)")


def _check_decoder(spec, refuse: _Refusal) -> None:
    if spec is None:
        return
    _expect(spec, dict, "decoder", refuse, "an object with a type")
    if spec.get("type") == "Sequence":
        for index, step in enumerate(_expect(spec.get("decoders"), list, "decoder.decoders", refuse, "a list")):
            _check_decoder(step, _Refusal(f"{refuse.path}: decoder.decoders[{index}]"))
        return
    if spec.get("type") != "ByteLevel":
        raise refuse("decoder", f"{spec.get('type')!r} is not ByteLevel, the decoder of byte-level BPE")


# --------------------------------------------------------------------------- writing

def write(path: str, vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]], special_tokens: dict[str, int],
          pattern: Optional[str], *, eos_token: Optional[str] = None, bos_token: Optional[str] = None,
          pad_token: Optional[str] = None, ignore_merges: bool = True) -> str:
    """Write a ``tokenizer.json`` for Hugging Face ``tokenizers``: byte-level BPE, the
    same pattern as a Split pre-tokenizer, special tokens as added tokens.

    A path not ending in ``.json`` is a directory (created if missing) that gets
    ``tokenizer.json`` and, for ``transformers``, ``tokenizer_config.json`` and
    ``special_tokens_map.json`` naming the eos token (default: the first
    special token) and the bos and pad tokens given.
    """
    path = os.fspath(path)
    config_directory = None
    if not path.endswith(".json") or os.path.isdir(path):
        config_directory = path
        path = os.path.join(path, HF_FILE_NAME)
    roles = {"eos_token": eos_token if eos_token is not None else next(iter(special_tokens), None),
             "bos_token": bos_token, "pad_token": pad_token}
    for role, token in roles.items():
        if token is not None and token not in special_tokens:
            raise ValueError(f"{role} {token!r} is not a special token of this tokenizer")
    encoder = gpt2_byte_encoder()
    source = pattern_regex(pattern)
    if source is not None:
        # Oniguruma (tokenizers' regex engine) reads "{1,3}+" as a repeated interval,
        # not a possessive one; as its own alternative, greedy "{1,3}" matches the same.
        source = source.replace(r"\p{N}{1,3}+", r"\p{N}{1,3}")
    pre_tokenizers = [] if source is None else [
        {"type": "Split", "pattern": {"Regex": source}, "behavior": "Isolated", "invert": False}]
    pre_tokenizers.append({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                           "use_regex": False})
    document = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": token_id, "content": name, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}
                         for name, token_id in special_tokens.items()],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": pre_tokenizers},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                    "use_regex": False},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
            # A pre-token that is itself a token maps straight to it, as in bpe and tiktoken.
            "ignore_merges": ignore_merges,
            "vocab": {to_gpt2_text(token, encoder): token_id for token_id, token in sorted(vocab.items())},
            "merges": [f"{to_gpt2_text(a, encoder)} {to_gpt2_text(b, encoder)}" for a, b in merges],
        },
    }
    atomic_write_text(path, json.dumps(document, ensure_ascii=False))
    if config_directory is not None:
        named = {role: token for role, token in roles.items() if token is not None}
        config = {"tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": False,
                  "model_max_length": 1 << 60, **named}
        atomic_write_text(os.path.join(config_directory, "tokenizer_config.json"), json.dumps(config, indent=1))
        atomic_write_text(os.path.join(config_directory, "special_tokens_map.json"), json.dumps(named, indent=1))
    return path


