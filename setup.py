"""Build the Cython kernels.

Compiler directives are set here, once, for every extension. ``BPE_CYTHON_DEBUG=1``
rebuilds with bounds, wrap-around and initialisation checks on, without
optimisation, so the test suite can also run against a checked build.
"""
import os

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
              define_macros=[("BPE_DEBUG_BUILD", "1" if DEBUG else "0")])
    for name in ("_memory", "_types", "_scanner", "_encode", "_lists", "_train", "_rankfile")
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives=directives,
        # Always regenerate: C files left by a debug build must not leak into a
        # release build (or the reverse) through cythonize's timestamp check.
        force=True,
    ),
)
