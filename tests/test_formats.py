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
    with pytest.raises(bpe.errors.TokenizerFileError, match=r"short.bpe: truncated: expected a merges record"):
        bpe.load(tmp_path / "short.bpe")


def test_corrupt_record_names_the_line(trained, tmp_path):
    path = trained.save(tmp_path / "tok.bpe")
    lines = open(path, encoding="utf-8").read().splitlines(keepends=True)
    lines[10] = "10 !!notbase64\n"
    (tmp_path / "bad.bpe").write_text("".join(lines), encoding="utf-8")
    with pytest.raises(bpe.errors.TokenizerFileError, match=r"bad.bpe, line 11: '!!notbase64' is not base64"):
        bpe.load(tmp_path / "bad.bpe")


def test_wrong_format_line(tmp_path):
    (tmp_path / "x.bpe").write_text("something else\n", encoding="utf-8")
    with pytest.raises(bpe.errors.TokenizerFileError, match=r"x.bpe, line 1: expected 'bpe-tokenizer 1'"):
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
    with pytest.raises(bpe.errors.TokenizerFileError, match=r"mismatch.bpe: merge 99 .* is not in the vocab"):
        bpe.load(tmp_path / "mismatch.bpe")


def test_constructor_checks_merges():
    vocab = {i: bytes([i]) for i in range(256)}
    with pytest.raises(ValueError, match=r"merge 0 \(b'a', b'b'\): token b'ab' is not in the vocab"):
        bpe.Tokenizer(vocab, [(b"a", b"b")])


# ------------------------------------------------------------------ ecosystem formats

import os  # noqa: E402

from tiktoken_reference import DATA  # noqa: E402
from conftest import SHAKESPEARE  # noqa: E402

TEXTS = [open(SHAKESPEARE, encoding="utf-8").read()[:100_000],
         random_corpus(7, special="<|endoftext|>"), "naïve café 日本語 👍 '<|pad|>' x\r\n\r\n  y"]


def test_gpt2_release_files_with_and_without_version_line(tmp_path):
    import gzip

    vocab_json, merges_txt = tmp_path / "encoder.json", tmp_path / "vocab.bpe"
    vocab_json.write_bytes(gzip.open(os.path.join(DATA, "gpt2_encoder.json.gz")).read())
    merges = gzip.open(os.path.join(DATA, "gpt2_vocab.bpe.gz")).read()
    merges_txt.write_bytes(merges)
    tok = bpe.Tokenizer.from_files(vocab_json, merges_txt)
    assert tok == bpe.load("gpt2")
    assert merges.startswith(b"#version")
    merges_txt.write_bytes(merges.split(b"\n", 1)[1])
    assert bpe.Tokenizer.from_files(vocab_json, merges_txt).merges == tok.merges


def test_gpt2_files_round_trip(trained, tmp_path):
    vocab_json, merges_txt = trained.to_files(tmp_path)
    assert open(merges_txt, encoding="utf-8").readline() == "#version: 0.2\n"
    loaded = bpe.Tokenizer.from_files(vocab_json, merges_txt, trained.special_tokens, pattern="o200k")
    assert loaded == trained


def test_gpt2_file_errors_name_file_and_line(tmp_path):
    (tmp_path / "vocab.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\na b\nonly\n", encoding="utf-8")
    with pytest.raises(bpe.errors.TokenizerFileError, match="vocab.json: not a JSON vocabulary"):
        bpe.Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
    bpe.load("gpt2").to_files(tmp_path / "ok")
    with pytest.raises(bpe.errors.TokenizerFileError, match=r"merges.txt, line 3: expected two tokens"):
        bpe.Tokenizer.from_files(tmp_path / "ok" / "vocab.json", tmp_path / "merges.txt")


