"""SentencePiece BPE models read and encoded exactly as sentencepiece does.

Models are trained here with sentencepiece itself (every option that changes
encoding or decoding), built piece by piece where training would not make the
case (a piece merging cannot reach, scores of -0.0 and +0.0, ties), and read
from Mistral's own files when the package index can be reached.
"""
import io
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpe
from bpe._lists import Expanding, expand_ids
from bpe.errors import TokenizerFileError
from bpe.formats.sentencepiece import looks_like_sentencepiece, parse
from bpe.sentencepiece import SentencePieceTokenizer

spm = pytest.importorskip("sentencepiece")
model_pb2 = pytest.importorskip("sentencepiece.sentencepiece_model_pb2")

SPACE = "\u2581"
SHAKESPEARE = os.path.join(os.path.dirname(bpe.__file__), "data", "tinyshakespeare.txt")
#: Text that is not English: characters of 2, 3 and 4 bytes, marks, emoji.
WORLD = ("Größe café naïve résumé Ærø. 日本語のテキストです。東京と京都。 한국어 텍스트. Привет, мир! "
         "Γειά σου κόσμε. שלום עולם. مرحبا بالعالم. 🤖🧠🚀 e\u0301 n\u0303 ") * 40
ATOMS = ["a", "e", "the", "The", " ", "  ", "    ", "\t", "\n", "\r\n", "\u2581", "é", "e\u0301", "日", "本", "語",
         "京", "旦", "🤖", "🦜", "Ω", "ß", "<s>", "</s>", "<unk>", "<sep>", "[X]", "<0x41>", ",", "!", "0", "42",
         "Z", "q", "\u00a0", "\u3000", "ꙮ", "\U0001F600"]


def train(**options) -> bytes:
    lines = open(SHAKESPEARE, encoding="utf-8").read()[:200_000].splitlines() + WORLD.split(". ")
    model = io.BytesIO()
    settings_ = dict(model_type="bpe", vocab_size=800, character_coverage=0.98, user_defined_symbols=["<sep>", "[X]"],
                     normalization_rule_name="identity",
                     minloglevel=2, num_threads=1)
    settings_.update(options)
    spm.SentencePieceTrainer.train(sentence_iterator=iter([line for line in lines if line.strip()]),
                                   model_writer=model, **settings_)
    return model.getvalue()


def with_normalizer(data: bytes, **flags) -> bytes:
    proto = model_pb2.ModelProto()
    proto.ParseFromString(data)
    for name, value in flags.items():
        setattr(proto.normalizer_spec, name, value)
    return proto.SerializeToString()


def pair(data: bytes):
    return SentencePieceTokenizer(parse(data), "crafted"), spm.SentencePieceProcessor(model_proto=data)


@pytest.fixture(scope="module")
def trained():
    """Models trained by sentencepiece, by what sets them apart."""
    with_fallback = train(byte_fallback=True)
    without = train(byte_fallback=False)
    return {
        "byte_fallback": with_fallback,
        "unknown": without,
        "kept_spaces": with_normalizer(with_fallback, remove_extra_whitespaces=False),
        "kept_spaces_unknown": with_normalizer(without, remove_extra_whitespaces=False),
        "no_prefix": with_normalizer(with_fallback, add_dummy_prefix=False),
        "no_prefix_kept_spaces": with_normalizer(without, add_dummy_prefix=False, remove_extra_whitespaces=False),
        "unescaped": with_normalizer(with_fallback, escape_whitespaces=False),
    }


ADVERSARIAL = ["", " ", "  ", "\t", "\n", " \n ", "  a  b ", "a" * 300, " " * 70 + "x", "x" + " " * 70,
               "\u2581", "\u2581\u2581x", " \u2581 ", "<s>", "<s>hi</s>", "<unk>", "a<sep>b", "<sep><sep>", " [X] ",
               "[X]<sep>", "ZZZ", "日本", "旦旦", "ꙮ", "🦜🦜 🦜", "e\u0301\u0301\u0301", "\u0301", "\u00a0 \u3000",
               "The quick brown fox.\n\nThe end.  ", "def f(x):\n    return x  # ok\n", "Größe " * 20, WORLD[:500]]
KINDS = ["byte_fallback", "unknown", "kept_spaces", "kept_spaces_unknown", "no_prefix", "no_prefix_kept_spaces",
         "unescaped"]


@pytest.mark.parametrize("kind", KINDS)
def test_adversarial_texts_match_sentencepiece(trained, kind):
    tok, sp = pair(trained[kind])
    for text in ADVERSARIAL:
        ids = sp.encode(text)
        assert tok.encode(text) == ids, (kind, text)
        assert tok.decode(ids) == sp.decode(ids), (kind, text)
    assert tok.encode_batch(ADVERSARIAL) == [sp.encode(text) for text in ADVERSARIAL]


def ids_in_a_fresh_process(tok, texts, **asked):
    """``tok.encode(text, **asked)`` of each text in a new Python process that
    unpickles ``tok`` (as a spawned worker does), without multiprocessing's
    helper processes, which would outlive the test."""
    import pickle
    import subprocess
    import sys

    script = ("import pickle, sys; tok, texts, asked = pickle.load(sys.stdin.buffer); "
              "sys.stdout.buffer.write(pickle.dumps([tok.encode(text, **asked) for text in texts]))")
    result = subprocess.run([sys.executable, "-c", script], input=pickle.dumps((tok, texts, asked)),
                            capture_output=True, timeout=300, check=True)
    return pickle.loads(result.stdout)


