"""The ``bpe`` command: train, encode, decode, count, inspect.

User errors (a missing file, a bad option, an unreadable tokenizer: bpe's own
errors, ``OSError`` and ``ValueError``) print one line and exit 2, without a
traceback; anything else is a bug and keeps its traceback. Progress bars show
only on a terminal.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
import warnings
from collections import Counter

import bpe
from bpe.errors import BpeError, CorpusDecodeError, CorpusRecordError
from bpe.files import checked_utf8, refuse_overwriting_inputs
from bpe.formats.own import own_target
from bpe.formats.sentencepiece import CONTROL, NORMAL, TYPE_NAMES
from bpe.sentencepiece import CharacterTokenizer, HuggingFaceSentencePiece, SentencePieceTokenizer
from bpe.corpus.records import Problems, units
from bpe.corpus.sources import find_sources
from bpe.view import TokenView, color_wanted, render_terminal, write_html

DEFAULT_CORPUS = os.path.join(os.path.dirname(__file__), "data", "tinyshakespeare.txt")


class UserError(Exception):
    """A mistake in the command line itself: one line, no traceback."""


def _readable(token: bytes) -> str:
    """A token for a person to read: its text in quotes, each run of four or more
    of one character as that character times the count (the longest tokens of
    code vocabularies are runs of spaces or dashes): ``' ' + '-' x 111``."""
    import itertools

    text = token.decode("utf-8", errors="replace")
    parts, literal = [], ""
    for character, run in itertools.groupby(text):
        count = len(list(run))
        if count >= 4:
            if literal:
                parts.append(repr(literal))
                literal = ""
            parts.append(f"{character!r} x {count}")
        else:
            literal += character * count
    if literal or not parts:
        parts.append(repr(literal))
    return " + ".join(parts)


def _longest_tokens(tok, n: int) -> list[bytes]:
    special_ids = set(tok.special_tokens.values())
    ordinary = [token for token_id, token in tok.vocab.items() if token_id not in special_ids]
    return sorted(ordinary, key=len, reverse=True)[:n]


def cmd_train(args) -> None:
    own_target(args.output)                 # refused now, not after training
    files = args.files or [DEFAULT_CORPUS]
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if args.ray is not None:
            from bpe import distributed

            tok = distributed.train(files, args.vocab_size, args.special_token, pattern=args.pattern,
                                    min_frequency=args.min_frequency, errors=args.errors,
                                    address=args.ray or None, progress=_show_progress(args))
        else:
            tok = bpe.train(files, args.vocab_size, args.special_token, pattern=args.pattern,
                            min_frequency=args.min_frequency, num_workers=args.workers,
                            errors=args.errors, progress=_show_progress(args), **_corpus_options(args))
    seconds = time.perf_counter() - start
    path = tok.save(args.output)
    for warning in caught:
        print(f"note: {warning.message}", file=sys.stderr)
    plan = find_sources(files, recursive=args.recursive, glob=args.glob)
    if plan.skipped and not args.quiet:
        print(f"note: {plan.skipped_note()}", file=sys.stderr)
    corpus = "the embedded default corpus (Tiny Shakespeare)" if not args.files else \
        f"{len(plan.sources)} file(s)"
    longest = _longest_tokens(tok, 5)
    if not args.quiet:
        print(f"trained on {corpus}: {len(tok.merges)} merges, vocab {len(tok.vocab)}, "
              f"{seconds:.2f} s")
        print(f"longest tokens: {', '.join(_readable(t) for t in longest)}")
        print(f"saved {path}")


def _corpus_options(args) -> dict:
    """How the corpus options read files: ``text_field``, ``recursive``, ``glob``."""
    return {"text_field": args.text_field, "recursive": args.recursive, "glob": args.glob}


def _load_tokenizer(name_or_path: str):
    """A tokenizer by built-in name, model name (``gpt-4o``) or file or directory
    (``bpe.load``, whose errors say what it knows and what was meant)."""
    return bpe.load(name_or_path)


def _show_progress(args) -> bool:
    return not args.quiet and sys.stderr.isatty()


def cmd_encode(args) -> None:
    if args.finalize:
        if args.files or args.output or args.tokenizer:
            raise UserError("--finalize OUT_DIR takes no files, --tokenizer or -o: it writes the manifest "
                            "of shards already encoded")
        manifest = bpe.corpus.finalize_shards(args.finalize)
        if not args.quiet:
            print(f"wrote {manifest}")
        return
    if not args.files or not args.output or not args.tokenizer:
        raise UserError("give FILES, --tokenizer and -o (or --finalize OUT_DIR)")
    tok = _load_tokenizer(args.tokenizer)
    # --rank or --world-size given, even 0 of 1, asks for shards (a job array of one).
    sharded = (args.ray is not None or args.shard_mb is not None or args.rank is not None
               or args.world_size is not None)
    if (args.add_bos or args.add_eos) and not isinstance(tok, SentencePieceTokenizer):
        raise UserError(f"--add-bos and --add-eos are for SentencePiece models; {args.tokenizer} separates "
                        "documents with its first special token")
    if sharded and isinstance(tok, CharacterTokenizer):
        raise UserError(f"{args.tokenizer} is a SentencePiece-style model, which 'bpe encode' writes as one array; "
                        "leave out --shard-mb, --rank, --world-size and --ray")
    if args.ray is not None:
        from bpe import distributed

        if args.recursive or args.glob:
            raise UserError("--ray takes files and directories as they are: list the files instead of "
                            "--recursive or --glob")
        summary = distributed.encode(tok, args.files, args.output, shard_bytes=_shard_bytes(args),
                                     dtype=args.dtype, errors=args.errors, address=args.ray or None,
                                     progress=_show_progress(args), text_field=args.text_field)
    elif sharded:
        summary = bpe.corpus.encode_shards(tok, args.files, args.output, shard_bytes=_shard_bytes(args),
                                    rank=args.rank or 0, world_size=args.world_size or 1, dtype=args.dtype,
                                    num_workers=args.workers, errors=args.errors,
                                    progress=_show_progress(args), **_corpus_options(args))
    else:
        framing = {"add_bos": args.add_bos, "add_eos": args.add_eos} if isinstance(tok, SentencePieceTokenizer) else {}
        summary = tok.encode_file(args.files, args.output, dtype=args.dtype, num_workers=args.workers,
                                  errors=args.errors, progress=_show_progress(args), **framing,
                                  **_corpus_options(args))
        for note in (summary.skipped, summary.problems):
            if note:
                print(f"note: {note}", file=sys.stderr)
    if not args.quiet:
        print(summary)
        if sharded:
            print(f"read with: bpe.open_tokens({summary.directory!r})" if summary.manifest else
                  f"then: bpe encode --finalize {summary.directory} (once every rank is done)")
        else:
            print(f"document starts: {summary.document_index} (bpe.read_document_index)")
            print(f"read with: bpe.open_tokens({summary.output!r})  (or numpy.memmap with dtype "
                  f"'{summary.dtype}', as {summary.metadata} records)")


def _shard_bytes(args) -> int:
    if args.shard_mb is None:
        return bpe.corpus.shards.SHARD_BYTES
    if not 0 < args.shard_mb < 1e12:           # inf and nan too: no int holds them
        raise UserError(f"--shard-mb {args.shard_mb}: give a size in MB, > 0 and finite")
    return max(1, int(args.shard_mb * 1e6))


def cmd_decode(args) -> None:
    import numpy as np

    tok = _load_tokenizer(args.tokenizer)
    if args.array == "-":
        ids = _read_ids(sys.stdin.read())
    else:
        ids = bpe.open_tokens(args.array)
        recorded = ids.tokenizer_fingerprint if hasattr(ids, "tokenizer_fingerprint") else \
            bpe.read_metadata(args.array)["tokenizer_fingerprint"]       # a sharded output's, or one array's
        if recorded != tok.fingerprint() and not args.force:
            raise UserError(f"{args.array} was encoded with another tokenizer than {args.tokenizer} "
                            f"(fingerprint {recorded[:12]}, not {tok.fingerprint()[:12]}); "
                            "--force decodes it anyway")
    if args.head is not None:
        if args.head < 0:
            raise UserError(f"--head {args.head}: give a number of tokens >= 0")
        ids = ids[:args.head]
    sys.stdout.write(tok.decode(np.asarray(ids)))
    sys.stdout.write("\n")


def _read_ids(text: str) -> list[int]:
    """Ids as people paste them: separated by spaces, newlines or commas, a JSON
    list's brackets around them or not."""
    words = text.replace(",", " ").replace("[", " ").replace("]", " ").split()
    ids = []
    for word in words:
        if not word.isascii() or not word.isdigit():
            raise UserError(f"{word[:40]!r} is not a token id (give ids as numbers, separated by spaces "
                            "or commas)")
        ids.append(int(word))
    return ids


