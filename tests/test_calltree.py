"""The call tree on real models: grouping by call, backward groups, folded repeats, the
automatic depth and record inputs (real JAX, Flax NNX, Equinox)."""
import re

import jax
import jax.numpy as jnp
import pytest

import jaxmagic
from jaxmagic.graph import auto_depth, collapse, ends, lanes, repeats
from jaxmagic.graph import model as G
from jaxmagic.render import size as S
from jaxmagic.render.jaxpr import _text_px


def block(p, x):
    return jnp.tanh(x @ p["w"]) + x


def model(params, x):
    for p in params:
        x = block(p, x)
    return jnp.sum(x ** 2)


def layers(n, d=8):
    return [{"w": jnp.full((d, d), 0.1 * i)} for i in range(n)], jnp.ones((4, d))


def titles(g):
    return [c.title for c in g.clusters.values()]


def test_each_call_is_its_own_group_under_the_traced_function():
    params, x = layers(3)
    g = jaxmagic.trace(model, params, x).full
    assert titles(g) == ["model", "block #0", "block #1", "block #2"]
    top = g.clusters[0]
    assert top.level == 0          # the traced function itself is context, not a level
    assert all(g.clusters[i].parent == top.id for i in (1, 2, 3))
    tanh = [n for n in g.nodes.values() if n.primitive == "tanh"]
    assert [g.clusters[n.cluster].title for n in tanh] == ["block #0", "block #1", "block #2"]


def test_nnx_and_equinox_module_calls_are_groups():
    nnx = pytest.importorskip("flax.nnx")
    eqx = pytest.importorskip("equinox")

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.l1 = nnx.Linear(4, 8, rngs=rngs)
            self.l2 = nnx.Linear(8, 2, rngs=rngs)

        def __call__(self, x):
            return self.l2(nnx.relu(self.l1(x)))

    graphdef, state = nnx.split(MLP(nnx.Rngs(0)))

    def forward(state, x):
        return nnx.merge(graphdef, state)(x)

    g = jaxmagic.trace(forward, state, jnp.ones((3, 4))).full
    assert {"MLP", "Linear #0", "Linear #1"} <= set(titles(g))

    emlp = eqx.nn.MLP(4, 2, 8, depth=2, key=jax.random.key(0))
    arrays, static = eqx.partition(emlp, eqx.is_array)

    def eforward(arrays, x):
        return eqx.combine(arrays, static)(x)

    g = jaxmagic.trace(eforward, arrays, jnp.ones(4)).full
    # the hidden layers, Linear then the activation, fold as one series; the last stays
    assert "MLP" in titles(g) and {"Linear", "Linear → relu"} <= set(titles(g))
    assert not any(t.startswith("_") for t in titles(g))      # no _VmapWrapper groups


def _cluster_graph_is_acyclic(g):
    def top(n):
        c = n.cluster
        while c is not None and g.clusters[c].parent is not None and \
                g.clusters[g.clusters[c].parent].level > 0:
            c = g.clusters[c].parent
        return c if c is not None else ("node", n.id)

    edges = {(top(g.nodes[e.src]), top(g.nodes[e.dst])) for e in g.edges}
    edges = {(a, b) for a, b in edges if a != b}
    succ = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)
    seen = {}

    def visit(v):     # depth-first: a grey node seen again is a cycle
        seen[v] = "grey"
        for w in succ.get(v, ()):
            if seen.get(w) == "grey" or (w not in seen and not visit(w)):
                return False
        seen[v] = "black"
        return True

    return all(visit(v) for v in list(succ) if v not in seen)


def test_backward_pass_of_a_call_is_its_own_group_and_the_groups_are_acyclic():
    params, x = layers(3)
    g = jaxmagic.trace(jax.grad(model), params, x).full
    back = [c for c in g.clusters.values() if c.backward]
    assert {c.title for c in back} >= {"model · backward", "block #1 · backward"}
    for c in back:
        ops = [n for n in g.nodes.values() if n.cluster == c.id and n.kind == "op"]
        assert all(n.backward for n in ops)
    assert _cluster_graph_is_acyclic(g)


def test_consecutive_identical_calls_fold_forward_and_backward_separately():
    params, x = layers(16)
    view = jaxmagic.trace(jax.grad(model), params, x)
    folded = repeats.fold(view.full)
    names = titles(folded)
    assert "block ×16" in names
    assert any(re.fullmatch(r"block ×1[56] · backward", t) for t in names)
    assert not any("#7" in t for t in names)
    # the fold keeps every equation (their indices add up), each box counting one
    # repetition's
    assert all(n.count == 1 for n in folded.nodes.values() if n.kind == "op")
    eqns = sorted(i for n in folded.nodes.values() for i in n.eqns)
    assert eqns == sorted(i for n in view.full.nodes.values() for i in n.eqns)
    assert _cluster_graph_is_acyclic(collapse.collapse(view.full, None))


