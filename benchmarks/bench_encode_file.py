"""Corpus encoding into a token array: bpe's encode_file with 1 and 2 workers, and
gigatoken's encode_files, with wall time and peak RSS of the whole process tree.

    python benchmarks/bench_encode_file.py --corpus ~/.cache/bpe-corpora/code_linux.txt

gigatoken loads the tokenizer.json that bpe exports for the same vocabulary and
holds all ids in memory (an awkward array); bpe writes a memory-mappable file.

Engine "twin" is the control for scaling: two independent single-worker runs of
encode_file on the corpus at the same time, in two processes. Nothing is shared
between them, so the throughput they reach together is what this machine gives
two processes doing this work at that moment: the ceiling for 2 workers.
Its MB/s counts both corpora.

Engine "halves" is the same control given the same work as 2 workers: the
corpus cut in two at the separator nearest its middle (outside the timing),
each half encoded by a single-worker process, both at once. Two workers
share one corpus, so each worker's pre-token cache sees half of it, and
meets more pre-tokens for the first time per byte than a twin, whose cache
sees all of it; the halves' caches see what the workers' see.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Optional

from _measure import entry, remove_token_array, run_measured, save

#: Seconds the twins get to start Python and load the tokenizer before both
#: start encoding (a late one shows as the skew between their starts).
TWIN_START_DELAY = 3.0


def run_one(engine: str, corpus: str, tokenizer: str, workers: int, output: str,
            start_at: Optional[float] = None) -> dict:
    import bpe

    tok = bpe.load(tokenizer)
    if start_at is not None:               # a twin: start when the other does
        time.sleep(max(0.0, start_at - time.time()))
    start = time.perf_counter()
    if engine == "bpe":
        summary = tok.encode_file(corpus, output, num_workers=workers)
        n_tokens = summary.tokens_out
    elif engine == "twin":
        return run_twins([corpus, corpus], tokenizer, output)
    elif engine == "halves":
        halves = cut_in_two(corpus, output)
        try:
            return run_twins(halves, tokenizer, output)
        finally:
            for half in halves:
                os.remove(half)
    elif engine == "encode":   # the baseline: the whole file through encode_to_numpy, one thread
        with open(corpus, encoding="utf-8") as f:
            text = f.read()
        start = time.perf_counter()
        n_tokens = len(tok.encode_to_numpy(text))
    else:
        import gigatoken

        giga = gigatoken.Tokenizer(tok.to_huggingface(tempfile.mkdtemp()))
        start = time.perf_counter()
        ids = giga.encode_files(gigatoken.TextFileSource([corpus], separator="<|endoftext|>"))
        n_tokens = int(sum(len(doc) for doc in ids))
    # When it ended on the wall clock, which twins' processes share: the
    # start is that less the seconds.
    return {"seconds": time.perf_counter() - start, "tokens": n_tokens, "ended": time.time()}


def encoded_mb(engine: str, size_mb: float) -> float:
    """Megabytes one run of ``engine`` encodes: the twins encode the corpus twice."""
    return 2 * size_mb if engine == "twin" else size_mb


def cut_in_two(corpus: str, output: str, separator: bytes = b"<|endoftext|>") -> list:
    """The corpus as two files beside ``output``, cut after the first separator
    past its middle (or at the middle, if none follows), copied a block at a
    time so that the control's peak RSS is its two processes'."""
    import shutil

    size = os.path.getsize(corpus)
    with open(corpus, "rb") as f:
        position, carry, cut = size // 2, b"", size // 2
        f.seek(position)
        while block := f.read(1 << 20):
            window = carry + block            # starts at position - len(carry)
            at = window.find(separator)
            if at >= 0:
                cut = position - len(carry) + at + len(separator)
                break
            carry = window[-(len(separator) - 1):]
            position += len(block)
        paths = [f"{output}.half{k}" for k in range(2)]
        f.seek(0)
        with open(paths[0], "wb") as first:
            left = cut
            while left:
                block = f.read(min(left, 1 << 24))
                first.write(block)
                left -= len(block)
        with open(paths[1], "wb") as second:
            shutil.copyfileobj(f, second, 1 << 24)
    return paths


def run_twins(corpora: list, tokenizer: str, output: str) -> dict:
    """Two single-worker encode_file runs at once, one per corpus, each in its own
    process; the time from the first's start until both are done, and their
    tokens together.

    Both processes load the tokenizer, then wait for one agreed instant to
    start. Timed each on its own, a twin that started while the other was
    still loading ran alone for a while, faster: the control flattered the
    machine by the skew between their starts. The result also gives that
    skew and the slower twin's own time (``own_seconds``)."""
    import subprocess

    start_at = time.time() + TWIN_START_DELAY
    twins = [subprocess.Popen([sys.executable, __file__, "--corpus", corpus, "--tokenizer", tokenizer,
                               "--one", "bpe", "1", "--output", f"{output}.{k}",
                               "--start-at", repr(start_at)],
                              stdout=subprocess.PIPE, text=True) for k, corpus in enumerate(corpora)]
    results = [json.loads(twin.communicate()[0].splitlines()[-1]) for twin in twins]
    for k in range(2):
        remove_token_array(f"{output}.{k}")
    if corpora[0] == corpora[1]:
        assert results[0]["tokens"] == results[1]["tokens"]
    starts = [result["ended"] - result["seconds"] for result in results]
    return {"seconds": max(result["ended"] for result in results) - min(starts),
            "own_seconds": max(result["seconds"] for result in results),
            "start_skew": max(starts) - min(starts),
            "tokens": sum(result["tokens"] for result in results)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--tokenizer", default="gpt2")
    parser.add_argument("--engines", default="encode:1,bpe:1,bpe:2,gigatoken:2",
                        help="ENGINE:WORKERS pairs, comma-separated")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run the engine list this many times, then summarise each engine's "
                             "best and median, and the scaling of bpe:2 against bpe:1")
    parser.add_argument("--save", help="write the results here (the suite's record layout)")
    parser.add_argument("--warm-cache", action="store_true",
                        help="read the corpus just before each run, so that no run reads from disk")
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)   # internal: ENGINE WORKERS
    parser.add_argument("--output", help=argparse.SUPPRESS)
    parser.add_argument("--start-at", type=float, help=argparse.SUPPRESS)   # internal: a twin's start
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one[0], args.corpus, args.tokenizer, int(args.one[1]),
                                 args.output, args.start_at)))
        return
    size_mb = os.path.getsize(args.corpus) / 1e6
    print(f"corpus {os.path.basename(args.corpus)} ({size_mb:.0f} MB), tokenizer {args.tokenizer}")
    print(f"{'engine':<27} {'seconds':>8} {'MB/s':>7} {'peak RSS MiB':>13} {'tokens':>12}")
    seconds = collections.defaultdict(list)      # per ENGINE:WORKERS, in run order
    peaks: dict[str, float] = {}
    labels: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as work:
        for item in args.engines.split(",") * args.rounds:
            engine, workers = item.split(":")[0], int(item.split(":")[1])
            # A fresh output path per run: replacing an earlier 1 GB array would time
            # the file system freeing it.
            output = os.path.join(work, f"tokens-{engine}-{workers}.bin")
            argv = [sys.executable, __file__, "--corpus", args.corpus, "--tokenizer", args.tokenizer,
                    "--one", engine, str(workers), "--output", output]
            if args.warm_cache:
                with open(args.corpus, "rb") as corpus:
                    while corpus.read(1 << 24):
                        pass
            try:
                result = run_measured(argv)
            except Exception as e:
                print(f"{engine:<27} failed: {e}")
                continue
            finally:
                remove_token_array(output)
            label = {"bpe": f"encode_file ({workers} worker{'s' if workers > 1 else ''})",
                     "encode": "encode_to_numpy (1 thread)",
                     "gigatoken": "gigatoken (its threads)",
                     "twin": "2 x encode_file (1), at once",
                     "halves": "1 worker per half, at once"}[engine]
            mb = encoded_mb(engine, size_mb)
            seconds[item].append(result["seconds"])
            print(f"{label:<27} {result['seconds']:>8.2f} {mb / result['seconds']:>7.1f} "
                  f"{result['peak_rss_mib']:>13.0f} {result['tokens']:>12}"
                  + (f"  (starts {1e3 * result['start_skew']:.0f} ms apart; the slower alone "
                     f"{result['own_seconds']:.2f} s)" if "start_skew" in result else ""), flush=True)
            peaks[item] = max(peaks.get(item, 0.0), result["peak_rss_mib"])
            labels[item] = label
    if args.rounds > 1:
        summarise(seconds, size_mb)
    if args.save:
        group = f"encode_file {os.path.basename(args.corpus)}, {args.tokenizer}, whole process"
        save(args.save, [entry(group, item, times, library="gigatoken" if item.startswith("gigatoken") else "bpe",
                               call=labels[item], output="file" if item.startswith(("bpe", "twin", "halves"))
                               else "numpy", mb=encoded_mb(item.split(":")[0], size_mb),
                               peak_rss_mib=peaks[item])
                         for item, times in seconds.items()])


