"""Encoding: exactly tiktoken's ids, exactly bpe.pure's, and the API around them."""
import contextlib
import dataclasses
import os
import pickle
import subprocess
import sys

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import bpe
import bpe.workers
import bpe.encoder
from bpe import _scanner, pure
from bpe._session import Session
from bpe._testing import tuned
from bpe.encoder import Encoder, EncoderOptions
from bpe.flat import flatten

from conftest import SHAKESPEARE, on_miss_path, random_corpus, sessions_of, small_short_caches
from test_native_pretok import PIECES, simd
from tiktoken_reference import get_encoding

NAMES = ["gpt2", "cl100k_base", "o200k_base"]
SPECIALS = ["<|endoftext|>", "<|endofprompt|>", "<|fim_prefix|>"]
stress_text = st.lists(st.sampled_from(PIECES + SPECIALS + [" hello", "world", "123"]),
                       max_size=40).map("".join)


@pytest.fixture(scope="module", params=NAMES)
def pair(request):
    return bpe.load(request.param), get_encoding(request.param)


@settings(max_examples=300, deadline=None)
@given(text=stress_text)
def test_matches_tiktoken_on_stress_text(pair, text):
    tok, reference = pair
    assert tok.encode(text) == reference.encode(text, allowed_special="all")
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)


@settings(max_examples=100, deadline=None)
@given(text=stress_text, copies=st.sampled_from([1, 2000]))
def test_a_long_text_takes_the_array_path_and_matches_tiktoken(pair, text, copies):
    # encode builds a document's list in one kernel call, a longer text's from
    # an array: both paths, forced either way (by the threshold, and by length).
    tok, reference = pair
    text = text * copies
    expected = reference.encode(text, allowed_special="all")
    tok.encoder                                  # and its ShortCalls
    for one_call_chars in (0, bpe.encoder.ONE_CALL_CHARS):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(bpe.encoder, "ONE_CALL_CHARS", one_call_chars)
            patch.setattr(tok._short, "longest", min(tok._short.longest, max(one_call_chars, 1024)))
            assert tok.encode(text) == expected
            assert tok.encode(text, allowed_special=set()) == reference.encode_ordinary(text)


# tiktoken's Rust regex carries older Unicode tables than the `regex` module, whose
# classes bpe follows (see docs/algorithm.md): compare on code points assigned in
# Unicode 14 (Python's unicodedata), and pin the known divergence below.
assigned_text = st.text(alphabet=st.characters(blacklist_categories=("Cn",)), max_size=80)


@settings(max_examples=200, deadline=None)
@given(text=assigned_text)
def test_matches_tiktoken_on_any_text(pair, text):
    tok, reference = pair
    assert tok.encode(text) == reference.encode(text, allowed_special="all")


@pytest.mark.parametrize("text", ["\U000323b0:A", "\U00012550:L", "x\u0558y 1\U00011de0 2"])
def test_code_points_assigned_after_unicode_16_are_split_as_tiktoken_does(text):
    # U+323B0 (CJK Extension J) and U+0558 are letters, U+12550 and U+11DE0
    # numbers, to a regex of Unicode 17 or later, and unassigned to tiktoken's
    # engine: every path of bpe (native scanners, bpe.pure, a custom pattern)
    # splits them as tiktoken does, whatever regex is installed.
    from bpe import pure

    tok, reference = bpe.load("o200k_base"), get_encoding("o200k_base")
    assert tok.encode(text) == reference.encode(text)
    custom = bpe.Tokenizer.from_tiktoken(bpe.pretrained.rank_file("o200k_base"), pattern="(?:" + bpe.PATTERNS["o200k"] + ")")
    assert custom.encode(text) == reference.encode(text)
    assert bpe.pretokenize(text, "o200k") == pure.pretokenize(text, "o200k")


def test_matches_tiktoken_on_a_whole_file(pair):
    tok, reference = pair
    text = open(SHAKESPEARE, encoding="utf-8").read()
    assert np.array_equal(tok.encode_to_numpy(text), reference.encode_to_numpy(text))


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80))
def test_decode_inverts_encode(text):
    tok = bpe.load("o200k_base")
    assert tok.decode(tok.encode(text)) == text


def test_lone_surrogates_become_replacement_characters():
    tok = bpe.load("gpt2")
    assert tok.decode(tok.encode("a\ud800b")) == "a\ufffdb"


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", None, r"\w+|\W+"], ids=str)
@pytest.mark.parametrize("seed", range(3))
def test_trained_tokenizer_matches_pure(pattern, seed):
    corpus = random_corpus(seed, special="<|endoftext|>")
    tok = bpe.train_from_iterator([corpus], 256 + 1 + 150, ["<|endoftext|>"], pattern=pattern,
                                  num_workers=1)
    for text in (corpus, random_corpus(seed + 100, n_words=100, special="<|endoftext|>")):
        expected = pure.encode(text, tok.vocab, tok.merges, tok.special_tokens, pattern)
        assert tok.encode(text) == expected
        assert tok.decode(expected) == text


def test_priority_not_left_to_right():
    # (b, c) was learned before (a, b): "abc" must merge b+c first.
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256], vocab[257] = b"bc", b"ab"
    tok = bpe.Tokenizer(vocab, [(b"b", b"c"), (b"a", b"b")], pattern=None)
    assert tok.encode("abc") == [ord("a"), 256]
    assert tok.encode("abab") == [257, 257]


def test_a_million_byte_pretoken():
    tok = bpe.load("gpt2")
    ids = tok.encode("a" * 1_000_000)
    assert tok.decode(ids) == "a" * 1_000_000
    assert ids == get_encoding("gpt2").encode("a" * 1_000_000)


def test_special_token_policies():
    tok = bpe.load("cl100k_base")
    text = "x<|endoftext|>y<|fim_prefix|>"
    assert tok.encode(text)[1] == 100257 and tok.encode(text)[-1] == 100258
    ordinary = tok.encode(text, allowed_special=set())
    assert 100257 not in ordinary and tok.decode(ordinary) == text
    with pytest.raises(ValueError, match="disallowed special token '<\\|fim_prefix\\|>'"):
        tok.encode(text, allowed_special={"<|endoftext|>"}, disallowed_special="all")
    assert tok.encode(text, allowed_special={"<|endoftext|>"})[-1] != 100258


def test_longest_special_token_first():
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256], vocab[257] = b"<s>", b"<s><s>"
    tok = bpe.Tokenizer(vocab, [], {"<s>": 256, "<s><s>": 257})
    assert tok.encode("<s><s><s>") == [257, 256]


def test_numpy_dtypes_and_count():
    gpt2, o200k = bpe.load("gpt2"), bpe.load("o200k_base")
    assert gpt2.encode_to_numpy("hello").dtype == np.uint16
    assert o200k.encode_to_numpy("hello").dtype == np.uint32
    with pytest.raises(ValueError, match="cannot hold token id 200018"):
        o200k.encode_to_numpy("hello", dtype=np.uint16)
    assert o200k.count("hello world<|endoftext|>") == 3


def test_decode_unknown_id_names_it():
    with pytest.raises(ValueError, match="token id 999999 is not in the vocab"):
        bpe.load("gpt2").decode([15496, 999999])


def test_batch_threads_and_pickle():
    tok = bpe.load("gpt2")
    texts = [random_corpus(seed, n_words=200) for seed in range(8)]
    assert tok.encode_batch(texts, num_threads=2) == [tok.encode(t) for t in texts]
    for threads in (0, -1, 1.5, True):                 # as num_workers is, everywhere
        with pytest.raises(ValueError, match=f"num_threads must be a positive int or None, got {threads!r}"):
            tok.encode_batch(texts, num_threads=threads)
        with pytest.raises(ValueError, match="num_threads must be a positive int"):
            tok.decode_batch([[1], [2]], num_threads=threads)
    clone = pickle.loads(pickle.dumps(tok))
    assert clone == tok and clone.encode(texts[0]) == tok.encode(texts[0])


def test_batches_grow_with_the_input_and_keep_texts_whole(monkeypatch):
    # encode_batch's batches are as large as leave each thread eight, within
    # BATCH_CHARS..MAX_BATCH_CHARS; a text is never split, and the lists come
    # back in order however the texts were grouped.
    from bpe.workers import BATCH_CHARS, MAX_BATCH_CHARS, batch_chars, batches

    assert batch_chars(1000, 2) == BATCH_CHARS
    assert batch_chars(16 * BATCH_CHARS * 3, 2) == 3 * BATCH_CHARS
    assert batch_chars(10 ** 9, 2) == MAX_BATCH_CHARS
    texts = [random_corpus(seed, n_words=int(seed % 7) * 40) for seed in range(60)]
    for chars in (1, 500, 10 ** 9):
        groups = batches(texts, chars)
        assert [text for group in groups for text in group] == texts
        assert all(sum(map(len, group)) >= chars for group in groups[:-1])
        assert all(sum(map(len, group[:-1])) < chars for group in groups)
    tok = bpe.load("gpt2")
    expected = [tok.encode(t) for t in texts]
    for smallest in (1, 500, 10 ** 9):         # one text per batch, a few, all in one
        monkeypatch.setattr(bpe.workers, "BATCH_CHARS", smallest)
        monkeypatch.setattr(bpe.workers, "MAX_BATCH_CHARS", smallest)
        assert tok.encode_batch(texts, num_threads=2) == expected