def test_calls_with_different_shapes_do_not_fold():
    params = [{"w": jnp.ones((8, 16))}, {"w": jnp.ones((16, 4))}]

    def net(params, x):
        return dense(params[1], dense(params[0], x))

    def dense(p, x):
        return jnp.tanh(x @ p["w"])

    g = repeats.fold(jaxmagic.trace(net, params, jnp.ones((2, 8))).full)
    assert titles(g) == ["net", "dense #0", "dense #1"]


def test_auto_depth_opens_what_fits_and_keeps_text_legible():
    params, x = layers(16)
    view = jaxmagic.trace(jax.grad(model), params, x)
    assert view.depth == "auto"
    g = view.graph
    assert len(g.nodes) > 8                       # not one opaque box
    assert any("block ×16" in t for t in titles(g))     # the repeated layer, opened
    assert _text_px(view._drawn.svg) >= S.MIN_TEXT_PX
    assert len(view.configure(depth=0).graph.nodes) < len(g.nodes)


def test_many_leaves_are_one_record_node():
    params, x = layers(16)
    g = jaxmagic.trace(model, params, x).configure(depth=None).graph
    inputs = [n for n in g.nodes.values() if n.kind == "input"]
    record = [n for n in inputs if n.primitive == "record"]
    assert len(record) == 1 and record[0].title == "params · 16 leaves"
    assert record[0].detail == ("[i].w f32[8,8] ×16",)
    long = ends.records(jaxmagic.trace(lambda p: [q["w"] * 2 for q in p],
                                    [{"w": jnp.ones(i + 1)} for i in range(12)]).full)
    (rec,) = [n for n in long.nodes.values() if n.kind == "input"]
    assert rec.detail[-1] == "+6 more"


def test_an_argument_of_two_leaves_is_a_record_and_a_single_leaf_is_not():
    def loss(w, batch):
        return jnp.sum((batch["image"] @ w - batch["label"]) ** 2)

    batch = {"image": jnp.ones((4, 3)), "label": jnp.zeros(4)}
    g = jaxmagic.trace(loss, jnp.ones(3), batch).configure(depth=0).graph
    inputs = {n.title: n for n in g.nodes.values() if n.kind == "input"}
    assert set(inputs) == {"w", "batch · 2 leaves"}
    assert inputs["batch · 2 leaves"].detail == ("image f32[4,3]", "label f32[4]")
    assert inputs["w"].primitive != "record"


def test_group_by_source_line_is_an_option():
    params, x = layers(4)
    view = jaxmagic.trace(jax.grad(model), params, x).configure(group="line")
    assert view.graph.grouping == "line"


def test_an_input_feeding_many_nodes_becomes_stubs():
    def spread(w, x):
        return jnp.sin(x * w) + jnp.cos(x + w) + jnp.tanh(x - w) + jnp.exp(w)

    g = jaxmagic.trace(spread, jnp.ones(3), jnp.ones(3)).configure(depth=None).graph
    (w,) = [n for n in g.nodes.values() if n.kind == "input" and n.title == "w"]
    assert not any(e.src == w.id for e in g.edges)          # drawn once, at the side
    stubs = [n for n in g.nodes.values() if n.kind == "stub"]
    assert len(stubs) >= 4 and {s.title for s in stubs} == {"w"}
    assert all(any(e.src == s.id for e in g.edges) for s in stubs)
    x = next(n for n in g.nodes.values() if n.title == "x")
    assert sum(e.src == x.id for e in g.edges) == 3            # below the hub threshold


def test_a_stub_is_drawn_as_narrow_as_its_name_and_estimated_so():
    """A stub names an argument: at dot's default 0.75 in a `state` stub beside each of
    ResNet18's blocks took the width its blocks needed to open."""
    from jaxmagic.render import dot as D
    from jaxmagic.render import layout

    def spread(state, x):
        return jnp.sin(x * state) + jnp.cos(x + state) + jnp.tanh(x - state) + state

    view = jaxmagic.trace(spread, jnp.ones(3), jnp.ones(3)).configure(depth=None)
    stub = next(n for n in view.graph.nodes.values() if n.kind == "stub")
    svg = layout.render(view.dot(), 30, "dot").svg.decode()
    drawn = [2 * float(rx) for rx in re.findall(r'<ellipse[^>]*rx="([\d.]+)"', svg)]
    assert len(drawn) >= 4 and max(drawn) < 45
    assert all(abs(D.node_width(stub) - w) < 0.15 * w for w in drawn)


