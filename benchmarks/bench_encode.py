"""Encoding throughput of bpe against tiktoken and Hugging Face tokenizers, same ids asserted.

Hugging Face tokenizers loads the tokenizer.json that bpe exports (to_huggingface),
the offline route to the same vocabulary and pattern.

    python benchmarks/bench_encode.py --corpus ~/.cache/bpe-corpora/prose_en.txt --mb 20
    python benchmarks/bench_encode.py --corpus ~/.cache/bpe-corpora/code_linux.txt --mb 20

The sample is the first --mb megabytes, cut into documents at <|endoftext|>.
Every timed call starts cold: bpe's pre-token cache (kept across calls) and
Hugging Face's word cache are emptied before it, since the same text encoded
again is almost all cache hits (~40% faster here) and tiktoken keeps no cache.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import bpe  # noqa: E402
from tiktoken_reference import get_encoding  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _measure import best_of, read_sample  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--mb", type=float, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", help="append results to this JSON-lines file")
    args = parser.parse_args()
    text, documents, n_mb = read_sample(args.corpus, args.mb)
    print(f"{os.path.basename(args.corpus)}: {n_mb:.1f} MB, {len(documents)} documents")
    print(f"{'encoding':<12} {'bpe numpy':>10} {'bpe list':>9} {'tiktoken':>9} {'HF':>6} "
          f"{'bpe batch x1':>13} {'bpe batch x' + str(args.threads):>13} "
          f"{'tiktoken batch x' + str(args.threads):>17}   MB/s")
    for name in ("gpt2", "cl100k_base", "o200k_base"):
        tok, reference = bpe.load(name), get_encoding(name)
        from tokenizers import Tokenizer as HFTokenizer

        hf = HFTokenizer.from_file(tok.to_huggingface(tempfile.mkdtemp()))
        hf_sample = text[:2_000_000]   # HF is slow: time it on the first 2 MB
        assert hf.encode(hf_sample).ids == tok.encode(hf_sample), f"{name}: HF ids differ"
        ours = tok.encode_to_numpy(text)
        theirs = reference.encode_to_numpy(text, allowed_special="all")
        assert np.array_equal(ours, theirs), f"{name}: ids differ from tiktoken"
        assert tok.encode_batch(documents, num_threads=args.threads) == \
            reference.encode_batch(documents, num_threads=args.threads, allowed_special="all")
        cold = tok.clear_cache
        seconds = {
            "numpy": best_of(lambda: tok.encode_to_numpy(text), setup=cold),
            "list": best_of(lambda: tok.encode(text), setup=cold),
            "tiktoken": best_of(lambda: reference.encode_to_numpy(text, allowed_special="all")),
            "batch1": best_of(lambda: tok.encode_batch(documents, num_threads=1), setup=cold),
            "batch": best_of(lambda: tok.encode_batch(documents, num_threads=args.threads), setup=cold),
            "tiktoken_batch": best_of(lambda: reference.encode_batch(
                documents, num_threads=args.threads, allowed_special="all")),
        }
        rate = {key: n_mb / value for key, value in seconds.items()}
        hf_cold = getattr(hf.model, "_clear_cache", None)   # tokenizers has no public spelling
        rate["hf"] = len(hf_sample.encode()) / 1e6 / best_of(lambda: hf.encode(hf_sample), 1,
                                                              setup=hf_cold)
        print(f"{name:<12} {rate['numpy']:>10.1f} {rate['list']:>9.1f} {rate['tiktoken']:>9.1f} "
              f"{rate['hf']:>6.1f} {rate['batch1']:>13.1f} {rate['batch']:>13.1f} "
              f"{rate['tiktoken_batch']:>17.1f}", flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps({"encoding": name, "corpus": os.path.basename(args.corpus),
                                    "mb": n_mb, "threads": args.threads,
                                    "mb_per_s": rate}) + "\n")


if __name__ == "__main__":
    main()
