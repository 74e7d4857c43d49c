"""Where encode_file's time goes with 1 and 2 workers: each stage of a chunk, in
CPU time of the thread that ran it and in wall time, summed over the chunks.

    PYTHONPATH=benchmarks python benchmarks/experiments/encode_file_stages.py --corpus ~/.cache/bpe-corpora/prose_en.txt --rounds 5

Every run is a fresh process (as ``bench_encode_file.py`` runs them), alternating
1 and 2 workers. The stages are wrapped, not changed: reading the chunk,
its sha256, the UTF-8 check, the kernel call, and writing the ids; "chunk" is
the whole of a worker's call. Beside them: the process's CPU time less the
workers' (the collecting thread, which also finds the chunks' cuts), when
the first chunk started, and the wall time of the call. A stage whose wall
time exceeds its CPU time waited: for the GIL, or for a core.
"""
from __future__ import annotations

import argparse
import collections
import glob
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run_one(corpus: str, tokenizer: str, workers: int, output: str) -> dict:
    import bpe
    from bpe import encoder
    from bpe.corpus import chunk_writer

    tok = bpe.load(tokenizer)
    tok.fingerprint()                    # made once per tokenizer; not a stage of the call
    seconds: dict = collections.defaultdict(float)
    first: list = []

    def timed(name, function):
        def call(*args, **kwargs):
            cpu, wall = time.thread_time(), time.perf_counter()
            if name == "chunk" and not first:
                first.append(wall)
            try:
                return function(*args, **kwargs)
            finally:
                seconds[name] += time.thread_time() - cpu
                seconds[name + " wall"] += time.perf_counter() - wall
        return call

    class Hashes:                        # chunk_writer's hashlib, its sha256 timed
        sha256 = staticmethod(timed("sha256", hashlib.sha256))

    chunk_writer.hashlib = Hashes
    chunk_writer.read_into = timed("read", chunk_writer.read_into)
    chunk_writer.checked_utf8 = timed("utf8 check", chunk_writer.checked_utf8)
    chunk_writer.ChunkWriter._write = timed("write", chunk_writer.ChunkWriter._write)
    chunk_writer.ChunkWriter.encode = timed("chunk", chunk_writer.ChunkWriter.encode)
    encoder.Encoder.encode_utf8 = timed("kernel", encoder.Encoder.encode_utf8)
    cpu, start = time.process_time(), time.perf_counter()
    tok.encode_file(corpus, output, num_workers=workers)
    seconds["call wall"] = time.perf_counter() - start
    seconds["process"] = time.process_time() - cpu
    seconds["collector"] = seconds["process"] - seconds["chunk"]
    seconds["first chunk at"] = first[0] - start
    for path in glob.glob(output + "*"):
        os.remove(path)
    return dict(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--tokenizer", default="gpt2")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)       # internal: WORKERS
    parser.add_argument("--output", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.corpus, args.tokenizer, args.one, args.output)))
        return
    runs: dict = {1: [], 2: []}
    with tempfile.TemporaryDirectory() as work:
        for r in range(args.rounds):
            for workers in ((1, 2) if r % 2 == 0 else (2, 1)):
                argv = [sys.executable, __file__, "--corpus", args.corpus, "--tokenizer", args.tokenizer,
                        "--one", str(workers), "--output", os.path.join(work, "tokens.bin")]
                runs[workers].append(json.loads(subprocess.run(argv, check=True, capture_output=True,
                                                               text=True).stdout.splitlines()[-1]))
    print(f"{os.path.basename(args.corpus)}, {args.tokenizer}, {args.rounds} rounds: seconds, median "
          f"(min), summed over chunks and threads")
    names = [name for name in runs[1][0] if not name.endswith(" wall")]
    print(f"{'stage':<16}" + "".join(f"{f'{w} worker(s) CPU':>20}{'wall':>14}" for w in (1, 2)))
    for name in names:
        row = f"{name:<16}"
        for workers in (1, 2):
            for key in (name, name + " wall"):
                values = [run[key] for run in runs[workers] if key in run]
                row += (f"{statistics.median(values):>8.3f} ({min(values):.3f})".rjust(20 if key == name else 14)
                        if values else " " * (20 if key == name else 14))
        print(row)
    walls = {w: statistics.median(run["call wall"] for run in runs[w]) for w in (1, 2)}
    print(f"2 workers against 1, median call: {walls[1] / walls[2]:.2f}x")


if __name__ == "__main__":
    main()