def test_map_on_threads_runs_on_the_caller_too_and_raises_the_first_failure_in_order():
    import threading
    import time

    from bpe.workers import map_on_threads

    seen = set()

    def square(k):
        seen.add(threading.get_ident())
        time.sleep(0.002)              # long enough that the helper takes some items
        return k * k

    assert map_on_threads(square, list(range(40)), 2) == [k * k for k in range(40)]
    assert threading.get_ident() in seen and len(seen) == 2
    assert map_on_threads(square, [], 2) == [] and map_on_threads(square, [3], 4) == [9]

    def fail_from_five(k):
        time.sleep(0.001 * (10 - k) if k < 10 else 0)     # later items tend to fail first
        if k >= 5:
            raise ValueError(f"item {k}")
        return k

    for workers in (1, 2, 3):
        with pytest.raises(ValueError, match="^item 5$"):
            map_on_threads(fail_from_five, list(range(12)), workers)


def test_encode_batch_refuses_the_first_text_in_order_with_a_disallowed_special(monkeypatch):
    tok = bpe.load("cl100k_base")
    texts = [random_corpus(seed, n_words=50) for seed in range(40)]
    texts[17] += "<|fim_prefix|>"
    texts[33] += "<|endoftext|>"
    monkeypatch.setattr(bpe.workers, "BATCH_CHARS", 500)       # a few texts a batch
    monkeypatch.setattr(bpe.workers, "MAX_BATCH_CHARS", 500)
    for threads in (1, 2):
        with pytest.raises(ValueError, match="'<\\|fim_prefix\\|>'"):
            tok.encode_batch(texts, num_threads=threads, allowed_special=set(), disallowed_special="all")


def test_ranks_give_back_merges():
    # cl100k ships ranks only: the derived merges rebuild every token in order.
    tok = bpe.load("cl100k_base")
    assert len(tok.merges) == 100256 - 256
    assert all(tok.vocab[256 + k] == a + b for k, (a, b) in enumerate(tok.merges[:1000]))


@pytest.mark.parametrize("seed", [0, 1])
def test_merges_from_ranks_equal_the_trained_merges(seed):
    # A trained tokenizer's vocab alone (ids in merge order) gives back its merges,
    # through split_ranked, which merges token k as pure.encode_piece does with
    # only the merges before it.
    tok = bpe.train_from_iterator([random_corpus(seed, n_words=4000)], 256 + 400, num_workers=1)
    again = bpe.Tokenizer(tok.vocab, None, pattern=tok.pattern)
    assert again.merges == tok.merges
    assert again.encode(random_corpus(seed + 7, n_words=300)) == tok.encode(random_corpus(seed + 7, n_words=300))
    tokens = [a + b for a, b in tok.merges]
    tokens[5], tokens[9] = tokens[9], tokens[5]          # out of rank order: token 5 comes out whole
    parts, n_parts = tok.encoder.split_ranked(*flatten(tokens))
    ids = {token: token_id for token_id, token in tok.vocab.items()}
    for k, token in enumerate(tokens):
        expected = [ids[part] for part in pure.encode_piece(token, {a + b: r for r, (a, b)
                                                                     in enumerate(tok.merges[:k])})]
        assert n_parts[k] == len(expected)
        assert parts[k].tolist() == (expected + [-1])[:2]


def test_a_rank_that_is_no_merge_encodes_and_has_no_merges_list():
    vocab = {b: bytes([b]) for b in range(256)}
    vocab.update({256: b"ab", 257: b"abc", 258: b"xyz"})   # xyz: no pair of earlier tokens
    tok = bpe.Tokenizer(vocab, None)
    assert tok.encode("xyz xyzw abc") == [258, 32, 120, 121, 122, 119, 32, 257]
    with pytest.raises(ValueError, match=r"token 258 b'xyz' is no merge of two tokens ranked before it"):
        tok.merges


@settings(max_examples=100, deadline=None)
@given(text=stress_text, cuts=st.lists(st.integers(0, 200), max_size=8))
def test_encode_iterable_equals_encode_of_the_join(pair, text, cuts):
    tok, _ = pair
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    items = [text[a:b] for a, b in zip(bounds, bounds[1:])]
    assert list(tok.encode_iterable(items, flush_chars=4)) == tok.encode(text)


@pytest.mark.parametrize("pattern", ["gpt2", None])
def test_encode_iterable_with_special_tokens_across_items(pattern):
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256], vocab[257] = b"<|endoftext|>", b"<|endoftext|><|endoftext|>"
    tok = bpe.Tokenizer(vocab, [], {"<|endoftext|>": 256, "<|endoftext|><|endoftext|>": 257},
                        pattern=pattern)
    text = ("word one two<|endoftext|><|endoftext|>three four\nfive<|endoftext|>six " * 40)
    for step in (1, 3, 7, 50):
        items = [text[i:i + step] for i in range(0, len(text), step)]
        assert list(tok.encode_iterable(items, flush_chars=16)) == tok.encode(text)


def test_encode_iterable_memory_is_bounded(tmp_path):
    import tracemalloc

    tok = bpe.load("gpt2")
    path = tmp_path / "five_mb.txt"
    shakespeare = open(SHAKESPEARE, encoding="utf-8").read()
    path.write_text(shakespeare * 5, encoding="utf-8")          # 5.6 MB
    tok.encode("warm up the kernel and its session")
    tracemalloc.start()
    with open(path, encoding="utf-8") as lines:
        n_tokens = sum(1 for _ in tok.encode_iterable(lines))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 3 * 2**20, f"peak {peak / 2**20:.1f} MiB of Python allocations"
    with open(path, encoding="utf-8") as f:
        assert n_tokens == len(tok.encode_to_numpy(f.read()))


def test_clear_cache_makes_the_next_call_start_cold():
    # Pre-tokens stay cached across calls; after clear_cache a call sees only its own.
    shakespeare = open(SHAKESPEARE, encoding="utf-8").read()
    first, second = shakespeare[:30_000], shakespeare[-30_000:]

    def cached_after(tok, text):
        ids = tok.encode(text)
        return ids, sum(session.cached_pieces for session in tok.encoder._idle_sessions) + tok._short.cached_pieces

    def fresh():   # bpe.load shares one instance (and a pickled copy shares its encoder)
        gpt2 = bpe.load("gpt2")
        return bpe.Tokenizer(gpt2.vocab, gpt2.merges, gpt2.special_tokens, pattern=gpt2.pattern)

    fresh_ids, fresh_cached = cached_after(fresh(), second)
    tok = fresh()
    _, first_cached = cached_after(tok, first)
    _, both_cached = cached_after(tok, second)
    assert both_cached > max(first_cached, fresh_cached)      # the cache outlived the first call
    tok.clear_cache()
    assert cached_after(tok, second) == (fresh_ids, fresh_cached)
    fresh().clear_cache()                                      # before any encoding: nothing to drop


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_child_forked_while_another_thread_holds_a_lock_encodes():
    # The child has only the forking thread: the encoder's lock, held by
    # another thread at that moment, is made afresh in it (a held copy hung
    # its first clear_cache); so are the modules' locks (tiktoken's registry,
    # the scanner's tables), and the lock a tokenizer builds its encoder under.
    import threading
    import time

    from bpe import _scanner
    from bpe.tiktoken import registry

    tok = bpe.load("gpt2")
    text = random_corpus(4, n_words=2000)
    expected = tok.encode(text)
    unbuilt = bpe.tokenizer._load_pretrained.__wrapped__("gpt2")      # its encoder not built yet
    assert unbuilt._encoder is None
    holding, release = threading.Event(), threading.Event()

    def hold():
        with tok.encoder._lock, bpe.tokenizer._ENCODERS._lock, bpe.sentencepiece._UNPICKLED._lock, \
                unbuilt._encoder_lock, registry._lock, _scanner._tables_lock:
            holding.set()
            release.wait()

    thread = threading.Thread(target=hold)
    thread.start()
    holding.wait()
    try:
        pid = os.fork()
        if pid == 0:                                   # the child: a verdict, never an exception
            try:
                tok.clear_cache()
                ok = tok.encode(text) == expected and pickle.loads(pickle.dumps(tok)).encode("hi") == [5303] \
                    and unbuilt.encode(text) == expected \
                    and all(lock.acquire(timeout=10) for lock in (registry._lock, _scanner._tables_lock))
            except BaseException:
                ok = False
            os._exit(0 if ok else 3)
        deadline = time.monotonic() + 60
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        if done[0] == 0:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        assert done[0] == pid and os.WEXITSTATUS(done[1]) == 0, "the child hung or encoded wrongly"
    finally:
        release.set()
        thread.join()


