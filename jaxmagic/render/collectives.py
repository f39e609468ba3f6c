"""`Collectives`: what the compiled program sends between devices, by the user's line.

The rows are the data (`view.collectives`, `records()` for pandas); the view adds a text
form for terminals, an HTML table sorted by bytes beside the picture, and the overlay that
marks each node that caused a collective ("all-reduce model · 256 KiB").
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterator

from ..core.compiled.collectives import Collective
from ..graph.model import Graph
from . import html as H
from .marks import Result
from .text import visible
from .units import fmt_bytes, fmt_time

FILL = "#fed7aa"         # the collective orange of `dot.COLLECTIVE`, light for dark ink
INPUT_FILL = "#dcfce7"   # an input's own green (`dot.STYLE`)
TOP_LEVEL = "top level"
FIELDS = ("kind", "axes", "bytes", "seconds", "origin", "primitive", "where", "group",
          "instruction", "group_size", "argument", "equation")


def describe(c: Collective, names: list[str] | None = None) -> str:
    """"all-gather of w1 over model · 2 MiB"."""
    arg = f" of {names[c.argument]}" if names and c.argument is not None and \
        c.argument < len(names) else ""
    axes = f" over {','.join(c.axes)}" if c.axes else ""
    return f"{c.kind}{arg}{axes} · {fmt_bytes(c.bytes)}"


class Collectives(Result):
    """Every collective of one compiled call, largest first (per-device bytes).

    As an overlay (`jaxmagic.overlays.sharding`) it draws lines: its own fill and line on
    the nodes holding a collective and on gathered arguments, over the picture's fill."""

    draws = "lines"
    marks_inputs = True       # each argument: its sharding, its gather, its reshards

    def __init__(self, rows: list[Collective], *, func_name: str = "f",
                 input_names: list[str] | None = None, devices: int | None = 1,
                 notes: list[str] | None = None):
        self.rows = sorted(rows, key=lambda c: -c.bytes)
        self.func_name = func_name
        self.input_names = list(input_names or [])
        self.devices = devices      # None: the program was not analysed (notes say why)
        self.notes = list(notes or [])

    def __iter__(self) -> Iterator[Collective]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> Collective:
        return self.rows[i]

    @property
    def bytes(self) -> int:
        return sum(c.bytes for c in self.rows)

    @property
    def count(self) -> int:
        """Collective instructions: XLA's combined all-reduce of 4 gradients is one, its
        parts (one row each, for the equations they join) are not."""
        return len({c.instruction for c in self.rows})

    def records(self) -> list[dict]:
        """The rows as dicts (`pandas.DataFrame(view.collectives.records())`)."""
        return [{k: getattr(c, k) for k in FIELDS} for c in self.rows]

    # ---- the overlay --------------------------------------------------------------------

    def _by_node(self, g: Graph) -> dict[int, list[Collective]]:
        holder = {e: n.id for n in g.nodes.values() for e in n.eqns}
        out: dict[int, list[Collective]] = defaultdict(list)
        for c in self.rows:
            if c.equation in holder:
                out[holder[c.equation]].append(c)
        return out

    def overlay(self, g: Graph) -> dict:
        """`to_dot`'s `overlay`: each node holding a collective's equation, filled orange,
        with what it sends ("all-reduce over model · 256 KiB"; several: a count), and an
        argument that is gathered, with where ("all-gather at mlp:5 · 2 MiB")."""
        out = {}
        for node, cs in self._by_node(g).items():
            n = len({c.instruction for c in cs})
            line = describe(cs[0], self.input_names) if n == 1 else \
                f"{n} collectives · {fmt_bytes(sum(c.bytes for c in cs))}"
            timed = [c.seconds for c in cs if c.seconds is not None]
            out[node] = (FILL, line + (f" in {fmt_time(sum(timed))}" if timed else ""),
                         False)
        inputs = {n.title: n.id for n in g.nodes.values() if n.kind == "input"}
        for c in self.rows:      # an argument's gather, on the argument too
            name = self.input_names[c.argument] if c.argument is not None and \
                c.argument < len(self.input_names) else None
            if name in inputs:
                out[inputs[name]] = (INPUT_FILL, f"{c.kind} at {c.where or 'first use'} · "
                                     f"{fmt_bytes(c.bytes)}", False)
        return out

    # ---- text and HTML --------------------------------------------------------------------

    def headline(self) -> str:
        if self.devices is None:
            return "not known: the compiled program was not analysed"
        if not self.rows:
            return f"no collectives: the compiled program on {self.devices} device" \
                f"{'s' if self.devices != 1 else ''} sends nothing between devices"
        n = self.count
        inserted = len({c.instruction for c in self.rows if not c.written})
        across = len({c.instruction for c in self.rows if c.processes > 1})
        return (f"{n} collective{'s' if n != 1 else ''} on "
                f"{self.devices} devices, {fmt_bytes(self.bytes)} per device per call; "
                f"{inserted} inserted by the partitioner, {n - inserted} "
                "written" + (f"; {across} across processes" if across else ""))

    def footnotes(self) -> list[str]:
        """What the table's numbers count, then the notes."""
        out = list(self.notes)
        if self.rows:
            out.insert(0, "bytes/device: the larger of a collective's input and output, as "
                       "one device holds it (an all-gather's result, a reduce-scatter's "
                       "operand: N× its result)")
        parts = Counter(c.instruction for c in self.rows)
        combined = sorted(name for name, k in parts.items() if k > 1)
        if combined:
            first = f"{combined[0]} combines {parts[combined[0]]} operands"
            out.insert(1, (first if len(combined) == 1 else f"{len(combined)} instructions "
                           f"combine several operands ({first})") + " into one collective: "
                       "counted once, its bytes shared out to the equations they come from")
        return out

    def _table(self, most: int | None = None) -> list[list[str]]:
        """One row per kind of collective at one place: the calls of a repeated series
        (`block ×16`) and the parts XLA split one collective into are summed; "×16"
        counts instructions, "4 operands" the parts of combined ones."""
        same: dict[tuple, list[Collective]] = defaultdict(list)
        for c in self.rows:
            same[(c.kind, c.argument, c.axes, c.where, c.series or c.group, c.origin,
                  c.primitive, c.processes)].append(c)
        groups = sorted(same.values(), key=lambda cs: -sum(c.bytes for c in cs))
        out = []
        for cs in groups[:most]:
            c = cs[0]
            arg = f" of {self.input_names[c.argument]}" if c.argument is not None and \
                c.argument < len(self.input_names) else ""
            seconds = [x.seconds for x in cs if x.seconds is not None]
            size = fmt_bytes(sum(x.bytes for x in cs)) + \
                (f" · {fmt_time(sum(seconds))}" if seconds else "")
            across = f" · across {c.processes} processes" if c.processes > 1 else ""
            n = len({x.instruction for x in cs})
            parts = f" ({len(cs)} operands)" if len(cs) > n else ""
            out.append([c.kind + arg + (f" ×{n}" if n > 1 else "") + parts + across,
                        ",".join(c.axes) or "—", size,
                        c.where or "—", c.series or c.group or TOP_LEVEL,
                        c.origin + (f" ({c.primitive})" if c.primitive else "")])
        if most is not None and len(groups) > most:
            out.append([f"… {len(groups) - most} more (view.collectives)", "", "", "",
                        "", ""])
        return out

    @property
    def _size(self) -> str:
        """The size column's header: bytes per device, and the time where measured."""
        timed = any(c.seconds is not None for c in self.rows)
        return "bytes/device" + (" · time" if timed else "")

    def text(self) -> str:
        lines = [f"collectives of {self.func_name}: {self.headline()}"]
        rows = self._table()
        if rows:
            header = ["collective", "axes", self._size, "where", "group", "origin"]
            table = [header] + rows
            widths = [max(len(r[i]) for r in table) for i in range(len(header))]
            lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                      for r in table]
        return "\n".join(lines + [f"note: {n}" for n in self.footnotes()])

    def focus(self) -> list[int]:
        """The equations that run a collective: their groups open first."""
        return [c.equation for c in self.rows if c.equation is not None]

    def side_html(self, g: Graph | None = None) -> str:
        """Headline and table, four columns to sit beside a picture: what moves (kind,
        argument, axes), bytes, where (line and group), who issued it."""
        rows = [[H.esc(f"{kind} over {axes}" if axes not in ("—", "") else kind),
                 H.esc(size),
                 H.esc(where) + (f'<br><span style="color:{H.MUTED}">{H.esc(group)}</span>'
                                 if group != TOP_LEVEL else ""),
                 H.esc(origin)]
                for kind, axes, size, where, group, origin in self._table(most=12)]
        table = H.table(rows, ["collective", self._size, "where", "origin"]) if rows \
            else ""
        notes = "".join(f'<div style="color:{H.MUTED};font-size:11px;margin-top:4px">'
                        f'{H.esc(n)}</div>' for n in self.footnotes())
        return (f'<div style="font-size:12px"><div style="color:{H.INK};margin-bottom:6px">'
                f'{H.esc(self.headline())}</div>{table}{notes}</div>')

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {"text/plain": visible(self.text()),
                "text/html": H.panel(self.side_html(),
                                     f"collectives of {H.esc(self.func_name)}")}

    def __repr__(self) -> str:
        return f"<Collectives {self.func_name}: {self.headline()}>"
