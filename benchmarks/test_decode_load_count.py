"""Loading a vocabulary (in a fresh process), decoding ids to text, and counting tokens: bpe against
every installed peer, the same vocabulary and input for all, results compared
with bpe's after timing."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import bpe
from _measure import fresh_copies
from conftest import describe, require
from peers import factory, rank_file, tokenizer_json, use_shipped_files_in_tiktoken

NAMES = ["gpt2", "cl100k_base", "o200k_base"]
PEERS = ["tiktoken", "gigatoken", "tokenizers"]


def make(library: str, name: str):
    """A factory of fresh encoders of ``library`` for the vocabulary ``name``."""
    if library == "bpe":
        return lambda: bpe.load(name)
    require(library)
    return factory(library, name)


#: A fresh process: import, load ``name``, encode ``text``, print the ids; and the call, said short.
FIRST_ENCODE = {
    "bpe": ("import bpe; ids = bpe.load({name!r}).encode({text!r})", "bpe.load(name)"),
    "tiktoken": ("import tiktoken; ids = tiktoken.get_encoding({name!r}).encode({text!r})",
                 "tiktoken.get_encoding(name)"),
    "gigatoken": ("import gigatoken; ids = gigatoken.Tokenizer{opener}({path!r}).encode({text!r}).tolist()",
                  "Tokenizer.from_tiktoken(path) (gpt2: Tokenizer(tokenizer.json))"),
    "tokenizers": ("import tokenizers; ids = tokenizers.Tokenizer.from_file({path!r}).encode({text!r}).ids",
                   "Tokenizer.from_file(tokenizer.json)"),
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("library", ["bpe"] + PEERS)
def test_load(benchmark, settings, library, name):
    """Import, load and a first encode in a fresh process: what a script pays
    before its first text (each library caches loaded vocabularies per
    process, so only a new process starts cold). bpe and tiktoken read the
    shipped files; gigatoken the rank files (gpt2: bpe's tokenizer.json
    export), Hugging Face bpe's export."""
    if library != "bpe":
        require(library)
    use_shipped_files_in_tiktoken()
    path = tokenizer_json(name) if library == "tokenizers" or name == "gpt2" else rank_file(name)
    template, call = FIRST_ENCODE[library]
    code = template.format(name=name, text="hello world", path=path, opener="" if name == "gpt2" else ".from_tiktoken")
    describe(benchmark, f"import, load and first encode in a fresh process, {name}", library, call, "list", 0)
    argv = [sys.executable, "-c", code + "; print(list(ids))"]
    # Imports read compiled bytecode, as from an installed package (pip compiles it): the
    # untimed first run writes it, even where the environment says not to.
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    run = {"check": True, "capture_output": True, "text": True, "env": environment}
    subprocess.run(argv, **run)
    done = benchmark.pedantic(subprocess.run, args=(argv,), kwargs=run, rounds=settings["rounds"])
    assert json.loads(done.stdout) == bpe.load(name).encode("hello world")


#: (library, the call, what it returns, decode)
DECODERS = [
    ("bpe", "decode(ids)", "str", lambda t, ids: t.decode(ids)),
    ("bpe", "decode_bytes(ids)", "bytes", lambda t, ids: t.decode_bytes(ids)),
    ("tiktoken", "decode(ids)", "str", lambda t, ids: t.decode(ids)),
    ("tiktoken", "decode_bytes(ids)", "bytes", lambda t, ids: t.decode_bytes(ids)),
    ("gigatoken", "decode(ids)", "bytes", lambda t, ids: t.decode(ids)),
    ("gigatoken", "decode(ids).decode()", "str", lambda t, ids: t.decode(ids).decode("utf-8", "replace")),
    ("tokenizers", "decode(ids, skip_special_tokens=False)", "str",
     lambda t, ids: t.decode(ids, skip_special_tokens=False)),
]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("candidate", DECODERS, ids=lambda c: f"{c[0]} {c[1]}")
def test_decode(benchmark, sample, settings, candidate, name):
    """All the sample's ids (a list) back to its text."""
    library, call, output, decode = candidate
    ids = bpe.load(name).encode(sample.text)
    decoder = make(library, name)()
    describe(benchmark, f"decode a list of ids, {name}", library, call, output, sample.mb)
    text = benchmark.pedantic(decode, args=(decoder, ids), rounds=settings["rounds"], warmup_rounds=1)
    assert text == (sample.text if output == "str" else sample.text.encode("utf-8"))


COUNTERS = {"bpe": ("count(text)", lambda t, s: t.count(s)),
            "tiktoken": ('len(encode(text, allowed_special="all"))',
                         lambda t, s: len(t.encode(s, allowed_special="all"))),
            "gigatoken": ("len(encode(text))", lambda t, s: len(t.encode(s))),
            "tokenizers": ("len(encode(text).ids)", lambda t, s: len(t.encode(s).ids))}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("library", list(COUNTERS))
def test_count(benchmark, sample, settings, library, name):
    """How many tokens the sample has, cold (one text in one call), its
    <|endoftext|> read as the special token by all."""
    fresh = make(library, name)
    call, count = COUNTERS[library]
    describe(benchmark, f"count the tokens of one text, cold, {name}", library, call, "int", sample.mb)
    total = benchmark.pedantic(count, setup=lambda: ((fresh(), fresh_copies([sample.text])[0]), {}),
                               rounds=settings["rounds"])
    assert total == len(bpe.load(name).encode(sample.text))
