"""Seeing tokens: one text as several tokenizers cut it, in a terminal or as a page.

Each token is shown over the characters it covers. A character split across
tokens (byte-level BPE may cut inside a multi-byte character) is shown with
the token that completes it; a token that ends with only some of a
character's bytes shows them after its text as hex (``⟨e6 97⟩``). So the text
of the tokens, joined, is the input, in the terminal (less colours and hex
markers) and in the page's DOM (where the hex is drawn by CSS, not text).

* ``render_terminal(views, color=True)``: a block per tokenizer, each token on
  an alternating background, whitespace made visible, special tokens in
  reverse video. Without colour (a pipe, ``NO_COLOR``), each token is
  written as its Python literal (``'Hello' ' world' b'\\xe6\\x97'``), which
  keeps every boundary and byte readable.
* ``render_html(views)``: one self-contained page (no script, no network),
  tokenizers side by side, each token's id and bytes on hover, and a summary.
"""
from __future__ import annotations

import dataclasses
import html
import os
import sys
from typing import Iterable, Optional, Sequence

from bpe.files import atomic_write_text

#: Backgrounds that alternate from token to token (ANSI 256-colour indices, and CSS).
TERMINAL_BACKGROUNDS = (153, 223, 193, 219, 159, 229)
PAGE_BACKGROUNDS = ("#b9dcff", "#ffe3b3", "#c8f2c2", "#ffc9ec", "#b8f0f0", "#fff1a8")
RESET = "\x1b[0m"
NEWLINE_MARK, TAB_MARK = "↵", "⇥"
PARTIAL_OPEN, PARTIAL_CLOSE = "⟨", "⟩"


@dataclasses.dataclass
class Token:
    """One token of a view: its id, its bytes, the characters it completes."""

    id: int
    data: bytes
    text: str              # the characters it completes (may be none)
    special: bool

    @property
    def tail(self) -> bytes:
        """Its last bytes that begin a character a later token completes."""
        if self.special:
            return b""
        if not self.text:
            return self.data
        data = self.data
        for back in range(1, min(4, len(data)) + 1):
            byte = data[-back]
            if byte < 0x80:
                return b""
            if byte >= 0xC0:            # a lead byte: is its character complete here?
                width = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
                return data[-back:] if back < width else b""
        return b""

    @property
    def partial(self) -> bool:
        return bool(self.tail)


@dataclasses.dataclass
class Totals:
    """What the whole input holds, where the view shows only its start."""

    tokens: int
    chars: int
    bytes: int


@dataclasses.dataclass
class TokenView:
    """How one tokenizer cuts one text (or the start of a longer input: then
    ``totals`` counts all of it, and the summary says so)."""

    name: str
    text: str
    tokens: list[Token]
    cut: bool = False                   # the text is the start of a longer input
    totals: Optional[Totals] = None     # that input's counts, where known

    @classmethod
    def of(cls, name: str, tokenizer, text: str, max_chars: Optional[int] = None,
           totals: Optional[Totals] = None) -> "TokenView":
        """``tokenizer``'s tokens of ``text`` (its first ``max_chars`` characters;
        ``tokenizer.view_tokens``), special tokens recognised; ``totals`` counts
        a longer input ``text`` starts."""
        cut = (max_chars is not None and len(text) > max_chars) or totals is not None
        text = text[:max_chars] if max_chars is not None else text
        return cls(name, text, tokenizer.view_tokens(text), cut, totals)

    @property
    def n_tokens(self) -> int:
        return self.totals.tokens if self.totals else len(self.tokens)

    @property
    def chars_per_token(self) -> float:
        chars = self.totals.chars if self.totals else len(self.text)
        return chars / self.n_tokens if self.n_tokens else 0.0

    @property
    def bytes_per_token(self) -> float:
        n_bytes = self.totals.bytes if self.totals else len(self.text.encode("utf-8", "replace"))
        return n_bytes / self.n_tokens if self.n_tokens else 0.0

    def summary(self, price: Optional[float] = None) -> str:
        line = (f"{self.name}: {self.n_tokens} tokens, {self.chars_per_token:.2f} chars/token, "
                f"{self.bytes_per_token:.2f} bytes/token")
        if price is not None:
            line += f", est. ${self.n_tokens * price / 1e6:.6f} at ${price}/1M tokens"
        return line

    def cut_note(self) -> str:
        whole = " (the counts are the whole input's)" if self.totals else ""
        return f"cut to the first {len(self.text)} characters{whole}"


