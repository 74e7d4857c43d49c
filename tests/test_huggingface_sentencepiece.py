"""SentencePiece-style BPE in Hugging Face's ``tokenizer.json`` (Llama 2, Mistral 7B
as ``transformers`` converts them) read and encoded exactly as ``tokenizers`` does.

Each file is made here from a SentencePiece model the way ``transformers``
converts one, in the three forms converted files take (``sentencepiece_json``).
``tokenizers``, given the same file, is the reference: its ids, its decoding.
"""
import json
import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpe
from bpe.errors import TokenizerFileError
from bpe.sentencepiece import HuggingFaceSentencePiece

tokenizers = pytest.importorskip("tokenizers")
pytest.importorskip("sentencepiece")

from sentencepiece_json import FORMS, SPACE, to_tokenizer_json  # noqa: E402
from test_sentencepiece import (ADVERSARIAL, ATOMS, MISTRAL, SHAKESPEARE, WORLD, ids_in_a_fresh_process,  # noqa: E402
                                train)


def pair(tmp_path, data: bytes, form: str):
    path = tmp_path / f"{form}.json"
    path.write_text(to_tokenizer_json(data, form), encoding="utf-8")
    return bpe.Tokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))


@pytest.fixture(scope="module")
def trained():
    return train(byte_fallback=True)


@pytest.fixture(scope="module", params=FORMS)
def files(request, trained, tmp_path_factory):
    return pair(tmp_path_factory.mktemp("hf"), trained, request.param)


def test_adversarial_texts_match_tokenizers(files):
    tok, reference = files
    assert isinstance(tok, HuggingFaceSentencePiece)
    texts = ADVERSARIAL + ["<s>", "a<s>b", "<s> a", " </s>", "<unk><unk>", "[X][X] x", "<0x41>"]
    for text in texts:
        for add in (False, True):
            ids = reference.encode(text, add_special_tokens=add).ids
            assert tok.encode(text, add_special_tokens=add) == ids, (text, add)
            assert tok.encode_to_numpy(text, add_special_tokens=add).tolist() == ids
        ids = reference.encode(text, add_special_tokens=False).ids
        for skip in (False, True):
            assert tok.decode(ids, skip_special_tokens=skip) == reference.decode(ids, skip_special_tokens=skip)
    expected = [e.ids for e in reference.encode_batch(texts, add_special_tokens=False)]
    assert tok.encode_batch(texts) == expected
    assert [a.tolist() for a in tok.encode_batch_to_numpy(texts)] == expected


def test_pickled_it_encodes_alike_in_another_process(files):
    tok, reference = files
    texts = ["<s> a", "Hello  world 日本", "\u2581x", WORLD[:200]]
    got = ids_in_a_fresh_process(tok, texts, add_special_tokens=True)
    assert got == [e.ids for e in reference.encode_batch(texts, add_special_tokens=True)]


def test_what_tokenizer_offers_works_alike_here(files):
    tok, reference = files
    texts = [WORLD[k:k + 900] for k in range(0, 300 * 7, 7)] + ["<s> a", "a</s>", ""]
    expected = [e.ids for e in reference.encode_batch(texts, add_special_tokens=False)]
    for threads in (None, 1, 2):
        assert tok.encode_batch(texts, num_threads=threads) == expected
        arrays = tok.encode_batch_to_numpy(texts, num_threads=threads)
        assert [a.tolist() for a in arrays] == expected and {a.dtype for a in arrays} == {np.dtype(np.uint16)}
    assert tok.encode_to_numpy("<s> a", add_special_tokens=True, dtype=np.uint32).tolist() == \
        reference.encode("<s> a", add_special_tokens=True).ids
    ids = reference.encode(WORLD[:300], add_special_tokens=True).ids
    assert tok.decode_bytes(ids) == reference.decode(ids, skip_special_tokens=False).encode("utf-8")
    assert list(tok.encode_iterable([WORLD[:50], WORLD[50:120]])) == expected_ids(reference, WORLD[:120])
    with pytest.raises(TypeError, match="text is bytes, not str"):
        tok.encode(b"hello")
    with pytest.raises(TypeError, match=r"texts\[1\] text is bytes, not str"):
        tok.encode_batch_to_numpy(["a", b"b"])


def expected_ids(reference, text):
    return reference.encode(text, add_special_tokens=False).ids


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(atoms=st.lists(st.sampled_from(ATOMS + ["<sep>", " <s>", "\u2581\u2581"]), max_size=40),
       text=st.text(st.characters(exclude_categories=("Cs",)), max_size=40))
def test_random_texts_match_tokenizers(files, atoms, text):
    tok, reference = files
    for sample in ("".join(atoms), text, "".join(atoms) + text):
        assert tok.encode(sample) == reference.encode(sample, add_special_tokens=False).ids, sample