def test_a_call_gets_no_stub_of_the_parameters_it_reads():
    """A module reads the model it is part of: a `train_state` stub beside each of
    Haiku ResNet50's sixteen blocks pushed the model's line sideways at every layer, and
    its picture could not open to its blocks. Many-leaf arguments are named at the ops
    that read them; a one-array argument that several calls read keeps its stubs."""
    hk = pytest.importorskip("haiku")
    net = hk.without_apply_rng(hk.transform(lambda x: hk.nets.MLP([8, 8, 8, 8, 2])(x)))
    x = jnp.ones((4, 3))
    params = net.init(jax.random.PRNGKey(0), x)
    view = jaxmagic.trace(jax.grad(lambda p, x: jnp.mean(net.apply(p, x) ** 2)), params, x)

    def stubbed(g):
        return {g.nodes[e.dst].kind for e in g.edges if g.nodes[e.src].kind == "stub"}

    closed = view.configure(depth=2).graph
    assert len([n for n in closed.nodes.values() if n.kind == "call"]) >= 4
    assert "call" not in stubbed(closed) and stubbed(view.configure(depth=None).graph) == {"op"}
    shared = jaxmagic.trace(lambda w, x: sine(w, x) + cosine(w, x) + tanh(w, x) + exp(w, x),
                            jnp.ones((8, 8)), jnp.ones((4, 8)))
    assert stubbed(shared.configure(depth=0).graph) == {"call"}


def sine(w, x):
    return jnp.sin(x @ w)


def cosine(w, x):
    return jnp.cos(x @ w)


def tanh(w, x):
    return jnp.tanh(x @ w)


def exp(w, x):
    return jnp.exp(x @ w)


def test_haiku_module_calls_are_groups_named_as_haiku_names_them():
    hk = pytest.importorskip("haiku")

    def f(x):
        return hk.nets.MLP([8, 8, 2])(x)

    net = hk.without_apply_rng(hk.transform(f))
    params = net.init(jax.random.key(0), jnp.ones((3, 4)))
    g = jaxmagic.trace(net.apply, params, jnp.ones((3, 4))).full
    names = titles(g)
    assert {"mlp", "linear_0", "linear_1", "linear_2"} <= set(names)
    assert "Linear" not in names        # Haiku's scope and the call are one group
    dots = [n for n in g.nodes.values() if n.primitive == "dot_general"]
    assert sorted(g.clusters[n.cluster].title for n in dots) == \
        ["linear_0", "linear_1", "linear_2"]


def test_per_leaf_copies_of_an_optimizer_update_fold_as_leaves():
    optax = pytest.importorskip("optax")
    opt = optax.adamw(1e-3)
    params = {"w": jnp.ones((8, 8)), "b": jnp.zeros(8), "head": {"w": jnp.ones((8, 2))}}
    state = opt.init(params)
    view = jaxmagic.trace(opt.update, params, state, params)
    folded = lanes.lanes(repeats.fold(view.full))
    leafy = [n for n in folded.nodes.values() if n.detail and n.detail[-1] == "×3 leaves"]
    assert len(leafy) >= 8 and {"sqrt", "integer_pow"} <= {n.primitive for n in leafy}
    assert len(folded.nodes) < len(view.full.nodes) - 2 * len(leafy) + 1
    # every equation is still counted once
    assert sorted(i for n in folded.nodes.values() for i in n.eqns) == \
        sorted(i for n in view.full.nodes.values() for i in n.eqns)
    g = view.graph      # the default view: its three arguments one record, a line each
    records = {n.title: n for n in g.nodes.values() if n.primitive == "record"}
    assert records["arguments"].detail == ("updates · 3 leaves", "state · 7 leaves",
                                           "params · 3 leaves")
    assert {"out[0] · 3 leaves", "out[1] · 7 leaves"} <= set(records)    # updates, state


def test_parallel_calls_that_feed_one_result_do_not_fold_as_leaves():
    def qkv(p, x):
        q, k, v = x @ p["q"], x @ p["k"], x @ p["v"]
        return jnp.sum(q * k * v)

    p = {n: jnp.ones((4, 4)) for n in "qkv"}
    g = lanes.lanes(jaxmagic.trace(qkv, p, jnp.ones((2, 4))).full)
    assert not any(n.detail and n.detail[-1].endswith("leaves") for n in g.nodes.values())
    assert sum(n.primitive == "dot_general" for n in g.nodes.values()) == 3


