"""How encode_batch scales from 1 to 2 threads, measured with care on a noisy machine.

    python benchmarks/bench_encode_batch.py --corpus ~/.cache/bpe-corpora/prose_en.txt --mb 20
    python benchmarks/bench_encode_batch.py --corpus ~/.cache/bpe-corpora/code_linux.txt --mb 20

The sample is the first --mb megabytes, cut into documents at <|endoftext|>. One
and two threads run alternately, --repeats times each, and the best time of each
counts: the two are measured under the same conditions, so their ratio is
meaningful even where the machine's speed drifts.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import bpe

sys.path.insert(0, os.path.dirname(__file__))
from _measure import read_sample  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--mb", type=float, default=20)
    parser.add_argument("--encodings", default="gpt2,o200k_base")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="append results to this JSON-lines file")
    args = parser.parse_args()
    _, documents, n_mb = read_sample(args.corpus, args.mb)
    print(f"{os.path.basename(args.corpus)}: {n_mb:.1f} MB, {len(documents)} documents, "
          f"best of {args.repeats}")
    print(f"{'encoding':<12} {'1 thread MB/s':>14} {'2 threads MB/s':>15} {'ratio':>6}")
    for name in args.encodings.split(","):
        tok = bpe.load(name)
        assert tok.encode_batch(documents, num_threads=2) == tok.encode_batch(documents, num_threads=1)
        best = {1: float("inf"), 2: float("inf")}
        for _ in range(args.repeats):
            for threads in (1, 2):
                start = time.perf_counter()
                tok.encode_batch(documents, num_threads=threads)
                best[threads] = min(best[threads], time.perf_counter() - start)
        ratio = best[1] / best[2]
        print(f"{name:<12} {n_mb / best[1]:>14.1f} {n_mb / best[2]:>15.1f} {ratio:>6.2f}", flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps({"encoding": name, "corpus": os.path.basename(args.corpus),
                                    "mb": n_mb, "repeats": args.repeats,
                                    "mb_per_s_1": n_mb / best[1], "mb_per_s_2": n_mb / best[2],
                                    "ratio": ratio}) + "\n")


if __name__ == "__main__":
    main()
