"""What a graph is: nodes (equations, arguments, closed calls), edges (the values between
them), clusters (calls, nested jaxprs) and the graph holding them, as plain dataclasses.

No JAX here: the passes and the renderers read these alone, and a graph can be built by
hand (tests do). `Draft` is a graph while `build` makes it, shared with the passes that
settle its groups.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, NamedTuple


class Site(NamedTuple):
    """A user's line: its location (`Attention.__call__:9`), its source text (with the
    library frame behind it) and the file or notebook cell holding it."""
    where: str = ""
    source: str = ""
    file: str = ""


# equations no line of the user's code emitted (JAX's or a library's own helpers)
NO_LINE = "library code"


@dataclass
class Node:
    id: int
    kind: str                 # input | output | const | op | call | port | group
    title: str
    detail: tuple[str, ...] = ()
    where: str = ""           # "loss:12": the user's function and line
    source: str = ""          # the user's source line, for tooltips
    file: str = ""            # the file or cell holding that line
    cluster: int | None = None
    count: int = 1            # equations this node stands for
    collective: bool = False
    backward: bool = False
    primitive: str = ""
    signature: str = ""       # equal for the same operation / the same collapsed call
    eqns: tuple[int, ...] = ()  # walk-order indices of the equations this node stands for
    arg: str = ""             # an input's argument as written (`{'params': state.params}`)
    group: int | None = None  # a collapsed call: the cluster it stands for (opened by a click)


@dataclass
class Edge:
    src: int
    dst: int
    label: str = ""
    reshard: str = ""         # `P('data', None) → P('model', None)`: moved on its way
    value: tuple | None = None  # the value it carries: (equation, output), (-1, argument)


@dataclass
class Cluster:
    id: int
    kind: str                 # jit | scan | cond | branch | while | while_cond | while_body | ...
    title: str
    detail: tuple[str, ...]
    parent: int | None
    level: int                # nesting depth counted in expandable steps (1 = top level)
    where: str = ""
    source: str = ""
    num_equations: int = 0
    signature: str = ""       # equal for structurally identical sub-graphs
    backward: bool = False    # the backward pass of a call (its own group: acyclic)
    label: str = ""           # the call's name without its instance number
    repeat: int = 1           # a folded series: this cluster stands for `repeat` calls
    library: bool = False     # a call into a library's functions (`optimizer.update`)
    own_call: bool = False    # a jit whose function's own recorded call it is (`jit: f`)
    site: Site = Site()       # the user's line that calls it (`where` is drawn, this isn't)
    period: bool = False      # one period of a repeat of several calls (`a → b`), no call


@dataclass
class Graph:
    nodes: dict[int, Node]
    edges: list[Edge]
    clusters: dict[int, Cluster]
    num_equations: int
    notes: list[str] = field(default_factory=list)
    grouping: str = "equation"   # equation | line | function | phase
    # consecutive sibling calls of the same structure: member cluster → (first, index)
    series: dict[int, tuple[int, int]] = field(default_factory=dict)
    # clusters drawn open with their own equations as one box beside their calls
    whole: frozenset[int] = frozenset()
    by_line: frozenset[int] = frozenset()   # the open groups drawn with their lines grouped
    # open groups drawn as a part of the one around them: a loop's levels (`through`)
    merged: frozenset[int] = frozenset()

    def expandable(self) -> list[str]:
        """Names accepted by --expand: the titles of clusters drawn as single nodes."""
        return sorted({c.title for c in self.clusters.values()})


def ancestors(g: Any, cluster: int | None) -> list[int]:
    """`cluster` and the groups around it, outermost first (empty for None); `g` a graph,
    or the builder making one."""
    chain = []
    while cluster is not None:
        chain.append(cluster)
        cluster = g.clusters[cluster].parent
    return chain[::-1]   # outermost first


def users_code(g: Graph) -> set[int]:
    """The clusters that are, or hold, the user's code or a model's module: a recorded
    call or a named scope at the user's lines (not a call into a library's functions,
    whatever it calls back, nor one period of a fold), a jit of the user's function, and
    any group (a jit, a loop, a cond, a library's call) with one of those inside."""
    children: dict[int | None, list[int]] = defaultdict(list)
    for c in g.clusters.values():
        children[c.parent].append(c.id)
    lined = {n.cluster for n in g.nodes.values() if n.kind == "op" and n.where
             and n.where != NO_LINE}
    out: set[int] = set()

    def visit(c: int) -> bool:
        below = [visit(k) for k in children[c]]
        x = g.clusters[c]
        # a bare named scope at none of the user's lines is a library's (Equinox's
        # `outer-loop` around its while loops), whatever it holds
        named = x.kind == "scope" and not x.period and (x.detail != ("named scope",)
                                                         or c in lined)
        mine = not x.library and (named or x.own_call or any(below))
        if mine:
            out.add(c)
        return mine

    for top in children[None]:
        visit(top)
    return out


def equations(n: int) -> str:
    return f"{n} equation" + ("" if n == 1 else "s")


def short(value: Any, limit: int = 36) -> str:
    text = value.name if hasattr(value, "name") and not isinstance(value, str) else str(value)
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def base_label(label: str) -> str:
    """`Dense` for Linen's `Dense_3`: the k-th submodule of a class is the same layer."""
    return re.sub(r"_\d+$", "", label)


CAPTURED = "captured constants"      # constants whose Python name is not known


class Draft:
    """A graph being made: its nodes, edges and clusters so far, and what the passes after
    the walk need (what each cluster holds in walk order, each call's first equation,
    each operation's equation). `build` fills it; `groups` and `repeats` settle it."""

    def __init__(self, wrappers: frozenset[str] = frozenset(),
                 library_calls: frozenset[str] = frozenset(),
                 is_library_file: Callable[[str], bool] = lambda file: False) -> None:
        self.library_calls = library_calls
        self.wrappers = wrappers      # library calls that called the user's code back
        self.wrapping: set[int] = set()   # their clusters (`unwrap` decides which stay)
        self.nodes: dict[int, Node] = {}
        self.edges: list[Edge] = []
        self.clusters: dict[int, Cluster] = {}
        self._next_cluster = self._next_node = 0
        self.num_equations = 0
        # what each cluster (None: the top) holds, in walk order: ("n", node) / ("c", cluster)
        self.order: dict[int | None, list[tuple[str, int]]] = defaultdict(list)
        self.first_eqn: dict[int, Any] = {}    # a scope's first equation: where it is called
        self.eqn_of: dict[int, Any] = {}       # an operation's node → its equation
        self.effectful: set[int] = set()        # nodes whose equations have effects
        self.is_library_file = is_library_file

    def node(self, kind: str, title: str, cluster: int | None, **kw: Any) -> int:
        i = self._next_node         # not len(): dropped nodes leave gaps
        self._next_node += 1
        self.nodes[i] = Node(i, kind, title, cluster=cluster, **kw)
        self.order[cluster].append(("n", i))
        return i

    def cluster(self, kind: str, title: str, parent: int | None, level: int,
                detail: Iterable[str] = (), site: Site = Site(),
                signature: str = "", backward: bool = False, label: str = "") -> int:
        i = self._next_cluster      # not len(): merged clusters leave gaps
        self._next_cluster += 1
        self.clusters[i] = Cluster(i, kind, title, tuple(detail), parent, level, site.where,
                                   site.source, signature=signature, backward=backward,
                                   label=label or title, site=site)
        self.order[parent].append(("c", i))
        return i

    def edge(self, src: int, dst: int, label: str, reshard: str = "",
             value: tuple | None = None) -> None:
        self.edges.append(Edge(src, dst, label, reshard, value))

    def level_of(self, cluster: int | None, default: int) -> int:
        return self.clusters[cluster].level if cluster is not None else default
