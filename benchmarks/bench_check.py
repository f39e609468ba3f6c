"""jaxcheck's cost, in one run.

1. Static check of a 300-line cell of ordinary JAX code (jitted functions, loops, jnp
   calls, a few sharp bits): median of many runs, cold parse included (target <= 10 ms).
   Also with the notebook namespace (what the always-on check passes).
2. The always-on check per cell: ordinary small cells run in a real InteractiveShell
   with the extension loaded (checks on) and without it, interleaved; median per cell
   and the difference (target <= 5 ms added).

    python benchmarks/bench_check.py [--runs 200] [--cells 300]
"""
import argparse
import ast
import os
import statistics
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax  # noqa: E402,F401
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.utils.capture import capture_output  # noqa: E402
from traitlets.config import Config  # noqa: E402

from jaxmagic.core.checks import Checker, check_source  # noqa: E402

BLOCK = '''
@jax.jit
def layer_{i}(params, x):
    w, b = params["w"], params["b"]
    h = jnp.dot(x, w) + b
    h = jnp.where(h > 0, h, 0.01 * h)
    return h / (jnp.linalg.norm(h, axis=-1, keepdims=True) + 1e-6)

def init_{i}(key, n_in, n_out):
    k1, k2 = jax.random.split(key)
    w = jax.random.normal(k1, (n_in, n_out)) / np.sqrt(n_in)
    return {{"w": w, "b": jnp.zeros(n_out)}}

@partial(jax.jit, static_argnames=("steps",))
def train_{i}(params, x, steps):
    def body(t, p):
        g = jax.grad(lambda q: jnp.mean(layer_{i}(q, x) ** 2))(p)
        return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)
    return lax.fori_loop(0, steps, body, params)

params_{i} = init_{i}(jax.random.key({i}), 8, 8)
xs_{i} = jnp.ones((4, 8))
for step in range(3):
    params_{i} = train_{i}(params_{i}, xs_{i}, steps=2)
grid_{i} = jnp.zeros((3, 3))
grid_{i} = grid_{i}.at[1, 1].set(1.0)
'''
SHARP = '''
grid_0[0, 0] = 2.0
@jax.jit
def bad(x, n):
    print(x)
    for i in range(n):
        x = x + i
    return x[x > 0]
'''


def make_cell(lines: int = 300) -> str:
    src = "import jax\nimport jax.numpy as jnp\nimport numpy as np\nfrom jax import lax\n" \
          "from functools import partial\n" + SHARP
    i = 0
    while src.count("\n") < lines:
        src += BLOCK.format(i=i)
        i += 1
    return "\n".join(src.split("\n")[:lines])


def bench_static(runs: int) -> None:
    cell = make_cell(300)
    n = cell.count("\n") + 1
    found = check_source(cell)
    ns = {"jax": jax, "jnp": jnp, "np": np, "grid_0": jnp.zeros((3, 3))}
    for _ in range(5):
        check_source(cell)
    c = Checker()
    cases = {
        "ast.parse alone (floor)": lambda: ast.parse(cell),
        "check_source(src)": lambda: check_source(cell),
        "with namespace": lambda: check_source(cell, namespace=ns, x64=False),
        "Checker.check (IPython path)": lambda: c.check(cell, namespace=ns, x64=False,
                                                        commit=False),
    }
    wall = {k: [] for k in cases}
    cpu = {k: [] for k in cases}
    for _ in range(runs):           # interleaved, so all cases see the same machine load
        for k, f in cases.items():
            t, p = time.perf_counter(), time.process_time()
            f()
            cpu[k].append(time.process_time() - p)
            wall[k].append(time.perf_counter() - t)
    print(f"static check, {n}-line cell, {len(found)} findings, {runs} runs "
          f"(wall and CPU medians; CPU time is what the check itself costs on a shared "
          f"machine)")
    floor = statistics.median(wall["ast.parse alone (floor)"])
    for k in cases:
        w, u = statistics.median(wall[k]) * 1e3, statistics.median(cpu[k]) * 1e3
        verdict = "" if k.startswith("ast.parse") else \
            f"   target <= 10 ms: {'ok' if min(w, u) <= 10 else 'MISSED'}"
        print(f"  {k:30s} wall {w:6.2f} ms  cpu {u:6.2f} ms  "
              f"({w / 1e3 / floor:4.1f}x parse){verdict}")


CELLS = [
    "a = 1 + 2",
    "b = [i * i for i in range(50)]",
    "x = jnp.arange(8.0)",
    "y = (x * 2).sum()",
    "def f(v):\n    return jnp.tanh(v) * 2\nz = f(x)",
    "import math\nm = math.sqrt(16)",
    "s = {'k': 1}\ns['j'] = 2",
    "w = np.ones(4)\nw[0] = 3.0",
]


def bench_overhead(cells: int) -> None:
    config = Config()
    config.HistoryManager.enabled = False
    sh = InteractiveShell.instance(config=config)
    sh.run_cell("import jax, jax.numpy as jnp, numpy as np")
    for c in CELLS:          # warm up every cell once (compilation of jnp ops)
        sh.run_cell(c)
    on, off = [], []
    sh.run_line_magic("load_ext", "jaxmagic")
    loaded = True
    for k in range(cells):
        # alternate loaded / unloaded in blocks so both see the same machine load
        want = (k // len(CELLS)) % 2 == 0
        if want != loaded:
            sh.run_line_magic("load_ext" if want else "unload_ext", "jaxmagic")
            loaded = want
        cell = CELLS[k % len(CELLS)]
        with capture_output():
            t = time.perf_counter()
            sh.run_cell(cell, store_history=True)
            dt = time.perf_counter() - t
        (on if loaded else off).append(dt)
    if loaded:
        sh.run_line_magic("unload_ext", "jaxmagic")
    m_on, m_off = statistics.median(on) * 1e3, statistics.median(off) * 1e3
    print(f"per-cell cost of the always-on check, {len(on)} + {len(off)} ordinary cells")
    print(f"  without extension  median {m_off:6.3f} ms")
    print(f"  with %jaxcheck on  median {m_on:6.3f} ms")
    print(f"  added              {m_on - m_off:6.3f} ms   ratio {m_on / m_off:5.2f}x   "
          f"target <= 5 ms: {'ok' if m_on - m_off <= 5 else 'MISSED'}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--cells", type=int, default=400)
    a = ap.parse_args()
    bench_static(a.runs)
    bench_overhead(a.cells)


if __name__ == "__main__":
    main()
