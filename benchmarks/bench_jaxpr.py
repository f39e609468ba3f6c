"""%%jaxpr end to end against print(jax.make_jaxpr(f)(x)), on grads of growing models.

Targets (2-core machine): median ≤ 2 s and ≤ 10× make_jaxpr at every L; SVG ≤ 1 MB;
`--depth all` at L=4 within 5 s or a coarser view with a note.

    python benchmarks/bench_jaxpr.py [--repeats 3]
"""
import argparse
import io
import os
import statistics
import time
from contextlib import redirect_stdout
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.utils.capture import capture_output  # noqa: E402
from traitlets.config import Config  # noqa: E402

# the benchmarks' transformer (benchmarks/transformer.py), 32 wide on 16 tokens
MODEL = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
import jax, jax.numpy as jnp
from transformer import block, model
from transformer import make as _make

def make(L):
    return _make(L, d=32, t=16)
"""

def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    config = Config()
    config.HistoryManager.enabled = False
    ip = InteractiveShell.instance(config=config)
    ip.run_line_magic("load_ext", "jaxmagic")
    ip.run_cell(MODEL)
    print(f"{'L':>3} {'eqns':>6} {'%%jaxpr s':>10} {'make_jaxpr s':>13} {'ratio':>6} "
          f"{'svg KB':>7}  drawn as")
    for L in (1, 4, 16, 64):
        ip.run_cell(f"params, x = make({L})")
        cell = "jax.grad(model)(params, x)\n"
        views = []

        def magic():
            with capture_output() as cap:
                r = ip.run_cell("_v = %jaxpr -o jax.grad(model)(params, x)\ndisplay(_v)")
            assert r.success, r.error_in_exec
            assert any("text/html" in o.data for o in cap.outputs)
            views.append(ip.user_ns["_v"])

        def baseline():
            with redirect_stdout(io.StringIO()):
                ip.run_cell("print(jax.make_jaxpr(jax.grad(model))(params, x))")

        del cell
        t_magic = median_time(magic, a.repeats)
        t_base = median_time(baseline, a.repeats)
        v = views[-1]
        svg_kb = len(v.svg()) / 1024 if v._drawn.svg else float("nan")
        how = v.graph.grouping + (f" ({len(v.graph.nodes)} nodes)")
        print(f"{L:>3} {v.num_equations:>6} {t_magic:>10.2f} {t_base:>13.2f} "
              f"{t_magic / t_base:>6.1f} {svg_kb:>7.0f}  {how}")
    ip.run_cell("params, x = make(4)")
    t = time.perf_counter()
    with capture_output():
        ip.run_cell("_v = %jaxpr -o --depth all jax.grad(model)(params, x)\ndisplay(_v)")
    v = ip.user_ns["_v"]
    print(f"--depth all at L=4: {v.num_equations} equations in {time.perf_counter() - t:.2f} s, "
          f"drawn by {v.graph.grouping}; notes: {'; '.join(v.notes) or 'none'}")


if __name__ == "__main__":
    main()