def cmd_count(args) -> None:
    if args.files == ["-"]:
        texts = [(sys.stdin.read(), False)]
    else:
        plan = find_sources(args.files, recursive=args.recursive, glob=args.glob)
        problems = Problems()
        texts = []
        for unit in units(plan.sources, args.text_field, args.errors, (), None, None):
            if unit.records is None:
                texts.append((bytes(unit.text).decode("utf-8"), False))
            else:
                found, skipped = unit.records.texts()
                texts.extend((text, True) for text in found)
                problems.extend(skipped)
        for note in (plan.skipped_note(), str(problems)):
            if note:
                print(f"note: {note}", file=sys.stderr)
    prices = _parse_prices(args.price)
    n_chars = sum(len(text) for text, _ in texts)
    n_bytes = sum(len(text.encode("utf-8", "surrogatepass")) for text, _ in texts)
    names = [name.strip() for value in args.tokenizer for name in value.split(",") if name.strip()]
    unknown = sorted(set(prices) - set(names))
    if unknown:
        raise UserError(f"--price {unknown[0]}=...: {unknown[0]} is not one of --tokenizer")
    rows = []
    for name in names:
        tok = _load_tokenizer(name)
        # A record is a document's text alone, as encode_ordinary reads it.
        n_tokens = sum(len(tok.encode_ordinary(text)) if record else tok.count(text) for text, record in texts)
        rows.append((name, n_tokens, n_chars / max(n_tokens, 1), n_bytes / max(n_tokens, 1)))
    width = max(16, *(len(name) + 1 for name in names))
    header = f"{'tokenizer':<{width}} {'tokens':>12} {'chars/token':>12} {'bytes/token':>12}"
    print(header + (f" {'est. cost USD':>14}" if prices else ""))
    for name, n_tokens, chars, per_token in rows:
        cost = f" {n_tokens * prices[name] / 1e6:>14.6f}" if name in prices else (" " * 15 if prices else "")
        print(f"{name:<{width}} {n_tokens:>12} {chars:>12.2f} {per_token:>12.2f}{cost}".rstrip())


