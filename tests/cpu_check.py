"""Exactness on the CPU this process runs on, for ``tests/test_emulated_cpus.py``,
which runs it under Debian's ``qemu-x86_64 -cpu ...``: the scanners against
``regex``, encoding against tiktoken and a small training against ``bpe.pure``,
with the block classifier the CPU is expected to get by default.

    python tests/cpu_check.py EXPECTED_PATH     # prints "ok PATH" or fails
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bpe  # noqa: E402
from bpe import _scanner, pure  # noqa: E402
from bpe.patterns import PATTERNS  # noqa: E402

from conftest import SHAKESPEARE, findall, random_corpus  # noqa: E402
from tiktoken_reference import get_encoding  # noqa: E402

#: Pieces that reach every branch of the scanners (see tests/test_native_pretok.py)
#: and every block boundary when strung together at random.
PIECES = ["'s", "'S", "ſ'", "'ll", " ", "  ", "\n", "\r\n", " \n ", "\t", "abc", "ABC", "Ǆemo", "x" * 70,
          "123", "12345", "٣٤", "!!", "...", "/", "é", "日本語", "👍🏽", "\u00a0", "\u3000", "a\u0301", "<|endoftext|>"]


def texts() -> list[str]:
    rng = random.Random(0)
    found = [open(SHAKESPEARE, encoding="utf-8").read(200_000)]
    found += ["".join(rng.choice(PIECES) for _ in range(rng.randrange(1, 400))) for _ in range(200)]
    found += ["".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(300)) for _ in range(20)]
    return found


def main(expected: str) -> None:
    path = _scanner.simd_path()
    assert path == expected, f"the default block classifier is {path!r}, not {expected!r} ({_scanner.simd_paths()})"
    samples = texts()
    for name in _scanner.PATTERN_IDS:
        for text in samples:
            assert bpe.pretokenize(text, name) == findall(PATTERNS[name], text), (name, text[:80])
    for name in ("gpt2", "cl100k_base", "o200k_base"):
        ours, reference = bpe.load(name), get_encoding(name)
        for text in samples:
            assert ours.encode(text) == reference.encode(text, allowed_special="all"), (name, text[:80])
        joined = "".join(samples[1:])
        assert ours.encode_to_numpy(joined).tolist() == reference.encode(joined, allowed_special="all"), name
    text = random_corpus(7, n_words=3000)
    for pattern in ("gpt2", "o200k"):
        tok = bpe.train_from_iterator([text], 256 + 1 + 120, ["<|endoftext|>"], pattern=pattern, num_workers=1)
        assert tok.merges == pure.train(text, 256 + 1 + 120, ["<|endoftext|>"], pattern=pattern), pattern
    print("ok", path)


if __name__ == "__main__":
    main(sys.argv[1])
