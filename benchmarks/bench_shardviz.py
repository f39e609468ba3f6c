"""%%shardviz reads metadata only: its time must not grow with the array's size.

On 8 CPU devices, in one run:
  1. `%%shardviz` on a 512 MiB array and on a 4 KiB array with the same sharding
     (P('x', 'y') on a 2x4 mesh): time ratio big/small (target <= 1.5);
  2. the 2-D case beside `jax.debug.visualize_array_sharding` (rich text boxes, 1-D/2-D
     only): ratio %%shardviz / visualize_array_sharding, printed (information, no target).

    python benchmarks/bench_shardviz.py [--repeat 30]

Each timing is the median of `--repeat` runs, big and small alternating so a neighbour's
burst on a shared machine hits both. The full magic is timed (run through IPython's
`run_cell` with output captured, as a notebook would) and, separately, the API alone
(`jaxmagic.sharding_view(x)` plus its HTML and text).
"""
import argparse
import gc
import os
import statistics
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.utils.capture import capture_output  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402
from traitlets.config import Config  # noqa: E402

import jaxmagic  # noqa: E402


def fmt(s):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def timed(fn):
    """Seconds for one call, with the garbage collector off as %timeit does."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    finally:
        gc.enable()


def make(shape, sharding):
    """Zeros made on the devices (no host copy of 512 MiB)."""
    return jax.jit(lambda: jnp.zeros(shape, jnp.float32), out_shardings=sharding)()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=30)
    a = ap.parse_args()
    assert len(jax.devices()) == 8, "needs 8 devices (XLA_FLAGS set before jax is imported)"

    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    sharding = NamedSharding(mesh, P("x", "y"))
    big = make((8192, 16384), sharding)          # 8192*16384*4 B = 512 MiB
    small = make((32, 32), sharding)             # 32*32*4 B = 4 KiB
    big.block_until_ready(), small.block_until_ready()
    print(f"jax {jax.__version__}, {len(jax.devices())} devices; big {big.nbytes / 2**20:.0f} "
          f"MiB, small {small.nbytes / 2**10:.0f} KiB, sharding P('x', 'y') on a 2x4 mesh")

    config = Config()
    config.HistoryManager.enabled = False
    ip = InteractiveShell.instance(config=config)
    ip.run_line_magic("load_ext", "jaxmagic")
    ip.user_ns.update(big=big, small=small)

    def magic(name):
        with capture_output() as cap:
            res = ip.run_cell(f"%%shardviz\n{name}")
        assert res.success and cap.outputs, "the magic showed nothing"

    def api(x):
        view = jaxmagic.sharding_view(x)
        view.html(), view.text()

    def jax_vis(x):
        with capture_output():
            jax.debug.visualize_array_sharding(x)

    for f in (lambda: magic("big"), lambda: magic("small"), lambda: api(big),
              lambda: jax_vis(small)):
        f()                                      # warm-up: imports, caches
    cases = {"magic big": lambda: magic("big"), "magic small": lambda: magic("small"),
             "api big": lambda: api(big), "api small": lambda: api(small),
             "visualize_array_sharding": lambda: jax_vis(small)}
    times = {k: [] for k in cases}
    order = list(cases)
    for i in range(a.repeat):
        for k in (order if i % 2 == 0 else order[::-1]):
            times[k].append(timed(cases[k]))
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in med.items():
        print(f"  {k:<26} median {fmt(v):>9}  (min {fmt(min(times[k]))}, {a.repeat} runs)")

    ratio = med["magic big"] / med["magic small"]
    api_ratio = med["api big"] / med["api small"]
    print(f"%%shardviz 512 MiB / 4 KiB: {ratio:.2f}  (target <= 1.5) "
          f"{'OK' if ratio <= 1.5 else 'MISSED'}")
    best = min(times["magic big"]) / min(times["magic small"])
    print(f"  (ratio of the fastest runs: {best:.2f}; on a quiet machine both agree)")
    print(f"sharding_view API 512 MiB / 4 KiB: {api_ratio:.2f}")
    vs = med["magic small"] / med["visualize_array_sharding"]
    vs_api = med["api small"] / med["visualize_array_sharding"]
    print(f"2-D: %%shardviz / jax.debug.visualize_array_sharding: {vs:.2f} "
          f"(API alone: {vs_api:.2f})")
    return 0 if ratio <= 1.5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
