"""``tokenizer.json`` files whose BPE merges characters, not bytes: SentencePiece
models as Hugging Face converts them (Llama 2, Mistral 7B, ...), read as
``tokenizers`` runs them, or refused naming the field and why.

Such a file has no ByteLevel step. Its tokens are text, ``▁`` standing for a
space: a Prepend and a Replace normalizer, or a Metaspace pre-tokenizer, make
the text so. ``tokenizers``' BPE model then takes each character the
vocabulary holds as a symbol and each other character as its bytes'
``<0xNN>`` tokens (``byte_fallback``), and merges listed pairs, the earliest
listed first, the leftmost among equals, over the whole stretch (no shortcut
for a stretch that is a token). ``bpe.charlevel`` runs that in the kernel.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import numpy as np

from bpe.huggingface.pipeline import Normalizer, Pipeline, PreTokenizer, metaspace_scheme, replace
from bpe.huggingface.tokenizer_json import (_check_added_forms, _check_normalizer, _expect, _flatten,
                                            _read_added_tokens, _read_post_processor, _Refusal, check_bpe_options,
                                            read_merge_texts, texts_by_id)
from bpe.encoder import utf8
from bpe.vocabulary import PREBUILT_SLACK, Merges

SPACE = "\u2581"
_SPACE_UTF8 = SPACE.encode("utf-8")

#: The decoders ``decode`` runs, as ``tokenizers`` does.
DECODERS = ("Replace", "ByteFallback", "Fuse", "Strip", "Metaspace")


class CharacterFile(NamedTuple):
    """What such a ``tokenizer.json`` holds, checked: ``pieces``, the model's
    tokens the kernel may make (text -> id; not the ``<0xNN>`` ones);
    ``byte_pieces``, each byte's ``<0xNN>`` id; ``characters``, the
    vocabulary's characters of several UTF-8 bytes; ``rule``, the merges as
    ids; ``texts``, every id's text for decoding (added tokens' too);
    ``special_tokens``, the added tokens (content -> id); the pipeline and
    the decoder's steps."""

    pieces: dict[str, int]
    n_vocab: int
    byte_pieces: list[int]
    characters: list[str]
    rule: Merges
    texts: dict[int, str]
    special_tokens: dict[str, int]
    pipeline: Pipeline
    decoder: list[dict]


def is_character_level(document) -> bool:
    """Whether a parsed ``tokenizer.json`` is of this kind: a BPE model and no
    ByteLevel step before it."""
    if not isinstance(document, dict) or not isinstance(document.get("model"), dict):
        return False
    steps = _step_types(document.get("normalizer"), "normalizers") + _step_types(document.get("pre_tokenizer"),
                                                                                 "pretokenizers")
    return document["model"].get("type") == "BPE" and not {"ByteLevel", None} & set(steps)


def _step_types(spec, key: str) -> list:
    """The types of a normalizer's or pre-tokenizer's steps; None for a step
    that is not an object with a type (which the byte-level reader names)."""
    if spec is None:
        return []
    if not isinstance(spec, dict) or not isinstance(spec.get("type"), str):
        return [None]
    if spec.get("type") == "Sequence":
        if not isinstance(spec.get(key), list):
            return [None]
        return [kind for step in spec[key] for kind in _step_types(step, key)]
    return [spec["type"]]


