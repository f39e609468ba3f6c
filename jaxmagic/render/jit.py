"""`JitComparison`: what `%jit_compare` measured, as a table, a bar chart and plain text.

The class is the measurement itself (core.timing.JitMeasurement: plain data, stable field
names) plus its views: `text()` for terminals, `html()` a compact table with a small bar
chart (an SVG in an `<img>`, log time axis, no JavaScript), `_repr_mimebundle_` for both.
"""
from __future__ import annotations

import math

from ..core.timing import JitMeasurement
from .html import BORDER, ERROR, INK, MONO, MUTED, PANEL, WARNING, esc, panel, svg_img

OK_GREEN = "#047857"
EAGER_COLOUR = "#f59e0b"
COMPILE_COLOUR = "#8b5cf6"
JIT_COLOUR = "#2563eb"


# ---- numbers ---------------------------------------------------------------------------


def fmt_time(s: float | None) -> str:
    """Seconds as %timeit shows them: 3 significant digits, ns / µs / ms / s."""
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "—"
    if s == 0:
        return "0 s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(s) >= scale or unit == "ns":
            v = s / scale
            return f"{v:.3g} {unit}" if v < 1000 else f"{v:.0f} {unit}"
    return f"{s:.3g} s"


def fmt_si(x: float | None, unit: str = "") -> str:
    if x is None:
        return "—"
    x = float(x)
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}".rstrip()


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "—"
    n = float(n)
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def fmt_diff(x: float | None) -> str:
    if x is None:
        return "—"
    if math.isinf(x):
        return "∞"
    return "0" if x == 0 else f"{x:.2g}"


def _loops(runs: int, loops: int) -> str:
    return f"{runs} run{'s' if runs != 1 else ''} × {loops:,} loop{'s' if loops != 1 else ''}"


# ---- the view ----------------------------------------------------------------------------


