"""tiktoken's own encodings (what ``tiktoken_ext.openai_public`` defines), from the
vocabularies shipped with bpe: offline, and the same ids as tiktoken's files
(``tests/test_tiktoken_module.py`` checks each against them)."""
from __future__ import annotations

from typing import Any

from bpe.patterns import CL100K_PATTERN, O200K_PATTERN, TIKTOKEN_GPT2_PATTERN
from bpe.pretrained import PRETRAINED
from bpe.tiktoken.core import Encoding
from bpe.tokenizer import load

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

#: Each encoding's pattern as tiktoken spells it (``Encoding._pat_str``).
PAT_STR = {"gpt2": TIKTOKEN_GPT2_PATTERN, "cl100k": CL100K_PATTERN, "o200k": O200K_PATTERN}
#: The ``explicit_n_vocab`` tiktoken gives some of them.
EXPLICIT_N_VOCAB = {"gpt2": 50257, "r50k_base": 50257, "p50k_base": 50281}
#: tiktoken's name -> the vocabulary shipped with bpe.
SHIPPED = {"gpt2": "gpt2", "r50k_base": "gpt2", "p50k_base": "p50k_base", "p50k_edit": "p50k_edit",
           "cl100k_base": "cl100k_base", "o200k_base": "o200k_base", "o200k_harmony": "o200k_harmony"}


def _constructor(name: str):
    def construct() -> dict[str, Any]:
        tokenizer = load(SHIPPED[name])
        arguments = {"name": name, "pat_str": PAT_STR[tokenizer.pattern],
                     "mergeable_ranks": dict(tokenizer._ids_by_bytes),
                     "special_tokens": dict(tokenizer.special_tokens)}
        if name in EXPLICIT_N_VOCAB:
            arguments["explicit_n_vocab"] = EXPLICIT_N_VOCAB[name]
        return arguments

    construct.__name__ = construct.__qualname__ = name
    construct.__doc__ = f"tiktoken's arguments for {name}: ``Encoding(**{name}())``."
    return construct


gpt2 = _constructor("gpt2")
r50k_base = _constructor("r50k_base")
p50k_base = _constructor("p50k_base")
p50k_edit = _constructor("p50k_edit")
cl100k_base = _constructor("cl100k_base")
o200k_base = _constructor("o200k_base")
o200k_harmony = _constructor("o200k_harmony")

ENCODING_CONSTRUCTORS = {"gpt2": gpt2, "r50k_base": r50k_base, "p50k_base": p50k_base, "p50k_edit": p50k_edit,
                         "cl100k_base": cl100k_base, "o200k_base": o200k_base, "o200k_harmony": o200k_harmony}


def shipped_encoding(name: str) -> Encoding:
    """The encoding ``name`` over the tokenizer ``bpe.load`` gives (shared with it)."""
    tokenizer = load(SHIPPED[name])
    return Encoding.from_tokenizer(name, tokenizer, PAT_STR[PRETRAINED[SHIPPED[name]][1]])