def color_wanted(stream=None) -> bool:
    """Colour only on a terminal, and never with ``NO_COLOR`` set (no-color.org)."""
    stream = stream or sys.stdout
    return stream.isatty() and not os.environ.get("NO_COLOR")


def _literal(data: bytes) -> str:
    try:
        return repr(data.decode("utf-8"))
    except UnicodeDecodeError:
        return repr(data)


def _hex(data: bytes) -> str:
    return PARTIAL_OPEN + " ".join(f"{byte:02x}" for byte in data) + PARTIAL_CLOSE


def visible(text: str) -> str:
    """``text`` with every character a terminal would act on instead of showing
    made visible: tabs and newlines marked (a newline kept), C0 controls as
    their control pictures (``␛``, ``␍``, ...), any other non-printing
    character (C1 controls, bidi overrides, zero-width ones) as ``⟨U+XXXX⟩``.
    An untrusted file's ``\r`` or escape sequence cannot hide or forge what is
    shown."""
    if text.isprintable():
        return text
    out = []
    for character in text:
        if character == "\n":
            out.append(NEWLINE_MARK + "\n")
        elif character == "\t":
            out.append(TAB_MARK)
        elif character.isprintable() or character == " ":
            out.append(character)
        elif ord(character) < 0x20:
            out.append(chr(0x2400 + ord(character)))         # ␀ .. ␟
        elif character == "\x7f":
            out.append("\u2421")                            # ␡
        else:
            out.append(f"⟨U+{ord(character):04X}⟩")
    return "".join(out)


def _terminal_piece(token: Token) -> str:
    return visible(token.text) + (f"\x1b[2m{_hex(token.tail)}\x1b[22m" if token.partial else "")


def render_terminal(views: Sequence[TokenView], *, color: bool = True, ids: bool = False,
                    prices: Optional[dict] = None) -> str:
    """The terminal view of ``views``, a block each."""
    blocks = []
    for view in views:
        lines = [visible(view.summary((prices or {}).get(view.name)))]
        if color:
            parts = []
            for index, token in enumerate(view.tokens):
                if token.special:
                    style = "\x1b[1;7m"                                   # bold, reverse video
                else:
                    style = f"\x1b[30;48;5;{TERMINAL_BACKGROUNDS[index % len(TERMINAL_BACKGROUNDS)]}m"
                # Colour must not run past a line end: close it before each newline.
                parts.append(style + _terminal_piece(token).replace("\n", RESET + "\n" + style) + RESET)
            lines.append("".join(parts))
        else:
            # Each token as the literal of its own bytes: a str when they are whole
            # characters, else bytes; «» around special tokens.
            lines.append(" ".join(f"«{token.text!r}»" if token.special else _literal(token.data)
                                  for token in view.tokens))
        if ids:
            lines.append("ids: " + " ".join(str(token.id) for token in view.tokens))
        if view.cut:
            lines.append(f"({view.cut_note()}; --max-chars shows more)")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


# --------------------------------------------------------------------------- the page

#: The page's own look, for ``render_html`` alone (a notebook has its own).
PAGE_BODY_STYLE = "body { font-family: system-ui, sans-serif; margin: 1.5em; color: #111; background: #fff; }"
#: Everything a view's HTML needs, scoped under its one root class (``ROOT``):
#: shown in a notebook, it restyles nothing else there.
ROOT = "bpe-show"
VIEW_STYLE = """
.bpe-show table.bpe-summary { border-collapse: collapse; margin-bottom: 1.5em; }
.bpe-show table.bpe-summary th, .bpe-show table.bpe-summary td { border: 1px solid #ccc; padding: 0.3em 0.8em;
  text-align: right; }
.bpe-show table.bpe-summary th:first-child, .bpe-show table.bpe-summary td:first-child { text-align: left; }
.bpe-show .bpe-columns { display: grid; grid-template-columns: repeat(var(--n), minmax(0, 1fr)); gap: 1.5em; }
.bpe-show .bpe-column h2 { font-size: 1em; margin: 0 0 0.5em 0; }
.bpe-show .bpe-stats { font-size: 0.85em; color: #555; margin-bottom: 0.5em; }
.bpe-show .bpe-tokens { font-family: ui-monospace, monospace; white-space: pre-wrap; overflow-wrap: anywhere;
  line-height: 1.9; font-size: 0.95em; }
.bpe-show .bpe-t { border-radius: 3px; padding: 1px 0; margin-right: 1px; color: #111; }
.bpe-show .bpe-t:hover { outline: 2px solid #333; }
.bpe-show .bpe-special { background: #333 !important; color: #fff; font-weight: bold; }
.bpe-show .bpe-partial::after { content: attr(data-hex); font-size: 0.75em; color: #555; }
.bpe-show .bpe-nl::before { content: "\\21b5"; color: #888; }
.bpe-show .bpe-tab::before { content: "\\21e5"; color: #888; }
.bpe-show .bpe-note { color: #a33; font-size: 0.85em; }
"""


