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
#: The README's rows: (task, the group name with {name} standing for each vocabulary
#: and {corpus} for the suite's corpus).
SUMMARY = [
    ("train, vocab 10 000", "train, vocab 10000, on {corpus}"),
    ("train prose_en.txt (129 MB), vocab 10 000, whole process", "train prose_en.txt, vocab 10000, whole process"),
    ("train code_linux.txt (1.28 GB), vocab 32 000, whole process",
     "train code_linux.txt, vocab 32000, whole process"),
    ("encode per document, cold", "encode per document, cold, {name}, on {corpus}"),
    ("encode per document, warm", "encode per document, warm, {name}, on {corpus}"),
    ("encode one batch, cold, 2 threads", "encode one batch, cold, 2 threads, {name}, on {corpus}"),
    ("one call on 83 characters, warm", "one call on 83 chars, warm, {name}, on {corpus}"),
    ("one call on 2 characters, warm", "one call on 2 chars, warm, {name}, on {corpus}"),
    ("a corpus file to a token array, 2 threads",
     "a corpus file to a token array, 2 threads, {name}, on {corpus}"),
    ("import, load and first encode in a fresh process",
     "import, load and first encode in a fresh process, {name}, on {corpus}"),
    ("decode a list of ids", "decode a list of ids, {name}, on {corpus}"),
    ("count the tokens of one text, cold", "count the tokens of one text, cold, {name}, on {corpus}"),
    ("train 100 kB, vocab 457, against bpe.pure", "train, vocab 457 (bpe.pure's sample), on {corpus}"),
    ("encode 100 kB in one call, cold, gpt2, against bpe.pure",
     "encode one text, cold, gpt2 (bpe.pure's sample), on {corpus}"),
]


