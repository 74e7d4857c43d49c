"""``bpe.tiktoken`` is tiktoken's whole module: tiktoken's own test suite passes
against it, nothing deselected, and every encoding tiktoken defines ships with
bpe, its ids tiktoken's."""
import hashlib
import os
import subprocess
import sys
import textwrap

import pytest

import bpe
import bpe.tiktoken

from fetched import members
from tiktoken_reference import get_encoding as reference_encoding

TIKTOKEN = "tiktoken==0.14.0"
#: What tiktoken's registry expects of its files (sha256), from tiktoken_ext/openai_public.py.
EXPECTED_HASHES = {
    "gpt-2/encodings/main/vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
    "gpt-2/encodings/main/encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "encodings/r50k_base.tiktoken": "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
    "encodings/p50k_base.tiktoken": "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
    "encodings/cl100k_base.tiktoken": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "encodings/o200k_base.tiktoken": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}


@pytest.mark.parametrize("address", sorted(EXPECTED_HASHES))
def test_every_file_tiktoken_fetches_is_answered_from_the_package_byte_for_byte(address):
    from bpe.tiktoken.load import BLOB, read_file_cached

    contents = read_file_cached(BLOB + address)
    assert hashlib.sha256(contents).hexdigest() == EXPECTED_HASHES[address]


def test_the_encodings_tiktoken_builds_from_its_files_equal_the_shipped_ones():
    from bpe.tiktoken import load, openai_public

    for name in ("r50k_base", "p50k_base"):
        ranks = load.load_tiktoken_bpe(load.BLOB + f"encodings/{name}.tiktoken")
        assert ranks == openai_public.ENCODING_CONSTRUCTORS[name]()["mergeable_ranks"]
    gpt2 = load.data_gym_to_mergeable_bpe_ranks(load.BLOB + "gpt-2/encodings/main/vocab.bpe",
                                                load.BLOB + "gpt-2/encodings/main/encoder.json")
    assert gpt2 == openai_public.gpt2()["mergeable_ranks"]


@pytest.mark.parametrize("name", ["p50k_base", "p50k_edit", "o200k_harmony"])
def test_the_encodings_built_from_others_give_tiktoken_s_ids(name):
    tiktoken = pytest.importorskip("tiktoken")
    from bpe.tiktoken import openai_public

    arguments = openai_public.ENCODING_CONSTRUCTORS[name]()
    base = reference_encoding("o200k_base" if name == "o200k_harmony" else "r50k_base")
    if name != "o200k_harmony":
        assert set(base._mergeable_ranks.items()) < set(arguments["mergeable_ranks"].items())
    reference = tiktoken.Encoding(**arguments)
    ours = bpe.tiktoken.get_encoding(name)
    text = "Hello  world,\n    indented     code <|endoftext|> <|fim_prefix|> <|call|><|endofprompt|>"
    assert ours.encode(text, allowed_special="all") == reference.encode(text, allowed_special="all")
    assert ours.n_vocab == reference.n_vocab and ours.special_tokens_set == reference.special_tokens_set


def test_installed_as_tiktoken_every_submodule_is_ours(tmp_path):
    code = textwrap.dedent("""
        import bpe
        bpe.install_as_tiktoken()
        import tiktoken, tiktoken.core, tiktoken.load, tiktoken.model, tiktoken.registry
        import tiktoken_ext.openai_public
        from tiktoken.model import MODEL_TO_ENCODING
        from tiktoken.load import load_tiktoken_bpe
        enc = tiktoken.encoding_for_model("gpt-4o")
        assert "tiktoken" in str(type(enc)), type(enc)
        assert type(enc).__module__ == "bpe.tiktoken.core"
        assert tiktoken.registry.get_encoding("o200k_base") is enc
        assert tiktoken_ext.openai_public.ENCODING_CONSTRUCTORS["cl100k_base"]()["name"] == "cl100k_base"
        assert MODEL_TO_ENCODING["gpt-4"] == "cl100k_base"
        print(enc.encode("hello world"))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[24912, 2375]"


#: Hypothesis draws strings from the literals of "local" modules (those outside
#: site-packages). tiktoken, installed, is not local, so its suite never draws a
#: special token's name; bpe run from a checkout is, and `st.text()` would then
#: draw '<|endofprompt|>', which tiktoken's own encode refuses too. bpe's modules
#: are treated as installed, so the suite runs under the conditions it assumes.
#: (Private hypothesis API: if it moves, this fails loudly rather than drifting.)
SUITE_CONFTEST = textwrap.dedent("""
    import os
    import bpe, bpe.tiktoken
    from hypothesis.internal.conjecture import providers

    _package = os.path.dirname(os.path.realpath(bpe.__file__)) + os.sep
    _is_local = providers.is_local_module_file
    providers.is_local_module_file = (
        lambda path: not os.path.realpath(path).startswith(_package) and _is_local(path))
    bpe.tiktoken.install()
""")


def test_tiktoken_s_own_test_suite_passes_against_bpe(tmp_path):
    """tiktoken's tests, from its source distribution, run in a process of their
    own with bpe installed as tiktoken (in the process and, through a module on
    PYTHONPATH, in the interpreters its tests start)."""
    files = members(TIKTOKEN, "tests", source=True)
    suite = tmp_path / "tiktoken_suite"           # not "tiktoken": that name is the module's
    suite.mkdir()
    for path in files:
        (suite / os.path.basename(path)).write_bytes(open(path, "rb").read())
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "tiktoken.py").write_text("import bpe.tiktoken\nbpe.tiktoken.install()\n")
    (tmp_path / "conftest.py").write_text(SUITE_CONFTEST)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(shim), os.environ.get("PYTHONPATH", "")]))
    env.pop("TIKTOKEN_CACHE_DIR", None)
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite),
                             "-W", "ignore::DeprecationWarning"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200)
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "33 passed" in summary and "skipped" not in summary and "deselected" not in summary, summary
    # ... and it was bpe that ran them: the real tiktoken was never imported there.
    check = subprocess.run([sys.executable, "-c", "import tiktoken; print(tiktoken.Encoding.__module__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert check.stdout.strip() == "bpe.tiktoken.core", check.stderr
