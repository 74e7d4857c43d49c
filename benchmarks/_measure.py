"""What the scripts beside the suite share: run a command and measure its wall
time and the peak RSS of its whole process tree, and save what was measured as
the suite saves it (pytest-benchmark's layout: machine, commit, library
versions, and per measurement its group, rounds and extra_info), so that
``benchmarks/report.py`` reads both alike."""
from __future__ import annotations

import datetime
import json
import os
import statistics
import subprocess
import sys
import time

import psutil

SAMPLE_SECONDS = 0.02
#: Listing a process tree scans all of /proc (~1.5 ms here): done every 50th
#: sample only, or the measuring would take ~9% of a core from what it measures.
TREE_REFRESH_SECONDS = 0.5


def process_tree(process: psutil.Process) -> list[psutil.Process]:
    """A process and all its descendants (empty once it has exited)."""
    try:
        return [process] + process.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def total_rss(processes: list[psutil.Process]) -> int:
    """Resident bytes of the processes still running."""
    total = 0
    for p in processes:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def read_sample(corpus: str, mb: float) -> tuple[str, list[str], float]:
    """The first ``mb`` megabytes of a corpus: its text, its documents (split at
    <|endoftext|>) and its size in MB of UTF-8."""
    with open(corpus, encoding="utf-8") as f:
        text = f.read(int(mb * 1e6))
    return text, text.split("<|endoftext|>"), len(text.encode("utf-8")) / 1e6


def fresh_copies(documents: list[str]) -> list[str]:
    """New str objects equal to ``documents``, for a cold round.

    A library that reads a str through ``PyUnicode_AsUTF8AndSize`` (PyO3's
    ``&str``: gigatoken, tiktoken) leaves the str's UTF-8 cached in the object,
    so the same objects encode faster the second time whatever the library's
    own caches hold. Cold rounds therefore start from objects no engine has
    seen; warm rounds reuse them, as a caller encoding the same text twice would."""
    return [document.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")
            for document in documents]


def timed_over(function, documents) -> float:
    """The wall time of ``function`` called on each of ``documents`` in turn, in seconds."""
    started = time.perf_counter()
    for document in documents:
        function(document)
    return time.perf_counter() - started


def cold_warm_summary(rounds: list[tuple[float, float]]) -> dict:
    """The best and the median of rounds' (cold, warm) speeds, as the
    per-document scripts print them."""
    colds, warms = [cold for cold, _ in rounds], [warm for _, warm in rounds]
    return {"cold_best": round(max(colds), 1), "cold_median": round(statistics.median(colds), 1),
            "warm_best": round(max(warms), 1), "warm_median": round(statistics.median(warms), 1)}


def remove_token_array(path: str) -> None:
    """Delete what encode_file wrote at ``path``: the array and its two sidecars."""
    for written in (path, path + ".json", path + ".docs.npy"):
        if os.path.exists(written):
            os.unlink(written)


def best_of(function, repeats: int = 3, setup=None) -> float:
    """The shortest wall time of ``repeats`` calls of ``function``, in seconds;
    ``setup`` (untimed) runs before each, e.g. to empty a tokenizer's caches."""
    best = float("inf")
    for _ in range(repeats):
        if setup is not None:
            setup()
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def run_measured(argv: list[str], timeout: float = 1800) -> dict:
    """Run ``argv`` (which prints one JSON object last) and add wall seconds and peak tree RSS."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    process = psutil.Process(child.pid)
    peak = 0
    tree, listed_at = [process], start
    while child.poll() is None:
        if time.perf_counter() - listed_at > TREE_REFRESH_SECONDS:
            tree, listed_at = process_tree(process), time.perf_counter()
        peak = max(peak, total_rss(tree))
        time.sleep(SAMPLE_SECONDS)
        if time.perf_counter() - start > timeout:
            child.kill()
            raise TimeoutError(f"{argv} took over {timeout} s")
    out = child.stdout.read()
    if child.returncode != 0:
        raise RuntimeError(f"{argv} failed with exit code {child.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    result["process_seconds"] = time.perf_counter() - start
    result["peak_rss_mib"] = peak / 2**20
    return result


if __name__ == "__main__":
    print(run_measured(sys.argv[1:]))


def entry(group: str, name: str, seconds: list[float], **extra_info) -> dict:
    """One measurement, as pytest-benchmark saves one: its rounds' statistics."""
    stats = {"min": min(seconds), "max": max(seconds), "mean": statistics.fmean(seconds),
             "median": statistics.median(seconds), "rounds": len(seconds), "data": list(seconds)}
    return {"group": group, "name": name, "fullname": name, "params": None, "param": None,
            "extra_info": extra_info, "options": {}, "stats": stats}


def save(path: str, entries: list[dict]) -> None:
    """Write ``entries`` with the machine, the commit and the library versions,
    complete or not at all."""
    from pytest_benchmark.plugin import pytest_benchmark_generate_machine_info
    from pytest_benchmark.utils import get_commit_info

    from peers import versions

    machine = pytest_benchmark_generate_machine_info()
    machine["libraries"] = versions()
    record = {"machine_info": machine, "commit_info": get_commit_info(),
              "datetime": datetime.datetime.now(datetime.timezone.utc).isoformat(), "version": "script",
              "benchmarks": entries}
    with open(path + ".part", "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    os.replace(path + ".part", path)
