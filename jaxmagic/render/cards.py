"""Cards for jaxcheck findings: static HTML (inline styles, literal colours, no script)
and plain text.

A card shows the rule id, the severity, "line N", the line itself with the offending span
marked, the message and the fix (with the rewritten line when there is one). Runtime
cards add the exception's type and say that JAX's traceback follows.
"""
from __future__ import annotations

import re
from dataclasses import fields

from ..core.checks.model import Finding
from .html import BORDER, FONT, INK, MONO, MUTED, PANEL, esc
from .text import visible

SEVERITY_COLOURS = {   # ink, badge background, left stripe
    "error": ("#991b1b", "#fee2e2", "#dc2626"),
    "warning": ("#854d0e", "#fef3c7", "#d97706"),
    "info": ("#1e40af", "#dbeafe", "#3b82f6"),
}
CARD_BG = "#ffffff"
CODE_BG = PANEL        # the shared light panel (also how tests spot our outputs)
MARK_BG = "#fde68a"
FIX_BG = "#ecfdf5"
FIX_BORDER = "#34d399"
FIX_INK = "#065f46"

_TICKS = re.compile(r"`([^`]+)`")


def _prose(text: str) -> str:
    """Escape, then show `code` spans in monospace."""
    return _TICKS.sub(lambda m: f'<code style="{MONO};font-size:12px;background:{CODE_BG};'
                      f'color:{INK};padding:0 3px;border-radius:3px">{m.group(1)}</code>',
                      esc(text))


def _code_line(f: Finding) -> str:
    """The offending line with its span marked, behind a line-number gutter."""
    line = f.source.rstrip("\n")
    if not line.strip():
        return ""
    indent = len(line) - len(line.lstrip())
    text = line[indent:]
    a = (f.col - 1 - indent) if f.col else None
    b = (f.end_col - indent) if f.end_col else None
    ink = SEVERITY_COLOURS.get(f.severity, SEVERITY_COLOURS["error"])[2]
    if a is not None and b is not None and 0 <= a < b <= len(text):
        body = (esc(text[:a]) + f'<mark style="background:{MARK_BG};color:{INK};'
                f'text-decoration:underline wavy {ink};text-underline-offset:3px;'
                f'padding:0 1px;border-radius:2px">{esc(text[a:b])}</mark>' + esc(text[b:]))
    else:
        body = esc(text)
    gutter = f'<span style="color:{MUTED};user-select:none">{f.line:>3} │ </span>'
    return (f'<pre style="{MONO};font-size:12.5px;line-height:1.5;background:{CODE_BG};'
            f'color:{INK};margin:6px 0;padding:4px 8px;border-radius:4px;white-space:pre;'
            f'overflow-x:auto">{gutter}{body}</pre>')


def card_html(f: Finding) -> str:
    ink, badge_bg, stripe = SEVERITY_COLOURS.get(f.severity, SEVERITY_COLOURS["error"])
    badge = (f'<span style="background:{badge_bg};color:{ink};font-weight:600;'
             f'font-size:11px;text-transform:uppercase;letter-spacing:.03em;padding:1px 6px;'
             f'border-radius:3px">{esc(f.severity)}</span>')
    rule = f'<span style="font-weight:700;color:{INK};{MONO};font-size:12.5px">{esc(f.rule)}</span>'
    where = f'<span style="color:{INK};font-weight:600">{esc(f.location)}</span>'
    title = f'<span style="color:{MUTED}">{esc(f.title)}</span>' if f.title else ""
    raised = (f'<span style="color:{ink};{MONO};font-size:12px">{esc(f.error)}</span>'
              if f.error else "")
    head = " · ".join(p for p in (rule, where, raised, title) if p)
    fix = (f'<div style="margin-top:6px;color:{FIX_INK}"><span style="font-weight:600">'
           f'Fix:</span> <span style="color:{INK}">{_prose(f.fix_prose)}</span></div>')
    rewrite = ""
    if f.rewrite:
        where_fix = (f'<span style="color:{MUTED};user-select:none">'
                     f'{f.fix_line if f.fix_line else f.line:>3} │ </span>')
        rewrite = (f'<pre style="{MONO};font-size:12.5px;line-height:1.5;background:{FIX_BG};'
                   f'color:{FIX_INK};border-left:3px solid {FIX_BORDER};margin:4px 0 0 0;'
                   f'padding:4px 8px;border-radius:4px;white-space:pre;overflow-x:auto">'
                   f'{where_fix}{esc(f.rewrite)}</pre>')
    foot = ""
    if f.origin == "runtime":
        foot = (f'<div style="margin-top:6px;color:{MUTED};font-size:12px">{esc(f.error)} '
                "raised by JAX — its traceback follows below.</div>")
    return (f'<div style="{FONT};font-size:13px;line-height:1.45;color:{INK};'
            f'background:{CARD_BG};border:1px solid {BORDER};border-left:4px solid {stripe};'
            f'border-radius:6px;padding:7px 10px;margin:4px 0;max-width:100%;'
            f'box-sizing:border-box;overflow-x:auto">'
            f'<div>{badge} {head}</div>{_code_line(f)}'
            f'<div style="color:{INK}">{_prose(f.message)}</div>{fix}{rewrite}{foot}</div>')


def card_text(f: Finding) -> str:
    text = f.text()
    if f.origin == "runtime":
        text += f"\n  ({f.error} raised by JAX; its traceback follows)"
    return text


class FindingView(Finding):
    """A Finding that displays itself as a card."""

    @classmethod
    def of(cls, f: Finding) -> "FindingView":
        if isinstance(f, FindingView):
            return f
        return cls(**{fl.name: getattr(f, fl.name) for fl in fields(Finding)})

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": visible(card_text(self)), "text/html": card_html(self)}

    def __repr__(self) -> str:
        return card_text(self)


class Findings(list):
    """The findings of one cell or file: a list of FindingView that displays as cards."""

    def __init__(self, items=(), title: str = ""):
        super().__init__(FindingView.of(f) for f in items)
        self.title = title

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self if f.severity == "error"]

    def text(self) -> str:
        if not self:
            return "jaxcheck: no findings"
        head = f"jaxcheck: {_count(self)}" + (f" in {self.title}" if self.title else "")
        return head + "\n" + "\n\n".join(card_text(f) for f in self)

    def _repr_mimebundle_(self, include=None, exclude=None):
        if not self:
            html = (f'<div style="{FONT};font-size:12px;color:{FIX_INK};background:{FIX_BG};'
                    f'border:1px solid {FIX_BORDER};border-radius:6px;padding:4px 10px;'
                    f'margin:4px 0;display:inline-block">✓ jaxcheck: no findings'
                    f'{" in " + esc(self.title) if self.title else ""}</div>')
            return {"text/plain": visible(self.text()), "text/html": html}
        return {"text/plain": visible(self.text()),
                "text/html": "".join(card_html(f) for f in self)}

    def __repr__(self) -> str:
        return self.text()


def _count(items) -> str:
    n = len(items)
    by = {}
    for f in items:
        by[f.severity] = by.get(f.severity, 0) + 1
    parts = ", ".join(f"{v} {k}{'s' if v > 1 else ''}" for k, v in by.items())
    return f"{n} finding{'s' if n != 1 else ''} ({parts})"


__all__ = ["FindingView", "Findings", "card_html", "card_text", "SEVERITY_COLOURS"]
