"""`Kernels`: what XLA made of the user's lines (`view.kernels`, `records()` for pandas).

On the picture each kernel has a colour of its own and a name in schedule order (`K3`):
the equations it fused share it, an edge between two kernels says the bytes that went
through memory, an edge inside one is drawn faint (that value never left the kernel). The
table beside it: each kernel's user lines, flops, bytes, flops per byte and whether the
roofline of the measured device calls it bound by compute or by memory; with `--profile`,
its measured time and the share of that time the roofline says it needs at best.
"""
from __future__ import annotations

from ..core.compiled.kernels import Balance, Kernel, Program
from ..graph.model import Graph, ancestors
from . import html as H
from .marks import Result
from .text import visible
from .units import fmt_bytes, fmt_si, fmt_time

FIELDS = ("kernel", "kind", "lines", "flops", "bytes", "bytes_read", "bytes_written",
          "intensity", "bound", "times", "loop", "seconds", "roofline", "breaks",
          "equations")
SHOWN = 14          # rows of the table beside the picture
MEASURES = ("bytes: what a kernel reads and writes in memory, per run (its operands and "
            "results in the compiled HLO); flops: 2·M·N·K for a dot, one per element of an "
            "elementwise op or of a reduction's input, none for data movement; 'no kernel': "
            "XLA removed the equation (nothing reads its result) or folded it into a "
            "constant or a bitcast")


