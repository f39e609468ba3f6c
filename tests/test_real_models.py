"""Every magic on real model-library code: Flax NNX and Linen, Equinox, Optax, Haiku.

Real library objects, no stand-ins. Each test checks what the user sees (input and output
names, the body of a jitted callee, what was held static) and that the user's models,
optimizers and dicts are exactly as before afterwards (every state leaf compared).
"""
import re

import jax
import numpy as np
import pytest
from conftest import run

nnx = pytest.importorskip("flax.nnx")
nn = pytest.importorskip("flax.linen")
eqx = pytest.importorskip("equinox")
optax = pytest.importorskip("optax")
hk = pytest.importorskip("haiku")

FAST = "--budget 0.2 -r 3"

NNX_STEP = """\
class MLP(nnx.Module):
    def __init__(self, rngs):
        self.l1 = nnx.Linear(3, 8, rngs=rngs)
        self.drop = nnx.Dropout(0.5, rngs=rngs)
        self.l2 = nnx.Linear(8, 2, rngs=rngs)
    def __call__(self, x):
        h = self.drop(jax.nn.relu(self.l1(x)))
        return self.l2(h)

model = MLP(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return ((model(x) - y) ** 2).mean()
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss
"""

SETUP = """\
import functools
import jax, jax.numpy as jnp, numpy as np
import optax, equinox as eqx, haiku as hk
import flax.linen as nn
from flax import nnx

x = jnp.ones((4, 3)); y = jnp.ones((4, 2))

""" + NNX_STEP + """
class LModel(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool):
        x = nn.Dense(8)(x)
        x = nn.BatchNorm(use_running_average=not train)(x)
        return nn.Dense(2)(nn.relu(x))

lm = LModel()
variables = lm.init(jax.random.key(0), x, train=False)

emlp = eqx.nn.MLP(3, 2, 8, 2, key=jax.random.key(1))
edrop = eqx.nn.Dropout(0.5)

@eqx.filter_jit
def pred(m, x):
    return jax.vmap(m)(x)

def eloss(m, x, y):
    return ((jax.vmap(m)(x) - y) ** 2).mean()

def net_fn(x):
    return hk.nets.MLP([8, 2])(x)
net = hk.transform(net_fn)
hparams = net.init(jax.random.key(2), x)

tx = optax.adam(1e-2)
params = {"w": jnp.ones((3, 2)), "b": jnp.zeros(2)}
opt_state = tx.init(params)
grads = jax.tree.map(jnp.ones_like, params)
"""


@pytest.fixture(scope="module")
def sh(shell):
    r, _ = run(shell, SETUP)
    assert r.success, r.error_in_exec
    return shell


def leaves(tree):
    """Every state leaf as a host array (NNX objects through nnx.state)."""
    if isinstance(tree, (nnx.Module, nnx.Optimizer)):
        tree = nnx.state(tree)
    return [np.asarray(jax.random.key_data(v) if jax.dtypes.issubdtype(v.dtype, jax.dtypes.prng_key)
                       else v) for v in jax.tree_util.tree_leaves(tree) if eqx.is_array(v)]


def assert_same(before, after):
    assert len(before) == len(after)
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)


def snapshot(sh, *names):
    return {n: leaves(sh.user_ns[n]) for n in names}


def unchanged(sh, snap):
    for n, before in snap.items():
        assert_same(before, leaves(sh.user_ns[n]))


def graph_names(view, kind):
    return [n.title for n in view.full.nodes.values() if n.kind == kind]


def body(view):
    """What the default picture draws of the function's body (no inputs, outputs, stubs)."""
    return [n for n in view.graph.nodes.values() if n.kind in ("op", "call", "group")]


# ---- Flax NNX ------------------------------------------------------------------------------



def drawn_titles(view) -> set[str]:
    """What the picture names: its boxes and its open groups."""
    g = view.graph
    return {n.title for n in g.nodes.values()} | {c.title for c in g.clusters.values()}

def test_nnx_module_with_dropout_traces_without_touching_the_model(sh):
    snap = snapshot(sh, "model")
    count = int(sh.user_ns["model"].drop.rngs.count[...])
    view = sh.run_line_magic("jaxpr", "-o model(x)")
    ins, outs = graph_names(view, "input"), graph_names(view, "output")
    assert "model.l1.kernel" in ins and "model.drop.rngs.count" in ins and "x" in ins
    assert "model.drop.rngs.count (updated)" in outs      # the RNG counter, as nnx.jit returns it
    assert any("changes model (1 array)" in n for n in view.notes)
    unchanged(sh, snap)
    assert int(sh.user_ns["model"].drop.rngs.count[...]) == count
    assert not any(isinstance(v, jax.core.Tracer) for v in jax.tree_util.tree_leaves(
        nnx.state(sh.user_ns["model"])))