def test_a_call_too_big_to_open_shows_its_lines_not_one_box():
    def big(p, x):
        h = jnp.tanh(x @ p["w1"] + jnp.sin(x) * jnp.cos(x) - jnp.exp(-x) / (1 + x ** 2))
        return jnp.sum(h @ p["w2"] + jnp.log1p(jnp.abs(h)) * jnp.sqrt(jnp.abs(h) + 1))

    def net(params, x):
        return big(params, x)

    p = {"w1": jnp.ones((8, 8)), "w2": jnp.ones((8, 8))}
    view = jaxmagic.trace(net, p, jnp.ones((4, 8)))
    folded = view.folded
    (cid,) = [c.id for c in folded.clusters.values() if c.title == "big"]
    wide = S.estimate(view.view_of(collapse.opened_at(folded, None))).width_pt
    narrow = S.estimate(view.view_of(collapse.opened_at(folded, 0))).width_pt
    opened, by_line, whole = auto_depth.choose(folded, view.view_of, (wide + narrow) / 2,
                                               S.estimate)
    assert cid in opened and cid in by_line
    g = view.view_of(opened, by_line, whole)
    groups = [n for n in g.nodes.values() if n.kind == "group"]
    assert len(groups) == 2 and all(n.cluster == cid for n in groups)
    assert {n.title[:10] for n in groups} == {"h = jnp.ta", "return jnp"}
    assert S.estimate(g).width_pt <= (wide + narrow) / 2


def test_arguments_sit_above_and_results_below_every_group():
    params, x = layers(4)
    view = jaxmagic.trace(jax.grad(model), params, x)
    dot = view.dot()
    ins = [n.id for n in view.graph.nodes.values() if n.kind == "input"]
    assert f"{{rank=source; {'; '.join(f'n{i}' for i in ins)};}}" in dot
    assert "rank=sink" in dot


def test_linen_module_scopes_are_the_module_calls():
    lnn = pytest.importorskip("flax.linen")

    class Net(lnn.Module):
        @lnn.compact
        def __call__(self, x):
            return lnn.Dense(2)(lnn.relu(lnn.Dense(8)(x)))

    net = Net()
    variables = net.init(jax.random.key(0), jnp.ones((3, 4)))
    g = jaxmagic.trace(net.apply, variables, jnp.ones((3, 4))).full
    scopes = {c.title: c for c in g.clusters.values() if c.kind == "scope"}
    assert set(scopes) == {"Net", "Dense_0", "Dense_1"}        # not Dense_0 → Dense
    assert all(c.detail == () for c in scopes.values())
    assert scopes["Dense_0"].parent == scopes["Net"].id


def test_a_chain_of_one_operation_is_not_folded_as_leaves():
    def chain(x):
        for _ in range(200):
            x = x + 1.0
        return x

    full = jaxmagic.trace(chain, jnp.ones(3)).full
    g = lanes.lanes(full)
    assert sum(n.primitive == "add" for n in g.nodes.values()) == 200
    assert len(g.nodes) == len(full.nodes)


def _leafy(g):
    return {n.primitive: n.detail[-1] for n in g.nodes.values()
            if n.detail and n.detail[-1].endswith(" leaves")}


def test_a_weight_decay_summed_over_the_leaves_folds_as_leaves():
    """Flax's imagenet loss: `sum(jnp.sum(x ** 2) for x in leaves if x.ndim > 1)`, a
    running total over the parameter leaves, under value_and_grad."""
    lnn = pytest.importorskip("flax.linen")

    class CNN(lnn.Module):
        @lnn.compact
        def __call__(self, x):
            for f in (4, 8, 8):
                x = lnn.relu(lnn.Conv(f, (3, 3))(x))
            return lnn.Dense(3)(x.mean((1, 2)))

    net = CNN()
    params = net.init(jax.random.key(0), jnp.ones((2, 8, 8, 1)))["params"]

    def loss_fn(params, x):
        loss = jnp.mean(net.apply({"params": params}, x))
        weight_l2 = sum(jnp.sum(x ** 2) for x in jax.tree.leaves(params) if x.ndim > 1)
        return loss + 1e-4 * 0.5 * weight_l2

    view = jaxmagic.trace(jax.value_and_grad(loss_fn), params, jnp.ones((2, 8, 8, 1)))
    folded = lanes.lanes(repeats.fold(view.full))
    kernels = sum(x.ndim > 1 for x in jax.tree.leaves(params))
    assert kernels == 4
    assert {k: _leafy(folded).get(k) for k in ("integer_pow", "reduce_sum", "add")} == \
        dict.fromkeys(("integer_pow", "reduce_sum", "add"), f"×{kernels} leaves")
    assert sorted(i for n in folded.nodes.values() for i in n.eqns) == \
        sorted(i for n in view.full.nodes.values() for i in n.eqns)


def test_a_running_total_is_no_sum_over_leaves_where_the_blocks_share_or_feed():
    def same_leaf(w):                       # one leaf five times: no leaf of its own
        return sum(jnp.sum(w ** 2) for _ in range(5))

    def fed(ws):                            # each term reads the total so far: a chain
        t = 0.0
        for w in ws:
            t = t + jnp.sum(w * t)
        return t

    def layer(h, w):
        return h @ w

    def through(ws):                        # each block feeds the next through a call
        t, h = 0.0, jnp.ones(3)
        for w in ws:
            h = layer(jnp.tanh(h), w)
            t = t + jnp.sum(h ** 2)
        return t

    ws = [jnp.full((3, 3), 0.1 * i) for i in range(5)]
    for f, args in ((same_leaf, (ws[0],)), (fed, (ws,)), (through, (ws,))):
        full = jaxmagic.trace(f, *args).full
        assert not _leafy(lanes.lanes(full)), f.__name__


