"""Draw docs/performance.png from the measured results in benchmarks/results/*.jsonl.

    python benchmarks/plot_results.py

The numbers come only from the JSON lines the benchmark scripts append
(--json benchmarks/results/...): nothing here is typed in.
"""
from __future__ import annotations

import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
OUT = os.path.join(HERE, "..", "docs", "performance.png")
COLORS = {"bpe": "#1f77b4", "rustbpe": "#ff7f0e", "hf_tokenizers": "#2ca02c", "gigatoken": "#9467bd",
          "tiktoken": "#d62728", "bpe.pure": "#8c564b"}
#: bench_per_core.py's engine names -> the chart's.
PER_CORE_NAMES = {"bpe": "bpe", "gigatoken": "gigatoken", "tiktoken": "tiktoken", "HF tokenizers": "hf_tokenizers"}


def read(name: str) -> list[dict]:
    path = os.path.join(RESULTS, name)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def latest(rows: list[dict], *keys: str) -> list[dict]:
    """The last row for each combination of ``keys`` (later runs replace earlier ones)."""
    kept = {}
    for row in rows:
        kept[tuple(row[k] for k in keys)] = row
    return list(kept.values())


def cold_rates(name: str) -> dict[str, dict[str, float]]:
    """bench_per_core.py's latest cold MB/s per engine, grouped by encoding and corpus."""
    groups = {}
    for row in latest(read(name), "encoding", "corpus"):
        key = f"{row['encoding'].replace('_base', '')}\n{row['corpus'].split('_')[0]}"
        groups[key] = {PER_CORE_NAMES[engine]: rate["cold"] for engine, rate in row["mb_per_s"].items()}
    return groups


def bars(ax, groups: dict[str, dict[str, float]], ylabel: str, title: str, fmt: str) -> None:
    names = sorted({name for values in groups.values() for name in values},
                   key=list(COLORS).index)
    width = 0.8 / max(len(names), 1)
    for i, name in enumerate(names):
        xs, ys = [], []
        for g, values in enumerate(groups.values()):
            if name in values:
                xs.append(g + (i - (len(names) - 1) / 2) * width)
                ys.append(values[name])
        rects = ax.bar(xs, ys, width, label=name, color=COLORS[name])
        ax.bar_label(rects, labels=[fmt.format(y) for y in ys], fontsize=7, padding=1)
    ax.set_xticks(range(len(groups)), list(groups))
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)


def main() -> None:
    fig, axes = plt.subplots(1, 4, figsize=(21, 4.8))
    train = latest(read("train.jsonl"), "trainer", "corpus")
    groups: dict[str, dict[str, float]] = {}
    for row in train:
        groups.setdefault(f"{row['corpus']}\nvocab {row['vocab_size']}", {})[row["trainer"]] = row["seconds"]
    bars(axes[0], groups, "seconds (lower is better)", "Training, 2 cores", "{:.1f}")
    axes[0].set_yscale("log")

    bars(axes[1], cold_rates("per_core_batch.jsonl"), "MB/s, one thread (higher is better)",
         "Encoding 10 MB in one batch call, cold, identical ids", "{:.0f}")

    bars(axes[3], cold_rates("per_core.jsonl"), "MB/s, one thread (higher is better)",
         "Encoding document by document, cold, every peer", "{:.0f}")

    pure_path = os.path.join(RESULTS, "pure.json")   # pytest-benchmark's --benchmark-json output
    pure = json.load(open(pure_path)) if os.path.exists(pure_path) else {"benchmarks": []}
    groups = {}
    for bench in pure["benchmarks"]:
        task, impl = bench["name"].replace("test_", "").rsplit("_", 1)
        groups.setdefault(task, {})["bpe" if impl == "cython" else "bpe.pure"] = bench["stats"]["mean"] * 1e3
    bars(axes[2], groups, "milliseconds (lower is better)", "bpe against its pure-Python twin", "{:.1f}")
    axes[2].set_yscale("log")
    for ax in (axes[1], axes[3]):
        ax.set_ylim(top=ax.get_ylim()[1] * 1.35)      # room for the legend above the bars

    fig.tight_layout()
    fig.savefig(OUT, dpi=110)
    print(os.path.abspath(OUT))


if __name__ == "__main__":
    main()