def test_pickled_it_encodes_alike_in_another_process_and_is_built_once_there(trained):
    """Pickling sends what the tokenizer was built from: a spawned worker (as
    ``multiprocessing`` and data loaders make them) encodes as the sender does,
    and a process that unpickles it again reuses what it built."""
    import pickle

    tok, sp = pair(trained["byte_fallback"])
    texts = ADVERSARIAL[:12] + [WORLD[:300]]
    assert ids_in_a_fresh_process(tok, texts) == [sp.encode(text) for text in texts]
    data = pickle.dumps(tok)
    first, again = pickle.loads(data), pickle.loads(data)
    assert first is again and first is not tok
    assert first.encode(WORLD[:300], add_bos=True) == tok.encode(WORLD[:300], add_bos=True)
    # The same pieces read from another file, or with another pad id: another tokenizer.
    model = parse(trained["byte_fallback"])
    for other in (SentencePieceTokenizer(model, "other.model"), SentencePieceTokenizer(model._replace(pad_id=7),
                                                                                       "crafted")):
        assert other.fingerprint() == tok.fingerprint()
        back = pickle.loads(pickle.dumps(other))
        assert back is not first and (back.source, back.pad_id) == (other.source, other.pad_id)


def test_what_tokenizer_offers_works_alike_here(trained):
    """Code written for ``bpe.Tokenizer`` runs with a SentencePiece model: batches
    on threads, arrays of the narrowest dtype, ``decode_bytes``,
    ``encode_iterable``, and a TypeError for what is not a str."""
    tok, sp = pair(trained["byte_fallback"])
    texts = [WORLD[k:k + 900] for k in range(0, 300 * 7, 7)] + ADVERSARIAL       # two groups of 2^18 chars
    expected = [sp.encode(text) for text in texts]
    for threads in (None, 1, 2):
        assert tok.encode_batch(texts, num_threads=threads) == expected
        arrays = tok.encode_batch_to_numpy(texts, num_threads=threads)
        assert [a.tolist() for a in arrays] == expected and {a.dtype for a in arrays} == {np.dtype(np.uint16)}
    with pytest.raises(ValueError, match="num_threads must be a positive int or None, got 0"):
        tok.encode_batch(texts, num_threads=0)
    assert tok.encode_to_numpy(WORLD[:200]).dtype == np.uint16 == tok.token_dtype()
    assert tok.encode_to_numpy(WORLD[:200], dtype=np.uint32, add_bos=True).tolist() == sp.encode(WORLD[:200],
                                                                                                add_bos=True)
    assert tok.encode_to_numpy(WORLD[:200], dtype=np.uint32).dtype == np.uint32
    ids = [int(i) for i in np.random.default_rng(3).integers(0, tok.n_vocab, 300)]
    assert tok.decode_bytes(ids) == sp.decode(ids, out_type=bytes)
    assert list(tok.encode_iterable(iter([WORLD[:50], WORLD[50:120]]))) == sp.encode(WORLD[:120])
    for call in (tok.encode, tok.encode_to_numpy, tok.count, tok.encode_ordinary):
        with pytest.raises(TypeError, match="text is bytes, not str"):
            call(b"hello")
    with pytest.raises(TypeError, match=r"texts\[1\] text is NoneType, not str"):
        tok.encode_batch(["a", None])