def test_a_running_total_whose_blocks_feed_each_other_elsewhere_is_not_folded():
    """Blocks of one group joined, besides their total, through a node of another group
    (block k's term feeds a call whose result block k+1 reads): a chain, not leaves."""
    def graph(through: bool) -> G.Graph:
        nodes = {i: G.Node(i, "input", f"leaf{i}") for i in range(3)}
        edges = []
        for k in range(3):
            pw, rs, add, call = (10 * k + 10 + d for d in range(4))
            nodes.update({i: G.Node(i, "op", op, cluster=c, primitive=op) for i, op, c in
                          ((pw, "integer_pow", 0), (rs, "reduce_sum", 0), (add, "add", 0),
                           (call, "tanh", 1))})
            edges += [G.Edge(k, pw), G.Edge(pw, rs), G.Edge(rs, add), G.Edge(rs, call)]
            if k:
                edges.append(G.Edge(add - 10, add))
                if through:
                    edges.append(G.Edge(call - 10, pw))
        nodes[99] = G.Node(99, "output", "out")
        edges += [G.Edge(32, 99)] + [G.Edge(10 * k + 13, 99) for k in range(3)]
        clusters = {c: G.Cluster(c, "scope", t, (), None, 1) for c, t in ((0, "loss"), (1, "f"))}
        return G.Graph(nodes, edges, clusters, 12)

    summed = ("integer_pow", "reduce_sum", "add")
    assert {k: _leafy(lanes.lanes(graph(through=False))).get(k) for k in summed} == \
        dict.fromkeys(summed, "×3 leaves")
    assert not set(summed) & set(_leafy(lanes.lanes(graph(through=True))))


def test_a_list_of_per_layer_gradients_is_one_record():
    params, x = layers(6)
    params = [dict(p, b=jnp.zeros(8), s=jnp.ones(8)) for p in params]   # 3 leaves a layer
    g = jaxmagic.trace(jax.grad(model), params, x).configure(depth=0).graph
    outs = [n for n in g.nodes.values() if n.kind == "output"]
    assert [n.title for n in outs] == ["out · 18 leaves"]
    assert set(outs[0].detail) == {"[i].w f32[8,8] ×6", "[i].b f32[8] ×6", "[i].s f32[8] ×6"}


# ---- calls the user's code makes into a library -----------------------------------------

TRAIN_STEP = '''
import jax, jax.numpy as jnp, optax
from flax import nnx

class MLP(nnx.Module):
    def __init__(self, rngs):
        self.l1 = nnx.Linear(4, 8, rngs=rngs)
        self.l2 = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
        return self.l2(nnx.relu(self.l1(x)))

model = MLP(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)
metrics = nnx.MultiMetric(loss=nnx.metrics.Average("loss"))
x, y = jnp.ones((16, 4)), jnp.zeros((16, 2))

def loss_fn(model, x, y):
    return optax.l2_loss(model(x), y).mean()

@nnx.jit
def train_step(model, optimizer, metrics, x, y):
    grad_fn = nnx.value_and_grad(loss_fn)
    loss, grads = grad_fn(model, x, y)
    metrics.update(loss=loss)
    optimizer.update(model, grads)
'''


def _groups(g, parent_title):
    """Titles of the groups directly inside the group titled `parent_title`."""
    (parent,) = [c.id for c in g.clusters.values() if c.title == parent_title]
    return {c.title for c in g.clusters.values() if c.parent == parent}


def test_library_calls_in_a_train_step_are_groups_named_as_written(ip):
    pytest.importorskip("flax.nnx")
    pytest.importorskip("optax")
    from conftest import run

    ip.run_cell(TRAIN_STEP)
    r, _ = run(ip, "%jaxpr -o train_step(model, optimizer, metrics, x, y)")
    assert r.success, r.error_in_exec
    g = r.result.full
    assert _groups(g, "train_step") == {"loss_fn", "metrics.update", "optimizer.update"}
    assert "optax.l2_loss" in _groups(g, "loss_fn")
    # nnx.value_and_grad's wrapper calls loss_fn back: drawn as its inside, not a box
    assert not any("grad_fn" in t or "value_and_grad" in t for t in titles(g))
    # the backward pass is one chain of groups: no second `train_step · backward` inside
    assert _groups(g, "train_step · backward") == {"loss_fn · backward"}
    sqrt = [n for n in g.nodes.values() if n.primitive == "sqrt"]
    inside = {g.clusters[n.cluster].title for n in sqrt}
    assert inside == {"optimizer.update"}, inside       # Adam's update, in its group

    drawn = r.result.graph         # the default view: these groups, legible
    assert drawn.grouping == "equation"
    calls = {n.title for n in drawn.nodes.values() if n.kind == "call"}
    assert {"metrics.update", "optimizer.update"} <= calls | set(titles(drawn))
    assert _text_px(r.result._drawn.svg) >= S.MIN_TEXT_PX