def detached_copy(tok):
    """A copy of ``tok`` whose attributes a test may change alone: ``copy.copy``
    goes by pickling's ``__reduce__``, which hands back the one tokenizer this
    process last rebuilt with that key, the same object each time."""
    clone = object.__new__(type(tok))
    clone.__dict__.update(tok.__dict__)
    return clone


class StepsOnlySearch:
    """A ``Pipeline`` that only finds added tokens: running its steps on a text fails."""

    def __init__(self, pipeline):
        self._pipeline = pipeline

    def __getattr__(self, name):
        return getattr(self._pipeline, name)

    def pieces(self, *args, **kwargs):
        raise AssertionError("the steps ran in Python")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(st.sampled_from("ab <s>\u2581日旦\n"), max_size=12), max_size=5))
def test_texts_without_added_tokens_take_the_bytes_path_and_match_the_general_one(files, texts):
    """Where a text holds no added token and the steps allow, they run on its
    UTF-8 (``characters.bytewise``); the steps run as ``Pipeline`` runs them give
    the same ids (and Metaspace that splits always takes that way)."""
    tok, reference = files
    general = detached_copy(tok)
    general._bytewise = None
    general._str_calls = None
    assert (tok._bytewise is None) == (tok._pipeline.pre_tokenizer.steps[:1] != [] and
                                       tok._pipeline.pre_tokenizer.steps[0].get("split", True))
    expected = [e.ids for e in reference.encode_batch(texts, add_special_tokens=False)]
    assert tok.encode_batch(texts) == expected
    assert general.encode_batch(texts) == expected
    assert [general.encode(text) for text in texts] == expected


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.lists(st.sampled_from(["a", "b", " ", "<s>", "</s>", SPACE, "日", "\n", "\t", "é"]),
                               max_size=12).map("".join), max_size=5))
def test_the_kernel_normalizes_a_str_where_the_steps_are_sentencepieces(files, texts):
    """Where the steps only write spaces as ``▁`` and put one in front (a
    Prepend and a Replace: Llama 2's and Mistral's files), the kernel makes
    its text from the str itself (``ShortCalls.metaspace_to_list``), as for a
    ``.model`` file, and so does the batch's call for texts holding no added
    token, and for a text too long for the one-text call; a text holding an
    added token takes the bytes' path. Each gives tokenizers' ids, as lists
    and arrays."""
    tok, reference = files
    form = os.path.basename(tok.source)
    assert (tok._str_calls is not None) == (form == "prepend_replace.json")
    if tok._str_calls is None:
        return
    assert tok._str_prefix is True
    bytes_only = detached_copy(tok)
    bytes_only._str_calls = None
    for text in texts:
        expected = reference.encode(text, add_special_tokens=False).ids
        assert tok.encode(text) == expected, text
        assert tok.encode_to_numpy(text).tolist() == expected
        assert bytes_only.encode(text) == expected
    long_text = "a b\u2581日 " * (tok._str_calls.longest // 6 + 1)
    assert tok._str_calls.metaspace_to_list(long_text, True) is None       # too long for the call
    kernel_only = detached_copy(tok)            # the kernel makes these texts: never their bytes here
    kernel_only._bytewise = None
    kernel_only._pipeline = StepsOnlySearch(tok._pipeline)
    plain = [text for text in texts if "<s>" not in text and "</s>" not in text] + [long_text]
    expected = [reference.encode(text, add_special_tokens=False).ids for text in plain]
    assert kernel_only.encode(long_text) == expected[-1]
    assert kernel_only.encode_to_numpy(long_text).tolist() == expected[-1]
    assert kernel_only.encode_batch(plain) == expected
    assert tok.encode_batch(texts + [long_text]) == [reference.encode(text, add_special_tokens=False).ids
                                                     for text in texts + [long_text]]


@pytest.mark.parametrize("normalizer, pre_tokenizer, prefix", [
    ({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": SPACE},
                                          {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]},
     None, True),
    ({"type": "Replace", "pattern": {"String": " "}, "content": SPACE}, None, False),
    ({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": SPACE + SPACE},
                                          {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]},
     None, None),
    ({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": SPACE},
                                          {"type": "Replace", "pattern": {"String": "a"}, "content": "b"}]},
     None, None),
    (None, {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "first", "split": False}, None),
    (None, {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "never", "split": False}, False),
])
def test_the_kernel_normalizes_a_str_only_where_the_steps_allow(tmp_path, normalizer, pre_tokenizer, prefix):
    # A Metaspace that prepends adds no ▁ where the text starts with one:
    # not SentencePiece's rule, which the kernel's call follows.
    tok, reference = small_file(tmp_path, normalizer=normalizer, pre_tokenizer=pre_tokenizer)
    assert (None if tok._str_calls is None else tok._str_prefix) is prefix
    for text in ["", " ", "a", " a  a", SPACE + "a", "aa b\u65e5", "\ta\n"]:
        assert tok.encode(text) == reference.encode(text, add_special_tokens=False).ids, text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_decode_of_any_ids_matches_tokenizers(files, data):
    """Byte tokens that make no character, added tokens, ids past the vocabulary
    (left out), with and without skipping special tokens."""
    tok, reference = files
    ids = data.draw(st.lists(st.integers(0, reference.get_vocab_size() + 2), max_size=30))
    for skip in (False, True):
        assert tok.decode(ids, skip_special_tokens=skip) == reference.decode(ids, skip_special_tokens=skip), ids