def test_tiktoken_export_encodes_identically(trained, tmp_path):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    path = trained.to_tiktoken(tmp_path / "trained.tiktoken")
    reference = tiktoken.Encoding("trained", pat_str=bpe.PATTERNS["o200k"],
                                  mergeable_ranks=load_tiktoken_bpe(path),
                                  special_tokens=trained.special_tokens)
    for text in TEXTS:
        assert trained.encode(text) == reference.encode(text, allowed_special="all")
    loaded = bpe.Tokenizer.from_tiktoken(path, pattern="o200k", special_tokens=trained.special_tokens)
    assert loaded.vocab == trained.vocab
    for text in TEXTS:
        assert loaded.encode(text) == trained.encode(text)


def test_tiktoken_file_round_trip_for_cl100k(tmp_path):
    tok = bpe.load("cl100k_base")
    path = tok.to_tiktoken(tmp_path / "cl100k.tiktoken")
    loaded = bpe.Tokenizer.from_tiktoken(path, pattern="cl100k", special_tokens=tok.special_tokens)
    assert loaded == tok


def test_a_special_token_on_an_ordinary_rank_shares_it_as_in_tiktoken(trained, tmp_path):
    # tiktoken keeps the ordinary token (its bytes still encode to that rank and
    # decode from it), and the special name encodes to the same rank.
    tiktoken = pytest.importorskip("tiktoken")
    pytest.importorskip("tiktoken.load")
    path = trained.to_tiktoken(tmp_path / "trained.tiktoken")
    taken = max(trained.vocab)
    loaded = bpe.Tokenizer.from_tiktoken(path, pattern="o200k", special_tokens={"<|x|>": taken})
    reference = tiktoken.Encoding("x", pat_str=bpe.PATTERNS["o200k"],
                                  mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(path)),
                                  special_tokens={"<|x|>": taken})
    for text in TEXTS + ["<|x|>" + trained.vocab[taken].decode("utf-8", "replace")]:
        ids = loaded.encode(text)
        assert ids == reference.encode(text, allowed_special="all")
        assert loaded.decode(ids) == reference.decode(ids)


def test_tiktoken_file_errors_name_the_line(tmp_path):
    (tmp_path / "bad.tiktoken").write_text("YQ== 0\nnot-base64!! 1\n", encoding="utf-8")
    with pytest.raises(bpe.errors.TokenizerFileError, match=r"bad.tiktoken, line 2"):
        bpe.Tokenizer.from_tiktoken(tmp_path / "bad.tiktoken", pattern="gpt2")


@pytest.mark.parametrize("which", ["trained", "gpt2", "cl100k_base", "o200k_base"])
def test_huggingface_export_encodes_identically(which, trained, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    tok = trained if which == "trained" else bpe.load(which)
    path = tok.to_huggingface(tmp_path)
    hf = tokenizers.Tokenizer.from_file(path)
    for text in TEXTS:
        assert hf.encode(text).ids == tok.encode(text), which


def test_every_reader_raises_the_same_class_for_a_bad_file(tmp_path):
    # One class for one fault, whichever reader met it; it refines ValueError.
    (tmp_path / "bad.bpe").write_text("bpe-tokenizer 1\n{}\n", encoding="utf-8")
    (tmp_path / "vocab.json").write_text("[1, 2]", encoding="utf-8")
    (tmp_path / "merges.txt").write_text("a b c\n", encoding="utf-8")
    (tmp_path / "bad.tiktoken").write_text("YQ== x\n", encoding="utf-8")
    (tmp_path / "cut.tiktoken.gz").write_bytes(__import__("gzip").compress(b"YQ== 0\n" * 1000)[:40])
    for read in (lambda: bpe.load(tmp_path / "bad.bpe"),
                 lambda: bpe.Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt"),
                 lambda: bpe.Tokenizer.from_tiktoken(tmp_path / "bad.tiktoken", pattern="gpt2"),
                 lambda: bpe.Tokenizer.from_tiktoken(tmp_path / "cut.tiktoken.gz", pattern="gpt2")):
        with pytest.raises(bpe.errors.TokenizerFileError) as raised:
            read()
        assert isinstance(raised.value, ValueError) and isinstance(raised.value, bpe.BpeError)
        assert str(tmp_path) in str(raised.value)
