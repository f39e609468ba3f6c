"""Views of a graph: what `%jaxpr` draws from the full graph `graph.build` makes.

Each function takes a `Graph` and returns a new one (or a set of groups); none changes
its input. `fold` rolls repeats into series and `lanes` / `records` pack what would
stretch the picture; `collapse` closes groups beyond a depth or a set of opened ones;
`coarsen` groups equations by line, function or pass; the rest are the drawing's touches
(stubs for crowded inputs, quieted locations, packed ends).
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import replace
from typing import Any, Callable, Iterable

from .graph import _CAPTURED, Cluster, Edge, Graph, Node, _short, ancestors, equations


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
        nodes[i] = _renumbered(node, i, eqns=eqns)
        for m in members:
            new_id[m.id] = i
    edges = _merged_edges((new_id[e.src], new_id[e.dst], e) for e in g.edges)
    return Graph(nodes, edges, g.clusters, g.num_equations, list(g.notes),
                 grouping or g.grouping, g.series)


def _renumbered(node: Node, i: int, **changes: Any) -> Node:
    """`node` as node `i`: a copy made without the dataclass's keyword `__init__` or
    `replace`'s walk over the fields: 0.9 µs a node against 2.3, and a choice of depth
    copies thousands of nodes per trial view."""
    copy = object.__new__(Node)
    copy.__dict__.update(vars(node), id=i, **changes)
    return copy


def _merged_edges(ends: Iterable[tuple[int, int, Edge]]) -> list[Edge]:
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
                _moved(moved), next(iter(values)) if len(values) == 1 else None)


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
                nodes[i] = _renumbered(x, i)
                new_id[x.id] = i
            else:
                node, eqns, _ = self._made(x)
                nodes[i] = _renumbered(node, i, eqns=eqns)
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
        return Graph(nodes, _merged_edges((s, d, g.edges[k]) for k, s, d in ends),
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
                        backward=c.backward or all(m.backward for m in members
                                                   if m.kind == "op"),
                        primitive=c.kind, signature=c.signature, group=cid)
            eqns = members[0].eqns if len(members) == 1 else \
                tuple(sorted(set().union(*(m.eqns for m in members))))
            self.made[cid] = node, eqns, min(self.order[m.id] for m in members)
        return self.made[cid]


def fold(g: Graph) -> Graph:
    """Draw each series of repeated calls once, as its first call marked ×N.

    The later calls' nodes merge into the first's (matched in walk order: the calls have
    the same structure); edges from one call of a series to the next vanish, so the
    picture stays acyclic. Applied once: the result has no series left.

    What a fold draws is one repetition, and its ×N says how many it stands for: inside
    it every box counts one repetition's equations (an `add` is 1 equation, not 16) and
    a constant that changes from one repetition to the next reads first…last, not the
    first's; the fold's own box, closed, counts all N. The nodes keep every repetition's
    equations (`eqns`): a search, a profile and the values find them all there.
    """
    if not g.series:
        return g
    chain = {c: ancestors(g, c) for c in g.clusters}
    subtree: dict[int, list[int]] = defaultdict(list)
    for n in g.nodes.values():
        for c in chain.get(n.cluster, ()):
            if c in g.series:
                subtree[c].append(n.id)
    alias: dict[int, int] = {}
    for m, (first, k) in g.series.items():
        if k:
            alias.update(zip(subtree[m], subtree[first]))

    def root(i: int) -> int:
        while i in alias:
            i = alias[i]
        return i

    def tags(n: Node) -> dict[int, int]:
        return {g.series[c][0]: g.series[c][1] for c in chain.get(n.cluster, ())
                if c in g.series}

    node_tags = {n.id: tags(n) for n in g.nodes.values()}
    edges = [e for e in g.edges if not any(
        node_tags[e.dst].get(f, k) != k for f, k in node_tags[e.src].items())]
    merged = set(alias) | set(alias.values())

    def make(key: int, members: list[Node]) -> Node:
        return replace(g.nodes[key], title=_repeated_title([m.title for m in members]))

    out = contract(replace(g, edges=edges), lambda n: root(n.id) if n.id in merged else None,
                   make)
    out.clusters = {}
    for i, c in g.clusters.items():
        first, k = g.series.get(i, (i, 0))
        if k == 0 and first == i and c.repeat > 1:
            c = replace(c, title=series_title(c),
                        num_equations=sum(g.clusters[m].num_equations
                                          for m, (f, _) in g.series.items() if f == i))
        if not any(g.series.get(a, (0, 0))[1] for a in chain[i]):   # not inside a later call
            out.clusters[i] = c
    out.series = {}
    return out


def _repeated_title(titles: list[str]) -> str:
    """An operation's title for all its repetitions, in order (`primitive · constant,
    constant`): `mul · 1…16` where a loop multiplies by its counter; the primitive alone
    where some repetitions have no such constant."""
    if len(set(titles)) == 1:
        return titles[0]
    op = titles[0].partition(" · ")[0]
    rows = [t.partition(" · ")[2].split(", ") for t in titles]
    if any(" · " not in t for t in titles) or len({len(r) for r in rows}) > 1:
        return op
    parts = [col[0] if len(set(col)) == 1 else f"{col[0]}…{col[-1]}" for col in zip(*rows)]
    return f"{op} · {', '.join(parts)}"


def series_title(c: Cluster) -> str:
    """"block ×16 · backward": the first call of a series, titled for all of it."""
    if c.repeat <= 1:
        return c.title
    base = c.label if c.kind == "scope" else c.title
    return f"{base} ×{c.repeat}" + (" · backward" if c.backward and c.kind == "scope" else "")


def lanes(g: Graph, longest: int = 12) -> Graph:
    """Fold the per-leaf copies of a tree map: a run of `N` consecutive blocks of the
    same operations in one group (shapes may differ), with no edge between blocks and
    each block feeding results of its own, is drawn as its first block marked ×N leaves
    (an optimizer updates every parameter leaf with the same few operations); so is a
    sum over an argument's leaves, blocks joined only by a running total, each on
    leaves of its own (a weight decay's `sum(jnp.sum(x ** 2) for x in leaves)`). Edges
    between folded nodes lose their labels: the shapes differ per leaf."""
    reach = _outputs_reached(g)
    groups: dict[int | None, list[Node]] = defaultdict(list)
    for i in sorted(g.nodes):
        if g.nodes[i].kind == "op":
            groups[g.nodes[i].cluster].append(g.nodes[i])
    succ: dict[int, set[int]] = defaultdict(set)
    pred: dict[int, set[int]] = defaultdict(set)
    for e in g.edges:
        succ[e.src].add(e.dst)
        pred[e.dst].add(e.src)
    args = {i for i, n in g.nodes.items() if n.kind == "input"}
    alias: dict[int, int] = {}
    copies: dict[int, int] = {}
    for ops in groups.values():
        scan = _Scan(ops, succ, pred, reach, args)
        i = 0
        while i < len(ops):
            p, n = scan.run(i, longest)
            for k in range(1, n):
                alias.update((m.id, f.id) for m, f in zip(ops[i + k * p: i + k * p + p],
                                                          ops[i: i + p]))
            copies.update((f.id, n) for f in ops[i: i + p] if n > 1)
            i += p * n if n > 1 else 1
    if not alias:
        return g

    def make(key: int, members: list[Node]) -> Node:
        first = g.nodes[key]
        return replace(first, detail=first.detail + (f"×{copies[key]} leaves",),
                       count=sum(m.count for m in members))

    out = contract(g, lambda n: alias.get(n.id, n.id if n.id in copies else None), make)
    folded = {i for i, n in out.nodes.items() if n.detail and n.detail[-1].endswith(" leaves")
              and n.kind == "op"}
    out.edges = [replace(e, label="") if e.src in folded and e.dst in folded else e
                 for e in out.edges]
    return out


class _Scan:
    """One group's operations in order, for `lanes`: their titles, where each one's
    results go (positions in the group), and the runs of equal blocks counted so far."""

    def __init__(self, ops: list[Node], succ: dict, pred: dict, reach: dict, args: set):
        self.ops, self.succ, self.pred, self.reach, self.args = ops, succ, pred, reach, args
        self.titles = [o.title for o in ops]
        at = {o.id: k for k, o in enumerate(ops)}
        self.to = [[at[j] for j in succ[o.id] if j in at] for o in ops]
        self.copies: dict[tuple[int, int, bool], int] = {}    # (start, period, summed)

    def run(self, i: int, longest: int) -> tuple[int, int]:
        """(period, copies) of the longest run of equal blocks starting at i: independent
        or a sum (`_summed`); never a chain, each block fed by the one before (a layer
        loop)."""
        best = (1, 1)
        for p in range(1, min(longest, len(self.ops) - i) + 1):
            for summed in (False, True):
                n = self._count(i, p, summed)
                if n > 1 and p * n > best[0] * best[1] and \
                        (self._summed(i, p, n) if summed else self._independent(i, p, n)):
                    best = (p, n)
        return best

    def _count(self, i: int, p: int, summed: bool) -> int:
        """How many equal blocks of `p` follow on from i, each not fed by the one before
        (`summed`: but through its running total); counted once per start and period (a
        run from i is one block more than the run from i + p), so scanning every start
        costs linear time, not quadratic."""
        chain = []
        while (i, p, summed) not in self.copies:
            if not (self._totalled(i, p) if summed else self._copied(i, p)):
                self.copies[i, p, summed] = 1
                break
            chain.append(i)
            i += p
        n = self.copies[i, p, summed]
        for start in reversed(chain):
            n += 1
            self.copies[start, p, summed] = n
        return n

    def _copied(self, i: int, p: int) -> bool:
        """Whether the block at i is followed by an equal one it does not feed."""
        return self.titles[i + p: i + 2 * p] == self.titles[i: i + p] and not self._feeds(i, p)

    def _total(self, start: int, p: int) -> int | None:
        """The position in its block of the running total the block at `start` passes
        to the next, if that is all it passes on: one edge, to the same position."""
        links = [(q, t) for q in range(start, start + p) for t in self.to[q]
                 if start + p <= t < start + 2 * p]
        if len(links) == 1 and links[0][1] - links[0][0] == p:
            return links[0][0] - start
        return None

    def _totalled(self, i: int, p: int) -> bool:
        """Whether the block at i passes only its running total to an equal one (the
        total's own operation may differ by its constant: a sum starts at `0 + x`)."""
        j = self._total(i, p)
        if j is None:
            return False
        a, b = self.titles[i: i + p], self.titles[i + p: i + 2 * p]
        return len(b) == p and a[:j] + a[j + 1:] == b[:j] + b[j + 1:] \
            and a[j].split(" · ")[0] == b[j].split(" · ")[0]

    def _summed(self, i: int, p: int, n: int) -> bool:
        """Blocks joined only by one running total (the same position in each; every
        total but the last used by the next alone), each working on leaves of its own
        before adding: arguments, none shared (not `q * k * v`, terms multiplied as
        they come, nor the three terms of `x`'s gradient through `x @ wq`, `x @ wk`,
        `x @ wv`, each made from the step's values; so no block is fed by another)."""
        j = self._total(i, p)
        if p < 2 or any(self._total(i + k * p, p) != j for k in range(n - 1)):
            return False
        run = {o.id for o in self.ops[i: i + n * p]}
        if any(self.succ[self.ops[i + k * p + j].id] != {self.ops[i + (k + 1) * p + j].id}
               for k in range(n - 1)):
            return False
        leaves = [{s for o in self.ops[i + k * p: i + k * p + p] for s in self.pred[o.id]
                   if s not in run} for k in range(n)]
        return all(mine and mine <= self.args for mine in leaves) and \
            len(set().union(*leaves)) == sum(map(len, leaves))

    def _feeds(self, start: int, p: int) -> bool:
        """Whether the block at `start` (p long) feeds the one after it."""
        end = start + 2 * p
        return any(start + p <= t < end for q in range(start, start + p) for t in self.to[q])

    def _independent(self, i: int, p: int, n: int) -> bool:
        """No edge between the blocks, and each reaches results no other block reaches.
        The results first, block by block: two blocks of a chain (a backward pass's
        layers) share theirs at once, and a run of fifty is refused after two blocks."""
        seen = 0
        for k in range(n):
            mine = 0
            for o in self.ops[i + k * p: i + k * p + p]:
                mine |= self.reach[o.id]
            if not mine or mine & seen:
                return False
            seen |= mine
        end = i + n * p
        return not any(i <= t < end and (t - i) // p != (q - i) // p
                       for q in range(i, end) for t in self.to[q])


def _outputs_reached(g: Graph) -> dict[int, int]:
    """Per node, the results it flows into (outputs, and values nothing uses: a state
    update that `nnx.jit` writes back), as a bit set."""
    succ: dict[int, list[int]] = defaultdict(list)
    indeg = {i: 0 for i in g.nodes}
    for e in g.edges:
        succ[e.src].append(e.dst)
        indeg[e.dst] += 1
    order, ready = [], [i for i, d in indeg.items() if d == 0]
    while ready:
        i = ready.pop()
        order.append(i)
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    outputs = [i for i, n in g.nodes.items() if n.kind == "output" or not succ[i]]
    reach = {i: 0 for i in g.nodes}
    for k, i in enumerate(outputs):
        reach[i] = 1 << k
    for i in reversed(order):
        for j in succ[i]:
            reach[i] |= reach[j]
    return reach


GROUPINGS = ("line", "function", "phase")


def _backward(g: Graph, n: Node) -> bool:
    """Whether `n` is drawn in a backward pass: its own, or its group's."""
    return n.backward or (n.cluster in g.clusters and g.clusters[n.cluster].backward)


def _after_backward(g: Graph) -> set[int]:
    """Forward-pass nodes that use a backward pass's results (an optimizer's update in a
    train step): grouped with the forward pass they would close a cycle."""
    succ: dict[int, list[int]] = defaultdict(list)
    for e in g.edges:
        succ[e.src].append(e.dst)

    seen: set[int] = set()
    todo = [i for i, n in g.nodes.items() if _backward(g, n)]
    while todo:
        for j in succ[todo.pop()]:
            if j not in seen:
                seen.add(j)
                todo.append(j)
    return {i for i in seen if not _backward(g, g.nodes[i])}


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
        title = (_short(source, 32) if source else where) or k[-1]
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
        paths = ["" if k[1] == _CAPTURED else _leaf_path(m.title[len(k[1]):] or m.title)
                 for m in members]
        shapes = [m.detail[0] if m.detail else "" for m in members]
        # leaves that differ only in a list index (one per layer) share a line: [i] ×16
        same = [re.sub(r"\[\d+\]", "[i]", p) for p in paths]
        count = Counter(zip(same, shapes))
        lines: dict[tuple[str, str], str] = {}
        for path, pattern, shape in zip(paths, same, shapes):
            c = count[pattern, shape]
            lines.setdefault((pattern, shape), _short(
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


def _moved(changes: list[str]) -> str:
    """One edge's reshard text for the edges it stands for."""
    return changes[0] if len(changes) == 1 else f"{len(changes)} reshards" if changes else ""


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
               if n.kind in ("op", "call", "group") and not _backward(g, n)}
    into: dict[int, list[Edge]] = defaultdict(list)
    edges = []
    for e in g.edges:
        if e.src in forward and _backward(g, g.nodes[e.dst]):
            into[e.dst].append(e)
        else:
            edges.append(e)
    for dst, es in into.items():
        last = max(es, key=lambda e: e.src)
        edges.append(Edge(last.src, dst, last.label if len(es) == 1 else
                          f"{len(es)} residuals",
                          _moved(list(dict.fromkeys(e.reshard for e in es if e.reshard))),
                          last.value if len(es) == 1 else None))
    # a value only the backward pass reads (a relu's mask), its edge bundled into another's,
    # says where it goes: it would look unused
    unseen = {e.src for es in into.values() for e in es} - {e.src for e in edges}
    nodes = {i: replace(n, detail=n.detail + (BACKWARD_ONLY,)) if i in unseen else n
             for i, n in g.nodes.items()}
    return replace(g, nodes=nodes, edges=edges)


BACKWARD_ONLY = "→ backward pass"
