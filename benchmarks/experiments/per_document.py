"""Per document into numpy, bpe against gigatoken, the two alternating round by
round: bpe's ``encode_to_numpy(doc)`` and gigatoken's ``encode(doc)`` (numpy),
one thread, cold (bpe's caches cleared, a fresh gigatoken object, fresh str
objects: ``_measure.fresh_copies``) and then warm (the same documents again).
The benchmark suite runs each candidate's rounds together; here each round
follows the other library's, so neither finds the machine as the other left
it. The best and the median of the rounds are printed; ids are asserted equal
in the same run.

    PYTHONPATH=benchmarks python benchmarks/experiments/per_document.py --vocab cl100k_base --corpus code_linux --mb 10 --rounds 5

The corpora come from ``../shared/corpora/build`` (``~/.cache/bpe-corpora``).
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np

import bpe

from _measure import cold_warm_summary, fresh_copies, read_sample, timed_over  # noqa: E402
from peers import gigatoken_factory  # noqa: E402

CORPORA = os.path.expanduser("~/.cache/bpe-corpora")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", default="cl100k_base", help="gpt2, cl100k_base or o200k_base")
    parser.add_argument("--corpus", default="code_linux", help="code_linux or prose_en")
    parser.add_argument("--mb", type=float, default=10.0, help="MB of the corpus to read")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    _, documents, size = read_sample(os.path.join(CORPORA, args.corpus + ".txt"), args.mb)
    documents = [d for d in documents if d]
    ours = bpe.load(args.vocab)
    giga = gigatoken_factory(args.vocab)
    first = giga()
    for document in documents:                # the same ids, from each engine, in this run
        assert ours.encode_to_numpy(document).tolist() == np.asarray(first.encode(document)).tolist()
    results = {"bpe": [], "gigatoken": []}
    for _ in range(args.rounds):
        for engine in results:
            cold_documents = fresh_copies(documents)
            if engine == "bpe":
                ours.clear_cache()
                function = ours.encode_to_numpy
            else:
                function = giga().encode
            cold = timed_over(function, cold_documents)
            warm = timed_over(function, cold_documents)
            results[engine].append((size / cold, size / warm))
    row = {"vocab": args.vocab, "corpus": args.corpus, "mb": round(size, 2), "documents": len(documents),
           "call": "bpe encode_to_numpy(doc), gigatoken encode(doc) (numpy), alternating rounds"}
    for engine, values in results.items():
        row[engine] = cold_warm_summary(values)
    print(json.dumps(row))


if __name__ == "__main__":
    main()
