"""Graph model → Graphviz DOT, with layout settings that bound dot's super-linear work.

Labels are plain quoted strings (the WebAssembly Graphviz has no HTML-like labels): names
from user code can hold any character, so backslashes and quotes are escaped, which also
defeats Graphviz's `\\N`-style escapes, and control characters are dropped.
"""
from __future__ import annotations

import re
from typing import Mapping

from ..graph.model import Graph, Node

FONT = "DejaVu Sans,Helvetica,Arial,sans-serif"
# font sizes (pt): the smallest decides how far a drawing may shrink to fit the cell
NODE_PT, CLUSTER_PT, EDGE_PT, STUB_PT = 10, 11, 9, 9
SMALLEST_PT = min(NODE_PT, CLUSTER_PT, EDGE_PT, STUB_PT)
# fill, border per node kind; light fills with dark ink read on any page theme
STYLE = {
    "input": ("#dcfce7", "#15803d"),
    "output": ("#fef9c3", "#a16207"),
    "const": ("#f3f4f6", "#6b7280"),
    "op": ("#ffffff", "#475569"),
    "call": ("#dbeafe", "#1d4ed8"),
    "group": ("#ede9fe", "#6d28d9"),
    "port": ("#f1f5f9", "#94a3b8"),
    "stub": ("#f0fdf4", "#15803d"),
}
COLLECTIVE = ("#fed7aa", "#c2410c")
BACKWARD_OP = ("#fdf2f8", "#9d174d")
CLUSTER = {"jit": "#eff6ff", "scan": "#f0fdf4", "cond": "#fefce8", "branch": "#fffbeb",
           "while": "#fdf4ff", "while_cond": "#faf5ff", "while_body": "#faf5ff",
           "shard_map": "#fff7ed", "scope": "#f8fafc"}
EMPHASIS = "#b91c1c"     # the costliest nodes of a --profile / --cost overlay
RESHARD = "#dc2626"      # an edge whose value the partitioner moves on its way
FAINT = "#cbd5e1"        # an edge whose value stays inside one kernel (`--kernels`)
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


def label_rows(title: str, detail, where: str) -> list[str]:
    """The lines of a node's label, unescaped (for size estimates)."""
    rows = [str(title)[:60]] + [str(d)[:60] for d in detail]
    return rows + [where[:60]] if where else rows


def _label(title: str, detail, where: str, extra: str = "") -> str:
    rows = [attr_text(title, 60)] + [attr_text(d, 60) for d in detail]
    if where:
        rows.append(attr_text(where, 60))
    rows += [attr_text(x, 60) for x in extra.split("\n") if x]
    return '"' + "\\n".join(rows) + '"'


def _record(n: Node) -> str:
    """An argument's leaves, one per line, left-aligned under its name."""
    rows = [attr_text(n.title, 60)] + [attr_text(d, 60) for d in n.detail]
    return '"' + rows[0] + "\\n" + "".join(r + "\\l" for r in rows[1:]) + '"'


_CHAR_PT = 0.6        # DejaVu Sans, average advance per point of font size
ENDS_ROW_PT = 560.0   # arguments (results) stand in rows at most this wide


def node_width(n: Node) -> float:
    """A node's drawn width in points, estimated from its label (a stub's ellipse: its
    name's width times √2, as dot draws it)."""
    if n.kind == "stub":
        return max(22.0, len(n.title) * STUB_PT * _CHAR_PT * 1.4 + 4)
    rows = label_rows(n.title, n.detail, n.where)
    return max(54.0, max(len(r) for r in rows) * NODE_PT * _CHAR_PT + 18)


def end_rows(ends: list[Node]) -> list[list[Node]]:
    """Arguments (or results) in rows of bounded width: a train step's five state records
    stand two or three to a row instead of deciding the picture's width."""
    rows: list[list[Node]] = []
    width = ENDS_ROW_PT
    for n in ends:
        w = node_width(n) + 18
        if rows and width + w <= ENDS_ROW_PT:
            rows[-1].append(n)
            width += w
        else:
            rows.append([n])
            width = w
    return rows