LINEN_NET = '''
import flax.linen as lnn
import optax

class Net(lnn.Module):
    @lnn.compact
    def __call__(self, x):
        return lnn.Dense(2)(lnn.relu(lnn.Dense(8)(x)))

net = Net()
params = net.init(jax.random.key(0), jnp.ones((3, 4)))
'''


def test_optax_and_linen_calls_from_a_plain_function(ip):
    pytest.importorskip("optax")
    pytest.importorskip("flax.linen")
    from conftest import run

    ip.run_cell(LINEN_NET + '''
tx = optax.adam(1e-2)
opt_state = tx.init(params)

def loss(params, x):
    return jnp.sum(net.apply(params, x) ** 2)

def step(params, opt_state, x):
    grads = jax.grad(loss)(params, x)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state
''')
    r, _ = run(ip, "%jaxpr -o step(params, opt_state, jnp.ones((3, 4)))")
    assert r.success, r.error_in_exec
    g = r.result.full
    assert {"loss", "tx.update", "optax.apply_updates"} <= _groups(g, "step")
    assert _groups(g, "loss") == {"Net"}        # Linen's apply calls Net back: no box
    assert {"Dense_0", "Dense_1"} <= _groups(g, "Net")


def test_equinox_train_step_groups_without_the_library_wrappers(ip):
    pytest.importorskip("equinox")
    pytest.importorskip("optax")
    from conftest import run

    # as Equinox's MNIST example writes it (docs/examples/mnist.ipynb)
    ip.run_cell('''
import equinox as eqx, optax

class CNN(eqx.Module):
    layers: list

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.layers = [eqx.nn.Conv2d(1, 3, kernel_size=4, key=k1),
                       eqx.nn.MaxPool2d(kernel_size=2), jax.nn.relu, jnp.ravel,
                       eqx.nn.Linear(432, 10, key=k2), jax.nn.log_softmax]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

def loss(model, x, y):
    pred_y = jax.vmap(model)(x)
    return -jnp.mean(jnp.take_along_axis(pred_y, jnp.expand_dims(y, 1), axis=1))

loss = eqx.filter_jit(loss)
model = CNN(jax.random.key(0))
optim = optax.adamw(3e-4)
opt_state = optim.init(eqx.filter(model, eqx.is_array))

@eqx.filter_jit
def make_step(model, opt_state, x, y):
    loss_value, grads = eqx.filter_value_and_grad(loss)(model, x, y)
    updates, opt_state = optim.update(
        grads, opt_state, eqx.filter(model, eqx.is_array)
    )
    model = eqx.apply_updates(model, updates)
    return model, opt_state, loss_value
''')
    r, _ = run(ip, "%jaxpr -o make_step(model, opt_state, jnp.ones((4, 1, 16, 16)), "
                   "jnp.zeros(4, int))")
    assert r.success, r.error_in_exec
    g = r.result.full
    assert _groups(g, "make_step") == {"jit: loss", "optim.update", "eqx.apply_updates"}
    assert not any(t.startswith(("_", "BoundMethod")) for t in titles(g)), titles(g)
    pools = [c for c in g.clusters.values() if c.title.startswith("MaxPool2d")]
    assert len(pools) == 2      # forward and backward, not a MaxPool2d inside a MaxPool2d
    assert all(g.clusters[c.parent].title.startswith("CNN") for c in pools)


def test_the_width_estimate_ranks_what_follows_a_cycle():
    """Lines grouped around a call they feed and read (`lr = schedule(step)` around a
    clip) make a cycle; everything after it was ranked first, one row as wide as the
    whole program, so the automatic depth opened nothing of lm1b's model."""
    nodes = {i: G.Node(i, "input" if i == 0 else "op", f"n{i}") for i in range(5)}
    edges = [G.Edge(0, 1, ""), G.Edge(1, 2, ""), G.Edge(2, 1, ""), G.Edge(2, 3, ""),
             G.Edge(3, 4, "")]
    rank = S._ranks(G.Graph(nodes, edges, {}, 5))
    assert rank[0] < rank[1] < rank[3] < rank[4]
    assert len(set(rank.values())) >= 4


