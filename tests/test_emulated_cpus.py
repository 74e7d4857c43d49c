"""The CPUs bpe installs on, beyond the one the tests run on.

The scanners pick a block classifier at run time (AVX-512, AVX2, SSE2 on
x86-64; NEON on arm64). The other tests force each path this CPU runs; these
run the package on CPUs emulated by Debian's qemu-user, where the default
choice and the absence of instructions the CPU lacks are what is tested:

* ``qemu-x86_64 -cpu SandyBridge`` (AVX, no AVX2) and ``-cpu Haswell`` (AVX2,
  no AVX-512) run ``tests/cpu_check.py``: scanners against ``regex``, encoding
  against tiktoken, a training against ``bpe.pure``, and the path chosen;
* ``tests/classify_check.c`` and ``tests/lanes_check.c``, cross-compiled for
  aarch64 and run under ``qemu-aarch64``, check the portable and NEON
  classifiers against a loop over the bytes and the NEON helpers (ASCII runs,
  id lanes) against the portable ones, and natively the x86-64 ones;
* the package itself, built for aarch64 by ``.ci/arm64`` (Debian's arm64
  Python, the registries' aarch64 wheels), runs ``tests/cpu_check.py`` under
  ``qemu-aarch64`` with the NEON path (``BPE_ARM64_PYTHON``).

``.ci/run`` installs qemu-user and gcc-aarch64-linux-gnu and runs
``.ci/arm64``; without them these tests are skipped, saying so.
"""
import atexit
import ctypes
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
CPU_CHECK = os.path.join(TESTS, "cpu_check.py")
EMULATES_X86 = platform.machine() == "x86_64" and shutil.which("qemu-x86_64") is not None
ARM64_PYTHON = os.environ.get("BPE_ARM64_PYTHON")
PR_SET_PDEATHSIG = 1                   # linux/prctl.h


