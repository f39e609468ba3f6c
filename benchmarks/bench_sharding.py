"""%jaxpr --sharding: how much of the program does the join reach, and what does it cost?

A 16-layer transformer gradient on a 2×4 mesh (Auto), batch over `data`, each weight's
columns over `model`:
1. the share of equation outputs that reach the compiled program and got a propagated
   sharding on the graph (target: all of them);
2. the collectives found and the share joined to an equation and line (target: all),
   and the edges marked as resharded between producer and reader;
3. `%jaxpr --sharding` against plain `%jaxpr` end to end (trace, analysis compile, layout),
   and the analysis compile against a plain `jax.jit(...).lower().compile()`.

    python benchmarks/bench_sharding.py
"""
import os
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax  # noqa: E402
from jax.sharding import AxisType, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402
from transformer import make, model  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import jaxmagic  # noqa: E402
from jaxmagic.core import cost  # noqa: E402
from jaxmagic.core.compiled import collectives, hlo  # noqa: E402
from jaxmagic.core.compiled.analysis import analyze  # noqa: E402
from jaxmagic.core.target import BoundCall  # noqa: E402
from jaxmagic.core.trace import trace  # noqa: E402


def sharded(layers=16):
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    params, x = make(layers)
    params = jax.device_put(params, NamedSharding(mesh, P(None, "model")))
    return params, jax.device_put(x, NamedSharding(mesh, P("data", None)))


def timed(f):
    start = time.perf_counter()
    out = f()
    return out, time.perf_counter() - start


def main():
    params, x = sharded()
    grad = jax.grad(model)
    t = trace(BoundCall(grad, (params, x), {}, ["params", "x"], {}, "grad(model)(params, x)"))
    analysis, types, _, mesh, problem = collectives.prepare(t)
    assert problem is None, problem
    program = hlo.parse(analysis.before_partitioning)
    reached = {tag for ins in program.values() for tag in ins.tags[-1:]}
    outs = [v for i, eqn, *_ in cost.walk(t.jaxpr) if not cost.sub_jaxprs(eqn)
            for v in eqn.outvars]
    kept = [v for i, eqn, *_ in cost.walk(t.jaxpr) if i in reached for v in eqn.outvars]
    print(f"1. equation outputs with a propagated sharding: "
          f"{sum(v in types for v in kept)}/{len(kept)} of those that reach the program "
          f"after propagation ({sum(v in types for v in outs)}/{len(outs)} of all: XLA "
          "drops the rest before partitioning)")

    view = jaxmagic.trace(grad, params, x, sharding=True)
    rows = list(view.collectives)
    joined = sum(1 for c in rows if c.where)
    print(f"2. collectives: {view.collectives.count} instructions, their {len(rows)} parts "
          f"(one per equation a combined one serves) joined to a line {joined}/{len(rows)}; "
          f"{sum(c.bytes for c in rows) / 2 ** 20:.1f} MiB per device per call")
    edges = view.full.edges
    moved = [e for e in edges if e.reshard]
    print(f"   edges marked resharded: {len(moved)}/{len(edges)}"
          + (f" (e.g. {moved[0].reshard})" if moved else ""))

    _, plain = timed(lambda: jaxmagic.trace(grad, params, x).svg())
    _, with_sharding = timed(lambda: jaxmagic.trace(grad, params, x, sharding=True).svg())
    _, jit_compile = timed(lambda: jax.jit(grad).lower(params, x).compile())
    _, analysis_compile = timed(lambda: analyze(t))
    print(f"3. %jaxpr {plain:.2f} s, %jaxpr --sharding {with_sharding:.2f} s "
          f"(×{with_sharding / plain:.2f}); analysis compile {analysis_compile:.2f} s vs "
          f"jit compile {jit_compile:.2f} s (×{analysis_compile / jit_compile:.2f})")


if __name__ == "__main__":
    main()
