"""``python -m bpe``: the command line."""
import sys

from bpe.cli import main

if __name__ == "__main__":
    sys.exit(main())
