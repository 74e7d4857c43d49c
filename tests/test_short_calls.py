"""One str per call: ``bpe._encode.ShortCalls`` (a short str's or a
document's ids in one C call, for ``encode``, ``encode_ordinary``,
``encode_to_numpy`` and tiktoken's ``Encoding.encode`` with their default
special-token policies) and a document's array (``EncodeKernel.encode_str_to_array``). Each test forces its
path and checks it against the general one and against tiktoken."""
import gc
import os
import sys
import threading

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import bpe
import bpe.tiktoken as front_door
from bpe._encode import SHORT_CALL_CHARS

from conftest import SHAKESPEARE, on_miss_path, small_short_caches
from tiktoken_reference import get_encoding

NAMES = ["gpt2", "cl100k_base", "o200k_base"]
SPECIAL = "<|endoftext|>"
texts = st.lists(st.one_of(st.sampled_from(["<|endoftext|>", "<|endoftext", "'s", " ", "\n", "é", "日本", "👍"]),
                           st.characters(exclude_categories=("Cs",))), max_size=40).map("".join)


def general(tok, text, **policy):
    """The ids by the general path: ``allowed_special`` as a set is not the
    default, so ``encode`` takes it."""
    return tok.encode(text, allowed_special=set(tok.special_tokens) if not policy else policy["allowed"])


def pair_of(name):
    tok = bpe.load(name)
    tok.encode("warm")                              # builds the encoder, and its ShortCalls
    assert tok._short is not None
    return tok, get_encoding(name), front_door.get_encoding(name)


@pytest.fixture(scope="module", params=NAMES)
def pair(request):
    return pair_of(request.param)


@settings(max_examples=300, deadline=None)
@given(text=texts)
def test_short_calls_equal_the_general_path_and_tiktoken(pair, text):
    tok, reference, encoding = pair
    expected = reference.encode(text, allowed_special="all")
    assert tok._short(text) == expected == general(tok, text)
    assert tok.encode(text) == expected
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text) == tok._short(text, False, True)
    array = tok.encode_to_numpy(text)
    assert array.dtype == tok.token_dtype() and array.tolist() == expected
    if SPECIAL in text:
        with pytest.raises(ValueError, match="disallowed special token"):
            encoding.encode(text)
        with pytest.raises(ValueError, match="disallowed special token"):
            encoding.encode_to_numpy(text)
        assert tok._short(text, True) is None
    else:
        assert encoding.encode(text) == reference.encode(text)
        wide = encoding.encode_to_numpy(text)
        assert wide.dtype == np.uint32 and wide.tolist() == reference.encode(text)


@pytest.mark.parametrize("extra", [-1, 0, 1])
@pytest.mark.parametrize("edge", ["short", "longest"])
def test_the_longest_texts_of_each_kind_and_one_past_them(pair, edge, extra):
    # Up to SHORT_CALL_CHARS a call holds the GIL; past it, up to ``longest``
    # (a document), it lets other threads run while it encodes; past that the
    # general path takes the text.
    tok, reference, _ = pair
    size = SHORT_CALL_CHARS if edge == "short" else tok._short.longest
    text = ("ab é 日本 <|endoftext|> " * size)[:size + extra]
    expected = reference.encode(text, allowed_special="all")
    assert (tok._short(text) is None) == (edge == "longest" and extra > 0)
    assert (tok._short.to_array(text, False) is None) == (edge == "longest" and extra > 0)
    assert tok.encode(text) == expected == general(tok, text)
    assert tok.encode_to_numpy(text).tolist() == expected
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)


@pytest.mark.parametrize("document_calls", [True, False])
def test_documents_with_small_caches_by_either_path(miss_path, document_calls):
    # A document whose pre-tokens overflow a small short cache (it grows and
    # starts afresh within the text): through ShortCalls' own session, or the
    # pooled sessions' (document_calls False), each way of merging misses.
    tok, reference, _ = pair_of("gpt2")
    tok = small_short_caches(on_miss_path(tok, miss_path), 16, 1024, document_calls=document_calls)
    rng = np.random.default_rng(3)
    words = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), size=int(rng.integers(2, 9))))
             for _ in range(4000)]
    text = " " + " ".join(words)
    assert SHORT_CALL_CHARS < len(text) <= bpe.encoder.ONE_CALL_CHARS
    tok.clear_cache()
    assert (tok._short(text) is None) == (not document_calls)
    assert tok.encode(text) == reference.encode(text) == tok.encode(text)
    assert tok.encode_to_numpy(text).tolist() == reference.encode(text)
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)