def test_one_text_in_one_kernel_call_and_the_way_back(trained):
    """``encode`` of one text runs the kernel once on its normalized bytes
    (``ShortCalls.utf8_to_array``; past SHORT_CALL_CHARS bytes, a document,
    without the GIL); a text past the ShortCalls' ``longest`` bytes, or any
    while calls share their caches, takes the batch's path instead: the same
    ids either way."""
    from bpe._encode import SHORT_CALL_CHARS

    tok, sp = pair(trained["byte_fallback"])
    short = tok._vocabulary._short
    texts = ADVERSARIAL + ["x " * SHORT_CALL_CHARS, "日本 旦" * SHORT_CALL_CHARS, "x " * (short.longest // 2 + 1)]
    assert short is not None and short.utf8_to_array(b" x", False) is not None
    assert short.utf8_to_array(b"x" * (SHORT_CALL_CHARS + 1), False) is not None
    assert short.utf8_to_array(b"x" * short.longest, False) is not None
    assert short.utf8_to_array(b"x" * (short.longest + 1), False) is None
    for text in texts:
        assert tok.encode(text) == sp.encode(text), text
        assert tok.count(text) == len(sp.encode(text))
    with tok._vocabulary.encoder.sharing_cache():
        assert short.utf8_to_array(b" x", False) is None
        assert [tok.encode(text) for text in texts] == [sp.encode(text) for text in texts]


def alone_model(byte_fallback: bool) -> bytes:
    """A model with characters of several bytes that no piece of several
    characters holds (and 日, 本, which 日本 holds)."""
    return crafted(LETTERS + [(c, -50.0) for c in "京東都國é한ΩЖ。，日本"] + [("日本", -1.0), ("ab", -2.0),
                                                                       ("\u2581a", -3.0)],
                   byte_fallback=byte_fallback, add_dummy_prefix=True)


def test_characters_that_stand_alone_are_read_from_a_table():
    """A character of several bytes that no piece of several characters holds
    is a pre-token of its own, and always the same token (or, one the model
    lacks, its bytes' pieces or the unknown piece): the kernel reads runs of
    them from a table (``alone_ids``) past its batches and caches, with the
    ASCII characters among them that are pre-tokens of one byte (one that
    stands alone, or before such a character or the end). Each entry is the
    id the caches give (the table unread), and texts give the same ids
    either way: runs of them among other characters, ASCII between them,
    characters the model lacks side by side (fused into one unknown piece
    without byte fallback), longer than a batch, a document, and a batch of
    texts."""
    from bpe._encode import ALONE_BYTES, SHORT_CALL_CHARS
    from bpe._testing import encoder_defaults

    for byte_fallback in (True, False):
        data = alone_model(byte_fallback)
        tok, sp = pair(data)
        with encoder_defaults(read_alone_ids=False):
            unread, _ = pair(data)
        table = tok._vocabulary.encoder._arrays["alone_ids"]
        held = [chr(point) for point in np.flatnonzero((table != 0) & (table != ALONE_BYTES))]
        assert held == sorted("京東都國é한ΩЖ。，")         # not 日 or 本, which are in 日本
        for c in held:
            assert tok.encode(c)[-1] == unread.encode(c)[-1] == table[ord(c)] - 1, c
        lacked = ["旦", "ñ", "丐", "\u0800", "\uffff", "\u00a0"]
        assert all(table[ord(c)] == ALONE_BYTES for c in lacked)
        assert table[ord("日")] == table[0xD800] == table[ord("a")] == 0
        for c in lacked:
            assert tok.encode(c) == unread.encode(c) == sp.encode(c), c
        rng = np.random.default_rng(3)
        alphabet = held + lacked + ["a", " ", "日", "本", "🤖", "\n", "é", ",", SPACE]
        texts = ["".join(rng.choice(alphabet, size=int(rng.integers(1, 400)))) for _ in range(60)]
        texts += ["".join(held) * 3, "".join(held[:5]) * SHORT_CALL_CHARS, " ".join(held)]
        texts += [f"{first}{between}{after}" for first in ("京", "a", "") for between in
                  (" ", "a", "\n", "\t", "  ", "ab", "\n\n", " a", "a ", ",", SPACE, "日", "旦", "旦丐", "ñ日")
                  for after in ("東", "日", "丐", "a", " ", "")]
        for text in texts:
            assert tok.encode(text) == unread.encode(text) == sp.encode(text), text
        assert tok.encode_batch(texts) == [sp.encode(text) for text in texts]


def test_a_table_of_characters_that_do_not_stand_alone_is_refused():
    from bpe._encode import ALONE_BYTES
    from bpe.encoder import Encoder

    tok, _ = pair(alone_model(True))
    encoder = tok._vocabulary.encoder
    arrays = dict(encoder._arrays)
    good = arrays.pop("alone_ids")
    assert good[ord("京")] not in (0, ALONE_BYTES)
    for point, value, message in [(ord("a"), 5, "holds U\\+0061, which is one byte"),
                                  (ord("日"), 5, "holds U\\+65E5, which does not stand alone"),
                                  (ord("日"), ALONE_BYTES, "holds U\\+65E5, which does not stand alone"),
                                  (ord("a"), ALONE_BYTES, "holds U\\+0061, which is one byte"),
                                  (ord("京"), 2**31, "not below")]:
        bad = good.copy()
        bad[point] = value
        with pytest.raises(ValueError, match=message):
            Encoder({**arrays, "alone_ids": bad}, encoder.pattern, {})
    with pytest.raises(ValueError, match="alone_ids has 3 entries"):
        Encoder({**arrays, "alone_ids": good[:3]}, encoder.pattern, {})
    without_alone = {name: array for name, array in arrays.items() if name not in ("alone", "joined")}
    with pytest.raises(ValueError, match="alone_ids goes with alone"):
        Encoder({**without_alone, "alone_ids": good}, encoder.pattern, {})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(st.text(max_size=60), st.text(st.sampled_from([SPACE, " ", "a", "é", "日", "\ud800", "\udc00",
                                                                    "🤖", "\u2580", "\u2582", "“"]), max_size=60)),
       prefix=st.booleans())
def test_a_str_is_normalized_by_the_kernel_as_in_python(trained, text, prefix):
    """Where SentencePiece's normalizer only writes spaces as ``▁`` (and one in
    front), the kernel's call makes the text it reads from the str itself
    (``ShortCalls.metaspace_to_list``): the same ids as from the bytes Python
    makes (a space in front, the UTF-8, each ``▁`` as a space), for str of
    every width, lone surrogates, and ``▁`` and its neighbours' bytes."""
    from bpe.encoder import utf8

    tok, _ = pair(trained["kept_spaces"])
    short = tok._vocabulary.short_calls
    data = utf8(text).replace(SPACE.encode(), b" ")
    data = b" " + data if prefix and text else data
    expected = short.utf8_to_list(data)
    assert short.metaspace_to_list(text, prefix) == expected
    narrow = short.metaspace_to_array(text, prefix, True)
    assert narrow.dtype == np.uint16 and narrow.tolist() == expected


def test_the_kernel_normalizes_only_what_it_may(trained):
    """The str call is taken where the normalizer does nothing else, and gives
    way (None) as the bytes' call does: not a str, longer than it takes, or
    while calls share their caches; a document is made without the GIL."""
    from bpe._encode import SHORT_CALL_CHARS

    assert pair(trained["kept_spaces"])[0]._str_calls is not None
    assert pair(trained["no_prefix_kept_spaces"])[0]._str_prefix is False
    assert pair(trained["byte_fallback"])[0]._str_calls is None       # it removes extra whitespace
    tok, sp = pair(trained["kept_spaces"])
    short = tok._str_calls
    assert short.metaspace_to_list(b"x", True) is None
    assert short.metaspace_to_list("x" * (short.longest + 1), True) is None
    document = "日本 旦▁a " * SHORT_CALL_CHARS
    assert short.metaspace_to_list(document, True) == sp.encode(document)
    with tok._vocabulary.encoder.sharing_cache():
        assert short.metaspace_to_list("x", True) is None
        assert tok.encode(document) == sp.encode(document)


def test_a_batch_and_a_long_document_are_normalized_by_the_kernel_too(trained, monkeypatch):
    """Where the one-text calls make the text from the str, so does the batch's
    call (``encode_batch``, and so ``encode_file``) and the call that takes a
    document too long for them: Python never makes the normalized text."""
    tok, sp = pair(trained["kept_spaces"])
    long_text = "日本 旦▁a <sep> [X]x " * (tok._str_calls.longest // 10 + 1)
    texts = [*ADVERSARIAL, long_text, WORLD]
    assert tok._str_calls.metaspace_to_list(long_text, True) is None        # too long for the one-text call

    def made_in_python(*args, **kwargs):
        raise AssertionError("the normalized text was made in Python")

    monkeypatch.setattr(tok, "_normalized_utf8", made_in_python)
    expected = [sp.encode(text) for text in texts]
    assert tok.encode_batch(texts) == expected
    assert [ids.tolist() for ids in tok.encode_batch_to_numpy(texts)] == expected
    assert tok.encode(long_text) == expected[-2]
    assert tok.encode_to_numpy(long_text).tolist() == expected[-2]
    assert tok.encode_batch(texts, add_bos=True, add_eos=True) == [[sp.bos_id()] + ids + [sp.eos_id()]
                                                                   for ids in expected]


def test_the_kernel_normalizes_only_for_the_metaspace_pattern(trained):
    from bpe._scanner import PATTERN_IDS
    from bpe._session import SHORT_CACHE_SIZES, Session

    tok, _ = pair(trained["kept_spaces"])
    kernel, session, none = tok._vocabulary.encoder._kernel, Session(*SHORT_CACHE_SIZES), np.zeros(0, np.uint32)
    ids, _ = kernel.encode_strs(session, ["a b"], PATTERN_IDS["metaspace"], (), none, metaspace_prefix=True)
    assert ids.tolist() == tok._vocabulary.encode_text(b" a b").tolist()
    with pytest.raises(ValueError, match="goes with the metaspace pattern"):
        kernel.encode_strs(session, ["a"], PATTERN_IDS["gpt2"], (), none, metaspace_prefix=True)
    with pytest.raises(TypeError, match="must be a bool or None, not 'no'"):
        kernel.encode_strs(session, ["a"], PATTERN_IDS["metaspace"], (), none, metaspace_prefix="no")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.one_of(st.text(max_size=40),
                                st.lists(st.sampled_from([SPACE, " ", "a", "é", "ÿ", "日", "\ud800", "\udc00", "🤖",
                                                          "\u2580", "\u2582", "<sep>", "[X]"]),
                                         max_size=30).map("".join)),
                      max_size=6),
       kind=st.sampled_from(["kept_spaces", "no_prefix_kept_spaces"]))
