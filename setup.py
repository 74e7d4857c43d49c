"""Build the Cython kernels.

Compiler directives are set here, once, for every extension. ``BPE_CYTHON_DEBUG=1``
rebuilds with bounds, wrap-around and initialisation checks on, without
optimisation, so the test suite can also run against a checked build.
"""
import gzip
import os
import sys

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("BPE_CYTHON_DEBUG", "") not in ("", "0")

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}
compile_args = ["-O0", "-g", "-UNDEBUG"] if DEBUG else ["-O3"]

extensions = [
    Extension(f"bpe.{name}", [f"bpe/{name}.pyx"], extra_compile_args=compile_args,
              define_macros=[("BPE_DEBUG_BUILD", "1" if DEBUG else "0")],
              # _memory hands numpy an allocator for id arrays (PyDataMem_SetHandler).
              include_dirs=[numpy.get_include()] if name == "_memory" else [])
    for name in ("_memory", "_types", "_scanner", "_session", "_encode", "_lists", "_decode", "_train", "_rankfile",
                 "_jsonl", "_parquet", "_calls")
]



def unpack_rank_files() -> None:
    """tiktoken's rank files for cl100k_base and o200k_base, decompressed beside
    their ``.gz`` (which stay in git: the repository holds each once, compressed).
    Loading then reads the file without inflating it (1.7 and 3.6 MB: 8 and
    17 ms of a first encode that is timed against tiktoken's). ``bpe.pretrained``
    reads a file only if it is as long as its ``.gz`` says, else the ``.gz``;
    so a failure here only warns."""
    for name in ("cl100k_base", "o200k_base"):
        packed = os.path.join("bpe", "data", f"{name}.tiktoken.gz")
        plain, partial = packed[:-len(".gz")], packed[:-len(".gz")] + ".partial"
        try:
            with gzip.open(packed, "rb") as source, open(partial, "wb") as target:
                target.write(source.read())
            os.replace(partial, plain)
        except OSError as e:
            print(f"warning: {packed} was not decompressed ({e!r}); bpe will read it compressed",
                  file=sys.stderr)


unpack_rank_files()
setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives=directives,
        # Always regenerate: C files left by a debug build must not leak into a
        # release build (or the reverse) through cythonize's timestamp check.
        force=True,
    ),
)
