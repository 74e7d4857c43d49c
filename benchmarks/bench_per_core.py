"""Encoding speed per core, the measure of the per-core issue: one thread, a sample
split into documents, cold (empty caches: bpe's cleared, fresh peer objects, and
fresh str objects, whose cached UTF-8 some peers would otherwise reuse:
``_measure.fresh_copies``) and warm (the same documents again), best of
interleaved rounds, ids asserted equal. In one call, the median of the
rounds is printed too, and the median of each round's bpe / gigatoken ratio:
on a noisy machine a best can be one lucky round.

Two ways of calling, both reported:
* batch: all documents in one call, flat ids out (bpe's kernel call against
  gigatoken's encode_batch, an awkward array), and tiktoken's
  encode_ordinary_batch on one thread (lists);
* per document (``--per-document``): ``encode(doc)`` for each document, as users
  call it, lists against lists (bpe's ``encode``, gigatoken's
  ``encode(doc).tolist()``, tiktoken's ``encode``, Hugging Face's
  ``encode(doc).ids``, the last on the first --hf-mb MB only: it is slow) and
  numpy against numpy (bpe's ``encode_to_numpy``, gigatoken's ``encode``).

    python benchmarks/bench_per_core.py --corpus ~/.cache/bpe-corpora/prose_en.txt --mb 10 --json benchmarks/results/per_core_batch.jsonl
    python benchmarks/bench_per_core.py --corpus ~/.cache/bpe-corpora/prose_en.txt --mb 10 --per-document --json benchmarks/results/per_core.jsonl

gigatoken reads bpe's tokenizer.json export for gpt2 and the shipped rank files
for cl100k_base and o200k_base (it recognises their patterns by file name);
it returns an awkward array, bpe the kernel's (ids, offsets). Peers:
``pip install -e ".[peers]"``.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

import bpe

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))   # tiktoken_reference
from _measure import fresh_copies, read_sample  # noqa: E402

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


def fresh_tiktoken(name: str, reference):
    """A new tiktoken Encoding of ``reference``'s vocabulary: nothing carried over."""
    import tiktoken

    return tiktoken.Encoding(name, pat_str=reference._pat_str, mergeable_ranks=reference._mergeable_ranks,
                             special_tokens=reference._special_tokens)


def per_document(name: str, tok: bpe.Tokenizer, documents: list, mb: float, rounds: int,
                 hf_mb: float) -> dict:
    """Each engine's best cold and warm MB/s, calling encode per document."""
    import tokenizers
    from tiktoken_reference import get_encoding

    reference = get_encoding(name)
    make_giga = gigatoken_factory(name, tok)
    hf_path = tok.to_huggingface(os.path.join(tempfile.mkdtemp(), "tokenizer.json"))
    hf_documents, size = [], 0
    for document in documents:
        if size >= hf_mb * 1e6:
            break
        hf_documents.append(document)
        size += len(document.encode("utf-8"))
    hf_size = size / 1e6
    expected = [reference.encode(document, disallowed_special=()) for document in documents]
    # Like with like: lists against lists, numpy arrays against numpy arrays.
    engines = {
        "bpe encode (list)": (lambda: (tok.clear_cache(), tok)[1], lambda t, d: t.encode(d, allowed_special=set()),
                              documents, mb),
        "gigatoken encode().tolist() (list)": (make_giga, lambda g, d: g.encode(d).tolist(), documents, mb),
        "bpe encode_to_numpy (numpy)": (lambda: (tok.clear_cache(), tok)[1],
                                        lambda t, d: t.encode_to_numpy(d, allowed_special=set()), documents, mb),
        "gigatoken encode (numpy)": (make_giga, lambda g, d: g.encode(d), documents, mb),
        "tiktoken encode (list)": (lambda: fresh_tiktoken(name, reference),
                                   lambda e, d: e.encode(d, disallowed_special=()), documents, mb),
        "HF tokenizers encode().ids (list)": (lambda: tokenizers.Tokenizer.from_file(hf_path),
                                              lambda h, d: h.encode(d).ids, hf_documents, hf_size),
    }
    best = {(engine, kind): float("inf") for engine in engines for kind in ("cold", "warm")}
    for _ in range(rounds):
        for engine, (make, call, docs, _) in engines.items():
            instance = make()
            docs = fresh_copies(docs)          # cold: str objects no engine has read
            for kind in ("cold", "warm"):
                start = time.perf_counter()
                ids = [call(instance, document) for document in docs]
                best[engine, kind] = min(best[engine, kind], time.perf_counter() - start)
                assert [np.asarray(i).tolist() for i in ids] == expected[:len(docs)], (engine, name)
    return {engine: {kind: engines[engine][3] / best[engine, kind] for kind in ("cold", "warm")}
            for engine in engines}


