"""jaxcheck's precision on real code nobody here wrote, in one run.

Runs the static checker over pinned commits of real JAX projects (the manifest,
benchmarks/check_real/manifest.toml), read straight from local git mirrors, and prints:

1. findings by rule and severity;
2. error and warning precision against the hand-labelled findings
   (benchmarks/check_real/labels.csv: every error finding and a fixed sample of
   warnings, each `true` / `false` / `demo` with a one-line reason; `demo` is a
   deliberate demonstration of the sharp bit, a correct finding). Targets: errors
   >= 0.95, warnings >= 0.8; any error finding without a label fails the run;
3. recall on tests/corpus (must stay 1.00);
4. `python -m jaxmagic check EMPTYDIR` wall time (target <= 0.3 s).

    python benchmarks/bench_check_real.py [--mirrors /work/.mirror] [--list error]
                                          [--sample-warnings 60]

Mirrors: ROOT/MIRROR/repo (a bare clone, as the search tool's `fetch` makes) or any clone
at ROOT/MIRROR; the script says which are missing and how to get them.
"""
from __future__ import annotations

import argparse
import csv
import fnmatch
import hashlib
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import tomllib
import warnings
from collections import Counter

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jaxmagic.core.checks import check_source  # noqa: E402
from jaxmagic.core.checks.files import check_text, conftest_x64  # noqa: E402

HERE = ROOT / "benchmarks" / "check_real"
LABELS = HERE / "labels.csv"


def git_dir(root: pathlib.Path, mirror: str) -> pathlib.Path | None:
    for d in (root / mirror / "repo", root / mirror / ".git", root / mirror):
        if (d / "HEAD").exists() and (d / "objects").exists():
            return d
    return None


def repo_files(gd: pathlib.Path, commit: str, globs: list[str]):
    """(path, text) of each .py / .ipynb file at `commit` matching the globs, and every
    conftest.py (whether it turns 64-bit on matters to the files below it)."""
    names = subprocess.run(["git", f"--git-dir={gd}", "ls-tree", "-r", "--name-only",
                            commit], capture_output=True, text=True, check=True).stdout
    paths = [p for p in names.splitlines() if p.endswith((".py", ".ipynb"))
             and (any(fnmatch.fnmatch(p, g) for g in globs) or
                  p.rsplit("/", 1)[-1] == "conftest.py")]
    proc = subprocess.run(["git", f"--git-dir={gd}", "cat-file", "--batch"],
                          input="".join(f"{commit}:{p}\n" for p in paths).encode(),
                          capture_output=True, check=True)
    out, pos = proc.stdout, 0
    for p in paths:
        header_end = out.index(b"\n", pos)
        header = out[pos:header_end].split()
        if header[-1] == b"missing":      # listed, but not in this (partial) mirror
            pos = header_end + 1
            continue
        size = int(header[2])
        blob = out[header_end + 1: header_end + 1 + size]
        pos = header_end + 2 + size
        yield p, blob.decode("utf-8", errors="replace")


def key(repo: str, path: str, cell, f) -> str:
    where = f"{path}#cell{cell}" if cell is not None else path
    return f"{repo}:{where}:{f.line}:{f.rule}"


def run_repos(manifest: dict, root: pathlib.Path):
    findings, files, missing = [], Counter(), []
    for r in manifest["repo"]:
        gd = git_dir(root, r["mirror"])
        if gd is None:
            missing.append(r)
            continue
        texts = dict(repo_files(gd, r["commit"], r["globs"]))
        x64_dirs = {p.rpartition("/")[0] for p, t in texts.items()
                    if p.rsplit("/", 1)[-1] == "conftest.py" and conftest_x64(t)}
        for path, text in texts.items():
            if not any(fnmatch.fnmatch(path, g) for g in r["globs"]):
                continue
            files[r["name"]] += 1
            x64 = any(d == "" or path.startswith(d + "/") for d in x64_dirs) or None
            try:
                found = check_text(path, text, x64=x64)
            except ValueError:      # a notebook that is not JSON
                continue
            for cell, f in found:
                findings.append((key(r["name"], path, cell, f), f))
    return findings, files, missing


def load_labels() -> dict[str, tuple[str, str]]:
    with open(LABELS, newline="") as fh:
        return {row["key"]: (row["label"], row["reason"]) for row in csv.DictReader(fh)}