def test_the_fork_safe_locks_of_dropped_tokenizers_are_forgotten():
    import gc

    from bpe.workers import _IN_CHILD

    made = [bpe.tokenizer._load_pretrained.__wrapped__("gpt2") for _ in range(3)]
    keys = [id(tok) for tok in made]
    assert all(_IN_CHILD[key][0]() is tok for key, tok in zip(keys, made))
    del made
    gc.collect()
    assert all(key not in _IN_CHILD or _IN_CHILD[key][0]() is not None for key in keys)


_regex_twins = {}


def regex_path_twin(tok):
    """The same tokenizer with its pattern wrapped in "(?:...)": same regex, regex path."""
    if tok.pattern not in _regex_twins:
        _regex_twins[tok.pattern] = bpe.Tokenizer(tok.vocab, tok.merges, tok.special_tokens,
                                                  pattern="(?:" + bpe.PATTERNS[tok.pattern] + ")")
    return _regex_twins[tok.pattern]


@settings(max_examples=100, deadline=None)
@given(text=stress_text)
def test_native_scanner_and_regex_path_encode_alike(pair, text):
    # "(?:...)" is the same regex but not recognised as built-in: the regex path.
    tok, _ = pair
    via_regex = regex_path_twin(tok)
    assert via_regex.pattern not in bpe.PATTERNS
    assert via_regex.encode(text) == tok.encode(text)
    assert via_regex.encode_ordinary(text) == tok.encode_ordinary(text)
    assert via_regex.encode_batch([text, text[::-1]]) == tok.encode_batch([text, text[::-1]])


def test_encode_batch_never_matches_a_special_token_across_two_texts():
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256], vocab[257] = b"<s>", b"aa"
    tok = bpe.Tokenizer(vocab, [(b"a", b"a")], {"<s>": 256}, pattern=None)
    texts = ["x<", "s>y", "<s", ">", "a<s>", "<s><s", ">z"]
    assert tok.encode_batch(texts, num_threads=1) == [tok.encode(t) for t in texts]
    assert tok.encode_batch(texts * 50, num_threads=2) == [tok.encode(t) for t in texts * 50]


def byte_tokenizer(special_tokens=()) -> bpe.Tokenizer:
    """No merges, no pre-tokenizer: the ids of a text are its UTF-8 bytes, so the
    tests below see exactly which bytes the kernel read and where it found
    special tokens."""
    vocab = {i: bytes([i]) for i in range(256)}
    specials = {token: 256 + k for k, token in enumerate(special_tokens)}
    vocab.update({token_id: token.encode() for token, token_id in specials.items()})
    return bpe.Tokenizer(vocab, [], specials, pattern=None)


# Every storage a str can have: ASCII, Latin-1, two and four bytes a code point,
# lone and paired surrogates in any order.
any_code_points = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                                                 blacklist_categories=()), max_size=30)
str_kinds = st.one_of(any_code_points, st.text(alphabet="ab \x7f\x80\xe9\xff", max_size=30),
                      st.text(alphabet="a\u0100\ud800\udc00\ud83d\ude00\U0001f600", max_size=30))


# A str's UTF-8 is written 16 code units at a time with AVX-512 where the
# path is AVX-512's, else a character at a time but for blocks of ASCII.
TRANSCODERS = [path for path in ("avx512", "scalar") if path in _scanner.simd_paths()]


def test_a_str_is_written_wide_where_the_path_is_avx512():
    if "avx512" not in _scanner.simd_paths():
        pytest.skip("needs a CPU with AVX-512 (F, BW, VBMI, VBMI2)")
    with simd("avx512"):
        assert _scanner.writes_utf8_wide()
    with simd("scalar"):
        assert not _scanner.writes_utf8_wide()


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(str_kinds, max_size=6))
def test_the_kernel_reads_any_str_as_utf8_with_surrogates_replaced(texts):
    from bpe.encoder import utf8

    tok = byte_tokenizer()
    for path in TRANSCODERS:
        with simd(path):
            assert [bytes(ids) for ids in tok.encode_batch(texts, num_threads=1)] == [utf8(t) for t in texts]
            for text in texts:
                assert bytes(tok.encode_to_numpy(text, dtype=np.uint8)) == utf8(text)


# Characters of every width side by side, so that blocks of 16 code units mix
# them, with surrogates (lone and paired) anywhere among them; and texts of
# them one after another in a batch, each written after the one before.
mixed_widths = st.lists(st.sampled_from(["a", " ", "\x7f", "\x80", "\xe9", "\xff", "\u0100", "\u07ff", "\u0800",
                                         "\u4e2d", "\ud7ff", "\ue000", "\uffff", "\U00010000", "\U0001f600",
                                         "\U0010ffff", "\ud800", "\udbff", "\udc00", "\udfff", "\ud83d\ude00"]),
                        max_size=100).map("".join)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(mixed_widths, min_size=1, max_size=4))
def test_blocks_of_every_width_are_read_as_utf8(texts):
    from bpe.encoder import utf8

    tok = byte_tokenizer()
    widened = [t + last for t in texts for last in ("", "\xe9", "\u0100", "\U0001f600")]
    for path in TRANSCODERS:
        with simd(path):
            assert [bytes(ids) for ids in tok.encode_batch(widened, num_threads=1)] == [utf8(t) for t in widened]
            for text in widened:
                assert bytes(tok.encode_to_numpy(text, dtype=np.uint8)) == utf8(text)


# ASCII runs of any length between other characters, in each storage: the
# transcoder copies ASCII 16 code units at a time, so runs must end at every
# place in a block and next to every kind of character.
ascii_runs = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x7F), max_size=40)
mixed_runs = st.lists(st.tuples(ascii_runs, st.sampled_from(["", "\x80", "\xff", "\u0100", "\u20ac",
                                                             "\ud800", "\udc00", "\ud83d\ude00",
                                                             "\U0001f600", "\U0010ffff"])),
                      max_size=8).map(lambda runs: "".join(run + other for run, other in runs))


@settings(max_examples=300, deadline=None)
@given(text=mixed_runs)
def test_long_ascii_runs_in_every_storage_are_read_as_utf8(text):
    from bpe.encoder import utf8

    tok = byte_tokenizer()
    for path in TRANSCODERS:
        with simd(path):
            for widened in (text, text + "\xe9", text + "\u0100", text + "\U0001f600"):
                # the last character sets the storage the whole str is kept in
                assert bytes(tok.encode_to_numpy(widened, dtype=np.uint8)) == utf8(widened)


def test_str_subclasses_and_non_str_inputs():
    # A str subclass keeps its characters apart from the object (not "compact"):
    # the kernel must read them there too.
    class Text(str):
        pass

    tok = bpe.load("gpt2")
    for text in ["hello world", "café 日本 😀", "a\ud800b", ""]:
        assert tok.encode(Text(text)) == tok.encode(text)
        assert tok.encode_batch([Text(text), text], num_threads=1) == [tok.encode(text)] * 2
    with pytest.raises(TypeError, match="text 1 is bytes, not str"):
        tok.encode_batch(["ok", b"bytes"], num_threads=1)


def expected_with_specials(text: str, specials: list[str]) -> list[int]:
    """The ids under ``byte_tokenizer(specials)``, from ``split_special`` (the rule's
    Python definition, not the kernel's memmem search)."""
    from bpe.specials import split_special

    ids = []
    for segment, special in split_special(text, specials):
        ids += list(segment.encode())
        if special is not None:
            ids.append(256 + specials.index(special))
    return ids


OVERLAPPING = ["<s>", "<s><s>", "s>", "<s", "<", "ss"]


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.text(alphabet="<s>a", max_size=20), max_size=5),
       specials=st.lists(st.sampled_from(OVERLAPPING), min_size=1, max_size=4, unique=True))
def test_special_tokens_are_found_leftmost_then_longest(texts, specials):
    tok = byte_tokenizer(specials)
    expected = [expected_with_specials(text, specials) for text in texts]
    assert [tok.encode(text) for text in texts] == expected
    assert tok.encode_batch(texts, num_threads=1) == expected
    encoding = tok.encoder
    for text, ids in zip(texts, expected):
        assert encoding.encode_utf8(text.encode(), sorted(specials)).tolist() == ids


