"""Time bpe.train against rustbpe, Hugging Face tokenizers and gigatoken, in one run.

Each trainer runs in its own process; the parent samples the peak RSS of that
process and all its children. Same corpus, same GPT-2 pattern, same vocab size
(rustbpe has no special tokens: it is given one merge fewer and fed documents
split at <|endoftext|>, streamed from disk).

    python benchmarks/bench_train.py --corpus ~/.cache/bpe-corpora/prose_en.txt --vocab-size 10000 \
        --save benchmarks/results/train_prose.json
    python benchmarks/bench_train.py --corpus ~/.cache/bpe-corpora/code_linux.txt --vocab-size 32000 \
        --trainers bpe,gigatoken,rustbpe --save benchmarks/results/train_code.json

Trainers run in turn, round after round; the saved record keeps every round's
seconds and the largest peak RSS.

Corpora: ``python benchmarks/build_corpora.py prose code``. Peers: ``pip install -e ".[peers]"``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

from _measure import entry, run_measured, save

SPECIAL = "<|endoftext|>"
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
TRAINERS = ["bpe", "rustbpe", "hf_tokenizers", "gigatoken"]


def documents(path: str, block_bytes: int = 1 << 20):
    """Stream the documents of a corpus split at the special token."""
    pending = ""
    with open(path, encoding="utf-8") as file:
        while True:
            block = file.read(block_bytes)
            if not block:
                break
            pieces = (pending + block).split(SPECIAL)
            pending = pieces.pop()
            yield from pieces
    if pending:
        yield pending


def train_one(name: str, corpus: str, vocab_size: int, workers: int) -> dict:
    result: dict = {}
    start = time.perf_counter()
    if name == "bpe":
        import bpe

        counts = bpe.count_pretokens(corpus, [SPECIAL], num_workers=workers)
        counted = time.perf_counter()
        tok = bpe.train_from_counts(counts, vocab_size, [SPECIAL])
        result["pretokenize_seconds"] = counted - start
        result["merge_seconds"] = time.perf_counter() - counted
        result["vocab"] = len(tok.vocab)
    elif name == "rustbpe":
        import rustbpe

        tok = rustbpe.Tokenizer()
        tok.train_from_iterator(documents(corpus), vocab_size - 1, pattern=GPT2_PATTERN)
        result["vocab"] = tok.vocab_size + 1
    elif name == "hf_tokenizers":
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers

        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[SPECIAL],
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                      show_progress=False)
        tok.train([corpus], trainer)
        result["vocab"] = tok.get_vocab_size()
    elif name == "gigatoken":
        import gigatoken

        tok = gigatoken.train_bpe(gigatoken.TextFileSource([corpus], separator=SPECIAL),
                                  vocab_size, [SPECIAL])
        result["vocab"] = vocab_size
    else:
        raise ValueError(name)
    result["seconds"] = time.perf_counter() - start
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--vocab-size", type=int, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--trainers", default=",".join(TRAINERS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--save", help="write the results here (the suite's record layout)")
    parser.add_argument("--one", help=argparse.SUPPRESS)   # internal: run one trainer, print JSON
    args = parser.parse_args()
    if args.one:
        print(json.dumps(train_one(args.one, args.corpus, args.vocab_size, args.workers)))
        return
    size_mb = os.path.getsize(args.corpus) / 1e6
    print(f"corpus {os.path.basename(args.corpus)} ({size_mb:.0f} MB), vocab {args.vocab_size}, "
          f"{args.workers} workers, {os.cpu_count()} cores, {platform.python_version()}")
    print(f"{'trainer':<14} {'seconds':>8} {'peak RSS MiB':>13}  split")
    seconds: dict[str, list[float]] = {}
    peaks: dict[str, float] = {}
    for _ in range(args.rounds):
        for name in args.trainers.split(","):
            argv = [sys.executable, __file__, "--one", name, "--corpus", args.corpus,
                    "--vocab-size", str(args.vocab_size), "--workers", str(args.workers)]
            try:
                result = run_measured(argv)
            except Exception as e:   # a peer that is not installed or fails is reported, not fatal
                print(f"{name:<14} failed: {e}")
                continue
            split = ""
            if "merge_seconds" in result:
                split = (f"pre-tokenize {result['pretokenize_seconds']:.2f} s, "
                         f"merge loop {result['merge_seconds']:.2f} s")
            print(f"{name:<14} {result['seconds']:>8.2f} {result['peak_rss_mib']:>13.0f}  {split}",
                  flush=True)
            seconds.setdefault(name, []).append(result["seconds"])
            peaks[name] = max(peaks.get(name, 0.0), result["peak_rss_mib"])
    if args.save:
        group = f"train {os.path.basename(args.corpus)}, vocab {args.vocab_size}, whole process"
        save(args.save, [entry(group, name, times, library=name.replace("hf_tokenizers", "tokenizers"),
                               call=f"{args.workers} workers" if name == "bpe" else "its own threads",
                               output="a tokenizer", mb=size_mb, peak_rss_mib=peaks[name])
                         for name, times in seconds.items()])


if __name__ == "__main__":
    main()
