"""Costs estimated from shapes (`%jaxpr --cost`): real JAX programs, real XLA cost analysis."""
import jax
import jax.numpy as jnp
import pytest
from conftest import run

import jaxmagic
from jaxmagic import _compat
from jaxmagic.core import cost as C
from jaxmagic.core.trace import trace
from jaxmagic.graph import coarsen, collapse
from jaxmagic.graph.build import build
from jaxmagic.render.costs import Costs
from jaxmagic.render.dot import EMPHASIS, to_dot


def traced(f, *args):
    from jaxmagic.core.target import BoundCall

    names = [f"a{i}" for i in range(len(args))]
    return trace(BoundCall(f, args, {}, names, {}, "f(...)"))


def xla_flops(f, *args) -> float:
    return _compat.cost_analysis(jax.jit(f).lower(*args).compile())["flops"]


@pytest.mark.parametrize("f, shapes", [
    (lambda a, b: a @ b, [(64, 128), (128, 32)]),
    (lambda a, b: jnp.einsum("bij,bjk->bik", a, b), [(4, 16, 24), (4, 24, 8)]),
    (lambda a, b: jnp.einsum("ij,kj->ik", a, b), [(33, 17), (5, 17)]),
])
def test_dot_general_is_2mnk_and_agrees_with_xla(f, shapes):
    args = [jnp.ones(s) for s in shapes]
    (row,) = [r for r in C.estimate(traced(f, *args).jaxpr) if r.primitive == "dot_general"]
    m, k = shapes[0][-2], shapes[0][-1]
    n = shapes[1][-1] if shapes[1][-1] != k else shapes[1][-2]
    batch = shapes[0][0] if len(shapes[0]) == 3 else 1
    assert row.flops == 2 * batch * m * n * k
    # XLA counts the same multiply-adds; within 1% (it may add a convert or a copy)
    assert row.flops == pytest.approx(xla_flops(f, *args), rel=0.01)


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_convolution_agrees_with_xla(padding):
    def conv(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), padding,
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))
    x, w = jnp.ones((2, 16, 16, 8)), jnp.ones((3, 3, 8, 12))
    (row,) = [r for r in C.estimate(traced(conv, x, w).jaxpr)
              if r.primitive == "conv_general_dilated"]
    side = 16 if padding == "SAME" else 14
    assert row.flops == 2 * 2 * side * side * 12 * 3 * 3 * 8
    if padding == "VALID":
        assert row.flops == pytest.approx(xla_flops(conv, x, w), rel=0.01)
    else:   # XLA leaves out the window taps that fall on padding: ours is ≤ 10% above
        assert 1 <= row.flops / xla_flops(conv, x, w) <= 1.10


def test_reductions_elementwise_and_movement():
    def f(x):
        return jnp.sum(jnp.tanh(x).T.reshape(-1))
    by_prim = {r.primitive: r for r in C.estimate(traced(f, jnp.ones((8, 4))).jaxpr)}
    assert by_prim["tanh"].flops == 32
    assert by_prim["reduce_sum"].flops == 32
    assert by_prim["transpose"].flops == 0 and by_prim["transpose"].bytes == 2 * 32 * 4
    assert by_prim["reshape"].flops == 0


def test_scan_body_counts_once_per_iteration():
    def f(c):
        return jax.lax.scan(lambda c, _: (c @ c, None), c, None, length=7)[0]
    rows = C.estimate(traced(f, jnp.ones((16, 16))).jaxpr)
    (scan,) = [r for r in rows if r.primitive == "scan"]
    (dot,) = [r for r in rows if r.primitive == "dot_general"]
    assert not scan.is_op and dot.parents == (scan.index,)
    assert dot.times == 7 and dot.flops == 7 * 2 * 16 ** 3


def test_node_eqns_follow_the_graph_walk_on_a_linen_model():
    import flax.linen as nn

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Dense(32)(x))
            return nn.Dense(4)(jax.lax.scan(lambda c, _: (jnp.tanh(c), None), x, None,
                                            length=3)[0][:, :4].repeat(8, axis=1))

    model = MLP()
    x = jnp.ones((2, 16))
    params = model.init(jax.random.PRNGKey(0), x)
    t = traced(jax.grad(lambda p, x: model.apply(p, x).sum()), params, x)
    g = build(t)
    estimates = C.estimate(t.jaxpr)
    ops = [n for n in g.nodes.values() if n.kind == "op"]
    drawn = {n.eqns[0] for n in ops}
    every = {e.index for e in estimates if e.is_op}
    # relu's jvp makes zeros its transpose never reads: noted, not drawn
    assert drawn < every and [estimates[i].primitive for i in every - drawn] == \
        ["broadcast_in_dim"] and "1 unused constant not drawn (XLA removes it)" in g.notes
    for n in ops:
        assert estimates[n.eqns[0]].primitive == n.primitive
    # merged nodes carry every equation they stand for
    collapsed = collapse.collapse(g, depth=0)
    for node in collapsed.nodes.values():
        if node.kind == "call":
            inside = {e.index for e in estimates if e.is_op and e.index in node.eqns}
            assert inside and len(inside) == len(node.eqns)
    union = sorted(e for n in coarsen.coarsen(collapsed, "phase").nodes.values() for e in n.eqns)
    assert union == sorted(n.eqns[0] for n in ops)