def read(document: dict, path: str) -> CharacterFile:
    """Read a ``tokenizer.json`` of a character-level BPE model exactly, or refuse
    it with TokenizerFileError naming the field and why (``document``: the
    file as ``tokenizer_json.read_document`` parsed it)."""
    refuse = _Refusal(path)
    model = document["model"]
    if model.get("byte_fallback") is not True:
        raise refuse("model.byte_fallback", f"is {model.get('byte_fallback')!r}: with no ByteLevel step this is "
                                            "BPE over characters, which bpe reads with byte fallback only (a "
                                            "character the vocabulary lacks then becomes its bytes' <0xNN> tokens)")
    check_bpe_options(model, refuse)
    if model.get("ignore_merges", False):
        raise refuse("model.ignore_merges", "is true; bpe reads character-level BPE without it")
    vocab = _expect(model.get("vocab"), dict, "model.vocab", refuse, "an object of token -> id")
    texts = texts_by_id(vocab, refuse)
    for text in vocab:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise refuse(f"model.vocab[{text!r}]", "is not Unicode text (a lone surrogate)") from None
    names = [f"<0x{b:02X}>" for b in range(256)]
    missing = [name for name in names if name not in vocab]
    if missing:
        raise refuse("model.vocab", f"has no {missing[0]}: byte fallback then gives the unknown token for some "
                                    "characters, which bpe does not reproduce")
    byte_pieces = [vocab[name] for name in names]
    byte_names = set(names)
    pieces = {text: token_id for text, token_id in vocab.items() if text and text not in byte_names}

    listed: dict[tuple[int, int], tuple[int, int]] = {}       # pair -> (place, merged id); the last listing wins
    for index, left, right in read_merge_texts(model, vocab, refuse):
        for part in (left, right, left + right):
            if part in byte_names:
                raise refuse(f"model.merges[{index}]", f"merges {part!r}, a byte-fallback token, which bpe "
                                                       "does not merge")
        if left and right:            # (a merge with an empty part, no symbol being empty, never applies)
            listed[(vocab[left], vocab[right])] = (index, vocab[left + right])
    order = sorted(listed.items(), key=lambda item: item[1][0])
    rule = Merges(np.array([pair for pair, _ in order], dtype=np.int32).reshape(-1, 2),
                  np.array([merged for _, (_, merged) in order], dtype=np.int32), False)

    added = _read_added_tokens(document.get("added_tokens"), vocab, refuse)
    normalizer = Normalizer(_flatten(document.get("normalizer"), "normalizer", "normalizers", _check_normalizer,
                                     refuse))
    pre_tokenizer = PreTokenizer(_flatten(document.get("pre_tokenizer"), "pre_tokenizer", "pretokenizers",
                                          _check_metaspace, refuse))
    if len(pre_tokenizer.steps) > 1:
        raise refuse("pre_tokenizer", "has several steps; bpe reads character-level BPE with one Metaspace "
                                      "step or none")
    if pre_tokenizer.steps and metaspace_scheme(pre_tokenizer.steps[0]) == "first":
        _check_first_scheme(normalizer, added, refuse)
    _check_twice_listed(document.get("added_tokens"), refuse)
    _check_added_forms(added, normalizer, refuse)
    prefix, suffix = _read_post_processor(document.get("post_processor"), refuse)
    decoder = _flatten(document.get("decoder"), "decoder", "decoders", _check_decoder, refuse)
    # Decoding gives an added token's text as it is matched (normalized, if it is
    # so), before the vocabulary's; with skip_special_tokens, every id whose text
    # is a special added token's content goes.
    for token in added:
        texts[token.id] = normalizer(token.content) if token.normalized else token.content
    special_texts = {token.content for token in added if token.special}
    skipped = {token_id for token_id, text in texts.items() if text in special_texts}
    pipeline = Pipeline(added, normalizer, pre_tokenizer, prefix, suffix, sorted(skipped))
    characters = [text for text in pieces if len(text) == 1 and ord(text) >= 0x80]
    n_vocab = max(texts) + 1 if texts else 0
    if n_vocab > len(texts) + PREBUILT_SLACK:
        raise refuse("model.vocab", f"has id {n_vocab - 1}, far past its {len(texts)} tokens; bpe reads "
                                    "vocabularies whose ids are about as many as its tokens")
    return CharacterFile(pieces, n_vocab, byte_pieces, characters, rule, texts,
                         {token.content: token.id for token in added}, pipeline, decoder)


def _check_first_scheme(normalizer: Normalizer, added, refuse: _Refusal) -> None:
    """Metaspace's ``first`` prepends where the stretch starts at the text's
    first character as ``tokenizers`` tracks offsets through the normalizer;
    bpe follows that only for normalizers that keep the first character where
    it is (Unicode forms, Lowercase, Prepend, a Replace of one character by
    some), and without normalized added tokens."""
    for step in normalizer.steps:
        kind = step["type"]
        pattern = step.get("pattern", {})
        keeps = kind in ("NFC", "NFD", "NFKC", "NFKD", "Lowercase", "Prepend") or (
            kind == "Replace" and len(pattern.get("String", "")) == 1 and step.get("content"))
        if not keeps:
            raise refuse("pre_tokenizer.prepend_scheme", f"is 'first' after a {kind} normalizer that may move "
                                                         "the text's start, which bpe does not follow")
    if not normalizer.identity and any(token.normalized for token in added):
        raise refuse("pre_tokenizer.prepend_scheme", "is 'first' with a normalizer and normalized added "
                                                     "tokens, whose offsets bpe does not follow")


