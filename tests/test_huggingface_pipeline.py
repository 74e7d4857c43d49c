"""Every step of a Hugging Face ``tokenizer.json`` that bpe reads, on a crafted file
per feature, id for id against ``tokenizers``: normalizers, pre-tokenizers
(Split's behaviours, Oniguruma's meanings), added tokens' options, the BPE
model's options, post-processors, the decoder; and what bpe refuses, named."""
import copy
import json

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

import bpe
from bpe.patterns import DEEPSEEK_V3_SPLITS

from conftest import SHAKESPEARE
from hf_reference import HARD_TEXTS, bmp_characters, write_json

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import decoders, models, pre_tokenizers, trainers  # noqa: E402

BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
LOWER = {"type": "Lowercase"}


@pytest.fixture(scope="module")
def base():
    """A small byte-level BPE trained by tokenizers itself, as its JSON."""
    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([open(SHAKESPEARE, encoding="utf-8").read()[:200_000] + " ".join(HARD_TEXTS)], trainer)
    return json.loads(tok.to_str())


def added(content, *, special=True, normalized=False, lstrip=False, rstrip=False, single_word=False):
    return {"content": content, "special": special, "normalized": normalized, "lstrip": lstrip,
            "rstrip": rstrip, "single_word": single_word}


def split(regex, behavior="Isolated", invert=False):
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": behavior, "invert": invert}


def sequence(*steps):
    return {"type": "Sequence", "pretokenizers": list(steps)}


#: name -> changes to the trained file: top-level fields replaced, "added" the
#: added tokens (ids given as tokenizers gives them), "model" options.
VARIANTS = {
    "NFC": {"normalizer": {"type": "NFC"}},
    "NFD": {"normalizer": {"type": "NFD"}},
    "NFKC": {"normalizer": {"type": "NFKC"}},
    "NFKD": {"normalizer": {"type": "NFKD"}},
    "Lowercase": {"normalizer": LOWER},
    "Replace string": {"normalizer": {"type": "Replace", "pattern": {"String": "ab"}, "content": "X"}},
    "Replace regex": {"normalizer": {"type": "Replace", "pattern": {"Regex": r"\s+"}, "content": " "}},
    "Prepend": {"normalizer": {"type": "Prepend", "prepend": "_"}},
    "Strip": {"normalizer": {"type": "Strip", "strip_left": True, "strip_right": True}},
    "normalizer Sequence": {"normalizer": {"type": "Sequence", "normalizers": [
        {"type": "Strip", "strip_left": False, "strip_right": True}, {"type": "NFKC"}, LOWER]}},
    **{f"Split {behavior}{' inverted' if invert else ''}": {"pre_tokenizer": sequence(
        split(r"\s+|[0-9]", behavior, invert), {**BYTE_LEVEL, "use_regex": False})}
       for behavior in ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")
       for invert in (False, True)},
    "Split string": {"pre_tokenizer": sequence({"type": "Split", "pattern": {"String": "a"}, "behavior": "Isolated",
                                                "invert": False}, {**BYTE_LEVEL, "use_regex": False})},
    "Split llama3": {"pre_tokenizer": sequence(split(
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
        r"|\s+(?!\S)|\s+"), {**BYTE_LEVEL, "use_regex": False})},
    "Split line anchors": {"pre_tokenizer": sequence(split(r"^\s+|\s+$|\w+\Z"), {**BYTE_LEVEL, "use_regex": False})},
    "Split hex and words": {"pre_tokenizer": sequence(split(r"\h+|\w+|\b"), {**BYTE_LEVEL, "use_regex": False})},
    "Split end of line": {"pre_tokenizer": sequence(split(r"\S+|\s+$|\s+"), {**BYTE_LEVEL, "use_regex": False})},
    "Split dot-all": {"pre_tokenizer": sequence(split(r"(?m:a.)"), {**BYTE_LEVEL, "use_regex": False})},
    "Split empty matches": {"pre_tokenizer": sequence(split(r"x*", "MergedWithNext"),
                                                      {**BYTE_LEVEL, "use_regex": False})},
    "ByteLevel prefix space": {"pre_tokenizer": {**BYTE_LEVEL, "add_prefix_space": True}},
    "ByteLevel no regex": {"pre_tokenizer": {**BYTE_LEVEL, "use_regex": False}},
    "Digits": {"pre_tokenizer": sequence({"type": "Digits", "individual_digits": False}, BYTE_LEVEL)},
    "Digits one by one": {"pre_tokenizer": sequence({"type": "Digits", "individual_digits": True}, BYTE_LEVEL)},
    "Punctuation": {"pre_tokenizer": sequence({"type": "Punctuation", "behavior": "Isolated"}, BYTE_LEVEL)},
    "Punctuation contiguous": {"pre_tokenizer": sequence({"type": "Punctuation", "behavior": "Contiguous"},
                                                         BYTE_LEVEL)},
    "Whitespace": {"pre_tokenizer": sequence({"type": "Whitespace"}, {**BYTE_LEVEL, "use_regex": False})},
    "WhitespaceSplit": {"pre_tokenizer": sequence({"type": "WhitespaceSplit"}, BYTE_LEVEL)},
    "added plain": {"added": [added("<s>"), added("</s>"), added("ab", special=False)]},
    "added lstrip rstrip": {"added": [added("<s>", lstrip=True), added("</s>", rstrip=True)]},
    "added single word": {"added": [added("the", single_word=True, special=False), added("<s>")]},
    "added normalized": {"normalizer": LOWER,
                         "added": [added("<S>", normalized=True), added("qz>"), added("<qqz", normalized=True)]},
    "added mixed": {"added": [added("<qqz", normalized=True), added("qz>"), added("<s>", lstrip=True)]},
    # no normalizer: the kernel finds them in one pass where only one kind occurs (DeepSeek V3's case)
    "added both kinds": {"added": [added("<qqz", normalized=True), added("qz>"), added("<s>"),
                                   added("</s>", normalized=True), added("ab", special=False, normalized=True)]},
    "DeepSeek V3 Splits": {"pre_tokenizer": sequence(*(split(source) for source in DEEPSEEK_V3_SPLITS),
                                                     {**BYTE_LEVEL, "use_regex": False})},
    "ignore_merges": {"model": {"ignore_merges": True}},
    "merges as pairs": {"model": {"merges_as_pairs": True}},
    "Template": {"added": [added("<s>"), added("</s>")], "post_processor": "template"},
    "Roberta": {"added": [added("<s>"), added("</s>")], "post_processor": "roberta"},
    "Bert": {"added": [added("<s>"), added("</s>")], "post_processor": "bert"},
    "post Sequence": {"added": [added("<s>"), added("</s>")], "post_processor": "sequence"},
}


