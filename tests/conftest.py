import itertools
import os
import random

import pytest
import regex

import bpe
from bpe._testing import MISS_PATHS, encoder_defaults, small_sizes, tuned
from bpe.unicode import as_reference

def findall(pattern: str, text: str) -> list[str]:
    """``regex.findall(pattern, text)`` with each code point classified as tiktoken's
    and tokenizers' engines classify it (``bpe.unicode.as_reference``): the
    definition of pre-tokens whatever Unicode the installed ``regex`` carries."""
    seen = as_reference(text)
    pieces = regex.findall(pattern, seen)
    if seen is text:
        return pieces
    if sum(map(len, pieces)) == len(text):       # the pieces cover the text: cut it alike
        ends = list(itertools.accumulate(map(len, pieces)))
        return [text[end - len(piece):end] for piece, end in zip(pieces, ends)]
    return [text[m.start():m.end()] for m in regex.finditer(pattern, seen)]


@pytest.hookimpl(trylast=True)          # after -k and -m have deselected theirs
def pytest_collection_modifyitems(config, items):
    """Start the emulated CPUs' runs that the selected tests check
    (``tests/test_emulated_cpus.py``), to run beside the other tests."""
    if config.option.collectonly:
        return
    for item in items:
        start = getattr(getattr(item, "module", None), "start_emulated_run", None)
        if start is not None:
            start(item)


SHAKESPEARE = os.path.join(os.path.dirname(bpe.__file__), "data", "tinyshakespeare.txt")

# Alphabets chosen so that random text has many pairs with equal counts (ties),
# and covers multi-byte UTF-8: CJK, emoji (with a ZWJ sequence), combining marks.
TIE_ALPHABET = ["a", "b", "c", " ", "ab", "ba", "\n", "'s", "1", "22", ".", "!"]
UNICODE_ALPHABET = ["é", "e\u0301", "日本", "語", "👍", "👨\u200d👩\u200d👧", "ß", "\u00a0", "Ω", "٣", "\t"]


def random_corpus(seed: int, n_words: int = 400, unicode: bool = True,
                  special: str | None = None) -> str:
    """Random text with many tied pair counts; ``special`` is sprinkled in as a separator."""
    rng = random.Random(seed)
    alphabet = TIE_ALPHABET + (UNICODE_ALPHABET if unicode else [])
    pieces = []
    for _ in range(n_words):
        pieces.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))))
        pieces.append(rng.choice([" ", " ", "\n", "", "  "]))
        if special and rng.random() < 0.05:
            pieces.append(special)
    return "".join(pieces)


def sessions_of(tok) -> list:
    """The sessions ``tok``'s calls used: its ShortCalls' (which lend
    themselves to the general path while idle), then the pooled ones."""
    return [short.session for short in tok.encoder._short_calls] + list(tok.encoder._idle_sessions)


def small_short_caches(tok, first: int, largest: int, **changes):
    """``tok`` with sessions whose short caches are this small (slots to start
    with, at most): they grow and start afresh within a short text. Documents
    go to the pooled sessions (``encoder._idle_sessions``, which the tests
    look into) unless ``document_calls=True``."""
    return tuned(tok, **{"document_calls": False, **small_sizes(first, largest), **changes})


def on_miss_path(tok, when: str, **changes):
    """``tok`` merging the short pre-tokens that miss its caches side by side
    in each batch ("batched": every batch), or one by one as each batch meets
    them ("one by one": never batched). Left to itself, each kernel chooses:
    where its pair table is larger than a core's L2 cache, a batch after one
    with a few misses is batched, so a call's first batches are, and a warm
    call's are not; where it fits, none is."""
    return tuned(tok, group_after_misses=MISS_PATHS[when], **changes)


@pytest.fixture(params=list(MISS_PATHS))
def miss_path(request):
    """Each test that takes it runs with either way of merging misses forced:
    the tokenizers it makes take it (their encoders are made meanwhile); one
    made before, and a shipped one (``bpe.load`` gives one per process),
    takes it through ``on_miss_path(tok, miss_path)``."""
    with encoder_defaults(group_after_misses=MISS_PATHS[request.param]):
        yield request.param


@pytest.fixture
def shakespeare_path():
    return SHAKESPEARE


@pytest.fixture
def write_text(tmp_path):
    """Write text (or bytes) to a fresh file and return its path."""
    counter = [0]

    def write(content, name=None):
        counter[0] += 1
        path = tmp_path / (name or f"corpus{counter[0]}.txt")
        if isinstance(content, str):
            content = content.encode("utf-8")
        path.write_bytes(content)
        return str(path)

    return write