def _parse_prices(items) -> dict:
    """``--price NAME=USD_PER_1M_TOKENS`` values, checked."""
    prices = {}
    for item in items or []:
        name, _, value = item.partition("=")
        try:
            price = float(value)
        except ValueError:
            price = -1.0
        if not name or price < 0 or price != price:
            raise UserError(f"--price {item!r}: give NAME=USD_PER_1M_TOKENS, e.g. gpt-4o=2.50")
        prices[name.strip()] = price
    return prices


def cmd_show(args) -> None:
    if args.max_chars < 1:
        raise UserError(f"--max-chars {args.max_chars}: give a number of characters >= 1")
    if args.file is not None and args.text is not None:
        raise UserError("give a FILE to show (- for standard input) or --text TEXT, not both")
    if args.file is None and args.text is None:
        raise UserError("give a FILE to show (- for standard input) or --text TEXT")
    prices = _parse_prices(args.price)
    names = [name.strip() for value in args.tokenizer for name in value.split(",") if name.strip()]
    tokenizers = {name: _load_tokenizer(name) for name in names}
    if args.html and args.file not in (None, "-"):
        refuse_overwriting_inputs([args.html], [args.file])
    if args.text is not None:
        views = [TokenView.of(name, tok, args.text, args.max_chars) for name, tok in tokenizers.items()]
    elif args.file == "-":
        text = sys.stdin.read()
        views = [TokenView.of(name, tok, text, args.max_chars) for name, tok in tokenizers.items()]
    else:
        views = _show_file(args.file, tokenizers, args.max_chars, args.errors)
    if args.html:
        print(f"wrote {write_html(args.html, views, prices)}")
        return
    sys.stdout.write(render_terminal(views, color=color_wanted(sys.stdout), ids=args.ids, prices=prices))


#: How much of a file ``bpe show`` reads at a time to count all of it.
SHOW_READ_BYTES = 1 << 20


