"""`Costs`: where a call's time (or its flops) goes, per equation and per group.

The rows are the data the `--profile` / `--cost` picture is drawn from, like `%timeit -o`'s
raw numbers; the view adds the graph overlay (fill by share on a log scale, a
"1.2 ms · 38%" line, the costliest nodes outlined), the legend, a top-10 table and a text
form for terminals.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterator

from ..core.cost import CostRow, is_communication
from ..graph.model import Graph
from . import html as H
from .marks import Result
from .text import visible
from .units import fmt_bytes, fmt_si, fmt_time

# Fill by share, half-decades on a log scale; light enough for dark ink.
SCALE = ((0.30, "#f87171"), (0.10, "#fb923c"), (0.03, "#fdba74"), (0.01, "#fde68a"),
         (0.001, "#fef9c3"))
BELOW = "#ffffff"
EMPHASIS = "#b91c1c"
TOP_GROUPS = 3
TOP_LEVEL = "top level"


def fill(share: float) -> str:
    return next((colour for bound, colour in SCALE if share >= bound), BELOW)


def percent(share: float) -> str:
    if share >= 0.095:
        return f"{100 * share:.0f}%"
    if share >= 0.001:
        return f"{100 * share:.1f}%"
    return "<0.1%" if share > 0 else "0%"


def fill_legend_html(what: str, outlined: str) -> str:
    """The key to the fill scale (`--cost`, `--profile`, `--memory`): a swatch per step,
    what the share is of, and what an outline marks."""
    items = [(colour, f"≥ {percent(b)}") for b, colour in SCALE]
    items.append((BELOW, f"< {percent(SCALE[-1][0])}"))
    swatches = "".join(
        f'<span style="display:inline-block;margin:0 6px 2px 0;white-space:nowrap">'
        f'<span style="display:inline-block;width:12px;height:12px;background:{c};'
        f'border:1px solid #94a3b8;vertical-align:-2px;margin-right:3px"></span>'
        f'{H.esc(t)}</span>' for c, t in items)
    return (f'<div style="font-size:12px;color:{H.INK};margin:0 0 6px 0">'
            f'<b>fill</b>: {H.esc(what)}, log scale<br>{swatches}<br>'
            f'<span style="border:2px solid {EMPHASIS};padding:0 3px">outlined</span> '
            f'{H.esc(outlined)}</div>')


@dataclass
class Group:
    """Equations that sit in the same chain of groups (call tree, nested jaxpr, scope)."""

    name: str
    seconds: float | None
    flops: float
    share: float
    equations: int


class Costs(Result):
    """Per-equation cost rows of one call, measured (`mode="profile"`) or estimated."""

    draws = "fill"       # the picture's fill (jaxmagic.overlays.costs)

    def __init__(self, rows: list[CostRow], *, mode: str, func_name: str = "f",
                 total_s: float | None = None, wall_s: float | None = None,
                 runs: int = 0, platform: str = "", coverage: float | None = None,
                 notes: list[str] | None = None):
        self.rows = rows
        self.mode = mode
        self.func_name = func_name
        self.total_s = total_s        # measured device time per call, joined or not
        self.wall_s = wall_s          # wall time per call under the profiler
        self.runs = runs
        self.platform = platform
        self.coverage = coverage      # share of the device time joined to equations
        self.notes = list(notes or [])

    @classmethod
    def of(cls, rows: list[CostRow], measured=None, *, func_name: str = "f",
           problem: str | None = None) -> "Costs":
        """From `core.compiled.profile.cost_rows`: measured when `measured`, else estimated."""
        if measured is None:
            notes = [f"the profiler is unavailable ({problem}); showing costs estimated "
                     "from shapes, as --cost does"] if problem else []
            return cls(rows, mode="cost", func_name=func_name, notes=notes)
        return cls(rows, mode="profile", func_name=func_name, total_s=measured.total_s,
                   wall_s=measured.wall_s, runs=measured.runs, platform=measured.platform,
                   coverage=_joined(rows, measured.total_s))

    # ---- the data ----------------------------------------------------------------------

    def __iter__(self) -> Iterator[CostRow]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> CostRow:
        return self.rows[i]

    @property
    def profiled(self) -> bool:
        return self.mode == "profile"

    @property
    def flops(self) -> float:
        return sum(r.flops for r in self.rows)

    def records(self) -> list[dict]:
        """The rows as dicts (`pandas.DataFrame(view.costs.records())`)."""
        keys = ("primitive", "flops", "bytes", "seconds", "share", "where", "group",
                "series", "collective")
        return [{k: getattr(r, k) for k in keys} | {"equation": r.index, "split": r.split}
                for r in self.rows]

    def _value(self, r: CostRow) -> float:
        return (r.seconds or 0.0) if self.profiled else r.flops

    def top(self, n: int = 10) -> list[CostRow]:
        """The `n` costliest equations, costliest first."""
        return sorted((r for r in self.rows if r.share > 0), key=lambda r: -r.share)[:n]

    def groups(self, by: str = "call") -> list[Group]:
        """Every group with its summed cost, costliest first.

        `by="call"`: the chain of groups around each equation (call tree, nested jaxpr,
        named scope) as drawn, the calls of a repeated series summed ("block ×16 ·
        backward"). `by="line"`: the user's line and pass ("block:4 · backward").
        """
        acc: dict[str, list[CostRow]] = defaultdict(list)
        for r in self.rows:
            name = (r.series or r.group) if by == "call" else \
                f"{r.where or r.group or '?'} · {'backward' if r.backward else 'forward'}"
            acc[name or TOP_LEVEL].append(r)
        out = [Group(name, sum(r.seconds or 0.0 for r in rs) if self.profiled else None,
                     sum(r.flops for r in rs), sum(r.share for r in rs), len(rs))
               for name, rs in acc.items()]
        return sorted(out, key=lambda g: -g.share)

    def costliest_groups(self, n: int = 3) -> list[Group]:
        """The `n` costliest groups of the call tree; of lines and passes when most of the
        cost sits outside any group (a graph with no call tree to speak of)."""
        groups = self.groups()
        flat = not groups or (groups[0].name == TOP_LEVEL and groups[0].share > 0.5)
        return (self.groups("line") if flat else groups)[:n]

    # ---- the overlay on a drawn graph ----------------------------------------------------

    def label(self, value: float, share: float) -> str:
        amount = fmt_time(value) if self.profiled else fmt_si(value, "flop")
        return f"{amount} · {percent(share)}"

    def _node_values(self, g: Graph) -> dict[int, float]:
        """Time (or flops) per drawn node: the equations it stands for; a collective's own
        time is not its equation's (`sent`)."""
        by_index = {r.index: r for r in self.rows if not r.collective}
        # a loop's or call's own time goes to the node that holds all of its equations
        holders = [(self._value(h), {r.index for r in self.rows if h.index in r.parents})
                   for h in self.rows if not h.is_op and self._value(h)]
        nodes: dict[int, float] = {}
        for n in g.nodes.values():
            eqns = set(n.eqns)
            if not eqns:
                continue
            value = sum(self._value(by_index[e]) for e in eqns if e in by_index)
            value += sum(v for v, inside in holders if inside and inside <= eqns)
            nodes[n.id] = value
        return nodes

    def overlay(self, g: Graph) -> dict:
        """`to_dot` keyword arguments: per node and per cluster (fill, line, emphasised)."""
        total = sum(self._value(r) for r in self.rows) or 1.0
        nodes = self._node_values(g)
        costliest = sorted((i for i in nodes if nodes[i] > 0), key=lambda i: -nodes[i])
        costliest = set(costliest[:TOP_GROUPS])
        moved = self._moved(g)
        node_overlay = {}
        for i, v in nodes.items():
            share = v / total
            grouped = g.nodes[i].kind in ("call", "group")
            line = self.label(v, share) if v and (grouped or share >= 0.01) else \
                moved.get(i, "")
            node_overlay[i] = (fill(share), line, i in costliest)
        clusters = {}
        sent = self._sent(g)
        for cid in g.clusters:     # a folded series' nodes hold the equations of every call
            v = sum(nodes[i] + sent.get(i, 0.0) for i in nodes
                    if cid in _chain(g, g.nodes[i].cluster))
            if v:
                clusters[cid] = (fill(v / total), self.label(v, v / total), False)
        return {"overlay": node_overlay, "cluster_overlay": clusters}

    def _sent(self, g: Graph) -> dict[int, float]:
        """The time of the collectives each drawn node caused, by node (their rows)."""
        holder = {e: n.id for n in g.nodes.values() for e in n.eqns}
        out: dict[int, float] = defaultdict(float)
        for r in self.rows:
            if r.collective and r.index in holder:
                out[holder[r.index]] += self._value(r)
        return out

    def _moved(self, g: Graph) -> dict[int, str]:
        """"moves 1.0 MiB" for a collective's node unprofiled: it moves data, no flops."""
        by_index = {r.index: r for r in self.rows if not r.collective}
        out = {}
        for n in g.nodes.values():
            rows = [by_index[e] for e in n.eqns if e in by_index]
            if rows and all(is_communication(r.primitive) for r in rows):
                out[n.id] = f"moves {fmt_bytes(sum(r.bytes for r in rows))}"
        return out

    # ---- text ------------------------------------------------------------------------------

    def headline(self) -> str:
        if self.profiled:
            joined = f", {percent(self.coverage or 0)} joined to equations" \
                if self.coverage is not None else ""
            return (f"{fmt_time(self.total_s)} device time per call ({self.runs} profiled "
                    f"run{'s' if self.runs != 1 else ''} on {self.platform}; wall "
                    f"{fmt_time(self.wall_s)}){joined}")
        return (f"{fmt_si(self.flops, 'flop')} estimated from shapes (not measured: "
                "%jaxpr --profile measures time)")

    def _equation_table(self, n: int = 10) -> list[list[str]]:
        rows = []
        for r in self.top(n):
            amount = fmt_time(r.seconds) if self.profiled else fmt_si(r.flops, "flop")
            rows.append([percent(r.share), amount, r.primitive + (" *" if r.split else ""),
                         r.where or "—", r.group or TOP_LEVEL])
        return rows

    def _group_table(self, n: int = 10) -> list[list[str]]:
        return [[percent(gr.share),
                 fmt_time(gr.seconds) if self.profiled else fmt_si(gr.flops, "flop"),
                 gr.name, str(gr.equations)] for gr in self.costliest_groups(n)]

    def _node_table(self, g: Graph, n: int = 10) -> list[list[str]]:
        values = self._node_values(g)
        total = sum(self._value(r) for r in self.rows) or 1.0
        top = sorted((i for i in values if values[i] > 0), key=lambda i: -values[i])[:n]
        return [[percent(values[i] / total),
                 fmt_time(values[i]) if self.profiled else fmt_si(values[i], "flop"),
                 g.nodes[i].title, _drawn_group(g, g.nodes[i].cluster),
                 g.nodes[i].where or "—"] for i in top]

    def footnotes(self) -> list[str]:
        out = list(self.notes)
        if any(r.split for r in self.top()):
            out.append("* a fusion of several equations: its time is split over them in "
                       "proportion to their estimated flops")
        if self.profiled:
            out.append("time is device time summed over the instructions; on CPU they run "
                       "on a thread pool, so it can exceed the wall time")
        return out

    def text(self) -> str:
        lines = [f"{'profile' if self.profiled else 'cost'} of {self.func_name}: "
                 f"{self.headline()}", "", "costliest groups:"]
        lines += _columns(self._group_table(), ["share", "amount", "group", "equations"])
        lines += ["", "costliest equations:"]
        lines += _columns(self._equation_table(), ["share", "amount", "primitive", "where",
                                                   "group"])
        lines += [""] + [f"note: {n}" for n in self.footnotes()]
        return "\n".join(lines).rstrip()

    # ---- HTML ------------------------------------------------------------------------------

    def legend_html(self) -> str:
        what = "share of measured time" if self.profiled else "share of estimated flops"
        return fill_legend_html(what, f"the {TOP_GROUPS} costliest nodes")

    def side_html(self, g: Graph | None = None) -> str:
        """Legend, headline and the top-10 tables: what sits beside the picture of `g`."""
        esc_rows = lambda rows: [[H.esc(c) for c in row] for row in rows]  # noqa: E731
        if g is not None:      # the groups as drawn: call nodes, grouped lines, equations
            groups = H.table(esc_rows(self._node_table(g)), ["share", "amount", "node",
                                                             "group", "where"])
        else:
            groups = H.table(esc_rows(self._group_table()), ["share", "amount", "group",
                                                             "eqns"])
        eqns = H.table(esc_rows(self._equation_table()),
                       ["share", "amount", "primitive", "where", "group"])
        notes = "".join(f'<div style="color:{H.MUTED};font-size:11px;margin-top:4px">'
                        f'{H.esc(n)}</div>' for n in self.footnotes())
        return (f'<div style="font-size:12px">{self.legend_html()}'
                f'<div style="color:{H.INK};margin-bottom:6px">{H.esc(self.headline())}</div>'
                f'<div style="font-weight:600;margin:4px 0">costliest '
                f'{"nodes in the picture" if g is not None else "groups"}</div>{groups}'
                f'<div style="font-weight:600;margin:8px 0 4px 0">costliest equations</div>'
                f'{eqns}{notes}</div>')

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        title = f"{'profile' if self.profiled else 'cost'} of {H.esc(self.func_name)}"
        return {"text/plain": visible(self.text()),
                "text/html": H.panel(self.side_html(), title)}

    def __repr__(self) -> str:
        return f"<Costs {self.func_name}: {len(self.rows)} equations, {self.headline()}>"


def _joined(rows: list[CostRow], total_s: float) -> float:
    """The share of the measured time the rows hold (equations and collectives)."""
    return sum(r.seconds or 0.0 for r in rows) / total_s if total_s else 0.0


def _columns(rows: list[list[str]], header: list[str]) -> list[str]:
    if not rows:
        return ["  (none)"]
    table = [header] + rows
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table]


def _chain(g: Graph, cluster: int | None) -> list[int]:
    """The drawn clusters around a node, outermost first."""
    out = []
    while cluster is not None and cluster in g.clusters:
        out.append(cluster)
        cluster = g.clusters[cluster].parent
    return out[::-1]


def _drawn_group(g: Graph, cluster: int | None) -> str:
    """"block ×16 › attention": the drawn groups around a node, below the traced function
    (whose own call, level 0, is the whole picture); a series' name does not wrap."""
    return " › ".join(g.clusters[c].title.replace(" ×", "\u00a0×")
                      for c in _chain(g, cluster) if g.clusters[c].level > 0) or "—"
