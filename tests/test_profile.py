"""`%jaxpr --profile`: real profiler runs on CPU, joined back to the user's equations."""
import tempfile
import time

import jax
import jax.numpy as jnp
import pytest
from conftest import run

import jaxmagic
from jaxmagic.core.compiled import profile as P
from jaxmagic.core.target import BoundCall
from jaxmagic.core.trace import trace


def traced(f, *args):
    names = [f"a{i}" for i in range(len(args))]
    return trace(BoundCall(f, args, {}, names, {}, "f(...)"))


def matmul_among_elementwise(x, w):
    y = x @ w
    z = x[:32, :32]
    for _ in range(30):
        z = jnp.sin(z) * 1.01 + 0.5
    return y, z


def test_matmul_gets_most_time_and_exact_flops():
    n = 512
    x = jnp.ones((n, n)) * 0.01
    view = jaxmagic.profile(matmul_among_elementwise, x, x)
    c = view.costs
    assert c.profiled and c.platform == "CPU" and c.runs >= 1
    top = c.top(1)[0]
    assert top.primitive == "dot_general" and top.flops == 2 * n ** 3
    assert top.share >= 0.5 and top.where.startswith("matmul_among_elementwise:")
    assert c.coverage >= 0.9          # instructions joined to equations
    assert sum(r.seconds for r in c) == pytest.approx(c.total_s * c.coverage, rel=1e-6)
    # the elementwise chain is fused: its time is split over its equations, and said so
    assert any(r.split for r in c) and "split over them" in c.text()


def test_profiling_leaves_the_traced_jaxpr_alone():
    def f(x):
        with jax.named_scope("inner"):
            return jnp.tanh(x @ x).sum()
    t = traced(f, jnp.ones((32, 32)))
    before = [str(e.source_info.name_stack) for e in t.jaxpr.jaxpr.eqns]
    compiled, hlo, _ = P.compile_tagged(t)
    after = [str(e.source_info.name_stack) for e in t.jaxpr.jaxpr.eqns]
    assert before == after and "jaxmagic#" not in str(t.jaxpr)
    info = P.instruction_tags(hlo)
    assert info.module.startswith("jit_jaxmagic_profile_") and any(info.tags.values())


def test_scan_body_time_reaches_its_equations():
    def f(c):
        def body(c, _):
            return jnp.sin(c @ c) * 0.5, None
        return jax.lax.scan(body, c, None, length=8)[0]
    view = jaxmagic.profile(f, jnp.ones((128, 128)) * 0.01)
    rows = {r.primitive: r for r in view.costs if r.is_op}
    assert rows["dot_general"].seconds > 0 and rows["dot_general"].group.startswith("scan ×8")
    assert view.costs.coverage >= 0.9
    # the collapsed scan node carries the loop's whole time
    collapsed = view.configure(depth=0).graph
    overlay = view.costs.overlay(collapsed)["overlay"]
    (scan_node,) = [n for n in collapsed.nodes.values() if n.kind == "call"]
    assert overlay[scan_node.id][1].endswith(("100%", "99%", "98%", "97%", "96%", "95%"))


def test_nested_events_have_their_childrens_time_subtracted():
    # a while loop (3 ms) running its body twice (1 ms each) on one thread, and a copy on
    # another thread
    lines = {("/host:CPU", "a"): [(0.0, 3e6, "while.1"), (0.5e6, 1e6, "fusion.2"),
                                  (1.8e6, 1e6, "fusion.2")],
             ("/host:CPU", "b"): [(0.0, 2e6, "copy.3")]}
    assert P.self_times(lines) == pytest.approx({"while.1": 1e-3, "fusion.2": 2e-3,
                                                 "copy.3": 2e-3})


