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


# ---- a library's way to the user's code ------------------------------------------------

def sampler(top_ops: int = 6, body_ops: int = 30, nested: bool = False,
            library: bool = False) -> Hand:
    """A step as a sampler's: `top_ops` equations at the user's lines (the library's,
    at none, where `library`: the traced function is the library's), then a `while`
    whose body holds `body_ops` more, three of JAX's `jit: _where` and (inside a second
    `while` where `nested`) the user's `model`, three equations at the user's lines."""
    h = Hand()
    for i in h.ops(top_ops, None, "add"):
        h.nodes[i].where = "" if library else f"step:{i}"
    loop = h.call("while", kind="while")
    h.ops(2, h.call("cond", loop, kind="while_cond"), "lt")
    body = h.call("body", loop, kind="while_body")
    h.ops(body_ops, body, "mul")
    for _ in range(3):
        h.ops(1, h.call("jit: _where", body, kind="jit"), "select_n")
    if nested:
        inner = h.call("while", body, kind="while")
        h.ops(2, h.call("cond", inner, kind="while_cond"), "lt")
        body = h.call("body", inner, kind="while_body")
        h.ops(4, body, "sub")
    for i in h.ops(3, h.call("model", body)):
        h.nodes[i].where = f"model:{i}"
    return h


def test_a_library_loop_opens_as_the_way_to_the_users_code_the_rest_one_box():
    """The body's 30 equations and its `jit: _where`s, drawn one by one or by line, are
    wider than the budget; opened as the way, they are one box beside the user's `model`,
    which is drawn (one box less, and it is not)."""
    g = sampler().graph()
    assert choose(g, boxes=8) == {"while"}
    assert choose(g, boxes=9) == {"while", "body"}
    folded = passes.run(g, "folded")
    view = auto_depth.choose(folded, draw(folded), 90.0, by_nodes)
    drawn = draw(folded)(*view)
    body = [n for n in drawn.nodes.values() if n.cluster == 2]
    assert sorted((n.kind, n.title) for n in body) == [("call", "model"),
                                                       ("group", "library code")]
    assert next(n for n in body if n.kind == "group").count == 33


def test_a_library_function_traced_draws_its_own_work_as_one_box_for_the_way_in():
    """The traced function is the library's (its 30 equations at the top leave no room
    to open its loop): its own work is one box, and its loop opens as far as the model."""
    g = sampler(top_ops=30, library=True).graph()
    folded = passes.run(g, "folded")
    opened, _, whole = auto_depth.choose(folded, draw(folded), 100.0, by_nodes)
    assert None in whole and {"while", "body"} <= {folded.clusters[c].title for c in opened}
    drawn = draw(folded)(opened, frozenset(), whole)
    assert [n.title for n in drawn.nodes.values() if n.cluster is None] == ["library code"]


def test_nested_loops_that_only_pass_the_way_on_are_one_group_named_by_the_loops():
    """`while › body › while › body › model`: the outer body (its work one box) and the
    inner `while` hold only the way on; drawn as one group, `while › while`, with one
    box of the library's work, around the body that calls the model."""
    g = passes.run(sampler(nested=True).graph(), "folded")
    drawn = passes.run(g, "view", passes.ViewOptions(opened={0, 2, 6, 8}, whole={2, 8}))
    assert sorted(c.title for c in drawn.clusters.values()) == ["body", "while › while"]
    outer = next(c.id for c in drawn.clusters.values() if c.title == "while › while")
    assert [n.title for n in drawn.nodes.values() if n.cluster == outer] == ["library code"]
    inner = [n.title for n in drawn.nodes.values() if n.cluster == 8]
    assert sorted(inner) == ["library code", "model"]


def test_a_click_on_a_loops_box_shows_the_librarys_work_of_every_level_it_was_made_of():
    """In the explorer, the box `while › while` was drawn with opens: the outer body's
    equations one by one and both loops' tests, the inner body (a group of its own,
    around the model) still one box."""
    from jaxmagic.render.explore import Exploration
    from jaxmagic.render.jaxpr import JaxprView

    view = JaxprView(sampler(nested=True).graph(), func_name="step", depth=0,
                     expand=["=while/body/while/body"],
                     boxes=["=while/body", "=while/body/while/body"])
    assert view.graph.merged == {2, 6}
    x = Exploration(view)
    box = next(n for n in x.graph.nodes.values() if n.kind == "group" and n.cluster == 0)
    x.toggle(f"n{box.id}")
    drawn = [(n.kind, n.title, n.cluster) for n in x.graph.nodes.values()]
    assert drawn.count(("op", "mul", 2)) == 30 and ("call", "cond", 6) in drawn
    assert ("group", "library code", 8) in drawn and ("call", "model", 8) in drawn


def test_a_box_never_both_feeds_a_call_and_is_fed_by_it():
    """A step's own equations before and after the model it calls, boxed (`whole`) or
    by line: two boxes, one each side of the model, not one box in a cycle with it."""
    h = Hand()
    step = h.call("step")
    before, after = h.ops(2, step, "add"), h.ops(2, step, "mul")
    net = h.call("Net", step)
    inside = h.ops(3, net)
    h.edge(before[-1], inside[0])
    h.edge(inside[-1], after[0])
    g = passes.run(h.graph(), "folded")
    for options in (passes.ViewOptions(opened={step}, whole=frozenset({step})),
                    passes.ViewOptions(opened={step}, by_line=frozenset({step}))):
        drawn = passes.run(g, "view", options)
        boxes = sorted(n.count for n in drawn.nodes.values() if n.kind == "group")
        assert boxes == [2, 2], boxes
        order = {e.src: e.dst for e in drawn.edges}
        titles = [drawn.nodes[i].kind for i in (order[min(order)], order[order[min(order)]])]
        assert titles == ["call", "group"], titles
