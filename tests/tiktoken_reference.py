"""tiktoken, offline, from the vocabulary files shipped in the package.

tiktoken caches each download under the sha1 of its address and checks the
file's sha256, so only the authentic files are accepted (as in
``../shared/fixtures/tiktoken_cache.py``).
"""
import gzip
import hashlib
import os
import tempfile

import bpe

DATA = os.path.join(os.path.dirname(bpe.__file__), "data")
BLOB = "https://openaipublic.blob.core.windows.net/"
FILES = {
    BLOB + "gpt-2/encodings/main/vocab.bpe": "gpt2_vocab.bpe.gz",
    BLOB + "gpt-2/encodings/main/encoder.json": "gpt2_encoder.json.gz",
    BLOB + "encodings/cl100k_base.tiktoken": "cl100k_base.tiktoken.gz",
    BLOB + "encodings/o200k_base.tiktoken": "o200k_base.tiktoken.gz",
}


def get_encoding(name: str):
    import tiktoken

    cache = os.path.join(tempfile.gettempdir(), "bpe-tests-tiktoken-cache")
    os.makedirs(cache, exist_ok=True)
    for url, file_name in FILES.items():
        target = os.path.join(cache, hashlib.sha1(url.encode()).hexdigest())
        if not os.path.exists(target):
            with gzip.open(os.path.join(DATA, file_name)) as f:
                data = f.read()
            with open(target + ".part", "wb") as f:
                f.write(data)
            os.replace(target + ".part", target)
    os.environ["TIKTOKEN_CACHE_DIR"] = cache
    if name == "r50k_base":     # the ranks of gpt2 (no file of its own here), under its name
        gpt2 = tiktoken.get_encoding("gpt2")
        return _r50k(gpt2)
    return tiktoken.get_encoding(name)


_R50K = []


def _r50k(gpt2):
    import tiktoken

    if not _R50K:
        _R50K.append(tiktoken.Encoding("r50k_base", pat_str=gpt2._pat_str, mergeable_ranks=gpt2._mergeable_ranks,
                                       special_tokens=gpt2._special_tokens, explicit_n_vocab=50257))
    return _R50K[0]
