"""``bpe._jsonl.text_fields`` against Python's ``json``: whatever it returns is what
``json.loads`` and the field give (lone surrogates as U+FFFD, as the encoder
reads them); on a line it does not take, it gives up (None), never differs."""
import json

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from bpe._jsonl import text_fields
from bpe.corpus.records import field_of

KEYS = ["text", "meta", "body", "t\u00e9xt", "te\\xt", "id", ""]
PIECES = ["a", " ", "é", "日", "😀", "\n", "\t", "\"", "\\", "/", "\x00", "\x1f", "\x7f", "\ud800", "\udc00",
          "\ufffd", "<|endoftext|>"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30),
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.lists(st.sampled_from(PIECES), max_size=8).map("".join))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
                      max_leaves=12)
records = st.dictionaries(st.sampled_from(KEYS), values, max_size=5)
SPACE = st.sampled_from(["", " ", "\t", "  ", "\r"])


def expected_texts(block: bytes, path):
    """What Python makes of each line: the texts, or None if a line is not a
    record with text at ``path``."""
    texts = []
    for line in block.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            return None
        text = field_of(record, path)
        if not isinstance(text, str):
            return None
        texts.append(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8"))
    return texts


def check(block: bytes, path):
    found = text_fields(block, tuple(key.encode() for key in path))
    expected = expected_texts(block, path)
    if found is None:
        return expected
    assert expected is not None, f"took a block Python refuses: {block!r}"
    data, offsets = found
    bounds = offsets.tolist()
    assert [bytes(data[a:b]) for a, b in zip(bounds, bounds[1:])] == expected
    return expected


def dump(record, ascii_only: bool, space: str) -> str:
    separators = ("," + space, ":" + space)
    return space + json.dumps(record, ensure_ascii=ascii_only, separators=separators) + space


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(records, st.booleans(), SPACE), max_size=6), st.sampled_from([["text"], ["meta", "body"]]))
def test_whatever_it_takes_json_reads_the_same(lines, path):
    block = "\n".join(dump(record, ascii_only, space) for record, ascii_only, space in lines).encode("utf-8",
                                                                                                     "surrogatepass")
    expected = check(block, path)
    # Lines that json.dumps writes are taken whenever every one has text at the field.
    if expected is not None and b"\\ud" not in block.lower() and not any(
            0xED == b for b in block):
        assert text_fields(block, tuple(k.encode() for k in path)) is not None


@settings(max_examples=600, deadline=None)
@given(records, st.booleans(), st.data())
def test_damaged_lines_are_refused_or_read_as_json_reads_them(record, ascii_only, data):
    line = bytearray(dump({"text": "x", **record}, ascii_only, " ").encode("utf-8", "surrogatepass"))
    for _ in range(data.draw(st.integers(1, 3))):
        position = data.draw(st.integers(0, len(line)))
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if action == "flip" and position < len(line):
            line[position] = data.draw(st.integers(0, 255))
        elif action == "cut":
            del line[position:position + data.draw(st.integers(1, 4))]
        else:
            line[position:position] = data.draw(st.sampled_from(
                [b"\\", b'"', b"{", b"}", b",", b":", b"\xff", b"\xc3", b"\xed\xa0\x80", b"NaN", b"-", b"0", b"e",
                 b"\\u", b"\\ud83d", b"\\ude00", b" ", b"\x0b", b"\xef\xbb\xbf", b"tru", b"[", b"]"]))
    assume(b"\n" not in line)
    check(bytes(line), ["text"])


@pytest.mark.parametrize("line, path, text", [
    (b'{"text": "a", "text": "b"}', ["text"], "b"),                     # the last of a key, as json
    (b'{"text": "\\ud83d\\ude00 \\ud83d x \\ude00"}', ["text"], "😀 \ufffd x \ufffd"),
    (b'{"te\\u0078t": "escaped key"}', ["text"], "escaped key"),
    (b'{"meta": {"body": "deep"}, "meta": {"other": 1}}', ["meta", "body"], None),   # the last meta has none
    (b'  {"text": "spaces"}  \r', ["text"], "spaces"),
    (b'{"text": "\\/\\b\\f\\n\\r\\t\\"\\\\"}', ["text"], "/\b\f\n\r\t\"\\"),
    (b'{"n": -0.5e+10, "text": "numbers"}', ["text"], "numbers"),
    (b'{"n": 01, "text": "x"}', ["text"], None),                        # json refuses a leading zero
    (b'{"n": NaN, "text": "x"}', ["text"], None),                       # json takes NaN: given up, not read
    (b'\xef\xbb\xbf{"text": "bom"}', ["text"], None),
    (b'{"text": "x"} {"text": "y"}', ["text"], None),
    (b'[{"text": "x"}]', ["text"], None),
    (b'{"text": "raw \t tab"}', ["text"], None),
    (b'{"text": "x",}', ["text"], None),
    (b'{"text": "x"', ["text"], None),
    (b'{"text": null}', ["text"], None),
    (b'{"a": ' + b"[" * 600 + b"]" * 600 + b', "text": "deep"}', ["text"], None),   # beyond 512 levels
])
def test_edges(line, path, text):
    found = text_fields(line, tuple(key.encode() for key in path))
    if text is None:
        assert found is None
    else:
        data, offsets = found
        assert bytes(data).decode() == text and offsets.tolist() == [0, len(text.encode())]
    check(line, path)


@settings(deadline=None)
@example(b"")
@example(b"\n\n \n")
@given(st.binary(max_size=40))
def test_any_bytes_are_refused_or_read_as_json_reads_them(block):
    check(block, ["text"])
