"""Any ranked vocabulary encodes as tiktoken encodes it: tokens that no merge of
two earlier tokens makes, tokens ranked below their parts, an empty token,
special ids far above the vocabulary, several special names on one id, a
special name on an ordinary token's id. Each case is checked id for id against
``tiktoken.Encoding`` built from the same arguments, with every fast path of
the kernel forced."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import bpe
from bpe._testing import MISS_PATHS, encoder_defaults, small_sizes
from bpe.flat import RankTable
from bpe.tokenizer import Tokenizer
from bpe.vocabulary import Ranks, Vocabulary


tiktoken = pytest.importorskip("tiktoken")

#: Pieces tokens and texts are made of: ASCII, a two-byte character, and parts
#: of one (so tokens may hold half a character, as real vocabularies do).
ATOMS = [b"a", b"b", b"c", b" ", b"\n", b"\xc3\xa9", b"\xc3", b"1"]
TEXT_ATOMS = ["a", "b", "c", " ", "\n", "é", "1", "  ", "ab", "abc"]
PATTERNS = {"gpt2": bpe.PATTERNS["gpt2"], "custom": r"\s+|[^\s]+"}


@st.composite
def vocabularies(draw):
    """``(mergeable_ranks, special_tokens)`` as tiktoken takes them."""
    byte_ranks = list(range(256))
    if draw(st.booleans()):
        byte_ranks = draw(st.permutations(range(256)))
    tokens = draw(st.lists(st.lists(st.sampled_from(ATOMS), min_size=2, max_size=5).map(b"".join),
                           min_size=1, max_size=40, unique=True))
    tokens = [token for token in tokens if len(token) > 1]
    if draw(st.booleans()):
        tokens.append(b"")                                   # Whisper's files hold one
    # Ranks for the longer tokens among and past the bytes' (below their parts too).
    pool = draw(st.lists(st.integers(0, 400), min_size=len(tokens), max_size=len(tokens), unique=True))
    ranks = {bytes([b]): byte_ranks[b] for b in range(256)}
    taken = set(ranks.values())
    for token, rank in zip(tokens, pool):
        rank += 256
        while rank in taken:
            rank += 1
        ranks[token] = rank
        taken.add(rank)
    names = draw(st.lists(st.text("xyz", min_size=1, max_size=3), max_size=4, unique=True))
    specials = {}
    for name in names:
        where = draw(st.sampled_from(["above", "far", "shared", "ordinary"]))
        if where == "shared" and specials:
            specials[f"<|{name}|>"] = draw(st.sampled_from(sorted(specials.values())))
        elif where == "ordinary":
            specials[f"<|{name}|>"] = draw(st.sampled_from(sorted(taken)))
        elif where == "far":
            specials[f"<|{name}|>"] = draw(st.integers(70_000, 2**31 - 2))
        else:
            specials[f"<|{name}|>"] = max(taken) + 1 + len(specials)
    return ranks, specials


def texts(specials):
    atoms = TEXT_ATOMS + list(specials)
    return st.lists(st.sampled_from(atoms), max_size=60).map("".join)


@pytest.fixture(params=["default", "batched", "one by one", "table", "tiny caches"])
def kernel_path(request):
    """Every way the kernel may take: misses merged side by side or one by one,
    the merged id read from a table instead of found by an offset, short caches
    so small that they grow and start afresh within a text."""
    if request.param in MISS_PATHS:
        changes = {"group_after_misses": MISS_PATHS[request.param]}
    elif request.param == "table":
        changes = {"merged_ids_by_offset": False}
    elif request.param == "tiny caches":
        changes = small_sizes(4, 16)
    else:
        changes = {}
    with encoder_defaults(**changes):
        yield changes


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), vocabulary=vocabularies(), pattern=st.sampled_from(sorted(PATTERNS)))
def test_any_ranked_vocabulary_encodes_as_tiktoken(kernel_path, data, vocabulary, pattern):
    ranks, specials = vocabulary
    reference = tiktoken.Encoding("any", pat_str=PATTERNS[pattern], mergeable_ranks=ranks,
                                  special_tokens=specials)
    ours = bpe.Encoding("any", pat_str=PATTERNS[pattern], mergeable_ranks=ranks, special_tokens=specials)
    tok = ours.tokenizer
    assert all(getattr(tok.encoder.options, name) == value for name, value in kernel_path.items())
    batch = [data.draw(texts(specials)) for _ in range(3)]
    for text in batch:
        expected = reference.encode(text, allowed_special="all")
        assert ours.encode(text, allowed_special="all") == expected
        assert tok.encode(text) == expected
        assert tok.encode_to_numpy(text, dtype=np.uint32).tolist() == expected
        assert ours.encode_ordinary(text) == reference.encode_ordinary(text)
        shared = {token_id for token_id in specials.values() if list(specials.values()).count(token_id) > 1}
        if not shared & set(expected):      # tiktoken decodes a shared id by its hash map's order
            assert ours.decode_bytes(expected) == reference.decode_bytes(expected)
    assert tok.encode_batch(batch, num_threads=2) == [reference.encode(t, allowed_special="all") for t in batch]
    for token in list(ranks)[::7]:
        assert ours._encode_single_piece(token) == reference._encode_single_piece(token)
    assert ours.n_vocab == reference.n_vocab


def test_tiktoken_rules_on_a_hand_made_vocabulary():
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({b"bc": 256, b"abc": 257,            # abc: a + bc, ranked after bc
                  b"xy": 300, b"wxy": 260,            # wxy ranked below its part xy
                  b"pqr": 261,                        # no two tokens make pqr
                  b"": 262})                          # the empty token
    specials = {"<|s|>": 5000, "<|t|>": 5000, "<|u|>": 300, "<|far|>": 2_000_000_000}
    reference = tiktoken.Encoding("hand", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens=specials)
    ours = bpe.Encoding("hand", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens=specials)
    text = "abc wxy wxyz pqr pqrs <|s|><|t|> <|u|> xy<|far|>"
    assert ours.encode(text, allowed_special="all") == reference.encode(text, allowed_special="all")
    assert ours.decode_single_token_bytes(262) == b"" == reference.decode_single_token_bytes(262)
    assert ours.decode_single_token_bytes(300) == b"xy"          # the ordinary token's bytes first
    assert ours.decode_single_token_bytes(5000) == b"<|s|>"      # the first name given for a shared id
    assert ours.encode_single_token("<|t|>") == 5000 and ours.encode_single_token(b"") == 262
    assert ours.n_vocab == reference.n_vocab == 2_000_000_001
    with pytest.raises(KeyError, match="4999"):
        ours.decode_single_token_bytes(4999)
    with pytest.raises(KeyError, match="Invalid token for decoding: 4999"):
        ours.decode([1, 4999])
    assert ours.decode_with_offsets([97, 262, 98]) == ("ab", [0, 1, 1])


def test_a_ranked_vocabulary_round_trips_through_bpe_s_own_format(tmp_path):
    ranks = {bytes([b]): b for b in range(256)} | {b"xyz": 256, b"ab": 257, b"": 258}
    tok = Tokenizer._from_parts(Vocabulary(RankTable.from_vocab({r: t for t, r in ranks.items()}),
                                           {"<|a|>": 300, "<|b|>": 300}), Ranks(None), "gpt2", None)
    path = tok.save(tmp_path / "ranked.bpe")
    assert open(path, encoding="utf-8").readline() == "bpe-tokenizer 2\n"
    back = bpe.load(path)
    assert back == tok and back.special_tokens == tok.special_tokens
    assert back.encode("xyz ab<|b|>") == tok.encode("xyz ab<|b|>") == [256, 32, 257, 300]
    with pytest.raises(ValueError, match="is no merge of two tokens"):
        tok.to_huggingface(tmp_path / "hf")