def main() -> None:
    import awkward

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--mb", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--per-document", action="store_true", help="encode(doc) per document, all peers")
    parser.add_argument("--hf-mb", type=float, default=2, help="Hugging Face's share of the sample")
    parser.add_argument("--json", help="append the rates to this JSON-lines file")
    args = parser.parse_args()
    _, documents, mb = read_sample(args.corpus, args.mb)
    if args.per_document:
        print(f"{os.path.basename(args.corpus)}: {mb:.1f} MB, {len(documents)} documents, encode(doc) per "
              f"document, 1 thread, best of {args.rounds} rounds, MB/s cold / warm (HF on the first "
              f"{args.hf_mb:g} MB)")
        for name in ("gpt2", "cl100k_base", "o200k_base"):
            rates = per_document(name, bpe.load(name), documents, mb, args.rounds, args.hf_mb)
            for engine, rate in rates.items():
                print(f"{name:<12} {engine:<36} {rate['cold']:5.0f} / {rate['warm']:.0f}", flush=True)
            if args.json:
                with open(args.json, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"encoding": name, "corpus": os.path.basename(args.corpus), "mb": mb,
                                        "documents": len(documents), "mb_per_s": rates}) + "\n")
        return
    from tiktoken_reference import get_encoding

    print(f"{os.path.basename(args.corpus)}: {mb:.1f} MB, {len(documents)} documents, 1 thread, "
          f"best of {args.rounds} rounds, MB/s")
    for name in ("gpt2", "cl100k_base", "o200k_base"):
        tok = bpe.load(name)
        make = gigatoken_factory(name, tok)
        reference = get_encoding(name)
        engines = ("bpe", "gigatoken", "tiktoken")
        times = {(engine, kind): [] for engine in engines for kind in ("cold", "warm")}
        def run_bpe():
            tok.clear_cache()
            texts = fresh_copies(documents)    # cold: str objects no engine has read
            for kind in ("cold", "warm"):
                start = time.perf_counter()
                ids, _ = tok.encoder.encode_strs(texts, [])
                times["bpe", kind].append(time.perf_counter() - start)
            return ids

        def run_gigatoken():
            giga = make()
            texts = fresh_copies(documents)
            for kind in ("cold", "warm"):
                start = time.perf_counter()
                theirs = giga.encode_batch(texts, parallel=False)
                times["gigatoken", kind].append(time.perf_counter() - start)
            return awkward.to_numpy(awkward.flatten(theirs))

        def run_tiktoken():
            # tiktoken keeps no cache: cold and warm are two runs of the same thing
            fresh = fresh_tiktoken(name, reference)
            texts = fresh_copies(documents)
            for kind in ("cold", "warm"):
                start = time.perf_counter()
                lists = fresh.encode_ordinary_batch(texts, num_threads=1)
                times["tiktoken", kind].append(time.perf_counter() - start)
            return np.fromiter((i for ids_ in lists for i in ids_), dtype=np.uint32)

        runs = [("bpe", run_bpe), ("gigatoken", run_gigatoken), ("tiktoken", run_tiktoken)]
        for round_ in range(args.rounds):
            # The order turns round every round, so that no engine always
            # follows the same one.
            ids = {engine: run() for engine, run in (runs if round_ % 2 == 0 else runs[::-1])}
            for engine in ("gigatoken", "tiktoken"):
                assert np.array_equal(ids["bpe"], ids[engine]), (engine, name)
        rates = {engine: {kind: mb / min(times[engine, kind]) for kind in ("cold", "warm")} for engine in engines}
        medians = {engine: {kind: mb / statistics.median(times[engine, kind]) for kind in ("cold", "warm")}
                   for engine in engines}
        # Each round's bpe against the same round's gigatoken: the two met the
        # same machine, so the median of these drifts less than a ratio of bests.
        per_round = {kind: statistics.median(g / b for b, g in zip(times["bpe", kind], times["gigatoken", kind]))
                     for kind in ("cold", "warm")}
        ratios = (f"best cold {rates['bpe']['cold'] / rates['gigatoken']['cold']:.2f}x, "
                  f"warm {rates['bpe']['warm'] / rates['gigatoken']['warm']:.2f}x; "
                  f"median per round cold {per_round['cold']:.2f}x, warm {per_round['warm']:.2f}x")
        print(f"{name:<12} " + "  ".join(f"{engine} {rate['cold']:.0f} / {rate['warm']:.0f}"
                                        for engine, rate in rates.items())
              + f"   (cold / warm, best; bpe / gigatoken: {ratios})", flush=True)
        print(f"{'':<12} median MB/s: " + "  ".join(f"{engine} {rate['cold']:.0f} / {rate['warm']:.0f}"
                                                    for engine, rate in medians.items()), flush=True)
        if args.json:
            with open(args.json, "a", encoding="utf-8") as f:
                f.write(json.dumps({"encoding": name, "corpus": os.path.basename(args.corpus), "mb": mb,
                                    "documents": len(documents), "mode": "batch", "rounds": args.rounds,
                                    "mb_per_s": rates, "median_mb_per_s": medians,
                                    "bpe_over_gigatoken_per_round": per_round}) + "\n")


if __name__ == "__main__":
    sys.exit(main())
