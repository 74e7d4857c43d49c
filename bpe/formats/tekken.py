"""Mistral's Tekken files (``tekken.json``), as mistral-common reads them."""
from __future__ import annotations

import base64
import binascii
import os
from typing import NamedTuple

import numpy as np

from bpe.errors import TokenizerFileError
from bpe.flat import RankTable, flatten
from bpe.formats.common import read_json


#: The special tokens of a Tekken file of version v7 or older that lists none,
#: as mistral-common defines them; the rest, up to the file's number, are
#: ``<SPECIAL_{id}>``.
TEKKEN_OLD_SPECIALS = ("<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
                       "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
                       "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
                       "[TOOL_CONTENT]")


class TekkenFile(NamedTuple):
    """A Tekken file as mistral-common's ``Tekkenizer`` reads it: its ordinary tokens
    (rank k is id k + the number of special tokens), its special tokens by id
    (control tokens, never found in text), its pattern."""

    table: RankTable
    control_tokens: dict[int, bytes]
    pattern: str


def looks_like_tekken(document) -> bool:
    return isinstance(document, dict) and isinstance(document.get("config"), dict) \
        and isinstance(document.get("vocab"), list)




def read_tekken(path, document=None) -> TekkenFile:
    """Read a Mistral Tekken ``tekken.json``: the vocabulary cut to the file's
    default size, special tokens first (control tokens: ``Tekkenizer.encode``
    never finds them in text)."""
    path = os.fspath(path)
    document = read_json(path) if document is None else document

    def refuse(field: str, why: str) -> TokenizerFileError:
        return TokenizerFileError(f"{path}: {field}: {why}")

    if not looks_like_tekken(document):
        raise refuse("config", "missing; not a Tekken file")
    config = document["config"]
    pattern, size, n_special = config.get("pattern"), config.get("default_vocab_size"), \
        config.get("default_num_special_tokens")
    if not isinstance(pattern, str):
        raise refuse("config.pattern", f"is {pattern!r:.60}, not a string")
    for field, value in (("default_vocab_size", size), ("default_num_special_tokens", n_special)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise refuse(f"config.{field}", f"is {value!r:.60}, not an int >= 0")
    inner = size - n_special
    vocab = document["vocab"]
    if not 0 <= inner <= len(vocab):
        raise refuse("config.default_vocab_size", f"is {size}: {size} - {n_special} special tokens must be "
                                                  f"between 0 and the {len(vocab)} tokens listed")
    tokens = []
    for index, entry in enumerate(vocab[:inner]):
        if not isinstance(entry, dict) or entry.get("rank") != index or not isinstance(entry.get("token_bytes"), str):
            raise refuse(f"vocab[{index}]", f"{entry!r:.80} is not {{'rank': {index}, 'token_bytes': base64}}")
        try:
            tokens.append(base64.b64decode(entry["token_bytes"], validate=True))
        except (binascii.Error, ValueError):
            raise refuse(f"vocab[{index}].token_bytes", f"{entry['token_bytes'][:40]!r} is not base64") from None
    specials = document.get("special_tokens")
    if specials is None:
        if config.get("version") not in (None, "v1", "v2", "v3", "v7"):
            raise refuse("special_tokens", f"missing, and version {config.get('version')!r} lists its own")
        names = list(TEKKEN_OLD_SPECIALS[:n_special])
    else:
        if not isinstance(specials, list):
            raise refuse("special_tokens", "is not a list")
        names = []
        for index, entry in enumerate(specials):
            if not isinstance(entry, dict) or entry.get("rank") != index or not isinstance(entry.get("token_str"), str):
                raise refuse(f"special_tokens[{index}]", f"{entry!r:.80} is not {{'rank': {index}, 'token_str': ...}}")
            names.append(entry["token_str"])
    if len(names) > n_special or len(set(names)) != len(names):
        raise refuse("special_tokens", f"{len(names)} names (some twice?) for {n_special} special tokens")
    names += [f"<SPECIAL_{i}>" for i in range(len(names), n_special)]
    table = RankTable(*flatten(tokens), np.arange(n_special, n_special + len(tokens), dtype=np.int64))
    return TekkenFile(table, {i: name.encode("utf-8") for i, name in enumerate(names)}, pattern)
