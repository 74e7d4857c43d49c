"""Files in and out: the list of inputs, UTF-8 checks of what is read, atomic writes.

Every output bpe writes goes through a temporary name in the destination's
directory and is renamed once complete, so a reader sees the old file or the
new one, never a half-written one.
"""
from __future__ import annotations

import os
import stat
from typing import Iterable, Union

from bpe._scanner import first_invalid_utf8
from bpe.errors import CorpusDecodeError, MissingExtraError

PathLike = Union[str, bytes, "os.PathLike[str]"]
ERRORS = ("strict", "replace")


def check_regular_files(paths: Iterable[str]) -> list[os.stat_result]:
    """The status of each input, refused unless it is a regular file whose size is
    what can be read (a FIFO or a /proc file would give nothing, silently)."""
    statuses = []
    for path in paths:
        status = os.stat(path)
        if not stat.S_ISREG(status.st_mode):
            raise ValueError(f"{path}: not a regular file (a pipe, device or socket cannot be "
                             "cut into chunks); copy it to a file first")
        if status.st_size == 0:
            with open(path, "rb") as file:
                if file.read(1):
                    raise ValueError(f"{path}: reports a size of 0 but has content (a /proc or "
                                     "other virtual file); copy it to a file first")
        statuses.append(status)
    return statuses


def same_file(path: str, other: str) -> bool:
    """Whether two paths name one file (through links too); False if either is missing."""
    try:
        return os.path.samefile(path, other)
    except OSError:
        return os.path.realpath(path) == os.path.realpath(other)


def refuse_overwriting_inputs(outputs: Iterable[str], inputs: Iterable[str]) -> None:
    """Raise before anything is written if an output would replace an input."""
    inputs = list(inputs)
    for output in outputs:
        for path in inputs:
            if same_file(output, path):
                raise ValueError(f"{output}: is the input {path}; writing there would replace "
                                 "the corpus (choose another output path)")


def check_errors(errors: str) -> str:
    """The ``errors`` argument: "strict" (invalid UTF-8 raises) or "replace" (U+FFFD)."""
    if errors not in ERRORS:
        raise ValueError(f"errors must be 'strict' or 'replace', got {errors!r}")
    return errors


def checked_utf8(raw, path: str, start: int, errors: str):
    """``raw`` (bytes-like, read from ``path`` at byte ``start``) checked to be UTF-8;
    with errors="replace", invalid bytes become U+FFFD (in new bytes)."""
    bad = first_invalid_utf8(raw)
    if bad < 0:
        return raw
    if errors == "replace":
        return bytes(raw).decode("utf-8", errors="replace").encode("utf-8")
    try:   # for the reason, as Python words it
        bytes(raw[bad:bad + 4]).decode("utf-8")
        reason = "invalid byte"
    except UnicodeDecodeError as e:
        reason = e.reason
    raise CorpusDecodeError(path, start + bad, reason)


def read_into(file, view: memoryview, piece: int = 0) -> int:
    """Fill ``view`` from ``file`` (readinto may read less than asked), ``piece``
    bytes a call if given; the bytes read. (zstandard's decompressor holds the
    GIL for a whole call: a worker waiting for it to start or finish a kernel
    call waits as long, so a stream of it is read a piece at a time. Reading
    4 MiB at once, a third of the wall time of encoding a .jsonl.zst went so.)"""
    done = 0
    while done < len(view):
        n = file.readinto(view[done:done + piece] if piece else view[done:])
        if not n:
            break
        done += n
    return done


def zstd_reader(raw, path: str, piece: int):
    """A zstd decompressor's stream of ``raw`` (every frame in it), read ``piece``
    bytes at a time; ``MissingExtraError`` naming ``path`` without zstandard."""
    try:
        import zstandard
    except ImportError:
        raise MissingExtraError(f"{path}: reading zstd needs the zstandard package: "
                                'pip install "bpe[formats]" (or zstandard)') from None
    return zstandard.ZstdDecompressor().stream_reader(raw, read_size=piece, read_across_frames=True)


def create_temporary(directory: str, prefix: str = ".tmp-", suffix: str = "") -> tuple[int, str]:
    """A new file in ``directory`` under a fresh name, open for writing: ``(fd, path)``.

    Unlike ``tempfile.mkstemp`` (mode 0600), its mode is what the user's umask
    gives any new file: the file is renamed into place as an output.
    """
    while True:
        path = os.path.join(directory, f"{prefix}{os.urandom(6).hex()}{suffix}")
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), path
        except FileExistsError:
            continue


def atomic_write_text(path: str, text: str) -> None:
    """Write ``text`` under a temporary name and rename it to ``path`` once complete."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str, data: bytes) -> None:
    """Write ``data`` under a temporary name and rename it to ``path`` once complete."""
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: is a directory, not a file to write")
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = create_temporary(directory)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
