"""The shipped vocabularies load by a fast path (``Tokenizer._from_rank_table``
without checking merges, dicts built on first use); here they must equal what
the checked path builds from the same files, and encode as tiktoken does."""
import os

import pytest

import bpe
from bpe.pretrained import FINGERPRINTS, pretrained_table
from bpe.tokenizer import _load_pretrained

from conftest import random_corpus
from tiktoken_reference import get_encoding

TEXT = random_corpus(11, special="<|endoftext|>") + " naïve café 日本語 👍 x\r\n\r\n  y 12345"


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_a_shipped_vocabulary_equals_the_checked_path(name):
    loaded = _load_pretrained.__wrapped__(name)          # a fresh one, not the cached
    ids = loaded.encode(TEXT)
    fingerprint = loaded._make_fingerprint()             # from the table's arrays
    assert loaded._vocab is None and loaded._merges is None, "encoding or fingerprint unpacked the dicts"
    assert loaded.fingerprint() == fingerprint == FINGERPRINTS[name]     # the one shipped for it
    table, special_tokens, pattern = pretrained_table(name)
    vocab = dict(zip(table.ranks.tolist(), table.tokens()))
    for token, token_id in special_tokens.items():
        vocab[token_id] = token.encode("utf-8")
    checked = bpe.Tokenizer(vocab, None, special_tokens, pattern=pattern)   # recovers every merge
    assert loaded.vocab == checked.vocab
    assert loaded.merges == checked.merges
    assert loaded.n_vocab == checked.n_vocab and loaded.special_tokens == checked.special_tokens
    # The dicts' path, twice: ``loaded`` has unpacked its dicts now (fingerprint()
    # would give the value it made once).
    assert fingerprint == loaded._make_fingerprint() == checked.fingerprint()
    assert ids == checked.encode(TEXT) == get_encoding(name).encode(TEXT, allowed_special="all")
    assert loaded.decode(ids) == TEXT


def test_the_tiktoken_front_door_does_not_unpack_the_dicts():
    encoding = bpe.Encoding.from_tokenizer("o200k_base", _load_pretrained.__wrapped__("o200k_base"))
    assert encoding.n_vocab == get_encoding("o200k_base").n_vocab
    assert encoding.max_token_value == get_encoding("o200k_base").max_token_value
    assert encoding.encode("hello world") == get_encoding("o200k_base").encode("hello world")
    assert encoding.tokenizer._vocab is None


def test_the_gpt2_table_is_the_gpt2_vocab():
    import os

    import numpy as np

    from bpe.flat import RankTable
    from bpe.formats.gpt2 import read_gpt2_table, read_gpt2_vocab
    from bpe.pretrained import DATA

    path = os.path.join(DATA, "gpt2_encoder.json.gz")
    vocab = read_gpt2_vocab(path)
    del vocab[50256]
    table, expected = read_gpt2_table(path, [50256]), RankTable.from_vocab(vocab)
    assert all(np.array_equal(a, b) for a, b in zip(table, expected))


def test_the_fingerprint_tells_apart_what_changes_the_ids_and_nothing_else():
    table, special_tokens, pattern = pretrained_table("gpt2")
    base = bpe.Tokenizer._from_rank_table(table, special_tokens, pattern, "gpt2")
    same = bpe.Tokenizer(dict(base.vocab), None, dict(base.special_tokens), pattern=pattern)
    assert same.fingerprint() == base.fingerprint()
    # The merges of a trained tokenizer rank its tokens by id: given or made, one fingerprint.
    assert bpe.Tokenizer(dict(base.vocab), base.merges, dict(base.special_tokens),
                         pattern=pattern).fingerprint() == base.fingerprint()
    changed = [
        bpe.Tokenizer._from_rank_table(table, {"<|x|>": 50255}, pattern, "gpt2"),     # on an ordinary id
        bpe.Tokenizer._from_rank_table(table, {**special_tokens, "<|y|>": 50256}, pattern, "gpt2"),   # shared
        bpe.Tokenizer._from_rank_table(table, special_tokens, "cl100k", "gpt2"),
        bpe.Tokenizer(dict(base.vocab), base.merges[1:] + base.merges[:1], dict(base.special_tokens),
                      pattern=pattern),                                                 # ranks reordered
    ]
    fingerprints = {tok.fingerprint() for tok in changed} | {base.fingerprint()}
    assert len(fingerprints) == len(changed) + 1


def test_a_vocabulary_loaded_by_name_has_its_shipped_fingerprint_without_making_it(monkeypatch):
    from bpe.tokenizer import Tokenizer

    monkeypatch.setattr(Tokenizer, "_make_fingerprint", lambda self: pytest.fail("the fingerprint was made"))
    for name in FINGERPRINTS:
        assert _load_pretrained.__wrapped__(name).fingerprint() == FINGERPRINTS[name]
    assert bpe.load("r50k_base").fingerprint() == FINGERPRINTS["gpt2"]


def test_the_fingerprint_is_made_once_and_travels_with_a_pickle(monkeypatch):
    import pickle

    from bpe.tokenizer import Tokenizer

    made = []
    real = Tokenizer._make_fingerprint
    monkeypatch.setattr(Tokenizer, "_make_fingerprint", lambda self: made.append(self) or real(self))
    table, special_tokens, pattern = pretrained_table("gpt2")    # not loaded by name: none shipped
    tok = Tokenizer._from_rank_table(table, special_tokens, pattern, "gpt2")
    fingerprint = tok.fingerprint()
    assert tok.fingerprint() == fingerprint and made == [tok]
    copy = pickle.loads(pickle.dumps(tok))
    assert copy.fingerprint() == fingerprint and made == [tok]    # the sender's, not made again
    assert real(copy) == fingerprint


def test_the_build_decompressed_the_rank_files_and_they_are_read_as_such():
    # setup.py decompresses them, so that loading does not inflate them; the
    # copies hold exactly what the compressed files (the ones in git) hold.
    import gzip

    from bpe.pretrained import DATA, rank_file

    for name in ("cl100k_base", "o200k_base"):
        assert rank_file(name) == os.path.join(DATA, f"{name}.tiktoken")
        with open(rank_file(name), "rb") as plain, gzip.open(rank_file(name) + ".gz", "rb") as packed:
            assert plain.read() == packed.read()


def test_a_rank_file_copy_that_is_not_whole_is_not_read(tmp_path, monkeypatch):
    import gzip
    import shutil

    from bpe import pretrained

    name = "cl100k_base"
    shutil.copy(os.path.join(pretrained.DATA, f"{name}.tiktoken.gz"), tmp_path)
    monkeypatch.setattr(pretrained, "DATA", str(tmp_path))
    packed = str(tmp_path / f"{name}.tiktoken.gz")
    plain = tmp_path / f"{name}.tiktoken"
    assert pretrained.rank_file(name) == packed                     # no copy: the .gz
    expected = pretrained.pretrained_table(name)[0]
    contents = gzip.decompress(open(packed, "rb").read())
    plain.write_bytes(contents[:-1000])                               # cut short
    assert pretrained.rank_file(name) == packed
    plain.write_bytes(contents + b"x")                                # another file's
    assert pretrained.rank_file(name) == packed
    plain.write_bytes(contents)
    assert pretrained.rank_file(name) == str(plain)
    table = pretrained.pretrained_table(name)[0]
    assert (table.ranks == expected.ranks).all() and table.tokens() == expected.tokens()
