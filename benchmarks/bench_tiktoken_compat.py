"""The tiktoken front door against tiktoken itself: bpe.get_encoding(name) and
tiktoken.get_encoding(name), the same calls, ids asserted equal in the run.

    python benchmarks/bench_tiktoken_compat.py --corpus ~/.cache/bpe-corpora/prose_en.txt --mb 10

Each round starts cold for bpe (empty pre-token caches); tiktoken keeps no cache.
The two alternate within each round; min and median over the rounds, in MB/s.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import bpe  # noqa: E402
from tiktoken_reference import get_encoding  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _measure import read_sample  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--mb", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    text, documents, mb = read_sample(args.corpus, args.mb)
    print(f"{os.path.basename(args.corpus)}: {mb:.1f} MB, {len(documents)} documents; MB/s best / median "
          f"of {args.rounds} rounds; batch on {args.threads} threads")
    for name in ("gpt2", "cl100k_base", "o200k_base"):
        ours, theirs = bpe.get_encoding(name), get_encoding(name)
        seconds = {"bpe encode": [], "tiktoken encode": [], "bpe batch": [], "tiktoken batch": []}
        for _ in range(args.rounds):
            ours.tokenizer.clear_cache()
            start = time.perf_counter()
            mine = ours.encode(text, disallowed_special=())
            seconds["bpe encode"].append(time.perf_counter() - start)
            start = time.perf_counter()
            assert theirs.encode(text, disallowed_special=()) == mine
            seconds["tiktoken encode"].append(time.perf_counter() - start)
            ours.tokenizer.clear_cache()
            start = time.perf_counter()
            mine = ours.encode_batch(documents, num_threads=args.threads, disallowed_special=())
            seconds["bpe batch"].append(time.perf_counter() - start)
            start = time.perf_counter()
            assert theirs.encode_batch(documents, num_threads=args.threads, disallowed_special=()) == mine
            seconds["tiktoken batch"].append(time.perf_counter() - start)
        print(f"{name:<12} " + "  ".join(f"{key} {mb / min(values):.1f} / {mb / statistics.median(values):.1f}"
                                         for key, values in seconds.items()))


if __name__ == "__main__":
    main()