def variant(base: dict, changes: dict) -> dict:
    document = copy.deepcopy(base)
    model = document["model"]
    n = len(model["vocab"])
    tokens = [dict(token, id=n + index) for index, token in enumerate(changes.get("added", []))]
    document["added_tokens"] = tokens
    ids = {token["content"]: token["id"] for token in tokens}
    for field in ("normalizer", "pre_tokenizer"):
        if field in changes:
            document[field] = changes[field]
    options = dict(changes.get("model", {}))
    if options.pop("merges_as_pairs", False):
        model["merges"] = [merge.split(" ") if isinstance(merge, str) else merge for merge in model["merges"]]
    model.update(options)
    post = changes.get("post_processor")
    template = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                           {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {name: {"id": name, "ids": [ids[name]], "tokens": [name]}
                                   for name in ("<s>", "</s>")}} if post else None
    if post == "template":
        document["post_processor"] = template
    elif post in ("roberta", "bert"):
        document["post_processor"] = {"type": "RobertaProcessing" if post == "roberta" else "BertProcessing",
                                      "sep": ["</s>", ids["</s>"]], "cls": ["<s>", ids["<s>"]],
                                      **({"trim_offsets": True, "add_prefix_space": False}
                                         if post == "roberta" else {})}
    elif post == "sequence":
        document["post_processor"] = {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}, template]}
    return document


TEXTS = HARD_TEXTS + ["end.  \n\nNext", "<s>hi</s> <s> x </s>", "a<qqz>b <S>x<s>", "the theme other the", "  <s>  </s>  ",
                      "Ab ab AB aab", "x" * 7 + "axxbxx", "<qqz> qz> <s>", "日本語ー・゠カナ 123456 .NET\x00\x01a",
                      open(SHAKESPEARE, encoding="utf-8").read(3000) + " <s> 日本語 </s> é\n"]   # a document
pieces = st.sampled_from(["<s>", "</s>", "<S>", "qz>", "<qqz", " the ", "ab", "AB", " ", "  ", "\n", "\t", "1",
                          "23", ".", ",", "x", "xx", "é", "e\u0301", "ﬁ", "Σ", "日本", "ー", "゠", "\u3099", "\x00"])
text_strategy = st.lists(st.one_of(pieces, bmp_characters()), max_size=30).map("".join)


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def pair(request, base, tmp_path_factory):
    path = write_json(tmp_path_factory.mktemp("hf") / "tokenizer.json", variant(base, VARIANTS[request.param]))
    return bpe.load(path), tokenizers.Tokenizer.from_file(path), request.param


