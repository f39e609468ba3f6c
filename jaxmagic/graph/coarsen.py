"""Coarser views: equations grouped by source line, by function, or by forward and
backward pass, for a drawing too big to show them one by one (or a group asked to show
its lines).
"""
from __future__ import annotations

from collections import Counter, defaultdict

from .merge import contract
from .model import Graph, Node, equations, short


def drawn_backward(g: Graph, n: Node) -> bool:
    """Whether `n` is drawn in a backward pass: its own, or its group's."""
    return n.backward or (n.cluster in g.clusters and g.clusters[n.cluster].backward)


def _after_backward(g: Graph) -> set[int]:
    """Forward-pass nodes that use a backward pass's results (an optimizer's update in a
    train step): grouped with the forward pass they would close a cycle."""
    succ: dict[int, list[int]] = defaultdict(list)
    for e in g.edges:
        succ[e.src].append(e.dst)

    seen: set[int] = set()
    todo = [i for i, n in g.nodes.items() if drawn_backward(g, n)]
    while todo:
        for j in succ[todo.pop()]:
            if j not in seen:
                seen.add(j)
                todo.append(j)
    return {i for i in seen if not drawn_backward(g, g.nodes[i])}


def coarsen(g: Graph, by: str, within: set[int] | None = None) -> Graph:
    """Group equations by source line, by function, or by forward/backward phase; with
    `within`, only the equations drawn directly inside those clusters, by line.

    Inputs and outputs are grouped by argument (`params` for `params[3]['w']`) too when
    there are many, since a 64-layer model has hundreds of parameter leaves.
    """
    many = {kind: sum(n.kind == kind for n in g.nodes.values()) > 16
            for kind in ("input", "output")}
    after = _after_backward(g)

    def key(n: Node):
        if n.kind in ("input", "output"):
            return (None, n.kind, n.title.split("[")[0]) if many[n.kind] else None
        # the phase view drops every cluster, so it takes calls and groups in too
        kinds = ("op", "call", "group") if by == "phase" else ("op",)
        if n.kind not in kinds or within is not None and n.cluster not in within:
            return None
        phase = "backward" if n.backward else "after backward" if n.id in after \
            else "forward"
        if by == "line":
            return (n.cluster, n.where or NO_LINE, phase)
        if by == "function":
            return (n.cluster, (n.where or NO_LINE).split(":")[0], phase)
        return (None, phase)

    def make(k, members: list[Node]) -> Node:
        if k[1] in ("input", "output"):
            return Node(0, k[1], f"{k[2]} · {len(members)} leaves",
                        detail=(_shape_summary(members),))
        prims: Counter = Counter()
        for m in members:
            if m.kind != "group":
                prims[m.primitive if m.kind == "op" else m.title] += m.count if \
                    m.kind == "op" else 1
        top = ", ".join(f"{p} ×{c}" if c > 1 else p for p, c in prims.most_common(3))
        more = len(prims) - 3
        count = sum(m.count for m in members)
        where = k[1] if by != "phase" else ""
        source = members[0].source if by == "line" else ""
        # a line's own text says more than its number, which stays in `where`
        title = (short(source, 32) if source else where) or k[-1]
        if where and k[-1] != "forward":
            title += f" · {k[-1]}"
        return Node(0, "group", title,
                    detail=(equations(count), top + (f", +{more} more" if more > 0
                                                     else "")),
                    where=where if source else "", source=source,
                    file=members[0].file if source else "", cluster=k[0], count=count,
                    collective=any(m.collective for m in members),
                    backward=k[-1] == "backward", primitive="group")

    out = contract(g, key, make, grouping=by if within is None else g.grouping)
    if by == "phase":
        out.clusters = {}
        for n in out.nodes.values():
            n.cluster = None
    return out


# equations no line of the user's code emitted (JAX's or a library's own helpers)
NO_LINE = "library code"


def _shape_summary(members: list[Node]) -> str:
    shapes = Counter(m.detail[0] for m in members if m.detail)
    text = ", ".join(f"{s} ×{c}" if c > 1 else s for s, c in shapes.most_common(2))
    return text + (", …" if len(shapes) > 2 else "")
