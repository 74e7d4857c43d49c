"""Distinct pre-tokens against corpus size (Heaps' law, D = K * N^beta), measured on
growing prefixes of a corpus, fitted in log-log, for docs/scaling.md.

    PYTHONPATH=benchmarks python benchmarks/experiments/heaps_law.py --corpus ~/.cache/bpe-corpora/prose_en.txt --max-mb 128
    PYTHONPATH=benchmarks python benchmarks/experiments/heaps_law.py --corpus ~/.cache/bpe-corpora/code_linux.txt --max-mb 1280

N is the number of pre-tokens counted (gpt2 pattern, <|endoftext|> split out),
D the number of distinct ones; also the bytes a PretokenCounts of them holds.
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np

import bpe

SPECIAL = "<|endoftext|>"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--start-mb", type=float, default=4)
    parser.add_argument("--max-mb", type=float, default=128)
    parser.add_argument("--json", help="append the points and the fit to this JSON-lines file")
    args = parser.parse_args()
    chunks = bpe.corpus.plan_chunks([args.corpus], 4 << 20, [SPECIAL], "gpt2")
    points, counted, size, target = [], bpe.PretokenCounts.from_mapping({}), 0, args.start_mb * 1e6
    index = 0
    while index < len(chunks) and size <= args.max_mb * 1e6:
        group = []
        while index < len(chunks) and size < target:
            group.append(chunks[index])
            size += chunks[index].n_bytes
            index += 1
        counted = counted + bpe.corpus.count_chunks(group, [SPECIAL], num_workers=2)
        table_bytes = counted.data.nbytes + counted.offsets.nbytes + counted.counts.nbytes
        points.append({"mb": size / 1e6, "n": counted.total, "distinct": len(counted), "table_mib": table_bytes / 2**20})
        print(f"{size / 1e6:8.1f} MB  N={counted.total:>12,}  D={len(counted):>10,}  table {table_bytes / 2**20:7.1f} MiB")
        target *= 2
    n = np.log([p["n"] for p in points])
    d = np.log([p["distinct"] for p in points])
    beta, log_k = np.polyfit(n, d, 1)
    print(f"{os.path.basename(args.corpus)}: D = {np.exp(log_k):.2f} * N^{beta:.3f}")
    if args.json:
        with open(args.json, "a", encoding="utf-8") as f:
            f.write(json.dumps({"corpus": os.path.basename(args.corpus), "points": points,
                                "beta": beta, "k": float(np.exp(log_k))}) + "\n")


if __name__ == "__main__":
    main()