def sampled(k: str, n_total: int, n_sample: int) -> bool:
    """A fixed pseudo-random sample of warnings: the same keys on every run."""
    h = int(hashlib.sha1(k.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return n_total <= n_sample or h < n_sample / n_total


def precision(findings, labels, severity: str, sample: int | None = None):
    keys = [k for k, f in findings if f.severity == severity]
    if sample is not None:
        keys = [k for k in keys if sampled(k, len(keys), sample)]
    got = Counter(labels[k][0] for k in keys if k in labels)
    unlabelled = [k for k in keys if k not in labels]
    good = got["true"] + got["demo"]
    p = good / (good + got["false"]) if good + got["false"] else 1.0
    return p, got, unlabelled, len(keys)


def corpus_recall() -> tuple[int, int, int]:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_checks_corpus import CELLS
    tp = fp = fn = 0
    for c in CELLS:
        found = {(f.rule, f.line) for f in check_source(c["src"])}
        tp += len(found & c["static"])
        fp += len(found - c["static"])
        fn += len(c["static"] - found)
    return tp, fp, fn


def cli_empty_time(runs: int = 7) -> float:
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        best = float("inf")
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "jaxmagic", "check", d], env=env,
                           check=True, capture_output=True)
            best = min(best, time.perf_counter() - t)
        return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirrors", default=os.environ.get("JAXMAGIC_MIRRORS", "/work/.mirror"))
    ap.add_argument("--sample-warnings", type=int, default=60)
    ap.add_argument("--list", choices=["error", "warning", "info", "unlabelled"],
                    help="print these findings (key, then the finding) and exit")
    args = ap.parse_args()
    manifest = tomllib.loads((HERE / "manifest.toml").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # the checker must not leak warnings
        t = time.perf_counter()
        findings, files, missing = run_repos(manifest, pathlib.Path(args.mirrors))
        elapsed = time.perf_counter() - t
    for r in missing:
        print(f"missing mirror {r['name']}: fetch {r['url']} (search tool `fetch`) or "
              f"git clone --bare {r['url']} {args.mirrors}/{r['mirror']}/repo",
              file=sys.stderr)
    labels = load_labels()
    if args.list:
        for k, f in findings:
            if (args.list == "unlabelled" and k not in labels and f.severity == "error") \
                    or f.severity == args.list:
                print(k, labels.get(k, ("?", ""))[0])
                print("   ", f.text().replace("\n", "\n    "))
        return 0
    print(f"files: {sum(files.values())} ({', '.join(f'{k} {v}' for k, v in files.items())})"
          f"; checked in {elapsed:.1f} s")
    for r in manifest["repo"]:
        print(f"  {r['name']:9} {r['commit'][:12]}  {' '.join(r['globs'])}")
    by = Counter((f.rule, f.severity) for _, f in findings)
    sev = Counter(f.severity for _, f in findings)
    print(f"\nfindings: {len(findings)} ({', '.join(f'{v} {k}' for k, v in sev.items())})")
    for (rule, s), n in sorted(by.items()):
        print(f"  {rule} {s:8} {n:4}")
    ok = True
    pe, ge, ue, ne = precision(findings, labels, "error")
    pw, gw, uw, nw = precision(findings, labels, "warning", args.sample_warnings)
    print(f"\nerror precision   {pe:.2f}  ({ne} findings: {dict(ge)}; unlabelled {len(ue)})"
          "  target >= 0.95")
    print(f"warning precision {pw:.2f}  (sample of {nw}: {dict(gw)}; unlabelled {len(uw)})"
          "  target >= 0.80")
    ok &= pe >= 0.95 and pw >= 0.8 and not ue and len(uw) <= nw // 10
    tp, fp, fn = corpus_recall()
    recall = tp / (tp + fn) if tp + fn else 1.0
    print(f"corpus recall     {recall:.2f}  (tp {tp}, fp {fp}, fn {fn})  target 1.00")
    ok &= fn == 0
    t = cli_empty_time()
    print(f"cli empty folder  {t:.3f} s  target <= 0.3 s")
    ok &= t <= 0.3
    for k in ue + uw:
        print(f"  unlabelled: {k}")
    print("\nall targets met" if ok else "\ntargets NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
