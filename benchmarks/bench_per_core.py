"""Encoding speed per core, the measure of the per-core issue: one thread, a sample
split into documents, flat ids out (no Python lists) for both, cold (empty caches:
bpe's cleared, a fresh gigatoken object) and warm (the same documents again),
best of interleaved rounds, ids asserted equal.

    python benchmarks/bench_per_core.py --corpus ~/.cache/bpe-corpora/prose_en.txt --mb 10

gigatoken reads bpe's tokenizer.json export for gpt2 and the shipped rank files
for cl100k_base and o200k_base (it recognises their patterns by file name);
it returns an awkward array, bpe the kernel's (ids, offsets). Peers:
``pip install -e ".[peers]"``.
"""
from __future__ import annotations

import argparse
import gzip
import os
import shutil
import sys
import tempfile
import time

import numpy as np

import bpe

sys.path.insert(0, os.path.dirname(__file__))
from _measure import read_sample  # noqa: E402

DATA = os.path.join(os.path.dirname(bpe.__file__), "data")


def gigatoken_factory(name: str, tok: bpe.Tokenizer):
    import gigatoken

    directory = tempfile.mkdtemp()
    if name == "gpt2":
        path = tok.to_huggingface(os.path.join(directory, "tokenizer.json"))
        return lambda: gigatoken.Tokenizer(path)
    path = os.path.join(directory, f"{name}.tiktoken")
    with gzip.open(os.path.join(DATA, f"{name}.tiktoken.gz")) as source, open(path, "wb") as target:
        shutil.copyfileobj(source, target)
    return lambda: gigatoken.Tokenizer.from_tiktoken(path)


def main() -> None:
    import awkward

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--mb", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    _, documents, mb = read_sample(args.corpus, args.mb)
    print(f"{os.path.basename(args.corpus)}: {mb:.1f} MB, {len(documents)} documents, 1 thread, "
          f"best of {args.rounds} rounds, MB/s")
    for name in ("gpt2", "cl100k_base", "o200k_base"):
        tok = bpe.load(name)
        make = gigatoken_factory(name, tok)
        best = dict.fromkeys(["bpe cold", "bpe warm", "gigatoken cold", "gigatoken warm"], float("inf"))
        for _ in range(args.rounds):
            tok.clear_cache()
            for key in ("bpe cold", "bpe warm"):
                start = time.perf_counter()
                ids, _ = tok.encoder.encode_strs(documents, [])
                best[key] = min(best[key], time.perf_counter() - start)
            giga = make()
            for key in ("gigatoken cold", "gigatoken warm"):
                start = time.perf_counter()
                theirs = giga.encode_batch(documents, parallel=False)
                best[key] = min(best[key], time.perf_counter() - start)
            assert np.array_equal(ids, awkward.to_numpy(awkward.flatten(theirs))), name
        ratios = f"cold {best['gigatoken cold'] / best['bpe cold']:.2f}x, warm {best['gigatoken warm'] / best['bpe warm']:.2f}x"
        print(f"{name:<12} " + "  ".join(f"{key} {mb / seconds:.0f}" for key, seconds in best.items())
              + f"   (bpe / gigatoken: {ratios})")


if __name__ == "__main__":
    sys.exit(main())
