"""bpe.distributed on a local 2-CPU Ray cluster against the single-machine calls,
same corpus, same results asserted, with wall time and peak RSS of the whole
process tree (Ray's own processes included).

    python benchmarks/bench_distributed.py --corpus ~/.cache/bpe-corpora/prose_en.txt --vocab-size 10000
    python benchmarks/bench_distributed.py --corpus ~/.cache/bpe-corpora/code_linux.txt --vocab-size 32000

Each engine runs in its own process. For Ray, the seconds to start the local
cluster are reported apart from the work ("seconds"). The encode runs use
gpt2's vocabulary and write shards of --shard-mb (Ray; enough shards to keep
both CPUs busy) or one array (encode_file, 2 worker threads).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from _measure import run_measured  # noqa: E402

SPECIAL = "<|endoftext|>"


def run_one(engine: str, task: str, corpus: str, vocab_size: int, output: str, shard_mb: float) -> dict:
    import bpe

    started = time.perf_counter()
    result = {"engine": engine, "task": task}
    if engine == "ray":
        import ray

        from bpe import distributed

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        result["ray_start_seconds"] = time.perf_counter() - started
        started = time.perf_counter()
        if task == "train":
            tok = distributed.train(corpus, vocab_size, [SPECIAL])
            result["merges_digest"] = tok.fingerprint()
        else:
            summary = distributed.encode(bpe.load("gpt2"), corpus, output, shard_bytes=int(shard_mb * 1e6))
            result["tokens"] = summary.tokens_out
    else:
        if task == "train":
            tok = bpe.train(corpus, vocab_size, [SPECIAL], num_workers=2)
            result["merges_digest"] = tok.fingerprint()
        else:
            result["tokens"] = bpe.load("gpt2").encode_file(corpus, output, num_workers=2).tokens_out
    result["seconds"] = time.perf_counter() - started
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--vocab-size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--shard-mb", type=float, default=32)
    parser.add_argument("--json", help="append results to this JSON-lines file")
    parser.add_argument("--one", nargs=3, metavar=("ENGINE", "TASK", "OUTPUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        engine, task, output = args.one
        print(json.dumps(run_one(engine, task, args.corpus, args.vocab_size, output, args.shard_mb)))
        return
    rows = []
    for _ in range(args.rounds):
        for task in ("train", "encode"):
            for engine in ("single", "ray"):
                output = os.path.join(tempfile.mkdtemp(), "out" if engine == "ray" else "out.bin")
                row = run_measured([sys.executable, __file__, "--corpus", args.corpus, "--vocab-size",
                                    str(args.vocab_size), "--shard-mb", str(args.shard_mb),
                                    "--one", engine, task, output])
                rows.append(row)
                print(json.dumps(row), flush=True)
    for task in ("train", "encode"):
        single = [r for r in rows if r["task"] == task and r["engine"] == "single"]
        ray_rows = [r for r in rows if r["task"] == task and r["engine"] == "ray"]
        assert len({r.get("merges_digest", r.get("tokens")) for r in single + ray_rows}) == 1, task
        best_single = min(r["seconds"] for r in single)
        best_ray = min(r["seconds"] for r in ray_rows)
        print(f"{os.path.basename(args.corpus)} {task}: one machine {best_single:.2f} s "
              f"(peak {max(r['peak_rss_mib'] for r in single):.0f} MiB); Ray {best_ray:.2f} s "
              f"(+{min(r['ray_start_seconds'] for r in ray_rows):.1f} s to start Ray; peak "
              f"{max(r['peak_rss_mib'] for r in ray_rows):.0f} MiB), ratio {best_ray / best_single:.2f}x")
    if args.json:
        with open(args.json, "a", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(dict(row, corpus=os.path.basename(args.corpus))) + "\n")


if __name__ == "__main__":
    main()
