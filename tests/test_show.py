"""bpe show: the tokens seen, in a terminal (colour only on a TTY) and as a page
checked in a real browser (headless Chromium, network off)."""
import ast
import html.parser
import os
import pty
import re
import shutil
import subprocess
import sys

import pytest

import bpe
from bpe.view import TokenView, render_html, render_terminal

TEXT = "Hello, wörld!\n\tTabs  and  spaces 日本語 😀👍 <|endoftext|> naïve café 1234567"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
HEX = re.compile(r"⟨[0-9a-f ]+⟩")


def visible(colored_line: str) -> str:
    """The text a coloured token line shows, less colours and markers."""
    return HEX.sub("", ANSI.sub("", colored_line)).replace("↵\n", "\n").replace("⇥", "\t")


def run_show(*args, env=None, tty=False):
    command = [sys.executable, "-m", "bpe", "show", *args]
    environment = dict(os.environ, **(env or {}))
    if not tty:
        return subprocess.run(command, capture_output=True, text=True, env=environment, timeout=120).stdout
    leader, follower = pty.openpty()
    process = subprocess.Popen(command, stdout=follower, stderr=follower, env=environment)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    process.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_terminal_view_shows_exactly_the_input(name):
    view = TokenView.of(name, bpe.load(name), TEXT)
    colored = render_terminal([view], color=True)
    body = colored.split("\n", 1)[1].rstrip("\n")
    assert visible(body) == TEXT
    assert "\x1b[1;7m<|endoftext|>" in colored                       # special tokens marked
    assert any(token.partial for token in view.tokens) == ("⟨" in colored)
    if name == "gpt2":
        assert any(token.partial for token in view.tokens)          # gpt2 splits 日本語 into bytes
    plain = render_terminal([view], color=False).split("\n")[1]
    pieces = [ast.literal_eval(piece.strip("«»")) for piece in
              re.findall(r"«?(?:b?'(?:[^'\\]|\\.)*'|b?\"(?:[^\"\\]|\\.)*\")»?", plain)]
    assert len(pieces) == view.n_tokens
    assert b"".join(p if isinstance(p, bytes) else p.encode() for p in pieces).decode() == TEXT


def test_colour_only_on_a_terminal_and_never_with_no_color():
    on_tty = run_show("--text", TEXT, "--tokenizer", "gpt2,gpt-4o", tty=True)
    assert "\x1b[" in on_tty
    blocks = on_tty.rstrip("\n").split("\n\n")
    assert len(blocks) == 2 and blocks[1].startswith("gpt-4o: ")
    assert visible(blocks[0].split("\n", 1)[1]) == TEXT
    assert "\x1b[" not in run_show("--text", TEXT, "--tokenizer", "gpt2", env={"NO_COLOR": "1"}, tty=True)
    piped = run_show("--text", TEXT, "--tokenizer", "gpt2", "--ids")
    assert "\x1b[" not in piped
    assert piped.splitlines()[2] == "ids: " + " ".join(map(str, bpe.load("gpt2").encode(TEXT)))


def test_long_input_is_cut_with_a_note(tmp_path):
    path = tmp_path / "long.txt"
    path.write_text("word " * 2000, encoding="utf-8")
    out = run_show(str(path), "--tokenizer", "gpt2", "--max-chars", "50")
    n_tokens = len(bpe.load("gpt2").encode("word " * 2000))        # the counts are the whole file's
    assert "(cut to the first 50 characters (the counts are the whole input's)" in out
    assert out.splitlines()[0].startswith(f"gpt2: {n_tokens} tokens")
    assert out.splitlines()[1] == "'word'" + " ' word'" * 9 + " ' '"          # the first 50 characters


def test_bad_input_is_refused_and_nothing_is_written(tmp_path):
    page = tmp_path / "page.html"
    result = subprocess.run([sys.executable, "-m", "bpe", "show", "--text", "text", "--tokenizer", "gpt2,nope",
                             "--html", str(page)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "no tokenizer 'nope'" in result.stderr
    assert all(name in result.stderr for name in bpe.list_encoding_names())
    binary = tmp_path / "image.bin"
    binary.write_bytes(b"\x89PNG\x00\x00" + bytes(range(256)))
    result = subprocess.run([sys.executable, "-m", "bpe", "show", str(binary), "--tokenizer", "gpt2",
                             "--html", str(page)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and f"{binary}: a binary file" in result.stderr
    assert not page.exists() and os.listdir(tmp_path) == ["image.bin"]


def test_notebook_view():
    shown = bpe.load("gpt2").show(TEXT, name="gpt2")
    page = shown._repr_html_()
    assert len(re.findall(r'class="bpe-t[ "]', page)) == len(bpe.load("gpt2").encode(TEXT)) and "<script" not in page
    assert "\x1b[" not in str(shown)          # not a terminal here
    assert "\x1b[" not in repr(shown)


class TokenSpans(html.parser.HTMLParser):
    """Each column's token spans: (tokenizer, data-id, title, text)."""

    def __init__(self):
        super().__init__()
        self.column = None
        self.spans = []
        self.open = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "data-tokenizer" in attrs:
            self.column = attrs["data-tokenizer"]
        if tag == "span" and "bpe-t" in attrs.get("class", "").split():
            self.open = [self.column, int(attrs["data-id"]), attrs["title"], ""]

    def handle_data(self, data):
        if self.open is not None:
            self.open[3] += data

    def handle_endtag(self, tag):
        if tag == "span" and self.open is not None:
            self.spans.append(tuple(self.open))
            self.open = None


def chromium(*args) -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no chromium (CI installs Debian's chromium package)")
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", *args]
    # The network off: a namespace of its own if this user may make one, else no host resolves.
    isolated = ["unshare", "-n", *command] if subprocess.run(["unshare", "-n", "true"]).returncode == 0 \
        else [*command[:1], "--host-resolver-rules=MAP * ~NOTFOUND", *command[1:]]
    result = subprocess.run(isolated, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_the_page_in_a_real_browser(tmp_path):
    names = ["gpt2", "cl100k_base", "o200k_base"]
    tokenizers = {name: bpe.load(name) for name in names}
    page = tmp_path / "report.html"
    result = subprocess.run([sys.executable, "-m", "bpe", "show", "--text", TEXT, "--tokenizer", ",".join(names),
                             "--html", str(page), "--price", "gpt2=1.5"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    source = page.read_text(encoding="utf-8")
    assert "<script" not in source and "http://" not in source and "https://" not in source
    parser = TokenSpans()
    parser.feed(chromium("--dump-dom", page.as_uri()))
    for name in names:
        spans = [span for span in parser.spans if span[0] == name]
        ids = tokenizers[name].encode(TEXT)
        assert "".join(span[3] for span in spans) == TEXT          # the tokens' text is the input
        assert len(spans) == len(ids)                               # one element per token
        assert [span[1] for span in spans] == ids                   # each hover target's id
        assert all(span[2].startswith(f"id {token_id} · ") for span, token_id in zip(spans, ids))
    assert "$0.0000" in source
    shot = tmp_path / "shot.png"
    chromium(f"--screenshot={shot}", "--window-size=1200,700", page.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_render_html_is_self_contained():
    view = TokenView.of("gpt2", bpe.load("gpt2"), "a <b> & 'c'")
    page = render_html([view])
    assert page.startswith("<!DOCTYPE html>") and "&lt;" in page and "<b>" not in page and "<script" not in page
