"""Libraries that import tiktoken themselves give tiktoken's exact chunks and counts
through ``bpe.install_as_tiktoken()``: LangChain's and LlamaIndex's text
splitters, litellm's token counting, chonkie's chunker.

Each library runs twice in a fresh interpreter: with the real tiktoken (offline,
from the files bpe ships, byte for byte tiktoken's) and with bpe installed as
tiktoken; the outputs must be equal. A library that is not installed is
skipped, saying so (CI installs them: the ``clients`` extra).
"""
import hashlib
import importlib.util
import json
import os
import subprocess
import sys

import pytest

SCRIPT = r'''
import json, os, sys
if sys.argv[1] == "bpe":
    import bpe
    bpe.install_as_tiktoken()
import tiktoken
assert (tiktoken.__name__ == "bpe.tiktoken") == (sys.argv[1] == "bpe"), tiktoken.__name__
TEXT = open(sys.argv[3], encoding="utf-8").read()[:6000] + " 人力资源 naïve 😀 code():\n\treturn x\n"
library, out = sys.argv[2], {}
if library == "langchain_text_splitters":
    from langchain_text_splitters import RecursiveCharacterTextSplitter, TokenTextSplitter
    out["token"] = TokenTextSplitter(encoding_name="cl100k_base", chunk_size=50, chunk_overlap=10).split_text(TEXT)
    out["recursive"] = RecursiveCharacterTextSplitter.from_tiktoken_encoder(
        model_name="gpt-4o", chunk_size=100, chunk_overlap=0).split_text(TEXT)
    try:
        TokenTextSplitter(encoding_name="gpt2").split_text("a <|endoftext|> b")
    except ValueError as e:
        out["refused"] = str(e)
elif library == "llama_index.core":
    from llama_index.core.node_parser import SentenceSplitter, TokenTextSplitter
    from llama_index.core.utils import get_tokenizer
    out["count"] = len(get_tokenizer()(TEXT))
    out["token"] = TokenTextSplitter(chunk_size=64, chunk_overlap=8).split_text(TEXT)
    out["sentence"] = SentenceSplitter(chunk_size=64, chunk_overlap=8).split_text(TEXT)
elif library == "litellm":
    import litellm
    out["count"] = litellm.token_counter(model="gpt-4o", text=TEXT)
    out["messages"] = litellm.token_counter(model="gpt-3.5-turbo", messages=[{"role": "user", "content": TEXT}])
    out["encode"] = list(litellm.encode(model="gpt-4", text=TEXT[:500]))
elif library == "chonkie":
    from chonkie import TokenChunker
    chunks = TokenChunker(tokenizer=tiktoken.get_encoding("gpt2"), chunk_size=64, chunk_overlap=8).chunk(TEXT)
    out["chunks"] = [(c.text, c.token_count, c.start_index, c.end_index) for c in chunks]
print(json.dumps(out))
'''

LIBRARIES = ["langchain_text_splitters", "llama_index.core", "litellm", "chonkie"]


@pytest.fixture(scope="module")
def offline_tiktoken(tmp_path_factory):
    """A tiktoken cache holding every file tiktoken fetches, made from bpe's copies
    (``tests/test_tiktoken_module.py`` checks they are tiktoken's, byte for byte)."""
    pytest.importorskip("tiktoken")
    from bpe.tiktoken.load import SHIPPED_FILES

    cache = tmp_path_factory.mktemp("tiktoken-cache")
    for url, contents in SHIPPED_FILES.items():
        (cache / hashlib.sha1(url.encode()).hexdigest()).write_bytes(contents())
    return str(cache)


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_library_that_imports_tiktoken_gives_tiktoken_s_output_through_bpe(library, offline_tiktoken, tmp_path,
                                                                             shakespeare_path):
    if importlib.util.find_spec(library.split(".")[0]) is None:
        pytest.skip(f"{library} is not installed (pip install '.[clients]')")
    script = tmp_path / "client.py"
    script.write_text(SCRIPT, encoding="utf-8")
    env = dict(os.environ, TIKTOKEN_CACHE_DIR=offline_tiktoken, LITELLM_LOCAL_MODEL_COST_MAP="True",
               HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    outputs = {}
    for engine in ("tiktoken", "bpe"):
        result = subprocess.run([sys.executable, str(script), engine, library, shakespeare_path],
                                capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-3000:]
        outputs[engine] = json.loads(result.stdout.strip().splitlines()[-1])
    assert outputs["bpe"] == outputs["tiktoken"]
    assert all(outputs["bpe"].values())          # something was chunked or counted
