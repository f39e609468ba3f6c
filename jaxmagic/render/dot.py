"""Graph model → Graphviz DOT, with layout settings that bound dot's super-linear work.

Labels are plain quoted strings (the WebAssembly Graphviz has no HTML-like labels): names
from user code can hold any character, so backslashes and quotes are escaped, which also
defeats Graphviz's `\\N`-style escapes, and control characters are dropped.
"""
from __future__ import annotations

import re
from typing import Mapping

from ..core.graph import Graph, Node

FONT = "DejaVu Sans,Helvetica,Arial,sans-serif"
# fill, border per node kind; light fills with dark ink read on any page theme
STYLE = {
    "input": ("#dcfce7", "#15803d"),
    "output": ("#fef9c3", "#a16207"),
    "const": ("#f3f4f6", "#6b7280"),
    "op": ("#ffffff", "#475569"),
    "call": ("#dbeafe", "#1d4ed8"),
    "group": ("#ede9fe", "#6d28d9"),
    "port": ("#f1f5f9", "#94a3b8"),
}
COLLECTIVE = ("#fed7aa", "#c2410c")
BACKWARD_OP = ("#fdf2f8", "#9d174d")
CLUSTER = {"jit": "#eff6ff", "scan": "#f0fdf4", "cond": "#fefce8", "branch": "#fffbeb",
           "while": "#fdf4ff", "while_cond": "#faf5ff", "while_body": "#faf5ff",
           "shard_map": "#fff7ed", "scope": "#f8fafc"}
EMPHASIS = "#b91c1c"     # the costliest nodes of a --profile / --cost overlay
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def attr_text(text: object, limit: int = 200) -> str:
    """Escape for a quoted DOT string: backslashes and quotes; one line; bounded.

    `&` too: Graphviz decodes entities in labels and passes them into its SVG as they
    are, so a name holding `&lt;b&gt;` would otherwise be shown as `<b>`.
    """
    s = _CONTROL.sub("", str(text)).replace("\n", " ")
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return s.replace("&", "&amp;").replace("\\", "\\\\").replace('"', '\\"')


def _label(title: str, detail, where: str, extra: str = "") -> str:
    rows = [attr_text(title, 60)] + [attr_text(d, 60) for d in detail]
    if where:
        rows.append(attr_text(where, 60))
    if extra:
        rows.append(attr_text(extra, 60))
    return '"' + "\\n".join(rows) + '"'


def _node_style(n: Node) -> tuple[str, str, str]:
    if n.collective:
        return (*COLLECTIVE, "2.2")
    if n.kind == "op" and n.backward:
        return (*BACKWARD_OP, "1")
    fill, border = STYLE.get(n.kind, STYLE["op"])
    return fill, border, "1.4" if n.kind in ("call", "group") else "1"


def to_dot(g: Graph, rankdir: str = "TB", title: str = "",
           overlay: Mapping[int, tuple[str, str, bool]] | None = None,
           cluster_overlay: Mapping[int, tuple[str, str, bool]] | None = None) -> str:
    """DOT source for `g`; big graphs get straight edges and tighter layout limits.

    Boxes are square because `dot`'s fast PNG renderer (gd) cannot draw round ones.
    `overlay` and `cluster_overlay` map a node or cluster id to (fill, an extra label
    line, emphasised): the costs drawn by `%jaxpr --profile` and `--cost`.
    """
    overlay, cluster_overlay = overlay or {}, cluster_overlay or {}
    big = len(g.nodes) > 150
    lines = [
        "digraph jaxpr {",
        f'  graph [rankdir={rankdir}, bgcolor="white", fontname="{FONT}", fontsize=11, '
        f'nodesep=0.25, ranksep=0.35, newrank=true, nslimit={1 if big else 2}, '
        f'nslimit1={1 if big else 2}, mclimit={0.1 if big else 0.5}, searchsize=30, '
        f'pad=0.15, forcelabels=true, label="{attr_text(title)}", labelloc=t'
        + (", splines=line" if big else "") + "];",
        f'  node [shape=box, style="filled", fontname="{FONT}", fontsize=10, '
        'height=0.3, margin="0.12,0.05", fontcolor="#0f172a"];',
        f'  edge [fontname="{FONT}", fontsize=8, fontcolor="#475569", color="#64748b", '
        'arrowsize=0.6];',
    ]
    children: dict = {}
    for c in g.clusters.values():
        children.setdefault(c.parent, []).append(c.id)
    members: dict = {}
    for n in g.nodes.values():
        members.setdefault(n.cluster if n.cluster in g.clusters else None, []).append(n)

    def emit(cluster, indent: str) -> None:
        if cluster is not None:
            c = g.clusters[cluster]
            lines.append(f"{indent}subgraph cluster_{cluster} {{")
            extra = cluster_overlay.get(cluster, ("", "", False))[1]
            lines.append(f'{indent}  label={_label(c.title, c.detail, c.where, extra)}; '
                         f'style="filled"; '
                         f'fillcolor="{CLUSTER.get(c.kind, "#f8fafc")}"; color="#94a3b8"; '
                         f'fontcolor="#0f172a"; tooltip="{attr_text(c.source or c.title)}";')
        for n in members.get(cluster, []):
            fill, border, width = _node_style(n)
            extra = ""
            if n.id in overlay:
                fill, extra, emphasised = overlay[n.id]
                if emphasised:
                    border, width = EMPHASIS, "3"
            tip = n.source or n.title
            label = _label(n.title, n.detail, n.where, extra)
            lines.append(f'{indent}  n{n.id} [label={label}, fillcolor="{fill}", '
                         f'color="{border}", penwidth={width}, tooltip="{attr_text(tip)}"'
                         + (", shape=box3d" if n.kind == "call" else "")
                         + (", shape=ellipse" if n.kind in ("input", "output") else "") + "];")
        for child in children.get(cluster, []):
            emit(child, indent + "  ")
        if cluster is not None:
            lines.append(f"{indent}}}")

    emit(None, "")
    for e in g.edges:   # xlabels are placed after layout: a third of the time of labels
        lab = f' [xlabel="{attr_text(e.label, 40)}"]' if e.label else ""
        lines.append(f"  n{e.src} -> n{e.dst}{lab};")
    lines.append("}")
    return "\n".join(lines) + "\n"
