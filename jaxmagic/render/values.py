"""`Values`: what flowed along every edge of a traced call and where the first NaN or Inf
was born, for `%jaxpr --values` and `view.values`.

The data is `core.flow.Flow` (a summary per value, born flags per equation); this view
puts the summaries on the picture's edges and hover, outlines the equation where the first
non-finite value was born and names its cause and fix in a card (`core.nonfinite`), says
which argument brought in a NaN the program did not make and what an integer division by
0 returned, and lists the largest magnitudes by group and, for a folded series of layers,
by layer.
"""
from __future__ import annotations

from collections import defaultdict

from ..core.flow import Flow, Summary
from ..core.summary_rows import BOOL, FLOAT, INTEGER, KEY
from ..graph.model import Graph
from . import html as H
from .costs import EMPHASIS, _chain, _columns
from .marks import Result
from .origin import Origin
from .text import visible

BAD_FILL = "#fee2e2"
TOP_GROUPS = 6
TOP_VALUES = 12
MOST_LAYERS = 12     # rows of a layer table; more are sampled evenly


def _box(ink: str, paper: str, inner: str) -> str:
    """A card: a coloured rule on its left, its paper a tint of it."""
    return (f'<div style="border-left:4px solid {ink};padding:6px 8px;margin-bottom:8px;'
            f'background:{paper};color:{H.INK}">{inner}</div>')


def num(x: float) -> str:
    """3 significant digits, a true minus sign."""
    if x != x:
        return "—"
    text = f"{x:.3g}" if abs(x) < 1e5 or abs(x) < 1e-3 and x else f"{x:.2e}"
    return text.replace("-", "−").replace("e+0", "e").replace("e−0", "e−").replace("e+", "e")


def short(s: Summary) -> str:
    """`μ 0.01 σ 0.9 [−3.1, 4.2]`, `[0, 9]`, `37% true`, `key`; the non-finite counts."""
    if s.n == 0:
        return "never ran" if s.kind != KEY else "key"
    if s.kind == KEY:
        return "key"
    if s.kind == BOOL:
        text = f"{100 * (s.n - s.zeros) / s.n:.0f}% true"
    elif s.kind == INTEGER:
        text = f"[{num(s.min)}, {num(s.max)}]"
    elif s.kind == FLOAT and s.finite:
        text = f"μ {num(s.mean)} σ {num(s.std)} [{num(s.min)}, {num(s.max)}]"
    else:
        text = ""
    if s.kind == FLOAT and s.zeros >= 0.1 * s.n and s.finite:
        text += f" · {100 * s.zeros / s.n:.0f}% zeros"
    return " · ".join(x for x in (text, bad(s)) if x)


def bad(s: Summary) -> str:
    parts = [f"{label} {n}" for label, n in (("NaN", s.nan), ("+Inf", s.pinf),
                                             ("−Inf", s.ninf)) if n]
    return " · ".join(parts)