def _show_file(path: str, tokenizers: dict, max_chars: int, errors: str) -> list:
    """Views of a file's first ``max_chars`` characters, reading only what they
    show; where the file is longer, its counts are made reading it a block at
    a time (``Tokenizer.count_iterable``), so memory stays bounded."""
    from bpe.view import Totals

    if os.path.isdir(path):
        raise UserError(f"{path}: is a directory; give a file (or --text TEXT)")
    if not os.path.exists(path):
        raise UserError(f"{path}: no such file (to show literal text, use --text {path!r})")
    with open(path, "rb") as file:
        head = file.read(4 * max_chars + 4)
        whole = file.read(1) == b""
    if b"\x00" in head[:8192]:
        raise UserError(f"{path}: a binary file, not text")
    if not whole:
        # Cut at a character boundary, within what was read.
        end = len(head)
        while end > 0 and 0x80 <= head[end - 1] < 0xC0:
            end -= 1
        head = head[:end - 1] if end > 0 and head[end - 1] >= 0xC0 else head
    text = bytes(checked_utf8(head, path, 0, errors)).decode("utf-8")
    if whole:
        return [TokenView.of(name, tok, text, max_chars) for name, tok in tokenizers.items()]
    shown = text[:max_chars]
    views = []
    for name, tok in tokenizers.items():
        counted = {"chars": 0, "bytes": 0}

        def blocks():
            with open(path, "rb") as file:
                offset, rest = 0, b""
                while True:
                    block = file.read(SHOW_READ_BYTES)
                    data = rest + block
                    if not block:
                        rest = b""
                    else:                             # hold back a character cut at the block's end
                        end = len(data)
                        while end > 0 and len(data) - end < 4 and 0x80 <= data[end - 1] < 0xC0:
                            end -= 1
                        if end > 0 and data[end - 1] >= 0xC0:
                            end -= 1
                        data, rest = data[:end], data[end:]
                    piece = bytes(checked_utf8(data, path, offset, errors)).decode("utf-8")
                    offset += len(data)
                    counted["chars"] += len(piece)
                    counted["bytes"] += len(data)
                    yield piece
                    if not block:
                        return

        n_tokens = tok.count_iterable(blocks())
        views.append(TokenView.of(name, tok, shown, None, Totals(n_tokens, counted["chars"], counted["bytes"])))
    return views


def _inspect_sentencepiece(tok: SentencePieceTokenizer, top: int) -> None:
    kinds = Counter(TYPE_NAMES[piece.type] for piece in tok.pieces)
    print(f"pieces:         {tok.n_vocab} ({', '.join(f'{n} {kind}' for kind, n in kinds.most_common())}); "
          "a SentencePiece BPE model")
    print(f"read from:      {tok.source}")
    print(f"normalizer:     identity; dummy prefix {'on' if tok.add_dummy_prefix else 'off'}, extra spaces "
          f"{'removed' if tok.remove_extra_whitespaces else 'kept'}, byte fallback "
          f"{'on' if tok.byte_fallback else 'off'}")
    named = {"unk": tok.unk_id, "bos": tok.bos_id, "eos": tok.eos_id, "pad": tok.pad_id}
    print("ids:            " + ", ".join(f"{name} = {i} {tok.pieces[i].text!r}" if 0 <= i < tok.n_vocab
                                         else f"{name} none" for name, i in named.items()))
    controls = [piece.text for piece in tok.pieces if piece.type == CONTROL]
    print(f"control pieces: {len(controls)} (never found in text): {', '.join(controls[:top])}"
          + (", ..." if len(controls) > top else ""))
    defined = list(tok.user_defined)
    print(f"user-defined:   {len(defined)} (found in text first): {', '.join(defined[:top]) or 'none'}"
          + (", ..." if len(defined) > top else ""))
    longest = sorted((piece.text for piece in tok.pieces if piece.type == NORMAL), key=len, reverse=True)[:top]
    print(f"longest pieces: {', '.join(repr(text) for text in longest)}")