def compact(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        record = json.load(f)
    for entry in record["benchmarks"]:
        entry["stats"].pop("data", None)
    with open(path + ".part", "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    os.replace(path + ".part", path)


def load(paths: list[str]) -> tuple[dict, list[dict]]:
    """The machine of the first file, and every measurement of all of them; a
    suite's groups are named with the corpus they ran on. A group measured
    again in a later file replaces the earlier one whole, so that a group's
    rows always come from one run."""
    machine, groups, counts = None, {}, {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        corpus = record["machine_info"].get("corpus")
        if corpus:
            counts[corpus] = counts.get(corpus, 0) + len(record["benchmarks"])
        machine = machine or {**record["machine_info"], "runs": []}
        run = (record["datetime"][:10], record["commit_info"].get("id", "?")[:9])
        if run not in machine["runs"]:
            machine["runs"].append(run)
        found = collections.defaultdict(list)
        for entry in record["benchmarks"]:
            if corpus:
                entry["group"] = f"{entry['group']}, on {corpus}"
            found[entry["group"]].append(entry)
        groups.update(found)
    if counts:     # the README's corpus: the one the suite measured most on
        machine["suite_corpus"] = max(counts, key=counts.get)
    return machine, [entry for entries in groups.values() for entry in entries]


def duration(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3g} s"
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.3g} µs"


def figure(entry: dict, key: str) -> str:
    """A round's MB/s where a size is known, else its time."""
    seconds, mb = entry["stats"][key], entry["extra_info"].get("mb", 0)
    return f"{mb / seconds:.3g}" if mb >= 1e-3 else duration(seconds)


def label(entry: dict) -> str:
    info = entry["extra_info"]
    return f"`{info['call']}` ({info['output']})"


def grouped(entries: list[dict]) -> dict[str, list[dict]]:
    groups = collections.defaultdict(list)
    for entry in entries:
        groups[entry["group"]].append(entry)
    return groups


def summary_table(groups: dict[str, list[dict]], corpus: str) -> str:
    """One row per task: for each library, each of its calls with its figures
    for gpt2 / cl100k / o200k (MB/s, or time where no size applies)."""
    rows = ["| task (gpt2 / cl100k / o200k) | " + " | ".join(LIBRARIES) + " |",
            "|---|" + "---|" * len(LIBRARIES)]
    for task, pattern in SUMMARY:
        names = NAMES if "{name}" in pattern else [None]
        found = [groups.get(pattern.format(name=name, corpus=corpus), []) for name in names]
        if not any(found):
            continue
        cells = []
        for library in LIBRARIES:
            calls = collections.OrderedDict()
            for entries in found:
                for entry in entries:
                    if entry["extra_info"]["library"] == library:
                        calls.setdefault(label(entry), []).append(figure(entry, "min") + rss(entry))
            cells.append("<br>".join(f"{' / '.join(values)} {call}" for call, values in calls.items()) or "–")
        unit = "MB/s" if found[0] and found[0][0]["extra_info"].get("mb", 0) >= 1e-3 else "time"
        rows.append(f"| {task}, {unit} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def rss(entry: dict) -> str:
    peak = entry["extra_info"].get("peak_rss_mib")
    return f", {peak:.0f} MiB" if peak else ""


#: What a task's columns are: the vocabulary or a training's size, a call's
#: length, cold or warm; what is left of a group's name is the task.
COLUMNS = [re.compile(r",? (gpt2|cl100k_base|o200k_base|vocab \d+)(?=[ ,]|$)"),
           re.compile(r" on (\d+ chars)(?=,)"), re.compile(r", (cold|warm)(?=,)")]


def split_group(group: str) -> tuple[str, str]:
    """``(task, column)`` of a group's name."""
    parts = []
    for pattern in COLUMNS:
        found = pattern.search(group)
        if found:
            parts.append(found.group(1))
            group = pattern.sub("", group, count=1)
    return group, " ".join(parts)


def column_order(column: str) -> tuple:
    words = column.split()
    vocabulary = next((NAMES.index(w) for w in words if w in NAMES), len(NAMES))
    numbers = [int(w) for w in words if w.isdigit()]
    return (vocabulary, numbers, "warm" in words)


def megabytes(mb: float) -> str:
    return f"{mb:.3g} MB" if mb < 100 else f"{mb:,.0f} MB"


def group_tables(groups: dict[str, list[dict]]) -> str:
    """A table per task, the vocabularies side by side: each candidate's best
    and median round (MB/s, or time where no size applies), the fastest
    first, and its peak memory where a script measured it."""
    tasks: dict[str, dict[str, list[dict]]] = collections.defaultdict(dict)
    for group, entries in groups.items():
        task, column = split_group(group)
        tasks[task][column] = entries
    out = []
    for task in sorted(tasks):
        by_name = tasks[task]
        names = sorted(by_name, key=column_order)
        first = next(iter(by_name.values()))[0]
        mb = first["extra_info"].get("mb", 0)
        unit = "MB/s, best / median" if mb >= 1e-3 else "time, best / median"
        peaks = any(e["extra_info"].get("peak_rss_mib") for entries in by_name.values() for e in entries)
        head = [name or unit for name in names] + (["peak RSS"] if peaks else [])
        out += [f"#### {task}" + (f" ({megabytes(mb)})" if mb >= 1e-3 else ""), ""]
        if names != [""]:
            out += [f"{unit[0].upper()}{unit[1:]}.", ""]
        out += ["| library | call (output) | " + " | ".join(head) + " |", "|---|---|" + "---:|" * len(head)]
        rows: dict[tuple, dict] = {}
        for name in names:
            for e in sorted(by_name[name], key=lambda e: e["stats"]["min"]):
                rows.setdefault((e["extra_info"]["library"], label(e)), {})[name] = e
        for (library, call), cells in rows.items():
            line = [f"{figure(cells[n], 'min')} / {figure(cells[n], 'median')}" if n in cells else "–"
                    for n in names]
            if peaks:
                line.append(" / ".join(f"{e['extra_info']['peak_rss_mib']:.0f} MiB" for e in cells.values()
                                       if e["extra_info"].get("peak_rss_mib")))
            out.append(f"| {library} | {call} | " + " | ".join(line) + " |")
        out.append("")
    return "\n".join(out)


def machine_line(machine: dict) -> str:
    cpu = machine.get("cpu", {})
    libraries = ", ".join(f"{k} {v}" for k, v in machine.get("libraries", {}).items())
    # Every run the tables draw on: a group measured again later is of a later commit.
    runs = ", ".join(f"{day} at commit {commit}" for day, commit in sorted(machine["runs"]))
    return (f"Measured {runs} on {cpu.get('brand_raw', '?')}, "
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


def chart(groups: dict[str, list[dict]], corpus: str, path: str) -> None:
    """One bar per library and task (cl100k_base where there are several
    vocabularies, else gpt2): its best call's speed relative to bpe's best,
    log scale."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    libraries = [library for library in LIBRARIES if library not in ("bpe.tiktoken",)]
    colours = dict(zip(libraries, ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:gray"]))
    rows = []
    for task, pattern in SUMMARY:
        entries = next((groups[key] for key in (pattern.format(name=name, corpus=corpus)
                                                for name in ("cl100k_base", "gpt2")) if key in groups), [])
        best = {}
        for e in entries:
            library = e["extra_info"]["library"]
            best[library] = min(best.get(library, float("inf")), e["stats"]["min"])
        if "bpe" in best and len(best) > 1:
            rows.append((task, {library: best["bpe"] / seconds for library, seconds in best.items()}))
    figure, axis = plt.subplots(figsize=(9, 0.12 * sum(len(speeds) + 1 for _, speeds in rows) + 1.0))
    y, ticks, names = 0, [], []
    for task, speeds in reversed(rows):
        ordered = [library for library in libraries if library in speeds]
        for k, library in enumerate(ordered):
            axis.barh(y + k, speeds[library], height=1.0, color=colours[library], label=library)
        ticks.append(y + (len(ordered) - 1) / 2)
        names.append(task)
        y += len(ordered) + 1
    handles, labels = axis.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    axis.legend([unique[name] for name in libraries if name in unique], [n for n in libraries if n in unique],
                fontsize=7, loc="lower right")
    axis.set_yticks(ticks, names, fontsize=7)
    axis.set_xscale("log")
    axis.axvline(1.0, color="black", linewidth=0.6)
    axis.set_xlabel("speed relative to bpe's best call (log scale; right of the line is faster than bpe)", fontsize=8)
    axis.set_title(f"Each library's best call per task ({corpus}; cl100k_base, else gpt2)", fontsize=9)
    axis.set_ylim(-1, y - 1)
    axis.tick_params(axis="x", labelsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="saved results (.json)")
    parser.add_argument("--no-chart", action="store_true", help="leave docs/performance.png as it is")
    parser.add_argument("--compact", action="store_true",
                        help="first rewrite the files without each round's timing (pytest-benchmark's "
                             "--benchmark-json keeps them: tens of MB for the short calls)")
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 unless the pages hold what the results draw")
    args = parser.parse_args()
    if args.compact:
        for path in args.results:
            compact(path)
    machine, entries = load(args.results)
    groups = grouped(entries)
    corpus = machine.get("suite_corpus", "")
    pages = [(os.path.join(ROOT, "README.md"), "results", summary_table(groups, corpus)),
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
        chart(groups, corpus, os.path.join(ROOT, "docs", "performance.png"))
    print(f"{len(entries)} measurements in {len(groups)} groups -> README.md, docs/performance.md"
          + ("" if args.no_chart else ", docs/performance.png"))


if __name__ == "__main__":
    main()
