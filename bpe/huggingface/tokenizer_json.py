"""A ``tokenizer.json`` read (what bpe cannot run as ``tokenizers`` does is
refused, naming the field and why) and written."""
from __future__ import annotations

import functools
import json
import os
from typing import NamedTuple, Optional

from bpe.errors import TokenizerFileError
from bpe.files import atomic_write_text
from bpe.flat import RankTable
from bpe.formats.common import HF_FILE_NAME, read_bytes
from bpe.formats.gpt2 import from_gpt2_text, gpt2_byte_encoder, to_gpt2_text
from bpe.huggingface.pipeline import (NORMALIZATION_FORMS, WHITE_SPACE, AddedToken, Normalizer, Pipeline,
                                      PreTokenizer, compile_split_pattern)
from bpe.onig import find_iter
from bpe.patterns import SPELLED_OUT_GPT2_PATTERN, canonical_pattern, pattern_regex
from bpe.vocabulary import MAX_ID


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


def read_document(path: str) -> dict:
    """A ``tokenizer.json`` parsed, with a model in it (and no truncation or padding)."""
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
    return document


def read(path, document: Optional[dict] = None) -> HuggingFaceFile:
    """Read a ``tokenizer.json`` of a byte-level BPE model exactly, or refuse it with
    TokenizerFileError naming the field and why (``document``: the file parsed, if it is)."""
    path = huggingface_path(path)
    if document is None:
        document = read_document(path)
    refuse = _Refusal(path)
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
        return compile_split_pattern(pattern)
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


def check_bpe_options(model: dict, refuse: _Refusal) -> None:
    """What no BPE model bpe reads has: dropout, a subword prefix or suffix."""
    if model.get("dropout") not in (None, 0, 0.0):
        raise refuse("model.dropout", f"is {model.get('dropout')!r}: merges are skipped at random")
    for field in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(field) not in (None, ""):
            raise refuse(f"model.{field}", f"is {model.get(field)!r}, which bpe does not read")


def _read_vocab(model: dict, refuse: _Refusal) -> tuple[dict[str, int], dict[str, int]]:
    if model.get("type") != "BPE":
        raise refuse("model.type", f"is {model.get('type')!r}; bpe reads byte-level BPE models only")
    check_bpe_options(model, refuse)
    vocab = _expect(model.get("vocab"), dict, "model.vocab", refuse, "an object of token -> id")
    texts_by_id(vocab, refuse)
    if model.get("byte_fallback") or model.get("unk_token") is not None:
        # Never used where every byte has a token: check that it is so.
        missing = [c for c in gpt2_byte_encoder().values() if c not in vocab]
        if missing:
            field = "byte_fallback" if model.get("byte_fallback") else "unk_token"
            raise refuse(f"model.{field}", f"is set and the vocabulary lacks byte {missing[0]!r}: "
                                           "not byte-level BPE")
    return vocab, vocab


def texts_by_id(vocab: dict, refuse: _Refusal) -> dict[int, str]:
    """``model.vocab`` checked (ids that are ints in range, given once) and inverted."""
    texts: dict[int, str] = {}
    for text, token_id in vocab.items():
        _expect(token_id, int, f"model.vocab[{text!r}]", refuse, "an integer id")
        if not 0 <= token_id <= MAX_ID:
            raise refuse(f"model.vocab[{text!r}]", f"id {token_id} is not in [0, {MAX_ID}]")
        if token_id in texts:
            raise refuse(f"model.vocab[{text!r}]", f"id {token_id} is given to {texts[token_id]!r} too")
        texts[token_id] = text
    return texts


def read_merge_texts(model: dict, vocab: dict[str, int], refuse: _Refusal) -> list[tuple[int, str, str]]:
    """The model's merges as ``(place in the list, left, right)`` texts, each part
    and their join checked to be in the vocabulary, as ``tokenizers`` checks them."""
    merges = _expect(model.get("merges"), list, "model.merges", refuse, "a list of merges")
    strings = [isinstance(merge, str) for merge in merges]
    if any(strings) and not all(strings):
        raise refuse("model.merges", "mixes 'a b' strings and [a, b] pairs (tokenizers refuses that)")
    out = []
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
        out.append((index, parts[0], parts[1]))
    return out


def _read_merges(model: dict, vocab: dict[str, int], refuse: _Refusal) -> list[tuple[bytes, bytes]]:
    pairs = []
    for index, left, right in read_merge_texts(model, vocab, refuse):
        where = lambda: f"{refuse.path}: model.merges[{index}]"  # noqa: E731
        pairs.append((from_gpt2_text(left, where), from_gpt2_text(right, where)))
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