@pytest.fixture(scope="module")
def pair_ranked(tmp_path_factory):
    """``abc`` from ``ab`` + ``c`` (listed 2nd) and from ``a`` + ``bc`` (4th),
    with ``bc`` + ``d`` (3rd) between."""
    vocab = {"<unk>": 0, **{f"<0x{b:02X}>": 1 + b for b in range(256)}}
    for text in ["a", "b", "c", "d", "ab", "bc", "abc", "bcd", SPACE, SPACE + "a"]:
        vocab[text] = len(vocab)
    document = json.loads(to_tokenizer_json(train(byte_fallback=True), "metaspace_first"))
    document["added_tokens"] = []
    document["post_processor"] = None
    document["model"]["vocab"] = vocab
    document["model"]["merges"] = [["b", "c"], ["ab", "c"], ["bc", "d"], ["a", "bc"], ["a", "b"], [SPACE, "a"]]
    path = tmp_path_factory.mktemp("pairs") / "tokenizer.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return bpe.load(path), tokenizers.Tokenizer.from_file(str(path))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text("abcd ", max_size=16))
def test_merges_rank_pairs_not_tokens(pair_ranked, text):
    """Hugging Face ranks each pair, not the token it makes: in ``abcd``, ``bc``
    + ``d`` (3rd) merges before ``a`` + ``bc`` (4th), though ``abc`` was first
    made by the 2nd."""
    tok, reference = pair_ranked
    assert tok.encode(text) == reference.encode(text, add_special_tokens=False).ids
    assert tok.encode("abcd") == reference.encode("abcd", add_special_tokens=False).ids


@pytest.fixture(scope="module", params=["data/tokenizer.model.v1", "data/mistral_instruct_tokenizer_240323.model.v3"])
def mistral(request, tmp_path_factory):
    from fetched import member

    with open(member(MISTRAL, "mistral_common/" + request.param), "rb") as file:
        data = file.read()
    return pair(tmp_path_factory.mktemp("mistral"), data, "prepend_replace")


def test_mistral_files_match_tokenizers(mistral):
    tok, reference = mistral
    docs = open(SHAKESPEARE, encoding="utf-8").read()[:200_000].split("\n\n") + WORLD.split(". ")
    texts = ADVERSARIAL + ["[INST] What is 2+2? [/INST]", "<s>[INST] hi [/INST]</s>", " " * 33 + "indented"]
    for text in texts:
        assert tok.encode(text, add_special_tokens=True) == reference.encode(text).ids, text
    expected = [e.ids for e in reference.encode_batch(docs, add_special_tokens=False)]
    assert tok.encode_batch(docs) == expected
    ids = [i for e in expected[:50] for i in e]
    assert tok.decode(ids) == reference.decode(ids, skip_special_tokens=False)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(atoms=st.lists(st.sampled_from(ATOMS + ["[INST]", "\u2581\u2581\u2581", "\t\t"]), max_size=50),
       text=st.text(st.characters(exclude_categories=("Cs",)), max_size=60))
def test_mistral_files_on_random_text(mistral, atoms, text):
    tok, reference = mistral
    for sample in ("".join(atoms), text):
        assert tok.encode(sample) == reference.encode(sample, add_special_tokens=False).ids, sample


