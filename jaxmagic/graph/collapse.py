"""Which groups a drawing opens, and the graph with the others closed: each closed call
drawn as one node. `Collapser` makes many such views of one graph cheaply (a choice of
depth tries a hundred).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from .merge import merged_edges, renumbered
from .model import Graph, Node, ancestors, equations
from .repeats import fold


def opened_at(g: Graph, depth: int | None, expand: Iterable[str] = ()) -> set[int]:
    """The clusters drawn open at `depth` (None: all), plus those named in `expand`."""
    expand = [e.lower() for e in expand]
    opened: set[int] = set()
    for c in g.clusters.values():
        if (depth is None or c.level <= depth) or any(e in c.title.lower() for e in expand):
            opened.update(ancestors(g, c.id))
    return opened


def holding(g: Graph, eqns: Iterable[int]) -> set[int]:
    """The clusters around the nodes that stand for any of `eqns` (a folded series' first
    call stands for every call's equations)."""
    eqns = set(eqns)
    out: set[int] = set()
    for n in g.nodes.values():
        if eqns.intersection(n.eqns):
            out.update(ancestors(g, n.cluster))
    return out


def collapse(g: Graph, depth: int | None = 0, expand: Iterable[str] = (),
             opened: set[int] | None = None) -> Graph:
    """Draw each nested jaxpr or call deeper than `depth` (or not in `opened`) as one node,
    unless named in `expand`. Repeated calls are folded first (`fold`)."""
    c = Collapser(g)
    return c.view(opened_at(c.g, depth, expand) if opened is None else opened)


class Collapser:
    """`collapse` of one graph, many times over (a choice of depth draws a hundred views
    of a train step's thousands of equations): what a closed call's node holds is worked
    out once per call, and edges are bucketed by the calls their ends sit in, so a view
    costs its own nodes and the edges that cross between them, not the whole graph. The
    same graph as `contract` would make: nodes numbered in the order of their first
    member, edges in the order of their first edge."""

    def __init__(self, g: Graph):
        self.g = g = fold(g)
        self.chain = {c: ancestors(g, c) for c in g.clusters}
        self.chain[None] = []
        self.own: dict[int | None, list[Node]] = defaultdict(list)   # innermost call →
        for n in g.nodes.values():                                   # its nodes
            self.own[n.cluster].append(n)
        self.order = {n.id: k for k, n in enumerate(g.nodes.values())}
        self.buckets: dict[tuple, list[int]] = defaultdict(list)     # (call, call) →
        for k, e in enumerate(g.edges):                              # edges, by index
            self.buckets[g.nodes[e.src].cluster, g.nodes[e.dst].cluster].append(k)
        self.made: dict[int, tuple[Node, tuple[int, ...], int]] = {}

    def view(self, opened: set[int]) -> Graph:
        """The graph with the calls not in `opened` (or inside one that is not) closed."""
        g = self.g
        closed = {c: next((a for a in chain if a not in opened), None)
                  for c, chain in self.chain.items()}
        firsts = [(self.order[n.id], n) for c, ns in self.own.items() if closed[c] is None
                  for n in ns]
        firsts += [(self._made(c)[2], c) for c in
                   {closed[c] for c in self.own} - {None}]
        nodes: dict[int, Node] = {}
        new_id: dict[int, int] = {}              # node id → its new id
        group_id: dict[int, int] = {}            # closed call → its node's id
        for i, (_, x) in enumerate(sorted(firsts, key=lambda f: f[0])):
            if isinstance(x, Node):
                nodes[i] = renumbered(x, i)
                new_id[x.id] = i
            else:
                node, eqns, _ = self._made(x)
                nodes[i] = renumbered(node, i, eqns=eqns)
                group_id[x] = i

        ends = []          # (edge's index, source, destination): those between calls
        for (cs, cd), ks in self.buckets.items():      # closed apart, or not closed
            a, b = closed[cs], closed[cd]
            if a is not None and a == b:
                continue
            src, dst = group_id.get(a), group_id.get(b)
            for k in ks:
                e = g.edges[k]
                ends.append((k, new_id[e.src] if src is None else src,
                             new_id[e.dst] if dst is None else dst))
        ends.sort()
        return Graph(nodes, merged_edges((s, d, g.edges[k]) for k, s, d in ends),
                     {i: c for i, c in g.clusters.items() if i in opened}, g.num_equations,
                     list(g.notes), g.grouping, g.series)

    def _made(self, cid: int) -> tuple[Node, tuple[int, ...], int]:
        """(the node a closed call is drawn as, its equations, its first member's order)."""
        if cid not in self.made:
            members = [n for c, ns in self.own.items() if cid in self.chain[c] for n in ns]
            c = self.g.clusters[cid]
            node = Node(0, "call", c.title,
                        detail=c.detail + (equations(c.num_equations),),
                        where=c.where, source=c.source, file=c.site.file, cluster=c.parent,
                        count=c.num_equations,
                        collective=any(m.collective for m in members),
                        backward=c.backward or _all_backward(members),
                        primitive=c.kind, signature=c.signature, group=cid)
            eqns = members[0].eqns if len(members) == 1 else \
                tuple(sorted(set().union(*(m.eqns for m in members))))
            self.made[cid] = node, eqns, min(self.order[m.id] for m in members)
        return self.made[cid]


def _all_backward(members: list[Node]) -> bool:
    """Whether a closed call's equations are all the backward pass's (one of none, a
    `cond` whose branches compute nothing, is not)."""
    ops = [m for m in members if m.kind == "op"]
    return bool(ops) and all(m.backward for m in ops)
