"""The peers, built offline for bpe's shipped vocabularies, and their versions.

Each builder returns a zero-argument factory making a fresh object (a cold round
needs one: gigatoken keeps a pre-token cache in the object), or raises
``ImportError`` when the library is not installed: the suite skips it, saying so.
Peers: ``pip install -e ".[peers]"``.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import os
import tempfile

import bpe
from bpe.tiktoken.load import BLOB, SHIPPED_FILES

LIBRARIES = ["bpe", "tiktoken", "gigatoken", "tokenizers", "rustbpe", "numpy", "regex"]
#: The files tiktoken downloads for gpt2, cl100k_base and o200k_base (the
#: package answers each address with the shipped copy: ``SHIPPED_FILES``).
TIKTOKEN_FILES = [BLOB + "gpt-2/encodings/main/vocab.bpe", BLOB + "gpt-2/encodings/main/encoder.json",
                  BLOB + "encodings/cl100k_base.tiktoken", BLOB + "encodings/o200k_base.tiktoken"]


def versions() -> dict[str, str]:
    """The installed version of bpe and of every peer (absent ones left out)."""
    found = {}
    for name in LIBRARIES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


def _scratch() -> str:
    directory = os.path.join(tempfile.gettempdir(), "bpe-benchmarks")
    os.makedirs(directory, exist_ok=True)
    return directory


def _write_once(path: str, data) -> str:
    """``path``, written from ``data()`` unless it is there already (whole or not at all)."""
    if not os.path.exists(path):
        with open(path + ".part", "wb") as f:
            f.write(data())
        os.replace(path + ".part", path)
    return path


def _tiktoken_cache() -> str:
    """A tiktoken cache holding the shipped files under the names tiktoken looks
    for (the sha1 of the address; tiktoken checks each file's sha256 itself)."""
    cache = os.path.join(_scratch(), "tiktoken-cache")
    os.makedirs(cache, exist_ok=True)
    for url in TIKTOKEN_FILES:
        _write_once(os.path.join(cache, hashlib.sha1(url.encode()).hexdigest()), SHIPPED_FILES[url])
    return cache


def use_shipped_files_in_tiktoken() -> None:
    """Make tiktoken read the shipped files (here and in child processes)."""
    os.environ["TIKTOKEN_CACHE_DIR"] = _tiktoken_cache()


def tiktoken_factory(name: str):
    """A fresh ``tiktoken.Encoding`` for ``name`` per call, read from its file
    each time (``get_encoding`` would return one shared object)."""
    use_shipped_files_in_tiktoken()
    import tiktoken
    from tiktoken_ext.openai_public import ENCODING_CONSTRUCTORS

    return lambda: tiktoken.Encoding(**ENCODING_CONSTRUCTORS[name]())


def rank_file(name: str) -> str:
    """The shipped rank file of ``name``, uncompressed (what gigatoken reads)."""
    return _write_once(os.path.join(_scratch(), f"{name}.tiktoken"),
                       SHIPPED_FILES[BLOB + f"encodings/{name}.tiktoken"])


def tokenizer_json(name: str) -> str:
    """bpe's ``tokenizer.json`` export of ``name`` (what Hugging Face reads)."""
    path = os.path.join(_scratch(), f"{name}.tokenizer.json")
    if not os.path.exists(path):
        bpe.load(name).to_huggingface(path + ".part.json")
        os.replace(path + ".part.json", path)
    return path


def gigatoken_factory(name: str):
    """A fresh ``gigatoken.Tokenizer``: gpt2 from the tokenizer.json export, the
    others from their rank files (it knows their patterns by file name)."""
    import gigatoken

    if name == "gpt2":
        path = tokenizer_json(name)
        return lambda: gigatoken.Tokenizer(path)
    path = rank_file(name)
    return lambda: gigatoken.Tokenizer.from_tiktoken(path)


def huggingface_factory(name: str):
    """A fresh Hugging Face ``tokenizers.Tokenizer`` from bpe's export."""
    import tokenizers

    path = tokenizer_json(name)
    return lambda: tokenizers.Tokenizer.from_file(path)


def factory(library: str, name: str):
    return {"tiktoken": tiktoken_factory, "gigatoken": gigatoken_factory,
            "tokenizers": huggingface_factory}[library](name)
