"""Hugging Face tokenizer.json, both ways: files trained by ``tokenizers`` itself
and bpe's own exports are read back and encode id for id as ``tokenizers``
does; what bpe cannot represent exactly is refused, naming the field."""
import json
import os
import subprocess
import sys

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

import bpe

from conftest import SHAKESPEARE, random_corpus
from test_native_pretok import PIECES

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Regex, decoders, models, pre_tokenizers, trainers  # noqa: E402

EOT = "<|endoftext|>"
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
CORPUS = open(SHAKESPEARE, encoding="utf-8").read()[:300_000] + random_corpus(4, n_words=3000, special=EOT)
text_strategy = st.lists(st.sampled_from(PIECES + [EOT, "<|pad|>", " hello", "world", "\n\n", "  "]),
                         max_size=40).map("".join)


def hf_trained(pre_tokenizer, *, ignore_merges=False, vocab_size=700):
    tok = tokenizers.Tokenizer(models.BPE(ignore_merges=ignore_merges))
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOT, "<|pad|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([CORPUS], trainer)
    return tok


SETUPS = {
    "bytelevel-regex": lambda: hf_trained(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)),
    "split-llama3": lambda: hf_trained(pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]), ignore_merges=True),
}


@pytest.fixture(scope="module", params=sorted(SETUPS))
def trained_pair(request, tmp_path_factory):
    theirs = SETUPS[request.param]()
    directory = tmp_path_factory.mktemp(request.param)
    theirs.save(str(directory / "tokenizer.json"))
    return bpe.load(directory), theirs


@settings(max_examples=200, deadline=None)
@given(text=text_strategy)
def test_files_trained_by_tokenizers_encode_identically(trained_pair, text):
    ours, theirs = trained_pair
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")   # tokenizers takes no surrogates
    assert ours.encode(text) == theirs.encode(text).ids
    assert ours.decode(ours.encode(text)) == theirs.decode(theirs.encode(text).ids, skip_special_tokens=False)


def test_trained_files_on_real_text(trained_pair):
    ours, theirs = trained_pair
    text = open(SHAKESPEARE, encoding="utf-8").read()[300_000:400_000] + "日本語 😀 naïve"
    assert ours.encode(text) == theirs.encode(text).ids
    assert ours.special_tokens == {EOT: theirs.token_to_id(EOT), "<|pad|>": theirs.token_to_id("<|pad|>")}


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base", "o200k", "deepseek_v3"])
def test_our_exports_read_back_exactly(name, tmp_path):
    # (A pattern's name: trained with it. DeepSeek V3's three Splits go out as one.)
    tok = bpe.load(name) if name.endswith("_base") or name == "gpt2" else bpe.train_from_iterator(
        [CORPUS + "日本語ー・゠カナ"], 256 + 2 + 300, [EOT, "<|pad|>"], pattern=name, num_workers=1)
    path = tok.to_huggingface(tmp_path)
    back = bpe.Tokenizer.from_huggingface(path)
    # Read back by Hugging Face's rule (its merges, ignore_merges), the same
    # vocabulary, merges, special tokens and pattern (the built-in, not a regex).
    assert (back.vocab, back.merges, back.special_tokens, back.pattern) == \
        (tok.vocab, tok.merges, tok.special_tokens, tok.pattern)
    text = CORPUS[:20_000] + "\n\n  x  1234567 <|endoftext|> 日本語ー・゠カナ .NET\x00\x01a"
    assert back.encode(text) == tok.encode(text) == tokenizers.Tokenizer.from_file(path).encode(text).ids


def write(tmp_path, document, name="tokenizer.json"):
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    path = bpe.train_from_iterator([CORPUS], 256 + 1 + 100, [EOT], num_workers=1).to_huggingface(
        tmp_path_factory.mktemp("export") / "tokenizer.json")
    return json.loads(open(path, encoding="utf-8").read())


def swap_dependent_merges(merges):
    """Move a merge before the merge that makes one of its parts."""
    made = {}
    for index, merge in enumerate(merges):
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        for part in (left, right):
            if part in made:
                earlier = made[part]
                merges[earlier], merges[index] = merges[index], merges[earlier]
                return
        made[left + right] = index