def test_nnx_locations_are_the_users_lines(sh):
    view = sh.run_line_magic("jaxpr", "-o model(x)")
    dots = [n for n in view.full.nodes.values() if n.primitive == "dot_general"]
    assert dots
    for n in dots:           # the cell's `self.l1(x)` / `self.l2(h)`, not Flax's linear.py
        assert re.fullmatch(r"\w+\.__call__:\d+", n.where), n.where
        assert "self.l" in n.source and "linear.py" in n.source, n.source


def test_nnx_jit_train_step_shows_its_body(sh):
    snap = snapshot(sh, "model", "optimizer")
    view = sh.run_line_magic("jaxpr", "-o train_step(model, optimizer, x, y)")
    assert view.func_name == "train_step"
    # the body, not one `jit: train_step` box
    assert len(body(view)) >= 4 and not any(n.title.startswith("jit: train_step")
                                             for n in body(view))
    assert sum(n.kind == "op" for n in view.full.nodes.values()) > 100
    ins, outs = graph_names(view, "input"), graph_names(view, "output")
    assert "model.l1.kernel" in ins and "optimizer.step" in ins
    assert "optimizer.step (updated)" in outs and "model.l2.bias (updated)" in outs
    assert any("traced through nnx.jit" in n for n in view.notes)
    unchanged(sh, snap)
    assert int(sh.user_ns["optimizer"].step[...]) == 0


def test_nnx_jit_compare_does_not_train_the_model(sh):
    snap = snapshot(sh, "model", "optimizer")
    r = sh.run_line_magic("jit_compare", f"-o {FAST} train_step(model, optimizer, x, y)")
    assert r.results_match is True and r.unwrapped_jit
    assert r.jit_s and r.eager_s and r.traces == 1
    assert any("changes model (" in n and "optimizer (" in n for n in r.notes)
    assert "optimizer.step (updated)" in [d.path for d in r.leaves]
    unchanged(sh, snap)
    assert int(sh.user_ns["optimizer"].step[...]) == 0


def test_nnx_shardviz_plan_names_state_by_module_path(sh):
    view = sh.run_line_magic("shardviz", "--plan -o train_step(model, optimizer, x, y)")
    paths = [lay.path for lay in view.layouts]
    assert "model.l1.kernel" in paths and "x" in paths
    assert "optimizer.step (updated)" in paths


SCAN = """\
class Block(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(4, 4, rngs=rngs)
    def __call__(self, x):
        return jax.nn.relu(self.lin(x))

@nnx.vmap(in_axes=0, out_axes=0)
def make_blocks(rngs):
    return Block(rngs)

class Stack(nnx.Module):
    def __init__(self, rngs):
        self.blocks = make_blocks(nnx.Rngs(0).fork(split=3))
    def __call__(self, x):
        @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
        def step(block, x):
            return block(x)
        return step(self.blocks, x)

stack = Stack(nnx.Rngs(0))
xs = jnp.ones((5, 4))
"""


def test_nnx_scan_and_vmap_stacks_of_layers(sh):
    r, _ = run(sh, SCAN)
    assert r.success, r.error_in_exec
    snap = snapshot(sh, "stack")
    view = sh.run_line_magic("jaxpr", "-o stack(xs)")
    ins = graph_names(view, "input")
    assert "stack.blocks.lin.kernel" in ins
    kernel = next(n for n in view.full.nodes.values() if n.title == "stack.blocks.lin.kernel")
    assert "f32[3,4,4]" in kernel.detail          # the stacked layers, one leading axis
    assert any(n.primitive == "scan" or "scan" in n.title for n in view.full.nodes.values()) \
        or any(c.kind == "scan" for c in view.full.clusters.values())
    r = sh.run_line_magic("jit_compare", f"-o {FAST} stack(xs)")
    assert r.results_match is True
    unchanged(sh, snap)


def test_nnx_variable_and_rngs_as_arguments(sh):
    r, _ = run(sh, "counter = nnx.Variable(jnp.zeros(()))\nrngs = nnx.Rngs(3)\n"
                   "def bump(c, rngs, x):\n    c[...] += 1\n    return x + rngs.normal(x.shape)")
    assert r.success, r.error_in_exec
    view = sh.run_line_magic("jaxpr", "-o bump(counter, rngs, x)")
    outs = graph_names(view, "output")
    assert "counter (updated)" in outs and "rngs.default.count (updated)" in outs
    r = sh.run_line_magic("jit_compare", f"-o {FAST} bump(counter, rngs, x)")
    assert r.results_match is True
    assert float(sh.user_ns["counter"][...]) == 0.0
    assert int(sh.user_ns["rngs"].default.count[...]) == 0


