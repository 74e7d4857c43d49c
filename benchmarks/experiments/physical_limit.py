"""How far the scan and the encoder are from what the machine can do: bytes per
cycle of the pre-tokenizer and of warm encoding, next to one core's memory
bandwidth, all measured in one run on one thread.

    PYTHONPATH=benchmarks python benchmarks/experiments/physical_limit.py --corpus ~/.cache/bpe-corpora/prose_en.txt

Cycles are counted at the clock /proc/cpuinfo reports (a VM's nominal clock;
turbo would make the true figure per cycle lower). Memory bandwidth is one
thread reading a 1 GiB array (numpy's sum) and copying it (numpy's copyto):
what a scan that streams its input could at best reach.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import bpe
from bpe import _scanner

from _measure import best_of, read_sample  # noqa: E402


def clock_hz() -> float:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("cpu MHz"):
                return float(line.split(":")[1]) * 1e6
    raise RuntimeError("/proc/cpuinfo names no clock")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--mb", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    _, documents, mb = read_sample(args.corpus, args.mb)
    data = "".join(documents).encode("utf-8")
    hz = clock_hz()
    print(f"{os.path.basename(args.corpus)}: {len(data) / 1e6:.1f} MB, clock {hz / 1e9:.2f} GHz "
          f"(/proc/cpuinfo), 1 thread, best of {args.rounds}, SIMD path {_scanner.simd_path()}")
    print(f"{'what':<34} {'MB/s':>8} {'bytes/cycle':>12}")
    for name, encoding in (("gpt2", "gpt2"), ("cl100k", "cl100k_base"), ("o200k", "o200k_base")):
        pattern = _scanner.PATTERN_IDS[name]
        # One pre-token at a time (counting's scan), and a window's at once (encoding's).
        for label, scan in (("scan, ", lambda: _scanner.split_offsets(data, pattern)),
                            ("scan in batches, ", lambda: _scanner.fill_offsets(data, pattern, 64))):
            seconds = best_of(scan, args.rounds)
            print(f"{label + name:<34} {len(data) / seconds / 1e6:>8.0f} {len(data) / seconds / hz:>12.3f}")
        encoder = bpe.load(encoding).encoder
        encoder.encode_strs(documents, [])
        seconds = best_of(lambda: encoder.encode_strs(documents, []), args.rounds)
        print(f"{'encode warm, ' + encoding:<34} {len(data) / seconds / 1e6:>8.0f} "
              f"{len(data) / seconds / hz:>12.3f}")
    array = np.ones(1 << 27, dtype=np.uint64)        # 1 GiB
    target = np.empty_like(array)
    np.copyto(target, array)                            # fault the pages in first
    seconds = best_of(lambda: array.sum(), 3)
    print(f"{'memory read (sum of 1 GiB)':<34} {array.nbytes / seconds / 1e6:>8.0f} "
          f"{array.nbytes / seconds / hz:>12.3f}")
    seconds = best_of(lambda: np.copyto(target, array), 3)
    print(f"{'memory copy (1 GiB, read + write)':<34} {array.nbytes / seconds / 1e6:>8.0f} "
          f"{array.nbytes / seconds / hz:>12.3f}")


if __name__ == "__main__":
    sys.exit(main())