def _inspect_huggingface_sentencepiece(tok: HuggingFaceSentencePiece, top: int) -> None:
    print(f"tokens:         {len(tok.tokens)} ({tok.n_merges} merges, 256 byte-fallback tokens); SentencePiece-style "
          "BPE from a Hugging Face tokenizer.json")
    print(f"read from:      {tok.source}")
    added = list(tok.special_tokens)
    print(f"added tokens:   {len(added)} (found in text first): {', '.join(added[:top]) or 'none'}"
          + (", ..." if len(added) > top else ""))
    ordinary = [text for token_id, text in tok.tokens.items() if token_id not in tok.special_tokens.values()]
    longest = sorted(ordinary, key=len, reverse=True)[:top]
    print(f"longest tokens: {', '.join(repr(text) for text in longest)}")


def cmd_inspect(args) -> None:
    if args.top < 0:
        raise UserError(f"--top {args.top}: give a number of tokens and merges >= 0")
    loaded = _load_tokenizer(args.tokenizer)
    if isinstance(loaded, SentencePieceTokenizer):
        _inspect_sentencepiece(loaded, args.top)
        return
    if isinstance(loaded, HuggingFaceSentencePiece):
        _inspect_huggingface_sentencepiece(loaded, args.top)
        return
    tok = loaded
    longest = _longest_tokens(tok, args.top)
    n_tokens = len(tok.vocab)
    unused = tok.n_vocab - n_tokens
    print(f"tokens:         {n_tokens} ({tok._vocabulary.n_ordinary} ordinary, {len(tok.special_tokens)} special)")
    print(f"n_vocab:        {tok.n_vocab} (the largest id + 1, what an embedding needs"
          + (f"; {unused} ids below it belong to no token)" if unused else ")"))
    if tok.source:
        print(f"read from:      {tok.source}")
    try:
        merges = tok.merges
        print(f"merges:         {len(merges)}")
    except ValueError:
        merges = None
        print("merges:         none (a ranked vocabulary: tokens merge by tiktoken's rule)")
    print(f"pattern:        {tok.pattern!r}")
    print(f"special tokens: {', '.join(f'{name} = {i}' for name, i in tok.special_tokens.items()) or 'none'}")
    print(f"longest tokens: {', '.join(_readable(t) for t in longest)}")
    if merges is not None:
        show = lambda merges: ", ".join(f"({_readable(a)}, {_readable(b)})" for a, b in merges)  # noqa: E731
        print(f"first merges:   {show(merges[:args.top])}")
        print(f"last merges:    {show(merges[max(0, len(merges) - args.top):])}")


EXAMPLES = {
    "bpe": """examples:
  bpe train corpus.txt --vocab-size 10000 --special-token "<|endoftext|>" -o my-tok
  bpe encode data/ --tokenizer my-tok -o train.bin
  bpe show notes.txt --tokenizer gpt2,gpt-4o
  bpe <command> --help     (each command's options and examples)""",
    "train": """examples:
  bpe train corpus.txt --vocab-size 10000 --special-token "<|endoftext|>" -o my-tok
  bpe train data/ --vocab-size 32000 --special-token "<|endoftext|>" --special-token "<|pad|>" -o tok
  bpe train --vocab-size 2000 -o shakespeare-tok          (the embedded Tiny Shakespeare)""",
    "encode": """examples:
  bpe encode data/*.txt --tokenizer my-tok -o train.bin            (then bpe.open_tokens("train.bin"))
  bpe encode data/ --tokenizer gpt-4o -o tokens/ --shard-mb 256    (shards and a manifest)
  bpe encode data/ --tokenizer my-tok -o tokens/ --rank $R --world-size $W, then bpe encode --finalize tokens/""",
    "decode": """examples:
  bpe decode train.bin --tokenizer my-tok --head 50
  echo "15496, 995" | bpe decode - --tokenizer gpt2""",
    "count": """examples:
  bpe count notes.txt --tokenizer gpt2,gpt-4,gpt-4o --price gpt-4o=2.50""",
    "show": """examples:
  bpe show notes.txt --tokenizer gpt2,gpt-4,gpt-4o
  bpe show --text "Hello wörld" --tokenizer gpt2 --ids
  bpe show notes.txt --tokenizer gpt2,o200k_base --html tokens.html""",
    "inspect": """examples:
  bpe inspect o200k_base
  bpe inspect path/to/model-dir --top 10""",
}


