"""Decode's kernel (``bpe._decode``) against the vocabulary's ``{id: bytes}``:
every way ids arrive (lists, tuples, iterables, numpy arrays of each integer
type, numpy ints in a list), ids far past the dense table, holes in it, and
the ids it must refuse, named."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe
from bpe._decode import DecodeTable
from bpe.vocabulary import PREBUILT_SLACK

FAR = 10**6 + PREBUILT_SLACK      # a special id far above the vocabulary: past the dense table


def reference(tok, ids) -> bytes:
    return b"".join(tok._vocabulary.decoder[int(i)] for i in ids)


@pytest.fixture(scope="module")
def far_tok():
    """GPT-2's ranks with a special token far above them."""
    gpt2 = bpe.get_encoding("gpt2")
    return bpe.Encoding("far", pat_str=gpt2._pat_str, mergeable_ranks=gpt2._mergeable_ranks,
                        special_tokens={"<|endoftext|>": 50256, "<|far|>": FAR})._tokenizer


@pytest.fixture(scope="module")
def cl100k():
    return bpe.load("cl100k_base")


def test_the_tables_leave_far_ids_to_the_dict(far_tok):
    table = far_tok._vocabulary.decode_table
    assert far_tok._vocabulary.prebuilt_limit() < FAR
    assert table.decode([FAR, 50256, 0]) == b"<|far|><|endoftext|>!"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 50256), st.just(FAR)), max_size=300),
       st.sampled_from(["list", "tuple", "iterable", "int64", "uint32", "int32", "uint64", "numpy ints"]))
def test_every_way_ids_arrive_decodes_as_the_dict(far_tok, ids, form):
    given_ids = {"list": list, "tuple": tuple, "iterable": iter,
                 "int64": lambda x: np.array(x, np.int64), "uint32": lambda x: np.array(x, np.uint32),
                 "int32": lambda x: np.array(x, np.int32), "uint64": lambda x: np.array(x, np.uint64),
                 "numpy ints": lambda x: [np.int64(i) for i in x]}[form](ids)
    assert far_tok.decode_bytes(given_ids) == reference(far_tok, ids)


def test_narrow_arrays_decode_as_the_dict(cl100k):
    ids = np.arange(0, 65536, 7, dtype=np.uint16)
    assert cl100k.decode_bytes(ids) == reference(cl100k, ids.tolist())
    assert cl100k.decode_bytes(ids.astype(np.int16)[:1000]) == reference(cl100k, ids[:1000].tolist())


def test_special_and_control_ids_decode_as_the_dict():
    o200k = bpe.load("o200k_harmony")      # several names on one id, specials among the ranks' ids
    ids = sorted(set(o200k.special_tokens.values()))[:40] + [0, 1000, 199997]
    assert o200k.decode_bytes(ids) == reference(o200k, ids)


@pytest.mark.parametrize("bad", [-1, 100256, 100277, 2**40, 2**70, -2**70, 1.5, "7", None])
def test_an_id_not_in_the_vocab_is_named(cl100k, bad):
    with pytest.raises(ValueError, match=f"token id {bad!r} is not in the vocab"):
        cl100k.decode([15339, bad])


def test_an_array_id_not_in_the_vocab_is_named(cl100k):
    with pytest.raises(ValueError, match="token id 100256 is not in the vocab"):
        cl100k.decode(np.array([15339, 100256], np.int64))
    with pytest.raises(ValueError, match=f"token id {2**64 - 1} is not in the vocab"):
        cl100k.decode(np.array([15339, 2**64 - 1], np.uint64))
    with pytest.raises(ValueError, match="1-d integer array"):
        cl100k.decode(np.array([1.0, 2.0]))


def test_empty_input_and_empty_tokens():
    assert bpe.load("gpt2").decode_bytes([]) == b""
    assert bpe.load("gpt2").decode_bytes(np.array([], np.uint16)) == b""
    table = DecodeTable(np.frombuffer(b"ab", np.uint8), np.array([0, 1, 2], np.int64),
                        np.array([1, 1, 0], np.int32), {})
    assert table.decode([2, 0, 2, 1, 2]) == b"ab"


def test_a_table_pointing_outside_its_bytes_is_refused():
    with pytest.raises(ValueError, match="outside"):
        DecodeTable(np.frombuffer(b"ab", np.uint8), np.array([0, 2], np.int64), np.array([1, 1], np.int32), {})


def test_a_pickled_tokenizer_decodes_after_building_its_table_again(far_tok):
    import pickle

    ids = [FAR, 50256, 31373]
    assert far_tok.decode(ids) == pickle.loads(pickle.dumps(far_tok)).decode(ids)
