"""The fold and the automatic depth's rules on graphs built by hand, without a JAX trace:
`graph_of("x→layer×3→y")` or a `Hand` of nodes, calls and edges, run through the real
`repeats.fold`, `passes.run` and `auto_depth.choose` (the kernel tests draw real models)."""
from __future__ import annotations

import re
from typing import NamedTuple

from jaxmagic.graph import auto_depth, passes, repeats
from jaxmagic.graph.model import Cluster, Edge, Graph, Node, ancestors


class Hand:
    """A graph put together node by node; `graph()` counts each call's equations."""

    def __init__(self) -> None:
        self.nodes: dict[int, Node] = {}
        self.edges: list[Edge] = []
        self.clusters: dict[int, Cluster] = {}
        self.series: dict[int, tuple[int, int]] = {}

    def op(self, title: str, cluster: int | None = None) -> int:
        i = len(self.nodes)
        prim = title.partition(" · ")[0]
        self.nodes[i] = Node(i, "op", title, cluster=cluster, primitive=prim, eqns=(i,),
                             signature=f"{prim}:f32[4]")
        return i

    def call(self, title: str, parent: int | None = None, kind: str = "scope",
             **kw) -> int:
        i = len(self.clusters)
        level = self.clusters[parent].level + 1 if parent is not None else 1
        self.clusters[i] = Cluster(i, kind, title, (), parent, level, label=title, **kw)
        return i

    def ops(self, n: int, cluster: int | None, title: str = "tanh") -> list[int]:
        """`n` operations in a chain inside `cluster`."""
        made = [self.op(title, cluster) for _ in range(n)]
        for a, b in zip(made, made[1:]):
            self.edge(a, b)
        return made

    def edge(self, src: int, dst: int) -> None:
        self.edges.append(Edge(src, dst, "f32[4]"))

    def repeat(self, calls: list[int]) -> None:
        """`calls`, siblings of one structure, as a series (what `build` finds)."""
        for k, c in enumerate(calls):
            self.clusters[c].signature = "same"
            self.series[c] = (calls[0], k)
        self.clusters[calls[0]].repeat = len(calls)

    def graph(self) -> Graph:
        for c in self.clusters.values():
            c.num_equations = sum(c.id in ancestors(self, n.cluster)
                                  for n in self.nodes.values() if n.kind == "op")
        ops = sum(n.kind == "op" for n in self.nodes.values())
        return Graph(self.nodes, self.edges, self.clusters, ops, series=self.series)


def graph_of(spec: str) -> Graph:
    """`x→layer×3→y; x→z`: statements of chains; a bare name is an operation at the top
    (one node however often it is named), `name×N` N calls of `name` in a row, each a
    `dot → tanh` fed by the one before, recorded as a series."""
    h, named = Hand(), {}
    for chain in spec.split(";"):
        last = None
        for item in (x.strip() for x in chain.split("→")):
            m = re.fullmatch(r"(\w+)×(\d+)", item)
            if m is None:
                first = end = named.setdefault(item, None) or h.op(item)
                named[item] = first
            else:
                calls = [h.call(f"{m[1]} #{k}") for k in range(int(m[2]))]
                bodies = [h.ops(2, c, "dot_general") for c in calls]
                for (_, out), (into, _) in zip(bodies, bodies[1:]):
                    h.edge(out, into)
                h.repeat(calls)
                first, end = bodies[0][0], bodies[-1][-1]
            if last is not None:
                h.edge(last, first)
            last = end
    return h.graph()


def titles(g: Graph) -> list[str]:
    return sorted(c.title for c in g.clusters.values())


def _acyclic(g: Graph) -> bool:
    succ: dict[int, list[int]] = {i: [] for i in g.nodes}
    for e in g.edges:
        succ[e.src].append(e.dst)
    state: dict[int, int] = {}

    def visit(i: int) -> bool:
        state[i] = 1
        for j in succ[i]:
            if state.get(j) == 1 or state.get(j) is None and not visit(j):
                return False
        state[i] = 2
        return True

    return all(state.get(i) or visit(i) for i in g.nodes)


# ---- the fold -------------------------------------------------------------------------

def test_a_series_is_drawn_once_as_its_first_call_standing_for_all():
    g = graph_of("x→layer×3→y")
    folded = repeats.fold(g)
    (layer,) = folded.clusters.values()
    assert layer.title == "layer #0 ×3" and layer.num_equations == 6
    inside = [n for n in folded.nodes.values() if n.cluster == layer.id]
    # one repetition's boxes, each keeping every repetition's equations
    assert [n.title for n in inside] == ["dot_general", "dot_general"]
    assert sorted(e for n in inside for e in n.eqns) == \
        sorted(e for n in g.nodes.values() if n.cluster is not None for e in n.eqns)
    assert folded.series == {} and repeats.fold(folded) is folded     # applied once