# ---- Flax Linen ------------------------------------------------------------------------------


def test_linen_apply_with_mutable_batch_stats(sh):
    snap = snapshot(sh, "variables")
    line = ("-o --static-argnames train lm.apply(variables, x, train=True, "
            "mutable=['batch_stats'])")
    view = sh.run_line_magic("jaxpr", line)
    ins, outs = graph_names(view, "input"), graph_names(view, "output")
    assert "variables['params']['Dense_0']['kernel']" in ins
    assert "variables['batch_stats']['BatchNorm_0']['mean']" in ins
    assert "out[1]['batch_stats']['BatchNorm_0']['mean']" in outs
    drawn = drawn_titles(view)     # the layers, not one LModel box
    assert {"Dense_0", "BatchNorm_0", "Dense_1"} <= drawn
    r = sh.run_line_magic("jit_compare", f"{FAST} " + line)
    assert r.results_match is True
    unchanged(sh, snap)


def test_linen_inference_apply_and_plan(sh):
    view = sh.run_line_magic("jaxpr", "-o --static-argnames train lm.apply(variables, x, "
                             "train=False)")
    assert len(graph_names(view, "output")) == 1
    r, _ = run(sh, "apply_jit = jax.jit(lm.apply, static_argnames=['train', 'mutable'])")
    plan = sh.run_line_magic("shardviz", "--plan -o apply_jit(variables, x, train=False)")
    assert "variables['params']['Dense_1']['bias']" in [lay.path for lay in plan.layouts]


# ---- Equinox ------------------------------------------------------------------------------


def test_equinox_filter_jit_holds_activation_static(sh):
    snap = snapshot(sh, "emlp")
    view = sh.run_line_magic("jaxpr", "-o pred(emlp, x)")
    assert view.func_name == "pred"
    ins = graph_names(view, "input")
    assert "emlp.layers[0].weight" in ins and "x" in ins
    assert any(n.startswith("held static") and "activation" in n for n in view.notes)
    assert any("eqx.filter_jit" in n for n in view.notes)
    r = sh.run_line_magic("jit_compare", f"-o {FAST} pred(emlp, x)")
    assert r.results_match is True and r.unwrapped_jit
    plan = sh.run_line_magic("shardviz", "--plan -o pred(emlp, x)")
    paths = [lay.path for lay in plan.layouts]
    assert "emlp.layers[0].weight" in paths and "x" in paths
    assert not any("activation" in p for p in paths)      # held static, not an input
    unchanged(sh, snap)


def test_equinox_filter_grad_and_module_callee(sh):
    view = sh.run_line_magic("jaxpr", "-o eqx.filter_grad(eloss)(emlp, x, y)")
    outs = graph_names(view, "output")
    assert any(o.startswith("out.layers[0].weight") for o in outs)
    view = sh.run_line_magic("jaxpr", "-o emlp(x[0])")       # the module is the callee
    assert "emlp.layers[1].bias" in graph_names(view, "input")


def test_equinox_inference_flags(sh):
    key = "jax.random.key(0)"
    train = sh.run_line_magic("jaxpr", f"-o edrop(x, key={key})")
    off = sh.run_line_magic("jaxpr", f"-o edrop(x, key={key}, inference=True)")
    frozen = sh.run_line_magic("jaxpr", "-o eqx.nn.inference_mode(edrop)(x)")
    fixed = sh.run_line_magic("jaxpr", "-o eqx.nn.Dropout(0.5, inference=True)(x)")
    random = {"random_bits", "threefry2x32", "random_wrap", "random_unwrap"}

    def prims(v):
        return {n.primitive for n in v.full.nodes.values()} | {
            c.title.split(": ")[-1] for c in v.full.clusters.values()}
    assert train.num_equations > off.num_equations
    for v in (off, frozen, fixed):
        assert not prims(v) & random and v.num_equations <= 1
    r = sh.run_line_magic("jit_compare", f"-o {FAST} eqx.nn.inference_mode(edrop)(x)")
    assert "Dropout runs no JAX operation: its input x passes straight through" in r.verdict
    assert r.speedup is None          # an identity: nothing for jit to speed up


# ---- Haiku and Optax ----------------------------------------------------------------------


def test_haiku_apply(sh):
    snap = snapshot(sh, "hparams")
    view = sh.run_line_magic("jaxpr", "-o net.apply(hparams, None, x)")
    ins = graph_names(view, "input")
    assert "hparams['mlp/~/linear_0']['w']" in ins
    assert {"linear_0", "linear_1"} <= drawn_titles(view)
    r = sh.run_line_magic("jit_compare", f"-o {FAST} net.apply(hparams, None, x)")
    assert r.results_match is True
    r, _ = run(sh, "apply_h = jax.jit(net.apply)")
    plan = sh.run_line_magic("shardviz", "--plan -o apply_h(hparams, None, x)")
    assert "hparams['mlp/~/linear_1']['b']" in [lay.path for lay in plan.layouts]
    unchanged(sh, snap)