def check(ours, theirs, text):
    expected = theirs.encode(text, add_special_tokens=False).ids
    assert ours.encode(text) == expected
    assert ours.encode_to_numpy(text).tolist() == expected
    assert ours.encode(text, add_special_tokens=True) == theirs.encode(text, add_special_tokens=True).ids
    assert ours.decode(expected) == theirs.decode(expected, skip_special_tokens=False)
    assert ours.decode(expected, skip_special_tokens=True) == theirs.decode(expected)


def test_each_feature_on_hard_texts(pair):
    ours, theirs, name = pair
    for text in TEXTS:
        check(ours, theirs, text)
    assert ours.encode_batch(TEXTS, num_threads=2) == [theirs.encode(t, add_special_tokens=False).ids
                                                       for t in TEXTS]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=text_strategy)
def test_each_feature_on_any_text(pair, text):
    ours, theirs, _ = pair
    check(ours, theirs, text)


def test_the_fast_paths_are_taken(base, tmp_path):
    # The variants above would pass through the Python pipeline too: these run the kernel.
    from bpe.huggingface import tokenizer_json

    # One call on the kernel alone (ShortCalls) where no normalizer can change
    # the text and added tokens are found as special tokens are: not past them.
    for name, short in (("added plain", True), ("Split llama3", True), ("Template", True), ("NFC", False),
                        ("added lstrip rstrip", False), ("added both kinds", False)):
        ours = bpe.load(write_json(tmp_path / f"{name}.json", variant(base, VARIANTS[name])))
        ours.encode("warm")
        assert (ours._short is not None) == short, name

    path = write_json(tmp_path / "both.json", variant(base, VARIANTS["added both kinds"]))
    pipeline = tokenizer_json.read(path).pipeline
    assert not pipeline.simple and pipeline.second_kind == ("<qqz", "</s>", "ab")
    allowed = ["<qqz", "qz>", "<s>", "</s>", "ab"]
    assert pipeline.lacks_second_kind("x qz> <s> a b", allowed)
    assert not pipeline.lacks_second_kind("x <qqz y", allowed) and not pipeline.lacks_second_kind("xab", allowed)
    assert pipeline.lacks_second_kind("x <qqz y", ["qz>"])          # not allowed: it does not count
    path = write_json(tmp_path / "deepseek.json", variant(base, VARIANTS["DeepSeek V3 Splits"]))
    assert tokenizer_json.read(path).pattern == "deepseek_v3"


def deepseek_v3_splits():
    """DeepSeek V3's three Splits, as tokenizers runs them."""
    return pre_tokenizers.Sequence([pre_tokenizers.Split(tokenizers.Regex(source), "isolated")
                                    for source in DEEPSEEK_V3_SPLITS])


def test_deepseek_v3_pattern_is_its_three_splits_for_every_code_point():
    # bpe runs DeepSeek V3's three Splits as one pattern (and a native scanner
    # that test_native_pretok holds to it): the same pieces as tokenizers'.
    from bpe.patterns import DEEPSEEK_V3_PATTERN
    from bpe.unicode import all_code_points

    from conftest import findall

    steps = deepseek_v3_splits()
    # each code point after a space, a letter and a CJK letter, and before a letter, a CJK letter and a digit
    groups = [f" {c}a{c}日{c}1\n" for c in all_code_points() if not 0xD800 <= ord(c) < 0xE000]
    text = "\x00".join(groups)
    # tokenizers is given the text a part at a time, as its time grows faster than
    # the text (whole, it took 36 s; in parts, 12). Each cut is after a group's line
    # feed and before the NUL that follows it, and is held to be an end of a
    # piece in the groups on either side, as tokenizers cuts them.
    per_part = 1 << 8
    expected = []
    for start in range(0, len(groups), per_part):
        part = "\x00".join(groups[start:start + per_part])
        if start > 0:
            part = "\x00" + part
            before, after = groups[start - 1], "\x00" + groups[start]
            assert len(before) in [end for _, (_, end) in steps.pre_tokenize_str(before + after)], before
        expected += [piece for piece, _ in steps.pre_tokenize_str(part)]
    assert findall(DEEPSEEK_V3_PATTERN, text) == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(pieces, bmp_characters(), st.sampled_from(["\u3040", "\u30fb", "\u309b", "ア", "〇", "½",
                                                                      "\ue000", "\u200d", "😀", "\u3000"])),
                max_size=30).map("".join))
