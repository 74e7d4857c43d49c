"""The pretrained vocabularies shipped in the package (offline): every encoding
tiktoken knows (gpt2 and r50k_base, p50k_base, p50k_edit, cl100k_base,
o200k_base, o200k_harmony).

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

from bpe.formats import RankTable, flatten, read_gpt2_table, read_tiktoken_table

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
