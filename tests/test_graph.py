"""The graph model of real jaxprs: one test per nested kind, labels, collapse, coarsening."""
import jax
import jax.numpy as jnp
import pytest
from jax import lax
from jax.sharding import PartitionSpec as P

import jaxmagic
from jaxmagic.graph import coarsen, collapse, passes, repeats


def full(f, *args, **kw):
    return jaxmagic.trace(f, *args, **kw).full


def clusters(g, kind):
    return [c for c in g.clusters.values() if c.kind == kind]


def ops(g):
    return [n for n in g.nodes.values() if n.kind == "op"]


def test_one_node_per_equation_with_shapes_and_params():
    def f(w, x):
        return jnp.tanh(x @ w) * 2.0

    g = full(f, jnp.ones((16, 64)), jnp.ones((8, 16)))
    assert [n.primitive for n in ops(g)] == ["dot_general", "tanh", "mul"]
    dot = ops(g)[0]
    assert dot.detail == ("contract (1)·(0)",)
    assert any(e.label == "f32[8,64]" for e in g.edges)
    mul = ops(g)[2]
    assert mul.title == "mul · 2"              # the literal folds into the label
    assert dot.where.startswith("f:")          # the user's source line


@jax.jit
def _zeros():
    return jnp.zeros(3)


def test_constants_nothing_uses_are_noted_not_drawn():
    """A relu's jvp makes zeros its backward pass never reads: in Haiku's ResNet50 step,
    49 boxes beside the model with no edge in or out, one of them wider than the room
    its blocks needed to open. XLA removes them; the note says how many. An equation
    with effects stays (a debug print reads nothing and makes nothing), and so does a
    call that holds nothing else: it is the call the user made."""
    def f(x):
        jax.debug.print("step")
        _zeros()
        return jnp.sum(jax.nn.relu(x))

    g = full(jax.grad(f), jnp.ones(3))
    linked = {i for e in g.edges for i in (e.src, e.dst)}
    alone = [(n.primitive, g.clusters[n.cluster].title) for n in ops(g) if n.id not in linked]
    assert sorted(alone) == [("broadcast_in_dim", "jit: _zeros"), ("debug_print", "f")]
    assert "1 unused constant not drawn (XLA removes it)" in g.notes


def test_inputs_named_by_pytree_path_and_outputs_by_result_path():
    params = {"w1": jnp.ones((3, 4)), "b1": jnp.zeros(4)}

    def f(p, x):
        return {"y": x @ p["w1"] + p["b1"], "n": jnp.sum(x)}

    view = jaxmagic.trace(f, params, jnp.ones((2, 3)))
    names = [n.title for n in view.full.nodes.values() if n.kind == "input"]
    assert names == ["p['b1']", "p['w1']", "x"]
    outs = [n.title for n in view.full.nodes.values() if n.kind == "output"]
    assert outs == ["out['n']", "out['y']"]


def test_jit_cluster_named_after_the_function():
    @jax.jit
    def layer(x):
        return jnp.sin(x) + 1

    g = full(lambda x: layer(x) * 3, jnp.ones(3))
    (c,) = clusters(g, "jit")
    assert c.title == "jit: layer" and c.num_equations == 2


def test_custom_jvp_and_custom_vjp():
    @jax.custom_jvp
    def softplus(x):
        return jnp.log1p(jnp.exp(x))
    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] * jax.nn.sigmoid(p[0])))

    @jax.custom_vjp
    def clip_grad(x):
        return jnp.sin(x)
    clip_grad.defvjp(lambda x: (jnp.sin(x), None), lambda _, g: (jnp.clip(g, -1, 1),))

    g = full(lambda x: softplus(x) + clip_grad(x), jnp.ones(3))
    assert [c.title for c in clusters(g, "custom_jvp")] == ["custom_jvp: softplus"]
    assert [c.title for c in clusters(g, "custom_vjp")] == ["custom_vjp: clip_grad"]


def test_a_call_making_no_equation_is_noted_not_drawn():
    """An identity `custom_vjp` and the `jit: relu` a scan's gradient leaves in its hoisted
    body hold no equation and pass nothing on: each was a "0 equations" box with no edge
    (a U-Net's upsample by 1 took a column of its own). A `cond` branch that passes its
    operand on is drawn: the value goes through it."""
    @jax.custom_vjp
    def clip_grad(x):
        return x
    clip_grad.defvjp(lambda x: (x, None), lambda _, g: (jnp.clip(g, -1, 1),))

    def f(w, x):
        return jnp.sum(jax.lax.scan(lambda c, w: (jax.nn.relu(c @ w), None), x, w)[0])

    g = full(lambda w, x: jax.grad(f)(w, clip_grad(x)), jnp.ones((2, 4, 4)), jnp.ones((3, 4)))
    assert not clusters(g, "custom_vjp")
    assert all(c.num_equations for c in g.clusters.values())
    assert any("making no equation not drawn: custom_vjp: clip_grad" in n for n in g.notes), \
        g.notes

    g = full(lambda p, x: jax.lax.cond(p, lambda v: v, lambda v: v * 2.0, x), True, jnp.ones(3))
    assert len([c for c in g.clusters.values() if c.kind == "branch"]) == 2, g.clusters


