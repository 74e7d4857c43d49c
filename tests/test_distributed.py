"""Beyond one machine: counting, training and encoding on a local 2-CPU Ray
cluster give exactly the single-machine results; shards resume; ranks of a
job array add up to the same output; a worker killed mid-task changes nothing."""
import os
import subprocess
import sys

import numpy as np
import pytest

import bpe
from bpe.corpus import shards as shards_module

from conftest import SHAKESPEARE, random_corpus

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    """The shipped corpus, files with separators and multi-byte text, one without separators."""
    directory = tmp_path_factory.mktemp("corpora")
    texts = {
        "separated.txt": EOT.join(random_corpus(seed, n_words=2500) for seed in range(6)),
        "multibyte.txt": (EOT + "日本語のテキスト 😀 naïve Ελληνικά\n").join(
            random_corpus(10 + seed, n_words=800) for seed in range(5)),
        "plain.txt": open(SHAKESPEARE, encoding="utf-8").read()[:400_000],
    }
    for name, text in texts.items():
        (directory / name).write_text(text, encoding="utf-8")
    return [SHAKESPEARE] + [str(directory / name) for name in texts]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    ray = pytest.importorskip("ray")
    fault_dir = tmp_path_factory.mktemp("faults")
    os.environ["BPE_FAULT_DIR"] = str(fault_dir)       # inherited by the workers started below
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    from bpe import distributed

    yield distributed, fault_dir
    ray.shutdown()
    del os.environ["BPE_FAULT_DIR"]


def test_counts_and_merges_equal_one_machine(cluster, corpora):
    distributed, _ = cluster
    expected = bpe.count_pretokens(corpora, [EOT], num_workers=1)
    assert distributed.count(corpora, [EOT], chunk_size=200_000) == expected
    assert distributed.count(corpora, [EOT], chunk_size=90_000, n_buckets=3) == expected
    assert distributed.count(corpora[-1:], [EOT], pattern="o200k", chunk_size=50_000) == \
        bpe.count_pretokens(corpora[-1:], [EOT], pattern="o200k", num_workers=1)
    tok = distributed.train(corpora, 256 + 1 + 400, [EOT], chunk_size=150_000)
    assert tok.merges == bpe.train(corpora, 256 + 1 + 400, [EOT], num_workers=1).merges


def test_encoding_equals_encode_file(cluster, corpora, tmp_path):
    distributed, _ = cluster
    tok = bpe.load("gpt2")
    summary = distributed.encode(tok, corpora, tmp_path / "shards", shard_bytes=300_000, chunk_size=100_000)
    assert summary.shards > 3 and len(summary.written) == summary.shards and summary.manifest
    single = tok.encode_file(corpora, tmp_path / "one.bin")
    tokens = bpe.open_tokens(tmp_path / "shards")
    assert np.array_equal(np.asarray(tokens), bpe.open_tokens(single.output))
    assert np.array_equal(bpe.read_document_index(tmp_path / "shards"), bpe.read_document_index(single.output))
    manifest = bpe.corpus.token_array.read_manifest(tmp_path / "shards")
    assert manifest["n_tokens"] == single.tokens_out and manifest["n_documents"] == single.documents
    assert [entry["path"] for entry in manifest["shards"]] == sorted(entry["path"] for entry in manifest["shards"])
    again = distributed.encode(tok, corpora, tmp_path / "shards", shard_bytes=300_000, chunk_size=100_000)
    assert again.written == [] and len(again.skipped) == summary.shards       # resumable: nothing to redo


def test_a_worker_killed_mid_task_changes_nothing(cluster, corpora, tmp_path):
    distributed, fault_dir = cluster
    tok = bpe.load("gpt2")
    (fault_dir / distributed.KILL_MARKER).write_text("")
    summary = distributed.encode(tok, corpora, tmp_path / "shards", shard_bytes=300_000, chunk_size=100_000)
    assert not (fault_dir / distributed.KILL_MARKER).exists()                 # a task died on it
    single = tok.encode_file(corpora, tmp_path / "one.bin")
    assert np.array_equal(np.asarray(bpe.open_tokens(summary.directory)), bpe.open_tokens(single.output))
    assert sorted(os.listdir(summary.directory)) == sorted(
        ["manifest.json", "plan.json"] + [name + suffix for name in summary.written
                                          for suffix in ("", ".json", ".docs.npy")])   # no stray file
    (fault_dir / distributed.KILL_MARKER).write_text("")
    assert distributed.count(corpora, [EOT], chunk_size=200_000) == bpe.count_pretokens(corpora, [EOT],
                                                                                       num_workers=1)


