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


#: ``Tokenizer.fingerprint()`` of each, as it would make it: every encode_file
#: records it, and making it costs 0.03 s (gpt2), 0.08 (cl100k) and 0.16
#: (o200k) of a fresh process's first call, beside its workers or, for a
#: small file, before the call can end. ``tests/test_pretrained.py`` makes
#: each again and compares.
FINGERPRINTS = {
    "gpt2": "88ed0710c5a27f9d53f9eee7539e584d1f6402a3cecda16ef9a8b3b7274ca497",
    "cl100k_base": "ec52fee710e4684ec4895d7c8965f4f9fea30f140ad8a98d43d7274b160b810c",
    "o200k_base": "78e578fc4986ae484fcdea0ad888d6d237322df321c7b23d7517a9f6e8b3296a",
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