def test_rows_name_the_users_line_and_group():
    def f(x):
        with jax.named_scope("attention"):
            y = x @ x
        return jnp.sin(y)
    t = traced(f, jnp.ones((8, 8)))
    rows = C.rows(build(t), C.estimate(t.jaxpr))
    dot = next(r for r in rows if r.primitive == "dot_general")
    assert dot.group == "attention" and dot.where.startswith("f:")
    assert sum(r.share for r in rows) == pytest.approx(1.0)
    assert dot.seconds is None


def test_cost_view_draws_flops_and_outlines_the_costliest():
    def f(x, w):
        with jax.named_scope("big"):
            y = x @ w
        return jnp.sum(jnp.exp(y) * 2)
    view = jaxmagic.profile(f, jnp.ones((64, 64)), jnp.ones((64, 64)), measure=False)
    costs = view.costs
    assert isinstance(costs, Costs) and not costs.profiled
    assert costs.top(1)[0].primitive == "dot_general"
    dot = view.dot()
    assert "524 kflop · 9" in dot and EMPHASIS in dot     # 2·64³ flops, 97% of them
    text = costs.text()
    assert "costliest equations" in text and "dot_general" in text and "big" in text
    assert costs.records()[0].keys() >= {"primitive", "flops", "bytes", "seconds", "share",
                                         "where", "group"}


def test_overlay_escapes_names_from_user_code():
    def f(x):
        with jax.named_scope('evil"scope\\n<b>'):
            return jnp.sin(x @ x)
    view = jaxmagic.profile(f, jnp.ones((8, 8)), measure=False).configure(depth=None)
    g = view.graph
    dot = to_dot(g, **view.costs.overlay(g))
    assert 'label="evil\\"scope\\\\n<b>\\nnamed scope\\n1.09 kflop · 100%"' in dot
    html = view.costs._repr_mimebundle_()["text/html"]
    assert "evil&quot;scope\\n&lt;b&gt;" in html and "scope\\n<b>" not in html


def test_jaxpr_cost_magic(ip):
    ip.run_cell("def mm(a, b):\n    return jnp.tanh(a @ b).sum()\n"
                "a = jnp.ones((32, 32))")
    r, cap = run(ip, "_v = %jaxpr --cost -o mm(a, a)")
    assert r.success, r.error_in_exec
    view = ip.user_ns["_v"]
    assert view.costs.mode == "cost"
    assert max(view.costs, key=lambda r: r.flops).flops == 2 * 32 ** 3
    html = view._repr_mimebundle_()["text/html"]
    assert "share of estimated flops" in html and "costliest equations" in html
    assert "cost of mm" in view.text()


def test_jit_compare_names_the_costliest_groups():
    from jaxmagic.api import _costliest_groups
    from jaxmagic.core.target import BoundCall

    def f(x):
        with jax.named_scope("matmuls"):
            y = x @ x @ x
        with jax.named_scope("activations"):
            return jnp.tanh(y) + 1
    x = jnp.ones((64, 64))
    call = BoundCall(f, (x,), {}, ["x"], {}, "f(x)")
    m = jaxmagic.compare_jit(f, x, budget=0.2)     # a real measurement
    assert bool(m.costliest) == (m.speedup < 1)    # named only when jit is slower
    assert ("costliest groups" in m.text()) == (m.speedup < 1)
    m.costliest = _costliest_groups(call, m)
    assert [name for name, _ in m.costliest] == ["matmuls", "activations"]
    assert m.costliest[0][1] > 0.99
    assert "the costliest groups by estimated flops: matmuls (99%)" in m.text()


def test_group_names_cannot_drive_a_terminal():
    from jaxmagic.render.jit import JitComparison

    def f(x):
        with jax.named_scope("bell\x07\x1b[31m"):
            return jnp.sin(x @ x)
    costs = jaxmagic.profile(f, jnp.ones((8, 8)), measure=False).costs
    (name, share), = [(g.name, g.share) for g in costs.costliest_groups(1)]
    assert "\x07" in name
    m = JitComparison(name="f(x)", speedup=0.5)
    m.costliest = [(name, share)]
    for text in (costs._repr_mimebundle_()["text/plain"], m.text()):
        assert "bell\\x07\\x1b[31m" in text and "\x07" not in text and "\x1b" not in text


def test_jit_compare_hint_names_the_folded_call_tree(transformer):
    """A gradient of repeated layers: the hint names each layer series and pass."""
    from jaxmagic.api import _costliest_groups
    from jaxmagic.core.target import BoundCall
    from jaxmagic.render.jit import JitComparison

    params, x = transformer.make(4, d=32, t=16)
    grad = jax.grad(transformer.model)
    m = JitComparison(name="grad(model)(params, x)", speedup=0.5)
    m.costliest = _costliest_groups(BoundCall(grad, (params, x), {}, ["params", "x"], {},
                                              "grad(model)(params, x)"), m)
    names = [name for name, _ in m.costliest]
    assert "block ×4" in names and any(n.endswith(" · backward") and "×" in n
                                       for n in names), names
    assert sum(share for _, share in m.costliest) > 0.8
    assert f"{names[0]} (" in m.text()
