"""`JitComparison`: what `%jit_compare` measured, as a table, a bar chart and plain text.

The class is the measurement itself (core.jit_measurement.JitMeasurement: plain data,
stable field names) plus its views: `text()` for terminals, `html()` a compact table with
a small bar chart (inline-styled HTML boxes on a log time axis: no JavaScript, no
picture), `_repr_mimebundle_` for both.
"""
from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter

from ..core.jit_measurement import JitMeasurement
from .html import ERROR, INK, MONO, MUTED, PANEL, WARNING, esc, panel
from .text import visible
from .units import fmt_bytes, fmt_diff, fmt_si, fmt_time

OK_GREEN = "#047857"
EAGER_COLOUR = "#f59e0b"
COMPILE_COLOUR = "#8b5cf6"
JIT_COLOUR = "#2563eb"


def _donated(d: dict, warning: str) -> str:
    """What jit did with one donated argument: its buffers used in place, or which not."""
    if d["usable"]:
        return "used in place"
    if d["usable"] is None:
        return "not matched to JAX's warning: " + " ".join(warning.split())[:300]
    why = "XLA found no output of the same shape and dtype left to write into"
    if len(d["unusable"]) == d.get("leaves", 1):
        return "NOT usable: " + why
    kinds = Counter(d["unusable"])
    named = ", ".join(f"{t} ×{n}" if n > 1 else t for t, n in kinds.items())
    return f"{len(d['unusable'])} of {d['leaves']} NOT usable ({named}): {why}; the rest " \
        "used in place"


def _loops(runs: int, loops: int) -> str:
    return f"{runs} run{'s' if runs != 1 else ''} × {loops:,} loop{'s' if loops != 1 else ''}"


# ---- the view ----------------------------------------------------------------------------


