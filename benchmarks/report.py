"""Draw the README's results table, docs/performance.md's tables and the chart
from saved results, so that none of them can drift from the data.

    python benchmarks/report.py benchmarks/results/*.json

Reads the suite's ``--benchmark-json`` files and the scripts' ``--save`` files
(the same layout), and rewrites what lies between the ``<!-- results -->``
markers of README.md and the ``<!-- tables -->`` markers of
docs/performance.md, and docs/performance.png (matplotlib, from the "peers"
extra). Throughput is megabytes of UTF-8 per second at the best round.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
LIBRARIES = ["bpe", "bpe.tiktoken", "tiktoken", "gigatoken", "tokenizers", "rustbpe", "bpe.pure"]
NAMES = ["gpt2", "cl100k_base", "o200k_base"]
#: The README's rows: (task, the group name with {name} standing for each vocabulary).
SUMMARY = [
    ("train, vocab 10 000", "train, vocab 10000"),
    ("train prose_en.txt (129 MB), vocab 10 000, whole process", "train prose_en.txt, vocab 10000, whole process"),
    ("train code_linux.txt (1.28 GB), vocab 32 000, whole process",
     "train code_linux.txt, vocab 32000, whole process"),
    ("encode per document, cold", "encode per document, cold, {name}"),
    ("encode per document, warm", "encode per document, warm, {name}"),
    ("encode one batch, cold, 2 threads", "encode one batch, cold, 2 threads, {name}"),
    ("one call on 83 characters, warm", "one call on 83 chars, warm, {name}"),
    ("one call on 2 characters, warm", "one call on 2 chars, warm, {name}"),
    ("a corpus file to a token array, 2 threads", "a corpus file to a token array, 2 threads, {name}"),
    ("import, load and first encode in a fresh process", "import, load and first encode in a fresh process, {name}"),
    ("decode a list of ids", "decode a list of ids, {name}"),
    ("count the tokens of one text, cold", "count the tokens of one text, cold, {name}"),
    ("train 100 kB, vocab 457, against bpe.pure", "train, vocab 457 (bpe.pure's sample)"),
    ("encode 100 kB in one call, cold, gpt2, against bpe.pure", "encode one text, cold, gpt2 (bpe.pure's sample)"),
]


def load(paths: list[str]) -> tuple[dict, list[dict]]:
    """The machine of the first file, and every measurement of all of them."""
    machine, entries = None, []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        machine = machine or {**record["machine_info"], "commit": record["commit_info"].get("id", "?")[:9],
                              "datetime": record["datetime"][:10]}
        entries += record["benchmarks"]
    return machine, entries


def duration(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3g} s"
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.3g} µs"


def value(entry: dict) -> str:
    """MB/s at the best round where a size is known, else the best round's time."""
    seconds, mb = entry["stats"]["min"], entry["extra_info"].get("mb", 0)
    if mb >= 1e-3:
        rate = mb / seconds
        return f"{rate:.0f}" if rate >= 10 else f"{rate:.2g}"
    return duration(seconds)


def label(entry: dict) -> str:
    info = entry["extra_info"]
    return f"`{info['call']}` ({info['output']})"


def grouped(entries: list[dict]) -> dict[str, list[dict]]:
    groups = collections.defaultdict(list)
    for entry in entries:
        groups[entry["group"]].append(entry)
    return groups


