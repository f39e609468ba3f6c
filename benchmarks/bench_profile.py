"""%jaxpr --profile: is the measured time joined to the right equations, fast enough, and
what does the profiler cost?

1. A 1024³ matmul among 30 small elementwise ops: the matmul's share of the measured time
   (target ≥ 50%) and its flops (exactly 2·1024³).
2. A 16-layer transformer gradient profiled end to end, trace to table (target ≤ 10 s),
   and the share of device time joined to equations (target ≥ 90%).
3. The steady time of a call under the profiler against %timeit of the same call: the
   profiler's overhead.

    python benchmarks/bench_profile.py
"""
import os
import statistics
import sys
import time
import timeit

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from transformer import make, model  # noqa: E402


def small_ops(x, w):
    y = x @ w
    z = x[:16, :16]
    for _ in range(30):          # 30 small elementwise ops beside the matmul
        z = jnp.sin(z) * 1.01
    return y, z


def timeit_per_call(f, args) -> float:
    jax.block_until_ready(f(*args))
    t = timeit.Timer(lambda: jax.block_until_ready(f(*args)))
    number, _ = t.autorange()
    return min(t.repeat(5, number)) / number


def main():
    import jaxmagic

    n = 1024
    x = jnp.ones((n, n)) * 1e-3
    view = jaxmagic.profile(small_ops, x, x)
    c = view.costs
    mm = max(c, key=lambda r: r.flops)
    print(f"matmul among 30 elementwise ops: share {mm.share:.1%} (target ≥ 50%), "
          f"flops {mm.flops:,.0f} (2·1024³ = {2 * n ** 3:,}; exact: {mm.flops == 2 * n ** 3}),"
          f" joined {c.coverage:.1%}")

    params, x16 = make(16)
    start = time.perf_counter()
    view = jaxmagic.profile(jax.grad(model), params, x16)
    png = view._repr_mimebundle_().get("image/png")
    seconds = time.perf_counter() - start
    c = view.costs
    print(f"16-layer transformer gradient: {view.num_equations} equations profiled and drawn "
          f"in {seconds:.2f} s (target ≤ 10 s), {c.runs} runs, device time "
          f"{c.total_s * 1e3:.2f} ms per call, joined {c.coverage:.1%} (target ≥ 90%), "
          f"png {'yes' if png else 'no'}")
    for g in c.costliest_groups(3):
        print(f"    {g.share:6.1%}  {g.name}")

    # overhead: steady time under the profiler (median wall per call, as measured by
    # the profile itself) against %timeit's best of the same compiled call
    from jaxmagic.core.compiled.profile import compile_tagged, flat_args
    from jaxmagic.core.target import BoundCall
    from jaxmagic.core.trace import trace

    t = trace(BoundCall(jax.grad(model), (params, x16), {}, ["params", "x"], {}, "grad"))
    compiled, _, _ = compile_tagged(t)
    args = flat_args(t)
    plain = timeit_per_call(compiled, args)
    walls = []
    for _ in range(3):
        view = jaxmagic.profile(jax.grad(model), params, x16)
        walls.append(view.costs.wall_s)
    under = statistics.median(walls)
    print(f"profiler overhead: {under * 1e3:.2f} ms per call under the profiler vs "
          f"{plain * 1e3:.2f} ms with %timeit ({under / plain:.2f}×)")


if __name__ == "__main__":
    sys.exit(main())