def test_threads_searching_for_other_special_tokens_meanwhile():
    # The kernel keeps the special tokens it last prepared for a search and
    # lends them to each call: threads that alternate between sets (many
    # tokens, indexed by first bytes, and few) each find their own.
    import threading

    from bpe.specials import split_special

    many = [f"<{chr(97 + k % 26)}{k}>" for k in range(40)] + ["|x|", "é!"]
    encoding = byte_tokenizer(many).encoder
    text = "".join(f"a<{chr(97 + k % 26)}{k}>b|x|é!<q" for k in range(0, 40, 3)) * 20
    sets = [sorted(many), ["|x|"], many[:20], []]
    expected = []
    for chosen in sets:
        ids = []
        for segment, special in split_special(text, chosen):
            ids += list(segment.encode()) + ([256 + many.index(special)] if special is not None else [])
        expected.append(ids)
    failures = []

    def run(offset):
        for round_ in range(200):
            k = (round_ + offset) % len(sets)
            if encoding.encode_utf8(text.encode(), sets[k]).tolist() != expected[k]:
                failures.append(k)

    threads = [threading.Thread(target=run, args=(offset,)) for offset in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures and len(set(map(len, expected))) == len(sets)


@pytest.mark.parametrize("name", ["gpt2", "o200k_base"])
def test_encoding_into_a_reused_buffer_equals_a_fresh_array(name):
    encoding = bpe.load(name).encoder
    texts = [open(SHAKESPEARE, "rb").read()[:50_000], "<|endoftext|>x<|endoftext|>".encode(), b"",
             "日本語 👍 ok".encode()]
    out = np.full(60_000, 7, dtype=np.uint32)
    for text in texts:
        fresh = encoding.encode_utf8(text, ["<|endoftext|>"])
        into = encoding.encode_utf8(memoryview(text), ["<|endoftext|>"], out)
        assert np.shares_memory(into, out) or len(into) == 0
        assert np.array_equal(into, fresh)
    # Room for one id per byte (no id covers less), or an error before any work.
    two_specials = "<|endoftext|><|endoftext|>".encode()
    assert len(encoding.encode_utf8(two_specials, ["<|endoftext|>"], out[:26])) == 2
    with pytest.raises(ValueError, match="out holds 25 ids; these texts may need 26"):
        encoding.encode_utf8(two_specials, ["<|endoftext|>"], out[:25])


@pytest.mark.parametrize("immortal", [True, False], ids=["immortal ints", "counted ints"])
@pytest.mark.parametrize("one_call_chars", [0, bpe.encoder.ONE_CALL_CHARS])
def test_lists_hold_one_reference_per_id(monkeypatch, one_call_chars, immortal):
    # Lists are built from prebuilt ints (_lists.PrebuiltInts). Counted ones:
    # ids_to_lists adds each distinct id's references in one step and fills the
    # lists without the GIL, so refcounts must balance exactly. Its counts are
    # zeroed whole for calls of many ids (the batch, with the long text) and
    # only where used for calls of few (each short text, after calls that
    # left other counts in the memory it reuses). Immortal ones: no list
    # counts its references, so the counts stay put while lists are built and
    # fall by one for each reference a list lets go of, from a start no
    # program can bring to zero. With one_call_chars 0 (and no short calls),
    # encode takes ids_to_lists for every text; else its one-call path
    # (_lists.ids_list), through ShortCalls for the short texts.
    import gc
    import sys

    from bpe._lists import PrebuiltInts

    monkeypatch.setattr(bpe.encoder, "ONE_CALL_CHARS", one_call_chars)
    tok = bpe.load("gpt2")
    tok.encoder                       # built first: building it sets the prebuilt ints
    monkeypatch.setattr(tok, "_ints", PrebuiltInts(tok.n_vocab, immortal))   # the loaded tokenizer is shared
    monkeypatch.setattr(tok, "_short", tok.encoder.short_calls(tok._ints) if one_call_chars else None)
    assert tok._ints.immortal == (immortal and sys.version_info < (3, 12))
    texts = [" hello world" * 50, "", " unique tokens: supercalifragilistic", " world hello" * 7,
             " hello unique world" * 3000]
    assert len(tok.encode(texts[-1])) >= tok.n_vocab // 8 > len(tok.encode(texts[0]))
    watched = sorted({i for ids in (tok.encode(t) for t in texts) for i in ids if i > 256})
    first = tok.encode(texts[0])      # made before counting: a list freed meanwhile would show
    before = [sys.getrefcount(tok._ints.objects[i]) for i in watched]
    lists = tok.encode_batch(texts, num_threads=2) + [tok.encode(t) for t in texts]
    assert all(ids is not None and all(type(i) is int for i in ids) for ids in lists)
    uses = [sum(ids.count(i) for ids in lists) for i in watched]
    during = [sys.getrefcount(tok._ints.objects[i]) for i in watched]
    if tok._ints.immortal:
        assert during == before
        assert min(before) > 2 ** 61
    else:
        assert [d - b for d, b in zip(during, before)] == uses
    # Lists of ints cannot form cycles: the collector does not walk them (see ids_to_lists).
    assert not any(gc.is_tracked(ids) for ids in lists)
    gc.collect()
    assert lists[0] == first
    del lists
    after = [sys.getrefcount(tok._ints.objects[i]) for i in watched]
    if tok._ints.immortal:
        assert [b - a for b, a in zip(before, after)] == uses
    else:
        assert after == before


def test_immortal_ints_are_made_once_and_outlive_their_tokenizer():
    import gc
    import sys

    from bpe._lists import PrebuiltInts

    small, large = PrebuiltInts(1000), PrebuiltInts(70_000)
    assert [type(i) is int and i == k for k, i in enumerate(large.objects)] == [True] * 70_000
    assert len(small) == 1000 and len(large) == 70_000
    if not large.immortal:
        pytest.skip("ints are counted on this Python")
    # One object per value, whichever table asked first, shared by every tokenizer.
    assert all(a is b for a, b in zip(small.objects, large.objects))
    assert PrebuiltInts(50_000).objects[49_999] is large.objects[49_999]
    assert PrebuiltInts(0).objects == ()
    with pytest.raises(ValueError, match="-1 ints asked for"):
        PrebuiltInts(-1)
    tok = bpe.load("gpt2")
    text = " a text whose lists outlive the tokenizer that made them" * 20
    lists = tok.encode_batch([text, text]) + [tok.encode(text)]
    expected = get_encoding("gpt2").encode(text)
    high = max(expected)
    del tok
    gc.collect()
    churn = [list(range(100_000, 200_000)) for _ in range(3)]   # reuse of freed memory would show
    assert lists == [expected] * 3 and sys.getrefcount(lists[0][expected.index(high)]) > 2 ** 61
    del churn


_piece_tokenizer = []


def piece_tokenizer():
    if not _piece_tokenizer:
        text = random_corpus(31, n_words=4000, unicode=False).replace(" ", "")   # long runs, many merges
        _piece_tokenizer.append(bpe.train_from_iterator([text], 256 + 400, pattern=None, num_workers=1))
    return _piece_tokenizer[0]


@settings(max_examples=300, deadline=None)
@given(piece=st.text(alphabet="abc12!.'s", min_size=1, max_size=80).map(str.encode))
def test_short_and_long_pieces_merge_by_the_same_rule(piece):
    # Pieces of up to 32 bytes merge by a scan of a short array, longer ones
    # by a scan of their parts' ranks, and those of more than 256 parts with
    # a heap: lengths on both sides of each threshold, against bpe.pure.
    from bpe._encode import MERGE_SCANNED_PARTS, MERGE_SHORT_PIECE

    tok = piece_tokenizer()
    ranks = {left + right: rank for rank, (left, right) in enumerate(tok.merges)}
    for length in (len(piece), 3 * len(piece), MERGE_SHORT_PIECE + 1, MERGE_SCANNED_PARTS, MERGE_SCANNED_PARTS + 1,
                   MERGE_SCANNED_PARTS + 3 * len(piece)):
        tok.clear_cache()
        text = (piece * (length // len(piece) + 1))[:length]
        assert tok.encode_piece(text) == [tok.token_id(p) for p in pure.encode_piece(text, ranks)], len(text)


@pytest.mark.parametrize("when", ["batched", "one by one"])
@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.text(alphabet="abcXYZ019!?.é'", min_size=1, max_size=20), min_size=1, max_size=30))
def test_short_pieces_from_the_cache_equal_fresh_ones(pair, when, words):
    # Pre-tokens of up to 15 bytes and 4 ids are cached with their ids inline, the
    # others in the general cache: each word twice in one call (a miss, then a
    # hit), then the whole text again in a second call (all hits).
    tok, reference = pair
    text = " ".join(words + words)
    expected = reference.encode_ordinary(text)
    tok = on_miss_path(tok, when)
    tok.clear_cache()
    assert tok.encode_ordinary(text) == expected
    assert tok.encode_ordinary(text) == expected


@settings(max_examples=150, deadline=None)
@given(words=st.lists(st.text(alphabet="abcqxzXYZ019!?.é' \t\n", min_size=1, max_size=18),
                      min_size=1, max_size=200))
def test_misses_merged_side_by_side_equal_misses_merged_one_by_one(pair, words):
    # A cold batch's new short pre-tokens are merged up to 16 at a time, side
    # by side, and cached before the batch is looked up; the same text with
    # every miss merged as it comes must give the same ids, and tiktoken's.
    # Words repeat (a pre-token twice in one group), and there are tokens,
    # pre-tokens of more than four ids, runs of spaces, and more new ones in
    # a batch than a group holds.
    tok, reference = pair
    text = " ".join(words + words[::3])
    expected = reference.encode_ordinary(text)
    for when in ("batched", "one by one"):
        on_path = on_miss_path(tok, when)
        on_path.clear_cache()
        assert on_path.encode_ordinary(text) == expected, when
        assert on_path.encode_ordinary(text) == expected, when


def test_a_batch_of_new_pre_tokens_fills_several_groups(pair, miss_path):
    # Cold batches (of 256 pre-tokens), nearly all new: 16 are merged side
    # by side, a place taking the next new one as soon as its own is done, until
    # the last few; each word again later, from the cache.
    tok, reference = pair
    tok = on_miss_path(tok, miss_path)
    rng = np.random.default_rng(17)
    words = [" " + "".join(rng.choice(list("bcdfghjklmnpqrstvwxz"), size=int(rng.integers(2, 15))))
             for _ in range(1000)]
    text = "".join(words) + "".join(words[::-1])
    tok.clear_cache()
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)