class Kernels(Result):
    """Every kernel of one compiled call, in XLA's schedule order."""

    draws = "fill"

    def __init__(self, program: Program, balance: Balance | None, sizes: dict, *,
                 func_name: str = "f", notes: list[str] | None = None):
        self.program = program
        self.rows: list[Kernel] = program.kernels
        self.hlo = program.hlo      # the compiled program's text, as XLA wrote it
        self.balance = balance
        self.sizes = sizes          # (equation, output) → bytes of that value
        self.func_name = func_name
        self.notes = list(notes or [])

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def records(self) -> list[dict]:
        """One dict per kernel (`pandas.DataFrame(view.kernels.records())`)."""
        return [{k: self._field(r, k) for k in FIELDS} for r in self.rows]

    def _field(self, r: Kernel, name: str):
        if name == "bound":
            return self.balance.bound(r) if self.balance else None
        if name == "roofline":
            return self._roofline(r)
        return getattr(r, name)

    def _roofline(self, *rs: Kernel) -> float | None:
        """The roofline's least time over the measured one (1: as fast as it can be; over
        1: faster, its data read from cache), of one kernel or of several together."""
        timed = [r for r in rs if r.seconds and r.times is not None]
        if self.balance is None or not timed:
            return None
        best = sum(self.balance.best_s(r) * r.times for r in timed)
        return best / sum(r.seconds for r in timed)

    # ---- the picture --------------------------------------------------------------------

    def _kernels_of(self, eqns) -> list[int]:
        return sorted({k for e in eqns for k in self.program.holders.get(e, ())})

    def _name(self, k: int) -> str:
        return f"K{self.rows[k].order}"

    def overlay(self, g: Graph) -> dict:
        """Each node filled with its kernel's colour and named by it ("K3 loop fusion");
        one holding several kernels (a closed call) counts them; each group too."""
        nodes = {}
        for n in g.nodes.values():
            ks = self._kernels_of(n.eqns)
            if not ks:
                if n.kind == "op" and n.eqns:
                    nodes[n.id] = ("", "no kernel", False)
                continue
            if len(ks) == 1:
                r = self.rows[ks[0]]
                nodes[n.id] = (colour(ks[0]), f"{self._name(ks[0])} {r.kind}", False)
            elif n.kind == "op" and len(ks) <= 3:     # an equation XLA put in several
                nodes[n.id] = (colour(ks[0]), ", ".join(map(self._name, ks)), False)
            else:
                moved = sum(self.rows[k].bytes for k in ks)
                nodes[n.id] = ("", _count(len(ks), moved, _repeats(g, n.cluster)), False)
        inside: dict[int, set] = {}
        for n in g.nodes.values():
            for c in ancestors(g, n.cluster):
                inside.setdefault(c, set()).update(self._kernels_of(n.eqns))
        clusters = {c: ("", _count(len(ks), None, _repeats(g, c)), False)
                    for c, ks in inside.items() if ks}
        return {"overlay": nodes, "cluster_overlay": clusters}

    def edge_lines(self, g: Graph) -> dict:
        """An edge whose value goes from one kernel to another (or in from an argument):
        the bytes it moves through memory; one inside a kernel: faint, no words; one a
        fold's repeats cross in some and not in others: neither."""
        out = {}
        for e in g.edges:
            value = e.value or self._value(g.nodes[e.src])
            if value is None:
                continue
            eqn = value[0]
            made = set(self.program.holders.get(eqn, ())) if e.value is not None and \
                eqn >= 0 else set(self._kernels_of(g.nodes[e.src].eqns))
            read = set(self._kernels_of(g.nodes[e.dst].eqns))
            if made and read and read <= made:
                out[e.src, e.dst] = ("", False, True)
            elif (made or eqn < 0) and read and not made & read and value in self.sizes:
                out[e.src, e.dst] = (f"{fmt_bytes(self.sizes[value])} via memory",
                                     False, False)
        return out

    def _value(self, n) -> tuple[int, int] | None:
        """The value an edge from `n` carries where the edge does not say (inside a fold:
        one repeat's, the first), when `n`'s equation has one output."""
        if n.kind != "op" or not n.eqns or (n.eqns[0], 1) in self.sizes:
            return None
        return (n.eqns[0], 0)

    def hover(self, g: Graph) -> dict[str, list[str]]:
        out = {}
        for n in g.nodes.values():
            ks = self._kernels_of(n.eqns)
            if ks and len(ks) <= 3:
                out[f"n{n.id}"] = [f"{self._name(k)}: {self.rows[k].kernel} · "
                                   f"{self._figures(self.rows[k])}" for k in ks]
        return out

    def title(self) -> str:
        n = len(self.rows)
        return f"{n} kernel{'s' if n != 1 else ''}"

    # ---- text and tables ------------------------------------------------------------------

    def _figures(self, r: Kernel) -> str:
        return f"{fmt_si(r.flops, 'flop')} · {fmt_bytes(r.bytes)}"

    def headline(self) -> str:
        n, moved = len(self.rows), sum(r.bytes * (r.times or 1) for r in self.rows)
        fused = sum(1 for r in self.rows if len(r.equations) > 1)
        head = (f"{n} kernel{'s' if n != 1 else ''}, {fused} fusing several equations; "
                f"{fmt_bytes(moved)} through memory per call")
        if self.balance is not None:
            head += (f"; ridge {self.balance.ridge:.1f} flops/byte (measured on "
                     f"{self.balance.device}: {fmt_si(self.balance.flops_per_s, 'flop/s')}, "
                     f"{fmt_bytes(self.balance.bytes_per_s)}/s)")
        return head

    def _ordered(self) -> list[list[Kernel]]:
        """Alike kernels together, costliest first: by measured time where there is one,
        else by bytes moved."""
        timed = any(r.seconds for r in self.rows)

        def cost(same: list[Kernel]) -> float:
            return sum((r.seconds or 0.0) if timed else r.bytes * (r.times or 1)
                       for r in same)
        return sorted(_alike(self.rows), key=lambda same: -cost(same))

    def _table(self, most: int | None = None) -> tuple[list[str], list[list[str]]]:
        timed = any(r.seconds is not None for r in self.rows)
        header = ["kernel", "kind", "lines", "flops", "bytes", "flops/byte", "bound"] + \
            (["time", "of best"] if timed else [])
        rows = []
        alike = self._ordered()
        for same in alike[:most]:
            r, n = same[0], len(same)
            runs = f" · {r.loop}" if r.loop else ""       # "· while ×10", "· branch"
            more = f" (+{n - 1} alike)" if n > 1 else ""
            row = [f"K{r.order} {r.kernel}{more}", r.kind + runs, ", ".join(r.lines) or "—",
                   fmt_si(r.flops), fmt_bytes(r.bytes), f"{r.intensity:.2f}",
                   self.balance.bound(r) if self.balance else "—"]
            if timed:
                best = self._roofline(*same)
                row += [fmt_time(sum(x.seconds or 0.0 for x in same)),
                        "—" if best is None else f"{best:.0%}" if best <= 1 else ">100%"]
            rows.append(row)
        if most is not None and len(alike) > most:
            left = sum(len(same) for same in alike[most:])
            rows.append([f"… {left} more (view.kernels)"] + [""] * (len(header) - 1))
        return header, rows

    def breaks(self) -> list[str]:
        """"tanh at mlp:4 ends a kernel: its result is also read by the backward pass"."""
        said: dict[str, list[Kernel]] = {}
        for r in self.rows:
            if r.breaks:
                said.setdefault(f"{r.ends or r.kind}{' at ' + r.lines[-1] if r.lines else ''}"
                                f" ends a kernel", []).append(r)
        return [f"{head} ({_names(rs)}): {rs[0].breaks}" for head, rs in said.items()]

    def footnotes(self) -> list[str]:
        out = [MEASURES] + self.notes
        if any("branch" in r.loop for r in self.rows):
            out.append("the bytes per call count every branch of a cond as if it ran")
        if any(r.times is None for r in self.rows):
            out.append("a while loop whose trip count XLA does not know counts once")
        if any((self._roofline(r) or 0) > 1 for r in self.rows):
            out.insert(0, "of best: the roofline's least time for the kernel over its "
                       "measured time; >100%: faster than the roofline, its data read from "
                       "cache (the bandwidth is measured on 32 MiB)")
        return out

    def text(self) -> str:
        header, rows = self._table()
        table = [header] + rows
        widths = [max(len(r[i]) for r in table) for i in range(len(header))]
        lines = [f"kernels of {self.func_name}: {self.headline()}"]
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                  for r in table]
        return "\n".join(lines + self.breaks() + [f"note: {n}" for n in self.footnotes()])

    def side_html(self, g: Graph | None = None) -> str:
        header, rows = self._table(most=SHOWN)
        cells = [[H.esc(c) for c in row] for row in rows]
        breaks = "".join(f'<div style="color:{H.INK};font-size:12px;margin-top:4px">'
                         f'{H.esc(b)}</div>' for b in self.breaks()[:8])
        notes = "".join(f'<div style="color:{H.MUTED};font-size:11px;margin-top:4px">'
                        f'{H.esc(n)}</div>' for n in self.footnotes())
        return (f'<div style="font-size:12px"><div style="color:{H.INK};margin-bottom:6px">'
                f'{H.esc(self.headline())}</div>{H.table(cells, header)}{breaks}{notes}'
                '</div>')

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {"text/plain": visible(self.text()),
                "text/html": H.panel(self.side_html(), f"kernels of {H.esc(self.func_name)}")}

    def __repr__(self) -> str:
        return f"<Kernels {self.func_name}: {self.headline()}>"