def crowded(g: Graph, big: int = 500, many: int | None = 3) -> set[str]:
    """The kinds of ends (`input`, `output`) that `pack` should draw as one box: `many`
    arguments or more, in any drawing (a GAN's discriminator step takes seven: seven
    boxes side by side, each with its edges, in the view by passes too; None where each
    argument's own box and edges say something, as their shardings do); and in a drawing
    with groups (whose boxes an argument's edges run around), records that take more than
    one row (a model, its optimizer, metrics, a batch), or, in a program of `big`
    equations or more (a train step), a record among three arguments or more, or among
    two results or more (fed from opposite ends of the step)."""
    kinds = set()
    if many is not None and len([n for n in g.nodes.values() if n.kind == "input"
                                 and n.cluster not in g.clusters]) >= many:
        kinds.add("input")
    for kind, most in (("input", 2), ("output", 1)) if g.clusters else ():
        ends = [n for n in g.nodes.values() if n.kind == kind and n.cluster not in g.clusters]
        if any(n.primitive == "record" for n in ends) and (
                len(end_rows(ends)) > 1 or len(ends) > most and g.num_equations >= big):
            kinds.add(kind)
    return kinds


_SHAPE = {"call": ", shape=box3d", "input": ", shape=box", "output": ", shape=box",
          "stub": f', shape=ellipse, style="filled,dashed", fontsize={STUB_PT}, height=0.2, '
                  'width=0.3, margin="0.04,0.02"'}     # as narrow as its name


def _node_style(n: Node) -> tuple[str, str, str]:
    if n.collective:
        return (*COLLECTIVE, "2.2")
    if n.kind == "op" and n.backward:
        return (*BACKWARD_OP, "1")
    fill, border = STYLE.get(n.kind, STYLE["op"])
    return fill, border, "1.4" if n.kind in ("call", "group") else "1"


def labelled(g: Graph, e) -> bool:
    """Shapes label edges inside one group; edges between groups run long (a forward
    pass's residuals into its backward pass), and their labels would crowd the sides."""
    return bool(e.label) and g.nodes[e.src].cluster == g.nodes[e.dst].cluster


