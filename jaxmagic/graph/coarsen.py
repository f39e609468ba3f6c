"""Coarser views: equations grouped by source line, by function, or by forward and
backward pass, for a drawing too big to show them one by one (or a group asked to show
its lines).
"""
from __future__ import annotations

from collections import Counter, defaultdict

from .merge import contract
from .model import NO_LINE, Graph, Node, equations, short


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


def coarsen(g: Graph, by: str, within: set[int] | None = None,
            joins: dict[int, str] | None = None) -> Graph:
    """Group equations by source line, by function, or by forward/backward phase; with
    `within`, only the equations drawn directly inside those clusters, by line; `joins`
    (node id → the function its box is named by) puts closed calls into a box too, and
    names a box by its group's line, not each member's (`through.ways`). Within groups,
    the library's boxes that would close a cycle are split by stage (`_staged`).

    Inputs and outputs are grouped by argument (`params` for `params[3]['w']`) too when
    there are many, since a 64-layer model has hundreds of parameter leaves.
    """
    many = {kind: sum(n.kind == kind for n in g.nodes.values()) > 16
            for kind in ("input", "output")}
    after = _after_backward(g)

    def key(n: Node):
        if n.kind in ("input", "output"):
            return (None, n.kind, n.title.split("[")[0]) if many[n.kind] else None
        phase = "backward" if n.backward else "after backward" if n.id in after \
            else "forward"
        if joins and n.id in joins:
            return (n.cluster, joins[n.id], phase)
        # the phase view drops every cluster, so it takes calls and groups in too
        kinds = ("op", "call", "group") if by == "phase" else ("op",)
        if n.kind not in kinds or within is not None and n.cluster not in within:
            return None
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
        # beside a library's way, a box stands on the ranks of its loops' levels and names
        # two primitives, not three (diffrax's `NeuralODE.__call__` box widened JAX
        # 0.7's solve past the cell)
        most = 2 if joins else 3
        top = ", ".join(f"{p} ×{c}" if c > 1 else p for p, c in prims.most_common(most))
        more = len(prims) - most
        count = sum(m.count for m in members)
        where = k[1] if by != "phase" else ""
        source = members[0].source if by == "line" else ""
        # a line's own text says more than its number, which stays in `where`
        title = (short(source, 32) if source else where) or k[-1]
        if where and k[-1] != "forward":
            title += f" · {k[-1]}"
        # a library's way to the user's code: what it is made of says little, and
        # widens every level of its loops
        mix = () if joins and members[0].id in joins else \
            (top + (f", +{more} more" if more > 0 else ""),)
        return Node(0, "group", title, detail=(equations(count), *mix),
                    where=where if source else "", source=source,
                    file=members[0].file if source else "", cluster=k[0], count=count,
                    collective=any(m.collective for m in members),
                    backward=k[-1] == "backward", primitive="group")

    out = contract(g, key, make, grouping=by if within is None else g.grouping)
    if within is not None and not _acyclic(out):
        out = contract(g, _staged(g, key), make, grouping=g.grouping)
    if by == "phase":
        out.clusters = {}
        for n in out.nodes.values():
            n.cluster = None
    return out


def _in_order(g: Graph) -> tuple[list[int], dict[int, list[int]]]:
    """(`g`'s nodes in topological order, fewer than all where it has a cycle; each
    node's successors), an edge from a node to itself left out."""
    succ: dict[int, list[int]] = defaultdict(list)
    waiting = dict.fromkeys(g.nodes, 0)
    for e in g.edges:
        if e.src != e.dst:
            succ[e.src].append(e.dst)
            waiting[e.dst] += 1
    order, ready = [], [i for i, k in waiting.items() if k == 0]
    while ready:
        order.append(i := ready.pop())
        for j in succ[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                ready.append(j)
    return order, succ


def _acyclic(g: Graph) -> bool:
    return len(_in_order(g)[0]) == len(g.nodes)


def _staged(g: Graph, key):
    """`key` with each box of the library's code (`NO_LINE`: a loop's work before and
    after the user's model it calls) split by its members' stage (`_stages`), the stage
    before the phase (`make` reads the cluster, the name and the phase). A box of the
    user's lines stays one, as the user wrote them, though it may feed a call that feeds
    it (a loss's lines around its model: split, they took the model's room)."""
    keys = {i: key(n) for i, n in g.nodes.items()}
    groups: dict = defaultdict(set)
    for i, k in keys.items():
        if k is not None and g.nodes[i].kind not in ("input", "output"):
            groups[k].add(i)
    staged, walk = dict(keys), _in_order(g)
    for k, members in groups.items():
        if len(members) > 1 and k[1] == NO_LINE:
            for i, s in _stages(walk, members).items():
                staged[i] = (*k[:-1], s, k[-1])
    return lambda n: staged[n.id]


def _stages(walk: tuple[list[int], dict[int, list[int]]], members: set[int]
            ) -> dict[int, int]:
    """Member id → how many other nodes that a member leads to lie on the longest path to
    it (`walk`: `_in_order`'s): members of one stage make one box, and no box both feeds
    a node and is fed by it (a cycle: a loop's work before and after the model it
    calls)."""
    order, succ = walk
    stage: dict[int, int] = defaultdict(int)
    reached = set(members)                            # a member leads here
    for i in order:
        step = stage[i] + (i in reached and i not in members)
        for j in succ[i]:
            stage[j] = max(stage[j], step)
            if i in reached:
                reached.add(j)
    return {i: stage[i] for i in members}


def _shape_summary(members: list[Node]) -> str:
    shapes = Counter(m.detail[0] for m in members if m.detail)
    text = ", ".join(f"{s} ×{c}" if c > 1 else s for s, c in shapes.most_common(2))
    return text + (", …" if len(shapes) > 2 else "")
