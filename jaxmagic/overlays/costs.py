"""`--cost` / `--profile`: flops and bytes per equation estimated from shapes, or the time
measured under JAX's profiler (`view.costs`: render.costs.Costs). Computed by
core.compiled.profile; with `--sharding`, the collectives' time is charged to them."""
from __future__ import annotations

from .base import RUN, TRACE, Context, Flag, Overlay

COST = Flag("cost", "flops and bytes per equation and group, estimated from shapes, on "
            "the graph (view.costs holds the rows)")
PROFILE = Flag("profile", "measured time per equation and group on the graph: runs the "
               "compiled call under JAX's profiler (falls back to --cost when the profiler "
               "is unavailable)")


def compute(ctx: Context, flag: str):
    from ..core.compiled.profile import cost_rows
    from ..render.costs import Costs

    traced = ctx.traced
    rows, measured, problem = cost_rows(traced, ctx.graph, flag == "profile",
                                        ctx.setting("costs", "budget"))
    ctx.shared["measured"] = measured       # each kernel's time (`--kernels`)
    collectives = ctx.results.get("collectives")
    if measured is not None and collectives is not None:
        from ..core.compiled.collectives import apart, charge_time

        charge_time(collectives.rows, measured.instructions)
        rows = apart(rows, collectives.rows, measured.charged)
    return Costs.of(rows, measured, func_name=traced.func_name, problem=problem)


OVERLAY = Overlay("costs", (COST, PROFILE), compute, needs=frozenset({TRACE, RUN}),
                  after=("collectives",),
                  settings={"budget": 3.0})     # seconds --profile may run the call