def to_dot(g: Graph, rankdir: str = "TB", title: str = "",
           overlay: Mapping[int, tuple[str, str, bool]] | None = None,
           cluster_overlay: Mapping[int, tuple[str, str, bool]] | None = None,
           edge_overlay: Mapping[tuple[int, int], tuple[str, bool]] | None = None) -> str:
    """DOT source for `g`; big graphs get straight edges and tighter layout limits.

    Boxes are square because `dot`'s fast PNG renderer (gd) cannot draw round ones.
    `overlay` and `cluster_overlay` map a node or cluster id to (fill, an extra label
    line, emphasised): the costs drawn by `%jaxpr --profile` and `--cost`; `edge_overlay`
    an edge (src, dst) to (a line under its type, alarming): `--values`' summaries.
    """
    overlay, cluster_overlay = overlay or {}, cluster_overlay or {}
    big = len(g.nodes) > 150
    lines = [
        "digraph jaxpr {",
        f'  graph [rankdir={rankdir}, bgcolor="white", fontname="{FONT}", '
        f'nodesep=0.25, ranksep=0.35, newrank=true, nslimit={1 if big else 2}, '
        f'nslimit1={1 if big else 2}, mclimit={0.1 if big else 0.5}, searchsize=30, '
        f'pad=0.15, forcelabels=true, label="{attr_text(title)}", labelloc=t, '
        f'fontsize={CLUSTER_PT}'
        + (", splines=line" if big else "") + "];",
        f'  node [shape=box, style="filled", fontname="{FONT}", fontsize={NODE_PT}, '
        'height=0.3, margin="0.12,0.05", fontcolor="#0f172a"];',
        f'  edge [fontname="{FONT}", fontsize={EDGE_PT}, fontcolor="#475569", color="#64748b", '
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
                given, extra, emphasised = overlay[n.id]
                fill = given or fill
                if emphasised:
                    border, width = EMPHASIS, "3"
            tip = n.source or n.title
            label = _record(n) if n.primitive == "record" else _label(n.title, n.detail,
                                                                         n.where, extra)
            lines.append(f'{indent}  n{n.id} [label={label}, fillcolor="{fill}", '
                         f'color="{border}", penwidth={width}, tooltip="{attr_text(tip)}"'
                         + (", shape=box" if n.primitive == "record" else _SHAPE.get(n.kind, ""))
                         + "];")
        for child in children.get(cluster, []):
            emit(child, indent + "  ")
        if cluster is not None:
            lines.append(f"{indent}}}")

    emit(None, "")
    # arguments in one row above everything (a source inside a group, such as a stub,
    # hangs from them by an invisible edge), results in one row below (the same for a
    # value nothing uses), so they never stand beside a tall group and widen the picture
    in_rows = end_rows([n for n in members.get(None, []) if n.kind == "input"])
    out_rows = end_rows([n for n in members.get(None, []) if n.kind == "output"])
    fed, feeding = {e.dst for e in g.edges}, {e.src for e in g.edges}
    for i in [r[0].id for r in in_rows[-1:]]:
        lines.extend(f"  n{i} -> n{n.id} [style=invis, weight=0];" for n in g.nodes.values()
                     if n.id not in fed and n.cluster in g.clusters)
    for i in [r[0].id for r in out_rows[:1]]:
        lines.extend(f"  n{n.id} -> n{i} [style=invis, weight=0];" for n in g.nodes.values()
                     if n.id not in feeding and n.cluster in g.clusters)
    lines += _stacked(in_rows, "source", first=True) + _stacked(out_rows, "sink", first=False)
    said: set = set()       # the values labelled: each once, on its first edge
    for e in g.edges:
        value = (edge_overlay or {}).get((e.src, e.dst))
        again = value is not None and (e.src, e.value) in said
        if value is not None:
            said.add((e.src, e.value))
        lines.append(f"  n{e.src} -> n{e.dst}"
                     f"{_edge_attrs(g, e, value, again, roomy=bool(edge_overlay))};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _edge_attrs(g: Graph, e, value: tuple | None = None,
                again: bool = False, roomy: bool = False) -> str:
    """A value resharded on its way (`--sharding`) is a red dashed edge that says from
    what to what, between groups too; other edges carry their type inside one group,
    and their value's summary under it (`--values`). A value holding NaN or Inf is a red
    edge that says so, between groups too; a value that never left a kernel (`--kernels`)
    a faint one.
    A value is summarised on its first edge only (`again`: the same node's same output
    on another edge, whose label stood over the first's); with summaries (`roomy`) every
    edge's text is a label dot makes room for: xlabels, placed after the layout (a third
    of the time of labels), stood over nodes, over each other and across a loop's
    border."""
    rows = [attr_text(e.label, 40)] if labelled(g, e) and not again else []
    alarm = value is not None and value[1]
    faint = value is not None and len(value) > 2 and value[2]
    if value is not None and not faint and (rows or alarm) and not again:
        rows.append(attr_text(value[0], 48))
    if e.reshard:
        rows.append(attr_text(e.reshard, 60))
    text = "\\n".join(rows)
    key = "label" if roomy else "xlabel"
    if faint:                  # a value that never left a kernel
        return f' [{key}="{text}", color="{FAINT}"]' if rows else f' [color="{FAINT}"]'
    if e.reshard or alarm:
        return (f' [{key}="{text}", color="{RESHARD}", fontcolor="{RESHARD}", '
                + ("style=dashed, penwidth=1.6, minlen=2]" if e.reshard else "penwidth=1.6]"))
    return f' [{key}="{text}"]' if rows else ""


def _stacked(rows: list[list[Node]], where: str, first: bool) -> list[str]:
    """Rows one under the other: the outermost pinned to the top (bottom) rank, each
    next one hung from it by an invisible edge."""
    out = []
    for k, row in enumerate(rows):
        edge = (k == 0) if first else (k == len(rows) - 1)
        out.append(f"  {{rank={where if edge else 'same'}; "
                   f"{'; '.join(f'n{n.id}' for n in row)};}}")
        if k:
            out.append(f"  n{rows[k - 1][0].id} -> n{row[0].id} [style=invis, weight=0];")
    return out