def test_optax_update(sh):
    snap = snapshot(sh, "params", "opt_state")
    view = sh.run_line_magic("jaxpr", "-o tx.update(grads, opt_state, params)")
    ins = graph_names(view, "input")
    assert "opt_state[0].mu['w']" in ins and "params['b']" in ins and "grads['w']" in ins
    assert any(o.startswith("out[1][0].count") for o in graph_names(view, "output"))
    r = sh.run_line_magic("jit_compare", f"-o {FAST} tx.update(grads, opt_state, params)")
    assert r.results_match is True
    plan = sh.run_line_magic("shardviz", "--plan -o jax.jit(tx.update)(grads, opt_state, params)")
    paths = [lay.path for lay in plan.layouts]
    assert "opt_state[0].mu['w']" in paths and "grads['w']" in paths
    unchanged(sh, snap)


# ---- jitted callees and argument rules --------------------------------------------------------


PLAIN = """\
def body(w, x):
    return jnp.tanh(x @ w).sum()
jbody = jax.jit(body)
pbody = functools.partial(jax.jit(body), jnp.ones((3, 3)))
jpart = jax.jit(functools.partial(body, jnp.ones((3, 3))))
state = {"w": jnp.ones(()), "n": 0}
def step(state, v):
    state["w"] = state["w"] * v
    return state["w"]
cfg = {"act": jax.nn.gelu, "scale": 2.0, "w": jnp.ones(4)}
def apply_cfg(cfg, x):
    return cfg["act"](x * cfg["scale"] + cfg["w"])
"""


@pytest.mark.parametrize("expr", ["jbody(jnp.ones((3, 3)), x[:, :3])", "pbody(x[:, :3])",
                                  "jpart(x[:, :3])"])
def test_jitted_callee_is_traced_through(sh, expr):
    run(sh, PLAIN)
    view = sh.run_line_magic("jaxpr", f"-o {expr}")
    assert view.func_name == "body"
    assert {n.primitive for n in body(view)} >= {"dot_general", "tanh", "reduce_sum"}
    assert not any(n.kind == "call" and "body" in n.title for n in view.full.nodes.values())


def test_a_dict_the_function_updates_is_left_as_it_was(sh):
    run(sh, PLAIN)
    r = sh.run_line_magic("jit_compare", f"-o {FAST} step(state, 3.0)")
    assert float(sh.user_ns["state"]["w"]) == 1.0 and sh.user_ns["state"]["n"] == 0
    assert any("changes its input state in place" in n for n in r.notes)
    view = sh.run_line_magic("jaxpr", "-o step(state, 3.0)")
    assert any("changes its input state in place" in n for n in view.notes)
    assert float(sh.user_ns["state"]["w"]) == 1.0


def test_config_leaves_are_held_static(sh):
    run(sh, PLAIN)
    view = sh.run_line_magic("jaxpr", "-o apply_cfg(cfg, x[:, 0])")
    assert graph_names(view, "input") == ["cfg['w']", "x[:, 0]"]
    note = next(n for n in view.notes if n.startswith("held static"))
    assert "cfg['act']=gelu" in note and "cfg['scale']=2.0" in note
    r = sh.run_line_magic("jit_compare", f"-o {FAST} apply_cfg(cfg, x[:, 0])")
    assert r.results_match is True and any(n.startswith("held static") for n in r.notes)
    # marking the whole argument static still overrides (a dict is not hashable: says so)
    res, _ = run(sh, f"%jit_compare {FAST} --static-argnums 0 apply_cfg(cfg, x[:, 0])")
    assert "not hashable" in str(res.error_in_exec)


def test_top_level_python_numbers_are_traced_as_jax_jit_does(sh):
    run(sh, "def scale(x, s):\n    return x * s")
    view = sh.run_line_magic("jaxpr", "-o scale(x, 2.0)")
    assert "s" not in graph_names(view, "input") and "2.0" in graph_names(view, "input")
    assert not any(n.startswith("held static") for n in view.notes)


# ---- %jaxcheck stays quiet on correct library code -------------------------------------------


def test_jaxcheck_is_quiet_on_library_code(sh):
    found = sh.run_cell_magic("jaxcheck", "-o", SETUP + SCAN)
    errors = [f for f in found if f.severity == "error"]
    assert not errors, [(f.rule, f.line, f.message) for f in errors]
