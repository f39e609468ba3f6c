"""The explorer's relayout time: what a click or a search costs on the 16-layer
transformer gradient (benchmarks/transformer.py), from the message to the new SVG and
hover table (target ≤ 0.5 s each on a quiet 2-core machine).

Every group the picture shows is opened (each from a fresh view, so no layout comes
from a cache), then closed again (back to the first picture, whose layout the explorer
keeps: a close is a cache hit); three searches, by primitive and by line. Each action is
timed once, in one run.

    python benchmarks/bench_explorer.py [--layers 16]
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
sys.path.insert(0, str(Path(__file__).parent))

import jax  # noqa: E402
from transformer import make, model  # noqa: E402

import jaxmagic  # noqa: E402
from jaxmagic.explorer import JaxprExplorer  # noqa: E402


def timed(w, message) -> float:
    start = time.perf_counter()
    w._on_message(w, message, [])
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=16)
    layers = ap.parse_args().layers
    params, x = make(layers)
    start = time.perf_counter()
    view = jaxmagic.trace(jax.grad(model), params, x)
    view.svg()
    static = time.perf_counter() - start
    print(f"{layers}-layer transformer gradient: {view.num_equations} equations, "
          f"static picture {len(view.graph.nodes)} nodes in {static:.2f} s "
          f"(renderer: {view._drawn.renderer})")

    rows = []
    first = JaxprExplorer(view)
    for key, row in list(first.table.items()):
        if row["click"] not in ("open", "lines"):
            continue
        w = JaxprExplorer(view.configure())     # a fresh view: nothing laid out yet
        opened = timed(w, {"type": "toggle", "key": key})
        nodes = len(w.table)
        reopened = [k for k, r in w.table.items() if r["click"] == "close"
                    and r["title"] == row["title"]]
        closed = timed(w, {"type": "toggle", "key": reopened[0]}) if reopened else None
        rows.append((f"open {row['title'][:40]}", opened, nodes))
        if closed is not None:
            rows.append((f"close {row['title'][:40]}", closed, len(w.table)))
    for query in ("dot_general", "block:9", "tanh"):
        w = JaxprExplorer(view.configure())
        took = timed(w, {"type": "search", "query": query})
        rows.append((f"search {query!r} ({w.status.split(';')[0]})", took, len(w.table)))

    width = max(len(r[0]) for r in rows)
    print(f"{'action':<{width}}  seconds  drawn (nodes and groups)")
    for name, secs, nodes in rows:
        print(f"{name:<{width}}  {secs:7.3f}  {nodes:5d}")
    times = [r[1] for r in rows]
    worst = max(times)
    print(f"{len(rows)} actions: median {statistics.median(times):.3f} s, worst {worst:.3f} s "
          f"(target ≤ 0.5 s: {'met' if worst <= 0.5 else 'NOT met'})")


if __name__ == "__main__":
    main()