class JitComparison(JitMeasurement):
    """Eager vs `jax.jit` for one call; see core.timing for how each field is measured.

    Stable fields (seconds per call where a time): eager_s, trace_s, lower_s, compile_s,
    jit_s (steady median), jit_spread_s, speedup, max_abs_diff, max_rel_diff,
    results_match, traces; and more (donated, flops, argument_bytes, ...). `verdict`: why
    nothing was timed (jit cannot compile the call, or it runs no JAX operation), else "".
    `costliest`: when jit is slower than eager, the three costliest groups of the call by
    estimated flops, (name, share).
    """

    @classmethod
    def of(cls, m: JitMeasurement) -> "JitComparison":
        """The view of a measurement core made."""
        return cls(**{f.name: getattr(m, f.name) for f in dataclasses.fields(m)})

    costliest: list = []

    def __repr__(self) -> str:
        if self.verdict:
            return f"<JitComparison {self.name}: {self.verdict}>"
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
        arrays = [d for d in self.leaves if not d.static]
        static = [d.problem for d in self.leaves if d.static and not d.ok]
        if not arrays and not static:
            return "nothing to compare: the call returns no array"
        if static and static[0].startswith("structure"):
            return f"DIFFER: {static[0]}; no array compared"
        tol = ", ".join(sorted({f"{d.dtype} rtol {d.rtol:.0e}" for d in arrays if d.rtol}))
        n = len(arrays) - len(self.rounding_leaves)
        line = (f"max abs diff {fmt_diff(self.max_abs_diff)}, max rel diff "
                f"{fmt_diff(self.max_rel_diff)} over {n} lea{'ves' if n != 1 else 'f'}"
                + (f" ({tol})" if tol else ""))
        if static:
            more = f" and {len(static) - 1} more" if len(static) > 1 else ""
            what = "match" if all(d.ok for d in arrays) else "DIFFER"
            line = f"DIFFER: {static[0]}{more}; arrays {what}: {line}"
        else:
            line = f"{'match' if self.results_match else 'DIFFER'}: {line}"
        if r := len(self.rounding_leaves):
            line += f"; {r} more lea{'ves' if r != 1 else 'f'} decided by float rounding"
        return line

    @property
    def rounding_leaves(self) -> list:
        return [d for d in self.leaves if d.rounding]

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
        return "; ".join(f"{d['name']} ({d['shape']}) {_donated(d, self.donation_warning)}"
                         for d in self.donated)

    def _traces_line(self) -> str:
        if self.traces <= 1:
            return f"{self.traces} (no retrace)" if self.traces == 1 else "0"
        return f"{self.traces}: the function was traced again {self.traces - 1} time" \
            f"{'s' if self.traces > 2 else ''} during the measurement"

    def _rows(self) -> list[tuple[str, str, str]]:
        """(label, value, tone) — tone in '', 'ok', 'bad', 'warn', 'muted'."""
        if self.verdict:           # nothing was timed: why, in place of every figure
            return [("jit", self.verdict, "bad" if self.verdict.startswith("jax.jit cannot")
                     else "warn")]
        rows = []
        if self.eager_s is not None or self.eager_first_s is not None:
            val = (f"{fmt_time(self.eager_s)} ± {fmt_time(self.eager_spread_s)} per call "
                   f"({_loops(self.eager_repeats, self.eager_loops)})"
                   if self.eager_s is not None else
                   f"first call {fmt_time(self.eager_first_s)} (steady not measured)")
            rows.append(("pmap, as given" if self.pmapped else "eager, op by op", val, ""))
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
                         "" if all(d["usable"] for d in self.donated) else "warn"))
        if line := self._cost_line():
            rows.append(("cost", line, ""))
        if line := self._memory_line():
            rows.append(("memory", line, ""))
        return rows

    def _notes(self) -> list[tuple[str, str]]:
        """(kind, text) notes below the table."""
        if self.verdict:     # nothing was timed: only what was held static, and such
            return [("muted", n) for n in self.notes]
        out = []
        if self.interrupted:
            out.append(("warn", f"interrupted (Ctrl-C) during {self.interrupted}: the "
                        "figures above are what was measured until then"))
        bad = [d for d in self.leaves if not d.ok]
        for d in bad[:6]:
            if d.static:
                out.append(("bad", d.problem + ("" if d.problem.startswith("structure") else
                            " (no array: jit returns the value its trace computed)")))
                continue
            detail = d.problem or (f"max abs diff {fmt_diff(d.max_abs)}, max rel diff "
                                   f"{fmt_diff(d.max_rel)} > rtol {d.rtol:.0e}"
                                   if d.rtol else f"values differ (max abs diff "
                                   f"{fmt_diff(d.max_abs)}; {d.dtype} must be equal)")
            out.append(("bad", f"leaf {d.path} ({d.dtype}{list(d.shape)}): {detail}"))
        if len(bad) > 6:
            out.append(("bad", f"... and {len(bad) - 6} more differing leaves"))
        if noise := self.rounding_leaves:
            names = ", ".join(d.path for d in noise[:4]) + (
                f" and {len(noise) - 4} more" if len(noise) > 4 else "")
            out.append(("hint", f"rounding decides {names}: the jitted call moves them as far "
                        "when its inputs move by one ulp, as a parameter whose gradient is "
                        "mathematically zero moves by its rounding noise (scaled to a full "
                        "step by Adam); eager and jit cannot agree on them, so they are not "
                        "counted as differences"))
        for d in [d for d in self.leaves if d.skipped][:3]:
            out.append(("hint", f"leaf {d.path} ({d.dtype}) not compared: {d.skipped}"))
        for h in self.hints:
            out.append(("hint", f"likely cause: {h}"))
        if self.speedup is not None and self.speedup < 1 and self.traces > 1:
            out.append(("hint", "jit is slower than eager because the measured calls traced "
                        "and compiled again: each retrace costs a first call"))
        if self.costliest:
            groups = ", ".join(f"{visible(name)} ({100 * share:.0f}%)"
                               for name, share in self.costliest)
            out.append(("hint", f"jit is slower than eager; the costliest groups by estimated "
                        f"flops: {groups}. %jaxpr --profile draws the measured time on the "
                        "graph"))
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
        if self.pmapped:
            out.append(("muted", "the target is a jax.pmap, compiled on its first call: "
                        "the first row runs that compiled pmap, not op by op, and jit "
                        "wraps it in jax.jit; the speedup compares two compiled programs"))
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

    def _bars(self) -> list[tuple[str, float, str]]:
        if self.verdict:          # a program that is not the call's: no figure of it
            return []
        bars = []
        if self.eager_s is not None:
            bars.append(("eager, per call", self.eager_s, EAGER_COLOUR))
        if self.compile_total_s is not None:
            bars.append(("trace + lower + compile", self.compile_total_s, COMPILE_COLOUR))
        if self.jit_s is not None:
            bars.append(("jit, per call", self.jit_s, JIT_COLOUR))
        return [b for b in bars if b[1] and b[1] > 0]

    def chart_html(self) -> str:
        """Eager, compile and steady jit time as bars on a log axis, in plain HTML/CSS.

        No picture: inline-styled boxes survive untrusted notebooks and need no PNG twin;
        decade gridlines and labels make the log scale explicit.
        """
        bars = self._bars()
        if not bars:
            return ""
        lo_exp = math.floor(math.log10(min(v for _, v, _ in bars)) + 1e-9)
        hi_exp = math.ceil(math.log10(max(v for _, v, _ in bars)) - 1e-9)
        decades = max(1, hi_exp - lo_exp)
        track = 300      # px

        def frac(v: float) -> float:
            return min(1.0, max(0.0, (math.log10(v) - lo_exp) / decades))

        grid = "".join(
            f'<div style="position:absolute;top:0;bottom:0;left:{100 * k / decades:.2f}%;'
            f'border-left:1px solid #d9dee3"></div>' for k in range(decades + 1))
        cell = f"padding:1px 6px;border:none;background:{PANEL};vertical-align:middle"
        rows = []
        for label, v, colour in bars:
            width = max(0.6, 100 * frac(v))
            rows.append(
                f'<tr style="background:{PANEL}">'
                f'<td style="{cell};text-align:right;color:{INK};white-space:nowrap">'
                f'{esc(label)}</td>'
                f'<td style="{cell};width:{track}px;min-width:{track}px">'
                f'<div style="position:relative;height:16px;width:{track}px">{grid}'
                f'<div style="position:absolute;left:0;top:2px;height:12px;width:{width:.2f}%;'
                f'background:{colour};border-radius:2px"></div></div></td>'
                f'<td style="{cell};text-align:left;color:{INK};white-space:nowrap">'
                f'{esc(fmt_time(v))}</td></tr>')
        ticks = "".join(
            f'<div style="position:absolute;top:0;left:{100 * k / decades:.2f}%;'
            f'transform:translateX(-50%);white-space:nowrap">'
            f'{esc(fmt_time(10.0 ** (lo_exp + k)))}</div>' for k in range(decades + 1))
        rows.append(
            f'<tr style="background:{PANEL}"><td style="{cell}"></td>'
            f'<td style="{cell}"><div style="position:relative;height:14px;width:{track}px;'
            f'font-size:10px;color:{MUTED}">{ticks}</div></td>'
            f'<td style="{cell};font-size:10px;color:{MUTED}">log scale</td></tr>')
        return (f'<table style="border-collapse:collapse;margin:6px 0 0 0;border:none;'
                f'background:{PANEL};font-size:12px">{"".join(rows)}</table>')

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
        chart_html = self.chart_html()
        title = (f'jit_compare <code style="{MONO};font-size:12px;color:{INK};'
                 f'background:#e4e7eb;padding:1px 4px;border-radius:3px">{esc(self.name)}</code>')
        body = table + chart_html + (f'<div style="margin-top:6px;font-size:12px">'
                                     f'{"".join(notes)}</div>' if notes else "")
        return panel(body, title=title)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": self.text(), "text/html": self.html()}

    def _repr_pretty_(self, p, cycle):
        p.text(self.text())


