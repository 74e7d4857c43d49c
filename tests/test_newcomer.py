"""What a newcomer meets first, through the real ``bpe`` command where it is one:
an import from the source tree, help that says what each option means, errors
that name what the user named, ids pasted as people paste them, a summary that
says where everything went, a dataset a training loop can iterate."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import bpe


def cli(*args, stdin=None, check=True, cwd=None):
    result = subprocess.run([sys.executable, "-m", "bpe", *args], capture_output=True, text=True, timeout=300,
                            input=stdin, cwd=cwd)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def test_importing_bpe_from_its_unbuilt_source_tree_says_what_to_do(tmp_path):
    source = os.path.dirname(bpe.__file__)
    copy = tmp_path / "bpe"
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("*.so", "*.c", "__pycache__"))
    # -S: no site packages, so nothing installed (an editable bpe's finder among
    # them) comes before the current directory, as for a user who ran `pip install .`.
    result = subprocess.run([sys.executable, "-S", "-c", "import bpe"], capture_output=True, text=True,
                            cwd=tmp_path, env=dict(os.environ, PYTHONPATH=""), timeout=120)
    assert result.returncode != 0
    assert "compiled kernels are not built" in result.stderr and "pip install -e ." in result.stderr
    assert "No module named 'bpe._encode'" not in result.stderr


def test_every_option_says_what_it_means_and_each_command_shows_examples():
    train = cli("train", "--help").stdout
    for option, words in [("--vocab-size", "256 bytes"), ("--special-token", "repeat"),
                          ("--min-frequency", "fewer than N")]:
        assert option in train and words in train.replace("\n", " ").replace("  ", " ")
    assert "examples:" in train
    decode = cli("decode", "--help").stdout
    assert "the tokenizer the ids are of" in decode.replace("\n", " ").replace("  ", " ")
    for command in ("encode", "count", "show", "inspect"):
        assert "examples:" in cli(command, "--help").stdout
    assert "examples:" in cli("--help").stdout


def test_training_on_a_directory_counts_its_files(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("a.txt", "b.txt"):
        (data / name).write_text("hello world " * 200, encoding="utf-8")
    out = cli("train", str(data), "--vocab-size", "300", "-o", str(tmp_path / "tok")).stdout
    assert "trained on 2 file(s)" in out


@pytest.mark.parametrize("pasted", ["15496 995", "15496,995", "[15496, 995]", "15496,\n995\n"])
def test_decode_takes_ids_as_people_paste_them(pasted):
    assert cli("decode", "-", "--tokenizer", "gpt2", stdin=pasted).stdout == "Hello world\n"


def test_decode_names_what_is_not_an_id():
    result = cli("decode", "-", "--tokenizer", "gpt2", stdin="15496 x9", check=False)
    assert result.returncode == 2 and "'x9' is not a token id" in result.stderr


def test_an_output_that_cannot_be_written_is_named_not_its_lock_file(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello", encoding="utf-8")
    result = cli("encode", str(corpus), "--tokenizer", "gpt2", "-o", "/proc/x.bin", check=False)
    assert result.returncode == 2 and "/proc/x.bin: cannot write there" in result.stderr
    assert ".lock" not in result.stderr


def test_the_encode_summary_says_where_the_document_starts_are_and_how_to_read(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello <|endoftext|> world", encoding="utf-8")
    out = cli("encode", str(corpus), "--tokenizer", "gpt2", "-o", str(tmp_path / "t.bin")).stdout
    assert f"document starts: {tmp_path / 't.bin.docs.npy'}" in out
    assert f"bpe.open_tokens({str(tmp_path / 't.bin')!r})" in out


def test_inspect_shows_runs_readably_and_explains_n_vocab():
    out = cli("inspect", "o200k_base").stdout
    assert "' ' x 128" in out and "' ' + '-' x 112" in out
    assert "n_vocab:        200019 (the largest id + 1" in out and "19 ids below it belong to no token" in out


def test_models_and_misspellings_by_name():
    assert bpe.load("gpt-4o") is bpe.load("o200k_base")
    with pytest.raises(FileNotFoundError, match="did you mean 'o200k_base'"):
        bpe.load("o200k_bas")
    result = cli("count", "-", "--tokenizer", "gpt-4p", stdin="hi", check=False)
    assert result.returncode == 2 and "did you mean" in result.stderr


def test_a_dataset_an_epoch_of_windows_and_data_parallel_ranks():
    tokens = np.arange(1000, dtype=np.uint16)
    data = bpe.TokenDataset(tokens, block_size=16)
    assert len(data) == (1000 - 16 - 1) // 16 + 1 and "block_size=16" in repr(data)
    x, y = data[3]
    assert x.tolist() == list(range(48, 64)) and y.tolist() == list(range(49, 65))
    assert data[-1][1][-1] <= 999
    with pytest.raises(IndexError):
        data[len(data)]
    seen = [int(x[0]) for x, _ in data]
    assert seen == list(range(0, 16 * len(data), 16))
    ranks = [[int(x[0]) for x, _ in data.epoch(rank=r, world_size=3)] for r in range(3)]
    assert len({len(share) for share in ranks}) == 1                         # each rank steps together
    assert not set(ranks[0]) & set(ranks[1]) and not set(ranks[1]) & set(ranks[2])
    batches = list(data.epoch(batch_size=8, shuffle=True))
    assert batches[0][0].shape == (8, 16)
    assert sorted(int(s) for x, _ in batches for s in x[:, 0]) == seen       # a permutation of the epoch
    documents = bpe.TokenDataset(tokens, 16, within_documents=True, document_starts=np.array([0, 100, 130]))
    for x, y in documents:
        start = int(x[0])
        assert not any(start < boundary <= start + 16 for boundary in (100, 130))   # never across a start
