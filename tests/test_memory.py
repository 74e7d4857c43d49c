"""Out of memory, and buffers the kernels are handed: a MemoryError or a ValueError,
never a crash, and never a wrong result afterwards.

``bpe._memory.fail_allocation(n)`` makes the n-th kernel allocation from then on
fail (every kernel allocates through that module). Each test runs a whole
operation with the failure injected at every point it allocates (or a spread
of them, where there are thousands) and checks that each run either raises
MemoryError or gives the right answer, and that the objects involved give the
right answer afterwards.
"""
import os
import pickle
import sys

import numpy as np
import pytest

import bpe
from bpe import _memory, _scanner, _train
from bpe._session import Session
from bpe.encoder import Encoder

from conftest import random_corpus, small_short_caches


def with_failure_at(n, function):
    """``function()``'s result, or MemoryError if it raised one; and whether the
    armed failure happened (False: the run made fewer than n allocations)."""
    _memory.fail_allocation(n)
    try:
        result = function()
    except MemoryError:
        result = MemoryError
    finally:
        happened = not _memory.allocation_failure_pending()
        _memory.fail_allocation(0)
    return result, happened


def failure_points(function, dense=300, spread=60):
    """Every n up to ``dense``, then ``spread`` points up to the run's last allocation."""
    n = 1
    while n <= dense:
        yield n
        result, happened = with_failure_at(n, function)
        if not happened:
            return
        n += 1
    total = dense
    while with_failure_at(total, function)[1]:
        total *= 2
    yield from range(dense + 1, total, max(1, (total - dense) // spread))


def test_the_hook_fails_exactly_one_allocation():
    counts = bpe.PretokenCounts.from_mapping({"hello": 3, " world": 2})
    assert with_failure_at(1, lambda: _train.MergeState(counts.data, counts.offsets, counts.counts, 5)) \
        == (MemoryError, True)
    state = _train.MergeState(counts.data, counts.offsets, counts.counts, 5)   # the next one works
    assert state.run(5, 1) == 5


def test_training_fails_cleanly_at_every_allocation():
    counts = bpe.PretokenCounts.from_mapping(
        {piece: 1 + i % 7 for i, piece in enumerate(random_corpus(5, n_words=600).split(" "))}, "gpt2")
    expected = bpe.train_from_counts(counts, 256 + 120).merges
    outcomes = set()
    for n in failure_points(lambda: bpe.train_from_counts(counts, 256 + 120)):
        result, happened = with_failure_at(n, lambda: bpe.train_from_counts(counts, 256 + 120).merges)
        assert result is MemoryError or result == expected, n
        outcomes.add(result is MemoryError)
    assert outcomes == {True, False}      # failures were injected, and runs past the last allocation succeed
    assert bpe.train_from_counts(counts, 256 + 120).merges == expected


def test_counting_fails_cleanly_at_every_allocation():
    text = random_corpus(6, n_words=1500).encode()
    expected = bpe.PretokenCounts.from_mapping(
        {piece.encode(): count for piece, count in
         __import__("collections").Counter(bpe.pretokenize(text.decode())).items()})

    def count():
        interner = _scanner.Interner()
        interner.count(text, _scanner.PATTERN_IDS["gpt2"])
        return bpe.PretokenCounts(*interner.arrays(), "gpt2")

    for n in failure_points(count):
        result, _ = with_failure_at(n, count)
        assert result is MemoryError or result == expected, n


@pytest.mark.parametrize("name, short_cache", [("gpt2", None), ("o200k_base", None), ("gpt2", (16, 256))])
def test_encoding_fails_cleanly_and_sessions_stay_whole(name, short_cache):
    # With a small short cache (slots to start with, at most), it grows and
    # starts afresh within the text: growing, which may fail, is among the
    # allocations (a failed one leaves the cache as it was, to start afresh).
    tok = bpe.load(name)
    if short_cache:
        tok = small_short_caches(tok, *short_cache)
    try:
        check_encoding_fails_cleanly(tok)
        assert short_cache is None or tok.encoder._idle_sessions[0].short_cache_slots == short_cache[1]
    finally:
        tok.clear_cache()


def test_encoding_in_shared_caches_fails_cleanly():
    # Sharing allocates too: the shared caches (without them, sessions keep
    # their own), a session's own short cache when it goes back to it, made
    # small here so that it does within the text (without it, the session
    # goes on in the shared one, which takes no more entries), and the copy
    # a second session keeps of what it finds in the shared general cache:
    # the long words the first merged.
    tok = small_short_caches(bpe.load("gpt2"), 16, 1 << 10)
    rng = np.random.default_rng(9)
    long_words = [" " + "".join(rng.choice(list("abcdefghij"), size=20)) for _ in range(40)]
    text = random_corpus(8, n_words=3000, special="<|endoftext|>") + "".join(long_words)
    texts = [text[i:i + 2000] for i in range(0, len(text), 2000)]
    expected = tok.encode_batch(texts, num_threads=1)

    def encode_sharing():
        tok.clear_cache()
        with tok.encoder.sharing_cache():
            first = tok.encode_batch(texts, num_threads=1)
            tok.encoder._idle_sessions.append(tok.encoder._new_session())   # lent next: its own caches empty
            return first, tok.encode_batch(texts[-2:], num_threads=1)

    try:
        assert encode_sharing() == (expected, expected[-2:])
        assert tok.encoder._shared_cache.general_entries >= len(long_words)
        assert tok.encoder._idle_sessions[0].short_cache_slots > 0      # it went back to its own
        for n in failure_points(encode_sharing, dense=100, spread=30):
            result, _ = with_failure_at(n, encode_sharing)
            assert result is MemoryError or result == (expected, expected[-2:]), n
            with tok.encoder.sharing_cache():
                assert tok.encode_batch(texts, num_threads=1) == expected, n
    finally:
        tok.clear_cache()


def check_encoding_fails_cleanly(tok):
    text = random_corpus(7, n_words=2000, special="<|endoftext|>") + " " + "x" * 3000
    texts = [text[i:i + 700] for i in range(0, len(text), 700)]
    expected, expected_batch = tok.encode(text), tok.encode_batch(texts, num_threads=1)

    def encode_cold():
        tok.clear_cache()            # a fresh session: its own allocations are injected too
        return tok.encode(text)

    for n in failure_points(encode_cold, dense=200, spread=40):
        result, _ = with_failure_at(n, encode_cold)
        assert result is MemoryError or result == expected, n
        # The session that failed went back to the pool, its cache part-filled: it must still be right.
        assert tok.encode(text) == expected
        result, _ = with_failure_at(n, lambda: tok.encode_batch(texts, num_threads=1))
        assert result is MemoryError or result == expected_batch, n
        assert tok.encode_batch(texts, num_threads=1) == expected_batch


@pytest.mark.parametrize("immortal", [True, False], ids=["immortal ints", "counted ints"])
def test_building_lists_fails_cleanly_at_every_allocation(immortal):
    # Each list's item array is allocated unzeroed and the list stays empty
    # until filled (_lists.list_unfilled): a failure part-way through must free
    # the lists made so far without reading their unwritten items, and leave
    # every reference count as it was.
    import sys

    from bpe._lists import PrebuiltInts, ids_to_lists

    ints = PrebuiltInts(1000, immortal)
    ids = np.arange(500, 800, dtype=np.uint32).repeat(3)
    offsets = np.array([0, 0, 100, 400, 401, 900], np.int64)
    expected = [ids[a:b].tolist() for a, b in zip(offsets, offsets[1:])]
    outcomes = set()
    for n in failure_points(lambda: ids_to_lists(ids, offsets, ints)):
        before = [sys.getrefcount(i) for i in ints.objects[500:800]]
        result, _ = with_failure_at(n, lambda: ids_to_lists(ids, offsets, ints))
        assert result is MemoryError or result == expected, n
        outcomes.add(result is MemoryError)
        if result is MemoryError:
            assert [sys.getrefcount(i) for i in ints.objects[500:800]] == before, n
        else:
            # Counted: 3 references each. Immortal: none counted (each list lets go of its 3 later).
            assert [sys.getrefcount(i) for i in ints.objects[500:800]] \
                == [b + (0 if ints.immortal else 3) for b in before], n
        del result
    assert outcomes == {True, False}


def test_building_an_encoder_fails_cleanly():
    tok = bpe.Tokenizer(bpe.load("gpt2").vocab, bpe.load("gpt2").merges[:3000], {"<|endoftext|>": 50256})
    encoder = tok.encoder
    arrays = encoder._arrays

    def build():
        return Encoder(arrays, "gpt2", {"<|endoftext|>": 50256}).encode_strs(["hello world"], [])[0].tolist()

    expected = build()
    for n in failure_points(build, dense=100, spread=30):
        result, _ = with_failure_at(n, build)
        assert result is MemoryError or result == expected, n


@pytest.mark.parametrize("needles", [[b"<|x|>"], [bytes([c]) + b"|>" for c in b"<abcdefghijklmnopq"]])
def test_finding_special_tokens_fails_cleanly(needles):
    # One needle, and enough to be found by an index of first bytes (built per search).
    data = b"a<|x|>b|>" * 5000
    expected = _scanner.find_special_spans(data, needles)
    assert expected
    for n in failure_points(lambda: _scanner.find_special_spans(data, needles)):
        result, _ = with_failure_at(n, lambda: _scanner.find_special_spans(data, needles))
        assert result is MemoryError or result == expected, n


def test_a_merge_state_that_failed_refuses_to_continue():
    counts = bpe.PretokenCounts.from_mapping({piece: 2 for piece in random_corpus(8).split(" ")})
    state = _train.MergeState(counts.data, counts.offsets, counts.counts, 100)
    for n in range(1, 200):
        result, happened = with_failure_at(n, lambda: state.run(100, 1))
        if result is MemoryError:
            with pytest.raises(RuntimeError, match="failed part-way"):
                state.run(1, 1)
            return
    pytest.fail("no allocation failed in the merge loop")


# ------------------------------------------------------------------ buffers handed to kernels

def test_every_kernel_entry_checks_its_offsets():
    data = np.frombuffer(b"abcdef", np.uint8)
    bad = np.array([0, 4, 2, 6], np.int64)           # the ends are right; the middle falls back
    counts = np.ones(3, np.int64)
    with pytest.raises(ValueError, match=r"offset 2 \(2\) is below offset 1 \(4\)"):
        _train.MergeState(data, bad, counts, 1)
    with pytest.raises(ValueError, match=r"offset 2 \(2\) is below offset 1 \(4\)"):
        _scanner.Interner().add_arrays(data, bad, counts)
    encoder = bpe.load("gpt2").encoder
    with pytest.raises(ValueError, match=r"offset 2 \(2\) is below offset 1 \(4\)"):
        encoder._kernel.split_ranked(data, bad)
    with pytest.raises(ValueError, match=r"text offsets: offset 2 \(2\) is below offset 1 \(4\)"):
        encoder._kernel.encode_texts(Session(), data, bad, 0, [], np.empty(0, np.uint32))
    from bpe._lists import PrebuiltInts, ids_to_lists
    for immortal in (True, False):
        with pytest.raises(ValueError, match=r"id offsets: offsets end at 9"):
            ids_to_lists(np.zeros(6, np.uint32), np.array([0, 9], np.int64), PrebuiltInts(10, immortal))
        with pytest.raises(ValueError, match="token id 7 has no prebuilt int"):
            ids_to_lists(np.array([7], np.uint32), np.array([0, 1], np.int64), PrebuiltInts(5, immortal))
        # A bad id after a list already filled (immortal ints are checked as they
        # are written): the lists made are freed, and counted ints' counts are
        # as they were (immortal ones lose the uncounted references a freed
        # list gives back, by design: see PrebuiltInts).
        ints = PrebuiltInts(5, immortal)
        before = [sys.getrefcount(one) for one in ints.objects]
        with pytest.raises(ValueError, match="token id 7 has no prebuilt int"):
            ids_to_lists(np.array([1, 2, 3, 7], np.uint32), np.array([0, 2, 3, 4], np.int64), ints)
        if not immortal:
            assert [sys.getrefcount(one) for one in ints.objects] == before
        assert ids_to_lists(np.array([1, 2, 3, 4], np.uint32), np.array([0, 2, 3, 4], np.int64), ints) == \
            [[1, 2], [3], [4]]
    with pytest.raises(TypeError):
        ids_to_lists(np.zeros(1, np.uint32), np.array([0, 1], np.int64), tuple(range(5)))   # never plain ints


def test_encoder_arrays_are_checked():
    arrays = dict(bpe.load("gpt2").encoder._arrays)
    broken = dict(arrays, ranked_ids=np.array([10**6], np.int32))
    with pytest.raises(ValueError, match=r"ranked id 1000000 \(rank 0\) is not among the token ids"):
        Encoder(broken, "gpt2", {})
    offsets = arrays["token_offsets"].copy()
    offsets[5] = offsets[7]
    with pytest.raises(ValueError, match="token arrays: offset 6"):
        Encoder(dict(arrays, token_offsets=offsets), "gpt2", {})
    token_ids = arrays["token_ids"].copy()
    token_ids[3] = -5
    with pytest.raises(ValueError, match=r"token ids: id -5 at 3 is not in \[0, 2147483647\)"):
        Encoder(dict(arrays, token_ids=token_ids), "gpt2", {})
    with pytest.raises(ValueError, match="byte_ids has 3 entries, not 256"):
        Encoder(dict(arrays, byte_ids=np.arange(3, dtype=np.int32)), "gpt2", {})


def test_validated_counts_cannot_be_changed_under_the_kernels(tmp_path):
    offsets = np.array([0, 3, 5], np.int64)
    counts = bpe.PretokenCounts(np.frombuffer(b"abcde", np.uint8), offsets, np.array([1, 2], np.int64))
    offsets[1] = 1 << 40                  # the caller's array: the counts hold their own copy
    assert counts.offsets.tolist() == [0, 3, 5]
    with pytest.raises(ValueError, match="read-only"):
        counts.offsets[1] = 1 << 40
    from bpe import pure
    assert bpe.train_from_counts(counts + counts, 258).merges == \
        pure.train_from_counts({b"abc": 2, b"de": 4}, 2) == [(b"d", b"e"), (b"b", b"c")]
    crafted = tmp_path / "crafted.npz"
    np.savez(crafted, format_version=np.int64(1), data=np.frombuffer(b"abcde", np.uint8),
             offsets=np.array([0, 4, 2, 5], np.int64), counts=np.ones(3, np.int64),
             pattern=np.array("gpt2"), has_pattern=np.bool_(True))
    with pytest.raises(ValueError, match="crafted.npz: offsets must rise from 0 to len"):
        bpe.PretokenCounts.load(crafted)


def vm_flags_at(address: int) -> list:
    """The VmFlags of the mapping of this process that holds ``address``."""
    inside = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                start, end = (int(part, 16) for part in head.split("-"))
                inside = start <= address < end
            elif inside and head == "VmFlags:":
                return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


@pytest.mark.skipif(not os.path.isdir("/sys/kernel/mm/transparent_hugepage"),
                    reason="no transparent huge pages here: nothing to advise")
def test_a_returned_id_array_is_advised_ordinary_pages():
    """numpy advises huge pages for arrays of 4 MiB or more. An id array is
    written once, front to back, and on a VM that returns freed memory to its
    host a huge page can take milliseconds to fault in, so the kernel advises
    ordinary pages before writing (``_memory.empty_written_once``)."""
    text = "hello world, " * 800_000                 # 2.4 M ids: 9.6 MB as uint32, 4.8 MB as uint16
    for ids in (bpe.load("gpt2").encoder.encode_strs([text], [])[0],
                bpe.load("gpt2").encode_to_numpy(text)):
        assert ids.nbytes >= 4 << 20                # where numpy advises huge pages
        flags = vm_flags_at(ids.ctypes.data + 4 * 4096)    # past the first page, which may be shared
        assert "nh" in flags and "hg" not in flags, flags
    small = bpe.load("gpt2").encoder.encode_strs(["hello"], [])[0]  # under 4 MiB: no advice, same ids
    assert small.tolist() == bpe.load("gpt2").encode("hello")


@pytest.fixture
def no_idle_id_blocks():
    _memory.release_id_blocks()
    yield
    _memory.release_id_blocks()


BIG = 3 << 20                       # uint32 ids: 12 MiB, from the blocks of _memory


def test_an_id_array_reuses_the_block_of_one_freed_and_never_one_in_use(no_idle_id_blocks):
    first = _memory.empty_written_once(BIG, np.uint32)
    first[:] = 7
    address = first.ctypes.data
    second = _memory.empty_written_once(BIG, np.uint32)      # first is still held
    assert not np.shares_memory(first, second) and first.flags.owndata and second.flags.owndata
    assert _memory.idle_id_blocks() == 0
    del first
    assert _memory.idle_id_blocks() == 1
    third = _memory.empty_written_once(BIG, np.uint16)         # any dtype, any smaller size
    assert third.ctypes.data == address and _memory.idle_id_blocks() == 0
    # The array is numpy's as any other: it shrinks in place, grows by moving
    # (keeping its contents), pickles, and its memory goes back when it goes.
    third[:5] = [1, 2, 3, 4, 5]
    third.resize(10, refcheck=False)
    assert third.ctypes.data == address and third[:5].tolist() == [1, 2, 3, 4, 5]
    third.resize(BIG * 4, refcheck=False)
    assert third.ctypes.data != address and third[:5].tolist() == [1, 2, 3, 4, 5]
    assert _memory.idle_id_blocks() == 1                        # the block it left
    assert pickle.loads(pickle.dumps(third[:5])).tolist() == [1, 2, 3, 4, 5]
    del second, third
    assert _memory.idle_id_blocks() == 2


def test_encoding_again_never_writes_into_ids_still_held(no_idle_id_blocks):
    encoder = bpe.load("gpt2").encoder
    texts = [random_corpus(seed, n_words=20_000) for seed in range(8)]
    kept = [encoder.encode_strs(texts, [])[0] for _ in range(3)]
    assert kept[0].nbytes >= 4 << 20
    expected = kept[0].copy()
    for _ in range(4):                          # the freed ones' blocks come back in turn
        again = encoder.encode_strs(texts[::-1], [])[0]
        assert not any(np.shares_memory(again, ids) for ids in kept)
        del again
    assert all(np.array_equal(ids, expected) for ids in kept)


def test_idle_id_blocks_are_few_and_bounded(no_idle_id_blocks):
    arrays = [_memory.empty_written_once(BIG + k * 4096, np.uint32) for k in range(4)]
    del arrays
    assert _memory.idle_id_blocks() == 2                        # the two largest kept
    assert _memory.release_id_blocks() == 2 and _memory.idle_id_blocks() == 0
    before = _memory.largest_idle_id_block(8 << 20)
    try:
        big = _memory.empty_written_once(BIG, np.uint32)             # 12 MiB: over the bound
        del big
        assert _memory.idle_id_blocks() == 0
        small = _memory.empty_written_once(1 << 20, np.uint32)       # 4 MiB: kept
        del small
        assert _memory.idle_id_blocks() == 1
    finally:
        _memory.largest_idle_id_block(before)


@pytest.fixture
def no_idle_huge_blocks():
    _memory.release_free_memory()
    yield
    _memory.release_free_memory()


def test_a_dropped_short_cache_is_taken_by_the_next_session_emptied(no_idle_huge_blocks):
    """A session's short cache (8 MiB on huge pages) dropped by ``clear_cache``
    is kept, and the next session's is made in it, its pages backed: emptied,
    so that another vocabulary's session finds none of the first's entries."""
    import gc

    text = random_corpus(5, n_words=4000)               # past a short call: a pooled session
    other = bpe.load("cl100k_base")
    expected = other.encode_to_numpy(text).tolist()
    other.clear_cache()
    gpt2 = bpe.load("gpt2")
    gpt2 = bpe.Tokenizer(gpt2.vocab, gpt2.merges, gpt2.special_tokens, pattern=gpt2.pattern)  # no sessions yet
    gc.collect()
    _memory.release_free_memory()
    assert _memory.idle_huge_blocks() == 0
    gpt2.encode_to_numpy(text)
    gpt2.clear_cache()
    gc.collect()
    assert _memory.idle_huge_blocks() == 1
    assert other.encode_to_numpy(text).tolist() == expected
    assert _memory.idle_huge_blocks() == 0


def test_a_shared_caches_table_is_freed_not_kept(no_idle_huge_blocks):
    # Its table is calloc's (pages faulted in by whichever thread first writes
    # them), not on 2 MiB boundaries: never handed out as bpe_alloc_huge's.
    import gc

    from bpe._session import SharedCache

    shared = SharedCache()
    assert shared.entries == 0
    del shared
    gc.collect()
    assert _memory.idle_huge_blocks() == 0
    block = _memory.give_back_huge_blocks([((1 << 20) + 2) * 32])[0]
    assert block % (2 << 20) == 0


def test_idle_huge_blocks_are_few_and_bounded(no_idle_huge_blocks):
    first = _memory.give_back_huge_blocks([8 << 20])
    assert _memory.idle_huge_blocks() == 1
    assert _memory.give_back_huge_blocks([8 << 20]) == first           # the same size: the one kept
    _memory.give_back_huge_blocks([8 << 20] * 6)
    assert _memory.idle_huge_blocks() == 4                             # at most four: the last given back
    larger = _memory.give_back_huge_blocks([16 << 20])                 # in place of the one kept longest
    assert _memory.idle_huge_blocks() == 4 and _memory.give_back_huge_blocks([16 << 20]) == larger
    _memory.release_free_memory()
    assert _memory.idle_huge_blocks() == 0
    largest = ((1 << 20) + 2) * 32                                      # a session's short cache at its largest
    _memory.give_back_huge_blocks([largest, largest])                  # two of them are kept ...
    assert _memory.idle_huge_blocks() == 2
    _memory.give_back_huge_blocks([40 << 20, 40 << 20])                # ... but not 80 MiB
    assert _memory.idle_huge_blocks() == 1
    _memory.give_back_huge_blocks([1 << 20])                           # not a table of huge pages
    _memory.give_back_huge_blocks([80 << 20])                          # larger than all may be
    assert _memory.idle_huge_blocks() == 1
    result, happened = with_failure_at(1, lambda: _memory.give_back_huge_blocks([40 << 20]))
    assert result is MemoryError and happened                           # an idle block is no way round the hook


def test_a_block_that_cannot_be_mapped_is_a_memory_error(no_idle_id_blocks):
    result, happened = with_failure_at(1, lambda: _memory.empty_written_once(BIG, np.uint32))
    assert result is MemoryError and happened
    assert _memory.empty_written_once(BIG, np.uint32).shape == (BIG,)


def test_threads_taking_and_giving_back_blocks_keep_their_own(no_idle_id_blocks):
    import threading

    failures = []

    def churn(value):
        for _ in range(30):
            ids = _memory.empty_written_once(BIG, np.uint32)
            ids[:] = value
            if not (ids[::4096] == value).all():
                failures.append(value)
            del ids

    threads = [threading.Thread(target=churn, args=(value,)) for value in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == [] and _memory.idle_id_blocks() <= 2


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_takes_and_gives_back_blocks(no_idle_id_blocks):
    kept = _memory.empty_written_once(BIG, np.uint32)
    del kept                                      # an idle block, copied into the child
    pid = os.fork()
    if pid == 0:                                  # the child: exit status says what it saw
        ids = _memory.empty_written_once(BIG, np.uint32)
        ids[:] = 3
        fine = bool((ids[::4096] == 3).all()) and _memory.idle_id_blocks() == 0
        del ids
        os._exit(0 if fine and _memory.idle_id_blocks() == 1 else 1)
    assert os.waitpid(pid, 0)[1] == 0
    assert _memory.idle_id_blocks() == 1          # the parent's own, untouched
