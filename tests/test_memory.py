"""`%jaxpr --memory`: XLA's buffer assignment and live ranges of real programs, joined
back to the user's equations and inputs, on every release's dump format."""
import base64
import re
import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import pytest
from conftest import run
from test_releases import NEWEST, only_on, per_range

import jaxmagic
from jaxmagic import _compat
from jaxmagic.core.compiled import memory as M
from jaxmagic.core.compiled.analysis import analyze
from jaxmagic.core.target import BoundCall
from jaxmagic.core.trace import trace
from jaxmagic.graph.build import build
from jaxmagic.render import html as H
from jaxmagic.render.memory import Memory, curve_svg

LAYERS, WIDTH = 16, 256
MIB = WIDTH * WIDTH * 4          # one activation, f32[256,256]


def layer(w, x):
    h = x @ w
    return x + jnp.tanh(h) * jax.nn.sigmoid(h)


def mlp(remat: bool):
    step = jax.checkpoint(layer) if remat else layer

    def loss(params, x):
        for w in params:
            x = step(w, x)
        return (x ** 2).mean()
    return loss


@pytest.fixture(scope="module")
def params():
    key = jax.random.PRNGKey(0)
    return [jax.random.normal(jax.random.fold_in(key, i), (WIDTH, WIDTH)) * 0.05
            for i in range(LAYERS)], jnp.ones((WIDTH, WIDTH))


def traced(f, *args, names=None):
    names = names or [f"a{i}" for i in range(len(args))]
    return trace(BoundCall(f, args, {}, names, {}, "f(...)"))


# ---- the 16-layer gradient ------------------------------------------------------------

def test_gradient_peak_names_each_layers_saved_activations(params):
    view = jaxmagic.memory(jax.grad(mlp(False)), *params)
    m = view.memory
    p = m.profile
    # the peak is what XLA reserves: temp + arguments + outputs (within 25%)
    assert abs(p.peak_bytes - p.xla_total) <= 0.25 * p.xla_total
    assert p.backward_from is not None and p.peak_step >= p.backward_from
    # every byte live at the peak reached an equation or an input
    assert all(b.equation is not None or b.input for b in p.live)
    saved = [r for r in m.rows() if r.kind == M.SAVED and r.group == f"layer ×{LAYERS}"]
    # tanh and sigmoid of each of the 16 layers, and the output of 15 (the last one's is
    # not kept), folded ×16 into one row each
    assert {r.what: r.count for r in saved} == {"tanh": 16, "logistic": 16, "add": 15}
    assert all(r.shape == f"f32[{WIDTH},{WIDTH}]" and r.where.startswith("layer:")
               for r in saved)
    assert sum(r.bytes for r in saved) == 47 * MIB
    args = [r for r in m.rows() if r.kind == M.ARGUMENT]
    assert {r.what: r.count for r in args} == {"params[i]": 16, "x": 1}
    # the records hold the same buffers, one per row
    records = m.records()
    assert len(records) == len(p.live) and sum(r["bytes"] for r in records) == p.peak_bytes
    assert f"layer ×{LAYERS}" in m.text() and "tanh" in m.text()


# Whether per-layer jax.checkpoint lowers the peak on CPU: up to 0.10 XLA merges the
# recomputation into the forward pass and keeps its result (measured on 0.7.2, 0.10.2);
# 0.12 recomputes in the backward pass (0.12.0.1). 0.11 was not measured here.
REMAT_LOWERS_PEAK = (((0, 7, 0), (0, 10, 2), False), ((0, 12, 0), NEWEST, True))


@per_range("first, last, lowers", REMAT_LOWERS_PEAK,
           lambda v: "remat lowers the peak" if v else "remat saved anyway")
