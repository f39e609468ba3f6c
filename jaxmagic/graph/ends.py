"""A drawing's arguments and results: many-leaf arguments as records, crowded ones packed
into one box, high-degree inputs drawn as stubs at their uses; a train step's state
would otherwise decide the picture's width.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import replace
from typing import Iterable

from .merge import contract
from .model import CAPTURED, Edge, Graph, Node, short

_ARG = re.compile(r"^[^\[.]+")


_ITEM = re.compile(r"^[^\[.]+\[\d+\]")     # out[0], out[1]: the results of a tuple


def _arguments(g: Graph, most: int) -> dict[int, str]:
    """Input or output node → the argument (or result) it is a leaf of. A tuple's results
    are apart (an optimizer's updates and state) when each has more than `most` leaves
    and they differ; a list of alike items (one per layer) stays one."""
    def name(n: Node, pattern: re.Pattern) -> str:
        if n.arg and pattern is _ARG:
            return n.arg
        m = pattern.match(n.title)
        return m.group(0) if m else n.title

    ends = [n for n in g.nodes.values() if n.kind in ("input", "output")
            or n.kind == "const" and n.cluster is None and n.arg]
    arg = {n.id: name(n, _ARG) for n in ends}
    items: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for n in ends:
        if n.kind == "output":
            item = name(n, _ITEM)
            items[arg[n.id]][item].append((n.title[len(item):], n.detail))
    split = {a for a, c in items.items() if len(c) > 1
             and min(map(len, c.values())) > most
             and len({tuple(v) for v in c.values()}) > 1}     # not one list of alike items
    return {i: name(g.nodes[i], _ITEM) if a in split else a for i, a in arg.items()}


def records(g: Graph, most: int = 1, rows: int = 6) -> Graph:
    """One record node per argument (or result, see `_arguments`) with more than `most`
    leaves, listing each leaf's path and shape; a long list ends "+N more". (A row of
    leaf ovals is what stretches a train step's graph past the cell: a model, its
    optimizer, metrics, RNG streams and a batch of two arrays.)"""
    arg = _arguments(g, 2)
    groups: dict[tuple[str, str], list[Node]] = defaultdict(list)
    for i, a in arg.items():
        groups[g.nodes[i].kind, a].append(g.nodes[i])
    big = {k for k, v in groups.items() if len(v) > most}
    if not big:
        return g

    def key(n: Node):
        k = (n.kind, arg[n.id]) if n.id in arg else None
        return k if k in big else None

    def make(k, members: list[Node]) -> Node:
        paths = ["" if k[1] == CAPTURED else _leaf_path(m.title[len(k[1]):] or m.title)
                 for m in members]
        shapes = [m.detail[0] if m.detail else "" for m in members]
        # leaves that differ only in a list index (one per layer) share a line: [i] ×16
        same = [re.sub(r"\[\d+\]", "[i]", p) for p in paths]
        count = Counter(zip(same, shapes))
        lines: dict[tuple[str, str], str] = {}
        for path, pattern, shape in zip(paths, same, shapes):
            c = count[pattern, shape]
            lines.setdefault((pattern, shape), short(
                f"{pattern} {shape} ×{c}" if c > 1 else f"{path} {shape}", 34))
        text = list(lines.values())
        if len(text) > rows:
            text = text[:rows] + [f"+{len(text) - rows} more"]
        return Node(0, k[0], f"{k[1]} · {len(members)} leaves", detail=tuple(text),
                    primitive="record")

    return contract(g, key, make)


def _leaf_path(path: str) -> str:
    """`opt_state[0].mu.l1.bias` for `.opt_state[0].mu['l1']['bias'].value`: dict keys as
    attributes and NNX's `.value` dropped, so a record row stays short."""
    path = re.sub(r"\['([A-Za-z_]\w*)'\]", r".\1", path)
    path = re.sub(r"\.value$", "", path)
    return path.lstrip(".") or path


def stubs(g: Graph, fanout: int = 4, packed: Iterable[str] = ()) -> Graph:
    """An input that feeds `fanout` or more nodes is drawn once, without edges, and each
    consumer gets a short stub naming it, so the parameters of many layers do not
    stretch the picture across the cell (as TensorBoard extracts high-degree nodes); so is
    every input where `pack` draws the arguments as one box. A call gets no stub of a
    packed or many-leaf argument: a module reads the model it is part of (ResNet50's
    `train_state` beside each of its sixteen blocks), said once, at the ops that read
    it where the call is drawn open."""
    dests: dict[int, set[int]] = defaultdict(set)
    for e in g.edges:
        if g.nodes[e.src].kind == "input":
            dests[e.src].add(e.dst)
    hubs = {i for i, d in dests.items() if len(d) >= fanout}
    packed = {n.id for n in ends(g, "input")} if "input" in packed else set()
    hubs |= packed
    if not hubs:
        return g
    nodes, edges = dict(g.nodes), []
    made: dict[tuple[int, int], int] = {}
    for e in g.edges:
        if e.src not in hubs:
            edges.append(e)
            continue
        if g.nodes[e.dst].kind == "call" and (
                e.src in packed or g.nodes[e.src].primitive == "record"):
            continue    # a call reads the model it is part of: say so once, at its ops
        if (e.src, e.dst) not in made:
            i = made[e.src, e.dst] = max(nodes) + 1
            hub = g.nodes[e.src]
            nodes[i] = Node(i, "stub", hub.title.split(" · ")[0], cluster=g.nodes[e.dst].cluster)
            edges.append(Edge(i, e.dst, "", value=e.value))
    return replace(g, nodes=nodes, edges=edges)


def ends(g: Graph, kind: str) -> list[Node]:
    """The arguments (`input`) or results (`output`) drawn outside every group."""
    return [n for n in g.nodes.values() if n.kind == kind and n.cluster not in g.clusters]


def pack(g: Graph, kinds: Iterable[str], rows_most: int = 8) -> Graph:
    """The arguments (results) of `kinds` as one box, a line each: spread out as separate
    records, a train step's five state arguments decide the picture's width (dot routes
    each one's edges around every group on their way), so they get stubs at their uses
    instead (see `stubs`). Where all their leaves take at most `rows_most` lines, the box
    lists them too."""
    packed = {n.id: n.kind for kind in kinds for n in ends(g, kind)}
    if not packed:
        return g

    def make(kind: str, members: list[Node]) -> Node:
        rows = [m.title if m.primitive == "record" else " ".join((m.title, *m.detail[:1]))
                for m in members]
        if sum(1 + len(m.detail) * (m.primitive == "record") for m in members) <= rows_most:
            # few leaves in all (three small arguments): each record's leaves under it
            rows = [line for m, row in zip(members, rows) for line in
                    (row, *(("  " + d for d in m.detail) if m.primitive == "record" else ()))]
        return Node(0, kind, "arguments" if kind == "input" else "results",
                    detail=tuple(rows), primitive="record")

    return contract(g, lambda n: packed.get(n.id), make)
