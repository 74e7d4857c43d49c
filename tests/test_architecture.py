"""The modules of ``bpe`` import one way: down the order of docs/architecture.md.

A module may import (or cimport) only modules listed after it in ``LAYERS``,
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

#: Top to bottom. Python and Cython alike; a .pyx and its .pxd are one module.
LAYERS = [
    "__main__", "cli", "distributed", "__init__",                    # front doors
    "models", "encoding",                                            # tiktoken's interface
    "trainer",                                                       # training
    "tokenizer",                                                     # the tokenizer
    "shards",                                                        # sharded output
    "encode_file", "chunk_writer", "counting", "dataset", "token_array",   # whole corpora
    "encoder", "pretrained", "formats",                              # encoding, files
    "pure", "view",                                                  # the oracle, seeing tokens
    "chunking", "specials", "patterns", "files", "workers", "progress", "errors",   # rules, tools
    "_train", "_rankfile", "_encode", "_lists", "_scanner", "unicode",   # kernels
    "_shortcache", "_sharedgeneral", "_shortfilter", "_bytestable", "_pairranks", "_pairmap",    # kernel
    "_specials", "_utf8", "_checks", "_types", "_memory",                                      # headers
]

CYTHON_IMPORT = re.compile(r"^\s*(?:from\s+bpe(?:\.(\w+))?\s+c?import\s+([\w, ()]+)|(?:c?import)\s+bpe\.(\w+))",
                           re.MULTILINE)


def modules():
    names = set()
    for name in os.listdir(PACKAGE):
        stem, extension = os.path.splitext(name)
        if extension in (".py", ".pyx", ".pxd"):
            names.add(stem)
    return names


def imports_of(path: str) -> set[str]:
    """The bpe modules a source file imports, at any depth in it (docstrings aside)."""
    text = open(path, encoding="utf-8").read()
    found = set()
    if path.endswith(".py"):
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "bpe":
                        found.add("__init__")
                    elif alias.name.startswith("bpe."):
                        found.add(alias.name.split(".")[1])
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module == "bpe":
                    found.update(alias.name if alias.name in modules() else "__init__" for alias in node.names)
                elif node.module.startswith("bpe."):
                    found.add(node.module.split(".")[1])
        return found
    code = re.sub(r'"""[\s\S]*?"""', "", text)      # Cython: not parsed, so drop docstrings
    for submodule, names, plain in CYTHON_IMPORT.findall(code):
        if submodule or plain:
            found.add(submodule or plain)
        else:
            found.update(name.strip(" ()") for name in names.split(",") if name.strip(" ()"))
    return found


def test_every_module_has_a_place():
    assert modules() == set(LAYERS), "place new modules in LAYERS and in docs/architecture.md"


def test_imports_go_down_the_layers():
    upward = []
    for name in os.listdir(PACKAGE):
        stem, extension = os.path.splitext(name)
        if extension not in (".py", ".pyx", ".pxd"):
            continue
        for imported in imports_of(os.path.join(PACKAGE, name)):
            if imported != stem and LAYERS.index(imported) <= LAYERS.index(stem):
                upward.append(f"{name} imports {imported}")
    assert upward == []


def test_the_map_lists_every_module_in_order():
    text = open(DOCS, encoding="utf-8").read()
    positions = []
    for name in LAYERS:
        match = re.search(rf"^- `{re.escape(name)}\.(pyx|py|pxd)`:", text, re.MULTILINE)
        assert match, f"docs/architecture.md does not describe {name}"
        positions.append(match.start())
    assert positions == sorted(positions), "docs/architecture.md lists the modules out of order"


def test_the_check_sees_imports():
    # The parser itself: a function-level import and a cimport both count.
    assert "encode_file" in imports_of(os.path.join(PACKAGE, "tokenizer.py"))
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