def test_remat():
    g = full(jax.checkpoint(lambda x: jnp.sin(jnp.cos(x))), jnp.ones(3))
    (c,) = clusters(g, "remat")
    assert c.num_equations == 2


def test_scan_roles_consts_carry_xs():
    def f(w, xs):
        def body(c, x):
            return c * w + x, c
        return lax.scan(body, jnp.zeros(3), xs)

    g = full(f, jnp.ones(3), jnp.ones((5, 3)))
    (c,) = clusters(g, "scan")
    assert "length 5" in c.detail[0]
    assert "consts 1 · carry 1 · xs 1" in c.detail[1]
    roles = {e.label.split()[0] for e in g.edges if e.label.split()[0] in ("const", "carry", "xs")}
    assert roles == {"const", "carry", "xs"}


def test_cond_index_and_one_cluster_per_branch():
    def f(x):
        return lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x)

    g = full(f, jnp.ones(3))
    (c,) = clusters(g, "cond")
    branches = [b for b in clusters(g, "branch") if b.parent == c.id]
    assert [b.title for b in branches] == ["branch false", "branch true"]
    index = [n for n in g.nodes.values() if n.title == "index"]
    assert index and any(e.dst == index[0].id for e in g.edges)


def test_while_cond_and_body():
    g = full(lambda x: lax.while_loop(lambda v: v.sum() < 10, lambda v: v * 2, x), jnp.ones(3))
    (w,) = clusters(g, "while")
    inner = {c.kind for c in g.clusters.values() if c.parent == w.id}
    assert inner == {"while_cond", "while_body"}


def test_shard_map_mesh_specs_and_collective_stands_out():
    mesh = jax.make_mesh((2, 4), ("x", "y"))
    sm = jax.shard_map(lambda a: lax.psum(a, "x"), mesh=mesh, in_specs=P("x", "y"),
                   out_specs=P(None, "y"))
    x = jax.device_put(jnp.ones((8, 8)), jax.NamedSharding(mesh, P("x", "y")))
    g = full(sm, x)
    (c,) = clusters(g, "shard_map")
    assert c.detail[0] == "mesh x=2 y=4"
    assert "P('x', 'y')" in c.detail[1] and "P(None, 'y')" in c.detail[2]
    coll = [n for n in ops(g) if n.collective]
    assert coll and coll[0].detail == ("axes (x)",)


def test_named_scope_is_a_cluster():
    def f(x):
        with jax.named_scope("encoder"):
            x = jnp.sin(x) * 2
        return x + 1

    g = full(f, jnp.ones(3))
    (c,) = [c for c in clusters(g, "scope") if c.title == "encoder"]
    assert c.num_equations == 2 and c.detail == ("named scope",)
    assert g.clusters[c.parent].title == "f"      # inside the call of f (the call tree)


def test_collapsed_by_default_and_expandable():
    @jax.jit
    def inner(x):
        return jnp.sin(x) + jnp.cos(x)

    view = jaxmagic.trace(lambda x: inner(x) * 2, jnp.ones(3))
    g = collapse.collapse(view.full, depth=0)
    calls = [n for n in g.nodes.values() if n.kind == "call"]
    assert [n.title for n in calls] == ["jit: inner"] and calls[0].count == 3
    assert len(collapse.collapse(view.full, depth=None).clusters) == 1
    opened = collapse.collapse(view.full, 0, expand=["inner"])
    assert [c.title for c in opened.clusters.values()] == ["jit: inner"]
    assert view.num_equations == 5      # the jit equation, its 3, and mul


def test_identical_layers_roll_up():
    @jax.jit
    def layer(x):
        return jnp.tanh(x * 2)

    def net(x):
        for _ in range(16):
            x = layer(x)
        return x

    g = collapse.collapse(full(net, jnp.ones(4)), depth=0)
    calls = [n for n in g.nodes.values() if n.kind == "call"]
    assert [n.title for n in calls] == ["jit: layer ×16"]
    assert calls[0].count == 32


def test_coarsen_groups_by_line_and_phase():
    def loss(w, x):
        for _ in range(20):
            x = jnp.tanh(x @ w)
        return jnp.sum(x)

    g = full(jax.grad(loss), jnp.ones((4, 4)), jnp.ones((2, 4)))
    by_line = coarsen.coarsen(repeats.fold(g), "line")
    groups = [n for n in by_line.nodes.values() if n.kind == "group"]
    assert len(groups) < 10 < len(ops(g))
    assert {n.backward for n in groups} == {True, False}
    assert sum(len(n.eqns) for n in groups) == len(ops(g))     # each equation in a group


@pytest.mark.parametrize("name", ["a<b>&\"c'", "{x}|\\N", "x\x07y"])
def test_escaping_in_dot(name):
    def f(x):
        with jax.named_scope(name):
            return jnp.sin(x)

    view = jaxmagic.trace(f, jnp.ones(2)).configure(depth=None, renderer="dot", png=False)
    dot = view.dot()
    assert "\x07" not in dot
    svg = view.svg()                  # still renders, so the DOT is well formed
    assert "<script" not in svg
    import xml.dom.minidom
    xml.dom.minidom.parseString(svg)  # the SVG is well-formed XML