def _check_twice_listed(items, refuse: _Refusal) -> None:
    """An added token listed again with other flags: ``tokenizers`` keeps some
    of the first listing's (special stays special) and takes some of the last's."""
    seen: dict = {}
    for index, item in enumerate(items or ()):
        content = item.get("content")
        flags = tuple(item.get(flag) for flag in ("special", "normalized", "lstrip", "rstrip", "single_word"))
        if content in seen and seen[content] != flags:
            raise refuse(f"added_tokens[{index}]", f"lists {content!r} again with other flags, which bpe "
                                                   "does not read")
        seen.setdefault(content, flags)


def _check_metaspace(step: dict, field: str, refuse: _Refusal) -> None:
    if step.get("type") != "Metaspace":
        raise refuse(field, f"{step.get('type')!r}: bpe reads character-level BPE with a Metaspace "
                            "pre-tokenizer or none")
    replacement = step.get("replacement")
    if not (isinstance(replacement, str) and len(replacement) == 1):
        raise refuse(f"{field}.replacement", f"is {replacement!r:.60}, not one character")
    _expect(step.get("split", True), bool, f"{field}.split", refuse, "true or false")
    if step.get("add_prefix_space") is False and step.get("prepend_scheme", "always") != "never":
        raise refuse(f"{field}.add_prefix_space", "is false but prepend_scheme is not 'never' (tokenizers "
                                                  "refuses that)")
    if metaspace_scheme(step) not in ("first", "always", "never"):
        raise refuse(f"{field}.prepend_scheme", f"is {step.get('prepend_scheme')!r}, not first, always or never")


def _check_decoder(step: dict, field: str, refuse: _Refusal) -> None:
    kind = step.get("type")
    if kind not in DECODERS:
        raise refuse(field, f"{kind!r} is not a decoder bpe runs for character-level BPE ({', '.join(DECODERS)}, "
                            "Sequence)")
    if kind == "Replace":
        _check_normalizer(step, field, refuse)
    elif kind == "Strip":
        if not (isinstance(step.get("content"), str) and len(step["content"]) == 1):
            raise refuse(f"{field}.content", f"is {step.get('content')!r:.60}, not one character")
        for side in ("start", "stop"):
            _expect(step.get(side), int, f"{field}.{side}", refuse, "a count")
        if step["stop"] != 0:
            raise refuse(f"{field}.stop", f"is {step['stop']}; tokenizers fails on a token shorter than that, "
                                          "and bpe reads 0 only")
    elif kind == "Metaspace":
        _check_metaspace(step, field, refuse)


def bytewise(pipeline: Pipeline, space: bool = False) -> Optional[Callable[[str], bytes]]:
    """The normalizer and pre-tokenizer of a text that holds no added token, as
    one function from the text to its normalized UTF-8 (made on the bytes,
    without making a str that is no longer ASCII, whose UTF-8 took longer
    than encoding it), where the steps allow: Prepend, Replace of a string,
    and Metaspace that does not split.
    None otherwise, or where an added token is matched after normalizing.
    With ``space``, the bytes are as the kernel reads them, ``▁`` as a space
    (``CharacterVocabulary.kernel_text``), made at once: the text's own ``▁``
    become spaces first, and the Replace of spaces by ``▁`` is then a no-op."""
    steps = _bytewise_steps(pipeline, space)
    if steps is None:
        return None

    def run(text: str) -> bytes:
        data = utf8(text)
        if space and SPACE in text:         # O(1) in a str of ASCII or Latin-1 alone
            data = data.replace(_SPACE_UTF8, b" ")
        # (old, new, unless_there): a replacement, or with old b"" a prefix
        # (Metaspace's only where the text does not start with it already).
        for old, new, unless_there in steps:
            if not data:
                break
            if old:
                data = data.replace(old, new)
            elif not (unless_there and data.startswith(new)):
                data = new + data
        return data

    return run


def str_prefix(pipeline: Pipeline, space: bool) -> Optional[bool]:
    """Whether ``bytewise``'s bytes, as the kernel reads them (``space``), are
    what SentencePiece's normalizer makes where it only writes spaces as
    ``▁``: the text's UTF-8, its ``▁`` as spaces, and (True) a space in front
    of a text that is not empty, or (False) none. The kernel then makes them
    from the str itself (``ShortCalls.metaspace_to_list``), as for the
    ``.model`` file: Llama 2's and Mistral's files, a Prepend of ``▁`` and a
    Replace of spaces. None where the steps do anything else."""
    steps = _bytewise_steps(pipeline, space) if space else None
    if steps == []:
        return False
    if steps == [(b"", b" ", False)]:
        return True
    return None