def test_long_pre_tokens_met_again_give_what_they_gave_when_new(miss_path):
    # A pre-token longer than a short key (16 to 256 bytes) is looked up in the
    # session's general cache before the token table, and the cache keeps a
    # token's id as well as merged ids, hashed a word at a time. Met again, in
    # the same call or the next, each must give its ids from when it was new.
    # Here long tokens are ones no merge makes, so a merge cached in their
    # place would show; the others differ from them in their first or last
    # word only, at lengths on every side of a word's edge, and some are too
    # long to cache (over 256 bytes). Those of "é" too (a cold batch asks
    # whether a new long one of several-byte characters is a token before it
    # merges it side by side), each cut after a whole character.
    vocab = {i: bytes([i]) for i in range(256)}
    vocab[256], vocab[257] = b"ab", b"abab"
    merges = [(b"a", b"b"), (b"ab", b"ab")]
    rng = np.random.default_rng(5)
    pieces = []
    for letters in ([b"a", b"b"], [b"a", "é".encode()]):
        for length in [16, 17, 23, 24, 25, 31, 32, 33, 40, 64, 100, 255, 256, 257, 300]:
            body = b" " + b"".join(rng.choice(letters, size=length - 1).tolist())
            body = body[:length].decode(errors="ignore").encode()
            vocab[len(vocab)] = body
            pieces += [body, body[:-1] + b"c", b" c" + body[2:]]     # a body is " " then letters
    pieces = [p for p in pieces if p.decode(errors="ignore").encode() == p]
    tok = bpe.Tokenizer(vocab, merges, pattern="gpt2")
    text = "".join(p.decode() for p in pieces + pieces[::-1])
    expected = pure.encode(text, vocab, merges, {}, "gpt2")
    assert expected.count(len(vocab) - 1) == 2          # the longest token, twice
    assert all(expected.count(i) == 2 for i in range(258, len(vocab)))
    tok.clear_cache()
    assert tok.encode(text) == expected                  # new, then met again in the call
    assert tok.encode(text) == expected                  # every one met again
    assert [tok.encode(p.decode()) for p in pieces] == [pure.encode(p.decode(), vocab, merges, {}, "gpt2")
                                                        for p in pieces]


def test_a_cold_batch_puts_its_misses_ids_in_among_its_hits(pair):
    # Every batch cold: a batch's hits are copied as the pass meets them, and
    # its misses' ids go in among them afterwards (``_encode_cold``). Misses
    # of every kind (new short words, words of five or more ids, pieces longer
    # than a short key, one-byte pre-tokens) between hits, each in its place.
    # A text of one-byte pre-tokens leaves its last batches too little room
    # for the hits' four-lane copies: there the misses are merged one by one.
    tok, reference = pair
    rng = np.random.default_rng(23)
    letters = list("bcdfghjklmnpqrstvwxz")
    pieces = []
    for i in range(3000):
        kind = i % 6
        if kind == 0:
            pieces.append(" " + "".join(rng.choice(letters, size=int(rng.integers(2, 15)))))
        elif kind == 1:
            pieces.append(" " + "".join(rng.choice(list("qxzjkvwyQXZ"), size=12)))
        elif kind == 2:
            pieces.append(" " + "".join(rng.choice(letters, size=int(rng.integers(16, 40)))))
        elif kind == 3:
            pieces.append(str(rng.choice(list("!?;:"))) + "\n")
        else:
            pieces.append(str(rng.choice([" the", " and", " of", ",", " to"])))
    text = "".join(pieces)
    one_byte = "".join(str(letter) + "\n" for letter in rng.choice(letters, size=3000))
    tok = on_miss_path(tok, "batched")
    for sample in (text, one_byte):
        tok.clear_cache()
        assert tok.encode_ordinary(sample) == reference.encode_ordinary(sample)
        assert tok.encode_ordinary(sample) == reference.encode_ordinary(sample)
    tok.clear_cache()
    assert tok.encode_batch([text, one_byte, text], num_threads=1) == \
        [reference.encode_ordinary(t) for t in (text, one_byte, text)]


def test_an_encoder_s_options_name_a_bad_setting():
    arrays = bpe.load("gpt2").encoder._arrays
    for bad in (-2, 1.5, "0"):
        with pytest.raises(ValueError, match="group_after_misses must be an int"):
            Encoder(arrays, "gpt2", {}, options=EncoderOptions(group_after_misses=bad))
    for bad in (-1, 1.5, "0"):
        with pytest.raises(ValueError, match="l2_cache_bytes must be an int"):
            Encoder(arrays, "gpt2", {}, options=EncoderOptions(l2_cache_bytes=bad))
    for sizes in ((16, 1000), (3, 4), (64, 32), (1, 2)):
        with pytest.raises(ValueError, match="powers of two"):
            EncoderOptions(short_cache_slots=sizes[0], short_cache_max_slots=sizes[1])
    with pytest.raises(ValueError, match="merged_ids_by_offset must be a bool"):
        EncoderOptions(merged_ids_by_offset=1)
    with pytest.raises(ValueError, match="document_calls must be a bool"):
        EncoderOptions(document_calls=1)


def test_an_encoder_s_options_travel_with_its_pickle():
    # A tokenizer unpickled in a worker encodes as it did where it was made:
    # with its encoder's options, not the defaults (nor those of another
    # encoder of the same vocabulary the worker unpickled before).
    plain = bpe.load("gpt2")
    tok = tuned(plain, group_after_misses=0, short_cache_slots=16, short_cache_max_slots=64)
    assert tok.encoder.options != plain.encoder.options
    first, second = pickle.loads(pickle.dumps(plain)), pickle.loads(pickle.dumps(tok))
    assert first.encoder.options == plain.encoder.options and second.encoder.options == tok.encoder.options
    assert second.encoder._kernel.merges_side_by_side
    assert second.encode("hello  world") == plain.encode("hello  world")


