"""Wall time and CPU time (user, system; the workers' and the caller's) of
encode_file alone, for worker counts run alternately in one process.

    PYTHONPATH=benchmarks python benchmarks/experiments/cpu_encode_file.py --corpus ~/.cache/bpe-corpora/code_linux.txt --workers 1,2,1,2,1,2

No process start-up or tokenizer loading is timed: it shows how much CPU the
same work takes with one worker and with two, and whether the two are busy.
"""
from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time

import bpe

from _measure import remove_token_array  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--tokenizer", default="gpt2")
    parser.add_argument("--workers", default="1,2,1,2,1,2")
    args = parser.parse_args()
    tok = bpe.load(args.tokenizer)
    print(f"{'workers':>7} {'wall s':>7} {'CPU s':>6} {'workers user':>13} {'workers sys':>12} "
          f"{'caller user':>12} {'caller sys':>11}")
    with tempfile.TemporaryDirectory() as work:
        for run, workers in enumerate(int(w) for w in args.workers.split(",")):
            output = os.path.join(work, f"tokens-{run}.bin")
            before = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
            start = time.perf_counter()
            tok.encode_file(args.corpus, output, num_workers=workers)
            wall = time.perf_counter() - start
            after = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
            (self_user, self_sys), (child_user, child_sys) = [
                (a.ru_utime - b.ru_utime, a.ru_stime - b.ru_stime) for a, b in zip(after, before)]
            if workers == 1:        # one worker encodes in the calling process
                child_user, child_sys, self_user, self_sys = self_user, self_sys, 0.0, 0.0
            cpu = self_user + self_sys + child_user + child_sys
            print(f"{workers:>7} {wall:>7.2f} {cpu:>6.2f} {child_user:>13.2f} {child_sys:>12.2f} "
                  f"{self_user:>12.2f} {self_sys:>11.2f}", flush=True)
            remove_token_array(output)


if __name__ == "__main__":
    main()
