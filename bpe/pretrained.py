"""The pretrained vocabularies shipped in the package (offline): every encoding
tiktoken knows (gpt2 and r50k_base, p50k_base, p50k_edit, cl100k_base,
o200k_base, o200k_harmony), and which of them each OpenAI model uses.

Three files make them all: GPT-2's ``encoder.json`` (whose ids are its ranks:
``tests/test_formats.py`` checks that its ``vocab.bpe`` is what the ranks
recover) and tiktoken's rank files of cl100k_base and o200k_base. The others
are these with a few tokens more, as tiktoken defines them: p50k_base is
GPT-2's ranks and the runs of 2 to 25 spaces (``tests/test_tiktoken_module.py``
checks that written out it is tiktoken's file, byte for byte), p50k_edit adds
three special tokens to it, o200k_harmony gpt-oss's special tokens to o200k.
``pretrained_table(name)`` reads one's ordinary tokens as a ``RankTable``.
"""
from __future__ import annotations

import os

import numpy as np

from bpe.flat import RankTable, flatten
from bpe.formats.gpt2 import read_gpt2_table
from bpe.formats.rankfile import read_tiktoken_table

DATA = os.path.join(os.path.dirname(__file__), "data")

ENDOFTEXT = "<|endoftext|>"
FIM = {"<|fim_prefix|>": 50281, "<|fim_middle|>": 50282, "<|fim_suffix|>": 50283}


def _harmony_special_tokens() -> dict[str, int]:
    """gpt-oss's special tokens, in tiktoken's order: o200k's two, then the rest.
    ``<|endofprompt|>`` and ``<|reserved_200018|>`` share an id."""
    named = {"<|startoftext|>": 199998, ENDOFTEXT: 199999, "<|reserved_200000|>": 200000,
             "<|reserved_200001|>": 200001, "<|return|>": 200002, "<|constrain|>": 200003,
             "<|reserved_200004|>": 200004, "<|channel|>": 200005, "<|start|>": 200006, "<|end|>": 200007,
             "<|message|>": 200008, "<|reserved_200009|>": 200009, "<|reserved_200010|>": 200010,
             "<|reserved_200011|>": 200011, "<|call|>": 200012}
    return {ENDOFTEXT: 199999, "<|endofprompt|>": 200018, **named,
            **{f"<|reserved_{i}|>": i for i in range(200013, 201088)}}


