"""How big a graph will be drawn, and the automatic depth that keeps its text legible.

A drawing is scaled down to the cell width, so its smallest text on screen is
`font pt · 4/3 · min(1, cell px / SVG px)`. `estimate` predicts the SVG's width and rank
count from the graph alone (label sizes, a longest-path layering, cluster margins), so
`choose` can try many expansions without running Graphviz; the caller checks the real
layout and calls again with a tighter budget when the estimate was short.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ..core import graph as G
from . import dot as D

CELL_PX = 940         # measured: a graph's drawn width in nbconvert's page at 1100 px
MIN_TEXT_PX = 8.0
MAX_RANKS = 70        # taller than this and the reader loses the thread; coarsen instead
_CHAR_PT = 0.6        # DejaVu Sans, average advance per point of font size


@dataclass
class Size:
    width_pt: float
    ranks: int

    def text_px(self, cell_px: float = CELL_PX) -> float:
        """Smallest text on screen when drawn at `cell_px` wide."""
        return D.SMALLEST_PT * 4 / 3 * min(1.0, cell_px / (self.width_pt * 4 / 3 or 1))


def max_width_pt(cell_px: float = CELL_PX) -> float:
    """The widest SVG (in points) whose smallest text stays ≥ MIN_TEXT_PX."""
    return cell_px * (D.SMALLEST_PT * 4 / 3 / MIN_TEXT_PX) * 3 / 4


def _node_width(n: G.Node) -> float:
    rows = D.label_rows(n.title, n.detail, n.where)
    size = D.STUB_PT if n.kind == "stub" else D.NODE_PT
    return max(54.0, max(len(r) for r in rows) * size * _CHAR_PT + 18)


def _ranks(g: G.Graph) -> dict[int, int]:
    """Longest-path layering (Kahn's order; nodes on a cycle go after their inputs)."""
    preds: dict[int, list[int]] = defaultdict(list)
    indeg = {i: 0 for i in g.nodes}
    succ: dict[int, list[int]] = defaultdict(list)
    for e in g.edges:
        succ[e.src].append(e.dst)
        preds[e.dst].append(e.src)
        indeg[e.dst] += 1
    rank = {i: 0 for i in g.nodes}
    ready = [i for i, d in indeg.items() if d == 0]
    seen = 0
    while ready:
        i = ready.pop()
        seen += 1
        for j in succ[i]:
            rank[j] = max(rank[j], rank[i] + 1)
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    return rank


def estimate(g: G.Graph) -> Size:
    rank = _ranks(g)
    width: dict[int, float] = defaultdict(float)
    clusters: dict[int, set] = defaultdict(set)
    for n in g.nodes.values():
        r = rank[n.id]
        width[r] += _node_width(n) + 18          # nodesep 0.25 in
        c = n.cluster
        while c is not None and c in g.clusters:
            clusters[r].add(c)
            c = g.clusters[c].parent
    for e in g.edges:
        if D.labelled(g, e):
            width[rank[e.dst]] += len(e.label) * D.EDGE_PT * _CHAR_PT * 0.5
    for r, cs in clusters.items():
        width[r] += 16 * len(cs)
    widest_cluster = max((len(c.title) * D.CLUSTER_PT * _CHAR_PT + 16
                          for c in g.clusters.values()), default=0)
    return Size(max([widest_cluster, *width.values()], default=0),
                max(rank.values(), default=0) + 1)


def fits(size: Size, width_pt: float) -> bool:
    return size.width_pt <= width_pt and size.ranks <= MAX_RANKS


def choose(folded: G.Graph, draw, width_pt: float, measure=None) -> set[int]:
    """The clusters to open: breadth first, biggest first, each kept only while the
    drawing of `draw(opened)` stays within `width_pt` and the rank budget.

    The estimate decides clear cases; `measure(graph) -> Size` (a real layout) decides
    those within a factor of two of the budget, where the estimate is not precise enough.
    """
    opened = G.opened_at(folded, 0)
    children: dict[int | None, list[int]] = defaultdict(list)
    for c in folded.clusters.values():
        children[c.parent].append(c.id)
    frontier = [c for p in [None, *opened] for c in children[p] if c not in opened]
    while frontier:
        frontier.sort(key=lambda c: (folded.clusters[c].level,
                                     -folded.clusters[c].num_equations))
        c = frontier.pop(0)
        trial = opened | {c}
        g = draw(trial)
        size = estimate(g)
        if measure is not None and width_pt / 2 < size.width_pt < width_pt * 2:
            size = measure(g) or size
        if fits(size, width_pt):
            opened = trial
            frontier += children[c]
    return opened
