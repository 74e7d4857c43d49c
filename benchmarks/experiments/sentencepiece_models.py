"""Encoding speed with SentencePiece BPE models (Mistral 7B v0.1 and v0.3), per
document, one thread, on prose, code and multilingual text:

* the ``.model`` file: bpe's ``encode(doc)`` against sentencepiece's
  ``encode(doc)``, both lists of ints; and bpe's ``encode_to_numpy(doc)``
  (numpy, which sentencepiece does not give);
* the same model as ``transformers`` converts it to ``tokenizer.json`` (Llama
  2's form, ``tests/sentencepiece_json.py``): bpe's ``encode(doc)`` against
  ``tokenizers``' ``encode(doc, add_special_tokens=False).ids``, both lists.

Cold: bpe's caches cleared, a fresh ``tokenizers.Tokenizer`` each round, fresh
str objects (``_measure.fresh_copies``); warm: the same objects and documents
again. Rounds interleave the engines; the best and the median of the rounds
are printed; ids are asserted equal in the same run. Then one call on a
short str (2 and 85 characters), warm: microseconds, best / median.

    PYTHONPATH=benchmarks:benchmarks/experiments:tests python benchmarks/experiments/sentencepiece_models.py --mb 4 --rounds 5

The models come from mistral-common's wheel (``tests/fetched.py``'s cache); the
corpora from ``../shared/corpora/build``; the multilingual sample is
``real_tokenizers.samples``'.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import timeit

import sentencepiece
import tokenizers

import bpe
from _measure import fresh_copies, timed_over
from fetched import member
from real_tokenizers import samples
from sentencepiece_json import to_tokenizer_json

SHORT = ["hi", "The quick brown fox jumps over the lazy dog, then naps in the sun for an hour or two."]
CALLS = 2000
MODELS = {"mistral_v1": "mistral_common/data/tokenizer.model.v1",
          "mistral_v3": "mistral_common/data/mistral_instruct_tokenizer_240323.model.v3"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    corpora = samples(args.mb)
    print("model       corpus        MB   call                          cold best/median   warm best/median  MB/s")
    for model, name in MODELS.items():
        path = member("mistral-common==1.13.1", name)
        with open(path, "rb") as file:
            converted = to_tokenizer_json(file.read(), "prepend_replace")
        ours = bpe.load(path)
        with tempfile.TemporaryDirectory() as directory:
            json_path = os.path.join(directory, "tokenizer.json")
            with open(json_path, "w", encoding="utf-8") as file:
                file.write(converted)
            ours_json = bpe.load(json_path)
        reference = sentencepiece.SentencePieceProcessor(model_file=path)
        hf = {"object": tokenizers.Tokenizer.from_str(converted)}
        engines = {"bpe encode (list)": ours.encode, "bpe encode_to_numpy (numpy)": ours.encode_to_numpy,
                   "sentencepiece encode (list)": reference.encode,
                   "bpe json encode (list)": ours_json.encode,
                   "tokenizers encode().ids (list)": lambda d: hf["object"].encode(d, add_special_tokens=False).ids}
        for corpus, documents in corpora.items():
            size = sum(len(d.encode("utf-8")) for d in documents) / 1e6
            for document in documents:          # the same ids, in this run
                assert ours.encode(document) == reference.encode(document)
                assert ours_json.encode(document) == hf["object"].encode(document, add_special_tokens=False).ids
            cold = {engine: [] for engine in engines}
            warm = {engine: [] for engine in engines}
            for _ in range(args.rounds):
                for engine, function in engines.items():
                    ours.clear_cache()
                    ours_json.clear_cache()
                    hf["object"] = tokenizers.Tokenizer.from_str(converted)
                    cold[engine].append(timed_over(function, fresh_copies(documents)))
                    warm[engine].append(timed_over(function, documents))
            for engine in engines:
                print(f"{model:11s} {corpus:13s} {size:4.1f} {engine:30s} "
                      f"{size / min(cold[engine]):7.1f} / {size / statistics.median(cold[engine]):5.1f}   "
                      f"{size / min(warm[engine]):7.1f} / {size / statistics.median(warm[engine]):5.1f}")
        # One call on a short str, warm: the fixed cost of a call (chat messages, token counts).
        for text in SHORT:
            per_call = {engine: [] for engine in engines}
            assert ours.encode(text) == reference.encode(text)
            assert ours_json.encode(text) == hf["object"].encode(text, add_special_tokens=False).ids
            for _ in range(args.rounds):
                for engine, function in engines.items():
                    per_call[engine].append(timeit.timeit(lambda: function(text), number=CALLS) / CALLS * 1e6)
            for engine in engines:
                print(f"{model:11s} {len(text):2d} chars, one call   {engine:30s} "
                      f"{min(per_call[engine]):7.2f} / {statistics.median(per_call[engine]):5.2f} us")


if __name__ == "__main__":
    main()
