"""The pretrained vocabularies shipped in the package (offline): gpt2, cl100k_base, o200k_base.

``pretrained_table(name)`` reads one's ordinary tokens by rank with the readers
of ``bpe.formats``: from GPT-2's ``encoder.json`` for gpt2 (its ids are its
ranks: ``tests/test_formats.py`` checks that its ``vocab.bpe`` is what the
ranks recover), from tiktoken's rank files for the others. The tokenizer
recovers the merges from the ranks when they are first asked for.
"""
from __future__ import annotations

import os

from bpe.formats import RankTable, read_gpt2_table, read_tiktoken_table

DATA = os.path.join(os.path.dirname(__file__), "data")

#: Special tokens and patterns, as tiktoken defines them.
PRETRAINED = {
    "gpt2": ({"<|endoftext|>": 50256}, "gpt2"),
    "cl100k_base": ({"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                     "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}, "cl100k"),
    "o200k_base": ({"<|endoftext|>": 199999, "<|endofprompt|>": 200018}, "o200k"),
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


def pretrained_table(name: str) -> tuple[RankTable, dict[str, int], str]:
    """The ordinary tokens of ``name`` by rank (its ids), its special tokens and its pattern."""
    name = ALIASES.get(name, name)
    special_tokens, pattern = PRETRAINED[name]
    if name == "gpt2":
        # Its vocab lists <|endoftext|> too, as an ordinary token.
        table = read_gpt2_table(os.path.join(DATA, "gpt2_encoder.json.gz"), special_tokens.values())
    else:
        table = read_tiktoken_table(rank_file(name))
    return table, dict(special_tokens), pattern
