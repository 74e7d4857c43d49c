"""``import bpe as tiktoken``: every method of tiktoken.Encoding gives tiktoken's
results (ids, bytes, offsets, errors) on the same input, for each shipped encoding."""
import pickle

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

import bpe

from test_native_pretok import PIECES
from tiktoken_reference import get_encoding

NAMES = ["gpt2", "r50k_base", "cl100k_base", "o200k_base"]
SPECIALS = ["<|endoftext|>", "<|endofprompt|>", "<|fim_prefix|>", "<|fim_suffix|>"]
text_strategy = st.lists(st.sampled_from(PIECES + SPECIALS + [" hello", "world", "123", "\ud800", " \n "]),
                         max_size=30).map("".join)
POLICIES = [
    {},
    {"allowed_special": "all"},
    {"allowed_special": {"<|endoftext|>"}},
    {"disallowed_special": ()},
    {"allowed_special": {"<|endoftext|>"}, "disallowed_special": ()},
    {"allowed_special": set(), "disallowed_special": {"<|endoftext|>"}},
    {"allowed_special": {"not a special token"}, "disallowed_special": ()},
]


@pytest.fixture(scope="module", params=NAMES)
def pair(request):
    return bpe.get_encoding(request.param), get_encoding(request.param)


def outcome(function, *args, **kwargs):
    """The result, or the type and message of the exception."""
    try:
        return function(*args, **kwargs)
    except Exception as e:          # noqa: BLE001 - comparing what both raise
        return type(e), str(e)


def test_module_level_names(pair):
    ours, theirs = pair
    assert repr(ours) == repr(theirs) and ours.name == theirs.name
    assert ours.n_vocab == theirs.n_vocab and ours.max_token_value == theirs.max_token_value
    assert ours.eot_token == theirs.eot_token and ours.special_tokens_set == theirs.special_tokens_set
    assert ours._special_tokens == theirs._special_tokens and ours._pat_str == theirs._pat_str
    assert ours._mergeable_ranks == theirs._mergeable_ranks
    assert ours.token_byte_values() == theirs.token_byte_values()
    assert bpe.get_encoding(ours.name) is ours
    for token in (0, 255, ours.eot_token, ours.max_token_value):
        assert ours.is_special_token(token) == theirs.is_special_token(token)
    import tiktoken

    assert bpe.list_encoding_names() == tiktoken.list_encoding_names()


@settings(max_examples=100, deadline=None)
@given(text=text_strategy)
def test_encoding_equals_tiktoken_for_every_policy(pair, text):
    ours, theirs = pair
    assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
    for policy in POLICIES:
        expected = outcome(theirs.encode, text, **policy)
        assert outcome(ours.encode, text, **policy) == expected, policy
        numpy = outcome(ours.encode_to_numpy, text, **policy)
        reference = outcome(theirs.encode_to_numpy, text, **policy)
        if isinstance(reference, tuple) and reference[0] is UnicodeEncodeError:
            # tiktoken's encode_to_numpy (alone of its methods) fails on a lone
            # surrogate; bpe replaces it with U+FFFD here too, as encode does.
            assert numpy.tolist() == expected
        elif isinstance(reference, tuple):
            assert numpy == reference
        else:
            assert numpy.dtype == reference.dtype and numpy.tolist() == reference.tolist()
    for policy in POLICIES[:3]:
        assert outcome(ours.encode_batch, [text, "x" + text], num_threads=2, **policy) == \
            outcome(theirs.encode_batch, [text, "x" + text], num_threads=2, **policy)
    assert ours.encode_ordinary_batch([text, text[:3]]) == theirs.encode_ordinary_batch([text, text[:3]])


@settings(max_examples=60, deadline=None)
@given(text=text_strategy)
def test_unstable_ends_equal_tiktoken(pair, text):
    ours, theirs = pair
    for policy in POLICIES[:3]:
        expected = outcome(theirs.encode_with_unstable, text, **policy)
        got = outcome(ours.encode_with_unstable, text, **policy)
        if isinstance(expected, tuple) and expected[0] is UnicodeEncodeError:
            # tiktoken fails on a lone surrogate here; bpe reads it as U+FFFD, as encode does.
            replaced = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            expected = outcome(theirs.encode_with_unstable, replaced, **policy)
        if isinstance(expected, tuple) and isinstance(expected[0], type):
            assert got == expected
            continue
        assert got[0] == expected[0]
        assert sorted(map(tuple, got[1])) == sorted(map(tuple, expected[1]))


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=24) | text_strategy.map(lambda t: t.encode("utf-8", "replace")))
def test_bytes_that_need_not_be_utf8(pair, data):
    ours, theirs = pair
    assert ours._encode_bytes(data) == theirs._encode_bytes(data)
    if data:      # tiktoken panics on an empty piece; bpe gives []
        assert ours._encode_single_piece(data) == theirs._encode_single_piece(data)
    else:
        assert ours._encode_single_piece(data) == []


