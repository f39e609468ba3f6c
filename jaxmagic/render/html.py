"""Static HTML that survives every notebook front end.

Untrusted JupyterLab strips `<svg>`, `<style>` and CSS variables but keeps inline
`style="…"` with literal colours and `<img src="data:…">`; so every block here carries its
own light background and dark text (readable on light and dark themes), and pictures
travel as data URIs.
"""
from __future__ import annotations

import base64
import html

# Literal colours: a light panel with dark ink reads the same on light and dark themes.
INK = "#1f2933"
MUTED = "#52606d"
PANEL = "#f7f9fb"
BORDER = "#cbd2d9"
ACCENT = "#1d4ed8"
ERROR = "#b91c1c"
WARNING = "#92400e"
INFO = "#1e40af"
FONT = "font-family:-apple-system,BlinkMacSystemFont,'Segoe UI',Helvetica,Arial,sans-serif"
MONO = "font-family:SFMono-Regular,Menlo,Consolas,'DejaVu Sans Mono',monospace"

# Distinct, colour-blind-friendlier tile colours, dark ink readable on each.
DEVICE_COLOURS = (
    "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69",
    "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f",
)


def esc(text: object) -> str:
    """Escape for HTML text and attribute values (quotes included)."""
    return html.escape(str(text), quote=True)


def panel(body: str, title: str = "", note: str = "") -> str:
    """A self-coloured block: the common frame of every jaxmagic view."""
    head = (f'<div style="font-weight:600;margin-bottom:6px;color:{INK}">{title}</div>'
            if title else "")
    foot = (f'<div style="margin-top:6px;color:{MUTED};font-size:12px">{note}</div>'
            if note else "")
    return (f'<div style="{FONT};font-size:13px;color:{INK};background:{PANEL};'
            f'border:1px solid {BORDER};border-radius:6px;padding:8px 10px;'
            f'max-width:100%;box-sizing:border-box;overflow-x:auto">{head}{body}{foot}</div>')


def table(rows: list[list[str]], header: list[str] | None = None) -> str:
    """Rows of already-escaped cells.

    Each row carries the panel colour: notebook themes stripe table rows (dark stripes on a
    dark theme), which would put INK on a dark row. It carries the ink too, for its cells
    to inherit: the themes set a cell's alignment and padding, not its colour.
    """
    cell = "padding:2px 10px 2px 0;text-align:left;vertical-align:top"
    tr = f'<tr style="background:{PANEL};color:{INK}">'
    out = ['<table style="border-collapse:collapse;margin:0">']
    if header:
        out.append(tr + "".join(
            f'<th style="{cell};border-bottom:1px solid {BORDER};font-weight:600">{h}</th>'
            for h in header) + "</tr>")
    for row in rows:
        out.append(tr + "".join(f'<td style="{cell}">{c}</td>' for c in row) + "</tr>")
    out.append("</table>")
    return "".join(out)


def code(text: object) -> str:
    # Its own background: notebook themes give <code> one (dark on a dark theme).
    return (f'<code style="{MONO};font-size:12px;color:{INK};background:#e9eef3;'
            f'padding:0 3px;border-radius:3px">{esc(text)}</code>')


def svg_img(svg: bytes | str, alt: str, width: float | None = None) -> str:
    """An SVG as an `<img>` data URI: no script can run in it, and untrusted views keep it.

    It scales down to the cell width, never up past its natural width, and sits on white
    so Graphviz's black strokes stay visible on a dark theme.
    """
    data = svg.encode() if isinstance(svg, str) else svg
    uri = "data:image/svg+xml;base64," + base64.b64encode(data).decode("ascii")
    w = f"width:{width:.0f}px;" if width else ""
    return (f'<img src="{uri}" alt="{esc(alt)}" style="{w}max-width:100%;height:auto;'
            f'background:#ffffff;border-radius:4px;padding:4px;box-sizing:border-box">')