def test_phase_view_takes_in_collapsed_calls_and_stays_acyclic():
    @jax.jit
    def norm(x):
        return x / jnp.linalg.norm(x)

    def deep(ws, x):
        for w in ws:
            x = norm(jnp.tanh(x @ w))
        return jnp.sum(x ** 2)

    g = collapse.collapse(full(jax.grad(deep), [jnp.eye(4)] * 6, jnp.ones((2, 4))), depth=0)
    assert sum(n.kind == "call" for n in g.nodes.values()) >= 2    # forward and backward
    phase = coarsen.coarsen(g, "phase")
    groups = {n.title: n for n in phase.nodes.values() if n.kind not in ("input", "output")}
    assert set(groups) == {"forward", "backward"}
    assert groups["forward"].eqns and groups["backward"].eqns
    fwd, bwd = groups["forward"].id, groups["backward"].id
    assert any(e.src == fwd and e.dst == bwd for e in phase.edges)
    assert not any(e.src == bwd and e.dst == fwd for e in phase.edges)


def test_grouped_by_function_names_the_functions():
    def loss(w, x):     # one line: the fine views drop its repeated location
        return jnp.mean((jnp.sin(jnp.tanh(x @ w)) * 2.0 + 1.0) ** 2)

    view = jaxmagic.trace(jax.grad(loss), jnp.ones((4, 4)), jnp.ones((2, 4)))
    view = view.configure(max_nodes=6)      # past the budget for every finer view
    g = view.graph
    assert g.grouping == "function"
    titles = sorted(n.title for n in g.nodes.values() if n.kind == "group")
    assert titles == ["loss", "loss · backward"]


def test_expand_opens_a_call_at_the_automatic_depth():
    def block(x):           # forty sines side by side: too wide for the automatic depth
        return [jnp.sin(x * i) for i in range(40)]

    def f(x):
        return jnp.stack(block(x))

    view = jaxmagic.trace(f, jnp.ones(3))

    def sines(v):
        return sum(n.kind == "op" and n.primitive == "sin" for n in v.graph.nodes.values())

    assert sines(view) < 40
    assert sines(view.configure(expand=["block"])) == 40
    assert sines(view.configure(depth=0, expand=["block"])) == 40


def test_phase_view_of_a_train_step_puts_the_update_after_the_backward_pass():
    def loss(w, x):
        return jnp.sum(jnp.tanh(x @ w) ** 2)

    def step(w, x):
        return w - 0.1 * jax.grad(loss)(w, x)

    phase = coarsen.coarsen(
        collapse.collapse(full(step, jnp.ones((4, 4)), jnp.ones((2, 4))), depth=0), "phase")
    order = {n.id: ["forward", "backward", "after backward"].index(n.title)
             for n in phase.nodes.values() if n.kind == "group"}
    assert sorted(order.values()) == [0, 1, 2]
    assert all(order[e.src] <= order[e.dst] for e in phase.edges
               if e.src in order and e.dst in order)      # no edge runs back: acyclic


def test_a_value_only_the_backward_pass_reads_says_so():
    """A relu's mask (`gt · 0`) is read only by the backward pass; its edge is bundled
    into the one residual edge the backward group keeps (`residuals`), and the mask was
    drawn as a dead end, as if unused (Haiku's VQ-VAE: nine of them)."""
    def net(w, x):
        h = jax.nn.relu(x @ w)
        return jnp.sum(jax.nn.relu(h @ w) ** 2)

    c = collapse.Collapser(full(jax.grad(net), jnp.ones((4, 4)), jnp.ones((2, 4))))
    g = passes.residuals(c.view({i for i, x in c.g.clusters.items() if not x.backward}))
    masks = [n for n in g.nodes.values() if n.title.startswith("gt") and not n.backward]
    assert masks and all(not any(e.src == n.id for e in g.edges) for n in masks)
    assert all(passes.BACKWARD_ONLY in n.detail for n in masks), [n.detail for n in masks]
    told = [n for n in g.nodes.values() if passes.BACKWARD_ONLY in n.detail]
    assert {n.id for n in told} == {n.id for n in masks}


def test_a_line_nesting_the_same_calls_is_no_loop():
    """Three `cos` and `sin` in turn on one line, each feeding the next, repeat no code:
    no fold of `sin(cos(…))` ×3. The same two calls in a loop are one."""
    def nested(x):
        return jnp.sin(jnp.cos(jnp.sin(jnp.cos(jnp.sin(jnp.cos(x))))))

    def looped(x):
        for _ in range(3):
            x = jnp.sin(jnp.cos(x))
        return x

    assert not full(nested, jnp.ones(3)).series
    folded = repeats.fold(full(looped, jnp.ones(3)))
    assert [repeats.series_title(c) for c in folded.clusters.values() if c.repeat > 1] == \
        ["sin(cos(x)) ×3"]