def test_a_batch_is_normalized_by_the_kernel_as_in_python(trained, texts, kind):
    """The batch's call makes each text as Python makes it (a space in front
    where the model puts one, the UTF-8, each ``▁`` as a space): the same
    ids and offsets, for str of every width, lone surrogates, empty texts
    and the user-defined symbols among them."""
    tok, _ = pair(trained[kind])
    normalized = [tok._normalized_utf8(text, kernel=True) for text in texts]
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(data) for data in normalized], out=offsets[1:])
    expected, bounds = tok._vocabulary.encode(np.frombuffer(b"".join(normalized), dtype=np.uint8), offsets,
                                              tok._user_defined_names)
    ids, got_bounds = tok._ids(texts)
    assert ids.tolist() == expected.tolist() and got_bounds.tolist() == bounds.tolist()


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(atoms=st.lists(st.sampled_from(ATOMS), max_size=40),
       text=st.text(st.characters(exclude_categories=("Cs",)), max_size=40))
def test_random_texts_match_sentencepiece(trained, kind, atoms, text):
    tok, sp = pair(trained[kind])
    for sample in ("".join(atoms), text, "".join(atoms) + text):
        assert tok.encode(sample) == sp.encode(sample), sample
        assert tok.encode_to_numpy(sample).tolist() == sp.encode(sample)


@pytest.mark.parametrize("kind", ["byte_fallback", "unknown", "kept_spaces"])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_decode_of_any_ids_matches_sentencepiece(trained, kind, data):
    """Byte pieces that make no character (one U+FFFD a byte), control and
    unknown pieces, the dummy prefix's space, in any order."""
    tok, sp = pair(trained[kind])
    ids = data.draw(st.lists(st.integers(0, sp.get_piece_size() - 1), max_size=30))
    assert tok.decode(ids) == sp.decode(ids)


def test_decode_takes_lists_arrays_and_iterables_and_names_a_bad_id(trained):
    tok, sp = pair(trained["byte_fallback"])
    ids = sp.encode("Hello there, 日本 ") + [sp.bos_id(), sp.eos_id()] + sp.encode(" again")
    for given in (ids, tuple(ids), np.array(ids, dtype=np.uint32), np.array(ids), iter(ids)):
        assert tok.decode(given) == sp.decode(ids)
    for bad in (-1, sp.get_piece_size(), 2**70):
        with pytest.raises(ValueError, match="not in \\[0, "):
            tok.decode(ids + [bad])


def test_bos_and_eos_only_when_asked(trained):
    tok, sp = pair(trained["byte_fallback"])
    for text in ["", "hello there"]:
        assert tok.encode(text) == sp.encode(text)
        assert tok.encode(text, add_bos=True, add_eos=True) == sp.encode(text, add_bos=True, add_eos=True)
        assert tok.encode(text, add_bos=True) == sp.encode(text, add_bos=True)


