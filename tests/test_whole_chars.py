"""Merges that start from whole characters (``bpe/_wholechars.pxd``) give the
ids that merging bytes gives.

Where a character of two or three bytes merges alone into one token before any
pair across its edges could merge, a merge may start from that token. The
vocabularies here are made of characters' bytes and of the pieces that make it
fail: a character's leading or trailing bytes, and pairs across two
characters' edges (a continuation byte, then a leading byte), ranked anywhere.
Each is checked against tiktoken (ranked vocabularies), a merge of bytes
written out here (listed merges), and the kernel with the path turned off,
through every path a pre-token's merge may take: short, long, longer than a
short merge holds even by characters, merged side by side or one by one."""
import dataclasses
import os
import threading
import time

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import bpe
from bpe import pure
from bpe._testing import MISS_PATHS, encoder_defaults
from bpe.encoder import Encoder
from bpe.flat import flatten
from bpe.tokenizer import Tokenizer

tiktoken = pytest.importorskip("tiktoken")

CHARS = ["中", "国", "é", "€", "😀", "a", " "]
#: Pre-tokens are runs of non-space (long ones, up to hundreds of bytes) and of space.
PATTERN = r"\s+|\S+"


def fragments() -> list[bytes]:
    """Each character, its leading and trailing bytes, and each pair of bytes
    across two characters' edges."""
    out = set()
    encoded = [c.encode() for c in CHARS]
    for b in encoded:
        for i in range(1, len(b) + 1):
            out.update((b[:i], b[i - 1:]))
    for left in encoded:
        for right in encoded:
            out.add(left[-1:] + right[:1])
            out.add(left + right[:1])
    return sorted(out)


FRAGMENTS = fragments()


@st.composite
def ranked_vocabularies(draw) -> dict[bytes, int]:
    """tiktoken's ranks: the bytes, then tokens of one to three fragments at
    random ranks (below their parts, too)."""
    tokens = draw(st.lists(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=3).map(b"".join),
                           min_size=1, max_size=60, unique=True))
    tokens += draw(st.lists(st.sampled_from(FRAGMENTS), max_size=20))       # more of them alone
    tokens = list(dict.fromkeys(tokens))
    tokens = [token for token in tokens if len(token) > 1]
    ranks = {bytes([b]): b for b in range(256)}
    order = draw(st.permutations(range(len(tokens))))
    for token, place in zip(tokens, order):
        ranks[token] = 256 + place
    return ranks


@st.composite
def listed_merges(draw) -> list[tuple[bytes, bytes]]:
    """Merges as a Hugging Face file lists them: each of two tokens made before."""
    made = [bytes([b]) for b in range(256)]
    seeds = [f for f in FRAGMENTS if len(f) > 1]
    merges = []
    for _ in range(draw(st.integers(1, 50))):
        if draw(st.booleans()):
            target = draw(st.sampled_from(seeds))
            split = draw(st.integers(1, len(target) - 1))
            left, right = target[:split], target[split:]
        else:
            left, right = draw(st.sampled_from(made)), draw(st.sampled_from(made))
        if left in made and right in made and (left, right) not in merges:
            merges.append((left, right))
            if left + right not in made:
                made.append(left + right)
    return merges


def texts():
    return st.lists(st.sampled_from(CHARS), max_size=150).map("".join)


@pytest.fixture(params=["default", "batched", "one by one"])
def miss_path(request):
    changes = {"group_after_misses": MISS_PATHS[request.param]} if request.param in MISS_PATHS else {}
    with encoder_defaults(**changes):
        yield changes


def merged_by_pairs(piece: bytes, merges: list[tuple[bytes, bytes]]) -> list[bytes]:
    """Hugging Face's rule: the listed pair of lowest rank merges first, the leftmost among equals."""
    rank = {}
    for k, pair in enumerate(merges):
        rank.setdefault(pair, k)
    parts = [bytes([b]) for b in piece]
    while True:
        found = [(rank[(a, b)], i) for i, (a, b) in enumerate(zip(parts, parts[1:])) if (a, b) in rank]
        if not found:
            return parts
        _, i = min(found)
        parts[i:i + 2] = [parts[i] + parts[i + 1]]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), ranks=ranked_vocabularies())
def test_a_ranked_vocabulary_encodes_as_tiktoken_from_whole_characters(miss_path, data, ranks):
    reference = tiktoken.Encoding("any", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})
    ours = bpe.Encoding("any", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})
    with encoder_defaults(whole_chars=False):
        from_bytes = bpe.Encoding("any", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})
        assert not from_bytes.tokenizer.encoder.options.whole_chars      # built here, so
    batch = [data.draw(texts()) for _ in range(3)]
    for text in batch:
        expected = reference.encode_ordinary(text)
        assert ours.encode_ordinary(text) == expected
        assert ours.tokenizer.encode_to_numpy(text, dtype=np.uint32).tolist() == expected
        assert from_bytes.encode_ordinary(text) == expected
    assert ours.tokenizer.encode_batch(batch, num_threads=2) == [reference.encode_ordinary(t) for t in batch]
    # One pre-token of more parts than a scan takes: its merges found by the
    # heap, from whole characters.
    long_text = (data.draw(st.lists(st.sampled_from(CHARS[:5]), min_size=1, max_size=6).map("".join)) * 300)[:300]
    assert ours.encode_ordinary(long_text) == reference.encode_ordinary(long_text)
    # Bytes that need not be UTF-8: characters cut short, continuation bytes alone.
    piece = data.draw(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=40).map(b"".join))
    expected = [ranks[piece]] if piece in ranks else [ranks[p] for p in pure.encode_piece(piece, ranks)]
    assert ours.tokenizer.encode_piece(piece) == expected