class Values(Result, Origin):
    """The values of one run: `.flow` (the data), `.card`, `.records()`, `.text()`."""

    draws = "lines"      # its marks go over --cost/--memory's fill (jaxmagic.overlays)

    def __init__(self, flow: Flow, full: Graph, func_name: str = "f"):
        self.flow = flow
        self.full = full
        self.func_name = func_name
        self.checked: bool | None = None     # the card's fix, run (overlays.values)
        self.alarms = flow.alarms()           # the values drawn red
        self._node_of = {e: n for n in full.nodes.values() if n.kind == "op"
                         for e in n.eqns}

    # ---- the data -------------------------------------------------------------------------

    def summary(self, value: tuple) -> Summary | None:
        return self.flow.summaries.get(value)

    def records(self) -> list[dict]:
        """One dict per value (`pandas.DataFrame(view.values.records())`)."""
        out = []
        for vid, s in self.flow.summaries.items():
            node = self._node_of.get(vid[0])
            out.append({"value": vid, "aval": s.aval, "primitive": node.primitive
                        if node else ("argument" if vid[0] in (-1, "in") else "constant"),
                        "where": node.where if node else "", **vars(s)})
        return out

    def _values_of(self, eqns) -> list[Summary]:
        return [s for _, s in self._vids_of(eqns)]

    def _vids_of(self, eqns) -> list[tuple[tuple, Summary]]:
        return [((e, k), s) for e in eqns for k in range(8)
                if (s := self.summary((e, k))) is not None]


    # ---- text ----------------------------------------------------------------------------

    def headline(self) -> str:
        own = sum(1 for s in self.flow.summaries.values() if s.nonfinite) - len(self.alarms)
        text = (f"{len(self.flow.summaries)} values summarised in one run "
                f"({self.flow.seconds:.2f} s)")
        if not self.alarms:
            return text + (f"; {own} hold ±Inf the program writes, no NaN" if own else
                           "; all finite")
        return text + f"; {len(self.alarms)} hold NaN or Inf" + \
            (f", {own} more ±Inf the program writes (a mask)" if own else "")

    def intended(self) -> str:
        """What an infinity the program writes itself is (a −inf mask, an inf sentinel in
        a min), where every non-finite value is one: intended, not an alarm."""
        if not self.flow.intended():
            return ""
        seen = self.flow.summaries.values()
        signs = " and ".join(x for x, held in (("+inf", any(s.pinf for s in seen)),
                                               ("−inf", any(s.ninf for s in seen))) if held)
        return (f"no NaN, and no value made infinite: the {signs} are written by the "
                "program (a mask, a sentinel in a min or max), drawn without alarm")

    def written(self) -> str:
        """Where the NaN and ±Inf no equation made come from, with no origin card: the
        constants the program writes (`jnp.nan`, a `-jnp.inf` fill), at their lines."""
        if self.card is not None or self.flow.arrived() or self.intended():
            return ""
        at: dict[str, list[str]] = {}
        for e, v in self.flow.written():
            n = self._node_of.get(e.index) or self._body_of(e)
            said = at.setdefault(self._line(n) if n else "?", [])
            what = "nan" if v != v else "+inf" if v > 0 else "−inf"
            if what not in said:
                said.append(what)
        if at:
            return ("no equation made a NaN or Inf of finite values: the program writes "
                    "them itself, " + "; ".join(f"{' and '.join(w)} at {line}" for line, w
                                                in list(at.items())[:3]))
        if any(s.nonfinite for s in self.flow.summaries.values()):
            return "no equation made a NaN or Inf of finite values"
        return ""

    def arrived(self) -> list[str]:
        """Each argument or captured constant that brought a NaN or Inf in: by name, made
        before the call (the edges out of it are red, and no equation was its origin)."""
        return [f"{bad(s)} of {s.aval} came in through the "
                f"{'argument' if v[0] == -1 else 'captured constant'} "
                f"{self.flow.names.get(v) or '?'}: {self.func_name} did not make it; look "
                "where that value is made, before the call" for v, s in self.flow.arrived()]

    def by_zero(self) -> list[str]:
        """Each integer division whose divisor held a 0: what it returned there, at its
        line (no NaN marks it; XLA returns −1, or the largest unsigned value)."""
        out = []
        for index, s in sorted(self.flow.by_zero.items()):
            node = self._node_of.get(index)
            what = "x // y" if self.flow.by_zero_in.get(index) == "floor_divide" else "div"
            got = num(s.min) if s.min == s.max else f"{num(s.min)} to {num(s.max)}"
            out.append(f"integer division by 0 at {self._line(node) if node else '?'}: {what} "
                       f"returned {got} where the divisor was 0 ({s.n} of {s.aval}), no "
                       f"error and no NaN (checkify.checkify({self.func_name}, "
                       "errors=checkify.div_checks) flags it)")
        return out

    def notes(self) -> list[str]:
        out = list(self.flow.skipped)
        if self.flow.budget_left_out:
            out.append(f"{self.flow.budget_left_out} values past the budget "
                       "(JaxMagic.values_budget): only their NaN/Inf counts")
        if any(e.loops for e in self.flow.equations.values()):
            out.append("inside loops: over every iteration; the iteration is the "
                       "outermost loop's, counted along its axis")
        return out

    def text(self) -> str:
        lines = [f"values of {self.func_name}: {self.headline()}"]
        said = self.arrived() + self.by_zero()
        lines += [""] + said if said else []
        if self.intended() or self.written():
            lines += ["", self.intended() or self.written()]
        if self.card is not None:
            lines += [""] + self.card.lines()
        lines += ["", "by group (largest |x|):"]
        lines += _columns([[num(m), g] for g, m in self.groups()], ["max |x|", "group"])
        # what a terminal needs: the values with NaN or Inf where they are born, then the
        # largest (every value, 325 lines for a 32-layer MLP's gradient, is in records())
        records = self.records()
        s = self.flow.summaries
        top = sorted(records, key=lambda r: (0, 0) if s[r["value"]].nonfinite else
                     (1, -s[r["value"]].magnitude))[:TOP_VALUES]
        bad = any(x.nonfinite for x in s.values())
        lines += ["", "values with NaN or Inf, then the largest |x|:" if bad else
                  "the largest values (|x|):"]
        rows = [[r["where"] or "—", r["primitive"], r["aval"], short(s[r["value"]])]
                for r in top]
        lines += _columns(rows, ["where", "made by", "type", "summary"])
        if len(records) > TOP_VALUES:
            lines.append(f"note: {len(records) - TOP_VALUES} more in view.values.records()")
        lines += [f"note: {n}" for n in self.notes()]
        return "\n".join(lines)

    # ---- groups and layers ---------------------------------------------------------------

    def groups(self, n: int = TOP_GROUPS) -> list[tuple[str, float]]:
        """The largest |x| by drawn group of the full graph's top levels."""
        acc: dict[str, float] = defaultdict(float)
        for node in self._node_of.values():
            chain = [c for c in _chain(self.full, node.cluster)
                     if self.full.clusters[c].level > 0][:2]
            if not chain:
                continue
            name = " › ".join(self._series_name(c) for c in chain)
            for s in self._values_of(node.eqns):
                acc[name] = max(acc[name], s.magnitude)
        return sorted(acc.items(), key=lambda kv: -kv[1])[:n]

    def _series_name(self, c: int) -> str:
        """A group by the name the folded picture gives it: `layer ×32` for each layer."""
        first = self.full.series.get(c, (None, 0))[0]
        if first is None:
            return self.full.clusters[c].title
        count = sum(1 for f, _ in self.full.series.values() if f == first)
        cluster = self.full.clusters[first]
        return f"{cluster.label} ×{count}" + (" · backward" if cluster.backward else "")

    def layers(self) -> list[tuple[str, list[tuple[int, float, float, int]]]]:
        """Per folded series (`Block ×16`): each layer's (index, largest |x|, σ of its
        output, non-finite count), in order: where activations or gradients grow or
        vanish from layer to layer."""
        members: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for c, (first, i) in self.full.series.items():
            members[first].append((i, c))
        inside: dict[int, set[int]] = defaultdict(set)
        for node in self.full.nodes.values():
            for c in _chain(self.full, node.cluster):
                inside[c].add(node.id)
        out = []
        for first, ms in members.items():
            rows = []
            for i, c in sorted(ms):
                values = [s for n in inside[c] for s in self._values_of(
                    self.full.nodes[n].eqns) if s.kind == FLOAT]
                output = self._output(c, inside[c])
                if values and output is not None:
                    rows.append((i, max(s.magnitude for s in values), output.std,
                                 sum(s.nonfinite for s in values)))
            if len(rows) > 1:
                c = self.full.clusters[first]
                out.append((c.label + (" · backward" if c.backward else ""), rows))
        return out

    def _output(self, c: int, inside: set[int]) -> Summary | None:
        """A layer's output: the last value leaving it for its own pass (the next layer's
        activation; a forward layer's residuals leave for the backward pass)."""
        backward = self.full.clusters[c].backward
        leaving = [e.value for e in self.full.edges if e.src in inside and
                   e.dst not in inside and e.value is not None and e.value[0] >= 0 and
                   self.full.nodes[e.dst].backward == backward]
        found = [s for v in sorted(leaving) if (s := self.summary(v)) is not None
                 and s.kind == FLOAT]
        return found[-1] if found else None

    def trend(self, rows) -> str:
        """"σ shrinks ×2.6e11 from layer 0 to 30" where it changes 100-fold or more, or
        vanishes."""
        first, last = rows[0][2], rows[-1][2]
        if first > 0 and last == 0:
            gone = next(i for i, _, sd, _ in rows if sd == 0)
            return f"σ vanishes: 0 from layer {gone}"
        if not (first > 0 and last > 0) or 0.01 < last / first < 100:
            return ""
        change = "grows" if last > first else "shrinks"
        return f"σ {change} ×{num(max(last / first, first / last))} from layer " \
            f"{rows[0][0]} to {rows[-1][0]}"

    @staticmethod
    def sampled(rows: list, most: int = MOST_LAYERS) -> list:
        """At most `most` rows, evenly spread, the first and the last kept."""
        if len(rows) <= most:
            return rows
        step = (len(rows) - 1) / (most - 1)
        return [rows[round(k * step)] for k in range(most)]

    # ---- on the drawn graph ------------------------------------------------------------------

    def focus(self) -> list[int]:
        """The origin's equation: its groups open first."""
        eqn = self.flow.origin()
        return [eqn.index] if eqn is not None else []

    def overlay(self, g: Graph) -> dict:
        """Per node (fill, line, emphasised): values holding NaN/Inf in red with their
        counts, the origin outlined; a collapsed group its largest |x|."""
        origin = self.flow.origin()
        out = {}
        for n in g.nodes.values():
            vids = self._vids_of(n.eqns)
            values = [s for _, s in vids]
            if not values:
                continue
            broken = [s for v, s in vids if v in self.alarms]
            born = origin is not None and origin.index in n.eqns
            grouped = n.kind in ("call", "group")
            line = ("first NaN/Inf born here" + (", discarded" if self._dropped() else
                                                 "")) if born else \
                bad(broken[0]) if broken else ""
            if grouped and not born:
                top = max(s.magnitude for s in values)
                line = "\n".join(x for x in (f"max |x| {num(top)}", line) if x)
            if line or born:
                out[n.id] = (BAD_FILL if broken else "", line, born)
        return out

    def cluster_overlay(self, g: Graph) -> dict:
        acc: dict[int, float] = defaultdict(float)
        broken: set[int] = set()
        for n in g.nodes.values():
            for v, s in self._vids_of(n.eqns):
                for c in _chain(g, n.cluster):
                    acc[c] = max(acc[c], s.magnitude)
                    if v in self.alarms:
                        broken.add(c)
        return {c: ("", f"max |x| {num(m)}" + (" · NaN/Inf inside" if c in broken else ""),
                    False) for c, m in acc.items()}

    def edge_lines(self, g: Graph) -> dict[tuple[int, int], tuple[str, bool]]:
        """Per edge carrying one value: its summary, and whether it holds NaN/Inf."""
        out = {}
        for e in g.edges:
            s = self.summary(e.value) if e.value is not None else None
            if s is not None:
                out[e.src, e.dst] = (short(s), e.value in self.alarms)
        return out

    def hover(self, g: Graph) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for n in g.nodes.values():
            lines = []
            for e in n.eqns[:1] if n.kind == "op" else ():
                eqn = self.flow.equations.get(e)
                for k, v in enumerate(eqn.outs if eqn else ()):
                    s = self.summary(v)
                    if s is not None:
                        lines.append(f"value {k}: {s.aval} {short(s)}")
                        at = self._iteration(eqn, s.nan_at if s.nan else s.bad_at)
                        if at and s.nonfinite:
                            lines.append(f"first NaN/Inf at {at}")
            if lines:
                out[f"n{n.id}"] = lines
        return out

    # ---- HTML ------------------------------------------------------------------------------

    def card_html(self) -> str:
        card = self.card
        said = "".join(_box(ink, paper, H.esc(x)) for lines, ink, paper in
                       ((self.arrived(), EMPHASIS, "#fef2f2"),
                        (self.by_zero(), H.WARNING, "#fffbeb")) for x in lines)
        if card is None:
            quiet = self.intended() or self.written() or "every value finite"
            return said or (f'<div style="color:{H.INK};margin-bottom:6px">'
                            f'{H.esc(quiet)}</div>')
        lines = card.lines()
        rest = "".join(f'<div style="margin-top:3px">{H.esc(x)}</div>' for x in lines[1:])
        # an Inf made and discarded before the results is worth knowing, not an alarm
        ink, paper = (H.WARNING, "#fffbeb") if card.dropped else (EMPHASIS, "#fef2f2")
        return said + _box(ink, paper, f'<div style="font-weight:600;color:{ink}">'
                           f'{H.esc(lines[0])}</div>{rest}')

    def side_html(self, g: Graph | None = None) -> str:
        groups = H.table([[H.esc(num(m)), H.esc(name)] for name, m in self.groups()],
                         ["max |x|", "group"])
        parts = [f'<div style="font-size:12px;color:{H.INK}">', self.card_html(),
                 f'<div style="color:{H.MUTED};margin-bottom:6px">{H.esc(self.headline())}'
                 '</div>', '<div style="font-weight:600;margin:8px 0 4px 0">largest |x| '
                 f'by group</div>{groups}']
        for name, rows in self.layers()[:2]:
            trend = self.trend(rows)
            parts.append(f'<div style="font-weight:600;margin:8px 0 4px 0">{H.esc(name)} '
                         f'by layer{H.esc(" · " + trend) if trend else ""}</div>')
            parts.append(H.table([[str(i), H.esc(num(m)), H.esc(num(sd)), str(b) if b
                                   else ""] for i, m, sd, b in self.sampled(rows)],
                                 ["layer", "max |x|", "σ out", "NaN/Inf"]))
        parts += [f'<div style="color:{H.MUTED};font-size:11px;margin-top:4px">{H.esc(n)}'
                  '</div>' for n in self.notes()]
        return "".join(parts) + "</div>"

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {"text/plain": visible(self.text()),
                "text/html": H.panel(self.side_html(), f"values of {H.esc(self.func_name)}")}

    def __repr__(self) -> str:
        return f"<Values {self.func_name}: {self.headline()}>"