def test_unknown_characters_sharing_bytes_with_known_ones():
    """旦 is no piece, but its first two bytes are 日's (E6 97): the partial
    character the kernel makes of them becomes byte pieces, or one unknown
    piece for the run, as sentencepiece's unknown characters do."""
    for byte_fallback in (True, False):
        tok, sp = pair(crafted(LETTERS + [("日", -100.0), ("本", -100.0), ("日本", -1.0), ("a日", -2.0)],
                               byte_fallback=byte_fallback))
        assert sp.piece_to_id("日") != sp.unk_id() and sp.piece_to_id("旦") == sp.unk_id()
        for text in ["旦", "日旦本", "旦旦旦", "a旦日", "日本旦", "a日本", "旦a日"]:
            assert tok.encode(text) == sp.encode(text), (byte_fallback, text)
            assert tok.encode_to_numpy(text).tolist() == sp.encode(text), (byte_fallback, text)
        # One text's kernel call expands the ids as it makes its list or array.
        short = tok._vocabulary._short
        for text in ["日本", "旦", "旦旦a旦", "a旦日本旦"]:
            data = tok._kernel_bytes(text)
            assert short.utf8_to_list(data) == sp.encode(text), (byte_fallback, text)
            narrow = short.utf8_to_array(data, True)
            assert narrow.dtype == np.uint16 and narrow.tolist() == sp.encode(text), (byte_fallback, text)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_expanding_ids_that_stand_for_several(data):
    """``expand_ids`` (what turns the kernel's partial characters into the
    model's ids) against the rule written out: ids from ``first`` on become
    their rows, and a run of the fused id in a text is kept once."""
    first = 6
    rows = data.draw(st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=4), min_size=1, max_size=4))
    texts = data.draw(st.lists(st.lists(st.integers(0, first + len(rows) - 1), max_size=12), max_size=5))
    fused = data.draw(st.sampled_from([-1, 0, 5]))
    table = np.zeros((len(rows), 4), np.uint32)
    for k, row in enumerate(rows):
        table[k, :len(row)] = row
    ids = np.array([i for text in texts for i in text], np.uint32)
    offsets = np.cumsum([0] + [len(text) for text in texts]).astype(np.int64)
    lengths = np.array([len(r) for r in rows], np.uint8)
    got, got_offsets = expand_ids(ids, offsets, Expanding(first, table, lengths, fused))
    expected = []
    for text in texts:
        out = [j for i in text for j in (rows[i - first] if i >= first else [i])]
        expected.append([j for n, j in enumerate(out) if not (n and j == fused and out[n - 1] == fused)])
    assert got.dtype == np.uint32
    assert [got[a:b].tolist() for a, b in zip(got_offsets[:-1], got_offsets[1:])] == expected
    with pytest.raises(ValueError, match="id offsets are empty"):
        expand_ids(ids[:0], offsets[:0], Expanding(first, table, lengths))
    with pytest.raises(ValueError, match=f"id {first + len(rows)} at 0 stands for no row"):
        expand_ids(np.array([first + len(rows)], np.uint32), np.array([0, 1], np.int64),
                   Expanding(first, table, lengths))


def crafted(pieces, *, byte_fallback=False, model_type=2, **normalizer) -> bytes:
    """A model of ``pieces`` ``(text, score)`` (after <unk>, <s>, </s>, and the
    byte pieces with ``byte_fallback``), identity-normalized."""
    proto = model_pb2.ModelProto()
    for text, score, kind in [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3)]:
        proto.pieces.add(piece=text, score=score, type=kind)
    if byte_fallback:
        for b in range(256):
            proto.pieces.add(piece=f"<0x{b:02X}>", score=0.0, type=6)
    for text, score in pieces:
        proto.pieces.add(piece=text, score=score, type=1)
    proto.trainer_spec.model_type = model_type
    proto.trainer_spec.byte_fallback = byte_fallback
    proto.normalizer_spec.name = "identity"
    proto.normalizer_spec.add_dummy_prefix = normalizer.get("add_dummy_prefix", False)
    proto.normalizer_spec.remove_extra_whitespaces = normalizer.get("remove_extra_whitespaces", False)
    proto.normalizer_spec.escape_whitespaces = normalizer.get("escape_whitespaces", True)
    return proto.SerializeToString()


LETTERS = [(c, -100.0) for c in "abcdxyz\u2581"]


def test_a_piece_merging_cannot_reach_is_not_taken_whole():
    """"abcd" is a piece, but "bc" merges first and nothing joins a|bc|d:
    sentencepiece has no shortcut for a text that is a piece (tiktoken does)."""
    tok, sp = pair(crafted(LETTERS + [("bc", -1.0), ("ab", -2.0), ("cd", -3.0), ("abcd", -4.0)]))
    for text in ["abcd", "abcdabcd", "xabcd", "ab", "abc"]:
        assert tok.encode(text) == sp.encode(text), text
    assert len(tok.encode("abcd")) == 3


def test_minus_zero_scores_below_plus_zero():
    """sentencepiece compares scores' bits: -0.0 ranks below +0.0."""
    for first, second in [(-0.0, 0.0), (0.0, -0.0)]:
        tok, sp = pair(crafted(LETTERS + [("ab", first), ("bc", second)]))
        assert tok.encode("abc") == sp.encode("abc")


def test_runs_of_one_character_tie_as_sentencepiece_breaks_ties():
    """▁▁ up to ▁ * 16 all at one score (as Mistral's models have them), one length
    missing: every run length gives sentencepiece's pieces."""
    runs = [("\u2581" * n, -1e9) for n in range(2, 17) if n != 15]
    tok, sp = pair(crafted(LETTERS + [("\u2581a", -1.0), ("ab", -2.0)] + runs))
    for n in range(1, 80):
        for text in [" " * n, " " * n + "ab", "a" + " " * n + "ab"]:
            assert tok.encode(text) == sp.encode(text), repr(text)


@pytest.mark.parametrize("piece", ["a\n", "a\u2581b", "\t\t", "b\u2581\u2581"])
@pytest.mark.parametrize("escape", [True, False])
def test_pieces_that_cross_the_cuts_keep_their_text_whole(piece, escape):
    """The text is cut where no piece holds two characters side by side: a
    model with a piece holding a tab, a line feed or ▁ after another character
    is cut less there, and still encodes exactly. Where ▁ is three bytes in
    the kernel (spaces not escaped), a ▁ after another character in a piece
    means no cut at all."""
    tok, sp = pair(crafted(LETTERS + [("\n", -100.0), ("\t", -100.0), ("ab", -2.0),
                                      (piece, -1.0)], add_dummy_prefix=True, escape_whitespaces=escape))
    assert tok._vocabulary.space == escape
    assert tok.pattern == (None if "\u2581" in piece and not escape else "metaspace")
    for text in ["a\nb", "ab ab\n\na\t\tb", "a b", "\t\tab a\n", "xa\u2581b", "\n\t\nq\t", "b  a",
                 "b\u2581\u2581", " b  "]:
        assert tok.encode(text) == sp.encode(text), text