@settings(max_examples=60, deadline=None)
@given(ranks=ranked_vocabularies())
def test_ranked_tokens_split_by_the_ranks_before_them_from_whole_characters(ranks):
    # Each token merged by the ranks before it alone (how merges are read out
    # of ranks): a character may start whole only if it merges alone below them.
    tok = bpe.Encoding("any", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={}).tokenizer
    ranked = tok._ranked_ids()
    parts, n_parts = tok._split_ranked(ranked)
    by_id = {i: token for token, i in ranks.items()}
    for k, token_id in enumerate(ranked.tolist()):
        token = by_id[token_id]
        before = {t: r for t, r in ranks.items() if len(t) > 1 and r < ranks[token]}
        expected = [ranks[p] for p in pure.encode_piece(token, before)]
        assert n_parts[k] == len(expected)
        assert parts[k].tolist()[:len(expected)] == expected[:2]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), merges=listed_merges())
def test_merges_given_to_a_tokenizer_encode_from_whole_characters(miss_path, data, merges):
    # ``Tokenizer(vocab, merges)``: each merge ranks the token it makes, and
    # any two parts that join into a ranked token merge (``bpe.pure``'s rule).
    vocab = {b: bytes([b]) for b in range(256)}
    for left, right in merges:
        if left + right not in vocab.values():
            vocab[len(vocab)] = left + right
    ours = Tokenizer(vocab, merges, pattern=PATTERN)
    with encoder_defaults(whole_chars=False):
        from_bytes = Tokenizer(vocab, merges, pattern=PATTERN)
        assert not from_bytes.encoder.options.whole_chars               # built here, so
    ids = {token: i for i, token in vocab.items()}
    ranks = {}
    for k, (left, right) in enumerate(merges):
        ranks.setdefault(left + right, k)
    for _ in range(3):
        text = data.draw(texts())
        got = ours.encode(text)
        assert got == from_bytes.encode(text)
        assert ours.decode_bytes(got) == text.encode()
        for chunk in set(text.split(" ")):
            piece = chunk.encode()
            if piece and piece not in ids:
                assert ours.encode(chunk) == [ids[p] for p in pure.encode_piece(piece, ranks)]


def listed_kernel(ids: dict[bytes, int], merges, whole_tokens: bool, whole_chars: bool) -> Encoder:
    """An encoder of Hugging Face's rule: only the listed pairs merge."""
    tokens = sorted(ids.items(), key=lambda item: item[1])
    data, offsets = flatten([token for token, _ in tokens])
    arrays = {"byte_ids": np.array([ids[bytes([b])] for b in range(256)], dtype=np.int32),
              "token_data": data, "token_offsets": offsets,
              "token_ids": np.array([i for _, i in tokens], dtype=np.int32),
              "ranked_ids": np.array([ids[a + b] for a, b in merges], dtype=np.int32),
              "merge_pairs": np.array([(ids[a], ids[b]) for a, b in merges], dtype=np.int32).reshape(-1, 2),
              "whole_tokens": np.array(whole_tokens)}
    options = dataclasses.replace(Encoder.default_options, whole_chars=whole_chars)
    return Encoder(arrays, PATTERN, {}, options=options)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), merges=listed_merges(), whole_tokens=st.booleans(), shuffled=st.booleans())
def test_listed_merges_encode_as_merging_bytes_from_whole_characters(miss_path, data, merges, whole_tokens,
                                                                      shuffled):
    made = sorted({token for pair in merges for token in pair} | {a + b for a, b in merges}, key=len)
    byte_ids = data.draw(st.permutations(range(256))) if shuffled else list(range(256))
    ids = {bytes([b]): byte_ids[b] for b in range(256)}
    for token in made:
        ids.setdefault(token, len(ids))
    ours = listed_kernel(ids, merges, whole_tokens, True)
    from_bytes = listed_kernel(ids, merges, whole_tokens, False)
    for _ in range(5):
        piece = data.draw(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=60).map(b"".join))
        expected = ([ids[piece]] if whole_tokens and piece in ids
                    else [ids[p] for p in merged_by_pairs(piece, merges)])
        assert ours.encode_piece(piece).tolist() == expected
        assert from_bytes.encode_piece(piece).tolist() == expected
    text = data.draw(texts())
    assert ours.encode_to_array(text, (), False).tolist() == from_bytes.encode_to_array(text, (), False).tolist()


def vocabulary_of(extra: dict[bytes, int]) -> dict[bytes, int]:
    return {bytes([b]): b for b in range(256)} | extra


