"""Build the Cython kernels.

Compiler directives are set here, once, for every extension. ``BPE_CYTHON_DEBUG=1``
rebuilds with bounds, wrap-around and initialisation checks on, without
optimisation, so the test suite can also run against a checked build.

The build also derives the native pre-tokenizers' Unicode tables from the
``regex`` it runs with and ships them (``bpe.unicode.save_tables``), so a
process whose ``regex`` is that version does not derive them again.
"""
import importlib.util
import os
import sys

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



def save_unicode_tables() -> None:
    """``bpe.unicode.save_tables``, run from its file: the package itself cannot be
    imported before its kernels are built. Without the tables bpe still works
    (it derives them at run time), so a failure here only warns."""
    try:
        spec = importlib.util.spec_from_file_location("_bpe_unicode_for_build", os.path.join("bpe", "unicode.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.save_tables(os.path.join("bpe", "data", "unicode_tables.npz"))
    except Exception as e:   # noqa: BLE001 - any failure leaves run-time derivation in place
        print(f"warning: the Unicode tables were not derived ({e!r}); bpe will derive them at run time",
              file=sys.stderr)


save_unicode_tables()
setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives=directives,
        # Always regenerate: C files left by a debug build must not leak into a
        # release build (or the reverse) through cythonize's timestamp check.
        force=True,
    ),
)
