"""Every example in the README and docs/usage.md runs, as written, in a directory
holding the files they name: the Python blocks statement by statement in one
namespace per page (a statement whose comment says ``ValueError`` must raise
it), the shell blocks line by line through the real ``bpe`` command. Names an
example leaves to the reader (``texts``, ``text``, ``paths``...) are given
values first; nothing else is changed."""
import ast
import gzip
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import bpe

from conftest import SHAKESPEARE
from fetched import member

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
PAGES = ["README.md", os.path.join("docs", "usage.md")]
BLOCK = re.compile(r"^```(python|bash)\n(.*?)^```", re.MULTILINE | re.DOTALL)
EOT = "<|endoftext|>"


def blocks(page: str, language: str) -> list[tuple[int, str]]:
    text = open(os.path.join(ROOT, page), encoding="utf-8").read()
    return [(text[:match.start()].count("\n") + 2, match.group(2)) for match in BLOCK.finditer(text)
            if match.group(1) == language]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """A directory holding every file the examples name."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("zstandard")
    pytest.importorskip("datasets")
    import pyarrow
    import pyarrow.parquet
    import zstandard

    here = tmp_path_factory.mktemp("docs")
    text = open(SHAKESPEARE, encoding="utf-8").read()
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    corpus = EOT.join("\n\n".join(paragraphs[k:k + 40]) for k in range(0, 160, 40))   # documents of ~2000 tokens
    for name in ["corpus.txt", "part1.txt", "part2.txt", "notes.txt", "big.txt", "huge.txt", "data/a.txt",
                 "data/b.txt", "corpus/a.txt"]:
        os.makedirs(here / os.path.dirname(name), exist_ok=True)
        (here / name).write_text(corpus if name != "notes.txt" else paragraphs[3], encoding="utf-8")
    records = paragraphs[150:400]
    lines = "".join(json.dumps({"text": t, "meta": {"body": t}}) + "\n" for t in records).encode()
    os.makedirs(here / "pile")
    (here / "pile" / "00.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(lines))
    (here / "dump.jsonl.gz").write_bytes(gzip.compress(lines))
    (here / "corpus.jsonl").write_bytes(lines)
    os.makedirs(here / "fineweb")
    for k in range(2):
        pyarrow.parquet.write_table(pyarrow.table({"text": records[k::2]}), here / "fineweb" / f"{k:03d}.parquet")
    gpt2 = bpe.load("gpt2")
    for directory in ["path/to/model-dir", "path/to/llama3"]:
        gpt2.to_huggingface(here / directory)
    shutil.copy(here / "path/to/model-dir/tokenizer.json", here / "tokenizer.json")
    gpt2.to_tiktoken(here / "tokenizer.model")
    shutil.copy(member("mistral-common==1.13.1", "mistral_common/data/tekken_240718.json"), here / "tekken.json")
    (here / "mistral-7b").mkdir()
    shutil.copy(member("mistral-common==1.13.1", "mistral_common/data/tokenizer.model.v1"),
                here / "mistral-7b" / "tokenizer.model")
    from sentencepiece_json import to_tokenizer_json

    (here / "llama-2").mkdir()
    model = (here / "mistral-7b" / "tokenizer.model").read_bytes()
    (here / "llama-2" / "tokenizer.json").write_text(to_tokenizer_json(model, "prepend_replace"), encoding="utf-8")
    return here


def given_names() -> dict:
    """Values for the names the examples leave to the reader."""
    return {"texts": ["Hello world", "naïve café 日本語"], "text": "Some text, to encode.",
            "documents": ["A document.", "Another, longer one."],
            "other_counts": bpe.PretokenCounts.from_mapping({"hello": 2, " world": 1}),
            "paths": ["corpus.txt", "part1.txt"], "k": 0, "n": 1, "r": 0, "w": 1,
            "LLAMA3_PATTERN": bpe.PATTERNS["llama3"]}


@pytest.fixture
def ray_stopped_after():
    """The README starts a local Ray cluster (``distributed.train``): it is shut
    down here, in the test, not by Ray's exit handler, which can hang while the
    interpreter is finalizing."""
    yield
    if "ray" in sys.modules and sys.modules["ray"].is_initialized():
        sys.modules["ray"].shutdown()


@pytest.mark.parametrize("page", PAGES)
def test_the_python_examples_run(page, sandbox, monkeypatch, ray_stopped_after):
    monkeypatch.chdir(sandbox)
    namespace = given_names()
    ran = 0
    for first_line, code in blocks(page, "python"):
        source = code.splitlines()
        for statement in ast.parse(code).body:
            where = f"{page}, line {first_line + statement.lineno - 1}"
            compiled = compile(ast.Module([statement], []), where, "exec")
            if "# ValueError" in source[statement.lineno - 1]:
                with pytest.raises(ValueError):
                    exec(compiled, namespace)
            else:
                try:
                    exec(compiled, namespace)
                except Exception as error:     # noqa: BLE001 - reported with where it came from
                    pytest.fail(f"{where}: {source[statement.lineno - 1].strip()!r} raised {error!r}")
            ran += 1
    assert ran >= 20


def shell_lines(page: str) -> list[tuple[str, str]]:
    """``(where, command)`` of each line of the page's shell blocks that runs
    ``bpe`` (installing is left to the install instructions' own test, CI), with
    placeholders given values."""
    found = []
    for first_line, code in blocks(page, "bash"):
        for k, line in enumerate(code.splitlines()):
            command = re.sub(r"\s{2,}#.*$", "", line).strip()
            command = command.split("&& ", 1)[1] if command.startswith("pip install") and "&& bpe" in command \
                else command
            if not command or command.startswith(("pip ", "BPE_CYTHON_DEBUG")):
                continue
            command = command.replace("[FILES...]", "corpus.txt").replace(" [ADDRESS]", "")
            command = re.sub(r"--rank R --world-size W, then --finalize", "", command)
            found.append((f"{page}, line {first_line + k}", command))
    return found


@pytest.mark.parametrize("page", PAGES)
def test_the_shell_examples_run(page, sandbox):
    lines = shell_lines(page)
    assert len(lines) >= 6
    environment = dict(os.environ, R="0", W="1", PATH=os.path.dirname(sys.executable) + os.pathsep
                       + os.environ.get("PATH", ""))
    for where, command in lines:
        result = subprocess.run(["bash", "-c", command], cwd=sandbox, capture_output=True, text=True,
                                timeout=600, env=environment)
        assert result.returncode == 0, f"{where}: {command}\n{result.stderr[-2000:]}"
