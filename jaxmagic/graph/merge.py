"""Merging nodes into one: the step every view of a graph is made of (a fold, a closed
call, a line's equations, an argument's leaves), with the edges between merged nodes
drawn once.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Iterable

from .model import Edge, Graph, Node


def contract(g: Graph, rep: Callable[[Node], Any], make: Callable[[Any, list[Node]], Node],
             grouping: str | None = None) -> Graph:
    """Merge nodes with the same `rep` key into one node made by `make` (key, members).

    Nodes whose key is None stay as they are. Each node's `eqns` are its members'. Edges
    follow their endpoints; edges inside a merged node vanish; parallel edges with the
    same label are drawn once.
    """
    groups: dict[Any, list[Node]] = defaultdict(list)
    for n in g.nodes.values():
        key = rep(n)
        groups[("node", n.id) if key is None else ("group", key)].append(n)
    nodes: dict[int, Node] = {}
    new_id: dict[int, int] = {}
    for i, (key, members) in enumerate(groups.items()):
        node = members[0] if key[0] == "node" else make(key[1], members)
        if len(members) == 1:
            eqns = members[0].eqns
        else:
            eqns = tuple(sorted(set().union(*(m.eqns for m in members))))
        nodes[i] = renumbered(node, i, eqns=eqns)
        for m in members:
            new_id[m.id] = i
    edges = merged_edges((new_id[e.src], new_id[e.dst], e) for e in g.edges)
    return Graph(nodes, edges, g.clusters, g.num_equations, list(g.notes),
                 grouping or g.grouping, g.series, merged=g.merged)


def renumbered(node: Node, i: int, **changes: Any) -> Node:
    """`node` as node `i`: a copy made without the dataclass's keyword `__init__` or
    `replace`'s walk over the fields: 0.9 µs a node against 2.3, and a choice of depth
    copies thousands of nodes per trial view."""
    copy = object.__new__(Node)
    copy.__dict__.update(vars(node), id=i, **changes)
    return copy


def merged_edges(ends: Iterable[tuple[int, int, Edge]]) -> list[Edge]:
    """Each edge drawn between the nodes its ends merged into, (source, destination,
    edge): those inside one node vanish, parallel ones with the same label are drawn
    once (in the order of their first). One pass, one lookup an edge (a choice of depth
    merges a hundred views' edges); most stand alone, and are only renumbered."""
    merged: dict[tuple[int, int], Edge | list[Edge]] = {}
    for s, d, e in ends:
        if s == d:
            continue
        m = merged.setdefault((s, d), e)
        if m is not e:
            if type(m) is list:
                m.append(e)
            else:
                merged[s, d] = [m, e]
    return [Edge(s, d, m.label, m.reshard, m.value) if type(m) is not list
            else _parallel(s, d, m) for (s, d), m in merged.items()]


def _parallel(s: int, d: int, edges: list[Edge]) -> Edge:
    """One edge for parallel ones: their labels once each, their reshards, the value if
    they carry one."""
    labels = list(dict.fromkeys(e.label for e in edges))
    moved = list(dict.fromkeys(e.reshard for e in edges if e.reshard))
    values = {e.value for e in edges}
    return Edge(s, d, labels[0] if len(labels) == 1 else f"{len(labels)} arrays",
                moved_text(moved), next(iter(values)) if len(values) == 1 else None)


def moved_text(changes: list[str]) -> str:
    """One edge's reshard text for the edges it stands for."""
    return changes[0] if len(changes) == 1 else f"{len(changes)} reshards" if changes else ""