def _die_with_parent() -> None:
    """In the child: ask Linux to kill it if the session dies first (a CI
    timeout's SIGKILL runs no atexit). qemu is exec'd (``.ci/arm64``'s python
    too), and the request outlives exec."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class EmulatedRun:
    """``cpu_check.py`` on an emulated CPU, started when made; ``result`` waits
    for it. Its output goes to files (a pipe nobody reads could fill). With
    ``elsewhere`` it runs in a directory of its own, where no package of this
    tree is found (the arm64 Python must import the one built for it)."""

    def __init__(self, command: list[str], elsewhere: bool):
        self.cwd = tempfile.mkdtemp(prefix="bpe-emulated-") if elsewhere else None
        self.out, self.err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self.process = subprocess.Popen(command, stdout=self.out, stderr=self.err, cwd=self.cwd,
                                        preexec_fn=_die_with_parent)

    def result(self) -> tuple[int, str, str]:
        """Its exit status, stdout and stderr."""
        returncode = self.process.wait(timeout=1800)
        texts = []
        for file in (self.out, self.err):
            file.seek(0)
            texts.append(file.read().decode("utf-8", "replace"))
        return returncode, *texts

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.cwd is not None:
            shutil.rmtree(self.cwd, ignore_errors=True)


#: The runs, by (cpu, path). Each is a minute or so of one core under qemu, and
#: most tests use one core: ``start_emulated_run`` (called by conftest's
#: ``pytest_collection_modifyitems``) starts the runs the session's tests will
#: check as the session starts, so that they run beside the other tests; a
#: test whose run was not started so starts it.
_runs: dict[tuple[str, str], EmulatedRun] = {}


def emulated_run(cpu: str, path: str) -> EmulatedRun:
    if (cpu, path) not in _runs:
        if cpu == "arm64":
            command = [ARM64_PYTHON, CPU_CHECK, path]
        else:
            command = ["qemu-x86_64", "-cpu", cpu, sys.executable, CPU_CHECK, path]
        _runs[cpu, path] = EmulatedRun(command, elsewhere=cpu == "arm64")
    return _runs[cpu, path]


def start_emulated_run(item: pytest.Item) -> None:
    """Start the run ``item`` checks, if it checks one and is not skipped."""
    if item.originalname == "test_exact_on_an_emulated_cpu_with_its_default_path" and EMULATES_X86:
        emulated_run(item.callspec.params["cpu"], item.callspec.params["path"])
    elif item.originalname == "test_exact_on_emulated_arm64_with_its_default_path" and ARM64_PYTHON:
        emulated_run("arm64", "neon")


@atexit.register
def _stop_runs() -> None:
    for run in _runs.values():
        run.stop()


@pytest.mark.skipif(not EMULATES_X86, reason="needs an x86-64 machine and qemu-x86_64 (Debian's qemu-user)")
@pytest.mark.parametrize("cpu, path", [("SandyBridge", "sse2"), ("Haswell", "avx2")])
def test_exact_on_an_emulated_cpu_with_its_default_path(cpu, path):
    returncode, out, err = emulated_run(cpu, path).result()
    assert returncode == 0 and out.split() == ["ok", path], (out[-2000:], err[-3000:])


@pytest.mark.skipif(not ARM64_PYTHON,
                    reason="needs BPE_ARM64_PYTHON, an emulated aarch64 Python with bpe built for it (.ci/arm64)")
def test_exact_on_emulated_arm64_with_its_default_path(tmp_path):
    run = emulated_run("arm64", "neon")
    where = subprocess.run([ARM64_PYTHON, "-c", "import bpe, platform; print(platform.machine(), bpe.__file__)"],
                           capture_output=True, text=True, timeout=600, cwd=tmp_path)
    machine, package = where.stdout.split()
    source_tree = os.path.realpath(os.path.join(TESTS, os.pardir, "bpe"))
    assert machine == "aarch64" and os.path.realpath(os.path.dirname(package)) != source_tree, \
        (where.stdout, where.stderr[-2000:])
    returncode, out, err = run.result()
    assert returncode == 0 and out.split() == ["ok", "neon"], (out[-2000:], err[-3000:])


def compile_and_run(tmp_path, compiler: list, runner: list, source: str = "classify_check.c") -> list[str]:
    binary = str(tmp_path / source.replace(".c", ""))
    subprocess.run([*compiler, "-O2", "-Wall", "-Werror", os.path.join(TESTS, source), "-o", binary],
                   check=True, capture_output=True, text=True)
    out = subprocess.run([*runner, binary], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:]
    return out.stdout.split()


@pytest.mark.skipif(shutil.which("aarch64-linux-gnu-gcc") is None or shutil.which("qemu-aarch64") is None,
                    reason="needs aarch64-linux-gnu-gcc and qemu-aarch64 (Debian's gcc-aarch64-linux-gnu, qemu-user)")
def test_the_portable_and_neon_classifiers_equal_a_loop_over_the_bytes(tmp_path):
    assert compile_and_run(tmp_path, ["aarch64-linux-gnu-gcc", "-static"], ["qemu-aarch64"]) == ["scalar", "81921", "neon", "81921"]


@pytest.mark.skipif(shutil.which("aarch64-linux-gnu-gcc") is None or shutil.which("qemu-aarch64") is None,
                    reason="needs aarch64-linux-gnu-gcc and qemu-aarch64 (Debian's gcc-aarch64-linux-gnu, qemu-user)")
def test_the_neon_lane_helpers_equal_the_portable_ones(tmp_path):
    found = compile_and_run(tmp_path, ["aarch64-linux-gnu-gcc", "-static"], ["qemu-aarch64"], "lanes_check.c")
    assert found[:2] == ["neon", "neon"] and int(found[2]) > 100_000


@pytest.mark.skipif(platform.machine() != "x86_64" or shutil.which("gcc") is None,
                    reason="the x86-64 helpers need an x86-64 machine and gcc")
def test_the_sse2_lane_helpers_equal_the_portable_ones(tmp_path):
    found = compile_and_run(tmp_path, ["gcc"], [], "lanes_check.c")
    assert found[:2] == ["sse2", "sse2"] and int(found[2]) > 100_000


@pytest.mark.skipif(platform.machine() != "x86_64" or shutil.which("gcc") is None,
                    reason="the x86-64 classifiers need an x86-64 machine and gcc")
def test_every_x86_classifier_this_cpu_runs_equals_a_loop_over_the_bytes(tmp_path):
    from bpe import _scanner

    found = compile_and_run(tmp_path, ["gcc"], [])
    expected = [path for path in ("scalar", "sse2", "avx2", "avx512") if path in _scanner.simd_paths()]
    assert found == [word for path in expected for word in (path, "81921")]
