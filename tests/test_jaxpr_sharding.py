"""`%jaxpr --sharding`: shardings on edges and the compiled program's collectives joined to
the user's lines, on real JAX over 8 CPU devices (2×4 and 8-device meshes)."""
import inspect
import re
from functools import partial

import jax
import jax.numpy as jnp
import pytest
from conftest import run
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import jaxmagic
from jaxmagic import _compat
from jaxmagic.core.compiled import propagation
from jaxmagic.core.compiled.analysis import analyze
from jaxmagic.core.target import BoundCall
from jaxmagic.core.trace import trace
from jaxmagic.graph import model as G

shard_map = getattr(jax, "shard_map", None) or \
    __import__("jax.experimental.shard_map", fromlist=["shard_map"]).shard_map


def mesh(kind=AxisType.Auto):
    return jax.make_mesh((2, 4), ("data", "model"), axis_types=(kind, kind))


def put(m, shape, spec):
    return jax.device_put(jnp.ones(shape), NamedSharding(m, spec))


def mlp(x, w1, w2):
    h = jax.nn.relu(x @ w1)
    return h @ w2


def line_of(f, text):
    src, start = inspect.getsourcelines(f)
    return start + next(i for i, s in enumerate(src) if text in s)


def mlp_args(w1_spec=P(None, "model")):
    m = mesh()
    return put(m, (256, 512), P("data", None)), put(m, (512, 1024), w1_spec), \
        put(m, (1024, 512), P("model", None))


def test_mlp_all_reduce_over_model_at_the_second_matmul():
    view = jaxmagic.trace(mlp, *mlp_args(), sharding=True)
    (c,) = view.collectives
    assert (c.kind, c.axes, c.origin, c.primitive) == \
        ("all-reduce", ("model",), "inserted", "dot_general")
    assert c.bytes == 128 * 512 * 4          # the [256@data,512] result's shard, per device
    assert c.where == f"mlp:{line_of(mlp, 'h @ w2')}" and c.group_size == 4
    assert view.collectives.records()[0]["axes"] == ("model",)
    labels = {e.label for e in view.full.edges}
    # the compiler's choice for the hidden layer, as JAX prints an Explicit type
    assert "f32[256@data,1024@model]" in labels and "f32[256@data,512]" in labels