def test_ranks_of_a_job_array_add_up_to_one_machine(corpora, tmp_path):
    out = tmp_path / "shards"
    common = [sys.executable, "-m", "bpe", "encode", *corpora, "--tokenizer", "gpt2", "-o", str(out),
              "--shard-mb", "0.3", "--world-size", "2", "--quiet"]
    processes = [subprocess.Popen(common + ["--rank", str(rank)], stderr=subprocess.PIPE, text=True)
                 for rank in (0, 1)]
    for process in processes:
        assert process.wait(timeout=300) == 0, process.stderr.read()
    early = subprocess.run([sys.executable, "-c", f"import bpe; bpe.open_tokens({str(out)!r})"],
                           capture_output=True, text=True)
    assert early.returncode != 0 and "manifest.json: no such file" in early.stderr    # not finalized yet
    result = subprocess.run([sys.executable, "-m", "bpe", "encode", "--finalize", str(out)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    single = bpe.load("gpt2").encode_file(corpora, tmp_path / "one.bin")
    assert np.array_equal(np.asarray(bpe.open_tokens(out)), bpe.open_tokens(single.output))


def test_a_run_stopped_part_way_resumes_with_the_rest(corpora, tmp_path, monkeypatch):
    tok = bpe.load("gpt2")
    real = shards_module.encode_chunks
    calls = []

    def stop_at_the_fourth(*args, **kwargs):
        calls.append(args[2])
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(shards_module, "encode_chunks", stop_at_the_fourth)
    with pytest.raises(KeyboardInterrupt):
        bpe.corpus.encode_shards(tok, corpora, tmp_path / "shards", shard_bytes=300_000, chunk_size=100_000)
    monkeypatch.setattr(shards_module, "encode_chunks", real)
    summary = bpe.corpus.encode_shards(tok, corpora, tmp_path / "shards", shard_bytes=300_000, chunk_size=100_000)
    assert len(summary.skipped) == 3 and len(summary.written) == summary.shards - 3
    single = tok.encode_file(corpora, tmp_path / "one.bin")
    assert np.array_equal(np.asarray(bpe.open_tokens(tmp_path / "shards")), bpe.open_tokens(single.output))
    # A changed input makes its shards stale again, and only those.
    with open(corpora[-1], "a", encoding="utf-8") as f:
        f.write(" appended")
    redo = bpe.corpus.encode_shards(tok, corpora, tmp_path / "shards", shard_bytes=300_000, chunk_size=100_000)
    assert 0 < len(redo.written) < redo.shards
    assert np.array_equal(np.asarray(bpe.open_tokens(tmp_path / "shards")),
                          bpe.open_tokens(tok.encode_file(corpora, tmp_path / "two.bin").output))


def test_sharded_output_feeds_the_data_loader(corpora, tmp_path):
    tok = bpe.load("gpt2")
    bpe.corpus.encode_shards(tok, corpora[:2], tmp_path / "shards", shard_bytes=200_000, chunk_size=100_000)
    tokens = bpe.open_tokens(tmp_path / "shards")
    whole = np.asarray(tokens)
    assert len(tokens.shards) > 1 and tokens[3] == whole[3] and np.array_equal(tokens[10:20], whole[10:20])
    starts = bpe.TokenDataset(tmp_path / "shards", 64, within_documents=True, seed=0).window_starts(8)
    x, y = bpe.TokenDataset(tmp_path / "shards", 64, within_documents=True, seed=0).get_batch(8)
    for start, row_x, row_y in zip(starts, x, y):           # windows across shards are slices of the whole
        assert np.array_equal(row_x, whole[start:start + 64]) and np.array_equal(row_y, whole[start + 1:start + 65])


def test_without_ray_the_module_says_how_to_install_it():
    script = ("import sys; sys.modules['ray'] = None\n"
              "try:\n    import bpe.distributed\nexcept ImportError as e:\n    print(e)")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert 'pip install "bpe[ray]"' in result.stdout
    imported = subprocess.run([sys.executable, "-c", "import bpe, sys; print('ray' in sys.modules)"],
                              capture_output=True, text=True, timeout=60)
    assert imported.stdout.strip() == "False"                                  # import bpe never imports ray


def test_the_command_line_on_ray(corpora, tmp_path):
    pytest.importorskip("ray")
    trained = subprocess.run([sys.executable, "-m", "bpe", "train", *corpora, "--vocab-size", "400",
                              "--special-token", EOT, "-o", str(tmp_path / "tok"), "--ray", "--quiet"],
                             capture_output=True, text=True, timeout=300)
    assert trained.returncode == 0, trained.stderr[-2000:]
    assert bpe.load(tmp_path / "tok").merges == bpe.train(corpora, 400, [EOT], num_workers=1).merges
    encoded = subprocess.run([sys.executable, "-m", "bpe", "encode", *corpora, "--tokenizer", str(tmp_path / "tok"),
                              "-o", str(tmp_path / "shards"), "--ray", "--shard-mb", "0.3"],
                             capture_output=True, text=True, timeout=300)
    assert encoded.returncode == 0, encoded.stderr[-2000:]
    assert "read with: bpe.open_tokens(" in encoded.stdout
    single = bpe.load(tmp_path / "tok").encode_file(corpora, tmp_path / "one.bin")
    assert np.array_equal(np.asarray(bpe.open_tokens(tmp_path / "shards")), bpe.open_tokens(single.output))