def test_a_document_lets_other_threads_run_and_a_clear_during_it_holds():
    # A document's call releases the GIL: a call made meanwhile finds the
    # session busy and takes the general path, and a clear_cache meanwhile
    # gives the next call a new session while the running one ends on its own.
    tok, reference, _ = pair_of("cl100k_base")
    document = open(SHAKESPEARE, encoding="utf-8").read(tok._short.longest)
    expected = reference.encode(document, allowed_special="all")
    results = short_calls_while(tok, reference, lambda: tok.encode_to_numpy(document).tolist() == expected,
                                clear_every=50)
    assert results and all(results)
    assert tok._short(document) == expected


def short_calls_while(tok, reference, document_right, clear_every: int) -> list:
    """300 short calls, each checked against ``reference``, a clear_cache every
    ``clear_every``, while another thread encodes a document again and again
    (``document_right()``: whether its ids were right); what it returned."""
    results, stop = [], threading.Event()

    def documents():
        while not stop.is_set():
            results.append(document_right())

    thread = threading.Thread(target=documents)
    thread.start()
    try:
        for i in range(300):
            assert tok.encode(f"short {i}") == reference.encode(f"short {i}")
            if i % clear_every == clear_every - 1:
                tok.clear_cache()
    finally:
        stop.set()
        thread.join()
    return results


def test_a_document_too_long_for_the_short_calls_is_encoded_in_their_session():
    # Past ``longest`` a document takes the general path, in the session the
    # ShortCalls lend while idle: it finds the pieces the short documents
    # cached, and caches its own there. While a long one runs on another
    # thread (the session lent), short calls take the general path, in
    # pooled sessions; a clear_cache meanwhile ends the loan with a new
    # session. Each call's ids stay tiktoken's. With document_calls off the
    # ShortCalls lend nothing: documents stay in the pooled sessions.
    tok, reference, _ = pair_of("cl100k_base")
    shakespeare = open(SHAKESPEARE, encoding="utf-8").read()
    long_document = shakespeare[: tok._short.longest + 1000]
    short_document = shakespeare[:2000]
    tok.clear_cache()
    assert tok.encode(short_document) == reference.encode(short_document)
    cached = tok._short.cached_pieces
    assert tok.encode_to_numpy(long_document).tolist() == reference.encode(long_document)
    assert tok._short.cached_pieces > cached and not tok.encoder._idle_sessions
    expected = reference.encode(long_document)
    results = short_calls_while(tok, reference, lambda: tok.encode(long_document) == expected, clear_every=100)
    assert results and all(results)
    assert tok._short(short_document) == reference.encode(short_document)   # not left busy
    # A loan ends by take_back, or by a clear_cache (a loan left open by an
    # interrupt): then the old loan's end frees nothing of the new session's.
    short = tok._short
    old = short.lend()
    assert old is not None and short.lend() is None and short("hi") is None
    tok.clear_cache()
    assert short("hi") == reference.encode("hi")
    assert short.lend() is short.session
    short.take_back(old)
    assert short("hi") is None
    short.take_back(short.session)
    assert short("hi") == reference.encode("hi")
    pooled = small_short_caches(tok, 1 << 10, 1 << 12)
    pooled.encode("warm")
    pooled.clear_cache()
    assert pooled.encode_to_numpy(long_document).tolist() == expected
    assert pooled._short.cached_pieces == 0 and pooled.encoder._idle_sessions


GC_DURING_A_LEASE = r"""
import gc
import bpe
tok = bpe.load("gpt2")
tok.encode("warm")
inner = []

def encode_during_collection(phase, info):
    if phase == "start" and len(inner) < 200:
        inner.append(tok.encode_batch(["inside a collection"], num_threads=1)[0])

gc.callbacks.append(encode_during_collection)
gc.set_threshold(1)
outer = [tok.encode_batch([f"text {i}"], num_threads=1)[0] for i in range(300)]
gc.set_threshold(700)
gc.callbacks.remove(encode_during_collection)
assert inner and all(ids == tok.encode("inside a collection") for ids in inner), inner[:3]
assert outer == [tok.encode(f"text {i}") for i in range(300)]
print("ok")
"""


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="from Python 3.12 on a collection waits for the "
                    "interpreter's next check between bytecodes")