def test_its_gradient_adds_the_all_reduce_over_data():
    grad = jax.grad(lambda x, w1, w2: mlp(x, w1, w2).sum(), argnums=(1, 2))
    view = jaxmagic.trace(grad, *mlp_args(), sharding=True)
    over_data = [c for c in view.collectives if c.kind == "all-reduce" and c.axes == ("data",)]
    # one per weight gradient: XLA combines them into one instruction, split back here
    assert len(over_data) == 2 and {c.bytes for c in over_data} == {512 * 1024 * 4 // 4}
    assert all(c.primitive == "dot_general" and not c.written for c in over_data)
    assert len({c.equation for c in over_data}) == 2


def test_a_badly_sharded_weight_is_gathered_at_its_first_use():
    view = jaxmagic.trace(mlp, *mlp_args(P(("data", "model"), None)), sharding=True)
    top = view.collectives[0]                # sorted by bytes
    assert (top.kind, top.argument, top.bytes) == ("all-gather", 1, 2 * 2 ** 20)
    assert top.where == f"mlp:{line_of(mlp, 'relu(x @ w1)')}"
    assert "all-gather of w1" in view.collectives.text()
    assert "all-gather of w1 over data,model · 2 MiB" in view.dot()
    (w1,) = [n for n in view.graph.nodes.values() if n.title == "w1"]
    assert f'all-gather at mlp:{line_of(mlp, "relu(x @ w1)")} · 2 MiB' in \
        next(ln for ln in view.dot().splitlines() if ln.lstrip().startswith(f"n{w1.id} "))


def test_explicit_types_agree_with_the_compilers_dump():
    """Every value's sharding in the jaxpr (Explicit mesh) is what the compiled program
    holds: the dump after propagation, parsed in the form this release writes."""
    m = mesh(AxisType.Explicit)
    x, w1 = put(m, (256, 512), P("data", None)), put(m, (512, 1024), P(None, "model"))

    def f(x, w1):
        return jnp.sin(x @ w1).T * 2

    t = trace(BoundCall(f, (x, w1), {}, ["x", "w1"], {}, "f(x, w1)"))
    a = analyze(t)
    from_dump = propagation.value_types(a, t, ("data", "model"), (2, 4), typed_too=True)
    eqns = _compat.open_jaxpr(t.jaxpr).eqns
    outs = [v for e in eqns for v in e.outvars]
    assert len(from_dump) == len(outs) == 4
    for v in outs:
        assert from_dump[v] == _compat.typed_aval_str(v.aval), v
    assert _compat.typed_aval_str(outs[-1].aval) == "f32[1024@model,256@data]"
    view = jaxmagic.trace(f, x, w1, sharding=True)
    assert "f32[1024@model,256@data]" in {e.label for e in view.full.edges}
    assert len(view.collectives) == 0 and "sends nothing" in view.collectives.headline()


def smap(m):
    @partial(shard_map, mesh=m, in_specs=(P("i"), P()), out_specs=P("i"))
    def step(a, b):
        s = jax.lax.psum(a * b, "i")
        r = jax.lax.psum_scatter(s, "i", tiled=True)
        g = jax.lax.all_gather(r, "i", tiled=True)
        return jax.lax.ppermute(g, "i", [(k, (k + 1) % 8) for k in range(8)])
    return step


def test_shard_map_collectives_are_the_users_by_the_names_they_called():
    m = jax.make_mesh((8,), ("i",), axis_types=(AxisType.Auto,))
    f, args = smap(m), (jnp.ones((64, 4)), jnp.ones((8, 4)))
    view = jaxmagic.trace(f, *args, sharding=True)
    prims = {c.primitive: c for c in view.collectives}
    assert set(prims) == {"psum", "psum_scatter", "all_gather", "ppermute"}
    assert {c.kind for c in view.collectives} == \
        {"all-reduce", "reduce-scatter", "all-gather", "collective-permute"}
    assert all(c.written and c.axes == ("i",) for c in view.collectives)
    assert prims["psum"].bytes == 8 * 4 * 4 and prims["psum"].group == "shard_map"
    ops = [n for n in view.full.nodes.values() if n.kind == "op"]
    cast = "pcast" if hasattr(jax.lax, "pcast") else "pvary"
    assert [n.title for n in ops if n.collective] == \
        ["psum", "psum_scatter", "all_gather", "ppermute"]
    assert [n.title for n in ops if n.primitive == "pvary"] == [cast, cast]
    # the varying types as jax.make_jaxpr prints them on this release
    printed = str(jax.make_jaxpr(f)(*args))
    typed = [e.label for e in view.full.edges if "{" in e.label]
    assert typed and all(t in printed for t in typed), (typed, printed)


def test_cost_counts_bytes_moved_not_flops():
    m = jax.make_mesh((8,), ("i",), axis_types=(AxisType.Auto,))
    view = jaxmagic.profile(smap(m), jnp.ones((64, 4)), jnp.ones((8, 4)), measure=False)
    rows = {r.primitive: r for r in view.costs}
    assert rows["psum_invariant" if "psum_invariant" in rows else "psum"].flops == 0
    assert rows["all_gather"].flops == 0 and rows["all_gather"].bytes == 8 * 4 * 4
    assert "moves 128 B" in view.dot()


def test_one_device_sends_nothing():
    view = jaxmagic.trace(lambda x: jnp.sin(x) @ x, jnp.ones((4, 4)), sharding=True)
    assert len(view.collectives) == 0 and "on 1 device sends nothing" in \
        view.collectives.text()


def test_magic_draws_the_table_beside_the_picture(ip):
    ip.user_ns.update(mlp=mlp, x=mlp_args()[0], w1=mlp_args()[1], w2=mlp_args()[2])
    _, cap = run(ip, "%jaxpr --sharding mlp(x, w1, w2)")
    (out,) = cap.outputs
    html = out.data["text/html"]
    assert "<table" in html and "all-reduce" in html and "256 KiB" in html
    assert "<img" in html and "inserted" in html
    assert "collectives of mlp" in out.data["text/plain"]
    view = ip.run_line_magic("jaxpr", "--sharding -o mlp(x, w1, w2)")
    assert view.collectives[0].axes == ("model",)


def test_help_names_the_option(ip):
    from jaxmagic.magics import JaxMagic

    assert "--sharding" in JaxMagic.jaxpr.__doc__ and "collective" in JaxMagic.jaxpr.__doc__


def test_groups_of_devices_map_to_mesh_axes():
    from jaxmagic.core.compiled import hlo

    names, sizes = ("data", "model"), (2, 4)
    for text, axes in [("[2,4]<=[8]", ("model",)), ("[4,2]<=[2,4]T(1,0)", ("data",)),
                       ("{{0,1,2,3},{4,5,6,7}}", ("model",)), ("{{0,4},{1,5},{2,6},{3,7}}",
                                                                ("data",)),
                       ("[1,8]<=[8]", ("data", "model")), ("{}", ("data", "model"))]:
        assert hlo.axes_of_groups(hlo.device_groups(text), names, sizes) == axes, text
    # written against the mesh, its axes named by position (seen on 0.10.2)
    for attrs, axes in [
            ("channel_id=7, replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_1'}, x=1",
             ("model",)),
            ("replica_groups=mesh['axis_0'=8,'axis_1'=1] {'axis_0'}", ("data", "model")),
            ("replica_groups=mesh['data'=2,'model'=4] {'data'}", ("data",))]:
        assert hlo.axes_of_groups(hlo.mesh_groups(attrs), names, sizes) == axes, attrs
    for text, spec in [("{devices=[2,4]<=[8]}", (("data",), ("model",))),
                       ("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
                        (("model",), ())),
                       ("{devices=[8,1]<=[8]}", (("data", "model"), ())),
                       ("{mesh['data'=2,'model'=4], [{'data'}, {}]}", (("data",), ())),
                       ("{replicated}", ())]:
        assert propagation.spec_of(text, names, sizes) == spec, text


def test_stage_compiled_starts_with_the_program(ip):
    ip.user_ns.update(mlp=mlp, x=mlp_args()[0], w1=mlp_args()[1], w2=mlp_args()[2])
    text = ip.run_line_magic("jaxpr", "--stage compiled -o mlp(x, w1, w2)").text()
    body = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("//")]
    assert body[0].startswith("HloModule ")
    assert body[1].startswith(("%", "ENTRY")), body[1]      # a computation, not a table
    first = text.index("all-reduce(")
    tables = [text.find(t) for t in _compat.HLO_FRAME_TABLES if t + "\n" in text]
    assert all(first < t for t in tables)     # the frame tables, where a release has them