def test_a_kernel_merges_side_by_side_unless_its_pair_table_fits_in_l2():
    # Left to the kernel (the default), a cold batch's new pre-tokens are merged
    # side by side where the pair table is larger than a core's L2 cache or the
    # L2's size is unknown, one by one where it fits. gpt2's table is 2 MiB:
    # built as if on machines of each kind, exact on each.
    tok = bpe.load("gpt2")
    reference = get_encoding("gpt2")
    rng = np.random.default_rng(29)
    text = "".join(" " + "".join(rng.choice(list("bcdfghjklmnpqrstvwxz"), size=int(rng.integers(2, 15))))
                   for _ in range(2000)) + open(SHAKESPEARE, encoding="utf-8").read()[:20_000]
    layout, _, slots = tok.encoder._kernel.pair_table
    assert layout == "packed"
    table_bytes = 8 * slots
    assert tok.encoder.options.group_after_misses is None and tok.encoder.options.l2_cache_bytes is None
    for l2, side_by_side in ((0, True), (table_bytes // 2, True), (table_bytes, False), (1 << 40, False)):
        encoder = Encoder(tok.encoder._arrays, tok.pattern, {}, options=EncoderOptions(l2_cache_bytes=l2))
        assert encoder._kernel.merges_side_by_side == side_by_side, l2
        assert encoder.encode_strs([text], [])[0].tolist() == reference.encode_ordinary(text), l2


def test_pre_tokens_of_every_length_around_the_short_keys_limit(pair, miss_path):
    # Keys of up to 15 bytes go to the short cache (the length in the key), 16
    # and more to the general path. Each length is seen as a miss then a hit in
    # one call, hits again in the next; inside a long text (keys loaded 16 bytes
    # at once and masked) and as a whole text (near its end: copied byte by byte).
    tok, reference = pair
    tok = on_miss_path(tok, miss_path)
    rng = np.random.default_rng(7)
    words = []
    for length in range(1, 41):
        for alphabet in ("abcdefghij", "!?.-+*", "0123456789"):
            words.append(" " + "".join(rng.choice(list(alphabet), size=length)))
    text = "".join(words) * 2
    tok.clear_cache()
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)
    assert tok.encode_batch(words) == [reference.encode_ordinary(word) for word in words]


def test_short_pre_tokens_of_one_to_six_ids_from_the_cache(pair, miss_path):
    # An entry holds up to four ids, the lanes after them marked as no id; five
    # and more go to the general cache. Pre-tokens of each count from 1 to 6,
    # a miss then a hit in one call, then all hits in the next.
    tok, reference = pair
    tok = on_miss_path(tok, miss_path)
    rng = np.random.default_rng(11)
    by_count = {}
    while len(by_count) < 6 or min(len(words) for words in by_count.values()) < 20:
        word = " " + "".join(rng.choice(list("qxzjkvwyQXZ"), size=int(rng.integers(1, 15))))
        count = len(reference.encode_ordinary(word))
        if count <= 6 and len(by_count.setdefault(count, [])) < 20:
            by_count[count].append(word)
    assert sorted(by_count) == [1, 2, 3, 4, 5, 6]
    text = "".join(word for words in by_count.values() for word in words) * 2
    tok.clear_cache()
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)


def test_short_pre_tokens_whose_ids_end_in_a_run_from_the_cache(pair, miss_path):
    # gpt2 has no token for two spaces: an indent is a newline and one id per
    # space, kept in the short cache as a run (up to two ids, then one id
    # repeated). Every prefix and run length around the entry's four lanes and
    # the 15-byte key limit, with pieces of more ids that are no run between
    # them; a miss then a hit in one call, then all hits in the next.
    tok, reference = pair
    tok = on_miss_path(tok, miss_path)
    pieces = [head + char * k for head in ("", "\n", "\n\n", "\r\n", "x\n") for char in (" ", "\t")
              for k in range(1, 15) if len(head) + k <= 15]
    pieces += [" qxzjkvwyQ", " zqxjkvwzq"]                 # more than four ids, and no run
    text = "".join(piece + "a" for piece in pieces)
    if reference.name == "gpt2":                          # the runs are there to be kept
        assert reference.encode_ordinary("\n" + " " * 8) == [198] + [220] * 8
    tok.clear_cache()
    assert tok.encode_ordinary(text + text) == reference.encode_ordinary(text + text)
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)
    assert tok.encode_batch([text, text[::-1], text], num_threads=1) == \
        [reference.encode_ordinary(t) for t in (text, text[::-1], text)]


def test_short_pre_tokens_of_five_ids_outlive_either_cache_starting_afresh(miss_path):
    # A short pre-token of more than four ids leaves a marker in the short cache
    # and its ids in the general one. Each cache starts afresh at its budget on
    # its own (2^18 general entries; here 2^11 short ones, the short cache made
    # small): the marker may outlive the ids (it says where they were, in
    # which era of the general cache), and the ids the marker. Either way the
    # ids must stay right.
    tok = small_short_caches(on_miss_path(bpe.load("gpt2"), miss_path), 1 << 10, 1 << 12)
    reference = get_encoding("gpt2")
    check_five_id_pieces_across_restarts(tok, reference)
    tok.clear_cache()


def check_five_id_pieces_across_restarts(tok, reference):
    rng = np.random.default_rng(13)
    many = []
    while len(many) < 50:
        word = " " + "".join(rng.choice(list("qxzjkvwyQXZ"), size=int(rng.integers(8, 15))))
        if len(reference.encode_ordinary(word)) > 4:
            many.append(word)
    text = "".join(many)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    long_words = {"".join(rng.choice(letters, size=16)) for _ in range((1 << 18) + 5000)}
    short_words = {"".join(rng.choice(letters, size=int(rng.integers(6, 10)))) for _ in range(20_000)}
    assert len(long_words) > 1 << 18 and len(short_words) > 1 << 11
    tok.clear_cache()
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)        # markers made
    flood = " " + " ".join(sorted(long_words))                                 # the general cache restarts
    assert tok.encode_ordinary(flood) == reference.encode_ordinary(flood)
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)        # markers of the old era
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)        # pointed anew
    flood = " " + " ".join(sorted(short_words))                                # the short cache restarts
    assert tok.encode_ordinary(flood) == reference.encode_ordinary(flood)
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)
    assert tok.encode_ordinary(text) == reference.encode_ordinary(text)