#: Special tokens, patterns and the file of ordinary tokens, as tiktoken defines them.
PRETRAINED = {
    "gpt2": ({ENDOFTEXT: 50256}, "gpt2", "gpt2"),
    "p50k_base": ({ENDOFTEXT: 50256}, "gpt2", "p50k"),
    "p50k_edit": ({ENDOFTEXT: 50256, **FIM}, "gpt2", "p50k"),
    "cl100k_base": ({ENDOFTEXT: 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                     "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}, "cl100k", "cl100k_base"),
    "o200k_base": ({ENDOFTEXT: 199999, "<|endofprompt|>": 200018}, "o200k", "o200k_base"),
    "o200k_harmony": (_harmony_special_tokens(), "o200k", "o200k_base"),
}

#: ``Tokenizer.fingerprint()`` of each, as it would make it: every encode_file
#: records it, and making it costs 0.03 s (gpt2), 0.08 (cl100k) and 0.16
#: (o200k) of a fresh process's first call, beside its workers or, for a
#: small file, before the call can end. ``tests/test_pretrained.py`` makes
#: each again and compares.
FINGERPRINTS = {
    "gpt2": "f98411e67591987c0faa765cf665cb0123a043a6c48fc3a1672eaa00b5f140fa",
    "p50k_base": "66e23bc2147731024b459afeca978e4f5dbc1edb4f049670bf42d918d372c8b5",
    "p50k_edit": "aa597fba831cee1215eb5395dc71d0d68697946402029fbce00ee213e3de1f0b",
    "cl100k_base": "cc417e7957ea3d27a82edde2204e7d4dd374f59a1e484dd782997cc94f737728",
    "o200k_base": "92125fd375933708b7c5534c5876f33fa7b53150c0e5dd6155456e3a8d56ef02",
    "o200k_harmony": "7826f2c531c68477124d5921a5b7ecc88bcf219a64377cf3650e69196428733f",
}

#: tiktoken's other name for GPT-2's vocabulary.
ALIASES = {"r50k_base": "gpt2"}


def rank_file(name: str) -> str:
    """The rank file of ``name``: the copy the build decompressed (``setup.py``),
    if it is whole, else the ``.gz`` it came from. Whole means as long as the
    ``.gz``'s last four bytes say (gzip's length of its contents, mod 2^32): a
    copy cut short, or left from another ``.gz``, is not read."""
    packed = os.path.join(DATA, f"{name}.tiktoken.gz")
    plain = packed[:-len(".gz")]
    try:
        with open(packed, "rb") as file:
            file.seek(-4, os.SEEK_END)
            length = int.from_bytes(file.read(4), "little")
        if os.path.getsize(plain) % (1 << 32) == length:
            return plain
    except OSError:
        pass
    return packed


def _gpt2_table() -> RankTable:
    # GPT-2's encoder.json lists <|endoftext|> too, as an ordinary token.
    return read_gpt2_table(os.path.join(DATA, "gpt2_encoder.json.gz"), [50256])


def _p50k_table() -> RankTable:
    """GPT-2's ranks, then the runs of 2 to 25 spaces at 50257 to 50280."""
    data, offsets, ranks = _gpt2_table()
    spaces, space_offsets = flatten([b" " * n for n in range(2, 26)])
    return RankTable(np.concatenate([data, spaces]), np.concatenate([offsets, space_offsets[1:] + offsets[-1]]),
                     np.concatenate([ranks, np.arange(50257, 50281, dtype=np.int64)]))


def pretrained_table(name: str) -> tuple[RankTable, dict[str, int], str]:
    """The ordinary tokens of ``name`` by rank (its ids), its special tokens and its pattern."""
    name = ALIASES.get(name, name)
    special_tokens, pattern, source = PRETRAINED[name]
    if source == "gpt2":
        table = _gpt2_table()
    elif source == "p50k":
        table = _p50k_table()
    else:
        table = read_tiktoken_table(rank_file(source))
    return table, dict(special_tokens), pattern


# --------------------------------------------------------------------------- models

#: Model name prefixes (versions and fine-tunes) -> encoding, tried in order.
MODEL_PREFIX_TO_ENCODING: dict[str, str] = {
    "o1-": "o200k_base", "o3-": "o200k_base", "o4-mini-": "o200k_base",
    "gpt-5": "o200k_base", "gpt-4.5-": "o200k_base", "gpt-4.1-": "o200k_base",
    "chatgpt-4o-": "o200k_base", "gpt-4o-": "o200k_base",
    "gpt-4-": "cl100k_base", "gpt-3.5-turbo-": "cl100k_base", "gpt-35-turbo-": "cl100k_base",
    "gpt-oss-": "o200k_harmony",
    "ft:gpt-4o": "o200k_base", "ft:gpt-4": "cl100k_base", "ft:gpt-3.5-turbo": "cl100k_base",
    "ft:davinci-002": "cl100k_base", "ft:babbage-002": "cl100k_base",
}

#: Model names -> encoding.
MODEL_TO_ENCODING: dict[str, str] = {
    "o1": "o200k_base", "o3": "o200k_base", "o4-mini": "o200k_base",
    "gpt-5": "o200k_base", "gpt-4.1": "o200k_base", "gpt-4o": "o200k_base",
    "gpt-4": "cl100k_base", "gpt-3.5-turbo": "cl100k_base", "gpt-3.5": "cl100k_base",
    "gpt-35-turbo": "cl100k_base",
    "davinci-002": "cl100k_base", "babbage-002": "cl100k_base",
    "text-embedding-ada-002": "cl100k_base", "text-embedding-3-small": "cl100k_base",
    "text-embedding-3-large": "cl100k_base",
    "text-davinci-003": "p50k_base", "text-davinci-002": "p50k_base", "text-davinci-001": "r50k_base",
    "text-curie-001": "r50k_base", "text-babbage-001": "r50k_base", "text-ada-001": "r50k_base",
    "davinci": "r50k_base", "curie": "r50k_base", "babbage": "r50k_base", "ada": "r50k_base",
    "code-davinci-002": "p50k_base", "code-davinci-001": "p50k_base", "code-cushman-002": "p50k_base",
    "code-cushman-001": "p50k_base", "davinci-codex": "p50k_base", "cushman-codex": "p50k_base",
    "text-davinci-edit-001": "p50k_edit", "code-davinci-edit-001": "p50k_edit",
    "text-similarity-davinci-001": "r50k_base", "text-similarity-curie-001": "r50k_base",
    "text-similarity-babbage-001": "r50k_base", "text-similarity-ada-001": "r50k_base",
    "text-search-davinci-doc-001": "r50k_base", "text-search-curie-doc-001": "r50k_base",
    "text-search-babbage-doc-001": "r50k_base", "text-search-ada-doc-001": "r50k_base",
    "code-search-babbage-code-001": "r50k_base", "code-search-ada-code-001": "r50k_base",
    "gpt2": "gpt2", "gpt-2": "gpt2",
}


def encoding_name_for_model(model_name: str) -> str:
    """The name of the encoding a model uses; KeyError if the model is not known."""
    if model_name in MODEL_TO_ENCODING:
        return MODEL_TO_ENCODING[model_name]
    for prefix, encoding_name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return encoding_name
    raise KeyError(f"Could not automatically map {model_name} to a tokeniser. "
                   "Please use `tiktoken.get_encoding` to explicitly get the tokeniser you expect.") from None