@pytest.mark.slow
def test_profile_charges_measured_time_to_the_collective(ip):
    ip.user_ns.update(mlp=mlp, x=mlp_args()[0], w1=mlp_args()[1], w2=mlp_args()[2])
    view = ip.run_line_magic("jaxpr", "--sharding --profile -o mlp(x, w1, w2)")
    assert view.costs.profiled, view.costs.notes
    (c,) = view.collectives
    assert c.seconds is not None and 0 < c.seconds <= view.costs.total_s
    assert "bytes/device · time" in view.collectives.text()
    # the cost rows: the all-reduce is a row of its own, at the matmul's line
    (row,) = [r for r in view.costs if r.collective]
    assert (row.primitive, row.seconds, row.where, row.bytes, row.index) == \
        ("all-reduce", c.seconds, c.where, c.bytes, c.equation)
    assert row in view.costs.top(len(view.costs.rows))
    assert {"collective": True, "primitive": "all-reduce"}.items() <= \
        next(r for r in view.costs.records() if r["collective"]).items()
    (matmul,) = [n for n in view.graph.nodes.values() if c.equation in n.eqns]
    line = next(ln for ln in view.dot().splitlines()
                if ln.lstrip().startswith(f"n{matmul.id} "))
    assert "all-reduce over model · 256 KiB in " in line