class JitComparison(JitMeasurement):
    """Eager vs `jax.jit` for one call; see core.timing for how each field is measured.

    Stable fields (seconds per call where a time): eager_s, trace_s, lower_s, compile_s,
    jit_s (steady median), jit_spread_s, speedup, max_abs_diff, max_rel_diff,
    results_match, traces; and more (donated, flops, argument_bytes, ...).
    """

    def __repr__(self) -> str:
        parts = [f"eager {fmt_time(self.eager_s)}" if self.eager_s is not None else None,
                 f"jit {fmt_time(self.jit_s)}" if self.jit_s is not None else None,
                 f"{self.speedup:.3g}x" if self.speedup else None,
                 {True: "results match", False: "results differ", None: None}[
                     self.results_match],
                 f"{self.traces} traces" if self.traces > 1 else None,
                 f"interrupted in {self.interrupted}" if self.interrupted else None]
        return f"<JitComparison {self.name}: {', '.join(p for p in parts if p)}>"

    # ---- rows shared by text and HTML ------------------------------------------------

    def _speedup_line(self) -> str:
        if not self.speedup:
            return "—"
        x = self.speedup if self.speedup >= 1 else 1 / self.speedup
        x = f"{x:.2f}" if x < 10 else f"{x:.3g}" if x < 1000 else f"{x:,.0f}"
        line = f"{x}× {'faster' if self.speedup >= 1 else 'slower'}"
        be = self.break_even_calls
        if be is not None:
            line += (f"; compiling ({fmt_time(self.compile_total_s)}) pays for itself after "
                     f"{math.ceil(be):,} call{'s' if math.ceil(be) != 1 else ''}")
        return line

    def _results_line(self) -> str:
        if self.results_match is None:
            return "not compared (--no-eager)" if self.eager_first_s is None else "—"
        tol = ", ".join(sorted({f"{d.dtype} rtol {d.rtol:.0e}" for d in self.leaves
                                if d.rtol}))
        what = "match" if self.results_match else "DIFFER"
        n = len(self.leaves)
        return (f"{what}: max abs diff {fmt_diff(self.max_abs_diff)}, max rel diff "
                f"{fmt_diff(self.max_rel_diff)} over {n} lea{'ves' if n != 1 else 'f'}"
                + (f" ({tol})" if tol else ""))

    def _first_line(self) -> str:
        parts = [("trace", self.trace_s), ("lower", self.lower_s),
                 ("compile", self.compile_s), ("first call", self.first_call_s)]
        return " · ".join(f"{k} {fmt_time(v)}" for k, v in parts if v is not None) or "—"

    def _cost_line(self) -> str:
        parts = []
        if self.flops is not None:
            parts.append(f"{fmt_si(self.flops)} flops")
        if self.transcendentals:
            parts.append(f"{fmt_si(self.transcendentals)} transcendentals")
        if self.bytes_accessed is not None:
            parts.append(f"{fmt_bytes(self.bytes_accessed)} accessed")
        return " · ".join(parts)

    def _memory_line(self) -> str:
        parts = [(k, v) for k, v in (("arguments", self.argument_bytes),
                                     ("outputs", self.output_bytes),
                                     ("temporaries", self.temp_bytes),
                                     ("aliased", self.alias_bytes or None),
                                     ("code", self.code_bytes)) if v is not None]
        return " · ".join(f"{k} {fmt_bytes(v)}" for k, v in parts)

    def _donation_line(self) -> str:
        if not self.donated:
            return ""
        items = [f"{d['name']} ({d['shape']}) "
                 + ("used in place" if d["usable"] else "NOT usable: XLA found no output "
                    "of the same shape and dtype to write into")
                 for d in self.donated]
        return "; ".join(items)

    def _traces_line(self) -> str:
        if self.traces <= 1:
            return f"{self.traces} (no retrace)" if self.traces == 1 else "0"
        return f"{self.traces}: the function was traced again {self.traces - 1} time" \
            f"{'s' if self.traces > 2 else ''} during the measurement"

    def _rows(self) -> list[tuple[str, str, str]]:
        """(label, value, tone) — tone in '', 'ok', 'bad', 'warn', 'muted'."""
        rows = []
        if self.eager_s is not None or self.eager_first_s is not None:
            val = (f"{fmt_time(self.eager_s)} ± {fmt_time(self.eager_spread_s)} per call "
                   f"({_loops(self.eager_repeats, self.eager_loops)})"
                   if self.eager_s is not None else
                   f"first call {fmt_time(self.eager_first_s)} (steady not measured)")
            rows.append(("eager, op by op", val, ""))
        else:
            rows.append(("eager", "skipped (--no-eager)", "muted"))
        rows.append(("jit, first call", self._first_line(), ""))
        if self.jit_s is not None:
            rows.append(("jit, steady",
                         f"{fmt_time(self.jit_s)} ± {fmt_time(self.jit_spread_s)} per call "
                         f"({_loops(self.jit_repeats, self.jit_loops)})", ""))
        if self.speedup:
            rows.append(("speedup", self._speedup_line(), "ok" if self.speedup >= 1 else "warn"))
        if self.results_match is not None or self.eager_first_s is not None:
            rows.append(("results", self._results_line(),
                         {True: "ok", False: "bad", None: "muted"}[self.results_match]))
        rows.append(("traces", self._traces_line(), "warn" if self.traces > 1 else ""))
        if self.eager_retraces:
            rows.append(("eager retraces", f"{self.eager_retraces} jit cache misses during "
                         "the steady eager calls (a jax.jit created inside the function, or "
                         "a jitted helper called with changing static arguments)", "warn"))
        if line := self._donation_line():
            rows.append(("donated", line,
                         "warn" if any(not d["usable"] for d in self.donated) else ""))
        if line := self._cost_line():
            rows.append(("cost", line, ""))
        if line := self._memory_line():
            rows.append(("memory", line, ""))
        return rows

    def _notes(self) -> list[tuple[str, str]]:
        """(kind, text) notes below the table."""
        out = []
        if self.interrupted:
            out.append(("warn", f"interrupted (Ctrl-C) during {self.interrupted}: the "
                        "figures above are what was measured until then"))
        bad = [d for d in self.leaves if not d.ok]
        for d in bad[:6]:
            detail = d.problem or (f"max abs diff {fmt_diff(d.max_abs)}, max rel diff "
                                   f"{fmt_diff(d.max_rel)} > rtol {d.rtol:.0e}"
                                   if d.rtol else f"values differ (max abs diff "
                                   f"{fmt_diff(d.max_abs)}; {d.dtype} must be equal)")
            out.append(("bad", f"leaf {d.path} ({d.dtype}{list(d.shape)}): {detail}"))
        if len(bad) > 6:
            out.append(("bad", f"... and {len(bad) - 6} more differing leaves"))
        for h in self.hints:
            out.append(("hint", f"likely cause: {h}"))
        for s in self.static_notes:
            out.append(("warn", s))
        reasons: dict[str, int] = {}
        for r in self.retrace_reasons:           # identical explanations, counted once
            reasons[r] = reasons.get(r, 0) + 1
        for r, count in list(reasons.items())[:3]:
            out.append(("retrace", r if count == 1 else f"{r}\n(× {count} cache misses like this)"))
        if len(reasons) > 3:
            out.append(("retrace", f"... {len(reasons) - 3} more different cache misses"))
        for r in self.eager_retrace_reasons[:1]:
            out.append(("retrace", r))
        if self.unwrapped_jit:
            out.append(("muted", "the target is already jitted: eager runs its Python "
                        "function; jit re-wraps it with the same static and donated "
                        "arguments"))
        for n in self.notes:
            out.append(("muted", n))
        if self.total_s is not None:
            out.append(("muted", f"measured in {self.total_s:.2f} s on {self.backend}; "
                        "times block on every output leaf"))
        return out

    # ---- text --------------------------------------------------------------------------

    def text(self) -> str:
        lines = [f"jit_compare {self.name}"]
        width = max(len(label) for label, _, _ in self._rows())
        for label, value, _ in self._rows():
            lines.append(f"  {label:<{width}}  {value}")
        for kind, note in self._notes():
            prefix = {"bad": "  ✗ ", "warn": "  ! ", "hint": "  → ", "retrace": "  ↻ "}.get(
                kind, "  ")
            body = note.splitlines()
            lines.append(prefix + body[0])
            lines.extend("      " + ln.strip() for ln in body[1:])
        return "\n".join(lines)

    # ---- HTML --------------------------------------------------------------------------

    def chart_svg(self) -> str | None:
        """A small horizontal bar chart of eager, compile and steady jit time (log axis)."""
        bars = []
        if self.eager_s is not None:
            bars.append(("eager, per call", self.eager_s, EAGER_COLOUR))
        if self.compile_total_s is not None:
            bars.append(("trace+lower+compile", self.compile_total_s, COMPILE_COLOUR))
        if self.jit_s is not None:
            bars.append(("jit, per call", self.jit_s, JIT_COLOUR))
        bars = [b for b in bars if b[1] and b[1] > 0]
        if not bars:
            return None
        lo = 10 ** math.floor(math.log10(min(v for _, v, _ in bars)))
        hi = 10 ** math.ceil(math.log10(max(v for _, v, _ in bars) * 1.0001))
        if hi <= lo:
            hi = lo * 10
        label_w, bar_w, value_w, row_h, top = 150, 300, 70, 22, 6
        width = label_w + bar_w + value_w
        axis_y = top + row_h * len(bars) + 2
        height = axis_y + 30

        def x(v: float) -> float:
            return label_w + bar_w * (math.log10(v) - math.log10(lo)) / \
                (math.log10(hi) - math.log10(lo))

        font = "font-family:DejaVu Sans,Helvetica,Arial,sans-serif"
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
               f'viewBox="0 0 {width} {height}" style="{font}">',
               f'<rect width="{width}" height="{height}" fill="#ffffff"/>']
        decade = lo
        while decade <= hi * 1.0001:
            gx = x(decade)
            out.append(f'<line x1="{gx:.1f}" y1="{top}" x2="{gx:.1f}" y2="{axis_y}" '
                       f'stroke="#e4e7eb" stroke-width="1"/>')
            out.append(f'<text x="{gx:.1f}" y="{axis_y + 13}" font-size="10" '
                       f'text-anchor="middle" fill="{MUTED}">{esc(fmt_time(decade))}</text>')
            decade *= 10
        out.append(f'<line x1="{label_w}" y1="{axis_y}" x2="{label_w + bar_w}" y2="{axis_y}" '
                   f'stroke="{BORDER}" stroke-width="1"/>')
        out.append(f'<text x="{label_w + bar_w / 2:.0f}" y="{axis_y + 26}" font-size="10" '
                   f'text-anchor="middle" fill="{MUTED}">time (log scale)</text>')
        for i, (label, v, colour) in enumerate(bars):
            y = top + i * row_h
            w = max(2.0, x(v) - label_w)
            out.append(f'<text x="{label_w - 6}" y="{y + 15}" font-size="12" '
                       f'text-anchor="end" fill="{INK}">{esc(label)}</text>')
            out.append(f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" '
                       f'rx="2" fill="{colour}"/>')
            out.append(f'<text x="{label_w + w + 4:.1f}" y="{y + 15}" font-size="12" '
                       f'fill="{INK}">{esc(fmt_time(v))}</text>')
        out.append("</svg>")
        return "".join(out)

    def html(self) -> str:
        tone = {"ok": OK_GREEN, "bad": ERROR, "warn": WARNING, "muted": MUTED, "": INK}
        # every cell carries the panel colour: notebook themes stripe table rows with
        # their own (dark) background, which would hide dark ink
        cell = (f"padding:2px 12px 2px 0;text-align:left;vertical-align:top;border:none;"
                f"background:{PANEL}")
        rows = "".join(
            f'<tr style="background:{PANEL}">'
            f'<td style="{cell};color:{MUTED};white-space:nowrap">{esc(label)}</td>'
            f'<td style="{cell};color:{tone[t]}">{esc(value)}</td></tr>'
            for label, value, t in self._rows())
        table = (f'<table style="border-collapse:collapse;margin:0;border:none;color:{INK};'
                 f'background:{PANEL}">{rows}</table>')
        notes = []
        for kind, note in self._notes():
            colour = {"bad": ERROR, "warn": WARNING, "hint": INK, "retrace": WARNING}.get(
                kind, MUTED)
            if kind == "retrace":
                body = (f'<pre style="{MONO};font-size:11px;margin:2px 0;white-space:pre-wrap;'
                        f'color:{INK};background:#fffbeb;border-left:3px solid {WARNING};'
                        f'padding:3px 6px">{esc(note)}</pre>')
            else:
                mark = {"bad": "✗ ", "warn": "! ", "hint": "→ "}.get(kind, "")
                body = f'<div style="color:{colour};margin:2px 0">{esc(mark + note)}</div>'
            notes.append(body)
        chart = self.chart_svg()
        chart_html = (f'<div style="margin-top:6px">{svg_img(chart, "bar chart: eager, compile and steady jit time", width=520)}</div>'
                      if chart else "")
        title = (f'jit_compare <code style="{MONO};font-size:12px;color:{INK};'
                 f'background:#e4e7eb;padding:1px 4px;border-radius:3px">{esc(self.name)}</code>')
        body = table + chart_html + (f'<div style="margin-top:6px;font-size:12px">'
                                     f'{"".join(notes)}</div>' if notes else "")
        return panel(body, title=title)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": self.text(), "text/html": self.html()}

    def _repr_pretty_(self, p, cycle):
        p.text(self.text())


__all__ = ["JitComparison", "fmt_time", "fmt_bytes", "fmt_si"]
