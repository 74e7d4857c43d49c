import numpy as np
import pytest

import bpe
from bpe import pure

from conftest import findall, random_corpus


def test_counts_are_flat_arrays(write_text):
    path = write_text("the cat the hat<|endoftext|>the")
    counts = bpe.count_pretokens(path, ["<|endoftext|>"], num_workers=1)
    assert counts.data.dtype == np.uint8
    assert counts.offsets.dtype == np.int64 and counts.counts.dtype == np.int64
    assert counts.to_dict() == {b"the": 2, b" cat": 1, b" the": 1, b" hat": 1}


def test_counts_in_pieces_add_up_and_train_once(write_text):
    texts = [random_corpus(seed, special="<|endoftext|>") for seed in range(3)]
    paths = [write_text(text) for text in texts]
    parts = [bpe.count_pretokens(p, ["<|endoftext|>"], num_workers=1) for p in paths]
    whole = bpe.count_pretokens(paths, ["<|endoftext|>"], num_workers=2, chunk_size=500)
    assert parts[0] + parts[1] + parts[2] == whole
    assert whole.to_dict() == dict(pure.count_pretokens(texts, ["<|endoftext|>"]))
    tok = bpe.train_from_counts(whole, 256 + 1 + 50, ["<|endoftext|>"])
    assert tok.merges == pure.train(texts, 256 + 1 + 50, ["<|endoftext|>"])


def test_save_load_round_trip(tmp_path):
    counts = bpe.PretokenCounts.from_mapping({"日本": 3, " x": 2**40}, pattern="o200k")
    path = tmp_path / "counts.npz"
    counts.save(path)
    loaded = bpe.PretokenCounts.load(path)
    assert loaded == counts and loaded.pattern == "o200k"
    none = bpe.PretokenCounts.from_mapping({"abc": 1}, pattern=None)
    none.save(tmp_path / "none.npz")
    assert bpe.PretokenCounts.load(tmp_path / "none.npz").pattern is None
    assert [p.name for p in tmp_path.iterdir()] != [] and not any(
        p.name.startswith(".tmp-") for p in tmp_path.iterdir())


def test_load_errors_name_the_file_and_field(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="bad.npz: not a pre-token counts file"):
        bpe.PretokenCounts.load(bad)
    partial = tmp_path / "partial.npz"
    np.savez(partial, data=np.zeros(1, np.uint8))
    with pytest.raises(ValueError, match="partial.npz: field 'format_version' is missing"):
        bpe.PretokenCounts.load(partial)
    with pytest.raises(FileNotFoundError, match="missing.npz"):
        bpe.PretokenCounts.load(tmp_path / "missing.npz")


def test_adding_counts_of_different_patterns_fails():
    with pytest.raises(ValueError, match="different patterns"):
        bpe.PretokenCounts.from_mapping({"a": 1}) + bpe.PretokenCounts.from_mapping({"a": 1}, "o200k")


def test_pretokenize_is_regex_findall():
    import regex
    text = "Hello  world's 1234 日本語!!\n\n"
    for name, source in bpe.PATTERNS.items():
        assert bpe.pretokenize(text, name) == findall(source, text)
    assert bpe.pretokenize(text, None) == [text]
    # A custom pattern's unmatched text is kept, as pre-tokens of its own (and
    # capture groups do not change what a match is).
    assert bpe.pretokenize("ab cd", r"\w") == ["a", "b", " ", "c", "d"]
    assert bpe.pretokenize("hello, world!  42", r"(\w)+") == ["hello", ", ", "world", "!  ", "42"]


@pytest.mark.parametrize("num_workers", [1, 2])
def test_counting_reuses_one_read_buffer_per_thread_across_chunk_sizes(write_text, num_workers):
    # Each counting thread reads its chunks into one buffer, grown when a chunk
    # is larger: chunks of many sizes (small chunk_size, uneven documents) must
    # count exactly as regex does, and the calling thread keeps no buffer after.
    from collections import Counter

    import regex

    from bpe.corpus import counting
    from bpe.patterns import PATTERNS

    documents = [random_corpus(seed, n_words=50 * (1 + seed % 7)) for seed in range(40)]
    text = "<|endoftext|>".join(documents)
    path = write_text(text)
    counts = bpe.count_pretokens(path, ["<|endoftext|>"], num_workers=num_workers, chunk_size=1 << 12)
    found = {bytes(counts.data[a:b]): int(c)
             for a, b, c in zip(counts.offsets[:-1], counts.offsets[1:], counts.counts)}
    expected = Counter(piece.encode() for document in documents
                       for piece in findall(PATTERNS["gpt2"], document))
    assert found == expected
    assert "buffer" not in vars(counting._read_buffers)