@pytest.mark.slow
def test_a_collectives_time_leaves_the_equation_it_was_joined_to():
    """The profiler joins the all-reduce's instruction to the second matmul; `apart`
    takes exactly what that charged the matmul and gives the collective its own row."""
    from jaxmagic.core.compiled.collectives import apart, charge_time
    from jaxmagic.core.compiled.profile import cost_rows
    from jaxmagic.graph.build import build
    from jaxmagic.overlays import Context
    from jaxmagic.overlays.sharding import compute, prepare

    t = trace(BoundCall(mlp, mlp_args(), {}, ["x", "w1", "w2"], {}, "mlp(x, w1, w2)"))
    ctx = Context(t)                    # --sharding alone, as the pipeline runs it
    prepare(ctx, "sharding")
    ctx.graph = graph = build(t, **ctx.graph_options)
    found = compute(ctx, "sharding")
    before, measured, problem = cost_rows(t, graph, True)
    assert problem is None, problem
    (c,) = found.rows
    charge_time(found.rows, measured.instructions)
    charged = measured.charged[c.instruction]
    assert c.equation in charged and c.seconds == measured.instructions[c.instruction]
    after = apart(before, found.rows, measured.charged)
    old, new = ({r.index: r for r in rows if not r.collective} for rows in (before, after))
    assert new[c.equation].seconds == pytest.approx(
        old[c.equation].seconds - charged[c.equation])
    assert [r.seconds for r in after if r.collective] == [c.seconds]
    assert sum(r.seconds for r in after) == pytest.approx(
        sum(r.seconds for r in before) - sum(charged.values()) + c.seconds)
    assert sum(r.share for r in after) == pytest.approx(1.0)


def test_a_sharding_constraint_shows_what_it_forced():
    """Auto mesh: the compiler propagates the constraint back to `sin`; the reshard of
    the argument is charged there, and every value carries the constraint's sharding."""
    m = jax.make_mesh((2, 4), ("X", "Y"), axis_types=(AxisType.Auto,) * 2)
    x = put(m, (32, 64), P("X", "Y"))

    def constrained(x):
        y = jnp.sin(x)
        z = jax.lax.with_sharding_constraint(y, NamedSharding(m, P("Y", None)))
        return z.T * 2

    view = jaxmagic.trace(constrained, x, sharding=True)
    ops = {n.primitive: n for n in view.full.nodes.values() if n.kind == "op"}
    assert ops["sharding_constraint"].detail[-1] == "→ f32[32@Y,64]"
    assert ops["transpose"].detail[-1] == "→ f32[64,32@Y]"
    assert resharded(view) == {("x", "sin"): "P('X', 'Y') → P('Y', None)"}
    moved = [c for c in view.collectives if c.argument == 0]
    assert moved and all(c.where == f"constrained:{line_of(constrained, 'sin')}"
                         and not c.written for c in moved)


def mismatched(x, w1, w2):
    h = jax.nn.relu(x @ w1)
    h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh(), P("model", "data")))
    return h @ w2


def resharded(view):
    """{(producer title, reader primitive): 'from → to'} of the edges marked moved."""
    nodes = view.full.nodes
    return {(nodes[e.src].title, nodes[e.dst].primitive): e.reshard
            for e in view.full.edges if e.reshard}


