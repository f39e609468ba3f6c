#!/usr/bin/env python3
"""Run a notebook top to bottom in a real kernel and write it as HTML: `make demo`.

    python scripts/demo.py examples/00_tour.ipynb build/00_tour.html [--theme dark]

Cells tagged `raises-exception` may raise (they show an error on purpose); an error in any
other cell stops the demo with that cell's traceback and a non-zero exit.  Needs no system
package: without Graphviz's `dot`, jaxmagic lays graphs out with WebAssembly Graphviz.
Prints the path of the HTML file.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebook", type=Path)
    ap.add_argument("html", type=Path)
    ap.add_argument("--theme", choices=["light", "dark"], default="light")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    ap.add_argument("--save-notebook", type=Path, default=None,
                    help="also write the executed notebook (with outputs) here")
    a = ap.parse_args(argv)

    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from nbconvert import HTMLExporter

    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    nb = nbformat.read(a.notebook, as_version=4)
    a.html.parent.mkdir(parents=True, exist_ok=True)
    # allow_errors=False: nbclient lets cells tagged raises-exception raise, nothing else.
    client = NotebookClient(nb, timeout=a.timeout, kernel_name="python3", allow_errors=False,
                            resources={"metadata": {"path": str(a.notebook.parent.resolve())}})
    t0 = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as e:
        print(f"{a.notebook}: a cell not tagged raises-exception failed:\n{e}", file=sys.stderr)
        return 1
    secs = time.perf_counter() - t0
    if a.save_notebook:
        nbformat.write(nb, a.save_notebook)
    body, _ = HTMLExporter(theme=a.theme).from_notebook_node(
        nb, resources={"metadata": {"name": a.notebook.stem}})
    a.html.write_text(body, encoding="utf-8")
    cells = sum(c.cell_type == "code" for c in nb.cells)
    print(f"executed {cells} code cells of {a.notebook} in {secs:.1f} s", file=sys.stderr)
    print(a.html.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
