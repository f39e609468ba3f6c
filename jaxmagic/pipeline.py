"""How `%jaxpr` makes its view: trace the call, let the overlays asked for prepare (the
analysis compile `--sharding` makes first), build the graph, compute each overlay (in the
registry's order, after those whose results it reads), and hand the graph and the
results to `JaxprView`. `api.py` is the facade over this."""
from __future__ import annotations

from typing import Any, Iterable

from . import overlays as O
from .core import collector, interrupt
from .core import trace as _trace
from .core.target import BoundCall
from .graph import build as _build
from .render.jaxpr import JaxprView


@collector.paused()
def trace_call(call: BoundCall, *, static_argnums=None, static_argnames=None,
               stage: str = "jaxpr", overlays: Iterable[str] = (),
               settings: dict[str, dict] | None = None, **options: Any) -> JaxprView:
    """`trace` for a call whose arguments carry their source text (from a magic).

    `overlays` names the flags given (`["profile", "sharding"]`: `overlays.REGISTRY`);
    `settings` an overlay's own settings by its attr (`{"values": {"budget": 100}}`: each
    declares its names and defaults); `options` are the view's."""
    __tracebackhide__ = True
    with interrupt.ctrl_c_noted():      # one the collector drops while JAX traces too
        traced = _trace.trace(call, static_argnums=static_argnums,
                              static_argnames=static_argnames)
        interrupt.stop_if_interrupted()
    stage_text = _trace.stage_text(traced, stage) if stage != "jaxpr" else None
    names = set(overlays)
    asked = [(o, o.given(names)) for o in O.REGISTRY if o.given(names)]
    ctx = O.Context(traced, stage=stage, settings=_settings(asked, settings or {}))
    for overlay, flag in asked:
        if overlay.prepare is not None:
            overlay.prepare(ctx, flag)
    ctx.graph = _build.build(traced, **ctx.graph_options)
    ctx.graph.notes[:0] = traced.notes
    for overlay, flag in _ordered(asked):
        ctx.results[overlay.attr] = _checked(overlay, overlay.compute(ctx, flag))
    results = {o.attr: ctx.results.get(o.attr) for o in O.REGISTRY}
    return JaxprView(ctx.graph, func_name=traced.func_name, stage=stage,
                     stage_text=stage_text, overlays=results, **options)


def _settings(asked: list, given: dict[str, dict]) -> dict[str, dict]:
    """Each overlay asked for's settings: its defaults, replaced by those `given`; a name
    it does not declare raises."""
    out = {}
    for overlay, _ in asked:
        mine = given.get(overlay.attr, {})
        if unknown := set(mine) - set(overlay.settings):
            raise TypeError(f"overlay {overlay.attr!r} has no setting "
                            f"{', '.join(sorted(unknown))}")
        out[overlay.attr] = {**overlay.settings, **mine}
    return out


def _checked(overlay: O.Overlay, result: Any) -> Any:
    """`result`, where it is what the picture can ask (an `overlays.Result`, or None)."""
    if result is not None and not isinstance(result, O.Result):
        raise TypeError(f"overlay {overlay.attr!r} returned a {type(result).__name__}, "
                        "not a jaxmagic.overlays.Result")
    return result


def _ordered(asked: list) -> list:
    """`asked` in the registry's order, each after the overlays it reads (`after`)."""
    left, done, out = list(asked), set(), []
    pending = {o.attr for o, _ in asked}
    while left:
        i = next((i for i, (o, _) in enumerate(left)
                  if not (set(o.after) & pending) - done), 0)
        overlay, flag = left.pop(i)
        done.add(overlay.attr)
        out.append((overlay, flag))
    return out


def costliest_groups(call: BoundCall, m: Any) -> list[tuple[str, float]]:
    """The three costliest groups of the call `m` (a `%jit_compare` measurement) timed,
    by estimated flops (name, share)."""
    from .core.compiled.profile import cost_rows
    from .render.costs import Costs

    try:
        traced = _trace.trace(call, static_argnums=m.static_argnums or None,
                              static_argnames=m.static_argnames or None)
        rows, _, _ = cost_rows(traced, _build.build(traced), profile=False)
    except Exception:      # the comparison stands without it
        return []
    return [(g.name, g.share) for g in Costs.of(rows).costliest_groups(3)]
