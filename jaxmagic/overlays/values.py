"""`--values`: what flowed along every edge (count, NaN/±Inf, zeros, mean, spread, range),
the largest magnitudes by group and layer, and where the first NaN or Inf was born, with
its cause and fix (`view.values`: render.values.Values). Computed by core.values in one
compile that runs the call once on its arguments (never donating them), and once more
with the card's fix put in where a run can check it (a sqrt at 0 under grad)."""
from __future__ import annotations

from .base import RUN, TRACE, Context, Flag, Overlay

HELP = ("runs the call once and puts a summary of every value on the graph (μ, σ, range, "
        "NaN/Inf, zeros), and where the first NaN or Inf was born, with its cause and fix "
        "(view.values holds the summaries)")


def compute(ctx: Context, flag: str):
    """The values view, or None with a note on the graph saying why."""
    from ..core.compiled.profile import flat_args
    from ..core.values import summarise
    from ..render.values import Values

    try:
        flow = summarise(ctx.traced, flat_args(ctx.traced),
                         budget=ctx.setting("values", "budget"))
    except Exception as e:      # the program raised (a checkify error, out of memory)
        ctx.graph.notes.append(f"--values: the run raised {type(e).__name__}: "
                               f"{str(e).splitlines()[0] if str(e) else ''}")
        return None
    view = Values(flow, ctx.graph, ctx.traced.func_name)
    view.checked = _check(ctx, view)
    return view


def _check(ctx: Context, view) -> bool | None:
    """The card's fix, where it is a change of one equation, run on the same arguments:
    whether every result is then finite (None: no such fix)."""
    from ..core.compiled.profile import flat_args
    from ..core.nonfinite import REWRITES
    from ..core.values import summarise

    card = view.card
    if card is None or card.rewrite is None:
        return None
    index, primitive = card.rewrite
    again = summarise(ctx.traced, flat_args(ctx.traced), budget=ctx.setting("values", "budget"),
                      rewrites={index: REWRITES[primitive][0]})
    return not again.reached_results()


OVERLAY = Overlay("values", (Flag("values", HELP),), compute, needs=frozenset({TRACE, RUN}),
                  settings={"budget": 20000})    # values summarised in full, past it counted
