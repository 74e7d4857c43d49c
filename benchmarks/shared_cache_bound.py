"""How many merges a pre-token cache shared by encode_file's workers could save:
an upper bound, counted, not timed.

    python benchmarks/shared_cache_bound.py --corpus ~/.cache/bpe-corpora/prose_en.txt

Each worker of ``encode_file`` has its own session, whose cache merges every
pre-token it has not met (one that is not a whole token) once. The corpus is
cut into encode_file's chunks, handed to two workers in turn. The script counts
the merges of one worker, of two workers with their own caches, and of two
workers that after every E chunks each import what the other merged meanwhile
(imports are cache inserts the receiving worker may never use). One cache both
workers share would merge as one worker does. Caches here are unbounded; bpe's
start afresh at their budget, which only code-sized corpora reach.
"""
from __future__ import annotations

import argparse
import json

import bpe
from bpe.encode_file import CHUNK_BYTES

SEPARATOR = "<|endoftext|>"


def chunk_pieces(path: str, tokenizer) -> list[set]:
    """For each chunk of encode_file's cut, the distinct pre-tokens a cache merges."""
    whole_tokens = set(tokenizer.vocab.values())
    chunks = bpe.plan_chunks([path], CHUNK_BYTES, [SEPARATOR], tokenizer.pattern, snap_token=SEPARATOR)
    pieces = []
    with open(path, "rb") as f:
        for chunk in chunks:
            f.seek(chunk.start)
            text = f.read(chunk.end - chunk.start).decode("utf-8")
            distinct = set()
            for document in text.split(SEPARATOR):
                distinct.update(piece.encode("utf-8") for piece in bpe.pretokenize(document, tokenizer.pattern))
            pieces.append({piece for piece in distinct if len(piece) > 1} - whole_tokens)
    return pieces


def two_workers(pieces: list[set], every: int) -> tuple[int, int]:
    """Merges and imports of two workers taking chunks in turn; ``every`` > 0:
    each imports the other's new pieces after every ``every`` chunks of its own."""
    caches, new = [set(), set()], [set(), set()]
    merges = imports = 0
    for i, chunk in enumerate(pieces):
        worker = i % 2
        met = chunk - caches[worker]
        merges += len(met)
        caches[worker] |= met
        new[worker] |= met
        if every and i % (2 * every) == 2 * every - 1:
            for worker in (0, 1):
                received = new[1 - worker] - caches[worker]
                imports += len(received)
                caches[worker] |= received
            new = [set(), set()]
    return merges, imports


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--tokenizer", default="gpt2")
    parser.add_argument("--every", default="1,2,4,8", help="exchange intervals, in chunks per worker")
    parser.add_argument("--json", help="append the counts to this JSON-lines file")
    args = parser.parse_args()
    tokenizer = bpe.load(args.tokenizer)
    pieces = chunk_pieces(args.corpus, tokenizer)
    seen: set = set()
    one = 0
    for chunk in pieces:
        one += len(chunk - seen)
        seen |= chunk
    own, _ = two_workers(pieces, 0)
    print(f"{len(pieces)} chunks; merges: one worker {one}, two workers with their own caches {own} "
          f"({own / one:.2f}x; a shared cache would save {own - one})")
    exchanges = {}
    for every in (int(e) for e in args.every.split(",")):
        merges, imports = two_workers(pieces, every)
        exchanges[every] = {"merges": merges, "imports": imports}
        print(f"exchanging every {every} chunk(s): merges {merges} ({merges / one:.2f}x), imports {imports}")
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps({"corpus": args.corpus, "tokenizer": args.tokenizer, "chunks": len(pieces),
                                "one_worker": one, "two_workers": own, "exchanges": exchanges}) + "\n")


if __name__ == "__main__":
    main()
