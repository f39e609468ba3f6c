"""`--sharding`: each value's sharding on its edge and the collectives the compiled
program runs (`view.collectives`: render.collectives.Collectives). Computed from the
analysis compile (core.compiled.collectives), which it makes first: the graph's values
take the types it reads."""
from __future__ import annotations

from .base import ANALYSIS, TRACE, Context, Flag, Overlay

HELP = ("each value's sharding on its edge (the types' own on an Explicit mesh, the "
        "compiler's choice on an Auto one) and every collective the compiled program runs, "
        "at the line that caused it, with its mesh axes and bytes per device "
        "(view.collectives holds the rows); a value resharded between producer and reader "
        "is a red dashed edge (P('data', None) → P('model', None)); one extra compile")


def prepare(ctx: Context, flag: str) -> None:
    """The analysis compile, and the graph's values typed with what it propagated."""
    if ctx.stage != "jaxpr":
        return
    from ..core.compiled import collectives as C

    analysis, types, specs, mesh, problem = C.prepare(ctx.traced)
    ctx.compiled = analysis
    ctx.graph_options.update(sharding=True, types=types, specs=specs)
    ctx.shared["sharding"] = (mesh, problem)


def compute(ctx: Context, flag: str):
    if ctx.stage != "jaxpr":
        return None
    from ..core.compiled import collectives as C
    from ..render.collectives import Collectives

    mesh, problem = ctx.shared["sharding"]
    traced, analysis = ctx.traced, ctx.compiled
    if analysis is None:
        notes = [f"the compiled program could not be analysed ({problem}); shardings are "
                 "the jaxpr's own types"]
        return Collectives([], func_name=traced.func_name, devices=None, notes=notes)
    try:
        rows, notes = C.find(analysis, traced, ctx.graph, mesh), []
    except Exception as e:      # HLO text this release writes in a form not read yet
        rows, notes = [], [f"the compiled program's collectives could not be read "
                           f"({type(e).__name__}: {e})"]
    return Collectives(rows, func_name=traced.func_name, input_names=traced.in_names,
                       devices=analysis.num_devices, notes=notes)


OVERLAY = Overlay("collectives", (Flag("sharding", HELP),), compute,
                  needs=frozenset({TRACE, ANALYSIS}), prepare=prepare)
