"""`--kernels`: the kernels XLA made of the call, each coloured on the graph with the
equations it fused, the bytes between kernels on the edges, and a table of flops, bytes
and what bounds each (`view.kernels`: render.kernels.Kernels). Read from the analysis
compile `--sharding` and `--memory` share (core.compiled.kernels); with `--profile`, each
kernel's measured time."""
from __future__ import annotations

from .base import ANALYSIS, TRACE, Context, Flag, Overlay

HELP = ("the kernels XLA compiled the call into: each fusion, library call, copy and "
        "collective coloured on the graph with the equations it holds, the bytes that go "
        "through memory between kernels on the edges, and per kernel its user lines, "
        "flops, bytes and whether it is bound by compute or by memory on this device "
        "(view.kernels holds the rows; with --profile, the time of each); one extra "
        "compile, and once per process a short measurement of the device")


def compute(ctx: Context, flag: str):
    """The kernels, or None with a note on the graph saying why."""
    from ..core.calltree import library_test
    from ..core.compiled import kernels as K
    from ..graph.sites import equation_site
    from ..render.kernels import Kernels

    library = library_test()
    try:
        program = K.of_call(ctx.analysis(), ctx.traced, ctx.graph, ctx.shared.get("measured"),
                            site=lambda eqn: equation_site(eqn, library).where)
    except Exception as e:      # a program the tagged copy cannot compile, HLO not read
        ctx.graph.notes.append(f"--kernels unavailable: {type(e).__name__}: {e}")
        return None
    notes, balance = [], None
    try:
        balance = K.balance()
    except Exception as e:      # a device that cannot run the measurement
        notes.append(f"the device's balance could not be measured ({type(e).__name__}); "
                     "no kernel is called compute- or memory-bound")
    return Kernels(program, balance, K.value_bytes(ctx.traced.jaxpr),
                   func_name=ctx.traced.func_name, notes=notes)


OVERLAY = Overlay("kernels", (Flag("kernels", HELP),), compute,
                  needs=frozenset({TRACE, ANALYSIS}), after=("costs",))