def test_deepseek_v3_pattern_is_its_three_splits(text):
    from bpe.patterns import DEEPSEEK_V3_PATTERN, pretokenize

    from conftest import findall

    steps = deepseek_v3_splits()
    expected = [piece for piece, _ in steps.pre_tokenize_str(text)]
    assert findall(DEEPSEEK_V3_PATTERN, text) == expected
    assert pretokenize(text, "deepseek_v3") == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="<|ab日é😀", min_size=1, max_size=4), max_size=20),
       st.text(alphabet="<|ab日é😀x", max_size=40))
def test_str_needles_find_what_in_finds(needles, text):
    # The kernel's search for added tokens, against Python's: needles of one
    # character, several sharing a first one, and needles found at the text's
    # end; in a short text (searched holding the GIL) and a long one (not).
    from bpe._encode import SHORT_CALL_CHARS, StrNeedles

    from bpe.specials import special_spans

    needles = list(dict.fromkeys(needles))
    found = StrNeedles(needles)
    for haystack in (text, text.replace("😀", "é"), text.replace("😀", "").replace("日", "").replace("é", ""),
                     "x" * SHORT_CALL_CHARS + text):
        assert found.found_in(haystack) == any(needle in haystack for needle in needles)
        assert found.spans(haystack) == special_spans(haystack, needles)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="<[|aé", min_size=1, max_size=4), min_size=1, max_size=12),
       st.text(alphabet="<[|abé\xff", max_size=60))
def test_str_needles_of_few_first_bytes_are_found_by_memchr(needles, text):
    # Needles that start with at most four code points below 256 are looked
    # for by memchr in a str of one byte a character (ASCII or Latin-1; not
    # in a wider one): each first byte's next place kept, a miss (a "<" of
    # C code that starts no needle) passed over.
    from bpe._encode import SHORT_CALL_CHARS, StrNeedles

    from bpe.specials import special_spans

    needles = list(dict.fromkeys(needles))
    found = StrNeedles(needles)
    starts = sorted({needle[0] for needle in needles})
    assert found.memchr_bytes == ("".join(starts).encode("latin-1") if len(starts) <= 4 else b"")
    for haystack in (text, text.replace("é", "e").replace("\xff", "y"), text + "日",
                     "<a" * SHORT_CALL_CHARS + text):
        assert found.found_in(haystack) == any(needle in haystack for needle in needles)
        assert found.spans(haystack) == special_spans(haystack, needles)


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
def test_text_without_unstable_code_points_is_unchanged(form):
    # The one-pass check that lets the kernel encode a normalized tokenizer's
    # text: every code point it passes is its own normal form, and so is any
    # text of such code points (compositions, reordering, Hangul jamo).
    import random
    import unicodedata

    import numpy as np

    from bpe.huggingface.pipeline import Normalizer, _unstable

    marked = np.unpackbits(_unstable(frozenset([form])), bitorder="little").astype(bool)
    stable = [chr(p) for p in np.flatnonzero(~marked) if not 0xD800 <= p < 0xE000]
    assert all(unicodedata.normalize(form, c) == c for c in stable)
    rng = random.Random(form)
    near = [c for c in stable if ord(c) < 0x3400]                   # scripts that compose, often
    for _ in range(20_000):
        text = "".join(rng.choice(near if rng.random() < 0.8 else stable) for _ in range(rng.randint(2, 6)))
        assert unicodedata.normalize(form, text) == text, [hex(ord(c)) for c in text]
    normalizer = Normalizer([{"type": form}])
    assert normalizer.surely_unchanged("plain ASCII") and not normalizer.surely_unchanged("e\u0301")
    assert not normalizer.surely_unchanged("\u1100\u1161")            # jamo that compose
    assert normalizer.surely_unchanged("naïve “café”") == (form in ("NFC", "NFKC"))


def test_a_duplicate_merge_takes_its_last_rank(base, tmp_path):
    # ["b c", "a b", "b c"] on "abc": tokenizers gives "ab c" (the pair's last rank).
    document = copy.deepcopy(base)
    model = document["model"]
    merges = model["merges"]
    first = merges[0]
    model["merges"] = merges[1:40] + [first] + merges[40:]
    path = write_json(tmp_path / "tokenizer.json", document)
    ours, theirs = bpe.load(path), tokenizers.Tokenizer.from_file(path)
    for text in TEXTS:
        assert ours.encode(text) == theirs.encode(text, add_special_tokens=False).ids


