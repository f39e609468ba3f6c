"""`python -m jaxmagic check PATH ...`: jaxcheck's static rules over .py files and notebooks.

    python -m jaxmagic check model.py notebooks/          # human output
    python -m jaxmagic check --format json train.ipynb    # one JSON document
    python -m jaxmagic check --rules                      # the catalogue

Exit status 1 when any error-severity finding exists (2 for usage errors), so it works
as a pre-commit hook (see docs/jaxcheck.md). Notebook cells are checked in order, as a
kernel would run them, so imports and arrays from earlier cells are known to later ones.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from .core.checks import FAMILIES, RULES, SEVERITIES, Finding


def _iter_paths(paths: list[str]):
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__"))
                                 and d not in ("build", "dist", "node_modules"))
                for f in sorted(files):
                    if f.endswith((".py", ".ipynb")):
                        yield os.path.join(root, f)
        else:
            yield p


def check_path(path: str) -> list[tuple[int | None, Finding]]:
    from .core.checks.files import check_text
    with open(path, encoding="utf-8") as fh:
        return check_text(path, fh.read(), x64=_conftest_x64(path) or None)


def _conftest_x64(path: str) -> bool:
    """Whether a conftest.py beside the file or above it turns jax_enable_x64 on."""
    from .core.checks.files import conftest_x64
    d = os.path.dirname(os.path.abspath(path))
    while True:
        conftest = os.path.join(d, "conftest.py")
        if os.path.isfile(conftest):
            with open(conftest, encoding="utf-8", errors="replace") as fh:
                if conftest_x64(fh.read()):
                    return True
        if os.path.isdir(os.path.join(d, ".git")) or os.path.dirname(d) == d:
            return False
        d = os.path.dirname(d)


def _human(path: str, cell: int | None, f: Finding) -> str:
    where = f"{path}:" + (f"cell {cell}:" if cell is not None else "") + f"{f.line}:{f.col or 1}"
    out = [f"{where}: {f.rule} [{f.severity}] {f.message}"]
    if f.source.strip():
        out.append(f"    {f.source.rstrip()}")
        if f.col and f.end_col and f.end_col >= f.col:
            out.append("    " + " " * (f.col - 1) + "^" * (f.end_col - f.col + 1))
    out.append(f"    fix: {f.fix}")
    if f.rewrite:
        line = f.fix_line or f.line
        out.append(f"    -> line {line}: {f.rewrite}")
    return "\n".join(out)


def _rules_text() -> str:
    out = []
    for fam, title in FAMILIES.items():
        out.append(f"{fam} — {title}")
        for r in RULES.values():
            if r.family == fam:
                out.append(f"  {r.id}  {r.severity:<7}  {r.title}")
    return "\n".join(out)


def cmd_check(args) -> int:
    if args.rules:
        print(_rules_text())
        return 0
    if not args.paths:
        print("usage: python -m jaxmagic check PATH [PATH ...]", file=sys.stderr)
        return 2
    select = {r.strip().upper() for r in (args.select or "").split(",") if r.strip()}
    ignore = {r.strip().upper() for r in (args.ignore or "").split(",") if r.strip()}
    results, problems = [], []
    for path in _iter_paths(args.paths):
        try:
            found = check_path(path)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            problems.append(f"{path}: cannot read: {e}")
            continue
        for cell, f in found:
            if select and not any(f.rule.startswith(s) for s in select):
                continue
            if any(f.rule.startswith(s) for s in ignore):
                continue
            if SEVERITIES.index(f.severity) > SEVERITIES.index(args.min_severity):
                continue
            results.append((path, cell, f))
    errors = sum(1 for _, _, f in results if f.severity == "error")
    if args.format == "json":
        doc = {"findings": [dict(f.to_dict(), path=p, cell=c) for p, c, f in results],
               "errors": errors, "problems": problems}
        for d in doc["findings"]:
            d.pop("filename", None)
            d.pop("where", None)
        print(json.dumps(doc, indent=2))
    else:
        for p, c, f in results:
            print(_human(p, c, f))
        for msg in problems:
            print(msg, file=sys.stderr)
        if results:
            by = {}
            for _, _, f in results:
                by[f.severity] = by.get(f.severity, 0) + 1
            print(f"\n{len(results)} finding{'s' if len(results) != 1 else ''} (" +
                  ", ".join(f"{v} {k}" for k, v in by.items()) + ")")
    if problems and not results:
        return 2
    return 1 if errors else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jaxmagic",
                                     description="jaxmagic command line tools")
    sub = parser.add_subparsers(dest="command")
    c = sub.add_parser("check", help="flag JAX sharp bits in .py files and notebooks",
                       description="Static jaxcheck rules over .py and .ipynb files "
                       "(directories are searched). Exit 1 when an error-severity "
                       "finding exists.")
    c.add_argument("paths", nargs="*", metavar="PATH")
    c.add_argument("--format", choices=["human", "json"], default="human")
    c.add_argument("--select", metavar="IDS", help="only these rules or prefixes, e.g. "
                   "JX1,JX203")
    c.add_argument("--ignore", metavar="IDS", help="skip these rules or prefixes")
    c.add_argument("--min-severity", choices=list(SEVERITIES), default="info",
                   help="report findings at least this severe (default: info, i.e. all)")
    c.add_argument("--rules", action="store_true", help="list the rules and exit")
    args = parser.parse_args(argv)
    if args.command == "check":
        return cmd_check(args)
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
