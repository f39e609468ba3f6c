"""Overlays: the analyses drawn over a jaxpr's graph (`--cost`/`--profile`, `--sharding`,
`--memory`, `--values`, `--kernels`), one module each, registered in one list.

An overlay (`base.Overlay`) says
- its flags and their help (`--memory`: "bytes live at the compiled program's peak…");
  an overlay with several flags (`--cost`, `--profile`) gets the last one given;
- what it needs (`needs`: the trace, the analysis compile that `--sharding` and
  `--memory` share, a run) and whose results it reads (`after`);
- how it is computed: `compute(context, flag)` with the traced call, the graph and the
  shared `base.Context` (the one analysis compile); `prepare(context, flag)`, where
  given, runs before the graph is built (`--sharding` types the graph's values);
- the view attribute holding its result (`view.costs`, `view.collectives`,
  `view.memory`, …).

What it adds to the picture its result says: a `Result` (render/marks.py; render/'s
`Costs`, `Collectives`, `Memory`, `Values` are ones), whose every answer defaults to
nothing: `overlay(g)` and `cluster_overlay(g)` the marks on nodes and groups, `edge_lines`
those on edges (`draws = "fill"`: the picture's fill, the last asked for wins; `"lines"`:
its fill and a line on its own nodes, over the fill), `hover(g)` hover lines by SVG title,
`side_html(g)` the tables beside the picture, `text()` the text view, `focus()` the
equations whose groups open first, `marks_inputs` (each argument gets its own edge). The
view asks every result all of them; it never probes.

The text view and the tables beside the picture show the `lines` overlays' first, then
the others in the registry's order.

`REGISTRY` is the one list: the magic's options and `%jaxpr?` help, the pipeline
(`jaxmagic.pipeline.trace_call`), `JaxprView.configure` (through the view's `overlays`),
the explorer's "copy as magic" and its hover all read it, so adding an analysis is one
module here plus its compute part in core/ and its drawing part in render/.
`register`/`unregister` change it at run time (a test's overlay, a user's); the magic
rebuilds its options when it changes (`on_change`).
"""
from __future__ import annotations

from typing import Callable

from ..render.marks import Result
from .base import Context, Flag, Overlay
from .costs import OVERLAY as COSTS
from .kernels import OVERLAY as KERNELS
from .memory import OVERLAY as MEMORY
from .sharding import OVERLAY as SHARDING
from .values import OVERLAY as VALUES

__all__ = ["Context", "Flag", "Overlay", "Result", "REGISTRY", "register", "unregister", "flags",
           "chosen", "on_change"]

# the options' order (help, "copy as magic"); each is computed after those it reads
REGISTRY: list[Overlay] = [COSTS, SHARDING, MEMORY, VALUES, KERNELS]

_listeners: list[Callable[[], None]] = []


def register(overlay: Overlay) -> Overlay:
    """Add `overlay` (last, or in place of a registered one of the same `attr`). A flag
    the magic cannot take (one it has already: `--depth`, `--cost`) raises, and the
    registry stays as it was."""
    before = list(REGISTRY)
    for i, known in enumerate(REGISTRY):
        if known.attr == overlay.attr:
            REGISTRY[i] = overlay
            break
    else:
        REGISTRY.append(overlay)
    try:
        _changed()
    except Exception:
        REGISTRY[:] = before
        _changed()
        raise
    return overlay


def unregister(overlay: Overlay | str) -> None:
    """Remove an overlay (or the one whose `attr` is given)."""
    attr = overlay if isinstance(overlay, str) else overlay.attr
    REGISTRY[:] = [o for o in REGISTRY if o.attr != attr]
    _changed()


def on_change(listener: Callable[[], None]) -> None:
    """Call `listener()` whenever an overlay is registered or removed."""
    _listeners.append(listener)


def _changed() -> None:
    for listener in _listeners:
        listener()


def flags() -> list[Flag]:
    """Every registered overlay's flags, in the registry's order."""
    return [f for o in REGISTRY for f in o.flags]


def chosen(given: Callable[[Flag], bool]) -> list[str]:
    """The names of the flags `given` says were given (`["sharding", "memory"]`)."""
    return [f.name for f in flags() if given(f)]