def _bytewise_steps(pipeline: Pipeline, space: bool) -> Optional[list[tuple[bytes, bytes, bool]]]:
    """``bytewise``'s steps on the bytes, in order: ``(old, new, unless_there)``,
    a replacement, or with ``old`` empty a prefix (only where the text does
    not start with it already, with ``unless_there``). None where it has none."""
    if any(token.normalized for token in pipeline.added):
        return None

    def written(text: str) -> bytes:
        data = text.encode("utf-8")
        return data.replace(_SPACE_UTF8, b" ") if space else data

    steps = []
    for step in pipeline.normalizer.steps:
        if step["type"] == "Prepend":
            steps.append((b"", written(step["prepend"]), False))
        elif step["type"] == "Replace" and "String" in step["pattern"]:
            old, new = step["pattern"]["String"], step["content"]
            if space and (old, new) == (" ", SPACE):
                continue
            if space and any(c in old + new for c in (" ", SPACE)):
                return None
            steps.append((old.encode("utf-8"), new.encode("utf-8"), False))
        else:
            return None
    for step in pipeline.pre_tokenizer.steps:
        if step.get("split", True):
            return None
        replacement = written(step["replacement"])
        if replacement != b" ":
            steps.append((b" ", replacement, False))
        if metaspace_scheme(step) != "never":
            steps.append((b"", replacement, True))
    return steps


def spaces_all_replaced(pipeline: Pipeline) -> bool:
    """Whether no space is left in the text the model is given (each became
    ``▁``): a Metaspace pre-tokenizer with ``▁``, or normalizers whose last word
    on spaces is a Replace of ``" "`` by ``▁`` (Unicode compatibility forms may
    make spaces; canonical forms, Lowercase and Strip do not)."""
    steps = pipeline.pre_tokenizer.steps
    if steps:
        return steps[0]["replacement"] == SPACE
    replaced = False
    for step in pipeline.normalizer.steps:
        kind = step["type"]
        if kind == "Replace" and step["pattern"].get("String") == " " and step["content"] == SPACE:
            replaced = True
        elif kind == "Prepend":
            replaced = replaced and " " not in step["prepend"]
        elif kind == "Replace":
            replaced = replaced and " " not in step["content"]
        elif kind not in ("NFC", "NFD", "Lowercase", "Strip"):
            replaced = False
    return replaced


# --------------------------------------------------------------------------- decoding

def decode_step(step: dict, tokens: list[str]) -> list[str]:
    """One decoder's ``decode_chain`` over the tokens' texts, as ``tokenizers`` runs it."""
    kind = step["type"]
    if kind == "Replace":
        return [replace(step, token) for token in tokens]
    if kind == "Fuse":
        return ["".join(tokens)]
    if kind == "Strip":
        return [_strip_token(token, step["content"], step["start"], step["stop"]) for token in tokens]
    if kind == "Metaspace":
        replacement, first = step["replacement"], metaspace_scheme(step) != "never"
        return [token.replace(replacement, "" if index == 0 and first else " ") for index, token in enumerate(tokens)]
    out: list[str] = []                                  # ByteFallback
    pending = bytearray()
    for token in tokens:
        value = _byte_token(token)
        if value is not None:
            pending.append(value)
            continue
        out.extend(_bytes_as_text(pending))
        pending.clear()
        out.append(token)
    out.extend(_bytes_as_text(pending))
    return out


def _byte_token(token: str) -> Optional[int]:
    """The byte of a ``<0xNN>`` token as ByteFallback reads one: six bytes, and
    two hexadecimal digits between (Rust's ``from_str_radix`` takes a ``+`` for the first)."""
    if len(token.encode("utf-8")) != 6 or not (token.startswith("<0x") and token.endswith(">")):
        return None
    digits = token[3:5]
    if not all(c in "0123456789abcdefABCDEF" for c in digits.removeprefix("+")) or digits == "+":
        return None
    return int(digits, 16)


def _bytes_as_text(pending: bytearray) -> list[str]:
    """Byte tokens run together: their text if they are UTF-8, else one U+FFFD a byte."""
    if not pending:
        return []
    try:
        return [pending.decode("utf-8")]
    except UnicodeDecodeError:
        return ["\ufffd"] * len(pending)


def _strip_token(token: str, content: str, start: int, stop: int) -> str:
    """Up to ``start`` leading and ``stop`` trailing ``content`` characters off."""
    head = 0
    while head < min(start, len(token)) and token[head] == content:
        head += 1
    tail = len(token)
    for _ in range(stop):
        if tail > head and token[tail - 1] == content:
            tail -= 1
        else:
            break
    return token[head:tail]
