"""Pre-tokenization alone, one core: the native scanners against the regex module.

    PYTHONPATH=benchmarks python benchmarks/experiments/pretokenize.py --corpus ~/.cache/bpe-corpora/prose_en.txt --mb 32

"scan" finds pre-token boundaries only; "scan + count" also interns each
pre-token into the C table that training uses; "regex" is regex.findall, and
"regex + Counter" what counting cost before the native scanners.
"""
from __future__ import annotations

import argparse
import json
import os
from collections import Counter

import regex

from bpe import _scanner
from bpe.patterns import PATTERNS

from _measure import best_of  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--mb", type=float, default=32)
    parser.add_argument("--json", help="append results to this JSON-lines file")
    args = parser.parse_args()
    with open(args.corpus, "rb") as f:
        data = f.read(int(args.mb * 1e6))
    data = data[:len(data.decode("utf-8", "ignore").encode("utf-8"))]   # whole characters
    text = data.decode("utf-8")
    n_mb = len(data) / 1e6
    print(f"{os.path.basename(args.corpus)}: {n_mb:.1f} MB, one core, MB/s")
    print(f"{'pattern':<8} {'scan':>8} {'scan + count':>13} {'regex':>8} {'regex + Counter':>16}")
    for name, pattern_id in _scanner.PATTERN_IDS.items():
        compiled = regex.compile(PATTERNS[name])
        rate = {
            "scan": n_mb / best_of(lambda: _scanner.split_offsets(data, pattern_id)),
            "scan_count": n_mb / best_of(lambda: _scanner.Interner().count(data, pattern_id)),
            "regex": n_mb / best_of(lambda: compiled.findall(text), 1),
            "regex_counter": n_mb / best_of(lambda: Counter(compiled.findall(text)), 1),
        }
        assert [data[a:b] for a, b in zip(*(lambda o: (o[:-1], o[1:]))(
            _scanner.split_offsets(data, pattern_id).tolist()))] == [t.encode() for t in compiled.findall(text)]
        print(f"{name:<8} {rate['scan']:>8.1f} {rate['scan_count']:>13.1f} {rate['regex']:>8.1f} "
              f"{rate['regex_counter']:>16.1f}", flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps({"pattern": name, "corpus": os.path.basename(args.corpus),
                                    "mb": n_mb, "mb_per_s": rate}) + "\n")


if __name__ == "__main__":
    main()
