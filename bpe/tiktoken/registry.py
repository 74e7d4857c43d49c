"""``tiktoken.registry``: encodings by name. Those tiktoken itself defines ship
with bpe (``bpe.tiktoken.openai_public``) and load offline; encodings other
packages add as tiktoken plugins (modules of the ``tiktoken_ext`` namespace
package that define ``ENCODING_CONSTRUCTORS``) are found as tiktoken finds them."""
from __future__ import annotations

import functools
import importlib
import importlib.machinery
import pkgutil
import sys
import threading
from typing import Any, Callable, Optional, Sequence

from bpe.tiktoken import openai_public
from bpe.tiktoken.core import TIKTOKEN_VERSION, Encoding
from bpe.workers import fork_safe_lock

_lock = fork_safe_lock(sys.modules[__name__], "_lock", threading.RLock)
#: Each encoding made so far: ``get_encoding`` gives the same object every time.
ENCODINGS: dict[str, Encoding] = {}
#: Every known encoding's constructor, found on first use.
ENCODING_CONSTRUCTORS: Optional[dict[str, Callable[[], dict[str, Any]]]] = None
#: The module tiktoken's own encodings live in; bpe ships its own of them.
_OWN_PLUGIN = "tiktoken_ext.openai_public"


@functools.lru_cache
def _available_plugin_modules() -> Sequence[str]:
    """The plugin modules of the ``tiktoken_ext`` namespace package, as found on
    ``sys.path`` (never bpe's own stand-in for it), ours first."""
    spec = importlib.machinery.PathFinder.find_spec("tiktoken_ext")
    found = [] if spec is None or spec.submodule_search_locations is None else [
        f"tiktoken_ext.{name}" for _, name, _ in pkgutil.iter_modules(spec.submodule_search_locations)]
    return [_OWN_PLUGIN] + [name for name in found if name != _OWN_PLUGIN]


def _find_constructors() -> None:
    global ENCODING_CONSTRUCTORS
    with _lock:
        if ENCODING_CONSTRUCTORS is not None:
            return
        ENCODING_CONSTRUCTORS = {}
        try:
            for mod_name in _available_plugin_modules():
                module = openai_public if mod_name == _OWN_PLUGIN else importlib.import_module(mod_name)
                constructors = getattr(module, "ENCODING_CONSTRUCTORS", None)
                if constructors is None:
                    raise ValueError(f"tiktoken plugin {mod_name} does not define ENCODING_CONSTRUCTORS")
                for enc_name, constructor in constructors.items():
                    if enc_name in ENCODING_CONSTRUCTORS:
                        raise ValueError(f"Duplicate encoding name {enc_name} in tiktoken plugin {mod_name}")
                    ENCODING_CONSTRUCTORS[enc_name] = constructor
        except Exception:
            ENCODING_CONSTRUCTORS = None
            raise


def get_encoding(encoding_name: str) -> Encoding:
    """The encoding of that name (the same object on every call); tiktoken's own
    are shipped with bpe and load offline."""
    if not isinstance(encoding_name, str):
        raise ValueError(f"Expected a string in get_encoding, got {type(encoding_name)}")
    encoding = ENCODINGS.get(encoding_name)
    if encoding is not None:
        return encoding
    with _lock:
        if encoding_name in ENCODINGS:
            return ENCODINGS[encoding_name]
        if encoding_name in openai_public.ENCODING_CONSTRUCTORS:
            # Straight from the shipped arrays, sharing the tokenizer bpe.load gives:
            # no dict of 200 000 ranks is built, as tiktoken's constructors build.
            encoding = openai_public.shipped_encoding(encoding_name)
        else:
            _find_constructors()
            assert ENCODING_CONSTRUCTORS is not None
            if encoding_name not in ENCODING_CONSTRUCTORS:
                raise ValueError(f"Unknown encoding {encoding_name}.\n"
                                 f"Plugins found: {_available_plugin_modules()}\n"
                                 f"tiktoken version: {TIKTOKEN_VERSION} (are you on latest?)")
            encoding = Encoding(**ENCODING_CONSTRUCTORS[encoding_name]())
        encoding._by_name = get_encoding          # pickles by name (``Encoding.__reduce__``)
        ENCODINGS[encoding_name] = encoding
        return encoding


def list_encoding_names() -> list[str]:
    """Every encoding ``get_encoding`` knows: tiktoken's, then any plugin's."""
    with _lock:
        _find_constructors()
        return list(ENCODING_CONSTRUCTORS)
