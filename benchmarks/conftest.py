"""The benchmark suite's inputs, options and records.

    pytest benchmarks/ --benchmark-only                       # Tiny Shakespeare (shipped)
    pytest benchmarks/ --benchmark-only --corpus ~/.cache/bpe-corpora/prose_en.txt --mb 10
    pytest benchmarks/ --benchmark-only --quick               # tiny inputs, 2 rounds (CI)

Every group times bpe against every installed peer on the same input objects,
and each test asserts the ids equal bpe's before it passes; a peer that is not
installed is skipped with the reason. ``--benchmark-save NAME`` keeps the run
(machine, commit, and the library versions below) under ``.benchmarks/``.
"""
from __future__ import annotations

import os

import pytest

import bpe
from peers import versions

SHAKESPEARE = os.path.join(os.path.dirname(bpe.__file__), "data", "tinyshakespeare.txt")
EOT = "<|endoftext|>"
#: Documents of a corpus without separators: its paragraphs, gathered to about this size.
DOCUMENT_CHARS = 2000
QUICK_CHARS = 50_000
#: bpe.pure runs about a thousand times slower: its groups get a sample it finishes.
PURE_CHARS = 100_000

# Scripts and investigations live beside the suite; only test_*.py belongs to it.
collect_ignore_glob = ["bench_*.py", "build_corpora.py", "report.py", "experiments/*", "_measure.py"]


def pytest_addoption(parser):
    group = parser.getgroup("bpe benchmarks")
    group.addoption("--corpus", default=SHAKESPEARE,
                    help="text file to measure on (default: the shipped Tiny Shakespeare); documents are "
                         "split at <|endoftext|>, else gathered from paragraphs")
    group.addoption("--mb", type=float, default=10.0, help="megabytes of --corpus to read (default 10)")
    group.addoption("--rounds", type=int, default=5, help="timed rounds of each cold measurement (default 5)")
    group.addoption("--quick", action="store_true",
                    help=f"the first {QUICK_CHARS:,} characters, 2 rounds, small vocabularies: "
                         "to keep the suite working, not to measure")


def pytest_generate_tests(metafunc):
    if "vocab_size" in metafunc.fixturenames:   # training's sizes: small ones keep --quick quick
        metafunc.parametrize("vocab_size", [1000] if metafunc.config.getoption("--quick") else [2000, 10_000])


def pytest_benchmark_update_machine_info(config, machine_info):
    machine_info["libraries"] = versions()
    machine_info["corpus"] = os.path.basename(config.getoption("--corpus"))


def documents(text: str) -> list[str]:
    """``text`` split at <|endoftext|>; without one, its paragraphs gathered into
    documents of about DOCUMENT_CHARS characters."""
    if EOT in text:
        return [document for document in text.split(EOT) if document]
    found, pending = [], ""
    for paragraph in text.split("\n\n"):
        pending += paragraph + "\n\n"
        if len(pending) >= DOCUMENT_CHARS:
            found.append(pending)
            pending = ""
    return found + ([pending] if pending else [])


class Sample:
    """A sample of the corpus: its text, documents, size, and where it is on disk."""

    def __init__(self, text: str, path: str):
        self.text = text
        self.documents = documents(text)
        self.mb = len(text.encode("utf-8")) / 1e6
        self.path = path

    def __repr__(self) -> str:
        return f"Sample({self.mb:.2f} MB, {len(self.documents)} documents)"


def _sample(tmp_path_factory, corpus: str, chars: int, label: str) -> Sample:
    with open(corpus, encoding="utf-8") as f:
        text = f.read(chars)
    path = tmp_path_factory.mktemp(label) / "sample.txt"
    path.write_text(text, encoding="utf-8")
    return Sample(text, str(path))


@pytest.fixture(scope="session")
def settings(pytestconfig):
    quick = pytestconfig.getoption("--quick")
    return {"quick": quick, "rounds": 2 if quick else pytestconfig.getoption("--rounds"),
            "corpus": os.path.expanduser(pytestconfig.getoption("--corpus")),
            "chars": QUICK_CHARS if quick else int(pytestconfig.getoption("--mb") * 1e6)}


@pytest.fixture(scope="session")
def sample(tmp_path_factory, settings) -> Sample:
    """The corpus sample every group but bpe.pure's measures."""
    return _sample(tmp_path_factory, settings["corpus"], settings["chars"], "sample")


@pytest.fixture(scope="session")
def pure_sample(tmp_path_factory, settings) -> Sample:
    """The sample bpe.pure is measured on, beside bpe."""
    return _sample(tmp_path_factory, settings["corpus"], min(settings["chars"], PURE_CHARS), "pure")


def require(library: str) -> None:
    """Skip, naming the library, unless it is installed."""
    pytest.importorskip(library, reason=f"{library} is not installed (pip install -e \".[peers]\")")


def describe(benchmark, group: str, library: str, call: str, output: str, mb: float, **extra) -> None:
    """Name the group and record which call ran and what it returned."""
    benchmark.group = group
    benchmark.extra_info.update(library=library, call=call, output=output, mb=round(mb, 6), **extra)