def test_per_layer_checkpoint_shows_what_remat_changes(first, last, lowers, params):
    only_on(first, last)
    plain = jaxmagic.memory(jax.grad(mlp(False)), *params).memory
    remat = jaxmagic.memory(jax.grad(mlp(True)), *params).memory
    kinds = remat.profile.by_kind()
    assert abs(remat.peak_bytes - remat.profile.xla_total) <= 0.25 * remat.profile.xla_total
    # what the backward pass holds at the peak are gradients, not recomputed values
    assert M.GRADIENT in kinds
    if lowers:
        assert remat.peak_bytes <= plain.peak_bytes * 0.6
        # each layer's matmul is computed again in the backward pass
        assert [b.primitive for b in remat.profile.buffers if b.kind == M.RECOMPUTED] == \
            ["dot_general"] * LAYERS
        saved = {r.what: r.count for r in remat.rows() if r.kind == M.SAVED}
        assert saved == {"add": LAYERS - 1}       # only each layer's output is kept
    else:
        assert remat.peak_bytes >= plain.peak_bytes * 0.7
        # the recomputed matmul is among the saved values, and the view says why
        assert any(b.kind == M.SAVED and b.recompute for b in remat.live)
        assert "merged the recomputation with the forward pass" in remat.text()


# ---- formats per release ------------------------------------------------------------------

# Where XLA writes the live ranges: at the end of `*-buffer-assignment.txt` on 0.7.2, in a
# `*-live-range.txt` of its own on 0.10.2 and 0.12 (0.8-0.9 not measured; either is read).
LIVE_RANGE_DUMPS = (((0, 7, 0), (0, 7, 2), "buffer-assignment"), ((0, 10, 0), NEWEST, "own"))


@per_range("first, last, where", LIVE_RANGE_DUMPS, str)
def test_dump_formats_parse_on_each_release(first, last, where, params):
    only_on(first, last)
    a = analyze(traced(jax.grad(mlp(False)), *params))
    if where == "buffer-assignment":
        assert "Used values:" not in a.buffer_assignment   # the values list is left out
    values = M.parse_buffers(a.buffer_assignment)
    schedule, ranges = M.parse_live_ranges(a.live_ranges)
    assert schedule and len(schedule) == int(re.search(r"max (\d+)", a.live_ranges)[1])
    assert set(ranges) <= set(values) | {k for k in ranges if "{" in k}
    params_alloc = {v[3] for v in values.values() if v[3].startswith("parameter")}
    assert params_alloc == {f"parameter {k}" for k in range(LAYERS + 1)}
    assert all(_compat.ALLOCATION.match(line) for line in a.buffer_assignment.splitlines()
               if line.startswith("allocation "))


def test_live_curve_counts_a_shared_slot_once():
    spans = [(0, 3, (0, 0), 10), (1, 2, (0, 0), 10), (2, 4, (1, 0), 5), (5, 5, (0, 0), 4)]
    assert M.live_curve(6, spans) == [10, 10, 15, 15, 5, 4]


def test_backward_boundary_takes_the_best_split():
    f, b = False, True
    assert M.backward_boundary([None, f, f, b, f, b, b, None]) == 3
    assert M.backward_boundary([f, f, None]) is None


def test_scan_loop_carries_join_to_the_loop_and_inputs():
    def f(ws, x):
        def body(x, w):
            return jnp.tanh(x @ w), None
        return (jax.lax.scan(body, x, ws)[0] ** 2).sum()
    t = traced(jax.grad(f), jnp.ones((4, 64, 64)), jnp.ones((32, 64)), names=["ws", "x"])
    p = M.memory_profile(t, build(t), analyze(t))
    assert p.live and all(b.equation is not None or b.input for b in p.live)
    assert {b.input for b in p.live if b.kind == M.ARGUMENT} == {"ws", "x"}
    assert abs(p.peak_bytes - p.xla_total) <= 0.25 * p.xla_total


def test_an_argument_jit_drops_leaves_the_others_their_names():
    """jit drops an input nothing uses (Haiku's LSTM step takes a `step` it never
    reads): XLA's parameter 0 is then input 1. The argument after it took the dropped
    one's name, `params['b']` on `params['w']`'s buffer and `params['w']` on `x`'s."""
    def update(step, params, x):
        return jax.tree.map(lambda p: p - 0.1 * p * jnp.sum(x), params)

    params = {"b": jnp.zeros(128), "w": jnp.ones((33, 128))}
    t = traced(update, 0, params, jnp.ones((64, 8, 1)), names=["step", "params", "x"])
    p = M.memory_profile(t, build(t), analyze(t))
    named = {b.shape: b.input for b in p.live if b.kind == M.ARGUMENT}
    assert named == {"f32[33,128]": "params['w']", "f32[64,8,1]": "x",
                     "f32[128]": "params['b']"}, named