def test_a_collection_while_a_session_is_lent_may_encode():
    # A garbage collection can start at any allocation, and a finalizer may
    # encode with the same encoder: taking a session (an idle ShortCalls',
    # or a pooled one under the encoder's lock) must allocate nothing while
    # it holds the lock, or the inner call waits for ever on it. In a process
    # of its own, so that a hang fails the test instead of the run.
    import subprocess

    done = subprocess.run([sys.executable, "-c", GC_DURING_A_LEASE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.split() == ["ok"], (done.stdout[-2000:], done.stderr[-2000:])


def test_what_is_not_a_str_takes_the_general_path(pair):
    tok = pair[0]

    class Text(str):
        pass

    assert tok._short(b"bytes") is None and tok._short(None) is None
    assert tok.encode(Text("a subclass")) == tok.encode("a subclass")
    with pytest.raises(TypeError):
        tok.encode(b"bytes")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="from Python 3.12 on a collection waits for the "
                    "interpreter's next check between bytecodes, so none starts inside a C call")
def test_a_call_made_while_one_is_running_takes_the_general_path():
    # A garbage collection during a call (the ids' list is being made) runs a
    # callback that encodes with the same tokenizer: the running call holds the
    # session, so the inner one must take the general path, and both be right.
    # With a threshold of 1, a count of 0 (a collection just made) and one
    # tracked object kept before each call, the list the call makes is the
    # allocation that starts a collection.
    tok, reference = bpe.load("gpt2"), get_encoding("gpt2")
    tok.encode("x")
    inner, kept = [], []

    def encode_during_collection(phase, info):
        if phase == "start":
            inner.append((tok._short("inside a collection"), tok.encode("inside a collection")))

    threshold = gc.get_threshold()
    gc.callbacks.append(encode_during_collection)
    gc.set_threshold(1)
    try:
        outer = []
        for i in range(50):
            gc.collect(0)
            kept.append([])
            outer.append(tok.encode(f"text {i} outside"))
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(encode_during_collection)
    assert any(short is None for short, _ in inner), "no call found the session busy"
    assert all(ids == reference.encode("inside a collection") for _, ids in inner)
    assert outer == [reference.encode(f"text {i} outside") for i in range(50)]


def test_threads_share_the_short_calls_and_stay_exact():
    tok, reference = bpe.load("o200k_base"), get_encoding("o200k_base")
    sentences = [f"Thread {i}: naïve café, 日本語 {i * 7} <|endoftext|> it's" for i in range(64)]
    expected = [reference.encode(s, allowed_special="all") for s in sentences]
    failures = []

    def run():
        for _ in range(50):
            if [tok.encode(s) for s in sentences] != expected:
                failures.append(1)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


def test_clear_cache_empties_the_short_calls_session():
    gpt2 = bpe.load("gpt2")
    tok = bpe.Tokenizer(gpt2.vocab, gpt2.merges, gpt2.special_tokens, pattern=gpt2.pattern)
    ids = tok.encode("a short text, cached by its session")
    assert tok._short.cached_pieces > 0
    tok.clear_cache()
    assert tok._short.cached_pieces == 0
    assert tok.encode("a short text, cached by its session") == ids


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_child_forked_during_a_document_s_call_takes_its_short_calls_afresh():
    # A document's call runs without the GIL: a child forked meanwhile copies
    # its ShortCalls busy, with no thread there to end the call. The child
    # starts them afresh (a new session), or every call it makes would take
    # the general path for good.
    import time

    tok, reference, _ = pair_of("gpt2")
    document = open(SHAKESPEARE, encoding="utf-8").read(tok._short.longest)
    stop = threading.Event()

    def documents():
        while not stop.is_set():
            tok.encode(document)

    thread = threading.Thread(target=documents)
    thread.start()
    verdicts = []
    try:
        for _ in range(10):
            time.sleep(0.002)
            pid = os.fork()
            if pid == 0:                                   # the child: a verdict, never an exception
                try:
                    ok = tok._short("hi") == [5303] and tok._short(document) == reference.encode(document) \
                        and tok.encode_ordinary(f"hi{SPECIAL}") == reference.encode_ordinary(f"hi{SPECIAL}")
                except BaseException:
                    ok = False
                os._exit(0 if ok else 3)
            _, status = os.waitpid(pid, 0)
            verdicts.append(os.WEXITSTATUS(status))
    finally:
        stop.set()
        thread.join()
    assert verdicts == [0] * 10


def test_patterns_and_pipelines_the_kernel_cannot_run_alone_have_no_short_calls():
    gpt2 = bpe.load("gpt2")
    custom = bpe.Tokenizer(gpt2.vocab, gpt2.merges, gpt2.special_tokens, pattern=r"\w+|\W")
    assert custom.encode("hello world") == gpt2.encode("hello") + gpt2.encode(" ") + gpt2.encode("world")
    assert custom._short is None


@pytest.mark.parametrize("one_call_chars", [0, 3000])
@pytest.mark.parametrize("length", [10, 2000, 50_000])
def test_encode_to_numpy_of_a_document_in_every_dtype(pair, monkeypatch, one_call_chars, length):
    # A document (past the short calls) is encoded into the session's buffer
    # and copied out at its exact size in the dtype asked for; past
    # ONE_CALL_CHARS (forced low here) it takes the general path. Every dtype
    # and path gives the list's ids.
    tok, reference, _ = pair
    monkeypatch.setattr(bpe.encoder, "ONE_CALL_CHARS", one_call_chars)
    text = (open(SHAKESPEARE, encoding="utf-8").read(length) + " <|endoftext|> naïve 日本")[-length:]
    expected = reference.encode(text, allowed_special="all")
    for dtype in (None, np.uint16, np.uint32, np.int64):
        if dtype is np.uint16 and tok.n_vocab > 2**16:
            continue
        ids = tok.encode_to_numpy(text, dtype=dtype, allowed_special=set(tok.special_tokens))
        assert ids.dtype == tok.token_dtype(dtype) and ids.tolist() == expected, dtype


def test_an_encoder_does_not_keep_the_short_calls_of_tokenizers_gone():
    # Tokenizers unpickled in one process share its encoder (_shared_encoder),
    # each with ShortCalls of its own (and so a session): the encoder holds
    # them to clear and pause them, and must not keep them alive.
    gpt2 = bpe.load("gpt2")
    tok = bpe.Tokenizer(gpt2.vocab, gpt2.merges, gpt2.special_tokens, pattern=gpt2.pattern)
    encoder = tok.encoder
    held = len(encoder._short_calls)
    for _ in range(20):
        short = encoder.short_calls(tok._ints)
        assert short("made and dropped") == tok.encode("made and dropped")
        del short
    gc.collect()
    assert len(encoder._short_calls) == held == 1


@pytest.mark.parametrize("method", ["encode", "encode_to_numpy"])
def test_the_compiled_methods_keep_their_keyword_only_options(pair, method):
    # bpe/_calls.pyx: compiled, they must still be methods with the signature,
    # the refusals and the general path of the Python ones.
    import inspect

    tok, reference, _ = pair
    signature = inspect.signature(getattr(tok, method))
    assert list(signature.parameters)[0] == "text"
    assert all(parameter.kind is inspect.Parameter.KEYWORD_ONLY
               for parameter in list(signature.parameters.values())[1:])
    call = getattr(tok, method)
    with pytest.raises(TypeError):
        call("hi", set())
    with pytest.raises(TypeError):
        call("hi", no_such_option=1)
    with pytest.raises(ValueError, match="disallowed special token"):
        call(f"a{SPECIAL}", allowed_special=set(), disallowed_special="all")
    text = f"x{SPECIAL}y"
    ordinary = reference.encode(text, disallowed_special=())
    options = {"allowed_special": set()} if method == "encode" else {"allowed_special": set(), "dtype": np.int64}
    got = call(text, **options)
    assert (got if method == "encode" else got.tolist()) == ordinary
    assert getattr(bpe.Tokenizer, method)(tok, text, allowed_special=set()).__len__() == len(ordinary)
