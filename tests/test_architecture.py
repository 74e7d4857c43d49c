"""The modules of ``bpe`` import one way: down the order of docs/architecture.md.

A module may import (or cimport) only modules listed after it in ``FLOORS``,
so there is no cycle and no hidden set-up order. A new module must be placed
here and in the map, or this test fails.
"""
import ast
import os
import re
import subprocess
import sys

import bpe

PACKAGE = os.path.dirname(bpe.__file__)
DOCS = os.path.join(PACKAGE, os.pardir, "docs", "architecture.md")

#: Top to bottom, floor by floor. Python and Cython alike; a .pyx and its .pxd
#: are one module. A subpackage's modules are named with a dot
#: ("tiktoken.core"); its ``__init__`` by the subpackage's name. The diagram
#: at the top of docs/architecture.md is drawn from this table
#: (``python tests/test_architecture.py`` prints it).
FLOORS = [
    ("front doors", ["__main__", "cli", "distributed", "__init__"]),
    ("test hooks", ["_testing"]),
    ("tiktoken's module", ["tiktoken", "tiktoken.model", "tiktoken.registry", "tiktoken.openai_public",
                           "tiktoken.load", "tiktoken.core"]),
    ("training", ["trainer"]),
    ("the tokenizer", ["tokenizer", "sentencepiece"]),
    ("whole corpora", ["corpus", "corpus.shards", "corpus.driver", "corpus.document_writer",
                       "corpus.chunk_writer", "corpus.counting", "corpus.dataset", "corpus.token_array",
                       "corpus.records", "corpus.parquet", "corpus.sources", "corpus.chunking"]),
    ("encoding", ["huggingface", "huggingface.characters", "huggingface.tokenizer_json", "huggingface.pipeline",
                  "charlevel", "vocabulary", "encoder", "pretrained"]),
    ("tokenizer files", ["formats", "formats.own", "formats.gpt2", "formats.rankfile", "formats.tekken",
                         "formats.sentencepiece", "formats.common"]),
    ("oracle, view", ["pure", "view"]),
    ("rules, tools", ["specials", "patterns", "onig", "files", "flat", "workers", "progress", "errors"]),
    ("kernels", ["_train", "_rankfile", "_jsonl", "_parquet", "_decode", "_calls", "_encode", "_caches", "_session",
                 "_lists", "_scanner", "unicode"]),
    ("kernel parts", ["_mergerule", "_wholechars", "_shortcache", "_sharedgeneral", "_tokenfilter", "_bytestable",
                        "_pairranks", "_pairmap", "_specials", "_utf8", "_checks", "_types", "_memory"]),
]
LAYERS = [module for _, floor in FLOORS for module in floor]


def diagram(width: int = 88) -> str:
    """The map's picture: each floor's modules, left to right in the order
    they may import one another (a subpackage as ``name/``, its modules
    after it), floors top to bottom."""
    lines = []
    for label, floor in FLOORS:
        if label == "kernels":
            lines.append(" below: the kernels, and the tables they load ".center(width, "─"))
        names = [module.split(".")[-1] if "." in module else module + ("/" if module in SUBPACKAGES else "")
                 for module in floor]
        line = f"{label:<20}"
        for name in names:
            if len(line) + len(name) + 2 > width and line.strip() != label:
                lines.append(line.rstrip())
                line = " " * 20
            line += name + "  "
        lines.append(line.rstrip())
    return "\n".join(lines)


#: The subpackages: a directory with an ``__init__.py``, described in the map as ``name/``.
SUBPACKAGES = {"tiktoken", "formats", "corpus", "huggingface"}

CYTHON_IMPORT = re.compile(r"^\s*(?:from\s+bpe(?:\.(\w+))?\s+c?import\s+([\w, ()]+)|(?:c?import)\s+bpe\.(\w+))",
                           re.MULTILINE)


def sources():
    """``{module name: [its source files]}`` of the package and its subpackages."""
    found = {}
    for directory, _, files in os.walk(PACKAGE):
        prefix = os.path.relpath(directory, PACKAGE).replace(os.sep, ".")
        if prefix != "." and "__init__.py" not in files:
            continue
        for name in files:
            stem, extension = os.path.splitext(name)
            if extension not in (".py", ".pyx", ".pxd"):
                continue
            if prefix == ".":
                module = stem
            else:
                module = prefix if stem == "__init__" else f"{prefix}.{stem}"
            found.setdefault(module, []).append(os.path.join(directory, name))
    return found


def modules():
    return set(sources())


def module_of(dotted: str) -> str:
    """The module a ``bpe.x.y`` import names: the longest known prefix of ``x.y``."""
    parts = dotted.split(".")[1:]
    known = modules()
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in known:
            return ".".join(parts[:end])
    return parts[0]


