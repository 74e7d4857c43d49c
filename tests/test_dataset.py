"""TokenDataset: training windows are slices of the token array; documents are
respected when asked; a seed fixes the batches."""
import numpy as np
import pytest

import bpe

from conftest import SHAKESPEARE

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def array(tmp_path_factory):
    directory = tmp_path_factory.mktemp("data")
    text = open(SHAKESPEARE, encoding="utf-8").read()[:200_000]
    documents = [text[i:i + 3000 + 97 * (i % 7)] for i in range(0, len(text), 5000)]
    path = directory / "corpus.txt"
    path.write_text(EOT.join(documents), encoding="utf-8")
    summary = bpe.load("gpt2").encode_file(path, directory / "train.bin")
    return summary.output


def test_windows_are_slices_of_the_array(array):
    tokens = bpe.open_tokens(array)
    data = bpe.TokenDataset(array, block_size=64, seed=1)
    for _ in range(5):
        x, y = data.get_batch(16)
        assert x.dtype == np.int64 and x.shape == y.shape == (16, 64)
        for row_x, row_y in zip(x, y):
            start = int(np.flatnonzero(np.all(np.lib.stride_tricks.sliding_window_view(tokens, 64) == row_x,
                                              axis=1))[0])
            assert np.array_equal(row_y, tokens[start + 1:start + 65])


def test_windows_never_cross_a_document_start_when_asked(array):
    starts = bpe.read_document_index(array)
    data = bpe.TokenDataset(array, block_size=128, within_documents=True, seed=2)
    assert data.n_windows > 0
    for _ in range(20):
        window_starts = data.window_starts(64)
        for start in window_starts:
            # no document starts strictly inside [start, start + block] (the target included)
            assert not np.any((starts > start) & (starts <= start + 128)), start
    free = bpe.TokenDataset(array, block_size=128, seed=2)
    crossing = [s for s in free.window_starts(2000) if np.any((starts > s) & (starts <= s + 128))]
    assert crossing        # without the option, windows do cross (so the check above means something)


def test_the_same_seed_gives_the_same_batches(array):
    first = [bpe.TokenDataset(array, 32, seed=7).get_batch(8) for _ in range(2)]
    assert np.array_equal(first[0][0], first[1][0]) and np.array_equal(first[0][1], first[1][1])
    other = bpe.TokenDataset(array, 32, seed=8).get_batch(8)
    assert not np.array_equal(first[0][0], other[0])


def test_bad_arguments_are_refused(array):
    with pytest.raises(ValueError, match="block_size must be a positive int"):
        bpe.TokenDataset(array, 0)
    with pytest.raises(ValueError, match="no window of 10 tokens"):
        bpe.TokenDataset(np.arange(10, dtype=np.uint16), 10)
    with pytest.raises(ValueError, match="no window of 50 tokens .*any document"):
        bpe.TokenDataset(np.arange(100, dtype=np.uint16), 50, within_documents=True,
                         document_starts=np.arange(0, 100, 20))


def test_torch_tensors_when_torch_is_installed(array):
    torch = pytest.importorskip("torch")
    x, y = bpe.TokenDataset(array, 16, seed=0, tensors="torch").get_batch(4)
    assert x.dtype == torch.int64 and tuple(x.shape) == (4, 16)
    nx, ny = bpe.TokenDataset(array, 16, seed=0).get_batch(4)
    assert np.array_equal(x.numpy(), nx) and np.array_equal(y.numpy(), ny)