def test_corpora_and_the_command(tmp_path, trained):
    """encode_file writes each record's ids (with the post-processor's when asked),
    and the real ``bpe`` command reads such a file."""
    import subprocess
    import sys

    tok, reference = pair(tmp_path, trained, "prepend_replace")
    records = ["First record.", "", "<s>second  one", WORLD[:300]]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": text}) + "\n" for text in records), encoding="utf-8")
    tok.encode_file([corpus], tmp_path / "ids.bin", add_special_tokens=True, num_workers=2)
    expected = [i for text in records for i in reference.encode(text).ids]
    assert bpe.open_tokens(tmp_path / "ids.bin").tolist() == expected
    result = subprocess.run([sys.executable, "-m", "bpe", "encode", str(corpus), "--tokenizer",
                             str(tmp_path / "prepend_replace.json"), "-o", str(tmp_path / "cli.bin"), "--quiet"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    plain = [i for text in records for i in reference.encode(text, add_special_tokens=False).ids]
    assert np.asarray(bpe.open_tokens(tmp_path / "cli.bin")).tolist() == plain

    def run(*args):
        return subprocess.run([sys.executable, "-m", "bpe", *args], capture_output=True, text=True, cwd=tmp_path)

    result = run("decode", "cli.bin", "--tokenizer", "prepend_replace.json")
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip("\n") == reference.decode(plain, skip_special_tokens=False)
    result = run("show", "--text", "<s>hi there", "--tokenizer", "prepend_replace.json", "--ids")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "ids: " + " ".join(map(str, reference.encode("<s>hi there").ids[1:]))
    result = run("inspect", "prepend_replace.json")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[1] == str(reference.get_vocab_size())
    result = run("encode", "corpus.jsonl", "--tokenizer", "prepend_replace.json", "-o", "shards", "--shard-mb", "1")
    assert result.returncode != 0 and "leave out --shard-mb" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("change, field", [
    (lambda d: d["model"].update(byte_fallback=False), "model.byte_fallback"),
    (lambda d: d["model"]["vocab"].pop("<0x41>"), "model.vocab"),
    (lambda d: d["model"].update(ignore_merges=True), "model.ignore_merges"),
    (lambda d: d["model"].update(dropout=0.1), "model.dropout"),
    (lambda d: d["model"]["merges"].append(["<0x41>", "<0x42>"]), "model.merges"),
    (lambda d: d.update(pre_tokenizer={"type": "Whitespace"}), "pre_tokenizer"),
    (lambda d: d.update(decoder={"type": "WordPiece"}), "decoder"),
    (lambda d: d["decoder"]["decoders"][3].update(stop=1), "decoder.decoders[3].stop"),
    (lambda d: d.update(normalizer={"type": "Strip", "strip_left": True, "strip_right": False},
                        pre_tokenizer={"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "first"}),
     "pre_tokenizer.prepend_scheme"),
    (lambda d: d["added_tokens"].append(dict(d["added_tokens"][1], special=False)), "added_tokens[5]"),
    (lambda d: d["model"]["vocab"].update({"far": 1 << 24}), "model.vocab"),
])
def test_what_bpe_does_not_read_is_refused_naming_the_field(tmp_path, trained, change, field):
    document = json.loads(to_tokenizer_json(trained, "prepend_replace"))
    change(document)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(TokenizerFileError, match=re.escape(f"{os.fspath(path)}: {field}")):
        bpe.load(path)


def small_file(tmp_path, **changes):
    """A tokenizer.json of a few tokens, with ``changes`` to its top-level fields."""
    vocab = {"<unk>": 0, **{f"<0x{b:02X}>": 1 + b for b in range(256)}, SPACE: 257, "a": 258, "<x>": 259}
    document = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
                "pre_tokenizer": None, "post_processor": None, "decoder": None,
                "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                          "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True,
                          "ignore_merges": False, "vocab": vocab, "merges": [[SPACE, "a"]]}}
    document["model"]["vocab"][SPACE + "a"] = 260
    document.update(changes)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return bpe.load(path), tokenizers.Tokenizer.from_file(str(path))


@pytest.mark.parametrize("normalizer", [{"type": "Prepend", "prepend": SPACE}, {"type": "Lowercase"}])
@pytest.mark.parametrize("special", [False, True])
def test_an_added_token_decodes_as_it_is_matched(tmp_path, normalizer, special):
    """A normalized added token decodes to its normalized form, which is not a
    special token's text, so skip_special_tokens keeps it (tokenizers' rules);
    one found in the vocabulary too decodes the same way."""
    added = [{"id": 259, "content": "<x>", "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": True, "special": special},
             {"id": 261, "content": "X", "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": True, "special": special}]
    tok, reference = small_file(tmp_path, normalizer=normalizer, added_tokens=added)
    for ids in ([258, 259], [259, 261, 258], [261]):
        for skip in (False, True):
            assert tok.decode(ids, skip_special_tokens=skip) == reference.decode(ids, skip_special_tokens=skip)
    for text in ["a<x>a", "X a", "<X>"]:
        assert tok.encode(text) == reference.encode(text, add_special_tokens=False).ids


def test_decoding_an_id_that_is_no_token_id_is_refused(tmp_path):
    tok, reference = small_file(tmp_path)
    assert tok.decode([258, 10**6]) == reference.decode([258, 10**6], skip_special_tokens=False)   # left out
    with pytest.raises(ValueError, match="id -1 is not a token id"):
        tok.decode([258, -1])
