#!/usr/bin/env python3
"""Build real benchmark corpora from Debian's packages (no other network needed).

usage: python benchmarks/build_corpora.py [--out DIR] [prose] [code] [all]      (default: prose, into ~/.cache/bpe-corpora)

  prose  prose_en.txt   ~132 MB  English documentation: the Linux kernel's Documentation/,
                                 Perl's pod pages, Python's reST docs and the GCIDE dictionary
  code   code_linux.txt ~1.28 GB the Linux 6.1 source tree (C, headers, Kconfig, scripts, docs)

Each corpus is a UTF-8 text file of documents separated by the special token
<|endoftext|>, the layout of TinyStories and OpenWebText dumps. Files are
built once and reused; a finished file is written atomically.
Needs: apt-get (run `apt-get update` once on a new machine), dpkg-deb.
"""
import argparse, gzip, os, subprocess, sys, tarfile, tempfile

SEP = "<|endoftext|>"
PACKAGES = {
    "prose": ["linux-doc-6.1", "perl-doc", "python3.11-doc", "dict-gcide"],
    "code": ["linux-source-6.1"],
}

def fetch(pkgs, work):
    debs = os.path.join(work, "debs")
    os.makedirs(debs, exist_ok=True)
    subprocess.run(["apt-get", "download", *pkgs], cwd=debs, check=True,
                   stdout=subprocess.DEVNULL)
    root = os.path.join(work, "root")
    for f in os.listdir(debs):
        subprocess.run(["dpkg-deb", "-x", os.path.join(debs, f), root], check=True)
    return root

def prose_docs(root):
    for dirpath, _, files in sorted(os.walk(os.path.join(root, "usr/share"))):
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            if "html" in path and "_sources" not in path:
                continue
            if name.endswith((".gz", ".dz")):
                opener = gzip.open
            elif name.endswith((".txt", ".pod", ".rst")):
                opener = open
            else:
                continue
            try:
                with opener(path, "rb") as f:
                    yield f.read().decode("utf-8")
            except (UnicodeDecodeError, OSError, EOFError):
                continue

def code_docs(root):
    src = os.path.join(root, "usr/src/linux-source-6.1.tar.xz")
    keep = (".c", ".h", ".S", ".py", ".sh", ".rst", ".txt", ".rs", "Kconfig", "Makefile",
            ".yaml", ".json", ".dts", ".dtsi")
    with tarfile.open(src) as tf:
        for m in tf:
            if m.isfile() and m.name.endswith(keep):
                try:
                    yield tf.extractfile(m).read().decode("utf-8")
                except UnicodeDecodeError:
                    continue

def build(kind, out_dir):
    target = os.path.join(out_dir, {"prose": "prose_en.txt", "code": "code_linux.txt"}[kind])
    if os.path.exists(target):
        print(f"{target} (kept)")
        return
    with tempfile.TemporaryDirectory(dir=out_dir) as work:
        root = fetch(PACKAGES[kind], work)
        docs = prose_docs(root) if kind == "prose" else code_docs(root)
        tmp = target + ".part"
        n = 0
        with open(tmp, "w", encoding="utf-8") as out:
            for text in docs:
                text = text.strip()
                if text:
                    out.write(text + "\n" + SEP + "\n")
                    n += 1
        os.replace(tmp, target)
    print(f"{target}: {n} documents, {os.path.getsize(target) / 1e6:.0f} MB")

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.expanduser("~/.cache/bpe-corpora"))
    ap.add_argument("kinds", nargs="*", default=["prose"])
    a = ap.parse_args()
    kinds = ["prose", "code"] if "all" in a.kinds else a.kinds
    os.makedirs(a.out, exist_ok=True)
    for k in kinds:
        if k not in PACKAGES:
            sys.exit(f"unknown corpus {k!r}: choose from prose, code, all")
        build(k, a.out)

if __name__ == "__main__":
    main()