def test_sharded_program_is_per_device():
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((8,), ("d",))
    x = jax.device_put(jnp.ones((1024, 256)), NamedSharding(mesh, P("d")))
    view = jaxmagic.memory(lambda x, w: jnp.tanh(x @ w).sum(), x, jnp.ones((256, 256)))
    m = view.memory
    assert m.profile.num_devices == 8
    (xs,) = [b for b in m.live if b.input == "x"]
    assert xs.shape == "f32[128,256]" and xs.bytes == 128 * 256 * 4     # one shard
    assert "per device (8 devices)" in m.headline() and "per device" in m.text()


# ---- what the user sees -------------------------------------------------------------------

def test_memory_magic_draws_bytes_at_peak(ip):
    ip.run_cell("def step(a, b):\n    return jnp.tanh(jnp.tanh(a @ b) @ b).sum()\n"
                "a = jnp.ones((256, 256))")
    r, cap = run(ip, "_v = %jaxpr --memory -o jax.grad(step)(a, a)")
    assert r.success, r.error_in_exec
    view = ip.user_ns["_v"]
    m = view.memory
    assert m.peak_bytes > 0 and view.costs is None
    html = view._repr_mimebundle_()["text/html"]
    assert "share of the bytes live at the peak, log scale" in html
    assert "live at the peak" in html and "<svg" not in html and "<style" not in html
    assert "at peak" in view.dot() and "penwidth=3" in view.dot()   # the peak's equation
    assert "memory of jax.grad(step)" in view.text() and "XLA: temp" in view.text()
    r, cap = run(ip, "%jaxpr --memory jax.grad(step)(a, a)")
    assert r.success and "live at the peak" in cap.outputs[0].data["text/html"]


def test_a_tables_rows_carry_its_ink_once_per_row(ip):
    """The tables beside a picture give each row the panel colour and ink, which its
    cells inherit; each cell keeps its own alignment and padding (what the notebook
    themes set on cells). The ink written on each cell was 15 bytes of every one."""
    ip.run_cell("def step(a, b):\n    return jnp.tanh(a @ b).sum()\na = jnp.ones((64, 64))")
    r, _ = run(ip, "_v = %jaxpr --memory -o jax.grad(step)(a, a)")
    assert r.success, r.error_in_exec
    html = ip.user_ns["_v"]._repr_mimebundle_()["text/html"]
    rows = re.findall(r'<tr style="([^"]*)">(.*?)</tr>', html)
    cells = [c for _, row in rows for c in re.findall(r'<t[dh] style="([^"]*)"', row)]
    assert len(rows) > 8 and all(f"color:{H.INK}" in style for style, _ in rows)
    assert cells and all("text-align:left" in c and "padding:" in c and f"color:{H.INK}"
                         not in c for c in cells)


def test_memory_option_has_help(ip):
    help_text = ip.find_line_magic("jaxpr").__doc__
    assert "--memory" in help_text and "bytes live at the compiled program's" in help_text


def test_curve_chart_is_static_svg_in_an_img():
    p = M.MemoryProfile([0, 5, 20, 10, 3], ["a", "b", "c", "d", "e"], 2, [], 3, 1, 1, 1,
                        None, "cpu", 1)
    svg = curve_svg(p)
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg") and "peak 20 B at step 2" in svg and "backward pass" in svg
    assert not root.findall(".//{http://www.w3.org/2000/svg}script")
    html = Memory(p).side_html()
    uri = re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', html)[1]
    assert base64.b64decode(uri).decode() == svg


# ---- library train steps: the peak by module ----------------------------------------------