def summarise(seconds: dict, size_mb: float) -> None:
    """Each engine's best and median over the rounds, and how 2 workers scale
    against 1: the ratio of the bests, of the medians, and of each round's pair
    (runs in the same round are minutes apart, so they share the VM's mood);
    the twin control's figures are its combined throughput over 1 worker's."""
    print(f"\n{'engine':<14} {'runs':>4} {'best s':>7} {'median s':>9} {'best MB/s':>10}")
    for item, times in seconds.items():
        mb = encoded_mb(item.split(":")[0], size_mb)
        print(f"{item:<14} {len(times):>4} {min(times):>7.2f} {statistics.median(times):>9.2f} "
              f"{mb / min(times):>10.1f}")
    one = seconds.get("bpe:1")
    for item in ("bpe:2", "twin:1", "halves:1"):
        other = seconds.get(item)
        if not one or not other:
            continue
        factor = encoded_mb(item.split(":")[0], size_mb) / size_mb
        pairs = [factor * a / b for a, b in zip(one, other)]
        print(f"{item} against bpe:1: best {factor * min(one) / min(other):.2f}x, median "
              f"{factor * statistics.median(one) / statistics.median(other):.2f}x, per round "
              + " ".join(f"{ratio:.2f}" for ratio in pairs)
              + f" (median {statistics.median(pairs):.2f}x)")


if __name__ == "__main__":
    main()