@pytest.mark.parametrize("byte_fallback", [True, False])
def test_a_model_without_the_space_piece(byte_fallback):
    """▁ alone is no piece but begins some: it still merges into them, and
    alone becomes its bytes' pieces (or the unknown piece), though the kernel
    writes it as one byte."""
    letters = [(c, -100.0) for c in "abz"]
    tok, sp = pair(crafted(letters + [("\u2581a", -1.0), ("\u2581\u2581b", -2.0)], byte_fallback=byte_fallback,
                           add_dummy_prefix=True))
    assert tok._vocabulary.space
    for text in [" a", " z", "  b", "a  z ", "z\u2581a", "\u2581", "   "]:
        assert tok.encode(text) == sp.encode(text), text


def test_ties_other_than_every_run_of_a_character_are_refused():
    with pytest.raises(TokenizerFileError, match=r"'bc' has the score of piece \d+ \('ab'\)"):
        SentencePieceTokenizer(parse(crafted(LETTERS + [("ab", -1.0), ("bc", -1.0)])), "crafted")
    # Ranking the longer run first would give ▁▁ ▁▁▁▁▁ for seven spaces; sentencepiece gives ▁▁▁▁ ▁▁▁.
    runs = [("\u2581" * 2, -1.0), ("\u2581" * 3, -2.0), ("\u2581" * 4, -5.0), ("\u2581" * 5, -5.0)]
    with pytest.raises(TokenizerFileError, match="all the runs of one character"):
        SentencePieceTokenizer(parse(crafted(LETTERS + runs)), "crafted")


def test_what_sentencepiece_itself_refuses_or_keeps_apart_is_refused():
    with_bytes = model_pb2.ModelProto()
    with_bytes.ParseFromString(crafted(LETTERS, byte_fallback=True))
    with_bytes.trainer_spec.byte_fallback = False
    with pytest.raises(TokenizerFileError, match="is a byte piece, but trainer_spec.byte_fallback is false"):
        SentencePieceTokenizer(parse(with_bytes.SerializeToString()), "crafted")
    spaced = model_pb2.ModelProto()
    spaced.ParseFromString(crafted(LETTERS, remove_extra_whitespaces=True))
    spaced.pieces.add(piece="    ", score=0.0, type=4)
    with pytest.raises(TokenizerFileError, match="the user-defined '    ' holds a space"):
        SentencePieceTokenizer(parse(spaced.SerializeToString()), "crafted")
    spaced.normalizer_spec.remove_extra_whitespaces = False        # then nothing is shortened: read exactly
    tok, sp = pair(spaced.SerializeToString())
    for text in ["a    b", "    ", " a  b    c "]:
        assert tok.encode(text) == sp.encode(text)


def test_a_long_run_of_trailing_spaces_takes_linear_time(trained):
    tok, sp = pair(trained["byte_fallback"])
    text = "word" + "\u2581" * 200_000 + " " * 200_000
    assert tok.encode(text) == sp.encode(text)


def test_what_bpe_does_not_read_is_refused_naming_the_field():
    unigram = crafted(LETTERS, model_type=1)
    with pytest.raises(TokenizerFileError, match="model_type: unigram; bpe reads SentencePiece's BPE models only"):
        SentencePieceTokenizer(parse(unigram), "crafted")
    proto = model_pb2.ModelProto()
    proto.ParseFromString(crafted(LETTERS))
    proto.normalizer_spec.name = "nmt_nfkc"
    proto.normalizer_spec.precompiled_charsmap = b"\x00" * 8
    with pytest.raises(TokenizerFileError,
                       match="normalizer_spec.precompiled_charsmap: 'nmt_nfkc' normalizes with a character map"):
        SentencePieceTokenizer(parse(proto.SerializeToString()), "crafted")


def test_a_broken_file_names_its_byte(tmp_path):
    data = crafted(LETTERS)
    path = tmp_path / "cut.model"
    path.write_bytes(data[:-3])
    with pytest.raises(TokenizerFileError, match=r"cut.model: not a SentencePiece model: byte \d+: .*runs past"):
        bpe.load(path)
    path.write_bytes(b"\x0a\x05\x0a\x03ab")
    with pytest.raises(TokenizerFileError, match="piece 0's text|runs past"):
        bpe.load(path)


def test_load_tells_a_sentencepiece_model_from_a_rank_file(tmp_path, trained):
    assert looks_like_sentencepiece(trained["byte_fallback"][:16])
    assert not looks_like_sentencepiece(b"IQ== 0\nIg== 1\n")
    model = tmp_path / "tokenizer.model"
    model.write_bytes(trained["byte_fallback"])
    sp = spm.SentencePieceProcessor(model_proto=trained["byte_fallback"])
    for where in (model, tmp_path):
        tok = bpe.load(where)
        assert isinstance(tok, SentencePieceTokenizer)
        assert tok.encode("Hello there, 日本!") == sp.encode("Hello there, 日本!")
    assert bpe.Tokenizer.from_sentencepiece(model).encode("Hello there") == sp.encode("Hello there")
    (tmp_path / "ranks.model").write_text("IQ== 0\n")
    with pytest.raises(ValueError, match="tiktoken rank file"):
        bpe.load(tmp_path / "ranks.model")


