"""Issue 17's argument items on real objects: inputs named as the user wrote them, and the
traced program the one the user's own jit traces."""
from conftest import run

from jaxmagic.graph import ends

SETUP = """
from functools import partial
from typing import NamedTuple
from flax import nnx

class TrainState(NamedTuple):
    params: dict
    step: int

state = TrainState({'w': jnp.ones((3, 3)), 'b': jnp.zeros(3)}, 0)

@jax.jit
def scaled(p, lr, n):
    return jax.tree.map(lambda a: a * lr * n, p)

@jax.jit
def by_step(s, x):
    return x @ s.params['w'] * s.step

def plain(s, x):
    return x @ s.params['w'] * s.step

@partial(nnx.jit, static_argnames=('smoothing', 'pad_id'))
def smoothed(x, smoothing=0.1, pad_id=0):
    return x * (1 - smoothing) + pad_id
"""


def _inputs(view):
    """Each argument's record (its leaves) or input, as `records` makes them (three or more
    are drawn in one box, a line each)."""
    return [(n.title, n.detail) for n in ends.records(view.full).nodes.values()
            if n.kind == "input"]


def test_an_argument_is_named_by_its_whole_source_text(ip):
    ip.run_cell(SETUP)
    v = ip.run_line_magic("jaxpr", "-o scaled({'params': state.params}, 0.0, 0)")
    titles = [t for t, _ in _inputs(v)]
    assert "{'params': state.params} · 2 leaves" in titles, titles
    record = dict(_inputs(v))["{'params': state.params} · 2 leaves"]
    assert record[0].startswith("params.b") and record[1].startswith("params.w"), record
    assert "0.0" in titles and "0" in titles          # two arguments, two inputs


def test_a_jax_jit_callee_traces_every_leaf_as_jit_does(ip):
    ip.run_cell(SETUP)
    v = ip.run_line_magic("jaxpr", "-o by_step(state, jnp.ones(3))")
    record = dict(_inputs(v))["state · 3 leaves"]
    assert any(line.startswith("step i32[]") for line in record), record
    assert not any("held static" in n for n in v.notes), v.notes
    # an undecorated callee keeps the filter rule: the int is held, and the view says so
    v = ip.run_line_magic("jaxpr", "-o plain(state, jnp.ones(3))")
    assert any("held static" in n and "state.step=0" in n for n in v.notes), v.notes


def test_nnx_jit_static_argnames_are_honoured(ip):
    ip.run_cell(SETUP)
    v = ip.run_line_magic("jaxpr", "-o smoothed(jnp.ones(3), smoothing=0.2, pad_id=1)")
    titles = [t for t, _ in _inputs(v)]
    assert titles == ["jnp.ones(3)"], titles
    r, cap = run(ip, "r = %jit_compare -o --budget 0.05 smoothed(jnp.ones(3), smoothing=0.2)")
    assert r.error_in_exec is None and ip.user_ns["r"].static_argnames == ("smoothing",
                                                                             "pad_id")


EQX_STEP = """
import equinox as eqx, optax

class Block(eqx.Module):
    lin: eqx.nn.Linear
    drop: eqx.nn.Dropout

    def __init__(self, key):
        self.lin = eqx.nn.Linear(4, 4, key=key)
        self.drop = eqx.nn.Dropout(0.1, inference=True)

    def __call__(self, x):
        return self.drop(jax.nn.relu(self.lin(x)))

block = Block(jax.random.key(0))
sgd = optax.sgd(0.1)
sgd_state = sgd.init(eqx.filter(block, eqx.is_array))

@eqx.filter_jit
def eqx_step(model, opt_state, x):
    loss, g = eqx.filter_value_and_grad(lambda m: jnp.sum(m(x) ** 2))(model)
    updates, opt_state = sgd.update(g, opt_state)
    return eqx.apply_updates(model, updates), opt_state, loss
"""


def test_an_eqx_filter_jit_steps_python_fields_are_no_outputs(ip):
    """`eqx.filter_jit` returns Dropout.p and .inference as the Python values they were:
    they were drawn as `const 0.1` / `const True` outputs typed f32[] and bool[]."""
    ip.run_cell(EQX_STEP)
    v = ip.run_line_magic("jaxpr", "-o eqx_step(block, sgd_state, jnp.ones(4))")
    assert not [n.title for n in v.graph.nodes.values() if n.kind == "const"]
    outputs = " ".join(" ".join(n.detail) for n in v.graph.nodes.values() if n.kind == "output")
    assert "drop" not in outputs and "lin.weight" in outputs, outputs
    assert any("2 output leaves are not arrays" in n for n in v.notes), v.notes


PMAP_STEP = """
def pm_loss(w, x):
    return jnp.mean(jnp.tanh(x @ w) ** 2)

def pm_step(w, x):
    l, g = jax.value_and_grad(pm_loss)(w, x)
    return w - 0.1 * jax.lax.pmean(g, 'i'), l

pstep = jax.pmap(pm_step, axis_name='i')
"""


def test_a_pmap_target_is_drawn_as_pmap_with_its_backward_pass(ip):
    """It was `jit: _fun › shard_map` (JAX's implementation), one closed box."""
    ip.run_cell(PMAP_STEP)
    v = ip.run_line_magic("jaxpr", "-o pstep(jnp.ones((8, 4, 4)), jnp.ones((8, 2, 4)))")
    titles = [c.title for c in v.graph.clusters.values()]
    assert titles[0].startswith("pmap: ") and not any(
        t.startswith(("jit: _fun", "shard_map")) for t in titles), titles
    assert "pm_step · backward" in titles or "pm_loss · backward" in titles, titles
    assert any(n.primitive == "psum" for n in v.graph.nodes.values())


def test_the_same_argument_written_twice_is_two_inputs(ip):
    """`f(x, x)`: jit traces two inputs; they were one record `x · 2 leaves` (and a pytree
    passed twice one record of both copies' leaves)."""
    ip.run_cell(SETUP)
    v = ip.run_line_magic("jaxpr", "-o scaled(state.params, 0.5, 0.5)")
    assert [t for t, _ in _inputs(v)] == ["state.params · 2 leaves", "0.5", "0.5 #2"]
    ip.run_cell("def both(a, b):\n    return jax.tree.map(jnp.add, a, b)")
    v = ip.run_line_magic("jaxpr", "-o both(state.params, state.params)")
    inputs = _inputs(v)
    assert [t for t, _ in inputs] == ["state.params · 2 leaves", "state.params #2 · 2 leaves"]
    assert inputs[1][1] == inputs[0][1]       # the same leaves, each under its own record


def test_a_pmap_target_traces_every_leaf(ip):
    """`jax.pmap` traces a pytree's Python numbers too (flax's imagenet step: a
    `TrainState.step = 0` drew a learning-rate schedule with a constant step)."""
    ip.run_cell(SETUP)
    ip.run_cell("pstep = jax.pmap(lambda s, x: x @ s.params['w'] * s.step, in_axes=(None, 0))")
    v = ip.run_line_magic("jaxpr", "-o pstep(state, jnp.ones((8, 2, 3)))")
    assert "state · 3 leaves" in [t for t, _ in _inputs(v)], _inputs(v)
    record = dict(_inputs(v))["state · 3 leaves"]
    assert "step i32[]" in record, record
    assert not any("held static" in n for n in v.notes), v.notes