def test_the_short_cache_grows_past_its_first_budget(pair):
    # More distinct short pre-tokens than the short cache's first table holds
    # (2^17): it doubles, and keeps giving the right ids, then and after.
    tok, reference = pair
    rng = np.random.default_rng(5)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = {"".join(rng.choice(letters, size=int(rng.integers(6, 10)))) for _ in range(150_000)}
    assert len(words) > 1 << 17
    text = " " + " ".join(sorted(words))
    expected = reference.encode_ordinary(text)
    tok.clear_cache()
    assert tok.encode_ordinary(text) == expected
    assert max(session.short_cache_slots for session in sessions_of(tok)) == 1 << 19
    assert tok.encode_ordinary(text[: len(text) // 3]) == reference.encode_ordinary(text[: len(text) // 3])


def test_the_short_cache_grows_then_starts_afresh(pair, miss_path):
    # Made small, the short cache grows within one text (between batches of
    # pre-tokens, to hold as many entries as a batch could add, or to its
    # largest size), then starts afresh at its largest size, again and again, in that call
    # and the next ones. The ids stay right throughout.
    tok, reference = pair
    rng = np.random.default_rng(8)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = ["".join(rng.choice(letters, size=int(rng.integers(2, 9)))) for _ in range(4000)]
    assert len(set(words)) > 1024 // 2                     # more than the largest table holds
    text = " " + " ".join(words)
    expected = reference.encode_ordinary(text)
    tok = small_short_caches(on_miss_path(tok, miss_path), 16, 1024)
    tok.clear_cache()
    assert tok.encode_ordinary(text) == expected
    assert tok.encoder._idle_sessions[0].short_cache_slots == 1024
    assert tok.encode_ordinary(text) == expected
    assert tok.encode_batch([text[:3001], text, text[3001:]], num_threads=1) == \
        [reference.encode_ordinary(t) for t in (text[:3001], text, text[3001:])]
    tok.clear_cache()


def varied_pieces(reference, seed):
    """Short pre-tokens of one to six ids, runs of one id, and longer ones, in
    random order: every kind of entry the short cache holds, and more."""
    rng = np.random.default_rng(seed)
    pieces = [" " + "".join(rng.choice(list("qxzjkvwyQXZ"), size=int(rng.integers(1, 15))))
              for _ in range(300)]
    pieces += ["\n" + " " * k for k in range(1, 15)] + [" " + "ab" * k for k in range(4, 12)]
    assert max(len(reference.encode_ordinary(piece)) for piece in pieces) > 4
    rng.shuffle(pieces)
    return pieces


def encode_with(tok, session, text):
    """``tok.encode_ordinary(text)`` in ``session``: the pool lends the session
    put in last."""
    tok.encoder._idle_sessions.append(session)
    try:
        return tok.encode_ordinary(text)
    finally:
        tok.encoder._idle_sessions.remove(session)


def test_sessions_sharing_a_short_cache_find_what_the_other_cached(pair, miss_path):
    # Two sessions in turn, in one sharing block: each finds the other's
    # entries (ids inline, runs) and passes by its markers (five ids or
    # more: their places are in the other session's general cache), asking
    # its own general cache instead. Each text is new to the first session
    # and to the shared cache, then met by the other, then by both again.
    tok, reference = pair
    tok = on_miss_path(tok, miss_path)
    pieces = varied_pieces(reference, 21)
    texts = ["".join(pieces[k::3]) for k in range(3)]
    first, second = Session(), Session()
    with tok.encoder.sharing_cache():
        for text in texts:
            expected = reference.encode_ordinary(text)
            assert encode_with(tok, first, text) == expected
            assert encode_with(tok, second, text) == expected
            assert encode_with(tok, second, text) == expected
            assert encode_with(tok, first, text) == expected
    assert tok.encoder._shared_cache.entries > len(set(pieces)) // 2
    assert not first.sharing and not second.sharing
    assert first.short_cache_slots == 0        # it only ever shared: it never made its own
    tok.clear_cache()


@pytest.mark.parametrize("sizes", [None, (16, 1 << 12)], ids=["default sizes", "small: it fills"])
def test_threads_sharing_a_short_cache_get_the_ids_of_one_thread(pair, sizes):
    # Two threads encode at once into one shared cache: each takes empty slots
    # the other may be taking, and finds entries the other is writing. Made
    # small, the shared cache nears its budget within the texts and each
    # session goes back to its own cache mid-call (made then), which in turn
    # grows and starts afresh.
    tok, reference = pair
    pieces = varied_pieces(reference, 22)
    rng = np.random.default_rng(23)
    letters = np.array(list("abcdefghijklmnop"))
    words = [" " + "".join(rng.choice(letters, size=int(rng.integers(2, 8)))) for _ in range(6000)]
    texts = ["".join(rng.choice(pieces + words, size=800)) for _ in range(24)]
    expected = [reference.encode_ordinary(text) for text in texts]
    tok = small_short_caches(tok, *sizes) if sizes else tok
    tok.clear_cache()
    for _ in range(2):
        with tok.encoder.sharing_cache():
            assert tok.encode_batch(texts, num_threads=2) == expected
    shared = tok.encoder._shared_cache
    assert shared.entries > 0 and (sizes is None or shared.slots == sizes[1])
    if sizes:
        assert any(session.short_cache_slots > 0 for session in tok.encoder._idle_sessions)
    assert not any(session.sharing for session in tok.encoder._idle_sessions)
    tok.clear_cache()


def test_a_store_that_lost_its_slot_to_another_session():
    # Between a session's probe, which found an empty slot, and its store,
    # another session took that slot: for another pre-token (the store goes
    # on to the next empty slot) or for the same one (nothing is stored: the
    # other's entry serves). Forced here; threads meet it only by chance.
    from bpe._session import SharedCache, store_after_a_race

    shared = SharedCache()
    assert store_after_a_race(shared, b" cat", 7, b" dog", 8) == (True, 7, 1)
    assert store_after_a_race(shared, b" emu", 9, b" emu", 10) == (False, 10, 0)
    assert shared.entries == 3
    with pytest.raises(ValueError, match="in the cache already"):
        store_after_a_race(shared, b" cat", 7, b" dog", 8)


def test_the_shared_cache_starts_afresh_when_crowded_and_none_shares_it():
    # Kept from block to block (as sessions keep theirs), it starts afresh in a
    # new block once crowded (three quarters of its budget), unless a session
    # still shares it.
    tok, reference = bpe.load("gpt2"), get_encoding("gpt2")
    rng = np.random.default_rng(24)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    text = " " + " ".join("".join(rng.choice(letters, size=6)) for _ in range(3000))
    expected = reference.encode_ordinary(text)
    tok = small_short_caches(tok, 16, 1 << 12)
    with tok.encoder.sharing_cache():
        assert tok.encode_ordinary(text) == expected
    shared = tok.encoder._shared_cache
    assert shared.crowded()
    with contextlib.ExitStack() as lease_out:
        with tok.encoder.sharing_cache():
            session = lease_out.enter_context(tok.encoder._session())
            assert session.sharing
        entries = shared.entries
        with tok.encoder.sharing_cache():   # crowded, but a session shares it
            assert shared.entries == entries
    assert not session.sharing
    with tok.encoder.sharing_cache():       # crowded, and none shares it
        assert tok.encoder._shared_cache is shared and shared.entries == 0
        assert tok.encode_ordinary(text) == expected
    tok.clear_cache()
    assert tok.encoder._shared_cache is None


def long_pieces(seed, count):
    """Pre-tokens too long for a short cache (16 to 40 letters, a space first),
    each met twice or more in a text of them: the general cache's pieces."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return [" " + "".join(rng.choice(letters, size=int(rng.integers(16, 41)))) for _ in range(count)]


def test_sessions_sharing_a_general_cache_find_what_the_other_merged(pair, miss_path):
    # Two sessions in turn, in one sharing block: the first merges long
    # pre-tokens, and short ones of five ids or more (spilled: the shared
    # short cache holds its marker), into its own general cache and the
    # shared one; the second, its own general cache empty, finds every one
    # in the shared one (``test_a_session_takes_the_ids_the_shared_general_cache_holds``
    # forces that path).
    tok, reference = pair
    tok = on_miss_path(tok, miss_path)
    pieces = long_pieces(31, 200) + varied_pieces(reference, 32)
    rng = np.random.default_rng(33)
    text = "".join(rng.choice(pieces, size=1200))
    expected = reference.encode_ordinary(text)
    first, second = Session(), Session()
    tok.clear_cache()
    with tok.encoder.sharing_cache():
        shared = tok.encoder._shared_cache
        assert encode_with(tok, first, text) == expected
        held = shared.general_entries
        assert held >= 200
        assert encode_with(tok, second, text) == expected
        assert shared.general_entries == held
        assert encode_with(tok, second, text) == expected
    assert not first.sharing_general and not second.sharing_general      # each call's lease ended it
    assert second.cached_pieces >= 200        # it copied what it found into its own
    tok.clear_cache()


def test_a_session_takes_the_ids_the_shared_general_cache_holds():
    # Forced: ids put in the shared general cache are what a sharing session
    # writes for a pre-token its own caches lack: a long one; and a short one
    # of more ids than fit inline, whose marker in the shared short cache is
    # another session's (the other merged it, the shared ids already there,
    # and kept its own ids in its own general cache). A session that does
    # not share merges both.
    tok = bpe.load("gpt2")
    long, short = " " + "unbelievable" * 2, " qxzjkvwy"
    merged_long, merged_short = tok.encode_ordinary(long), tok.encode_ordinary(short)
    assert len(set(merged_short)) == len(merged_short) > 4     # neither inline nor a run
    first, second = Session(), Session()
    tok.clear_cache()
    with tok.encoder.sharing_cache():
        shared = tok.encoder._shared_cache
        assert shared.store_general(long.encode(), [7, 8, 9])
        assert shared.store_general(short.encode(), [1, 2, 3, 4, 5])
        assert encode_with(tok, first, "a" + long) == tok.encode_ordinary("a") + [7, 8, 9]
        assert encode_with(tok, first, "a" + short) == tok.encode_ordinary("a") + merged_short
        assert encode_with(tok, second, "a" + short) == tok.encode_ordinary("a") + [1, 2, 3, 4, 5]
    tok.clear_cache()
    assert tok.encode_ordinary("a" + long + short) == tok.encode_ordinary("a") + merged_long + merged_short


@pytest.mark.parametrize("general", [None, (64, 2048)], ids=["default sizes", "small: it fills"])
def test_threads_sharing_a_general_cache_get_the_ids_of_one_thread(pair, general):
    # Two threads encode at once, each storing what the other may be storing
    # (the same key into one slot: one is kept) and finding entries the other
    # has just published. Made small, the shared general cache reaches its
    # budget (slots, then bytes) within the texts and takes nothing more: the
    # sessions keep the rest in their own.
    from bpe._session import SharedCache

    tok, reference = pair
    long = long_pieces(34, 3000)
    pieces = long + varied_pieces(reference, 35)
    rng = np.random.default_rng(36)
    texts = ["".join(rng.choice(pieces, size=600)) for _ in range(24)]
    expected = [reference.encode_ordinary(text) for text in texts]
    tok.clear_cache()
    if general:
        tok.encoder._shared_cache = SharedCache(general_slots=general[0], general_bytes=general[1])
    for _ in range(2):
        with tok.encoder.sharing_cache():
            assert tok.encode_batch(texts, num_threads=2) == expected
    shared = tok.encoder._shared_cache
    if general:
        assert 0 < shared.general_entries <= general[0] // 2 and shared.crowded()
    else:       # each long one once, and short ones of five ids or more
        assert len(set(long)) <= shared.general_entries <= len(set(pieces))
    tok.clear_cache()


def test_the_shared_general_cache_keeps_one_entry_a_key_within_its_budget():
    from bpe._session import SharedCache

    shared = SharedCache(general_slots=8, general_bytes=1024)
    keys = [b" " + bytes([ord("a") + k]) * (16 + k) for k in range(5)]
    assert shared.find_general(keys[0]) is None
    for k, key in enumerate(keys[:4]):          # 8 slots: homes shared, probes go on
        assert shared.store_general(key, list(range(k, k + 3 + k)))
        assert shared.store_general(keys[0], [99])     # there already (even at its budget): kept as it was
    assert shared.general_entries == 4
    assert [shared.find_general(key) for key in keys[:4]] == [list(range(k, k + 3 + k)) for k in range(4)]
    assert not shared.store_general(keys[4], [1])      # half the slots: its budget
    assert shared.find_general(keys[4]) is None and shared.crowded()
    shared.clear()
    assert shared.general_entries == 0 and shared.find_general(keys[0]) is None and not shared.crowded()
    small = SharedCache(general_slots=64, general_bytes=64)     # room for one entry of these
    assert small.store_general(keys[0], [1, 2, 3])
    assert not small.store_general(keys[1], [1])
    assert small.find_general(keys[0]) == [1, 2, 3] and small.find_general(keys[1]) is None
    with pytest.raises(ValueError, match="power of two"):
        SharedCache(general_slots=100)


def test_the_kernel_finds_ranked_tokens_by_sparse_ids_too(miss_path):
    # Building a kernel finds each ranked token by its id: through a lookup table
    # when ids are dense (every tokenizer's), else by a search. Both must agree.
    from bpe.encoder import Encoder

    tok = bpe.train_from_iterator([random_corpus(5, n_words=2000)], 256 + 200, num_workers=1)
    text = random_corpus(6, n_words=300)
    expected = tok.encoder.encode_strs([text], [])[0].astype(np.int64)
    arrays = tok.encoder._arrays
    # Pair ranks pack ids below 2^21 into one word ("packed"); larger ids keep
    # the pair map ("wide"). Both must agree too.
    for scale, layout in ((3, "packed"), (100_000, "wide")):   # ids up to ~1 400, up to ~46 million
        scaled = {name: (array * scale).astype(np.int32) if name in ("byte_ids", "token_ids", "ranked_ids")
                  else array for name, array in arrays.items()}
        encoder = Encoder(scaled, tok.pattern, {})
        assert encoder._kernel.pair_table[0] == layout
        assert encoder._kernel.merged_ids == "table"       # ids three or more apart: not by offset
        ids = encoder.encode_strs([text], [])[0]
        assert np.array_equal(ids, expected * scale)


@pytest.mark.parametrize("by_offset", [True, False], ids=["offset", "table"])
def test_a_merge_finds_its_token_by_offset_or_by_table_alike(by_offset, miss_path):
    # Where every merged id follows its rank (GPT-2's, tiktoken's, every trained
    # vocabulary) a merge's token is its rank plus an offset; elsewhere it is
    # read from a table. Each way forced on the same vocabularies, ids must
    # equal tiktoken's (new pre-tokens of every length: merged on each path).
    rng = np.random.default_rng(5)
    words = [" " + "".join(rng.choice(list("aeioubcdfghlmnrst"), size=int(rng.integers(2, 40))))
             for _ in range(600)]
    text = "".join(words) + open(SHAKESPEARE, encoding="utf-8").read()[:20_000]
    for name in ("gpt2", "o200k_base"):
        tok = bpe.load(name)
        options = dataclasses.replace(Encoder.default_options, merged_ids_by_offset=by_offset)
        encoder = Encoder(tok.encoder._arrays, tok.pattern, {}, options=options)
        assert encoder._kernel.merged_ids == ("offset" if by_offset else "table")
        assert encoder.encode_strs([text], [])[0].tolist() == get_encoding(name).encode_ordinary(text)
    # 256 bytes, a special, then one token per merge: in order, by default.
    trained = bpe.train_from_iterator([random_corpus(3, special="<|endoftext|>")], 256 + 1 + 100,
                                      ["<|endoftext|>"], num_workers=1)
    assert trained.encoder._kernel.merged_ids == "offset"


def test_pairs_past_the_expected_number_grow_the_table():
    # The pair table is sized for two pairs per merge; tokens of two letters
    # split in more ways than that, so entering them grows it. Then every
    # pair must still be found: encodings against bpe.pure.
    rng = np.random.default_rng(1)
    tok = bpe.train_from_iterator(["".join(rng.choice(list("ab"), size=20_000))], 256 + 256,
                                  pattern=None, num_workers=1)
    layout, n_pairs, _ = tok.encoder._kernel.pair_table
    assert layout == "packed" and n_pairs > 2 * len(tok.merges)
    ranks = {left + right: rank for rank, (left, right) in enumerate(tok.merges)}
    for length in (2, 7, 31, 33, 200):
        piece = "".join(rng.choice(list("ab"), size=length)).encode()
        assert tok.encode_piece(piece) == [tok.token_id(part) for part in pure.encode_piece(piece, ranks)]


def test_short_cache_hits_fill_an_output_of_exactly_the_bound(miss_path):
    # A hit stores its four lanes at once when the output has room past them,
    # and only its ids where it has not: an output given as exactly one id per
    # byte, filled by one-id-per-byte pre-tokens to its end, the last of 1 to
    # 5 ids (gpt2 has no token for two tabs, or for a newline and spaces).
    tok = on_miss_path(bpe.load("gpt2"), miss_path)
    reference = get_encoding("gpt2")
    for text in ["a\n" * 40, ("a\nʬ\n" * 20) + "ʬ", ("ʬ\n" * 30) + "ʬʬ", ("a\n" * 20) + "a\n   ",
                 ("a\t" * 20) + "a\t\t\t\t", ("a\t" * 20) + "a\t\t\t\t\t"]:
        data = text.encode()
        expected = reference.encode(text)
        assert len(expected) == len(data), "the output's bound is not reached"
        assert tok.encode(text) == expected
        for _ in range(2):                                   # cold, then every pre-token a hit
            room = np.full(len(data) + 3, 7, dtype=np.uint32)
            ids = tok.encoder.encode_utf8(data, [], room[:len(data)])
            assert ids.tolist() == expected
            assert room[len(data):].tolist() == [7, 7, 7], "wrote past the output"


@pytest.mark.parametrize("name", NAMES)
def test_the_short_token_filter_passes_every_token_and_few_others(name):
    # A new short pre-token asks the short tokens whether it is a token only
    # where their filter says it may be: a token it turned away would be merged
    # from its bytes instead. So every short token must pass; and of random
    # pieces that are no token, most must not (at 16 bits a token, about one
    # in sixteen passes).
    tok = bpe.load(name)
    kernel = tok.encoder._kernel
    specials = {s.encode() for s in tok.special_tokens}
    tokens = {t for t in tok.vocab.values() if 2 <= len(t) <= 15 and t not in specials}
    assert len(tokens) > 40_000
    assert all(kernel.may_be_short_token(t) for t in tokens)
    rng = np.random.default_rng(31)
    others = {bytes(rng.integers(0, 256, size=int(rng.integers(2, 16)), dtype=np.uint8)) for _ in range(20_000)}
    others -= tokens
    passed = sum(kernel.may_be_short_token(t) for t in others)
    assert passed < len(others) / 8
    for bad in (b"a", b"x" * 16):
        with pytest.raises(ValueError, match="a short piece is of 2 to 15 bytes"):
            kernel.may_be_short_token(bad)


# The scanner asks for the text ahead of where it reads (``read_ahead`` in
# bpe/_scanner.pxd), past a text's end too, since a prefetch never faults;
# every read proper must stop at the end. A text that ends where readable
# memory ends (an unreadable page after it) encodes exactly, in a process of
# its own so that a fault fails the test instead of ending the run.
GUARD_PAGE_SCRIPT = r"""
import ctypes, mmap, sys
import numpy as np
import bpe
from bpe._scanner import simd_paths, select_simd
page = mmap.PAGESIZE
block = mmap.mmap(-1, 2 * page)
libc = ctypes.CDLL(None, use_errno=True)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
address = ctypes.addressof(ctypes.c_char.from_buffer(block))
assert libc.mprotect(address + page, page, 0) == 0, ctypes.get_errno()    # PROT_NONE
tails = [b"", b"a", b" hello", b"  \n  ", b"it's", b"don't", b"12345", b"\xc3\xa9t\xc3\xa9",
         b"x" * 70, b" " * 130, "\u4e2d\u6587".encode() * 20, b"abc <|endoftext|>", b"!?" * 40]
for name in sys.argv[1:]:
    tok = bpe.load(name)
    for path in simd_paths():
        select_simd(path)
        for tail in tails:
            for lead in (b"", b"The end: ", b"x" * 200):
                text = lead + tail
                at = page - len(text)
                block[at:page] = text
                view = np.frombuffer(memoryview(block)[at:page], dtype=np.uint8)
                ids = tok.encoder.encode_utf8(view, ["<|endoftext|>"])
                assert ids.tolist() == tok.encode(text.decode()), (name, path, text)
print("ok")
"""


def test_text_that_ends_where_readable_memory_ends_encodes_exactly():
    if sys.platform != "linux":
        pytest.skip("needs mprotect (Linux)")
    done = subprocess.run([sys.executable, "-c", GUARD_PAGE_SCRIPT, *NAMES], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"