class StaticArgumentCard:
    """Shown when an argument must be static: which one, why, and the fixed command."""

    def __init__(self, problem: str, fix: str, command: str | None = None):
        self.problem, self.fix, self.command = problem, fix, command

    def text(self) -> str:
        lines = [f"jit_compare: {self.problem}", f"  {self.fix}"]
        if self.command:
            lines.append(f"  try: {self.command}")
        return "\n".join(lines)

    def _repr_mimebundle_(self, include=None, exclude=None):
        cmd = ""
        if self.command:
            cmd = (f'<div style="margin-top:4px"><span style="color:{MUTED}">try:</span> '
                   f'<code style="{MONO};font-size:12px;color:{INK};background:#e4e7eb;'
                   f'padding:1px 4px;border-radius:3px">{esc(self.command)}</code></div>')
        body = (f'<div style="color:{INK}">{esc(self.problem)}</div>'
                f'<div style="margin-top:4px"><b style="color:{INK}">Fix:</b> '
                f'<span style="color:{INK}">{esc(self.fix)}</span></div>{cmd}')
        title = f'<span style="color:{ERROR}">jit_compare</span> · this argument must be static'
        return {"text/plain": self.text(), "text/html": panel(body, title=title)}


def static_fix_command(magic: str, line: str, index: int | None, param: str | None) -> str:
    """The magic's line with the argument marked static (merged into an existing option)."""
    line = line.strip()
    opt, val = ("--static-argnums", str(index)) if index is not None else \
        ("--static-argnames", str(param))
    m = re.search(rf"{opt}(?:=|\s+)(\S+)", line)
    if m:
        line = f"{line[:m.start()]}{opt} {m.group(1)},{val}{line[m.end():]}"
    else:
        line = f"{opt} {val} {line}"
    return f"{magic} {line}".strip()


__all__ = ["JitComparison", "StaticArgumentCard", "static_fix_command", "fmt_time",
           "fmt_bytes", "fmt_si"]
