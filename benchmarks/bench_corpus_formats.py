"""The same documents as plain text, JSON Lines (plain, zstd, gzip) and Parquet,
encoded to a token array by the ``bpe encode`` command with 2 workers: wall
time and peak RSS of each whole process, interleaved, several rounds.

    python benchmarks/bench_corpus_formats.py --corpus ~/.cache/bpe-corpora/prose_en.txt

Also how long the JSON parsers take to get every record's text out of the
JSON Lines: the standard library's ``json``, ``orjson``, and bpe's own reader
(``bpe._jsonl.text_fields``, which validates each line and gives up on any it
does not take exactly). The files are made once from the corpus (documents
split at ``<|endoftext|>``) in ``~/.cache/bpe-corpora/formats/``.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time

FORMATS = ["txt", "jsonl", "jsonl.zst", "jsonl.gz", "parquet"]


def build(corpus: str, directory: str) -> dict:
    """The corpus in each format (made once), by format."""
    name = os.path.splitext(os.path.basename(corpus))[0]
    paths = {fmt: os.path.join(directory, f"{name}.{fmt}") for fmt in FORMATS}
    if all(os.path.exists(path) for path in paths.values()):
        return paths
    import pyarrow
    import pyarrow.parquet
    import zstandard

    os.makedirs(directory, exist_ok=True)
    with open(corpus, encoding="utf-8") as f:
        documents = f.read().split("<|endoftext|>")
    with open(paths["txt"], "w", encoding="utf-8") as f:
        f.write("<|endoftext|>".join(documents))
    lines = "".join(json.dumps({"text": document}, ensure_ascii=False) + "\n" for document in documents).encode()
    with open(paths["jsonl"], "wb") as f:
        f.write(lines)
    with open(paths["jsonl.zst"], "wb") as f:
        f.write(zstandard.ZstdCompressor(level=3).compress(lines))
    with open(paths["jsonl.gz"], "wb") as f:
        f.write(gzip.compress(lines, 6))
    # Row groups of 1000 documents (the writer's default would make one of the
    # whole corpus: pyarrow decodes a row group's column at once, so a reader's
    # memory follows it).
    pyarrow.parquet.write_table(pyarrow.table({"text": documents}), paths["parquet"], compression="zstd",
                                row_group_size=1000)
    return paths


def child(argv: list[str]) -> None:
    """Run ``bpe`` with ``argv``, then print this process's peak RSS (VmHWM, which,
    unlike ru_maxrss, starts afresh at exec) as JSON."""
    import bpe.cli

    code = bpe.cli.main(argv)
    with open("/proc/self/status") as f:
        peak_kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    print(json.dumps({"code": code, "peak_mib": peak_kib / 1024}))


def run(path: str, output: str, workers: int) -> dict:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--child", "encode", path, "--tokenizer", "gpt2", "-o", output,
                           "--workers", str(workers), "--quiet"], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"seconds": seconds, "peak_mib": result["peak_mib"]}


def parsers(path: str) -> dict:
    """Seconds to get every record's text out of the JSON Lines, by parser (best of 3)."""
    import numpy as np

    from bpe._jsonl import text_fields

    with open(path, "rb") as f:
        data = f.read()
    lines = data.splitlines()
    block_bytes = 4 << 20
    blocks, start = [], 0
    while start < len(data):
        end = data.rfind(b"\n", start, start + block_bytes) + 1 or len(data)
        blocks.append(np.frombuffer(data, np.uint8, end - start, start))
        start = end
    candidates = {"json": lambda: [json.loads(line)["text"] for line in lines],
                  "bpe._jsonl": lambda: [text_fields(block, (b"text",)) for block in blocks]}
    try:
        import orjson

        candidates["orjson"] = lambda: [orjson.loads(line)["text"] for line in lines]
    except ImportError:
        pass
    timings = {}
    for name, function in candidates.items():
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            function()
            best = min(best, time.perf_counter() - started)
        timings[name] = best
    return timings


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        return child(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=os.path.expanduser("~/.cache/bpe-corpora/prose_en.txt"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    paths = build(args.corpus, os.path.join(os.path.dirname(os.path.abspath(args.corpus)), "formats"))
    text_mb = os.path.getsize(paths["txt"]) / 1e6
    output = os.path.join(os.path.dirname(paths["txt"]), "bench-output.bin")
    results = {fmt: [] for fmt in FORMATS}
    for round_index in range(args.rounds):
        order = FORMATS[round_index % len(FORMATS):] + FORMATS[:round_index % len(FORMATS)]
        for fmt in order:                                # interleaved, a different one first each round
            results[fmt].append(run(paths[fmt], output, args.workers))
    for suffix in ("", ".json", ".docs.npy"):
        if os.path.exists(output + suffix):
            os.unlink(output + suffix)
    txt_median = statistics.median(r["seconds"] for r in results["txt"])
    txt_peak = statistics.median(r["peak_mib"] for r in results["txt"])
    print(f"{os.path.basename(args.corpus)}: {text_mb:.0f} MB of text, `bpe encode --workers {args.workers}`, "
          f"{args.rounds} rounds interleaved")
    print(f"{'format':<10} {'file MB':>8} {'min s':>7} {'median s':>9} {'MB/s':>7} {'vs txt':>7} "
          f"{'peak MiB':>9} {'vs txt':>7}")
    table = {}
    for fmt in FORMATS:
        seconds = [r["seconds"] for r in results[fmt]]
        peak = statistics.median(r["peak_mib"] for r in results[fmt])
        median = statistics.median(seconds)
        table[fmt] = {"min": min(seconds), "median": median, "peak_mib": peak,
                      "speed_vs_txt": txt_median / median, "peak_vs_txt": peak / txt_peak}
        print(f"{fmt:<10} {os.path.getsize(paths[fmt]) / 1e6:>8.0f} {min(seconds):>7.2f} {median:>9.2f} "
              f"{text_mb / median:>7.0f} {txt_median / median:>7.0%} {peak:>9.0f} {peak / txt_peak:>7.2f}")
    timings = parsers(paths["jsonl"])
    print("records' text out of the .jsonl, one thread (best of 3): "
          + ", ".join(f"{name} {seconds:.2f} s ({text_mb / seconds:.0f} MB/s)" for name, seconds in timings.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"corpus": args.corpus, "text_mb": text_mb, "formats": table, "parsers": timings}, f, indent=1)


if __name__ == "__main__":
    main()