def _run_step(script: str, cwd, *argv) -> list[str]:
    """`script` run by this Python with jaxmagic importable: its printed lines."""
    import os
    import subprocess
    import sys

    env = {**os.environ,
           "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(jaxmagic.__file__)))}
    (cwd / "step.py").write_text(script)
    run = subprocess.run([sys.executable, "step.py", *map(str, argv)], capture_output=True,
                         text=True, env=env, cwd=cwd, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout.strip().splitlines()


_EINOPS_STEP = (
    "import site, sys\n"
    "if len(sys.argv) > 1:\n"
    "    site.addsitedir(sys.argv[1])\n"
    "import jax.numpy as jnp, einops, jaxmagic\n"
    "def patches(x):\n"
    "    return jnp.tanh(einops.rearrange(x, 'b (h p) c -> b h (p c)', p=2))\n"
    "view = jaxmagic.trace(patches, jnp.ones((2, 8, 3)))\n"
    "print(einops.__file__)\n"
    "print(sorted({c.label for c in view.full.clusters.values()}))\n")


@pytest.mark.parametrize("layout", ["pip --target", "editable"])
def test_a_library_from_a_pth_folder_is_grouped_as_in_site_packages(tmp_path, layout):
    """Issue 25.8: the same cell grouped differently by how a library is installed. Einops
    in a folder that a `.pth` file puts first on `sys.path` was taken for the user's code:
    its helpers (`_apply_recipe`, `reshape #0`) drawn as groups instead of one
    `einops.rearrange`. Laid out as `pip install --target` does (the package and its
    metadata in that folder), and as an editable install does (the metadata in
    site-packages, the code in a folder of its own)."""
    import importlib.metadata
    import os
    import shutil

    import einops

    libs, site_dir, user = tmp_path / "libs", tmp_path / "site", tmp_path / "user"
    for d in (libs, site_dir, user):
        d.mkdir()
    shutil.copytree(os.path.dirname(einops.__file__), libs / "einops")
    meta = importlib.metadata.distribution("einops")._path       # its *.dist-info folder
    if layout == "pip --target":
        shutil.copytree(meta, libs / meta.name)
    else:       # metadata without a copy beside it: the code is where the .pth points
        shutil.copytree(meta, site_dir / meta.name)
        (site_dir / meta.name / "top_level.txt").write_text("einops\n")
    (site_dir / "extra.pth").write_text(f"import sys; sys.path.insert(0, {str(libs)!r})\n")
    out = {}
    for where in ("site-packages", "pth"):
        file, labels = _run_step(_EINOPS_STEP, user, *([site_dir] if where == "pth" else []))[-2:]
        assert file.startswith(str(libs)) == (where == "pth"), file
        out[where] = labels
    assert out["pth"] == out["site-packages"] == "['einops.rearrange', 'patches']", out


def test_a_clone_whose_package_name_a_wheel_also_installs_is_the_users_code(tmp_path):
    """dm-haiku's wheel installs a top-level package named `examples`. A clone of Haiku's
    examples run as `examples.step` (`sys.path` holding the clone, as the examples' own
    scripts are run) is the user's code: its functions are groups and its calls into
    Optax are `opt.update` and `optax.apply_updates`; taken for the wheel's, the train
    step's optimizer spilled loose into the top of the picture."""
    import importlib.metadata

    assert "examples" in importlib.metadata.distribution("dm-haiku").read_text(
        "top_level.txt").split(), "the premise: the wheel claims `examples`"
    clone, work = tmp_path / "clone", tmp_path / "work"
    (clone / "examples").mkdir(parents=True)
    work.mkdir()
    (clone / "examples" / "__init__.py").write_text("")
    (clone / "examples" / "step.py").write_text(
        "import jax, jax.numpy as jnp, optax\n"
        "opt = optax.adam(1e-3)\n"
        "def loss(p, x):\n"
        "    return jnp.sum(jnp.tanh(x @ p['w']) ** 2)\n"
        "@jax.jit\n"
        "def update(p, s, x):\n"
        "    g = jax.grad(loss)(p, x)\n"
        "    u, s = opt.update(g, s)\n"
        "    return optax.apply_updates(p, u), s\n")
    lines = _run_step(
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import jax.numpy as jnp, jaxmagic\n"
        "from examples import step\n"
        "p = {'w': jnp.ones((3, 3))}\n"
        "view = jaxmagic.trace(step.update, p, step.opt.init(p), jnp.ones((2, 3)))\n"
        "print(step.__file__)\n"
        "print(sorted({c.label for c in view.full.clusters.values()}))\n", work, clone)
    assert lines[-2] == str(clone / "examples" / "step.py"), lines
    labels = eval(lines[-1])
    assert {"loss", "opt.update", "optax.apply_updates"} <= set(labels), labels


def test_a_cprofile_running_around_the_magic_keeps_running(ip):
    """A user profiling their notebook with cProfile: the call tree's recording used to
    hand `sys.setprofile` the profiler object back, which raised TypeError (Python 3.11);
    the profiler must run on after `%jaxpr`, recording what follows."""
    import cProfile
    import sys

    profile = cProfile.Profile()
    profile.enable()
    try:
        view = ip.run_line_magic("jaxpr", "-o jnp.sin(jnp.ones(3))")
        after = sys.getprofile()
    finally:
        profile.disable()
    assert view.num_equations >= 1
    if not hasattr(sys, "monitoring"):     # 3.12+ records through sys.monitoring instead
        assert after is profile


def test_a_debuggers_trace_function_keeps_running_and_calls_are_still_grouped(ip):
    """A debugger or coverage holds `sys.settrace`: the call tree records another way
    (the profile hook, or `sys.monitoring` on 3.12+) and hands the trace hook back as it
    found it, still called for what follows."""
    import sys

    ip.run_cell("def inner(x):\n    return jnp.sin(x) * 2\n"
                "def outer(x):\n    return inner(x) + 1\n")
    seen = []

    def debugger(frame, event, arg):
        seen.append(frame.f_code.co_name)
        return None

    sys.settrace(debugger)
    try:
        view = ip.run_line_magic("jaxpr", "-o outer(jnp.ones(3))")
        after = sys.gettrace()
        ip.user_ns["inner"](1.0)
    finally:
        sys.settrace(None)
    assert after is debugger and "inner" in seen
    assert titles(view.full) == ["outer", "inner"]


def test_a_library_call_through_a_chain_is_named_as_written():
    """Haiku's examples update with `optimiser().update(grads, opt_state)`: the group was
    named `optimiser` (the name before the first parenthesis). A chain is named through
    its calls, arguments left out; the chain after a call (`.mean()`) is not the call's."""
    import optax

    def optimiser():
        return optax.adam(1e-3)

    def loss(p, x, y):
        return optax.sigmoid_binary_cross_entropy(x @ p, y).mean()

    def step(p, s, x, y):
        g = jax.grad(loss)(p, x, y)
        u, s = optimiser().update(g, s)
        return optax.apply_updates(p, u), s

    p = jnp.ones((3, 2))
    view = jaxmagic.trace(step, p, optimiser().init(p), jnp.ones((4, 3)), jnp.ones((4, 2)))
    labels = {c.label for c in view.full.clusters.values()}
    assert {"optimiser().update", "optax.sigmoid_binary_cross_entropy",
            "optax.apply_updates"} <= labels, sorted(labels)


def test_a_jitted_function_traced_before_draws_the_same_groups_again(ip):
    """An inner jitted function comes back from JAX's trace cache the second time, its
    Python body not run: what the first recording learned of its calls still holds
    (Haiku's ResNet50 step under pmap drew `forward.apply` as a box the second time)."""
    pytest.importorskip("optax")
    pytest.importorskip("flax.linen")
    from conftest import run

    ip.run_cell(LINEN_NET + '''
tx = optax.adam(lambda count: 1e-2 / (1 + count))    # calls the user's code back
opt_state = tx.init(params)

@jax.jit
def inner(params, opt_state, x):
    grads = jax.grad(lambda p: jnp.sum(net.apply(p, x) ** 2))(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state

def step(params, opt_state, x):
    return inner(params, opt_state, x)
''')
    first, second = (run(ip, "%jaxpr -o step(params, opt_state, jnp.ones((3, 4)))")[0]
                     for _ in range(2))
    assert first.success and second.success
    assert "Net" in titles(first.result.full)
    assert not any("apply" in t for t in titles(first.result.full) if t != "optax.apply_updates")
    assert titles(second.result.full) == titles(first.result.full)
    assert second.result.svg() == first.result.svg()


def test_a_call_inside_a_differentiated_scan_does_not_repeat_the_calls_around_it():
    """JAX re-traces a scan's body to differentiate it, and what it re-traces inside a
    call there (`relu`'s custom_jvp) carries the scopes of the equation it re-traced, the
    calls around it included: `custom_jvp: relu › over_layers › dot_relu › jit: relu`
    inside `over_layers › dot_relu` (JAX 0.12; Flax's gspmd guide drew it so)."""
    def dot_relu(w, x):
        return jax.nn.relu(x @ w)

    def over_layers(x, w):
        return dot_relu(w, x), None

    def f(ws, x):
        y, _ = jax.lax.scan(over_layers, x, ws)
        return jnp.sum(y)

    g = jaxmagic.trace(jax.value_and_grad(f), jnp.ones((2, 4, 4)), jnp.ones((3, 4))).full
    for c in g.clusters.values():
        path = [g.clusters[a].title for a in G.ancestors(g, c.id)]
        assert len(path) == len(set(path)), path
    relu = [n for n in g.nodes.values() if n.primitive == "max"]
    assert relu and all("dot_relu" in [g.clusters[a].title for a in G.ancestors(g, n.cluster)]
                        for n in relu)