def test_a_value_resharded_between_producer_and_reader_is_marked():
    """The constraint transposes the hidden layer's layout; the compiler moves it back to
    the first matmul, whose operands must then arrive sharded otherwise: their edges say
    from what to what, and the partitioner's moves are joined to that matmul."""
    view = jaxmagic.trace(mismatched, *mlp_args(), sharding=True)
    marks = resharded(view)
    assert marks[("x", "dot_general")] == "P('data', None) → P('model', None)"
    assert marks[("w1", "dot_general")] == "P(None, 'model') → P(None, 'data')"
    assert len(marks) == 2      # w2's contraction: gathered, as its badge says, not judged
    for e in (e for e in view.full.edges if e.reshard):   # each one moves data there
        eqns = view.full.nodes[e.dst].eqns
        assert any(c.equation in eqns and not c.written and c.kind in
                   ("all-gather", "all-to-all", "collective-permute") for c in view.collectives)
    dot = view.dot()
    marked = [ln for ln in dot.splitlines() if "P('data', None) → P('model', None)" in ln]
    assert marked and 'style=dashed' in marked[0] and "#dc2626" in marked[0]
    assert "(P('data', None) → P('model', None))" in view.text()


@pytest.mark.parametrize("grad", [False, True])
def test_a_clean_program_has_no_marks(grad):
    f = jax.grad(lambda x, w1, w2: mlp(x, w1, w2).sum(), argnums=(1, 2)) if grad else mlp
    view = jaxmagic.trace(f, *mlp_args(), sharding=True)
    assert resharded(view) == {}
    assert "#dc2626" not in view.dot()


def test_an_explicit_reshard_is_marked_from_the_types():
    m = mesh(AxisType.Explicit)
    x, w1 = put(m, (256, 512), P("data", None)), put(m, (512, 1024), P(None, "model"))

    def f(x, w1):
        y = jnp.sin(x @ w1).T * 2
        return jax.sharding.reshard(y, NamedSharding(m, P("data", None)))

    marks = resharded(jaxmagic.trace(f, x, w1, sharding=True))
    assert marks == {("mul · 2", "reshard"): "P('model', 'data') → P('data', None)"}



def wide(h, k, w=None):
    branches = []
    for i in range(k):
        branches.append(jnp.sin(h * (i + 1.5)))
    s = jnp.stack(branches).sum(0)
    return s if w is None else s @ w     # contracts the sharded dimension: an all-reduce



def layers(x, w):
    with jax.named_scope("embed"):
        a = wide(x, 8)
    with jax.named_scope("mlp"):
        b = wide(x, 5, w)
    return a + b


def test_the_default_depth_opens_the_group_holding_a_collective_first():
    """Two layers side by side do not both fit equation by equation: by size alone the
    bigger `embed` opens and `mlp` shows its lines' groups; with --sharding the group
    holding the all-reduce opens first, its matmul a node of its own, and the picture
    stays legible (no coarser view)."""
    m = mesh()
    x, w = put(m, (64, 256), P(None, "model")), put(m, (256, 256), P("model", None))
    view = jaxmagic.trace(layers, x, w, sharding=True)
    (c,) = view.collectives
    assert (c.kind, c.group) == ("all-reduce", "mlp")    # the scope and the call it holds
    (holder,) = [n for n in view.graph.nodes.values() if c.equation in n.eqns]
    assert (holder.kind, holder.primitive) == ("op", "dot_general")
    assert [view.graph.clusters[k].title for k in G.ancestors(view.graph, holder.cluster)] \
        == ["mlp"]
    assert "all-reduce over" in next(ln for ln in view.dot().splitlines()
                                     if ln.lstrip().startswith(f"n{holder.id} "))
    assert not view.notes, view.notes
    plain = jaxmagic.trace(layers, x, w)
    (box,) = [n for n in plain.graph.nodes.values() if c.equation in n.eqns]
    assert box.kind == "group" and "dot_general" not in box.title, box


# ---- every label as true as the totals (issue 26) ------------------------------------------