def _workers(value: str) -> int:
    """``--workers``: a count of at least one (argparse names the option when refused)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of workers") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number}: give a number of workers >= 1")
    return number


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bpe", description="Fast, exact byte-level BPE.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES["bpe"])
    parser.add_argument("--version", action="version", version=f"bpe {bpe.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", help="train a tokenizer on a corpus", epilog=EXAMPLES["train"],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    train.add_argument("files", nargs="*", help=FILES_HELP + " (default: Tiny Shakespeare)")
    train.add_argument("--vocab-size", type=int, required=True, metavar="N",
                       help="tokens in all: the 256 bytes, the special tokens, then one per merge learned")
    train.add_argument("--special-token", action="append", default=[], metavar="TOKEN",
                       help="a special token, never merged, split out of the text first (repeat the option "
                            "for more; the first also separates documents when encoding)")
    train.add_argument("--pattern", default="gpt2",
                       help="the pre-tokenizer: gpt2, cl100k, o200k, llama3, qwen2, deepseek_v3 or a regex "
                            "(default gpt2)")
    train.add_argument("--min-frequency", type=int, default=1, metavar="N",
                       help="stop before a merge whose pair occurs fewer than N times (default 1)")
    train.add_argument("--workers", type=_workers, default=None, help="workers (default: all cores)")
    train.add_argument("-o", "--output", required=True, help="directory (or .bpe file) to write")
    train.add_argument("--quiet", action="store_true", help="no progress bars and no summary")
    train.add_argument("--ray", nargs="?", const="", metavar="ADDRESS", default=None,
                       help="count on a Ray cluster (ADDRESS, or a local one); merge here")
    _add_corpus_options(train)
    train.set_defaults(run=cmd_train)

    encode = commands.add_parser("encode", help="encode a corpus into a memory-mapped token array",
                                 epilog=EXAMPLES["encode"], formatter_class=argparse.RawDescriptionHelpFormatter)
    encode.add_argument("files", nargs="*", help=FILES_HELP)
    encode.add_argument("--tokenizer", help="a built-in or model name, or a tokenizer file or directory")
    encode.add_argument("-o", "--output", help="the token array to write (a directory when sharded)")
    encode.add_argument("--ray", nargs="?", const="", metavar="ADDRESS", default=None,
                        help="encode shards on a Ray cluster (ADDRESS, or a local one) into -o DIR")
    encode.add_argument("--shard-mb", type=float, default=None,
                        help="write shards of about this many MB of input, and a manifest, into -o DIR")
    encode.add_argument("--rank", type=int, default=None,
                        help="this process's share of the shards (default 0) ...")
    encode.add_argument("--world-size", type=int, default=None, help="... of this many (a job array; default 1)")
    encode.add_argument("--finalize", metavar="OUT_DIR",
                        help="write the manifest of OUT_DIR once every rank's shards are there")
    encode.add_argument("--workers", type=_workers, default=None, help="threads (default: all cores)")
    encode.add_argument("--dtype", default=None, choices=["uint16", "uint32"],
                        help="the ids' type on disk (default: the smallest that fits)")
    encode.add_argument("--add-bos", action="store_true",
                        help="a SentencePiece model's BOS id before each document (as sentencepiece's add_bos)")
    encode.add_argument("--add-eos", action="store_true", help="... and its EOS id after each")
    encode.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    _add_corpus_options(encode)
    encode.set_defaults(run=cmd_encode)

    decode = commands.add_parser("decode", help="print the text of a token array (or of ids on stdin)",
                                 epilog=EXAMPLES["decode"], formatter_class=argparse.RawDescriptionHelpFormatter)
    decode.add_argument("array", help="a token array or sharded output written by 'bpe encode', or - for "
                                      "ids on stdin (separated by spaces or commas)")
    decode.add_argument("--tokenizer", required=True,
                        help="the tokenizer the ids are of: a built-in or model name, or a file or directory")
    decode.add_argument("--head", type=int, default=None, metavar="N", help="only the first N tokens")
    decode.add_argument("--force", action="store_true",
                        help="decode even if the array was encoded with another tokenizer")
    decode.set_defaults(run=cmd_decode)

    count = commands.add_parser("count", help="compare token counts of tokenizers on the same text",
                                epilog=EXAMPLES["count"], formatter_class=argparse.RawDescriptionHelpFormatter)
    count.add_argument("files", nargs="+", help=FILES_HELP + ", or - for stdin")
    count.add_argument("--tokenizer", required=True, action="append",
                       help="comma-separated names, model names or paths, e.g. gpt2,gpt-4,gpt-4o,my-tok (repeatable)")
    count.add_argument("--price", action="append", metavar="NAME=USD_PER_1M_TOKENS",
                       help="add an estimated cost column (repeatable; no prices are built in)")
    _add_corpus_options(count)
    count.set_defaults(run=cmd_count)

    show = commands.add_parser("show", help="see how tokenizers cut a text, in colour or as a page",
                               epilog=EXAMPLES["show"], formatter_class=argparse.RawDescriptionHelpFormatter)
    show.add_argument("file", nargs="?", help="the file to show (- reads standard input)")
    show.add_argument("--text", help="show this text instead of a file's")
    show.add_argument("--tokenizer", required=True, action="append",
                      help="comma-separated names, model names or paths, e.g. gpt2,gpt-4,gpt-4o (repeatable)")
    show.add_argument("--ids", action="store_true", help="print the ids under the text")
    show.add_argument("--max-chars", type=int, default=2000, help="show at most this many characters")
    show.add_argument("--html", metavar="PAGE", help="write a self-contained page instead")
    show.add_argument("--price", action="append", metavar="NAME=USD_PER_1M_TOKENS",
                      help="add an estimated cost to the page's summary (repeatable)")
    _add_errors(show)
    show.set_defaults(run=cmd_show)

    inspect = commands.add_parser("inspect", help="describe a tokenizer", epilog=EXAMPLES["inspect"],
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    inspect.add_argument("tokenizer", help="a built-in or model name (gpt2, o200k_base, gpt-4o), or a "
                                           "tokenizer file or directory")
    inspect.add_argument("--top", type=int, default=5, help="how many tokens and merges to show")
    inspect.set_defaults(run=cmd_inspect)
    return parser


FILES_HELP = ("files and directories: text (.txt), JSON Lines (.jsonl) and Parquet, compressed or not "
              "(.gz, .bz2, .xz, .zst); a directory's other files are skipped and counted")


def _add_errors(command) -> None:
    command.add_argument("--errors", choices=["strict", "replace"], default="strict",
                         help="invalid UTF-8 in the input: stop with an error naming the file and "
                              "offset (strict, the default), or read it as U+FFFD (replace)")


def _add_corpus_options(command) -> None:
    command.add_argument("--text-field", default="text", metavar="FIELD",
                         help="the field of a JSON Lines record, or the Parquet column, that holds its text "
                              "(default text; a.b for a nested field)")
    command.add_argument("--recursive", action="store_true", help="read the directories' subdirectories too")
    command.add_argument("--glob", metavar="PATTERN",
                         help="read only a directory's files whose path below it matches, e.g. '*.jsonl.zst' "
                              "(quote it)")
    command.add_argument("--errors", choices=["strict", "replace"], default="strict",
                         help="invalid UTF-8, or a record with no text at --text-field: stop with an error "
                              "naming the file and offset, line or row (strict, the default), or read the "
                              "bytes as U+FFFD and skip the record, counted in the summary (replace)")


class Terminated(BaseException):
    """SIGTERM: stop as Ctrl-C does, cleaning up on the way out."""


def _terminate(signum, frame):
    raise Terminated()


def _message(error: BaseException) -> str:
    if isinstance(error, CorpusDecodeError):
        return (f"{error.path}: invalid UTF-8 at byte offset {error.offset} ({error.reason}); "
                "pass --errors replace to read such bytes as U+FFFD")
    if isinstance(error, CorpusRecordError):
        skip = "pass --errors replace to skip such records (they are counted and reported), or " \
            if error.skippable else ""
        return f"{error.path}, {error.where}, field {error.field!r}: {error.reason}; {skip}--text-field names another field"
    return str(error)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    # This process is the command's own: SIGTERM unwinds like Ctrl-C, so a run
    # that is stopped removes what it had begun to write.
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if in_main_thread else None
    try:
        args.run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`bpe inspect gpt2 | head -2`): stop quietly, and keep
        # Python from complaining when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (UserError, BpeError, OSError, ValueError) as e:
        print(f"bpe {args.command}: error: {_message(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"bpe {args.command}: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print(f"bpe {args.command}: terminated", file=sys.stderr)
        return 143
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
    return 0


if __name__ == "__main__":
    sys.exit(main())
