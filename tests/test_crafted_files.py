"""Tokenizer files are untrusted input: every reader names the file and the line or
field at fault with TokenizerFileError, and nothing allocates by a number read
from a file before checking it against the file's own size."""
import base64
import gzip
import json
import time

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

import bpe
from bpe._rankfile import parse_rank_lines
from bpe.errors import TokenizerFileError
from bpe.flat import RankTable
from bpe.formats.rankfile import read_tiktoken_ranks, read_tiktoken_table

from conftest import random_corpus

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def trained():
    return bpe.train_from_iterator([random_corpus(11, special=EOT)], 256 + 1 + 60, [EOT], num_workers=1)


def own_lines(trained, tmp_path):
    path = trained.save(tmp_path / "tok.bpe")
    return open(path, encoding="utf-8").read().splitlines(keepends=True)


def write_lines(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("header, message", [
    ('{"pattern": "gpt2", "special_tokens": {"<|endoftext|>": [256]}}', "'special_tokens' is"),
    ('{"pattern": "gpt2", "special_tokens": "<|endoftext|>"}', "'special_tokens' is"),
    ('{"pattern": 7, "special_tokens": {}}', "'pattern' is 7, not a string or null"),
    ('{"pattern": "gpt2", "special_tokens": {"<|endoftext|>": true}}', "'special_tokens' is"),
    ("[" * 100000 + "]" * 100000, "bad header: RecursionError"),
    ('{"pattern": "gpt2"}', "bad header: KeyError"),
])
def test_wrong_header_types_name_the_line(trained, tmp_path, header, message):
    lines = own_lines(trained, tmp_path)
    lines[1] = header + "\n"
    path = write_lines(tmp_path, "bad.bpe", lines)
    with pytest.raises(bpe.errors.TokenizerFileError, match=rf"bad.bpe, line 2: .*{message}"):
        bpe.load(path)


@pytest.mark.parametrize("bad_id", ["²", "٣", "-3", "0x10", ""])
def test_ids_are_ascii_digits(trained, tmp_path, bad_id):
    lines = own_lines(trained, tmp_path)
    lines[3] = f"{bad_id} {lines[3].split(' ')[1]}"
    with pytest.raises(bpe.errors.TokenizerFileError, match=r"bad.bpe, line 4: expected '<id> <base64>'"):
        bpe.load(write_lines(tmp_path, "bad.bpe", lines))


def test_a_duplicate_id_is_refused(trained, tmp_path):
    lines = own_lines(trained, tmp_path)
    lines[4] = "0 " + lines[4].split(" ")[1]
    with pytest.raises(bpe.errors.TokenizerFileError, match=r"bad.bpe, line 5: id 0 is given twice"):
        bpe.load(write_lines(tmp_path, "bad.bpe", lines))


def test_swapped_or_missing_merges_are_refused(trained, tmp_path):
    lines = own_lines(trained, tmp_path)
    start = next(i for i, line in enumerate(lines) if line.startswith("merges "))
    swapped = lines[:]
    swapped[start + 10], swapped[start + 11] = swapped[start + 11], swapped[start + 10]
    with pytest.raises(bpe.errors.TokenizerFileError, match=r"swapped.bpe: merge 9 .* makes token 267, but "
                                                     r"the vocab's merged token number 9 is 266"):
        bpe.load(write_lines(tmp_path, "swapped.bpe", swapped))
    vocab_dir = tmp_path / "gpt2"
    vocab_json, merges_txt = trained.to_files(vocab_dir)
    merges = open(merges_txt, encoding="utf-8").read().splitlines(keepends=True)
    open(merges_txt, "w", encoding="utf-8").write("".join(merges[:30]))          # cut short
    with pytest.raises(bpe.errors.TokenizerFileError, match=r"merges.txt: the vocab has 60 merged tokens but "
                                                     r"there are 29 merges"):
        bpe.Tokenizer.from_files(vocab_json, merges_txt)


def test_gpt2_vocab_ids_must_be_ints_once_each(tmp_path):
    vocab = {chr(c): i for i, c in enumerate(range(ord("!"), ord("!") + 10))}
    for bad, message in [(dict(vocab, x=True), "has id True, not an int >= 0"),
                         (dict(vocab, x=1.5), "has id 1.5"),
                         (dict(vocab, x=3), "id 3 is given to two tokens")]:
        (tmp_path / "vocab.json").write_text(json.dumps(bad), encoding="utf-8")
        (tmp_path / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
        with pytest.raises(bpe.errors.TokenizerFileError, match=rf"vocab.json: .*{message}"):
            bpe.Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
    (tmp_path / "deep.json").write_text("[" * 100000 + "]" * 100000, encoding="utf-8")
    with pytest.raises(bpe.errors.TokenizerFileError, match=r"deep.json: not a JSON vocabulary: RecursionError"):
        bpe.Tokenizer.from_files(tmp_path / "deep.json", tmp_path / "merges.txt")


def tiktoken_lines(n=256):
    import base64

    return [f"{base64.b64encode(bytes([b])).decode()} {b}\n" for b in range(n)]


@pytest.mark.parametrize("line, message", [
    ("YWI= ²\n", "with a rank of ASCII digits"),
    ("YWI= ٣\n", "with a rank of ASCII digits"),
    ("YWI= -1\n", "with a rank of ASCII digits"),
    ("YWI= 5\n", "rank 5 is given twice"),
    ("AA== 300\n", r"token b'\\x00' is given twice"),
    ("!!! 300\n", "is not base64"),
])
def test_tiktoken_ranks_are_checked_by_line(tmp_path, line, message):
    path = tmp_path / "bad.tiktoken"
    path.write_text("".join(tiktoken_lines()) + line, encoding="utf-8")
    with pytest.raises(bpe.errors.TokenizerFileError, match=rf"bad.tiktoken, line 257: .*{message}"):
        bpe.Tokenizer.from_tiktoken(path, pattern="gpt2")


def _table_or_error(read, path):
    try:
        table = read(path)
    except TokenizerFileError as e:
        return str(e)
    return table.token_data.tobytes(), table.token_offsets.tolist(), table.ranks.tolist()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tokens=st.lists(st.binary(min_size=1, max_size=12), min_size=1, max_size=30, unique=True),
       gaps=st.lists(st.integers(1, 3), min_size=30, max_size=30), shuffle=st.randoms(),
       shuffled=st.booleans(),
       edits=st.lists(st.tuples(st.integers(0, 1 << 16), st.sampled_from(
           [b"\r", b" ", b"\n", b"=", b"\t", b"-", b"x", b"/", b"\xff", "٣".encode(), b"0" * 19, None])),
           max_size=3))
def test_the_native_rank_reader_agrees_with_the_python_one(tmp_path, tokens, gaps, shuffle, shuffled, edits):
    # The native parser reads only tiktoken's own shape and leaves the rest to
    # read_tiktoken_ranks: whatever the file, the table (or the error) is the same.
    ranks = [sum(gaps[:i + 1]) for i in range(len(tokens))]
    lines = [base64.b64encode(token) + b" %d\n" % rank for token, rank in zip(tokens, ranks)]
    if shuffled:
        shuffle.shuffle(lines)
    raw = bytearray(b"".join(lines))
    for at, edit in edits:
        at %= len(raw)
        if edit is None:
            del raw[at]
        else:
            raw[at:at] = edit
    path = tmp_path / "any.tiktoken"
    path.write_bytes(bytes(raw))
    assert _table_or_error(read_tiktoken_table, path) == \
        _table_or_error(lambda p: RankTable.from_vocab(read_tiktoken_ranks(p)), path)
    if not edits and not shuffled:          # tiktoken's own shape: the native parser reads it
        assert parse_rank_lines(bytes(raw)) is not None


@pytest.mark.parametrize("raw", [
    b"AA== 0\n\n", b"AA==  0\n", b"AA==0\n", b"AA== 0\r\n", b" AA== 0\n", b"AA== \xd9\xa3\n",
    b"AR== 0\n",                   # unused low bits set: Python decodes it, so it reads it
    b"A=== 0\n", b"AA=A 0\n", b"AAA 0\n", b"AA== 0000000000000000000\n",
    b"AA== 0\nAA== 1\n",            # a token given twice
])
def test_the_native_rank_parser_leaves_other_shapes_to_python(raw):
    assert parse_rank_lines(raw) is None


def test_a_far_rank_loads_without_memory_sized_by_it(tmp_path):
    # tiktoken reads such a file; so does bpe, and nothing is sized by the rank.
    import tracemalloc

    path = tmp_path / "sparse.tiktoken"
    path.write_text("".join(tiktoken_lines()) + "YWI= 100000000\n", encoding="utf-8")
    tracemalloc.start()               # Python objects and numpy arrays: what an id could size
    started = time.perf_counter()
    tok = bpe.Tokenizer.from_tiktoken(path, pattern="gpt2", special_tokens={"<|far|>": 2_000_000_000})
    assert tok.encode("ab ab<|far|>") == [100_000_000, 32, 100_000_000, 2_000_000_000]
    assert tok.encode_batch(["ab<|far|>", "b"]) == [[100_000_000, 2_000_000_000], [98]]
    assert tok.encode_to_numpy("ab").tolist() == [100_000_000]
    assert tok.n_vocab == 2_000_000_001 and tok.decode([100_000_000, 2_000_000_000]) == "ab<|far|>"
    assert time.perf_counter() - started < 5
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50_000_000, peak                    # not ints or arrays sized by the id
    with pytest.raises(ValueError, match=r"vocab id 2147483647 is not in \[0, 2147483646\]"):
        bpe.Tokenizer({**{b: bytes([b]) for b in range(256)}, 2**31 - 1: b"ab"}, None)


def test_a_truncated_gzip_names_the_file(tmp_path):
    path = tmp_path / "cut.tiktoken.gz"
    path.write_bytes(gzip.compress("".join(tiktoken_lines()).encode())[:100])
    with pytest.raises(bpe.errors.TokenizerFileError, match=r"cut.tiktoken.gz: cannot be read as gzip"):
        bpe.Tokenizer.from_tiktoken(path, pattern="gpt2")


def test_a_special_token_on_an_ordinary_id_is_read_as_tiktoken_reads_it(trained, tmp_path):
    # The ordinary token keeps its id and its bytes; the special name encodes to the
    # same id; decoding gives the ordinary bytes (tiktoken's decoder asks them first).
    tiktoken = pytest.importorskip("tiktoken")
    ordinary = {token_id: token for token_id, token in trained.vocab.items() if token_id != 256}
    tok = bpe.load(bpe.Tokenizer(ordinary, None, {EOT: 300}).save(tmp_path / "shared.bpe"))
    ranks = {token: token_id for token_id, token in ordinary.items()}
    reference = tiktoken.Encoding("shared", pat_str=bpe.PATTERNS["gpt2"], mergeable_ranks=ranks,
                                  special_tokens={EOT: 300})
    text = random_corpus(5, special=EOT)
    assert tok.encode(text) == reference.encode(text, allowed_special="all")
    assert tok.decode([300]) == reference.decode([300]) == trained.vocab[300].decode("utf-8", "replace")


def test_a_long_token_loads_and_encodes_in_linear_time(tmp_path):
    # One 80 KB token (and the run of merges that builds it) took seconds to load:
    # building the encoder was quadratic in the longest token.
    tok = bpe.train_from_iterator(["=" * 80_000], 256 + 17, num_workers=1)
    assert max(len(token) for token in tok.vocab.values()) > 65536
    path = tok.to_tiktoken(tmp_path / "long.tiktoken")
    started = time.perf_counter()
    loaded = bpe.Tokenizer.from_tiktoken(path, pattern="gpt2")
    assert loaded.encode("=" * 80_000 + " hello") == tok.encode("=" * 80_000 + " hello")
    assert loaded.merges == tok.merges
    assert time.perf_counter() - started < 5
