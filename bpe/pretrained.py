"""The pretrained vocabularies shipped in the package: gpt2, cl100k_base, o200k_base."""
from __future__ import annotations

import base64
import functools
import gzip
import json
import os

DATA = os.path.join(os.path.dirname(__file__), "data")

#: Special tokens and patterns, as tiktoken defines them.
PRETRAINED = {
    "gpt2": ({"<|endoftext|>": 50256}, "gpt2"),
    "cl100k_base": ({"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                     "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}, "cl100k"),
    "o200k_base": ({"<|endoftext|>": 199999, "<|endofprompt|>": 200018}, "o200k"),
}


def gpt2_byte_decoder() -> dict[str, int]:
    """GPT-2's printable stand-in character for each byte, inverted."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    characters = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            characters.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, characters)}


def read_tiktoken_ranks(path: str) -> dict[int, bytes]:
    """A tiktoken rank file (plain or .gz): ``base64 rank`` per line -> {rank: bytes}."""
    opener = gzip.open if path.endswith(".gz") else open
    vocab = {}
    with opener(path, "rb") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                token, rank = line.split()
                vocab[int(rank)] = base64.b64decode(token, validate=True)
            except ValueError as e:
                raise ValueError(f"{path}, line {number}: expected '<base64> <rank>': {e}") from None
    return vocab


@functools.lru_cache(maxsize=None)
def load_pretrained(name: str):
    from bpe.tokenizer import Tokenizer

    special_tokens, pattern = PRETRAINED[name]
    if name == "gpt2":
        decoder = gpt2_byte_decoder()
        with gzip.open(os.path.join(DATA, "gpt2_encoder.json.gz"), "rt", encoding="utf-8") as f:
            encoder = json.load(f)
        vocab = {i: bytes(decoder[c] for c in token) for token, i in encoder.items()}
        with gzip.open(os.path.join(DATA, "gpt2_vocab.bpe.gz"), "rt", encoding="utf-8") as f:
            lines = [line for line in f.read().split("\n") if line and not line.startswith("#version")]
        merges = []
        for line in lines:
            left, right = line.split(" ")
            merges.append((bytes(decoder[c] for c in left), bytes(decoder[c] for c in right)))
    else:
        vocab = read_tiktoken_ranks(os.path.join(DATA, f"{name}.tiktoken.gz"))
        merges = None
    for token, token_id in special_tokens.items():
        vocab[token_id] = token.encode("utf-8")
    return Tokenizer(vocab, merges, special_tokens, pattern=pattern)