@pytest.mark.parametrize("change, field", [
    (lambda d: d["model"].update(type="WordPiece"), "model.type: is 'WordPiece'"),
    (lambda d: d["model"].update(dropout=0.1), "model.dropout: is 0.1"),
    (lambda d: d["model"].update(continuing_subword_prefix="##"), "model.continuing_subword_prefix"),
    (lambda d: d["model"].update(end_of_word_suffix="</w>"), "model.end_of_word_suffix"),
    (lambda d: d.update(pre_tokenizer={"type": "Metaspace", "replacement": "▁"}), "model.byte_fallback: is False: with no ByteLevel step this is BPE over characters"),
    (lambda d: d.update(pre_tokenizer=None), "model.byte_fallback: is False: with no ByteLevel step"),
    (lambda d: d["model"]["vocab"].update({"Ġzz": 1 << 40}), r"model.vocab\['Ġzz'\]: id 1099511627776 is not in \[0, "),
])
def test_what_cannot_be_read_exactly_is_refused(exported, tmp_path, change, field):
    document = json.loads(json.dumps(exported))
    change(document)
    with pytest.raises(bpe.errors.TokenizerFileError, match=rf"tokenizer.json: .*{field}"):
        bpe.Tokenizer.from_huggingface(write(tmp_path, document))


@pytest.mark.parametrize("ignore_merges", [False, True])
@pytest.mark.parametrize("change", ["unreachable token", "merges out of order", "two merges, one token"])
def test_merges_decide_as_in_tokenizers(exported, tmp_path, change, ignore_merges):
    # Hugging Face's rule: only listed pairs merge, in list order, whatever the
    # vocabulary's ids say; a word that is a token maps to it only with ignore_merges.
    document = json.loads(json.dumps(exported))
    model = document["model"]
    if change == "unreachable token":
        model["vocab"]["Ġunreachable"] = len(model["vocab"]) + 1
    elif change == "merges out of order":
        swap_dependent_merges(model["merges"])
    else:
        vocab = model["vocab"]
        for merge in model["merges"]:
            left, right = merge.split(" ") if isinstance(merge, str) else merge
            if len(left) > 1:                    # left = a + b: add "a b+right" too
                for split in range(1, len(left)):
                    a, b = left[:split], left[split:] + right
                    if a in vocab and b in vocab:
                        model["merges"].append(f"{a} {b}" if isinstance(merge, str) else [a, b])
                        break
    model["ignore_merges"] = ignore_merges
    ours = bpe.Tokenizer.from_huggingface(write(tmp_path, document))
    theirs = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in [CORPUS[:5000], "an unreachable word", " unreachable", "Ġunreachable"]:
        assert ours.encode(text) == theirs.encode(text).ids


def test_both_merge_serialisations_are_read(exported, tmp_path):
    document = json.loads(json.dumps(exported))
    as_pairs = bpe.Tokenizer.from_huggingface(write(tmp_path, document, "a.json"))
    document["model"]["merges"] = [" ".join(pair) if isinstance(pair, list) else pair
                                   for pair in document["model"]["merges"]]
    as_strings = bpe.Tokenizer.from_huggingface(write(tmp_path, document, "b.json"))
    assert as_pairs == as_strings


def test_the_command_line_takes_a_tokenizer_json_directory(trained_pair, tmp_path):
    ours, theirs = trained_pair
    directory = tmp_path / "hf"
    directory.mkdir()
    theirs.save(str(directory / "tokenizer.json"))
    (tmp_path / "in.txt").write_text(CORPUS[:5000], encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "bpe", "count", str(tmp_path / "in.txt"), "--tokenizer",
                             f"gpt2,{directory}"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert str(len(theirs.encode(CORPUS[:5000]).ids)) in result.stdout.splitlines()[2]
    result = subprocess.run([sys.executable, "-m", "bpe", "encode", str(tmp_path / "in.txt"), "--tokenizer",
                             str(directory / "tokenizer.json"), "-o", str(tmp_path / "out.bin"), "--quiet"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert bpe.open_tokens(tmp_path / "out.bin").tolist() == theirs.encode(CORPUS[:5000]).ids


def test_export_directory_is_what_transformers_loads(tmp_path):
    tok = bpe.train_from_iterator([CORPUS], 256 + 2 + 100, [EOT, "<|pad|>"], num_workers=1)
    path = tok.to_huggingface(tmp_path / "new" / "model", pad_token="<|pad|>")
    assert path == str(tmp_path / "new" / "model" / "tokenizer.json")
    config = json.loads((tmp_path / "new" / "model" / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["eos_token"] == EOT and config["pad_token"] == "<|pad|>" and "bos_token" not in config
    assert json.loads((tmp_path / "new" / "model" / "special_tokens_map.json").read_text(encoding="utf-8")) == \
        {"eos_token": EOT, "pad_token": "<|pad|>"}
    with pytest.raises(ValueError, match="bos_token '<s>' is not a special token"):
        tok.to_huggingface(tmp_path / "other", bos_token="<s>")
    transformers = pytest.importorskip("transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    loaded = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "new" / "model"))
    assert loaded.eos_token == EOT and loaded.pad_token == "<|pad|>"
    assert loaded.eos_token_id == tok.special_tokens[EOT]
    text = CORPUS[:3000] + EOT + " tail"
    assert loaded(text, add_special_tokens=False)["input_ids"] == tok.encode(text)