@settings(max_examples=150, deadline=None)
@given(text=text_strategy)
def test_decoding_equals_tiktoken(pair, text):
    ours, theirs = pair
    ids = theirs.encode(text, disallowed_special=())
    assert ours.decode_bytes(ids) == theirs.decode_bytes(ids)
    for errors in ("replace", "strict", "ignore"):
        assert outcome(ours.decode, ids, errors=errors) == outcome(theirs.decode, ids, errors=errors)
    assert ours.decode_tokens_bytes(ids) == theirs.decode_tokens_bytes(ids)
    assert outcome(ours.decode_with_offsets, ids) == outcome(theirs.decode_with_offsets, ids)
    assert ours.decode_batch([ids, ids[:2]]) == theirs.decode_batch([ids, ids[:2]])
    assert ours.decode_bytes_batch([ids, ids[:1]]) == theirs.decode_bytes_batch([ids, ids[:1]])
    assert outcome(ours._encode_only_native_bpe, text) == outcome(theirs._encode_only_native_bpe, text)


def test_single_tokens_and_unknown_ids(pair):
    ours, theirs = pair
    for token in ["hello", b" world", "<|endoftext|>", b"\xff", "not one token at all"]:
        assert outcome(ours.encode_single_token, token) == outcome(theirs.encode_single_token, token)
    for token_id in [0, 300, ours.eot_token, ours.max_token_value]:
        assert ours.decode_single_token_bytes(token_id) == theirs.decode_single_token_bytes(token_id)
    assert outcome(ours.decode_single_token_bytes, ours.n_vocab + 5)[0] is KeyError
    assert outcome(ours.decode_bytes, [1, ours.n_vocab + 5]) == outcome(theirs.decode_bytes, [1, ours.n_vocab + 5])


def test_disallowed_special_error_is_tiktokens():
    ours, theirs = bpe.get_encoding("cl100k_base"), get_encoding("cl100k_base")
    text = "prompt <|endoftext|> injected"
    assert outcome(ours.encode, text) == outcome(theirs.encode, text)
    assert "special_tokens_set" in outcome(ours.encode, text)[1]


def test_custom_encodings_build_and_pickle():
    base = get_encoding("cl100k_base")
    kwargs = dict(pat_str=base._pat_str, mergeable_ranks=base._mergeable_ranks,
                  special_tokens={**base._special_tokens, "<|im_start|>": 100264, "<|im_end|>": 100265})
    import tiktoken
    theirs = tiktoken.Encoding("cl100k_im", **kwargs)
    ours = bpe.Encoding("cl100k_im", **kwargs)
    text = "<|im_start|>user\nhello<|im_end|>"
    assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
    clone = pickle.loads(pickle.dumps(ours))
    assert clone.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
    assert clone.name == "cl100k_im" and clone._special_tokens == ours._special_tokens
    shipped = pickle.loads(pickle.dumps(bpe.get_encoding("o200k_base")))
    assert len(pickle.dumps(bpe.get_encoding("o200k_base"))) < 200     # a shipped one pickles as its name
    assert len(pickle.dumps(ours)) > 100_000                              # a custom one as its ranks
    assert shipped.encode("hello") == get_encoding("o200k_base").encode("hello")
    with pytest.raises(ValueError, match="explicit_n_vocab=5"):
        bpe.Encoding("x", explicit_n_vocab=5, **kwargs)


def test_models_map_to_encodings():
    import tiktoken

    for model in ["gpt-4o", "gpt-4", "gpt-3.5-turbo-0125", "text-embedding-3-small", "gpt2",
                  "gpt-4o-2024-05-13", "ft:gpt-4o:org", "davinci", "o3-mini-high"]:
        assert bpe.encoding_name_for_model(model) == tiktoken.encoding_name_for_model(model)
        assert bpe.encoding_for_model(model).encode("hello world") == \
            get_encoding(tiktoken.encoding_name_for_model(model)).encode("hello world")
    with pytest.raises(KeyError, match="Could not automatically map no-such-model"):
        bpe.encoding_for_model("no-such-model")
    for model in ["text-davinci-003", "text-davinci-edit-001", "gpt-oss-120b"]:     # every one ships
        assert bpe.encoding_for_model(model).name == tiktoken.encoding_name_for_model(model)


def test_import_bpe_as_tiktoken_runs_tiktoken_code():
    import bpe as tiktoken

    enc = tiktoken.get_encoding("cl100k_base")
    assert enc.decode(enc.encode("hello world")) == "hello world"
    assert tiktoken.encoding_for_model("gpt-4").name == "cl100k_base"
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode("<|endoftext|>")
    assert enc.encode("<|endoftext|>", allowed_special={"<|endoftext|>"}) == [enc.eot_token]
    assert len(enc.encode_batch(["a", "b c"])) == 2
