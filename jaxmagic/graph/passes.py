"""Every pass that makes a drawing of the full graph, in one ordered list (`PASSES`), as
pyinstrument lists its processors: read top to bottom, it is what `%jaxpr` does to a
graph before drawing it.

Two stages. The `folded` passes run once on the full graph, the same at every depth:
repeats folded, per-leaf copies folded, many-leaf arguments as records. The `view`
passes run on each view a depth opens: closed calls collapsed, lines or boxes where
asked, a coarser grouping past the budgets, then the drawing's touches (the traced
function's own box dropped, residuals bundled, a repeated location quieted, crowded
arguments packed with stubs at their uses). Coarsening comes before the touches, so
groups are named by the locations the touches hide. The touches are defined here; the
other passes in their own modules.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace
from typing import AbstractSet, Callable, NamedTuple

from . import through
from .coarsen import coarsen, drawn_backward
from .collapse import Collapser
from .ends import pack, records, stubs
from .lanes import lanes
from .merge import moved_text
from .model import Edge, Graph, users_code
from .repeats import fold


class ViewOptions(NamedTuple):
    """What the view passes are told: the groups drawn open (`opened`; of them, those
    whose own equations are grouped by line, `by_line`, or drawn as one box beside their
    calls, `whole`), a coarser grouping past the budgets (`by`: "function" or "phase"),
    every group's equations by line (`group="line"`), the folded graph's `Collapser`
    (made once, for the hundred views a choice of depth tries), and which ends to pack
    (`crowded`: the renderer knows how wide they draw)."""
    opened: AbstractSet[int] = frozenset()
    by_line: frozenset[int] = frozenset()
    whole: frozenset[int] = frozenset()
    by: str | None = None
    group: str = "call"
    collapser: Collapser | None = None
    crowded: Callable[[Graph], set[str]] = lambda g: set()


class Pass(NamedTuple):
    name: str
    stage: str          # "folded": once, on the full graph; "view": on each view
    run: Callable[[Graph, ViewOptions], Graph]


def _collapse(g: Graph, o: ViewOptions) -> Graph:
    return o.collapser.view(o.opened)


def _lines(g: Graph, o: ViewOptions) -> Graph:
    if o.group == "line":
        return coarsen(g, "line")
    return coarsen(g, "line", within=set(o.by_line)) if o.by_line else g


def _boxes(g: Graph, o: ViewOptions) -> Graph:
    if not o.whole or o.group == "line":
        return g
    mine = users_code(o.collapser.g)       # the closed calls' clusters too
    g, joins = through.flatten(g, through.ways(g, set(o.whole), mine), mine)
    return coarsen(g, "function", within=set(o.whole), joins=joins)


def _coarser(g: Graph, o: ViewOptions) -> Graph:
    return coarsen(g, o.by) if o.by is not None else g


def _ends(g: Graph, o: ViewOptions) -> Graph:
    crowded = o.crowded(g)
    return pack(stubs(g, packed=crowded), crowded)


def _ways_drawn(g: Graph, o: ViewOptions) -> Graph:
    """The groups drawn open a coarser way, for the renderer and the explorer: none in a
    view grouped by line, function or phase."""
    mine = o.group != "line" and o.by is None
    g.whole = frozenset(o.whole) if mine else frozenset()
    g.by_line = frozenset(o.by_line) if mine else frozenset()
    return g


PASSES: tuple[Pass, ...] = (
    Pass("fold repeats", "folded", lambda g, o: fold(g)),       # repeats.fold
    Pass("fold leaves", "folded", lambda g, o: lanes(g)),       # lanes.lanes
    Pass("records", "folded", lambda g, o: records(g)),         # ends.records
    Pass("collapse", "view", _collapse),                        # collapse.Collapser
    Pass("lines", "view", _lines),                              # coarsen, by line
    Pass("boxes", "view", _boxes),                              # coarsen, one box
    Pass("coarser", "view", _coarser),                          # coarsen, by/function/phase
    Pass("unroot", "view", lambda g, o: unroot(g)),
    Pass("residuals", "view", lambda g, o: residuals(g)),
    Pass("quiet where", "view", lambda g, o: quiet_where(g)),
    Pass("ends", "view", _ends),                                # ends.stubs, ends.pack
    Pass("ways drawn", "view", _ways_drawn),
)


def run(g: Graph, stage: str, options: ViewOptions = ViewOptions()) -> Graph:
    """`g` through the passes of `stage`, in `PASSES`' order."""
    if stage == "view" and options.collapser is None:
        options = options._replace(collapser=Collapser(g))
    for p in PASSES:
        if p.stage == stage:
            g = p.run(g, options)
    return g


def unroot(g: Graph) -> Graph:
    """The traced function's own call (and its backward pass) drawn as no box: the title
    names it, and a box around the whole drawing only makes its arguments' edges run
    around it."""
    roots = {i for i, c in g.clusters.items() if c.level == 0 and c.parent is None}
    if not roots:
        return g
    nodes = {i: replace(n, cluster=None) if n.cluster in roots else n
             for i, n in g.nodes.items()}
    clusters = {i: replace(c, parent=None) if c.parent in roots else c
                for i, c in g.clusters.items() if i not in roots}
    return replace(g, nodes=nodes, clusters=clusters)


def residuals(g: Graph) -> Graph:
    """Each backward node keeps one edge from the forward pass (the latest), labelled
    with how many values it saves from there: the forward pass's residuals would
    otherwise run as dozens of long edges around the picture."""
    forward = {i for i, n in g.nodes.items()
               if n.kind in ("op", "call", "group") and not drawn_backward(g, n)}
    into: dict[int, list[Edge]] = defaultdict(list)
    edges = []
    for e in g.edges:
        if e.src in forward and drawn_backward(g, g.nodes[e.dst]):
            into[e.dst].append(e)
        else:
            edges.append(e)
    for dst, es in into.items():
        last = max(es, key=lambda e: e.src)
        edges.append(Edge(last.src, dst, last.label if len(es) == 1 else
                          f"{len(es)} residuals",
                          moved_text(list(dict.fromkeys(e.reshard for e in es if e.reshard))),
                          last.value if len(es) == 1 else None))
    # a value only the backward pass reads (a relu's mask), its edge bundled into another's,
    # says where it goes: it would look unused
    unseen = {e.src for es in into.values() for e in es} - {e.src for e in edges}
    nodes = {i: replace(n, detail=n.detail + (BACKWARD_ONLY,)) if i in unseen else n
             for i, n in g.nodes.items()}
    return replace(g, nodes=nodes, edges=edges)


BACKWARD_ONLY = "→ backward pass"


def quiet_where(g: Graph, least: int = 3) -> Graph:
    """Drop the location from the nodes of a group when all of them (at least `least`)
    share it: one line repeated on every box (an optimizer's update call) is noise. The
    tooltip keeps the source."""
    wheres: dict[int | None, set[str]] = defaultdict(set)
    counts: Counter = Counter()
    for n in g.nodes.values():
        if n.where:
            wheres[n.cluster].add(n.where)
            counts[n.cluster] += 1
    same = {c for c, w in wheres.items() if len(w) == 1 and counts[c] >= least}
    if not same:
        return g
    nodes = {i: replace(n, where="") if n.where and n.cluster in same else n
             for i, n in g.nodes.items()}
    return replace(g, nodes=nodes)
