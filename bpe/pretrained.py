"""The pretrained vocabularies shipped in the package (offline): gpt2, cl100k_base, o200k_base.

``pretrained_data(name)`` reads one as plain data with the readers of
``bpe.formats``: GPT-2's own files for gpt2, tiktoken's rank files for the
others (their merges are recovered from the ranks by the tokenizer).
"""
from __future__ import annotations

import os

from bpe.formats import TokenizerData, read_gpt2_files, read_tiktoken_ranks

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


def pretrained_data(name: str) -> TokenizerData:
    """The vocab, merges (None: recovered from the ranks), specials and pattern of ``name``."""
    name = ALIASES.get(name, name)
    special_tokens, pattern = PRETRAINED[name]
    if name == "gpt2":
        vocab, merges = read_gpt2_files(os.path.join(DATA, "gpt2_encoder.json.gz"),
                                        os.path.join(DATA, "gpt2_vocab.bpe.gz"))
    else:
        vocab, merges = read_tiktoken_ranks(os.path.join(DATA, f"{name}.tiktoken.gz")), None
    for token, token_id in special_tokens.items():
        vocab[token_id] = token.encode("utf-8")
    return TokenizerData(vocab, merges, dict(special_tokens), pattern)
