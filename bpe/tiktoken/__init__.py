"""tiktoken's module, on bpe's kernels: ``tiktoken.core``, ``tiktoken.load``,
``tiktoken.model``, ``tiktoken.registry`` and the encodings of
``tiktoken_ext.openai_public``, every one of them shipped and offline.

Code that imports tiktoken itself (a library) gets this package with
``bpe.install_as_tiktoken()`` (or ``bpe.tiktoken.install()``), called before it
imports tiktoken: ``import tiktoken``, ``from tiktoken.load import
load_tiktoken_bpe`` and the rest then give these modules.

>>> import bpe.tiktoken as tiktoken
>>> tiktoken.get_encoding("cl100k_base").encode("hello world")
[15339, 1917]
"""
from __future__ import annotations

import importlib.machinery
import sys
import types

from bpe.tiktoken import core, load, model, openai_public, registry
from bpe.tiktoken.core import TIKTOKEN_VERSION, Encoding
from bpe.tiktoken.model import encoding_for_model, encoding_name_for_model
from bpe.tiktoken.registry import get_encoding, list_encoding_names

__version__ = TIKTOKEN_VERSION

__all__ = ["Encoding", "encoding_for_model", "encoding_name_for_model", "get_encoding", "install",
           "list_encoding_names"]


def install() -> None:
    """Make ``import tiktoken`` give this package, and ``tiktoken.core``,
    ``tiktoken.load``, ``tiktoken.model``, ``tiktoken.registry`` and
    ``tiktoken_ext.openai_public`` its modules, for the rest of the process
    (the habit of ``pymysql.install_as_MySQLdb()``). Call it before the code
    that imports tiktoken; a tiktoken imported before keeps its own objects."""
    package = sys.modules[__name__]
    sys.modules["tiktoken"] = package
    for name in ("core", "load", "model", "registry"):
        sys.modules[f"tiktoken.{name}"] = getattr(package, name)
    # tiktoken_ext is a namespace package other packages add plugins to: the one on
    # sys.path (if any) keeps its path, so their plugins still import; tiktoken's
    # own plugin module is ours.
    namespace = sys.modules.get("tiktoken_ext")
    if namespace is None:
        namespace = types.ModuleType("tiktoken_ext")
        spec = importlib.machinery.PathFinder.find_spec("tiktoken_ext")
        namespace.__path__ = list(spec.submodule_search_locations) if spec and spec.submodule_search_locations \
            else []
        sys.modules["tiktoken_ext"] = namespace
    namespace.openai_public = openai_public
    sys.modules["tiktoken_ext.openai_public"] = openai_public
