"""The ``bpe`` command: ``bpe train`` (more subcommands join with corpus encoding)."""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

DEFAULT_CORPUS = os.path.join(os.path.dirname(__file__), "data", "tinyshakespeare.txt")


class UserError(Exception):
    """A mistake in the command line or its inputs: one line, no traceback."""


def _printable(token: bytes) -> str:
    return repr(token.decode("utf-8", errors="replace"))


def cmd_train(args) -> None:
    import bpe

    files = args.files or [DEFAULT_CORPUS]
    quiet = args.quiet or not sys.stderr.isatty()
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok = bpe.train(files, args.vocab_size, args.special_token, pattern=args.pattern,
                        min_frequency=args.min_frequency, num_workers=args.workers,
                        progress=not quiet)
    seconds = time.perf_counter() - start
    path = tok.save(args.output if args.output.endswith(".bpe") else os.path.join(args.output, ""))
    for warning in caught:
        print(f"note: {warning.message}", file=sys.stderr)
    corpus = "the embedded default corpus (Tiny Shakespeare)" if not args.files else \
        f"{len(files)} file(s)"
    longest = sorted(tok.vocab.values(), key=len, reverse=True)[:5]
    print(f"trained on {corpus}: {len(tok.merges)} merges, vocab {len(tok.vocab)}, "
          f"{seconds:.2f} s")
    print(f"longest tokens: {', '.join(_printable(t) for t in longest)}")
    print(f"saved {path}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bpe", description="Fast, exact byte-level BPE.")
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", help="train a tokenizer on text files")
    train.add_argument("files", nargs="*", help="UTF-8 text files (default: Tiny Shakespeare)")
    train.add_argument("--vocab-size", type=int, required=True)
    train.add_argument("--special-token", action="append", default=[], metavar="T")
    train.add_argument("--pattern", default="gpt2", help="gpt2, cl100k, o200k or a regex")
    train.add_argument("--min-frequency", type=int, default=1)
    train.add_argument("--workers", type=int, default=None)
    train.add_argument("-o", "--output", required=True, help="directory (or .bpe file) to write")
    train.add_argument("--quiet", action="store_true", help="no progress bars")
    train.set_defaults(run=cmd_train)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.run(args)
    except (UserError, OSError, ValueError, TypeError) as e:
        print(f"bpe {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"bpe {args.command}: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