def test_the_metaspace_scanner_cuts_before_each_run():
    """The kernel's metaspace scanner against the pattern it stands for."""
    from bpe._scanner import PATTERN_IDS, split_offsets
    from bpe.patterns import PATTERNS
    from conftest import findall

    rng = np.random.default_rng(5)
    alphabet = ["\u2581", "a", "é", "日", "🤖", "\n", "\t", "\r", " ", "\u2582", "\u2580", "─"]
    for _ in range(300):
        text = "".join(rng.choice(alphabet, size=int(rng.integers(0, 30))))
        data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        offsets = split_offsets(data, PATTERN_IDS["metaspace"]).tolist()
        raw = text.encode("utf-8")
        assert [raw[a:b].decode() for a, b in zip(offsets, offsets[1:])] == findall(PATTERNS["metaspace"], text)


def reference_cuts(text: str, alone: set, joined: set) -> list[str]:
    """The pieces the metaspace scanner makes with ``alone`` and ``joined``: a cut
    before each run of ▁, around each character of ``alone``, and between two
    ASCII characters not in ``joined``, but never after a ▁."""
    pieces, at = [], 0
    for k in range(1, len(text) + 1):
        if k == len(text):
            cut = True
        else:
            before, here = text[k - 1], text[k]
            cut = ((here == SPACE != before) or before in alone or here in alone
                   or (before.isascii() and here.isascii() and (before, here) not in joined))
        if cut:
            pieces.append(text[at:k])
            at = k
    return pieces


@pytest.mark.parametrize("windows", [True, False])
def test_the_metaspace_scanner_cuts_where_no_piece_joins_two_characters(windows):
    """With the code points that no piece of several characters holds, the
    scanner cuts around each of them as well as before each run of ▁; with the
    ASCII pairs that pieces hold, between any two others. In ASCII text it
    reads the cuts 64 bytes at a time (``windows``): long texts, mostly ASCII,
    take that way, up to a non-ASCII byte and to the text's end."""
    from bpe._scanner import PATTERN_IDS, fill_offsets, split_offsets

    rng = np.random.default_rng(6)
    alphabet = [SPACE, "a", "b", "(", "é", "日", "本", "🤖", "\n", "\t", " ", "\u2582", "。", "x"]
    ascii_heavy = alphabet + ["a", "b", "(", "x", " ", "\n"] * 8
    for alone_set, joined_set in [("日\n", None), ("é🤖。\t", {("a", "b"), ("(", "a"), ("x", "x")}), ("a", set()),
                                  ("", None), ("", {("a", "a")})]:
        bits = np.zeros(0x110000, dtype=bool)
        bits[[ord(c) for c in alone_set]] = True
        alone = np.packbits(bits, bitorder="little")
        pairs = np.zeros(128 * 128, dtype=bool)
        for a, b in joined_set or ():
            pairs[(ord(a) << 7) | ord(b)] = True
        joined = None if joined_set is None else np.packbits(pairs, bitorder="little")
        held = np.zeros(0x10000, dtype=np.uint32)
        held[[ord(c) for c in alone_set if 0x80 <= ord(c) < 0x10000][:1]] = 1
        every_pair = {(chr(a), chr(b)) for a in range(128) for b in range(128)}
        for k in range(400):
            letters, longest = (alphabet, 30) if k % 2 else (ascii_heavy, 300)
            text = "".join(rng.choice(letters, size=int(rng.integers(0, longest))))
            data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
            offsets = split_offsets(data, PATTERN_IDS["metaspace"], alone, joined, windows=windows).tolist()
            raw = text.encode("utf-8")
            expected = reference_cuts(text, set(alone_set), every_pair if joined_set is None else joined_set)
            assert [raw[a:b].decode() for a, b in zip(offsets, offsets[1:])] == expected, text
            # A batch at a time, as the encoder scans: runs of characters that
            # stand alone are read apart (``alone_run``), up to the batch's
            # room; with ``held`` (the encoder's ``alone_ids``), a batch also
            # ends before each character it holds.
            for room in (1, 3, 64):
                for table in (None, held):
                    filled = fill_offsets(data, PATTERN_IDS["metaspace"], room, alone, joined, windows=windows,
                                          held=table)
                    assert filled.tolist() == offsets, (room, text)


MISTRAL = "mistral-common==1.13.1"


@pytest.fixture(scope="module", params=["data/tokenizer.model.v1", "data/mistral_instruct_tokenizer_240323.model.v3"])
def mistral(request):
    from fetched import member

    path = member(MISTRAL, "mistral_common/" + request.param)
    return bpe.load(path), spm.SentencePieceProcessor(model_file=path)


def test_mistral_models_match_sentencepiece(mistral):
    tok, sp = mistral
    texts = ADVERSARIAL + ["[INST] What is 2+2? [/INST]", "[REFERENCE_DOC_1] see [REFERENCE_DOC_2]",
                           " " * 33 + "indented", "\t\tdef f():\n\t\t\treturn 1\n"]
    docs = open(SHAKESPEARE, encoding="utf-8").read()[:300_000].split("\n\n") + WORLD.split(". ")
    for text in texts:
        assert tok.encode(text) == sp.encode(text), text
        assert tok.decode(sp.encode(text)) == sp.decode(sp.encode(text)), text
    assert tok.encode_batch(docs) == [sp.encode(doc) for doc in docs]
    # Every character read from the table of those that stand alone (most
    # ideographs these models hold), alone and as one run.
    held = "".join(chr(point) for point in np.flatnonzero(tok._vocabulary.encoder._arrays["alone_ids"]))
    assert len(held) > 2000
    assert [tok.encode(c) for c in held] == [sp.encode(c) for c in held]
    assert tok.encode(held) == sp.encode(held)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(atoms=st.lists(st.sampled_from(ATOMS + ["[INST]", "[REFERENCE_DOC_3]", "\u2581\u2581\u2581"]), max_size=50),
       text=st.text(st.characters(exclude_categories=("Cs",)), max_size=60))
def test_mistral_models_on_random_text(mistral, atoms, text):
    tok, sp = mistral
    for sample in ("".join(atoms), text):
        assert tok.encode(sample) == sp.encode(sample), sample


