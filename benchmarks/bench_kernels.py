"""%jaxpr --kernels: what it costs against one compile, and whether its picture reads.

On the issue's three programs (the 16-layer transformer gradient of `transformer.py`, a
small CNN's gradient, an MLP gradient sharded on a 2×4 mesh), side by side in one process:

- `compile`: one plain `jax.jit(f).lower(*args).compile()` (a fresh function each time,
  so nothing is cached);
- `--kernels added`: `%jaxpr --kernels` minus a plain `%jaxpr` of the same call (both
  medians of three, the device's balance already measured); target ≤ 1.3× one compile;
- the balance measurement, once per process, apart;
- the kernels, the nodes drawn and the picture's smallest text (target ≥ 8 px).

    python benchmarks/bench_kernels.py
"""
import os
import statistics
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
sys.path.insert(0, os.path.dirname(__file__))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402
from transformer import make, model  # noqa: E402

import jaxmagic  # noqa: E402
from jaxmagic.core.compiled import kernels as K  # noqa: E402
from jaxmagic.render.jaxpr import _text_px  # noqa: E402


def cnn(params, x):
    w1, w2 = params
    y = jax.lax.conv_general_dilated(x, w1, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = jax.nn.relu(y)
    y = jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return jnp.mean((y.reshape(y.shape[0], -1) @ w2) ** 2)


def mlp(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w)
    return jnp.mean(x ** 2)


def programs():
    yield "transformer ×16 grad", jax.grad(model), make(16, d=64, t=32)
    k = jax.random.split(jax.random.PRNGKey(0), 2)
    yield "CNN grad", jax.grad(cnn), ((jax.random.normal(k[0], (3, 3, 8, 16)),
                                       jax.random.normal(k[1], (16 * 8 * 8, 10))),
                                      jnp.ones((8, 16, 16, 8)))
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
    ws = [jax.device_put(jnp.ones((256, 256)) * 0.01, NamedSharding(mesh, P(None, "model")))
          for _ in range(4)]
    x = jax.device_put(jnp.ones((64, 256)), NamedSharding(mesh, P("data", None)))
    yield "MLP grad on a 2×4 mesh", jax.jit(jax.grad(mlp)), (ws, x)


def median(f, n=3) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    start = time.perf_counter()
    balance = K.balance()
    print(f"balance: {balance.flops_per_s / 1e9:.0f} Gflop/s, "
          f"{balance.bytes_per_s / 2**30:.2f} GiB/s, ridge {balance.ridge:.1f} flops/byte, "
          f"measured once in {time.perf_counter() - start:.2f} s")
    print(f"{'program':<24} {'compile s':>9} {'%jaxpr s':>8} {'+kernels s':>10} "
          f"{'×compile':>8} {'kernels':>7} {'nodes':>5} {'px':>5}")
    for name, f, args in programs():
        def compile_once():
            jax.jit(lambda *a: f(*a)).lower(*args).compile()

        compile_s = median(compile_once)
        plain = median(lambda: jaxmagic.trace(f, *args)._drawn)
        views = []
        with_kernels = median(lambda: views.append(
            jaxmagic.trace(f, *args, overlays=("kernels",))) or views[-1]._drawn)
        view = views[-1]
        added = with_kernels - plain
        print(f"{name:<24} {compile_s:>9.2f} {plain:>8.2f} {added:>10.2f} "
              f"{added / compile_s:>8.2f} {len(view.kernels):>7} {len(view.graph.nodes):>5} "
              f"{_text_px(view._drawn.svg):>5.1f}")


if __name__ == "__main__":
    main()