ZHONG = "中".encode()            # e4 b8 ad


def test_a_character_that_merges_alone_starts_whole():
    ranks = vocabulary_of({ZHONG[:2]: 256, ZHONG: 257, ZHONG * 2: 258})
    ours = bpe.Encoding("t", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})
    reference = tiktoken.Encoding("t", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})
    kernel = ours.tokenizer.encoder._kernel
    assert kernel.merges_alone(ZHONG) == 257
    for n in (1, 2, 3, 5, 11, 40, 200):          # short, long, past a short merge's parts
        text = "中" * n + " é中" + "中é" * n
        assert ours.encode_ordinary(text) == reference.encode_ordinary(text)
    with encoder_defaults(whole_chars=False):
        off = bpe.Encoding("t", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={}).tokenizer.encoder
    assert off._kernel.merges_alone(ZHONG) is None


@pytest.mark.parametrize("cross", [
    b"\xad\xe4",             # the trailing byte of one, the leading byte of the next
    b"\xad" + ZHONG[:2],     # ... and the next one's first two bytes
    ZHONG + b"\xe4",         # the whole character, and the next one's leading byte
    b"\xe4\xb8\xad\xe4\xb8",   # ... its first two bytes
])
def test_a_pair_across_the_edges_ranked_first_keeps_it_in_bytes(cross):
    ranks = vocabulary_of({cross: 256, ZHONG[:2]: 257, ZHONG: 258})
    ours = bpe.Encoding("t", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})
    reference = tiktoken.Encoding("t", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})
    assert ours.tokenizer.encoder._kernel.merges_alone(ZHONG) is None
    for text in ("中中中", "中" * 20, "a中中", "中" * 60):
        assert ours.encode_ordinary(text) == reference.encode_ordinary(text)
    # Next to a byte below 0x80 the same character may start whole: no pair there ranks first.
    assert ours.encode_ordinary("a中") == reference.encode_ordinary("a中")


@pytest.mark.parametrize("text", ["a中", "中a", "a中中a", "中中é中", "é中", "aé中é"])
def test_a_neighbour_below_0x80_or_cut_short_keeps_a_character_in_bytes(text):
    # Pairs with ASCII neighbours, ranked before the characters' own merges:
    # a character may start whole only between characters of several bytes.
    ranks = vocabulary_of({b"a\xe4": 256, b"\xada": 257, b"\xa9\xe4": 262, ZHONG[:2]: 259, ZHONG: 260,
                           "é".encode(): 261})
    ours = bpe.Encoding("t", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})
    reference = tiktoken.Encoding("t", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})
    assert ours.tokenizer.encoder._kernel.merges_alone(ZHONG) == 260
    assert ours.encode_ordinary(text) == reference.encode_ordinary(text)
    assert ours.encode_ordinary(text * 30) == reference.encode_ordinary(text * 30)
    # Bytes cut short on either side: never a character's neighbours.
    for piece in (b"\xe4" + ZHONG, ZHONG + b"\xe4\xb8", b"\xad" + ZHONG, ZHONG + b"\xad"):
        assert ours.tokenizer.encode_piece(piece) == [ranks[p] for p in pure.encode_piece(piece, ranks)]


def test_a_pair_above_the_characters_merges_leaves_it_whole():
    # Ranked after 中 is made: the pair across the edges never comes first.
    ranks = vocabulary_of({ZHONG[:2]: 256, ZHONG: 257, b"\xad\xe4": 258})
    ours = bpe.Encoding("t", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})
    reference = tiktoken.Encoding("t", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})
    assert ours.tokenizer.encoder._kernel.merges_alone(ZHONG) == 257
    assert ours.encode_ordinary("中" * 50) == reference.encode_ordinary("中" * 50) == [257] * 50


def test_merges_alone_refuses_what_is_not_one_character():
    kernel = bpe.load("gpt2").encoder._kernel
    assert kernel.merges_alone(b"a") is None
    for bad in (b"ab", b"\xe4\xb8", "😀".encode()):
        with pytest.raises(ValueError, match="not one character"):
            kernel.merges_alone(bad)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_child_forked_while_the_tables_are_built_builds_them_itself():
    # The build runs on one thread; a child forked meanwhile has no such
    # thread, and would merge from bytes for good.
    loaded = bpe.load("o200k_base").encoder
    expected = {char: loaded._kernel.merges_alone(char.encode()) for char in "中的是"}
    assert all(expected.values())
    without = 0
    for trial in range(16):
        encoder = Encoder(loaded._arrays, loaded.pattern, {}, options=loaded.options)
        kernel = encoder._kernel
        # A text long enough for the kernel to let go of the GIL while it encodes.
        builder = threading.Thread(target=encoder.encode_to_array, args=("中国人" * 2000, (), False))
        builder.start()
        time.sleep(0.001 * (trial % 8))
        pid = os.fork()
        if pid == 0:
            got = {char: kernel.merges_alone(char.encode()) for char in "中的是"}
            os._exit(0 if got == expected else 3)
        builder.join()
        _, status = os.waitpid(pid, 0)
        without += os.waitstatus_to_exitcode(status) == 3
    assert without == 0
