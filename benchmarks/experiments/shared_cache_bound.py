"""How much a pre-token cache shared by encode_file's workers could save: an
upper bound, counted, and timed on one thread.

    PYTHONPATH=benchmarks python benchmarks/experiments/shared_cache_bound.py --corpus ~/.cache/bpe-corpora/prose_en.txt [--rounds 8]

Each worker of ``encode_file`` has its own session, whose cache merges every
pre-token it has not met (one that is not a whole token) once. The corpus is
cut into encode_file's chunks, handed to two workers in turn. The script counts
the merges of one worker, of two workers with their own caches, and of two
workers that after every E chunks each import what the other merged meanwhile
(imports are cache inserts the receiving worker may never use), and of two
workers that each take a contiguous half of the chunks instead. One cache both
workers share would merge as one worker does. Caches here are unbounded; bpe's
start afresh at their budget, which only code-sized corpora reach.

With ``--rounds``, the same chunks are also encoded on one thread, kernel
calls only, through one session and through two sessions taking them in
turn, each in fresh sessions, alternating which goes first: the time two
sessions' caches cost over one, merges and all, with no second core to
share the machine with. One shared cache could save at most that.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import bpe
from bpe._session import Session
from bpe.corpus.driver import CHUNK_BYTES

SEPARATOR = "<|endoftext|>"


def chunk_bytes(path: str, tokenizer) -> list[bytes]:
    """The bytes of each chunk of encode_file's cut of ``path``."""
    chunks = bpe.corpus.plan_chunks([path], CHUNK_BYTES, [SEPARATOR], tokenizer.pattern, snap_token=SEPARATOR)
    texts = []
    with open(path, "rb") as f:
        for chunk in chunks:
            f.seek(chunk.start)
            texts.append(f.read(chunk.n_bytes))
    return texts


def chunk_pieces(chunks: list[bytes], tokenizer) -> list[set]:
    """For each chunk, the distinct pre-tokens a cache merges."""
    whole_tokens = set(tokenizer.vocab.values())
    pieces = []
    for chunk in chunks:
        distinct = set()
        for document in chunk.decode("utf-8").split(SEPARATOR):
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


def one_cache(pieces: list[set]) -> int:
    """Merges of one worker taking every chunk of ``pieces`` in turn."""
    seen: set = set()
    merges = 0
    for chunk in pieces:
        merges += len(chunk - seen)
        seen |= chunk
    return merges


def contiguous_halves(pieces: list[set]) -> int:
    """Merges of two workers with their own caches, one taking the first half
    of the chunks and the other the rest (a corpus's neighbouring documents
    share more pre-tokens than distant ones)."""
    middle = len(pieces) // 2
    return one_cache(pieces[:middle]) + one_cache(pieces[middle:])


def time_sessions(chunks: list[bytes], tokenizer, rounds: int) -> dict:
    """Seconds to encode every chunk through 1 session and through 2 taking them in
    turn, on this thread, kernel calls only: ``{1: [...], 2: [...]}`` per round."""
    encoder = tokenizer.encoder
    texts = [np.frombuffer(chunk, np.uint8) for chunk in chunks]
    needles = encoder._needles(list(tokenizer.special_tokens))
    pattern = encoder._pattern_id()
    out = np.empty(max(len(text) for text in texts), np.uint32)

    def encode_all(n_sessions: int) -> float:
        sessions = [Session() for _ in range(n_sessions)]
        start = time.perf_counter()
        for k, text in enumerate(texts):
            encoder._kernel.encode_texts(sessions[k % n_sessions], text, np.array([0, len(text)], np.int64),
                                         pattern, *needles, out)
        return time.perf_counter() - start

    seconds: dict = {1: [], 2: []}
    for r in range(rounds):
        for n_sessions in ((1, 2) if r % 2 == 0 else (2, 1)):
            seconds[n_sessions].append(encode_all(n_sessions))
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--tokenizer", default="gpt2")
    parser.add_argument("--every", default="1,2,4,8", help="exchange intervals, in chunks per worker")
    parser.add_argument("--rounds", type=int, default=0,
                        help="also time one session against two on one thread, this many rounds each")
    parser.add_argument("--json", help="append the counts to this JSON-lines file")
    args = parser.parse_args()
    tokenizer = bpe.load(args.tokenizer)
    chunks = chunk_bytes(args.corpus, tokenizer)
    pieces = chunk_pieces(chunks, tokenizer)
    one = one_cache(pieces)
    own, _ = two_workers(pieces, 0)
    print(f"{len(pieces)} chunks; merges: one worker {one}, two workers with their own caches {own} "
          f"({own / one:.2f}x; a shared cache would save {own - one})")
    halves = contiguous_halves(pieces)
    print(f"two workers taking contiguous halves instead of chunks in turn: merges {halves} "
          f"({halves / one:.2f}x)")
    exchanges = {}
    for every in (int(e) for e in args.every.split(",")):
        merges, imports = two_workers(pieces, every)
        exchanges[every] = {"merges": merges, "imports": imports}
        print(f"exchanging every {every} chunk(s): merges {merges} ({merges / one:.2f}x), imports {imports}")
    timed = time_sessions(chunks, tokenizer, args.rounds) if args.rounds else {}
    if timed:
        best = {n: min(timed[n]) for n in (1, 2)}
        median = {n: statistics.median(timed[n]) for n in (1, 2)}
        print(f"one thread, {args.rounds} rounds: one session {best[1]:.3f} / {median[1]:.3f} s (best / median), "
              f"two in turn {best[2]:.3f} / {median[2]:.3f} s: {best[2] / best[1]:.3f}x / "
              f"{median[2] / median[1]:.3f}x")
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps({"corpus": args.corpus, "tokenizer": args.tokenizer, "chunks": len(pieces),
                                "one_worker": one, "two_workers": own, "contiguous_halves": halves,
                                "exchanges": exchanges,
                                "seconds_by_sessions": timed}) + "\n")


if __name__ == "__main__":
    main()