@pytest.mark.slow
def test_flax_nnx_train_step_peak_by_module(ip):
    pytest.importorskip("flax")
    ip.run_cell('''
import optax
from flax import nnx
class MLP(nnx.Module):
    def __init__(self, rngs):
        self.l1 = nnx.Linear(128, 512, rngs=rngs)
        self.l2 = nnx.Linear(512, 10, rngs=rngs)
    def __call__(self, x):
        return self.l2(nnx.relu(self.l1(x)))
model = MLP(nnx.Rngs(0))
try:
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
except TypeError:
    optimizer = nnx.Optimizer(model, optax.adam(1e-3))
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    try:
        optimizer.update(model, grads)
    except TypeError:
        optimizer.update(grads)
    return loss
x, y = jnp.ones((1024, 128)), jnp.zeros((1024,), jnp.int32)
kernel = jnp.array(model.l1.kernel[...])
''')
    r, _ = run(ip, "_v = %jaxpr --memory -o train_step(model, optimizer, x, y)")
    assert r.success, r.error_in_exec
    m = ip.user_ns["_v"].memory
    modules = {r.what for r in m.rows() if r.kind == M.ARGUMENT}
    assert "model.l1.kernel" in modules and any(w.startswith("optimizer.") for w in modules)
    groups = " ".join(r.group for r in m.rows())
    assert "Linear" in groups or "optimizer.update" in groups
    # the peak by module: the layers' parameters and their optimizer state, by layer
    by_group = dict(m.groups(20))
    assert by_group["inputs: model.l1"] == 128 * 512 * 4 + 512 * 4      # kernel + bias
    assert any(g.startswith("inputs: optimizer.") and g.endswith(".l1") for g in by_group)
    assert "by group" in m.text()
    assert all(b.equation is not None or b.input or b.kind == M.CONSTANT for b in m.live)
    assert ip.run_cell("assert (model.l1.kernel[...] == kernel).all()").success


@pytest.mark.slow
def test_equinox_train_step_peak_by_module(ip):
    pytest.importorskip("equinox")
    ip.run_cell('''
import optax, equinox as eqx
emodel = eqx.nn.MLP(128, 10, 512, 2, key=jax.random.key(0))
opt = optax.adam(1e-3)
ostate = opt.init(eqx.filter(emodel, eqx.is_array))
def estep(model, ostate, x, y):
    def loss_fn(model):
        return optax.softmax_cross_entropy_with_integer_labels(jax.vmap(model)(x), y).mean()
    loss, grads = eqx.filter_value_and_grad(loss_fn)(model)
    updates, ostate = opt.update(grads, ostate, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), ostate, loss
x, y = jnp.ones((1024, 128)), jnp.zeros((1024,), jnp.int32)
''')
    r, _ = run(ip, "_v = %jaxpr --memory -o estep(emodel, ostate, x, y)")
    assert r.success, r.error_in_exec
    m = ip.user_ns["_v"].memory
    groups = {r.group for r in m.rows()}
    assert any("MLP" in g and "Linear" in g for g in groups), groups
    # the update after the backward pass is no forward pass: activations count as saved
    assert any(r.kind == M.SAVED and "Linear" in r.group for r in m.rows()), m.text()
    assert any(r.what.startswith("emodel.layers") for r in m.rows() if r.kind == M.ARGUMENT)
    by_group = dict(m.groups(20))
    assert by_group["inputs: emodel.layers[0]"] == 128 * 512 * 4 + 512 * 4
    assert all(b.equation is not None or b.input or b.kind == M.CONSTANT for b in m.live)


def test_backward_boundary_ignores_the_update_after_backward():
    f, b = False, True
    assert M.backward_boundary([f, f, f, b, b, b, f, f, f, f, f]) == 3


def test_a_dump_without_live_ranges_says_so(params):
    import dataclasses

    t = traced(jax.grad(mlp(False)), *params)
    empty = dataclasses.replace(analyze(t), live_ranges="")
    with pytest.raises(M.MemoryUnavailable, match="held no live ranges"):
        M.memory_profile(t, build(t), empty)


