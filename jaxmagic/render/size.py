"""How big a graph will be drawn, from the graph alone.

A drawing is scaled down to the cell width, so its smallest text on screen is
`font pt · 4/3 · min(1, cell px / SVG px)`. `estimate` predicts the SVG's width and rank
count from the graph alone (label sizes, a layering like dot's, each group a box over its
ranks), within ±15% of dot on the benchmark's models: what the automatic depth
(`graph.auto_depth`) judges its trials by, without a layout each.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ..graph.model import Graph
from . import dot as D

CELL_PX = 940         # measured: a graph's drawn width in nbconvert's page at 1100 px


MIN_TEXT_PX = 8.0


_CHAR_PT = D._CHAR_PT


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


def _ranks(g: Graph) -> dict[int, int]:
    """Longest-path layering (Kahn's order; nodes on a cycle go after their inputs), then
    each node other than an argument moved down to just above its first use where its
    uses outnumber its inputs, as `dot`'s network simplex places stubs, constants and
    residuals; arguments first, results last (as `to_dot` ranks them)."""
    indeg = {i: 0 for i in g.nodes}
    succ: dict[int, list[int]] = defaultdict(list)
    for e in g.edges:
        succ[e.src].append(e.dst)
        indeg[e.dst] += 1
    sources = [i for i, d in indeg.items() if d == 0]
    fanin = dict(indeg)
    rank = {i: 0 for i in g.nodes}
    ready, order, done = list(sources), [], set()
    while len(order) < len(g.nodes):
        if not ready:     # a cycle (lines grouped around a call): enter it where it is fed
            ready.append(min((i for i in g.nodes if i not in done), key=lambda i: indeg[i]))
        i = ready.pop()
        order.append(i)
        done.add(i)
        for j in succ[i]:
            if j in done:
                continue
            rank[j] = max(rank[j], rank[i] + 1)
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    for i in reversed(order):     # pulled down to its uses where they outnumber its inputs
        if succ[i] and g.nodes[i].kind != "input" and len(succ[i]) >= fanin[i]:
            rank[i] = max(rank[i], min(rank[j] for j in succ[i]) - 1, 1)
    # to_dot puts arguments first and results last, each in rows of bounded width
    ends = [n for n in g.nodes.values() if n.cluster not in g.clusters]
    in_rows = D.end_rows([n for n in ends if n.kind == "input"])
    out_rows = D.end_rows([n for n in ends if n.kind == "output"])
    shift = max(len(in_rows) - 1, 0)
    rank = {i: r + shift for i, r in rank.items()}
    last = max(rank.values(), default=0) + 1
    for k, row in enumerate(in_rows):
        rank.update({n.id: k for n in row})
    for k, row in enumerate(out_rows):
        rank.update({n.id: last + k for n in row})
    return rank


def _common(g: Graph, a: int | None, b: int | None) -> int | None:
    """The innermost drawn cluster holding both `a` and `b` (None: the top)."""
    chain = set()
    while a in g.clusters:
        chain.add(a)
        a = g.clusters[a].parent
    while b in g.clusters and b not in chain:
        b = g.clusters[b].parent
    return b if b in g.clusters else None


def estimate(g: Graph) -> Size:
    """Width as `dot` draws clusters: each a box spanning its members' ranks, so sibling
    boxes that share a rank stand side by side, and a box is as wide as its widest rank."""
    rank = _ranks(g)
    rows: dict[int | None, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for n in g.nodes.values():
        c = n.cluster if n.cluster in g.clusters else None
        rows[c][rank[n.id]] += D.node_width(n) + 18          # nodesep 0.25 in
    for e in g.edges:
        if D.labelled(g, e) or e.reshard:
            n = g.nodes[e.dst]
            c = n.cluster if n.cluster in g.clusters else None
            text = max(len(e.label) if D.labelled(g, e) else 0, len(e.reshard))
            rows[c][rank[e.dst]] += text * D.EDGE_PT * _CHAR_PT * 0.6
        # a long edge passes each rank in between as a thin virtual node
        c = _common(g, g.nodes[e.src].cluster, g.nodes[e.dst].cluster)
        for r in range(rank[e.src] + 1, rank[e.dst]):
            rows[c][r] += 18
    children: dict[int | None, list[int]] = defaultdict(list)
    for c in g.clusters.values():
        children[c.parent if c.parent in g.clusters else None].append(c.id)

    def box(c: int | None) -> tuple[float, int, int]:
        """(width, first rank, last rank) of cluster `c` (None: the whole drawing)."""
        row = rows[c]
        for child in children[c]:
            w, lo, hi = box(child)
            for r in range(lo, hi + 1):
                row[r] += w + 16
        if not row:
            return 0.0, 0, -1
        width = max(row.values())
        if c is not None:
            title = g.clusters[c].title
            width = max(width, len(title) * D.CLUSTER_PT * _CHAR_PT) + 16
        return width, min(row), max(row)

    width, _, _ = box(None)
    return Size(width, max(rank.values(), default=0) + 1)
