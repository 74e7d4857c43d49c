import pickle

import pytest

import bpe

from conftest import random_corpus


@pytest.fixture(scope="module")
def trained():
    text = random_corpus(3, special="<|endoftext|>")
    return bpe.train_from_iterator([text], 256 + 2 + 100, ["<|endoftext|>", "<|pad|>"],
                                   pattern="o200k", num_workers=1)


def test_own_format_round_trip(trained, tmp_path):
    path = trained.save(tmp_path)
    assert path.endswith("tokenizer.bpe")
    with open(path, encoding="utf-8") as f:
        assert f.readline() == "bpe-tokenizer 1\n"
    loaded = bpe.load(tmp_path)
    assert loaded == trained
    assert loaded.merges == trained.merges and loaded.pattern == "o200k"
    assert loaded.special_tokens == {"<|endoftext|>": 256, "<|pad|>": 257}


def test_pickle_round_trip(trained):
    assert pickle.loads(pickle.dumps(trained)) == trained


def test_truncated_file_names_the_line(trained, tmp_path):
    path = trained.save(tmp_path / "tok.bpe")
    lines = open(path, encoding="utf-8").read().splitlines(keepends=True)
    (tmp_path / "short.bpe").write_text("".join(lines[:-5]), encoding="utf-8")
    with pytest.raises(bpe.TokenizerFileError, match=r"short.bpe: truncated: expected a merges record"):
        bpe.load(tmp_path / "short.bpe")


def test_corrupt_record_names_the_line(trained, tmp_path):
    path = trained.save(tmp_path / "tok.bpe")
    lines = open(path, encoding="utf-8").read().splitlines(keepends=True)
    lines[10] = "10 !!notbase64\n"
    (tmp_path / "bad.bpe").write_text("".join(lines), encoding="utf-8")
    with pytest.raises(bpe.TokenizerFileError, match=r"bad.bpe, line 11: '!!notbase64' is not base64"):
        bpe.load(tmp_path / "bad.bpe")


def test_wrong_format_line(tmp_path):
    (tmp_path / "x.bpe").write_text("something else\n", encoding="utf-8")
    with pytest.raises(bpe.TokenizerFileError, match=r"x.bpe, line 1: expected 'bpe-tokenizer 1'"):
        bpe.load(tmp_path / "x.bpe")


def test_mismatched_merge_names_it(trained, tmp_path):
    path = trained.save(tmp_path / "tok.bpe")
    text = open(path, encoding="utf-8").read()
    # Drop the last vocab entry: the last merge's result is then missing.
    lines = text.splitlines(keepends=True)
    n_vocab = int(lines[2].split()[1])
    del lines[2 + n_vocab]
    lines[2] = f"vocab {n_vocab - 1}\n"
    (tmp_path / "mismatch.bpe").write_text("".join(lines), encoding="utf-8")
    with pytest.raises(bpe.TokenizerFileError, match=r"mismatch.bpe: merge 99 .* is not in the vocab"):
        bpe.load(tmp_path / "mismatch.bpe")


def test_constructor_checks_merges():
    vocab = {i: bytes([i]) for i in range(256)}
    with pytest.raises(ValueError, match=r"merge 0 \(b'a', b'b'\): token b'ab' is not in the vocab"):
        bpe.Tokenizer(vocab, [(b"a", b"b")])
