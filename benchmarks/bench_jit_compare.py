"""%jit_compare against IPython's own %timeit of the same jitted call, in one run.

Cases: the seed's `norm` on a 10000x10 array, and a chain of small matmuls taking about
1 ms. For each: the magic's steady jit median next to `%timeit` of `jax.jit(f)(x)
.block_until_ready()` (after a warm-up), their ratio (target 0.85-1.15), and the magic's
total wall time at its default budget (target <= 3 s).

    python benchmarks/bench_jit_compare.py [--rounds 5]

Each round runs the magic and %timeit back to back (alternating which goes first); every
round's figures are printed and the median ratio is the headline (on a shared machine one
round can catch a neighbour's burst). The ratio to %timeit's median run is shown too:
%timeit prints a mean, which bursts pull up more than a median.
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.utils.capture import capture_output  # noqa: E402
from traitlets.config import Config  # noqa: E402

SETUP = """
import jax, jax.numpy as jnp, numpy as np

def norm(X):
    X = X - X.mean(0)
    return X / X.std(0)

np.random.seed(1701)
X = jnp.array(np.random.rand(10000, 10))

def chain(a, ws):
    for w in ws:
        a = jnp.tanh(a @ w)
    return a

N = 192
A = jnp.ones((N, N)) / N
WS = [jnp.eye(N) * 0.5 + 0.001 * i for i in range(8)]

norm_jit = jax.jit(norm)
chain_jit = jax.jit(chain)
"""

CASES = [("norm(X), X 10000x10", "norm(X)", "norm_jit(X)"),
         ("matmul chain, 8 x 192x192", "chain(A, WS)", "chain_jit(A, WS)")]


def fmt(s):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s:.3g} s"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5,
                    help="magic/%%timeit pairs per case; the median ratio is the headline")
    a = ap.parse_args()
    cfg = Config()
    cfg.HistoryManager.enabled = False
    sh = InteractiveShell.instance(config=cfg)
    sh.run_cell(SETUP)
    sh.run_line_magic("load_ext", "jaxmagic")
    import jax
    budget = sh.magics_manager.registry["JaxMagic"].jit_compare_budget
    print(f"jax {jax.__version__}, backend {jax.default_backend()}, os.cpu_count() "
          f"{os.cpu_count()}, load average {os.getloadavg()[0]:.1f}; "
          f"%jit_compare at its default budget ({budget} s)")
    print(f"{'case':<26} {'magic median':>12} {'%timeit mean ± std':>20} {'ratio':>6} "
          f"{'(to its median)':>15} {'wall':>6}   loops, compile, eager, speedup")
    all_ok = True
    for label, call, jitted in CASES:
        ratios, walls = [], []
        with capture_output():
            sh.run_cell(f"{jitted}.block_until_ready();")              # warm-up
        for i in range(a.rounds):
            def magic():
                t0 = time.perf_counter()
                with capture_output():
                    r = sh.run_line_magic("jit_compare", f"-o {call}")
                return r, time.perf_counter() - t0

            def timeit():
                with capture_output():
                    return sh.run_line_magic("timeit", f"-o {jitted}.block_until_ready()")

            if i % 2 == 0:              # alternate the order so drift favours neither
                (r, wall), ti = magic(), timeit()
            else:
                ti = timeit()
                r, wall = magic()
            ti_median = statistics.median(t / ti.loops for t in ti.all_runs)
            ratio = r.jit_s / ti.average
            ratios.append(ratio)
            walls.append(wall)
            print(f"{label:<26} {fmt(r.jit_s):>12} {fmt(ti.average) + ' ± ' + fmt(ti.stdev):>20} "
                  f"{ratio:>6.2f} {r.jit_s / ti_median:>15.2f} {wall:>5.2f}s   "
                  f"{r.jit_repeats}x{r.jit_loops}, {fmt(r.compile_total_s)}, "
                  f"{fmt(r.eager_s)}, {r.speedup:.2f}x")
        ratio, wall = statistics.median(ratios), max(walls)
        ok = 0.85 <= ratio <= 1.15 and wall <= 3.0
        all_ok &= ok
        print(f"{'':<26} -> median ratio {ratio:.2f} (target 0.85-1.15), slowest wall "
              f"{wall:.2f} s (target <= 3 s): {'ok' if ok else 'MISS'}")
    print("all within targets" if all_ok else "some figures outside targets (see MISS)")


if __name__ == "__main__":
    main()