def test_the_fold_drops_the_edges_from_one_call_to_the_next_and_stays_acyclic():
    folded = repeats.fold(graph_of("x→layer×4→y"))
    by_title = {n.title: n.id for n in folded.nodes.values() if n.cluster is None}
    inside = [n.id for n in folded.nodes.values() if n.cluster is not None]
    ends = {(e.src, e.dst) for e in folded.edges}
    assert (by_title["x"], inside[0]) in ends and (inside[-1], by_title["y"]) in ends
    assert _acyclic(folded) and len(folded.edges) == 3    # x → dot → dot → y


def test_a_constant_that_changes_each_repetition_reads_first_to_last():
    h = Hand()
    calls = [h.call(f"step #{k}") for k in range(3)]
    for k, c in enumerate(calls):
        h.op(f"mul · {k + 1}", c)
    h.repeat(calls)
    (node,) = repeats.fold(h.graph()).nodes.values()
    assert node.title == "mul · 1…3" and node.eqns == (0, 1, 2)


def test_a_backward_series_of_the_users_calls_says_so_in_its_title():
    c = Cluster(0, "scope", "Block #0", (), None, 1, label="Block", repeat=4, backward=True)
    assert repeats.series_title(c) == "Block ×4 · backward"
    assert repeats.series_title(Cluster(1, "scan", "scan ×8", (), None, 1)) == "scan ×8"


def test_the_view_passes_run_in_order_on_a_graph_built_by_hand():
    """Collapse closes what is not opened; `unroot` then drops the traced function's own
    box (a cluster at level 0), so its calls stand at the top."""
    h = Hand()
    root = h.call("step")
    h.clusters[root].level = 0
    net = h.call("Net", root)
    h.ops(3, net)
    g = passes.run(h.graph(), "folded")
    closed = passes.run(g, "view", passes.ViewOptions(opened={root}))
    assert [n.title for n in closed.nodes.values()] == ["Net"] and closed.clusters == {}
    opened = passes.run(g, "view", passes.ViewOptions(opened={root, net}))
    assert titles(opened) == ["Net"] and opened.clusters[net].parent is None


# ---- the automatic depth --------------------------------------------------------------

class Size(NamedTuple):
    width_pt: float
    ranks: int


def by_nodes(g: Graph) -> Size:
    """A drawing 10 pt wide per node, one rank deep: the budget counts boxes."""
    return Size(10.0 * len(g.nodes), 1)


def draw(g: Graph):
    return lambda opened, by_line, whole: passes.run(
        g, "view", passes.ViewOptions(opened, by_line, whole))


def choose(g: Graph, boxes: int) -> set[str]:
    folded = passes.run(g, "folded")
    opened, _, _ = auto_depth.choose(folded, draw(folded), 10.0 * boxes, by_nodes)
    return {folded.clusters[c].title for c in opened}


def test_the_models_path_to_its_repeated_block_opens_before_a_bigger_library_step():
    """The optimizer (10 equations) would fit opened alone, but the model (6) goes first,
    as far as its repeated block, and the library step waits until that block is drawn:
    opened then, it no longer fits."""
    h = Hand()
    net = h.call("Net")
    blocks = [h.call(f"Block #{k}", net) for k in range(3)]
    for b in blocks:
        h.ops(2, b)
    h.repeat(blocks)
    h.ops(10, h.call("optax.update", library=True))
    g = h.graph()
    assert choose(g, boxes=11) == {"Net", "Block #0 ×3"}
    assert choose(g, boxes=12) == {"Net", "Block #0 ×3", "optax.update"}


def test_a_library_step_waits_for_the_models_repeated_block_though_it_fits():
    """The encoder around the model's block is too big to open; the optimizer, opened,
    would fit, and stays closed until the block is drawn (every group around it open):
    the picture is of the model, not of its optimizer."""
    h = Hand()
    net = h.call("Net")
    encoder = h.call("Encoder", net)
    h.ops(4, encoder)
    blocks = [h.call(f"Block #{k}", encoder) for k in range(3)]
    for b in blocks:
        h.ops(5, b)
    h.repeat(blocks)
    h.ops(1, h.call("optax.update", library=True))
    assert choose(h.graph(), boxes=2) == {"Net"}
    assert choose(h.graph(), boxes=3) == {"Net", "Encoder", "optax.update"}


def test_jax_own_functions_stay_closed_whatever_the_room():
    h = Hand()
    h.ops(3, h.call("custom_jvp: relu", kind="custom_jvp"))
    h.ops(3, h.call("f"))
    assert choose(h.graph(), boxes=1000) == {"f"}


def test_a_backward_group_never_opens_before_its_forward_twin():
    """The backward pass (3 equations) would fit opened, its forward (10) does not: both
    stay closed."""
    h = Hand()
    h.ops(10, h.call("Net"))
    h.ops(3, h.call("Net · backward", backward=True))
    h.clusters[1].label = "Net"
    g = h.graph()
    assert choose(g, boxes=6) == set()
    assert choose(g, boxes=14) == {"Net", "Net · backward"}


def test_a_drawing_taller_than_a_reader_follows_does_not_fit():
    assert auto_depth.fits(100.0, auto_depth.MAX_RANKS, 100.0)
    assert not auto_depth.fits(100.0, auto_depth.MAX_RANKS + 1, 1000.0)
    assert not auto_depth.fits(100.5, 1, 100.0)