REFUSED = [
    (lambda d: d.update(normalizer={"type": "BertNormalizer"}), r"normalizer: 'BertNormalizer' is not a normalizer"),
    (lambda d: d.update(normalizer={"type": "Replace", "pattern": {"Regex": "x*"}, "content": "y"}),
     r"normalizer.pattern: can match the empty string"),
    (lambda d: d.update(normalizer="NFC"), r"normalizer: is 'NFC', not an object with a type"),
    (lambda d: d.update(pre_tokenizer={"type": "Metaspace"}), r"model.byte_fallback: is False: with no ByteLevel step this is BPE over characters"),
    (lambda d: d.update(pre_tokenizer=sequence(split(r"\p{N}{1,3}+"), BYTE_LEVEL)),
     r"repeats the interval"),
    (lambda d: d.update(pre_tokenizer=sequence(split(r"(?i:ss)"), BYTE_LEVEL)), r"folds case"),
    (lambda d: d.update(pre_tokenizer=sequence(split(r"\pL"), BYTE_LEVEL)), r"without braces"),
    (lambda d: d.update(pre_tokenizer=sequence(split(r"[a-z&&[^aeiou]]"), BYTE_LEVEL)), r"class intersection"),
    (lambda d: d.update(pre_tokenizer=sequence(split(r"[[:alpha:]]"), BYTE_LEVEL)), r"nested class"),
    (lambda d: d.update(pre_tokenizer=sequence(split("abc", "Sideways"), BYTE_LEVEL)), r"behavior: is 'Sideways'"),
    (lambda d: d.update(pre_tokenizer=sequence({"type": "Split", "pattern": "abc", "behavior": "Isolated",
                                                "invert": False}, BYTE_LEVEL)),
     r"pretokenizers\[0\].pattern: is 'abc', not"),
    (lambda d: d.update(pre_tokenizer={"type": "Sequence", "pretokenizers": 5}),
     r"pre_tokenizer.pretokenizers: is 5, not a list"),
    (lambda d: d.update(pre_tokenizer=split(r"\s+")), r"model.byte_fallback: is False: with no ByteLevel step"),
    (lambda d: d.update(pre_tokenizer=sequence({**BYTE_LEVEL, "use_regex": False}, split(" "))),
     r"pre_tokenizer: has 'Split' after ByteLevel: tokenizers splits the byte-level text"),
    (lambda d: d.update(decoder="ByteLevel"), r"decoder: is 'ByteLevel', not an object"),
    (lambda d: d.update(decoder={"type": "WordPiece"}), r"decoder: 'WordPiece' is not ByteLevel"),
    (lambda d: d.update(post_processor={"type": "Nope"}), r"post_processor: 'Nope' is not a post-processor"),
    (lambda d: d.update(truncation={"max_length": 8}), r"truncation: is set"),
    (lambda d: d["model"].update(type="WordPiece"), r"model.type: is 'WordPiece'"),
    (lambda d: d["model"].update(dropout=0.1), r"model.dropout: is 0.1"),
    (lambda d: d["model"].update(continuing_subword_prefix="##"), r"model.continuing_subword_prefix"),
    (lambda d: d["model"]["vocab"].update({"Ġzz": 1 << 40}), r"id 1099511627776 is not in \[0, "),
    (lambda d: d["model"]["merges"].append("a b"), r"model.merges: mixes 'a b' strings and \[a, b\] pairs"),
    (lambda d: d["model"]["merges"].append(["a", "b", "c"]), r"model.merges\[\d+\]: \['a', 'b', 'c'\] is not"),
    (lambda d: d["model"]["merges"].append(["q", "zz"]), r"model.merges\[\d+\]: 'zz' is not in the vocabulary"),
    (lambda d: d.update(added_tokens=[{**added("<s>"), "id": 5}]), r"added_tokens\[0\].id: is 5, but tokenizers"),
    (lambda d: d.update(added_tokens=[added("<x>", rstrip=True), added(" y")]), r"emits that space twice"),
    (lambda d: d.update(normalizer=LOWER, added_tokens=[added("AB", normalized=True), added("ab", normalized=True)]),
     r"normalize alike"),
]


@pytest.mark.parametrize("change, message", REFUSED)
def test_what_is_not_reproduced_exactly_is_refused_naming_the_field(base, tmp_path, change, message):
    document = copy.deepcopy(base)
    for index, token in enumerate(document.get("added_tokens") or []):
        token.setdefault("id", len(document["model"]["vocab"]) + index)
    change(document)
    for index, token in enumerate(document.get("added_tokens") or []):
        token.setdefault("id", len(document["model"]["vocab"]) + index)
    path = write_json(tmp_path / "tokenizer.json", document)
    with pytest.raises(bpe.errors.TokenizerFileError, match=rf"tokenizer.json: .*{message}"):
        bpe.load(path)
