"""Time to a first encode in a fresh process: import, load a pretrained vocabulary,
encode a short text. bpe against tiktoken (offline, from the files bpe ships).

    python benchmarks/bench_load.py

Each figure is the best of --repeats fresh processes: a script that loads a
tokenizer pays all of it once, before any text is encoded. The tiktoken process
imports only tiktoken: its offline cache of the shipped files is prepared here,
before any is timed. Both import from compiled bytecode, as an installed package
does (pip compiles it at install): the timed processes may write ``__pycache__``
even where PYTHONDONTWRITEBYTECODE is set, and one untimed run of each writes it.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

ONE_RUN = """
import time
start = time.perf_counter()
if {library!r} == "bpe":
    import bpe
    encoding = bpe.load({name!r})
else:
    import tiktoken
    encoding = tiktoken.get_encoding({name!r})
encoding.encode("hello world")
print(time.perf_counter() - start)
"""


def first_encode_seconds(library: str, name: str) -> float:
    code = ONE_RUN.format(library=library, name=name)
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                text=True, env=environment).stdout)


def prepare_tiktoken_cache() -> None:
    """tiktoken's offline cache of the files bpe ships, named in the environment
    the timed processes inherit."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from tiktoken_reference import get_encoding

    get_encoding("gpt2")        # writes the cache and sets TIKTOKEN_CACHE_DIR


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encodings", default="gpt2,cl100k_base,o200k_base")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    prepare_tiktoken_cache()
    print(f"{'encoding':<12} {'bpe s':>6} {'tiktoken s':>11}   (import + load + first encode, "
          f"best of {args.repeats} fresh processes)")
    for name in args.encodings.split(","):
        best = {library: float("inf") for library in ("bpe", "tiktoken")}
        for library in best:
            first_encode_seconds(library, name)       # untimed: writes the bytecode
        for _ in range(args.repeats):
            for library in best:          # alternating, so both see the same machine
                best[library] = min(best[library], first_encode_seconds(library, name))
        print(f"{name:<12} {best['bpe']:>6.3f} {best['tiktoken']:>11.3f}", flush=True)


if __name__ == "__main__":
    main()
