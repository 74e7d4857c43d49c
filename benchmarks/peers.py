"""The peers, built offline for bpe's shipped vocabularies, and their versions.

Each builder returns a zero-argument factory making a fresh object (a cold round
needs one: gigatoken keeps a pre-token cache in the object), or raises
``ImportError`` when the library is not installed: the suite skips it, saying so.
Peers: ``pip install -e ".[peers]"``.
"""
from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import os
import shutil
import tempfile

import bpe

DATA = os.path.join(os.path.dirname(bpe.__file__), "data")
LIBRARIES = ["bpe", "tiktoken", "gigatoken", "tokenizers", "rustbpe", "numpy", "regex"]
_BLOB = "https://openaipublic.blob.core.windows.net/"
#: tiktoken's download addresses and the shipped copies of those files.
_TIKTOKEN_FILES = {
    _BLOB + "gpt-2/encodings/main/vocab.bpe": "gpt2_vocab.bpe.gz",
    _BLOB + "gpt-2/encodings/main/encoder.json": "gpt2_encoder.json.gz",
    _BLOB + "encodings/cl100k_base.tiktoken": "cl100k_base.tiktoken.gz",
    _BLOB + "encodings/o200k_base.tiktoken": "o200k_base.tiktoken.gz",
}


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


def _tiktoken_cache() -> str:
    """A tiktoken cache holding the shipped files under the names tiktoken looks
    for (the sha1 of the address; tiktoken checks each file's sha256 itself)."""
    cache = os.path.join(_scratch(), "tiktoken-cache")
    os.makedirs(cache, exist_ok=True)
    for url, file_name in _TIKTOKEN_FILES.items():
        target = os.path.join(cache, hashlib.sha1(url.encode()).hexdigest())
        if not os.path.exists(target):
            with gzip.open(os.path.join(DATA, file_name)) as source, open(target + ".part", "wb") as f:
                shutil.copyfileobj(source, f)
            os.replace(target + ".part", target)
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
    path = os.path.join(_scratch(), f"{name}.tiktoken")
    if not os.path.exists(path):
        with gzip.open(os.path.join(DATA, f"{name}.tiktoken.gz")) as source, open(path + ".part", "wb") as f:
            shutil.copyfileobj(source, f)
        os.replace(path + ".part", path)
    return path


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
