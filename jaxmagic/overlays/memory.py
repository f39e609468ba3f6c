"""`--memory`: the live bytes over the compiled program's schedule, the peak and the
buffers alive at it (`view.memory`: render.memory.Memory). Computed by
core.compiled.memory from the analysis compile (`--sharding`'s, where it made one);
nothing runs."""
from __future__ import annotations

from .base import ANALYSIS, TRACE, Context, Flag, Overlay

HELP = ("bytes live at the compiled program's peak per equation and group on the graph, "
        "the live-bytes curve over XLA's schedule, and the buffers alive at the peak "
        "(view.memory holds the rows); compiles, runs nothing")


def compute(ctx: Context, flag: str):
    """The memory view, or None with a note on the graph saying why."""
    from ..core.compiled.memory import memory_profile
    from ..render.memory import Memory

    try:
        return Memory(memory_profile(ctx.traced, ctx.graph, ctx.analysis()),
                      ctx.traced.func_name)
    except Exception as e:      # a program the tagged copy cannot compile, an empty dump
        ctx.graph.notes.append(f"--memory unavailable: {type(e).__name__}: {e}")
        return None


OVERLAY = Overlay("memory", (Flag("memory", HELP),), compute,
                  needs=frozenset({TRACE, ANALYSIS}), after=("collectives",))