def test_a_combined_all_reduce_is_one_collective_with_its_operands_listed():
    m = jax.make_mesh((8,), ("d",), axis_types=(AxisType.Auto,))
    x = jax.device_put(jnp.ones((64, 16)), NamedSharding(m, P("d")))
    ws = [jnp.full((16, 16), 0.1) for _ in range(4)]

    def loss(ws, x):
        for w in ws:
            x = jnp.tanh(x @ w)
        return x.sum()
    cs = jaxmagic.trace(jax.grad(loss), ws, x, sharding=True).collectives
    # XLA combines the 4 replicated weights' gradient all-reduces into one instruction
    assert len({c.instruction for c in cs}) == 1 and cs.count == 1
    # ... whose bytes stay shared out to the 4 equations they come from
    assert len(cs.rows) == 4 and len({c.equation for c in cs}) == 4
    assert cs.bytes == 4 * 16 * 16 * 4
    assert cs.headline().startswith("1 collective on 8 devices, 4 KiB")
    text = cs.text()
    # one row per group it is drawn in (the loop's folded layers, its first layer's
    # backward beside them): the operands add up to 4, the instruction is never ×N
    parts = [int(k or 1) for k in re.findall(r"all-reduce(?: \((\d+) operands\))?  ", text)]
    assert sum(parts) == 4 and "all-reduce ×" not in text, text
    assert f"{cs[0].instruction} combines 4 operands into one collective" in text


def test_the_table_says_what_bytes_per_device_counts():
    m = jax.make_mesh((8,), ("d",), axis_types=(AxisType.Explicit,))

    def f(x):
        return shard_map(lambda a: jax.lax.psum_scatter(a, "d", tiled=True), mesh=m,
                         in_specs=P("d"), out_specs=P("d"))(x)
    cs = jaxmagic.trace(f, put(m, (64, 16), P("d")), sharding=True).collectives
    (c,) = cs
    # a reduce-scatter's operand, 8 rows of 16 floats per device, 8× its result
    assert c.kind == "reduce-scatter" and c.bytes == 8 * 16 * 4
    said = "bytes/device: the larger of a collective's input and output, as one device " \
        "holds it"
    assert said in cs.text() and said.replace("'", "&#x27;") in cs.side_html()


def test_unreduced_types_are_shown_as_make_jaxpr_prints_them():
    if not hasattr(P(), "unreduced"):
        pytest.skip("this JAX has no unreduced axes")
    m = jax.make_mesh((2,), ("X",), axis_types=(AxisType.Explicit,))

    def f(x, y):
        return jnp.einsum("ij,jk->ik", x, y, out_sharding=P(None, None, unreduced={"X"}))
    x, y = put(m, (2, 4), P(None, "X")), put(m, (4, 2), P("X", None))
    with (jax.set_mesh(m) if hasattr(jax, "set_mesh") else jax.sharding.use_mesh(m)):
        printed = str(jax.make_jaxpr(f)(x, y))
        labels = {e.label for e in jaxmagic.trace(f, x, y, sharding=True).full.edges}
    assert "f32[2,2]{U:X}" in printed
    # JAX's own type stands: the compiler's propagated sharding writes no unreduced axes
    assert labels == {"f32[2,4@X]", "f32[4@X,2]", "f32[2,2]{U:X}"}


def test_a_plain_jaxpr_writes_the_types_as_make_jaxpr_prints_them():
    """No --sharding: an Explicit mesh's types (`f32[8@X,4]`) and a manual
    axis's varying values (`{V:X}`) are part of every jaxpr JAX prints, so the edges say
    them too."""
    m = jax.make_mesh((8,), ("X",), axis_types=(AxisType.Explicit,))
    x = put(m, (8, 4), P("X", None))

    def f(a):
        b = jnp.sin(a) * 2
        return shard_map(lambda v: v + jax.lax.axis_index("X"), mesh=m, in_specs=P("X"),
                         out_specs=P("X"))(b)

    with (jax.set_mesh(m) if hasattr(jax, "set_mesh") else jax.sharding.use_mesh(m)):
        printed = str(jax.make_jaxpr(f)(x))
        view = jaxmagic.trace(f, x)
    labels = {e.label for e in view.full.edges}
    assert "f32[8@X,4]" in printed and "f32[8@X,4]" in labels
    typed = {t for t in labels if "{" in t}
    assert typed and all(t in printed for t in typed)