def test_a_program_xla_cannot_compile_gets_a_note_not_a_traceback():
    def f(x):
        return jax.ffi.ffi_call("no_such_target", jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
    view = jaxmagic.memory(f, jnp.ones(3))
    assert view.memory is None
    (note,) = [n for n in view.notes if n.startswith("--memory unavailable")]
    assert "no_such_target" in note and note in view._repr_mimebundle_()["text/html"]


def test_donated_arguments_are_compiled_as_the_user_jits_them():
    def update(params, x):
        return jax.tree.map(lambda p: p * 0.9 + x.sum(), params)
    params = {"w1": jnp.ones((512, 512)), "w2": jnp.ones((512, 512))}
    x = jnp.ones((8, 512))
    plain = jaxmagic.memory(update, params, x).memory
    # old and new parameters both live at the end: the view says donation would help
    assert plain.profile.donatable_bytes() == 2 * 512 * 512 * 4
    assert "donating those arguments" in plain.text()
    assert {b.shape for b in plain.live if b.kind == M.OUTPUT} >= {"f32[512,512]"}
    for jitted in (jax.jit(update, donate_argnums=0),
                   jax.jit(update, donate_argnames="params")):
        donated = jaxmagic.memory(jitted, params, x).memory
        assert donated.profile.alias_bytes == 2 * 512 * 512 * 4
        assert donated.peak_bytes < plain.peak_bytes
        assert "donating those arguments" not in donated.text()
    assert not params["w1"].is_deleted()      # compiled, never run: the user's arrays stay


# ---- every label as true as the totals (issue 26) ------------------------------------------

def test_xla_constants_are_a_line_of_their_own_not_in_the_peak():
    # XLA keeps `[1, 2, 3, 4]` as a constant allocation: embedded in the program, outside
    # memory_analysis()'s temp + arguments + outputs
    def f(x):
        return jnp.sum(jnp.cos(jnp.sin(x) * jnp.array([1., 2., 3., 4.])) ** 2)
    m = jaxmagic.memory(jax.grad(f), jnp.ones(4)).memory
    p = m.profile
    assert any(b.kind == M.CONSTANT for b in p.buffers)
    assert p.peak_bytes <= p.xla_total == 32
    assert M.CONSTANT not in p.by_kind() and all(b.kind != M.CONSTANT for b in p.live)
    assert p.constant_bytes == 16
    assert "XLA: constants (in the program, not in the peak): 16 B" in m.text()


def _two_checkpoints():
    def g(w, x):
        return jnp.sin(w @ x)

    def two(W1, W2, X):
        return jnp.sum(jax.checkpoint(g)(W2, jax.checkpoint(g)(W1, X)))
    return lambda ct, *a: jax.vjp(two, *a)[1](ct)


def _reads_cotangent(text: str) -> set[str]:
    """The reference, from XLA's compiled HLO and nothing of jaxmagic's joins: the entry
    instructions that parameter 0 (the cotangent) reaches, operand by operand."""
    from jaxmagic.core.compiled import hlo
    program = hlo.parse(text)
    entry = {i.computation for i in program.values() if i.opcode == "parameter"
             and i.operand_text.strip() == "0" and i.name.startswith("args_0")}
    (entry,) = entry
    reached = {i.name for i in program.values() if i.computation == entry
               and i.opcode == "parameter" and i.operand_text.strip() == "0"}
    for ins in program.values():          # HLO text lists operands before their users
        if ins.computation == entry and reached.intersection(ins.operands):
            reached.add(ins.name)
    return reached


REMAT3 = [False] + ([True] if "jax_remat3" in jax.config.values else [])


@pytest.mark.parametrize("remat3", REMAT3, ids=lambda v: "remat3" if v else "remat2")
def test_cotangents_are_gradients_and_recomputed_is_a_forward_value_again(remat3):
    W, X = jnp.ones((4, 4)), jnp.ones((4, 2))
    before = jax.config.values.get("jax_remat3")
    if remat3:
        jax.config.update("jax_remat3", True)
    try:
        t = traced(_two_checkpoints(), 1., W, W, X)
        a = analyze(t)
        p = M.memory_profile(t, build(t), a)
    finally:
        if remat3:
            jax.config.update("jax_remat3", before)
    gradients = _reads_cotangent(a.compiled_text)
    made = [b for b in p.buffers if b.kind not in (M.ARGUMENT, M.OUTPUT, M.CONSTANT)]
    assert made and gradients
    for b in made:
        # a buffer holds a gradient exactly when the cotangent reaches its instruction
        assert (b.kind == M.GRADIENT) == (b.instruction in gradients), (b, gradients)
    # each checkpoint's matmul is computed again in the backward pass, under remat3 too
    # (0.12 keeps remat3's recomputation in one equation: the checkpoint)
    recomputed = [b for b in p.buffers if b.kind == M.RECOMPUTED]
    assert recomputed and all(b.primitive in ("dot_general", "checkpoint")
                              for b in recomputed)


def test_a_computed_value_is_never_named_after_an_input():
    # JAX's gradient-checkpointing page, first cell: XLA:CPU's `dot` of a matrix and a
    # vector carries no op_name, and reads an input
    def g(W, x):
        return jnp.sin(jnp.dot(W, x))

    def f(W1, W2, W3, x):
        return g(W3, g(W2, g(W1, x)))
    args = jnp.ones(7), jnp.ones((5, 4)), jnp.ones((6, 5)), jnp.ones((7, 6)), jnp.ones(4)
    t = traced(lambda ct, *a: jax.vjp(f, *a)[1](ct), *args)
    a = analyze(t)
    p = M.memory_profile(t, build(t), a)
    from jaxmagic.core.compiled import hlo
    from jaxmagic.core.cost import walk
    program = hlo.parse(a.compiled_text)
    eqns = {i: e for i, e, *_ in walk(t.jaxpr)}
    dots = [b for b in p.buffers if program[b.instruction].opcode == "dot"]
    assert dots
    if _compat.JAX_VERSION >= (0, 10, 0):    # measured on 0.10.2, 0.12; 0.7.2 tags them
        assert all(not program[b.instruction].tags for b in dots)    # no op_name
    for b in p.buffers:
        if program[b.instruction].opcode != "parameter":
            assert not b.input, b           # computed: never an input's name
    for b in dots:
        # joined to the matmul that makes it: a dot_general of as many elements
        # (XLA's `f32[5,1]` is the jaxpr's `f32[5]`), or said to be unattributed
        assert b.equation is not None and b.primitive == "dot_general", b
        (out,) = eqns[b.equation].outvars
        assert out.aval.size == b.bytes // 4
    m = Memory(p)
    assert not any(r.kind == M.SAVED and r.what.startswith("arg") for r in m.rows())


def test_a_buffer_xla_made_without_its_op_name_is_joined_through_its_fusion():
    """XLA:CPU computes a convolution's weight gradient in a fusion that carries no
    op_name, from the input's transposed copy (a fusion untagged too): both were
    "unattributed: made by no equation of the program (XLA's copy of a constant, a loop's
    bookkeeping)", a wrong cause (a Haiku GAN's step: 800 KiB of its 10.8 MiB peak). A
    fusion's parameter holds its operand (the copy is `x`'s); an untagged computation
    read only by one equation's instructions is that equation's work."""
    def loss(w, x):
        y = jax.lax.conv_general_dilated(x, w, (2, 2), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jnp.sum(jnp.tanh(y))

    t = traced(jax.grad(loss), jnp.ones((5, 5, 16, 32)), jnp.ones((8, 14, 14, 16)))
    a = analyze(t)
    p = M.memory_profile(t, build(t), a)
    from jaxmagic.core.compiled import hlo
    from jaxmagic.core.cost import walk
    program = hlo.parse(a.compiled_text)
    eqns = {i: e for i, e, *_ in walk(t.jaxpr)}
    untagged = [b for b in p.buffers if program[b.instruction].opcode == "fusion"
                and not a.instructions.tags.get(b.instruction)]    # nor all it fuses
    assert untagged
    assert not [r for r in Memory(p).rows() if r.kind == "unattributed"]
    (x,) = [b.input for b in p.buffers if program[b.instruction].opcode == "parameter"
            and b.shape == "f32[8,14,14,16]"]
    made = [b for b in untagged if not b.input]
    copies = [b for b in untagged if b.input]
    assert [b.input for b in copies] == [x]      # the transposed copy of `x`
    for b in made:
        assert b.primitive == "conv_general_dilated", b
        assert _compat.is_backward(eqns[b.equation]), b      # the gradient's, not forward


def test_a_scans_counters_and_copies_are_not_gradients_nor_saved_activations():
    def f(ws, x):
        def body(x, w):
            return jnp.tanh(x @ w), None
        return jax.lax.scan(body, x, ws)[0]
    t = traced(lambda ct, *a: jax.vjp(f, *a)[1](ct), jnp.ones((32, 64)),
               jnp.ones((4, 64, 64)), jnp.ones((32, 64)))
    a = analyze(t)
    p = M.memory_profile(t, build(t), a)
    from jaxmagic.core.compiled import hlo
    program = hlo.parse(a.compiled_text)
    entry = program["args_0_.1"].computation
    reached = _reads_cotangent(a.compiled_text)
    for b in p.buffers:
        ins = program[b.instruction]
        from_constants = all(program[o].opcode == "constant" for o in ins.operands)
        if ins.computation == entry and ins.opcode not in ("parameter", "tuple", "while") \
                and b.kind not in (M.OUTPUT, M.CONSTANT) and not from_constants:
            # outside the loops, XLA's own data flow says which hold the cotangent (the
            # copy of it the backward loop starts from included)
            assert (b.kind == M.GRADIENT) == (b.instruction in reached), b
        if from_constants:
            assert b.kind != M.SAVED, b
        if not b.shape.startswith("f"):
            # a loop's counter or condition: an integer has no cotangent
            assert b.kind != M.GRADIENT, b
        if b.equation is None and not b.input:
            # made by no equation (XLA's copy of a constant): not called an activation
            assert b.kind not in (M.SAVED, M.RECOMPUTED), b
    # the zeros (from constants) the backward loop accumulates the weights' gradient in,
    # and the cotangents it carries
    assert [b.shape for b in p.buffers if b.kind == M.GRADIENT and
            program[b.instruction].computation == entry and
            all(program[o].opcode == "constant" for o in program[b.instruction].operands)
            ] == ["f32[4,64,64]"]
    assert {b.shape for b in p.buffers if b.kind == M.GRADIENT and
            program[b.instruction].opcode == "parameter"} == {"f32[32,64]", "f32[4,64,64]"}


@pytest.mark.parametrize("remat3", REMAT3, ids=lambda v: "remat3" if v else "remat2")
def test_a_checkpoint_policys_recomputation_holds_no_gradient(remat3):
    # 0.12 with remat3: a checkpoint with a policy recomputes in a call_hi_primitive whose
    # saved input comes through the optimization_barrier that also carries the cotangent
    def g(W, x):
        return jnp.sin(jnp.dot(W, x))

    def f(W1, W2, W3, x):
        c = jax.checkpoint(g, policy=jax.checkpoint_policies.nothing_saveable)
        return c(W3, c(W2, c(W1, x)))
    args = jnp.ones(7), jnp.ones((5, 4)), jnp.ones((6, 5)), jnp.ones((7, 6)), jnp.ones(4)
    before = jax.config.values.get("jax_remat3")
    if remat3:
        jax.config.update("jax_remat3", True)
    try:
        t = traced(lambda ct, *a: jax.vjp(f, *a)[1](ct), *args)
        a = analyze(t)
        p = M.memory_profile(t, build(t), a)
    finally:
        if remat3:
            jax.config.update("jax_remat3", before)
    from jaxmagic.core.compiled import hlo
    program = hlo.parse(a.compiled_text)
    entry = program["args_0_.1"].computation
    reached = _reads_cotangent(a.compiled_text)
    judged = [b for b in p.buffers if program[b.instruction].computation == entry
              and program[b.instruction].opcode not in ("parameter", "tuple")
              and b.kind not in (M.OUTPUT, M.CONSTANT)]
    assert judged
    for b in judged:
        assert (b.kind == M.GRADIENT) == (b.instruction in reached), b


def test_the_headline_names_the_equation_at_the_peak():
    W, X = jnp.ones((4, 4)), jnp.ones((4, 2))
    m = jaxmagic.memory(_two_checkpoints(), 1., W, W, X).memory
    p = m.profile
    from jaxmagic.core.cost import walk
    t = traced(_two_checkpoints(), 1., W, W, X)
    eqns = {i: e for i, e, *_ in walk(t.jaxpr)}
    assert p.peak_equation is not None
    name = _compat.user_primitive_name(eqns[p.peak_equation].primitive.name)
    assert f"backward pass), in {name} at " in m.headline()
    assert m.headline() in m.text()