def test_plane_selection_on_a_real_cpu_trace():
    f = jax.jit(lambda x: jnp.sin(x) @ x)
    x = jnp.ones((64, 64))
    f(x).block_until_ready()
    module = f.lower(x).compile().as_text().splitlines()[0].split()[1].rstrip(",")
    with tempfile.TemporaryDirectory() as d:
        with jax.profiler.trace(d):
            f(x).block_until_ready()
        planes = P._read_trace(d)
    lines = P._module_events(planes, module)
    assert lines and all(plane == "/host:CPU" for plane, _ in lines)
    assert P._module_events(planes, "jit_some_other_module") == {}
    assert P._platform("/device:GPU:0") == "GPU" and P._platform("/host:CPU") == "CPU"


def test_fallback_when_another_profiler_session_is_running():
    f = lambda x: jnp.tanh(x @ x)  # noqa: E731
    with tempfile.TemporaryDirectory() as d:
        jax.profiler.start_trace(d)
        try:
            view = jaxmagic.profile(f, jnp.ones((16, 16)))
        finally:
            jax.profiler.stop_trace()
    c = view.costs
    assert c.mode == "cost" and all(r.seconds is None for r in c)
    assert "profiler is unavailable" in c.notes[0] and "only one profile" in c.notes[0].lower()
    assert "profiler is unavailable" in view.text()


def test_profile_magic_draws_time_on_the_graph(ip):
    ip.run_cell("def step(a, b):\n    return jnp.tanh(a @ b).sum()\n"
                "a = jnp.ones((256, 256))")
    r, cap = run(ip, "_v = %jaxpr --profile -o jax.grad(step)(a, a)")
    assert r.success, r.error_in_exec
    view = ip.user_ns["_v"]
    assert view.costs.profiled
    html = view._repr_mimebundle_()["text/html"]
    assert "share of measured time, log scale" in html and "costliest equations" in html
    assert any(unit + " · " in view.dot() for unit in ("ms", "µs"))
    assert "device time per call" in view.text()


@pytest.mark.parametrize("layers", [4])
def test_transformer_gradient_by_layer_and_pass(layers, transformer):
    model = transformer.model
    params, x = transformer.make(layers)
    start = time.perf_counter()
    view = jaxmagic.profile(jax.grad(model), params, x)
    seconds = time.perf_counter() - start
    c = view.costs
    assert c.coverage >= 0.9 and seconds < 10
    # the groups are the folded call tree: every layer's time in its series, per pass
    names = [g.name for g in c.costliest_groups(3)]
    assert f"block ×{layers}" in names and any(
        n.startswith("block ×") and n.endswith(" · backward") for n in names), names
    series = [r for r in c.rows if r.series.startswith(f"block ×{layers}")]
    assert {r.group.split(" ›")[0] for r in series} == {f"block #{i}" for i in range(layers)}
    # drawn nodes hold every equation once: their shares sum to the joined time
    g = view.graph
    total = sum(r.seconds for r in c.rows)
    assert sum(c._node_values(g).values()) == pytest.approx(total, rel=1e-6)
    # a drawn series carries the time of all its calls, as its rows sum it
    overlay = c.overlay(g)["cluster_overlay"]
    (cid,) = [i for i, cl in g.clusters.items() if cl.title == f"block ×{layers}"]
    forward = sum(r.seconds for r in series)
    assert c.label(forward, forward / total) == overlay[cid][1]
    # the table beside the picture names each node's group as drawn
    assert f"block\u00a0×{layers}" in [row[3] for row in c._node_table(g)]


def test_flax_nnx_model_profiles(ip):
    from flax import nnx

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.l1, self.l2 = nnx.Linear(64, 256, rngs=rngs), nnx.Linear(256, 8, rngs=rngs)

        def __call__(self, x):
            return self.l2(nnx.relu(self.l1(x)))

    model = MLP(nnx.Rngs(0))
    graphdef, state = nnx.split(model)

    def apply(state, x):
        return nnx.merge(graphdef, state)(x)
    view = jaxmagic.profile(apply, state, jnp.ones((128, 64)))
    c = view.costs
    assert c.profiled and c.coverage >= 0.9
    assert {r.primitive for r in c.top(2)} == {"dot_general"} or c.top(1)[0].primitive \
        == "dot_general"
