"""What an installed wheel must do, run where no source tree shadows it and no
C compiler can be found (``.ci/run``'s wheel stage; cibuildwheel's test
command): its kernels load, encode as ``bpe.pure`` does, decode back, and
train the merges ``bpe.pure`` learns; its data files are there.

    python tests/wheel_smoke.py      # prints "ok" and the scanner's path
"""
import os
import sys

import bpe
from bpe import _scanner, pure


def main() -> None:
    assert not os.path.exists(os.path.join(os.getcwd(), "bpe", "__init__.py")), "run this outside the source tree"
    assert "site-packages" in bpe.__file__, f"bpe comes from {bpe.__file__}, not an installed wheel"

    text = open(os.path.join(os.path.dirname(bpe.__file__), "data", "tinyshakespeare.txt"), encoding="utf-8").read()
    sample = text[:20_000] + " naïve café 日本語 👍 <|endoftext|> it's 12345"
    for name in ("gpt2", "cl100k_base", "o200k_base"):
        tok = bpe.load(name)
        ids = tok.encode(sample)
        assert ids == pure.encode(sample, tok.vocab, tok.merges, tok.special_tokens, tok.pattern), name
        assert tok.decode(ids) == sample, name
    trained = bpe.train_from_iterator([text[:200_000]], 256 + 1 + 200, ["<|endoftext|>"], num_workers=1)
    assert trained.merges == pure.train(text[:200_000], 256 + 1 + 200, ["<|endoftext|>"]), "training differs from pure"
    print("ok", _scanner.simd_path(), sys.version.split()[0])


if __name__ == "__main__":
    main()