def imports_of(path: str) -> set[str]:
    """The bpe modules a source file imports, at any depth in it (docstrings aside)."""
    text = open(path, encoding="utf-8").read()
    found = set()
    if path.endswith(".py"):
        known = modules()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "bpe":
                        found.add("__init__")
                    elif alias.name.startswith("bpe."):
                        found.add(module_of(alias.name))
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module == "bpe":
                    found.update(alias.name if alias.name in known else "__init__" for alias in node.names)
                elif node.module.startswith("bpe."):
                    base = module_of(node.module)
                    for alias in node.names:
                        nested = f"{base}.{alias.name}"
                        found.add(nested if nested in known else base)
        return found
    code = re.sub(r'"""[\s\S]*?"""', "", text)      # Cython: not parsed, so drop docstrings
    for submodule, names, plain in CYTHON_IMPORT.findall(code):
        if submodule or plain:
            found.add(submodule or plain)
        else:
            found.update(name.strip(" ()") for name in names.split(",") if name.strip(" ()"))
    return found


def test_every_module_has_a_place():
    assert modules() == set(LAYERS), "place new modules in FLOORS and in docs/architecture.md"


def test_imports_go_down_the_layers():
    upward = []
    for module, paths in sources().items():
        for path in paths:
            for imported in imports_of(path):
                if imported != module and LAYERS.index(imported) <= LAYERS.index(module):
                    upward.append(f"{os.path.relpath(path, PACKAGE)} imports {imported}")
    assert upward == []


def test_the_map_lists_every_module_in_order():
    text = open(DOCS, encoding="utf-8").read()
    positions = []
    for name in LAYERS:
        path = name.replace(".", "/") + ("/__init__" if name in SUBPACKAGES else "")
        match = re.search(rf"^- `(?:{re.escape(path)}|{re.escape(name.replace('.', '/'))}/?)(?:\.(pyx|py|pxd))?`:",
                          text, re.MULTILINE)
        assert match, f"docs/architecture.md does not describe {name}"
        positions.append(match.start())
    assert positions == sorted(positions), "docs/architecture.md lists the modules out of order"


def test_the_map_s_picture_is_drawn_from_the_layers():
    text = open(DOCS, encoding="utf-8").read()
    drawn = re.search(r"^```\n(.*?)\n```", text, re.MULTILINE | re.DOTALL)
    assert drawn and drawn.group(1) == diagram(), \
        "docs/architecture.md's picture is not the layers': paste `python tests/test_architecture.py`"


def test_every_subpackage_is_packaged_and_every_kernel_built_with_a_stub():
    import tomllib

    root = os.path.join(PACKAGE, os.pardir)
    with open(os.path.join(root, "pyproject.toml"), "rb") as file:
        packages = tomllib.load(file)["tool"]["setuptools"]["packages"]
    assert sorted(packages) == sorted(["bpe", *(f"bpe.{name}" for name in SUBPACKAGES)])
    kernels = {name[:-len(".pyx")] for name in os.listdir(PACKAGE) if name.endswith(".pyx")}
    built = re.search(r"for name in \(([^)]*)\)", open(os.path.join(root, "setup.py"), encoding="utf-8").read())
    assert set(re.findall(r'"(\w+)"', built.group(1))) == kernels
    assert {name for name in kernels if not os.path.exists(os.path.join(PACKAGE, name + ".pyi"))} == set()


def test_names_that_moved_are_found_where_they_were_with_a_warning():
    import warnings

    import bpe.corpus
    import bpe.errors

    for name, home in (("plan_chunks", bpe.corpus), ("encode_shards", bpe.corpus),
                       ("TokenizerFileError", bpe.errors), ("TokenArrayError", bpe.errors)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert getattr(bpe, name) is getattr(home, name)
        assert [str(w.message) for w in caught] == [f"bpe.{name} is {home.__name__}.{name}"]
        assert name not in bpe.__all__
    assert "corpus" in dir(bpe) and set(bpe.corpus.__all__) <= set(dir(bpe.corpus))


def test_the_check_sees_imports():
    # The parser itself: a function-level import and a cimport both count.
    assert "corpus.driver" in imports_of(os.path.join(PACKAGE, "tokenizer.py"))
    assert {"_memory", "_types"} <= imports_of(os.path.join(PACKAGE, "_bytestable.pxd"))
    assert "unicode" in imports_of(os.path.join(PACKAGE, "_scanner.pyx"))


def test_loading_and_encoding_ascii_import_only_what_they_use():
    # Loading plus a first encode is timed against tiktoken's, so modules that
    # only some calls need are imported on use: regex (7 ms: custom patterns,
    # deriving Unicode tables, the text that is not ASCII), zipfile (4 ms: the
    # stored Unicode tables) and the executor module (5 ms: workers.map_ordered).
    # Neither encode nor encode_batch of ASCII text needs any of them.
    script = ("import sys, bpe; tok = bpe.load('cl100k_base'); tok.encode('hi'); "
              "tok.encode_batch(['hi'] * 3, num_threads=2); "
              "print(*sorted(set(sys.modules) & {'regex', 'zipfile', 'concurrent.futures'}))")
    imported = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert imported.stdout.split() == []


if __name__ == "__main__":
    print(diagram())
