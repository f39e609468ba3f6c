"""A digest of every picture the notebooks draw, to show a refactor changed none.

Executes the tour notebooks and `benchmarks/legibility.ipynb` in a real kernel and hashes,
per `%jaxpr` / `%%shardviz` cell, the pictures it shows (the SVG or PNG behind each data
URI) and its text view. Cells that print measured times (`--profile`, `--kernels`) are
left out and times in text views masked: those change from run to run. Run it before and
after a change and compare:

    PYTHONPATH=$PWD python scripts/picture_digest.py --out /tmp/before.json
    PYTHONPATH=$PWD python scripts/picture_digest.py --compare /tmp/before.json
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [*sorted((ROOT / "examples").glob("*.ipynb")), ROOT / "benchmarks/legibility.ipynb"]
DRAWS = re.compile(r"(?m)^\s*(?:\w+\s*=\s*)?%{1,2}(jaxpr|shardviz)\b")
MEASURED = ("--profile", "--kernels")
_URI = re.compile(r"data:image/(?:svg\+xml|png);base64,([A-Za-z0-9+/=]+)")
# what differs between two runs of one text view: times, whether an array was ready, the
# kernel's process id in the files it names cells by
_TIME = re.compile(r"\b\d+(?:\.\d+)? ?(?:s|ms|µs|ns)\b")
_PENDING = re.compile(r" \(pending\)|\n *still being computed[^\n]*")
_KERNEL = re.compile(r"ipykernel_\d+")


def steady(text: str) -> str:
    return _KERNEL.sub("ipykernel", _PENDING.sub("", _TIME.sub("T", text)))


def pictures(cell) -> list[str]:
    """Short hashes of a cell's pictures and text views, in output order."""
    found = []
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        html = "".join(data.get("text/html", ""))
        for uri in _URI.findall(html):
            found.append("img " + hashlib.sha256(base64.b64decode(uri)).hexdigest()[:16])
        if "image/svg+xml" in data:
            found.append("svg " + hashlib.sha256("".join(data["image/svg+xml"]).encode())
                         .hexdigest()[:16])
        if text := "".join(data.get("text/plain", "")):
            found.append("text " + hashlib.sha256(steady(text).encode()).hexdigest()[:16])
    return found


def digest(path: Path) -> dict[str, list[str]]:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return {f"{path.stem}[{i}] {c.source.splitlines()[0][:60]}": pictures(c)
            for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and DRAWS.search(c.source)
            and not any(m in c.source for m in MEASURED)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="write the digest here")
    ap.add_argument("--compare", type=Path, help="a digest to compare against")
    ap.add_argument("notebooks", nargs="*", type=Path, default=NOTEBOOKS)
    args = ap.parse_args()
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    result = {}
    for path in args.notebooks:
        result.update(digest(path))
        print(f"{path.name}: digested", file=sys.stderr)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    if not args.compare:
        return 0
    before = json.loads(args.compare.read_text())
    changed = [k for k in before.keys() | result.keys() if before.get(k) != result.get(k)]
    for k in sorted(changed):
        print(f"changed: {k}\n  before {before.get(k)}\n  after  {result.get(k)}")
    print(f"{len(result)} cells, {sum(map(len, result.values()))} pictures and views; "
          f"{len(changed)} changed")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
