"""Nothing lost, nothing wrong: resumed shards, concurrent runs, dtypes, an
untrusted manifest, sharded arrays indexed as numpy indexes, ``bpe decode``
of sharded output, and ``bpe show`` on untrusted text, a page, a huge file
and a notebook."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import bpe
from bpe.errors import TokenArrayError
from bpe.corpus.token_array import TEMPORARY_PREFIX, temporary_prefix

EOT = "<|endoftext|>"


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(f"hello world {EOT} second doc here {EOT} " * 400, encoding="utf-8")
    return path


def cli(*args, check=True):
    result = subprocess.run([sys.executable, "-m", "bpe", *args], capture_output=True, text=True, timeout=300)
    if check:
        assert result.returncode == 0, result.stderr
    return result


# ------------------------------------------------------------------ resumed shards

@pytest.mark.parametrize("change", [{"allowed_special": set()}, {"dtype": np.uint32}, {"errors": "replace"}])
def test_a_resumed_run_with_other_settings_encodes_again(corpus, tmp_path, change):
    tok = bpe.load("gpt2")
    out = tmp_path / "shards"
    first = bpe.corpus.encode_shards(tok, corpus, out, shard_bytes=4000)
    again = bpe.corpus.encode_shards(tok, corpus, out, shard_bytes=4000)
    assert again.written == [] and len(again.skipped) == first.shards        # same settings: all kept
    changed = bpe.corpus.encode_shards(tok, corpus, out, shard_bytes=4000, **change)
    assert changed.skipped == [] and len(changed.written) == first.shards
    tokens = bpe.open_tokens(out)
    text = corpus.read_text(encoding="utf-8")
    allowed = change.get("allowed_special", "all")
    assert np.asarray(tokens).tolist() == tok.encode(text, allowed_special=allowed)
    assert tokens.dtype == np.dtype(change.get("dtype", np.uint16))


def test_a_finishing_run_removes_only_its_own_output_s_working_directories(tmp_path, corpus):
    # "tok" and "tok-val": one name a prefix of the other. A run on "tok" must
    # not take "tok-val"'s working directory for a dead run's.
    assert not temporary_prefix(str(tmp_path / "tok-val")).startswith(temporary_prefix(str(tmp_path / "tok")))
    other = tmp_path / (temporary_prefix(str(tmp_path / "tok-val")) + "live")
    other.mkdir()
    dead = tmp_path / (temporary_prefix(str(tmp_path / "tok")) + "dead")
    dead.mkdir()
    bpe.load("gpt2").encode_file(corpus, tmp_path / "tok")
    assert other.exists() and not dead.exists()
    assert all(name.startswith(TEMPORARY_PREFIX) is False or name == other.name for name in os.listdir(tmp_path))


# ------------------------------------------------------------------ dtypes

def test_signed_dtypes_are_refused_where_asked_for_and_where_read(corpus, tmp_path):
    tok = bpe.load("gpt2")
    with pytest.raises(ValueError, match="not an unsigned integer dtype"):
        tok.encode_file(corpus, tmp_path / "signed.bin", dtype=np.int32)
    with pytest.raises(ValueError, match="not an unsigned integer dtype"):
        bpe.corpus.encode_shards(tok, corpus, tmp_path / "shards", dtype=np.int32)
    assert not os.path.exists(tmp_path / "signed.bin") and not os.path.exists(tmp_path / "shards" / "plan.json")
    result = cli("encode", str(corpus), "--tokenizer", "gpt2", "-o", str(tmp_path / "x.bin"), "--dtype", "int32",
                 check=False)
    assert result.returncode == 2 and "invalid choice: 'int32'" in result.stderr
    assert tok.encode_to_numpy("hello", dtype=np.int64).dtype == np.int64       # in memory, any integer type
    # The reader: one rule with the writer.
    tok.encode_file(corpus, tmp_path / "ok.bin")
    sidecar = tmp_path / "ok.bin.json"
    metadata = json.loads(sidecar.read_text())
    sidecar.write_text(json.dumps(dict(metadata, dtype="int16")))
    with pytest.raises(TokenArrayError, match="not an unsigned integer dtype"):
        bpe.open_tokens(tmp_path / "ok.bin")


# ------------------------------------------------------------------ the manifest is not trusted

@pytest.fixture
def sharded(corpus, tmp_path):
    tok = bpe.load("gpt2")
    out = tmp_path / "shards"
    bpe.corpus.encode_shards(tok, corpus, out, shard_bytes=3000, chunk_size=1024)
    return out, np.array(tok.encode(corpus.read_text(encoding="utf-8")), dtype=np.uint16)


def edit_manifest(directory, change):
    path = directory / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


@pytest.mark.parametrize("dtype", ["uint8", "float16", "uint32"])
def test_a_manifest_dtype_that_is_not_the_shards_is_refused(sharded, dtype):
    directory, _ = sharded
    edit_manifest(directory, lambda m: m.update(dtype=dtype))
    with pytest.raises(TokenArrayError, match=r"manifest.json: field 'dtype' is"):
        bpe.open_tokens(directory)


@pytest.mark.parametrize("path", ["../elsewhere/x.bin", "/etc/passwd", "sub/shard-00000.bin", "..", ""])
def test_shard_paths_stay_inside_their_directory(sharded, path):
    directory, _ = sharded
    edit_manifest(directory, lambda m: m["shards"][0].update(path=path))
    with pytest.raises(TokenArrayError, match="is not a file name in"):
        bpe.open_tokens(directory)


# ------------------------------------------------------------------ indexing as numpy does

def test_sharded_tokens_index_exactly_as_the_array_they_stand_for(sharded):
    directory, expected = sharded
    tokens = bpe.open_tokens(directory)
    assert len(tokens.shards) > 3
    n = len(expected)
    rng = np.random.default_rng(0)
    mask = rng.random(n) < 0.3
    cases = [slice(None), slice(5, 900), slice(None, None, 7), slice(n - 3, 2, -5), slice(None, None, -1),
             slice(-50, None), slice(10, 10), slice(900, 100), slice(3, 2000, 13), slice(-1, -n - 5, -17)]
    for index in cases:
        assert np.array_equal(tokens[index], expected[index]), index
    for index in [mask, np.zeros(n, bool), rng.integers(-n, n, 50), [0, -1, 3], [], np.array([], np.int64)]:
        assert np.array_equal(tokens[index], expected[index])
    assert tokens[-1] == expected[-1] and tokens[np.int64(7)] == expected[7]
    for bad in [1.5, np.float64(2.0), "1", None, (0, 1), True]:
        with pytest.raises(IndexError):
            tokens[bad]
    with pytest.raises(IndexError, match="out of bounds"):
        tokens[n]
    with pytest.raises(IndexError, match="does not match"):
        tokens[mask[:-1]]


def test_a_slice_of_sharded_tokens_costs_about_its_output(tmp_path):
    tok = bpe.load("gpt2")
    path = tmp_path / "big.txt"
    path.write_text("hello world " * 600_000, encoding="utf-8")
    bpe.corpus.encode_shards(tok, path, tmp_path / "shards", shard_bytes=1 << 20)
    tokens = bpe.open_tokens(tmp_path / "shards")
    import tracemalloc

    tracemalloc.start()
    part = tokens[1000:len(tokens) - 1000]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert part.nbytes > 2_000_000 and peak < 2.5 * part.nbytes       # not 20 bytes a token


def test_bpe_decode_reads_sharded_output(sharded):
    directory, expected = sharded
    result = cli("decode", str(directory), "--tokenizer", "gpt2", "--head", "6")
    assert result.stdout.rstrip("\n") == bpe.load("gpt2").decode(expected[:6].tolist())
    refused = cli("decode", str(directory), "--tokenizer", "cl100k_base", check=False)
    assert refused.returncode == 2 and "another tokenizer" in refused.stderr


def test_shard_mb_must_be_a_finite_size(corpus, tmp_path):
    for value in ["inf", "nan", "-1", "0"]:
        result = cli("encode", str(corpus), "--tokenizer", "gpt2", "-o", str(tmp_path / "s"), "--shard-mb", value,
                     check=False)
        assert result.returncode == 2 and f"--shard-mb {float(value)}" in result.stderr.replace("nan", "nan"), \
            result.stderr


# ------------------------------------------------------------------ bpe show

def test_show_makes_every_control_character_visible(tmp_path):
    path = tmp_path / "evil.txt"
    path.write_text("rm -rf ~ \r# harmless comment\x1b]0;title\x07\x1b[2J\x08\x85\u202eabc\u200b", encoding="utf-8")
    for color in (True, False):
        from bpe.view import TokenView, render_terminal

        view = TokenView.of("gpt2", bpe.load("gpt2"), path.read_bytes().decode("utf-8"))
        shown = render_terminal([view], color=color)
        body = shown.replace("\x1b[0m", "").split("\n", 1)[1]
        import re

        body = re.sub(r"\x1b\[[0-9;]*m", "", body)           # our own colours, and nothing else
        assert not any(c in body for c in "\r\x07\x08\x85\u202e\u200b\x1b"), repr(body)
        if color:
            assert "␍" in body and "␛" in body and "⟨U+202E⟩" in body


def test_show_refuses_to_write_its_page_over_its_input(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("precious notes", encoding="utf-8")
    result = cli("show", str(path), "--tokenizer", "gpt2", "--html", str(path), check=False)
    assert result.returncode == 2 and "is the input" in result.stderr
    assert path.read_text(encoding="utf-8") == "precious notes"


def test_show_reads_only_what_it_shows_and_counts_the_whole_file(tmp_path):
    path = tmp_path / "big.txt"
    line = "The quick brown fox jumps over the lazy dog. " * 20 + "\n"
    with open(path, "w", encoding="utf-8") as file:
        for _ in range(40_000):                    # 36 MB
            file.write(line)
    # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a child of a big
    # pytest process would report the parent's size.
    script = (f"import sys; from bpe.cli import main; "
              f"main(['show', {str(path)!r}, '--tokenizer', 'gpt2', '--max-chars', '20']); "
              f"print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM')), "
              f"file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    peak_kib = int(result.stderr.strip().splitlines()[-1])
    assert peak_kib < 150_000, peak_kib                      # the file is 36 MB, bpe and gpt2 60: not 5x it
    expected = len(bpe.load("gpt2").encode(line)) * 40_000 - 0            # lines encode alike, joined
    first = result.stdout.splitlines()[0]
    n_tokens = int(first.split(": ")[1].split(" tokens")[0])
    assert abs(n_tokens - expected) <= 40_000, (n_tokens, expected)
    assert "the counts are the whole input's" in result.stdout, result.stdout[:300]


def test_show_refuses_a_missing_file_or_a_directory_and_takes_literal_text_with_text(tmp_path):
    missing = cli("show", str(tmp_path / "notse.txt"), "--tokenizer", "gpt2", check=False)
    assert missing.returncode == 2 and "no such file" in missing.stderr and "--text" in missing.stderr
    folder = cli("show", str(tmp_path), "--tokenizer", "gpt2", check=False)
    assert folder.returncode == 2 and "is a directory" in folder.stderr
    literal = cli("show", "--text", "notse.txt", "--tokenizer", "gpt2")
    assert "'not' 'se' '.' 'txt'" in literal.stdout


def test_the_notebook_view_restyles_nothing_outside_itself():
    page = bpe.load("gpt2").show("Hello world", name="gpt2")._repr_html_()
    assert page.startswith('<div class="bpe-show">') and page.endswith("</div>")
    import re

    css = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    rules = [rule.split("{")[0].strip() for rule in css.split("}") if "{" in rule]
    for selectors in rules:
        for selector in selectors.split(","):
            assert selector.strip().startswith(".bpe-show "), selector
    assert "body" not in css


# ------------------------------------------------------------------ memory of one outsized call

def rss_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))


def test_one_huge_pre_token_gives_back_its_scratch():
    tok = bpe.load("o200k_base")
    tok.encode_to_numpy("warm up " * 100)
    before = rss_kib()
    ids = tok.encode_to_numpy("ACGT" * 2_500_000)                 # one 10 MB pre-token
    assert len(ids) > 0
    del ids
    assert rss_kib() - before < 60_000                            # not the 240 MB it used to keep


def test_encode_with_unstable_stays_bounded():
    import tracemalloc

    enc = bpe.get_encoding("cl100k_base")
    enc.encode_with_unstable("x  ")                   # the sorted tokens, made once
    tracemalloc.start()
    stable, completions = enc.encode_with_unstable("x" + " " * 1000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert completions
    # Every candidate at once held 52 MB in their bytes alone here (and 425 MB
    # in all after 3000 spaces); a batch at a time holds about 16.
    assert peak < 40_000_000, peak


def test_encoding_with_a_custom_pattern_drops_unmatched_text_as_tiktoken_does():
    tiktoken = pytest.importorskip("tiktoken")
    base = bpe.get_encoding("r50k_base")
    ours = bpe.Encoding("words", pat_str=r"\w+", mergeable_ranks=base._mergeable_ranks, special_tokens={})
    theirs = tiktoken.Encoding("words", pat_str=r"\w+", mergeable_ranks=base._mergeable_ranks, special_tokens={})
    for text in ["hello, world", "  a b  ", "!!!", ""]:
        assert ours.encode(text) == theirs.encode(text)
    # Tokenizer keeps its own rule (Hugging Face's Split, isolated): nothing dropped.
    assert bpe.Tokenizer(base.tokenizer.vocab, None, pattern=r"\w+").decode(
        bpe.Tokenizer(base.tokenizer.vocab, None, pattern=r"\w+").encode("hello, world")) == "hello, world"
