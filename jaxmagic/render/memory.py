"""`Memory`: where a compiled call's memory goes, for `%jaxpr --memory` and `view.memory`.

The data is `core.compiled.memory.MemoryProfile` (the live-bytes curve over XLA's schedule and the
buffers alive at its peak); this view adds the graph overlay (fill by bytes held live at
the peak on a log scale, "12 MiB at peak" on groups, the peak's equation outlined), the
totals beside the picture, a small static chart of the curve, and a text form.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass

from ..core.compiled.memory import (
    ARGUMENT,
    GRADIENT,
    RECOMPUTED,
    SAVED,
    UNATTRIBUTED,
    MemoryProfile,
)
from ..graph.model import Graph
from . import html as H
from .costs import EMPHASIS, TOP_LEVEL, _chain, _columns, fill, fill_legend_html
from .marks import Result
from .text import visible
from .units import fmt_bytes

TOP_ROWS = 12
TOP_GROUPS = 6
_LAST_KEY = re.compile(r"(\.[^.\[\]]+|\[[^\]]*\])$")


def _parent(path: str) -> str:
    """`model.l1` for `model.l1.kernel`, `params[3]` for `params[3]['w1']`."""
    return _LAST_KEY.sub("", path) or path
KIND_COLOURS = {SAVED: "#b91c1c", ARGUMENT: "#1d4ed8", RECOMPUTED: "#047857",
                GRADIENT: "#7c3aed"}


@dataclass
class Row:
    """Buffers live at the peak that look alike (a repeated layer's saved activation),
    folded into one: `count` of them, `bytes` in all."""

    kind: str
    shape: str
    count: int
    bytes: int
    what: str          # the input's name, or the primitive that made it
    where: str
    group: str


class Memory(Result):
    """The memory of one compiled call: `.profile` (the data), `.records()`, `.text()`."""

    draws = "fill"       # the picture's fill (jaxmagic.overlays.memory), over --cost's

    def __init__(self, profile: MemoryProfile, func_name: str = "f"):
        self.profile = profile
        self.func_name = func_name

    # ---- the data -------------------------------------------------------------------------

    @property
    def peak_bytes(self) -> int:
        return self.profile.peak_bytes

    @property
    def curve(self) -> list[int]:
        return list(self.profile.curve)

    @property
    def live(self):
        return list(self.profile.live)

    def records(self) -> list[dict]:
        """The buffers live at the peak as dicts, largest first
        (`pandas.DataFrame(view.memory.records())`)."""
        keys = ("bytes", "shape", "kind", "input", "primitive", "where", "group",
                "equation", "value", "start", "end")
        return [{k: getattr(b, k) for k in keys} for b in self.profile.live]

    def rows(self) -> list[Row]:
        """The buffers live at the peak, alike ones folded (`×16`), largest first."""
        acc: dict[tuple, list] = defaultdict(list)
        for b in self.profile.live:
            what = re.sub(r"\[\d+\]", "[i]", b.input) if b.input else \
                b.primitive or f"unattributed ({b.instruction})"
            acc[b.kind, b.shape, what, b.where, b.group].append(b)
        out = [Row(k[0], k[1], len(v), sum(b.bytes for b in v), k[2], k[3], k[4])
               for k, v in acc.items()]
        return sorted(out, key=lambda r: -r.bytes)

    def groups(self, n: int = TOP_GROUPS) -> list[tuple[str, int]]:
        """Bytes live at the peak by group, largest first: the call as drawn for values
        the program made (`loss › block ×8`), the module or container an input belongs to
        (`model.l1`, `params[3]`) for inputs."""
        acc: Counter = Counter()
        for b in self.profile.live:
            if b.input:
                acc["inputs: " + _parent(b.input)] += b.bytes
            else:
                acc[b.group or TOP_LEVEL] += b.bytes
        return acc.most_common(n)

    def per_device(self) -> str:
        n = self.profile.num_devices
        return f" per device ({n} devices)" if n > 1 else ""

    def diff(self, other: "Memory") -> str:
        """What changed from this call's memory to `other`'s (two variants of one step,
        e.g. without and with jax.checkpoint): the peak, then bytes at the peak by kind."""
        a, b = self.profile, other.profile
        change = lambda x, y: f"{fmt_bytes(x)} → {fmt_bytes(y)}" + (  # noqa: E731
            f" ({100 * (y - x) / x:+.0f}%)" if x else "")
        lines = [f"peak: {change(a.peak_bytes, b.peak_bytes)}, buffers live "
                 f"{len(a.live)} → {len(b.live)}"]
        ka, kb = a.by_kind(), b.by_kind()
        for kind in sorted(set(ka) | set(kb), key=lambda k: -max(ka.get(k, 0), kb.get(k, 0))):
            lines.append(f"  {kind}: {change(ka.get(kind, 0), kb.get(kind, 0))}")
        return "\n".join(lines)

    # ---- text ----------------------------------------------------------------------------

    def headline(self) -> str:
        p = self.profile
        steps = len(p.schedule)
        phase = "" if p.backward_from is None else (
            " (backward pass)" if p.peak_step >= p.backward_from else " (forward pass)")
        at = p.schedule[p.peak_step] if p.schedule else ""
        what = f", in {p.peak_what}" if p.peak_what else \
            f", in {at} (joined to no equation)" if at else ""
        return (f"peak {fmt_bytes(p.peak_bytes)}{self.per_device()} at step {p.peak_step} of "
                f"{steps}{phase}{what}, {len(p.live)} buffers live")

    def totals(self) -> list[tuple[str, str]]:
        p = self.profile
        out = [("peak live", fmt_bytes(p.peak_bytes))]
        out += [(kind, fmt_bytes(n)) for kind, n in p.by_kind().items()]
        out += [("XLA: arguments", fmt_bytes(p.argument_bytes)),
                ("XLA: outputs", fmt_bytes(p.output_bytes)),
                ("XLA: temp", fmt_bytes(p.temp_bytes))]
        if p.alias_bytes:
            out.append(("XLA: aliased", fmt_bytes(p.alias_bytes)))
        if p.constant_bytes:
            out.append(("XLA: constants (in the program, not in the peak)",
                        fmt_bytes(p.constant_bytes)))
        if p.xla_total:
            out.append(("XLA: temp + arguments + outputs",
                        f"{fmt_bytes(p.xla_total)} (peak is "
                        f"{100 * p.peak_bytes / p.xla_total:.0f}% of it)"))
        return out

    def _table(self) -> list[list[str]]:
        return [[fmt_bytes(r.bytes), r.kind, f"{r.shape} ×{r.count}" if r.count > 1
                 else r.shape, r.what, r.where or "—", r.group or "—"]
                for r in self.rows()[:TOP_ROWS]]

    def footnotes(self) -> list[str]:
        p = self.profile
        out = []
        if len(self.rows()) > TOP_ROWS:
            out.append(f"{len(self.rows()) - TOP_ROWS} more rows in view.memory.records()")
        if p.num_devices > 1:
            out.append(f"sizes are per device: the program runs on {p.num_devices} "
                       "devices, each holding its shard")
        if p.backward_from is not None:
            out.append("saved activation: computed before the backward pass and kept for "
                       "it; recomputed: a forward value jax.checkpoint computes again in the "
                       "backward pass; gradient: depends on the cotangent")
        if any(b.kind == UNATTRIBUTED for b in p.live):
            out.append("unattributed: made by no one equation of the program (XLA's copy "
                       "of a constant, a loop's bookkeeping, a copy XLA makes once for "
                       "several equations)")
        donatable = p.donatable_bytes()
        if donatable >= 0.1 * p.peak_bytes:
            out.append(f"{fmt_bytes(donatable)} of outputs are live at the peak beside "
                       "arguments of the same shapes: donating those arguments "
                       "(jax.jit(..., donate_argnums=...)) lets XLA write the outputs in "
                       "their place")
        if p.backward_from is not None and any(b.kind == SAVED and b.recompute
                                               for b in p.live):
            out.append("some values jax.checkpoint recomputes are saved anyway: XLA merged "
                       "the recomputation with the forward pass")
        return out

    def text(self) -> str:
        lines = [f"memory of {self.func_name}: {self.headline()}", ""]
        lines += [f"  {k}: {v}" for k, v in self.totals()]
        lines += ["", "by group:"]
        lines += _columns([[fmt_bytes(v), g] for g, v in self.groups()], ["bytes", "group"])
        lines += ["", "live at the peak:"]
        lines += _columns(self._table(), ["bytes", "kind", "shape", "what", "where",
                                          "group"])
        lines += [""] + [f"note: {n}" for n in self.footnotes()]
        return "\n".join(lines).rstrip()

    # ---- the overlay on a drawn graph --------------------------------------------------------

    def _node_bytes(self, g: Graph) -> dict[int, int]:
        by_eqn: dict[int, int] = defaultdict(int)
        by_input: dict[str, int] = defaultdict(int)
        by_argument: dict[str, int] = defaultdict(int)
        for b in self.profile.live:
            if b.equation is not None:
                by_eqn[b.equation] += b.bytes
            elif b.input:
                by_input[b.input] += b.bytes
                by_argument[b.argument] += b.bytes
        out = {}
        for n in g.nodes.values():
            if n.kind == "input":
                out[n.id] = by_input.get(n.title) or by_argument.get(
                    n.title.split(" · ")[0], 0)
            elif n.eqns:
                out[n.id] = sum(by_eqn.get(e, 0) for e in n.eqns)
        return out

    def overlay(self, g: Graph) -> dict:
        """`to_dot` keyword arguments: per node and cluster (fill, line, emphasised)."""
        peak = self.peak_bytes or 1
        values = self._node_bytes(g)
        marked = self.profile.peak_equation
        nodes = {}
        for i, v in values.items():
            share = v / peak
            grouped = g.nodes[i].kind in ("call", "group")
            line = f"{fmt_bytes(v)} at peak" if v and (grouped or share >= 0.01) else ""
            nodes[i] = (fill(share), line, marked is not None and marked in g.nodes[i].eqns)
        clusters = {}
        for cid in g.clusters:
            v = sum(values[i] for i in values if cid in _chain(g, g.nodes[i].cluster))
            if v:
                clusters[cid] = (fill(v / peak), f"{fmt_bytes(v)} at peak", False)
        return {"overlay": nodes, "cluster_overlay": clusters}

    # ---- HTML ------------------------------------------------------------------------------

    def legend_html(self) -> str:
        return fill_legend_html("share of the bytes live at the peak", "the equation at the peak")

    def side_html(self, g: Graph | None = None) -> str:
        """Legend, totals, the curve and the live-at-peak table: beside the picture."""
        totals = H.table([[H.esc(k), H.esc(v)] for k, v in self.totals()])
        rows = [[H.esc(c).replace(" ", "\u00a0") if j == 0 else H.esc(c) if j != 1 else
                 f'<span style="color:{KIND_COLOURS.get(c, H.INK)}">{H.esc(c)}</span>'
                 for j, c in enumerate(row)] for row in self._table()]
        table = H.table(rows, ["bytes", "kind", "shape", "what", "where", "group"])
        groups = H.table([[H.esc(fmt_bytes(v)).replace(" ", "\u00a0"), H.esc(g)]
                          for g, v in self.groups()], ["bytes", "group"])
        notes = "".join(f'<div style="color:{H.MUTED};font-size:11px;margin-top:4px">'
                        f'{H.esc(n)}</div>' for n in self.footnotes())
        chart = H.svg_img(curve_svg(self.profile), f"live bytes of {self.func_name} over "
                          "its schedule", 420)
        legend = self.legend_html() if g is not None else ""
        return (f'<div style="font-size:12px">{legend}'
                f'<div style="color:{H.INK};margin-bottom:6px">{H.esc(self.headline())}</div>'
                f'{chart}{totals}'
                f'<div style="font-weight:600;margin:8px 0 4px 0">by group</div>{groups}'
                f'<div style="font-weight:600;margin:8px 0 4px 0">live at the peak</div>'
                f'{table}{notes}</div>')

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {"text/plain": visible(self.text()),
                "text/html": H.panel(self.side_html(), f"memory of {H.esc(self.func_name)}")}

    def __repr__(self) -> str:
        return f"<Memory {self.func_name}: {self.headline()}>"


# ---- the curve -------------------------------------------------------------------------------

def curve_svg(p: MemoryProfile, width: int = 420, height: int = 150) -> str:
    """Live bytes over the schedule as a small static SVG: the backward pass shaded, the
    peak marked. Long schedules keep each pixel column's maximum, so the peak survives."""
    left, right, top, bottom = 52, 10, 16, 24
    w, h = width - left - right, height - top - bottom
    n, peak = len(p.curve), max(p.peak_bytes, 1)
    x = lambda t: left + (w * t / max(n - 1, 1))        # noqa: E731
    y = lambda v: top + h - h * v / peak                # noqa: E731
    columns = min(n, w)
    points = []
    for c in range(columns):
        lo, hi = c * n // columns, max((c + 1) * n // columns, c * n // columns + 1)
        t = max(range(lo, hi), key=p.curve.__getitem__)
        points.append(f"{x(t):.1f},{y(p.curve[t]):.1f}")
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="Helvetica,Arial,sans-serif" '
             f'font-size="10"><rect width="{width}" height="{height}" fill="#ffffff"/>']
    label = ""
    if p.backward_from is not None:
        bx = x(p.backward_from)
        parts.append(f'<rect x="{bx:.1f}" y="{top}" width="{left + w - bx:.1f}" '
                     f'height="{h}" fill="#eef2ff"/>')
        label = (f'<text x="{left + w - 3}" y="{top + 10}" text-anchor="end" '
                 f'fill="#4338ca">backward pass</text>')
    if points:      # one shape, filled and outlined: its points written once, not twice
        area = f"{x(0):.1f},{y(0):.1f} " + " ".join(points) + f" {x(n - 1):.1f},{y(0):.1f}"
        parts.append(f'<polygon points="{area}" fill="#bfdbfe" stroke="#1d4ed8" '
                     f'stroke-width="1.2" stroke-linejoin="round"/>')
    px, py = x(p.peak_step), y(p.peak_bytes)
    anchor = "end" if px > left + w * 0.6 else "start"
    parts.append(label + f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{EMPHASIS}"/>'
                 f'<text x="{px:.1f}" y="{top - 4}" text-anchor="{anchor}" '
                 f'fill="{EMPHASIS}">peak {H.esc(fmt_bytes(p.peak_bytes))} at step '
                 f'{p.peak_step}</text>')
    parts.append(f'<line x1="{left}" y1="{top + h}" x2="{left + w}" y2="{top + h}" '
                 f'stroke="#64748b"/><line x1="{left}" y1="{top}" x2="{left}" '
                 f'y2="{top + h}" stroke="#64748b"/>'
                 f'<text x="{left - 4}" y="{top + 4}" text-anchor="end" fill="#334155">'
                 f'{H.esc(fmt_bytes(peak))}</text>'
                 f'<text x="{left - 4}" y="{top + h}" text-anchor="end" fill="#334155">0</text>'
                 f'<text x="{left + w / 2:.0f}" y="{height - 6}" text-anchor="middle" '
                 f'fill="#334155">schedule step (0–{max(n - 1, 0)})</text></svg>')
    return "".join(parts)