def test_corpora_encode_each_document_whole(tmp_path, trained):
    """encode_file and encode_documents: a record (or a whole text file) is a
    document, its ids sentencepiece's, with BOS and EOS as asked; the index
    marks where each starts; the ids are the same for any number of workers."""
    import json

    data = trained["byte_fallback"]
    model = tmp_path / "tokenizer.model"
    model.write_bytes(data)
    tok, sp = bpe.load(model), spm.SentencePieceProcessor(model_proto=data)
    documents = [" Leading space", "two  spaces\tand a tab\n", "", "日本語 and 🦜", "x" * 5000, "<sep> [X]"] * 30
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in documents))
    expected = [sp.encode(d, add_bos=True) for d in documents]
    for workers in (1, 2):
        out = tmp_path / f"records{workers}.bin"
        tok.encode_file(tmp_path / "docs.jsonl", out, add_bos=True, num_workers=workers)
        ids, starts = bpe.open_tokens(out), bpe.read_document_index(out)
        assert np.asarray(ids).tolist() == [i for e in expected for i in e]
        assert starts.tolist() == np.cumsum([0] + [len(e) for e in expected[:-1]]).tolist()
    tok.encode_documents(iter(documents), tmp_path / "texts.bin", add_eos=True)
    assert np.asarray(bpe.open_tokens(tmp_path / "texts.bin")).tolist() == \
        [i for d in documents for i in sp.encode(d, add_eos=True)]
    whole = "\n\n".join(documents)
    (tmp_path / "book.txt").write_text(whole)
    tok.encode_file(tmp_path / "book.txt", tmp_path / "book.bin")
    assert np.asarray(bpe.open_tokens(tmp_path / "book.bin")).tolist() == sp.encode(whole)
    assert bpe.read_metadata(tmp_path / "book.bin")["tokenizer_fingerprint"] == tok.fingerprint()
    settings = bpe.read_metadata(tmp_path / "records1.bin")["encoding_settings"]
    assert (settings["add_bos"], settings["add_eos"]) == (True, False)
    # More ids than bytes (the dummy prefix, BOS, EOS), into uint16.
    (tmp_path / "nl.txt").write_text("\n")
    tok.encode_file(tmp_path / "nl.txt", tmp_path / "nl.bin", add_bos=True, add_eos=True)
    assert np.asarray(bpe.open_tokens(tmp_path / "nl.bin")).tolist() == sp.encode("\n", add_bos=True, add_eos=True)
    assert bpe.open_tokens(tmp_path / "nl.bin").dtype == np.uint16


def test_the_bpe_command_reads_a_sentencepiece_model(tmp_path, trained):
    """encode, decode, count and inspect through the real command; show says
    in one line that it does not read it yet."""
    import json
    import subprocess
    import sys

    def run(*args, stdin=None):
        return subprocess.run([sys.executable, "-m", "bpe", *args], capture_output=True, text=True, input=stdin,
                              cwd=tmp_path, timeout=300)

    data = trained["byte_fallback"]
    (tmp_path / "tokenizer.model").write_bytes(data)
    sp = spm.SentencePieceProcessor(model_proto=data)
    documents = ["Hello there, world.", "  Two  spaces 日本 "]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in documents))
    result = run("encode", "c.jsonl", "-o", "out.bin", "--tokenizer", "tokenizer.model")
    assert result.returncode == 0, result.stderr
    assert np.asarray(bpe.open_tokens(tmp_path / "out.bin")).tolist() == sp.encode(documents[0]) + sp.encode(documents[1])
    result = run("encode", "c.jsonl", "-o", "framed.bin", "--tokenizer", "tokenizer.model", "--add-bos", "--add-eos")
    assert result.returncode == 0, result.stderr
    assert np.asarray(bpe.open_tokens(tmp_path / "framed.bin")).tolist() == \
        [i for d in documents for i in sp.encode(d, add_bos=True, add_eos=True)]
    result = run("encode", "c.jsonl", "-o", "gpt2.bin", "--tokenizer", "gpt2", "--add-bos")
    assert result.returncode != 0 and "--add-bos and --add-eos are for SentencePiece models" in result.stderr
    result = run("decode", "out.bin", "--tokenizer", "tokenizer.model")
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip("\n") == sp.decode(sp.encode(documents[0]) + sp.encode(documents[1]))
    result = run("count", "c.jsonl", "--tokenizer", "tokenizer.model,gpt2")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1].split()[:2] == ["tokenizer.model", str(sum(len(sp.encode(d)) for d in documents))]
    result = run("encode", "c.jsonl", "-o", "shards", "--tokenizer", "tokenizer.model", "--shard-mb", "1")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "leave out --shard-mb, --rank, --world-size and --ray" in result.stderr
    result = run("inspect", "tokenizer.model", "--top", "3")
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(":", 1) for line in result.stdout.splitlines())
    assert lines["pieces"].split()[0] == str(sp.get_piece_size())
    assert f"bos = {sp.bos_id()} '<s>'" in lines["ids"] and "user-defined" in result.stdout
    result = run("show", "--text", "hi  日本", "--tokenizer", "tokenizer.model", "--tokenizer", "gpt2", "--ids")
    assert result.returncode == 0, result.stderr
    blocks = result.stdout.split("\n\n")
    assert blocks[0].startswith("tokenizer.model: ") and blocks[1].startswith("gpt2: ")
    assert blocks[0].splitlines()[-1] == "ids: " + " ".join(map(str, sp.encode("hi  日本")))
    # Each piece's text, a byte piece as its byte (a character's bytes apart when it has no piece).
    shown = [repr(bytes([int(sp.id_to_piece(i)[3:5], 16)])) if sp.is_byte(i) else repr(sp.id_to_piece(i))
             for i in sp.encode("hi  日本")]
    assert blocks[0].splitlines()[1] == " ".join(shown)
