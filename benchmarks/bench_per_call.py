"""Cost of one call on short text, warm: the token counters, chat-message loops
and data loaders that call a tokenizer once per string.

Each library is called as its users call it, on the same str objects, ids
asserted identical first; the table says which call and which output type each
ran (lists with lists, numpy with numpy). Rounds are interleaved across
candidates; each round times ``--calls`` calls and the table gives the min and
median of the rounds' per-call time.

    python benchmarks/bench_per_call.py --rounds 7

Peers: ``pip install -e ".[peers]"`` (tiktoken, gigatoken); a missing one is
left out, with a note.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

import bpe
import bpe.tiktoken as front_door

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))   # tiktoken_reference
from bench_per_core import gigatoken_factory  # noqa: E402

TEXTS = {
    "2 chars": "hi",
    "83 chars": "The quick brown fox jumps over the lazy dog, then naps by the river until sundown.",
}


def candidates(name: str) -> dict:
    """``label: (call, output type, function of one text)`` for every library installed."""
    tok = bpe.load(name)
    encoding = front_door.get_encoding(name)
    found = {
        "bpe encode": ("Tokenizer.encode", "list", tok.encode),
        "bpe encode_ordinary": ("Tokenizer.encode_ordinary", "list", tok.encode_ordinary),
        "bpe encode_to_numpy": ("Tokenizer.encode_to_numpy", "numpy", tok.encode_to_numpy),
        "bpe.tiktoken encode": ("Encoding.encode (tiktoken's defaults)", "list", encoding.encode),
    }
    try:
        from tiktoken_reference import get_encoding

        reference = get_encoding(name)
        found["tiktoken encode"] = ("Encoding.encode (defaults)", "list", reference.encode)
        found["tiktoken encode_ordinary"] = ("Encoding.encode_ordinary", "list", reference.encode_ordinary)
        found["tiktoken encode_to_numpy"] = ("Encoding.encode_to_numpy", "numpy", reference.encode_to_numpy)
    except ImportError:
        print("tiktoken not installed: left out", file=sys.stderr)
    try:
        giga = gigatoken_factory(name, tok)()
        found["gigatoken encode"] = ("Tokenizer.encode", "numpy", giga.encode)
        found["gigatoken encode().tolist()"] = ("Tokenizer.encode, then .tolist()", "list",
                                               lambda text: giga.encode(text).tolist())
    except ImportError:
        print("gigatoken not installed: left out", file=sys.stderr)
    return found


def per_call_seconds(function, text: str, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        function(text)
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizers", default="gpt2,cl100k_base,o200k_base")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=100_000)
    args = parser.parse_args()
    for name in args.tokenizers.split(","):
        found = candidates(name)
        for text_name, text in TEXTS.items():
            expected = bpe.load(name).encode_ordinary(text)
            for label, (_, _, function) in found.items():
                ids = function(text)
                assert np.asarray(ids).tolist() == expected, (label, text_name)
            times = {label: [] for label in found}
            for _ in range(args.rounds):
                for label, (_, _, function) in found.items():
                    times[label].append(per_call_seconds(function, text, args.calls))
            print(f"\n{name}, {text_name} ({text!r}), warm, {args.rounds} rounds of {args.calls} calls")
            print(f"{'library':30} {'call':40} {'out':6} {'min us':>7} {'median us':>9}")
            for label, (call, out, _) in found.items():
                print(f"{label:30} {call:40} {out:6} {min(times[label]) * 1e6:7.3f} "
                      f"{statistics.median(times[label]) * 1e6:9.3f}")


if __name__ == "__main__":
    main()