def _alike(rows: list[Kernel]) -> list[list[Kernel]]:
    """Kernels that are the same work at the same lines (a repeated layer's), together,
    in the order of their first."""
    out: dict[tuple, list[Kernel]] = {}
    for r in rows:
        out.setdefault((r.kind, r.ends, len(r.equations), r.lines, r.flops, r.bytes_read,
                        r.bytes_written, r.loop, r.times, r.breaks), []).append(r)
    return list(out.values())


def _names(rows: list[Kernel]) -> str:
    return f"K{rows[0].order}" + (f" and {len(rows) - 1} alike" if len(rows) > 1 else "")


def _repeats(g: Graph, cluster: int | None) -> int:
    """How many calls a node or group inside folds stands for (`block ×16`: 16)."""
    out = 1
    for c in ancestors(g, cluster):
        out *= g.clusters[c].repeat
    return out


def _count(n: int, moved: float | None, repeats: int) -> str:
    """"32 kernels · 1 MiB"; inside a fold of 16, one call's: "2 kernels · 64 KiB, each of
    ×16" (where the calls share them out evenly)."""
    size = f" · {fmt_bytes(moved / (repeats if n % repeats == 0 else 1))}" \
        if moved is not None else ""
    if repeats > 1 and n % repeats == 0:
        return f"{n // repeats} kernel{'s' if n != repeats else ''}{size}, each of ×{repeats}"
    return f"{n} kernel{'s' if n != 1 else ''}{size}" + \
        (f" in ×{repeats}" if repeats > 1 else "")


def colour(k: int) -> str:
    """A kernel's fill: neighbours in the schedule differ, dark ink reads on each."""
    return H.DEVICE_COLOURS[k % len(H.DEVICE_COLOURS)]