def _page_token(index: int, token: Token) -> str:
    classes = ["bpe-t"]
    if token.special:
        classes.append("bpe-special")
    if token.partial:
        classes.append("bpe-partial")
    if "\n" in token.text:
        classes.append("bpe-nl")
    elif "\t" in token.text:
        classes.append("bpe-tab")
    background = PAGE_BACKGROUNDS[index % len(PAGE_BACKGROUNDS)]
    title = f"id {token.id} · {token.data!r}"
    hex_attribute = f' data-hex="{html.escape(_hex(token.tail))}"' if token.partial else ""
    return (f'<span class="{" ".join(classes)}" style="background:{background}" data-id="{token.id}"'
            f' title="{html.escape(title)}"{hex_attribute}>{html.escape(token.text)}</span>')


def html_fragment(views: Sequence[TokenView], prices: Optional[dict] = None) -> str:
    """The summary table and the columns, with their style: what a notebook shows."""
    prices = prices or {}
    priced = any(view.name in prices for view in views)
    rows = []
    for view in views:
        cost = ""
        if priced:
            price = prices.get(view.name)
            cost = f"<td>{'' if price is None else f'${view.n_tokens * price / 1e6:.6f}'}</td>"
        rows.append(f"<tr><td>{html.escape(view.name)}</td><td>{view.n_tokens}</td>"
                    f"<td>{view.chars_per_token:.2f}</td><td>{view.bytes_per_token:.2f}</td>{cost}</tr>")
    header = ("<tr><th>tokenizer</th><th>tokens</th><th>chars/token</th><th>bytes/token</th>"
              + ("<th>est. cost (USD)</th>" if priced else "") + "</tr>")
    columns = []
    for view in views:
        note = f'<div class="bpe-note">{html.escape(view.cut_note())}</div>' if view.cut else ""
        tokens = "".join(_page_token(index, token) for index, token in enumerate(view.tokens))
        columns.append(f'<div class="bpe-column" data-tokenizer="{html.escape(view.name)}">'
                       f"<h2>{html.escape(view.name)}</h2>"
                       f'<div class="bpe-stats">{view.n_tokens} tokens</div>{note}'
                       f'<div class="bpe-tokens">{tokens}</div></div>')
    return (f'<div class="{ROOT}"><style>{VIEW_STYLE}</style>'
            f'<table class="bpe-summary">{header}{"".join(rows)}</table>'
            f'<div class="bpe-columns" style="--n:{len(views)}">{"".join(columns)}</div></div>')


def render_html(views: Sequence[TokenView], prices: Optional[dict] = None, title: str = "bpe show") -> str:
    """One self-contained page: no script, font or file from anywhere else."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{PAGE_BODY_STYLE}</style></head><body>"
            f"{html_fragment(views, prices)}</body></html>\n")


def write_html(path: str, views: Sequence[TokenView], prices: Optional[dict] = None) -> str:
    """Write the page to ``path`` atomically."""
    atomic_write_text(os.fspath(path), render_html(views, prices))
    return os.fspath(path)


class TokenComparison:
    """What ``Tokenizer.show`` returns: ``str()`` is the terminal view, and a
    notebook renders ``_repr_html_``."""

    def __init__(self, views: Iterable[TokenView], prices: Optional[dict] = None):
        self.views = list(views)
        self.prices = prices

    def __str__(self) -> str:
        return render_terminal(self.views, color=color_wanted(), prices=self.prices)

    def __repr__(self) -> str:
        return render_terminal(self.views, color=False, prices=self.prices)

    def _repr_html_(self) -> str:
        return html_fragment(self.views, self.prices)


def show(tokenizer, text: str, name: str = "tokenizer", max_chars: Optional[int] = None) -> TokenComparison:
    """One tokenizer's tokens of ``text`` (``Tokenizer.show``)."""
    return TokenComparison([TokenView.of(name, tokenizer, text, max_chars)])