def summary_table(groups: dict[str, list[dict]]) -> str:
    """One row per task: for each library, each of its calls with its figures
    for gpt2 / cl100k / o200k (MB/s, or time where no size applies)."""
    rows = ["| task (gpt2 / cl100k / o200k) | " + " | ".join(LIBRARIES) + " |",
            "|---|" + "---|" * len(LIBRARIES)]
    for task, pattern in SUMMARY:
        names = NAMES if "{name}" in pattern else [None]
        found = [groups.get(pattern.format(name=name), []) for name in names]
        if not any(found):
            continue
        cells = []
        for library in LIBRARIES:
            calls = collections.OrderedDict()
            for entries in found:
                for entry in entries:
                    if entry["extra_info"]["library"] == library:
                        calls.setdefault(label(entry), []).append(value(entry) + rss(entry))
            cells.append("<br>".join(f"{' / '.join(values)} {call}" for call, values in calls.items()) or "–")
        unit = "MB/s" if found[0] and found[0][0]["extra_info"].get("mb", 0) >= 1e-3 else "time"
        rows.append(f"| {task}, {unit} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def rss(entry: dict) -> str:
    peak = entry["extra_info"].get("peak_rss_mib")
    return f", {peak:.0f} MiB" if peak else ""


def group_tables(groups: dict[str, list[dict]]) -> str:
    """Every group: each candidate's best and median round, and its speed
    against bpe's best in the group."""
    out = []
    for group in sorted(groups):
        entries = sorted(groups[group], key=lambda e: e["stats"]["min"])
        bpe_best = min((e["stats"]["min"] for e in entries if e["extra_info"]["library"] == "bpe"), default=None)
        mb = entries[0]["extra_info"].get("mb", 0)
        out += [f"#### {group}" + (f" ({mb:.3g} MB)" if mb >= 1e-3 else ""), "",
                "| library | call (output) | best | median | MB/s | peak RSS | bpe's best is |",
                "|---|---|---:|---:|---:|---:|---:|"]
        for e in entries:
            stats, info = e["stats"], e["extra_info"]
            rate = f"{info['mb'] / stats['min']:.3g}" if info.get("mb", 0) >= 1e-3 else ""
            against = f"{stats['min'] / bpe_best:.2f}x" if bpe_best else ""
            peak = f"{info['peak_rss_mib']:.0f} MiB" if info.get("peak_rss_mib") else ""
            out.append(f"| {info['library']} | {label(e)} | {duration(stats['min'])} | {duration(stats['median'])} | "
                       f"{rate} | {peak} | {against} |")
        out.append("")
    return "\n".join(out)


def machine_line(machine: dict) -> str:
    cpu = machine.get("cpu", {})
    libraries = ", ".join(f"{k} {v}" for k, v in machine.get("libraries", {}).items())
    return (f"Measured {machine['datetime']} at commit {machine['commit']} on {cpu.get('brand_raw', '?')}, "
            f"{cpu.get('count', '?')} cores, Python {machine.get('python_version', '?')}; {libraries}.")


def replace_between(path: str, marker: str, text: str, check: bool) -> bool:
    """Put ``text`` between the page's markers; with ``check``, only say whether
    it is there already."""
    with open(path, encoding="utf-8") as f:
        page = f.read()
    pattern = re.compile(rf"(<!-- {marker} -->\n).*?(<!-- /{marker} -->)", re.DOTALL)
    if not pattern.search(page):
        raise SystemExit(f"{path}: no <!-- {marker} --> ... <!-- /{marker} --> markers")
    drawn = pattern.sub(lambda m: m.group(1) + text + "\n" + m.group(2), page)
    if check:
        return drawn == page
    with open(path + ".part", "w", encoding="utf-8") as f:
        f.write(drawn)
    os.replace(path + ".part", path)
    return True


def chart(groups: dict[str, list[dict]], path: str) -> None:
    """Each SUMMARY task (cl100k_base where there are several vocabularies): every
    candidate's speed relative to bpe's best, on a log scale."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = []
    for task, pattern in SUMMARY:
        entries = groups.get(pattern.format(name="cl100k_base"), [])
        bpe_best = min((e["stats"]["min"] for e in entries if e["extra_info"]["library"] == "bpe"), default=None)
        if bpe_best:
            rows.append((task, sorted(((bpe_best / e["stats"]["min"], f"{e['extra_info']['library']} "
                                       f"{e['extra_info']['call']}") for e in entries), reverse=True)))
    height = sum(len(bars) for _, bars in rows) * 0.22 + len(rows) * 0.5
    figure, axes = plt.subplots(len(rows), 1, figsize=(9, height), squeeze=False)
    for axis, (task, bars) in zip(axes[:, 0], rows):
        speeds = [speed for speed, _ in bars][::-1]
        names = [name for _, name in bars][::-1]
        colours = ["tab:blue" if name.startswith("bpe ") else "tab:gray" for name in names]
        axis.barh(range(len(bars)), speeds, color=colours)
        axis.set_yticks(range(len(bars)), names, fontsize=7)
        axis.set_xscale("log")
        axis.axvline(1.0, color="black", linewidth=0.6)
        axis.set_title(task + (" (cl100k_base)" if "cl100k" not in task else ""), fontsize=8, loc="left")
        axis.tick_params(axis="x", labelsize=7)
    axes[-1, 0].set_xlabel("speed relative to bpe's best (log scale; higher is faster)", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="saved results (.json)")
    parser.add_argument("--no-chart", action="store_true", help="leave docs/performance.png as it is")
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 unless the pages hold what the results draw")
    args = parser.parse_args()
    machine, entries = load(args.results)
    groups = grouped(entries)
    pages = [(os.path.join(ROOT, "README.md"), "results", summary_table(groups)),
             (os.path.join(ROOT, "docs", "performance.md"), "tables", group_tables(groups))]
    stale = [path for path, marker, table in pages
             if not replace_between(path, marker, machine_line(machine) + "\n\n" + table, args.check)]
    if args.check:
        if stale:
            raise SystemExit(f"not drawn from {' '.join(args.results)}: {', '.join(stale)} "
                             f"(run python benchmarks/report.py with them)")
        print(f"{len(entries)} measurements in {len(groups)} groups: the pages hold what they draw")
        return
    if not args.no_chart:
        chart(groups, os.path.join(ROOT, "docs", "performance.png"))
    print(f"{len(entries)} measurements in {len(groups)} groups -> README.md, docs/performance.md"
          + ("" if args.no_chart else ", docs/performance.png"))


if __name__ == "__main__":
    main()
