"""Issue 25, parts 3, 6 and 7: repeats fold whatever their period and phase; the ends of a
step are drawn as one record, without the constants it returns; labels stay unique."""
from collections import defaultdict

import pytest
from equinox_gan import MODELS

from jaxmagic.graph import model as G
from jaxmagic.graph import repeats


def _folded(view):
    return [repeats.series_title(c) for c in repeats.fold(view.full).clusters.values()
            if c.repeat > 1]


def _top(view):
    """The titles of the groups directly inside the traced function's own call, folded."""
    g = repeats.fold(view.full)
    roots = {i for i, c in g.clusters.items() if c.parent is None and not c.backward}
    return [c.title for c in g.clusters.values() if c.parent in roots]


TEN = """
def norm(x): return (x - x.mean()) / (x.std() + 1e-5)
def attn(x): return jnp.tanh(x @ x.T) @ x
def mlp(x): return jax.nn.relu(x * 2.0) * 0.5
def drop(k, x): return jnp.where(jax.random.bernoulli(k, 0.9, x.shape), x / 0.9, 0)

def ten(x, k):
    for _ in range(6):
        k = jax.random.split(k)[0]; x = x + drop(k, attn(norm(x)))
        k = jax.random.split(k)[0]; x = x + drop(k, mlp(norm(x)))
    return x
"""


def test_a_layer_of_fourteen_items_folds(ip):
    """The issue's `ten`: a split, a slice, a squeeze, norm, attn, drop and + twice per
    layer; with eight items a layer it folded ×6, with these fourteen it was drawn
    unfolded (`_LONGEST_PERIOD = 8`)."""
    assert ip.run_cell(TEN).success
    view = ip.run_line_magic("jaxpr", "-o ten(jnp.ones((4, 4)), jax.random.key(0))")
    assert _folded(view) == ["norm → attn → drop → norm → mlp → drop ×6"], _folded(view)
    assert view.graph.grouping == "equation"


HAIKU = """
import haiku as hk

def forward(x):
    for _ in range(6):
        h = hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)(x)
        h = hk.MultiHeadAttention(num_heads=2, key_size=4,
                                  w_init=hk.initializers.VarianceScaling(1.0))(h, h, h)
        x = x + hk.dropout(hk.next_rng_key(), 0.1, h)
        h = hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)(x)
        h = hk.nets.MLP([16, 8])(h)
        x = x + hk.dropout(hk.next_rng_key(), 0.1, h)
    return hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)(x)

net = hk.transform(forward)
hx = jnp.ones((2, 4, 8))
hparams = net.init(jax.random.key(0), hx)

def hloss(params, rng, x):
    return jnp.mean(net.apply(params, rng, x) ** 2)
"""

LAYER = "layer_norm → multi_head_attention → … → hk.dropout"


def test_a_haiku_transformer_layer_of_ten_calls_folds(ip):
    """LayerNorm, attention, next_rng_key, dropout, +, LayerNorm, MLP, next_rng_key,
    dropout, +: how Haiku transformers are written. The forward pass fell back to
    passes (3.8 px unfolded); the gradient's first layer, whose input needs no derivative,
    is a layer of its own beside the five alike, not a shift of the phase
    (`multi_head_attention → … → layer_norm ×6`)."""
    pytest.importorskip("haiku")
    assert ip.run_cell(HAIKU).success
    view = ip.run_line_magic("jaxpr", "-o net.apply(hparams, jax.random.key(1), hx)")
    assert _folded(view) == [f"{LAYER} ×6"], _folded(view)
    assert view.graph.grouping == "equation", view.notes
    assert any(c.title.endswith("×6") for c in view.graph.clusters.values()) or \
        any(n.title == f"{LAYER} ×6" for n in view.graph.nodes.values())

    grad = ip.run_line_magic("jaxpr", "-o jax.grad(hloss)(hparams, jax.random.key(1), hx)")
    forward = [t for t in _folded(grad) if "backward" not in t]
    assert forward == [f"{LAYER} ×5"], _folded(grad)
    inside = [c for c in repeats.fold(grad.full).clusters.values()
              if c.title.startswith(LAYER) and not c.backward]
    assert sorted(repeats.series_title(c) for c in inside) == [LAYER, f"{LAYER} ×5"]


MINIBATCH = """
import optax
import flax.linen as nn
from flax.training import train_state

class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(2)(nn.relu(nn.Dense(8)(x)))

mlp = MLP()
state = train_state.TrainState.create(
    apply_fn=mlp.apply, params=mlp.init(jax.random.key(0), jnp.ones((2, 4))),
    tx=optax.sgd(0.1))
xs = jnp.ones((4, 2, 4))

def loss_fn(params, x):
    return jnp.mean(mlp.apply(params, x) ** 2)

@jax.jit
def epoch(state, xs):
    total = 0.0
    for i in range(4):
        loss, grads = jax.value_and_grad(loss_fn)(state.params, xs[i])
        total = total + loss
        state = state.apply_gradients(grads=grads)
    return state, total / 4

def accumulate(total, loss):
    return total * 0.9 + loss

def update(params, grads):
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)

def decayed(params, xs):
    total = 0.0
    for i in range(4):
        loss, grads = jax.value_and_grad(loss_fn)(params, xs[i])
        total = accumulate(total, loss)
        params = update(params, grads)
    return params, total
"""


def test_a_minibatch_loop_folds_in_phase(ip):
    """The first iteration adds its loss to the Python float `0.0` (an add of a constant,
    later an add of two arrays): it folded out of phase, `loss_fn`, `apply_gradients →
    loss_fn ×3`, `apply_gradients`. A constant is no part of the structure."""
    assert ip.run_cell(MINIBATCH).success
    view = ip.run_line_magic("jaxpr", "-o epoch(state, xs)")
    assert _folded(view) == ["loss_fn ×4 · backward", "loss_fn → state.apply_gradients ×4"], \
        _folded(view)
    assert _top(view) == ["loss_fn → state.apply_gradients ×4"], _top(view)


def test_a_first_iteration_that_differs_stays_whole_beside_the_fold(ip):
    """`accumulate(0.0, loss)` multiplies the Python float in Python: the first call has
    one equation, the later three two. The fold starts where the loop starts; the first
    iteration is a group of its own, not `update → loss_fn → accumulate ×3` after a
    loose `loss_fn`, `accumulate`, `update`."""
    assert ip.run_cell(MINIBATCH).success
    view = ip.run_line_magic("jaxpr", "-o decayed(state.params, xs)")
    step = "loss_fn → accumulate → update"
    assert [t for t in _folded(view) if "backward" not in t] == [f"{step} ×3"], _folded(view)
    assert sorted(_top(view)) == [step, f"{step} ×3"], _top(view)

    # a run that reaches the end of its group but not its start keeps its own phase: embed,
    # then Dense → relu three times and a last Dense, not `relu → Dense ×3`
    ip.run_cell("""
import flax.linen as nn

class Tower(nn.Module):
    @nn.compact
    def __call__(self, ids):
        x = nn.Embed(16, 8)(ids)
        for _ in range(3):
            x = nn.relu(nn.Dense(8)(x))
        return nn.Dense(8)(x)

tower_vars = Tower().init(jax.random.key(0), jnp.zeros((2, 4), int))
""")
    view = ip.run_line_magic("jaxpr", "-o Tower().apply(tower_vars, jnp.zeros((2, 4), int))")
    assert _folded(view) == ["Dense → relu ×3"], _folded(view)

    # a relu before the loop, on other shapes, is another step than the loop's relu (another
    # line), not a first iteration that differs: no `relu → Dense ×2`
    ip.run_cell("""
class Tower2(nn.Module):
    @nn.compact
    def __call__(self, ids):
        x = nn.relu(nn.Embed(16, 8)(ids))
        for _ in range(3):
            x = nn.relu(nn.Dense(16)(x))
        return x

tower2_vars = Tower2().init(jax.random.key(0), jnp.zeros((2, 4), int))
""")
    view = ip.run_line_magic("jaxpr", "-o Tower2().apply(tower2_vars, jnp.zeros((2, 4), int))")
    assert _folded(view) == ["Dense → relu ×3"], _folded(view)



GAN = MODELS + """
batch_size, latent = 4, 8
generator, generator_state = eqx.nn.make_with_state(Generator)(jr.key(0))
discriminator, discriminator_state = eqx.nn.make_with_state(Discriminator)(jr.key(1))
discriminator_optimizer = optax.adam(2e-4, b1=0.5)
discriminator_opt_state = discriminator_optimizer.init(eqx.filter(discriminator, eqx.is_array))
real_batch = jnp.ones((batch_size, 1, 8, 8))

@eqx.filter_value_and_grad(has_aux=True)
def compute_grads_discriminator(discriminator, generator, fake_labels, real_batch, real_labels,
                                discriminator_state, generator_state, key):
    key, subkey = jr.split(key)
    noise = jr.normal(subkey, (batch_size, latent, 1, 1))
    fake_batch, generator_state = jax.vmap(generator, axis_name="batch", in_axes=(0, None),
                                           out_axes=(0, None))(noise, generator_state)
    pred_y, discriminator_state = jax.vmap(discriminator, axis_name="batch", in_axes=(0, None),
                                           out_axes=(0, None))(fake_batch, discriminator_state)
    loss1 = optax.sigmoid_binary_cross_entropy(pred_y, fake_labels).mean()
    pred_y, discriminator_state = jax.vmap(discriminator, axis_name="batch", in_axes=(0, None),
                                           out_axes=(0, None))(real_batch, discriminator_state)
    loss2 = optax.sigmoid_binary_cross_entropy(pred_y, real_labels).mean()
    return (loss1 + loss2) / 2, (discriminator_state, generator_state, key)

@eqx.filter_jit
def step_discriminator(discriminator, generator, real_batch, discriminator_optimizer,
                       discriminator_opt_state, generator_state, discriminator_state, key):
    fake_labels = jnp.zeros(batch_size)
    real_labels = jnp.ones(batch_size)
    (loss, (discriminator_state, generator_state, key)), grads = compute_grads_discriminator(
        discriminator, generator, fake_labels, real_batch, real_labels,
        discriminator_state, generator_state, key)
    updates, opt_state = discriminator_optimizer.update(grads, discriminator_opt_state,
                                                        discriminator)
    discriminator = eqx.apply_updates(discriminator, updates)
    return loss, discriminator, discriminator_state, generator_state, opt_state, key
"""

STEP = ("step_discriminator(discriminator, generator, real_batch, discriminator_optimizer, "
        "discriminator_opt_state, generator_state, discriminator_state, jr.key(2))")


def test_a_gan_steps_seven_arguments_are_one_record_at_every_level(ip):
    """Equinox's GAN discriminator step: seven arguments (the optimizer held static) were
    seven boxes side by side wherever the drawing had no groups (`--depth 0`, the view by
    passes it fell back to); one record, a line each, at every level."""
    pytest.importorskip("equinox")
    assert ip.run_cell(GAN).success
    names = ("discriminator", "generator", "real_batch", "discriminator_opt_state",
             "generator_state", "discriminator_state", "jr.key(2)")
    for depth in ("", "--depth 0 ", "--depth all "):
        view = ip.run_line_magic("jaxpr", f"-o {depth}{STEP}")
        inputs = [n for n in view.graph.nodes.values() if n.kind == "input"]
        assert [n.title for n in inputs] == ["arguments"], (depth, [n.title for n in inputs])
        assert [row.split(" ")[0] for row in inputs[0].detail] == list(names), \
            inputs[0].detail


def test_returned_constants_are_not_drawn_and_the_note_says_so(ip):
    """BatchNorm's first-call flag, set to False in the returned state, and a Python
    False in a returned dict: each was a `False` box of its own with an edge to the
    results. Not drawn; the note names them."""
    pytest.importorskip("equinox")
    assert ip.run_cell(GAN).success
    view = ip.run_line_magic("jaxpr", f"-o {STEP}")
    assert not [n for n in view.graph.nodes.values() if n.kind == "const"]
    note = [n for n in view.notes if "constants, not drawn" in n]
    assert note == ["2 results are constants, not drawn: out[2][0] = False, "
                    "out[3][0] = False"], view.notes
    outs = [n for n in view.full.nodes.values() if n.kind == "output"]
    assert outs and not any(n.title in ("out[2][0]", "out[3][0]") for n in outs)

    ip.run_cell("""
@jax.jit
def update(params, x):
    return {"params": jax.tree.map(lambda p: p - 0.1 * x.mean(), params), "first": False}
""")
    view = ip.run_line_magic("jaxpr", "-o update({'w': jnp.ones(3)}, jnp.ones(3))")
    assert [n.title for n in view.graph.nodes.values() if n.kind == "const"] == []
    assert "1 result is a constant, not drawn: out['first'] = False" in view.notes, view.notes


NNX_BLOCKS = """
from flax import nnx

class Block(nnx.Module):
    def __init__(self, d, rngs):
        self.attn = nnx.Linear(d, d, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)
        self.mlp = nnx.Sequential(nnx.Linear(d, 2 * d, rngs=rngs),
                                  nnx.Dropout(0.1, rngs=rngs), nnx.Linear(2 * d, d, rngs=rngs))

    def __call__(self, x):
        x = x + self.drop(self.attn(x))
        return x + self.mlp(x)

class Scale(nnx.Module):
    def __init__(self, s):
        self.s = s

    def __call__(self, x):
        return x * self.s

class Twice(nnx.Module):
    def __init__(self):
        self.first = nnx.Sequential(Scale(2.0), Scale(3.0))
        self.second = nnx.Sequential(Scale(4.0))

    def __call__(self, x):
        return self.second(self.first(x))

stack = nnx.Sequential(*[Block(8, nnx.Rngs(i)) for i in range(3)])
one = Block(8, nnx.Rngs(0))
x8 = jnp.ones((2, 8))
"""


def _tree(g, cluster):
    """(title, [children…]) of a cluster, its children in walk order."""
    kids = sorted((c for c in g.clusters.values() if c.parent == cluster), key=lambda c: c.id)
    return [(c.title, _tree(g, c.id)) for c in kids]


def _duplicates(g):
    titles = defaultdict(list)
    for c in g.clusters.values():
        titles[c.parent].append(c.title)
    return {p: t for p, t in titles.items() if len(set(t)) < len(t)}


def test_a_block_stacked_in_a_sequential_keeps_its_own_sequential(ip):
    """Blocks stacked in an `nnx.Sequential`, each holding its own `nnx.Sequential`: the
    inner one was dissolved with the outer (which calls the user's blocks back), and its
    `Linear #0`, `Dropout #0` stood beside the block's own `Linear #0`, `Dropout #0`. The
    block is drawn as when it is called alone."""
    pytest.importorskip("flax")
    assert ip.run_cell(NNX_BLOCKS).success
    alone = repeats.fold(ip.run_line_magic("jaxpr", "-o one(x8)").full)
    (root,) = [i for i, c in alone.clusters.items() if c.parent is None]
    stacked = repeats.fold(ip.run_line_magic("jaxpr", "-o stack(x8)").full)
    (block,) = [i for i, c in stacked.clusters.items() if c.parent is None]
    assert stacked.clusters[block].title == "Block ×3"
    assert _tree(stacked, block) == _tree(alone, root), _tree(stacked, block)
    assert [t for t, _ in _tree(stacked, block)] == ["Linear", "Dropout", "Sequential"]
    assert not _duplicates(stacked), _duplicates(stacked)


def test_calls_from_two_dissolved_library_calls_are_numbered_apart(ip):
    """Two `nnx.Sequential`s of the user's own layers in one module: each calls the user's
    code back, so each is drawn as its layers, and both had a `Scale #0`."""
    pytest.importorskip("flax")
    assert ip.run_cell(NNX_BLOCKS).success
    g = ip.run_line_magic("jaxpr", "-o Twice()(x8)").full
    assert not _duplicates(g), _duplicates(g)
    (root,) = [i for i, c in g.clusters.items() if c.parent is None]
    assert [t for t, _ in _tree(g, root)] == ["Scale #0", "Scale #1", "Scale #2"]


PGD = """
@jax.jit
def loss_fun(params, x):
    return jnp.mean(jnp.tanh(x @ params) ** 2)

@jax.jit
def pgd_attack(params, x):
    delta = jnp.zeros_like(x)
    def adversarial_loss(d):
        return loss_fun(params, x + d)
    grad_adversarial = jax.grad(adversarial_loss)
    for _ in range(5):
        delta += 0.01 * jnp.sign(grad_adversarial(delta))
        delta = jnp.clip(delta, -0.1, 0.1)
    return x + delta

@jax.jit
def train_step(params, x):
    return jax.grad(loss_fun)(params, pgd_attack(params, x))
"""


def test_a_period_names_its_backward_calls_as_drawn(ip):
    """Optax's adversarial-training example takes a gradient in a Python loop (a PGD
    attack, jitted, called by the jitted step): each iteration calls the loss, its
    backward and `clip`. The fold was titled
    `adversarial_loss → adversarial_loss → clip ×5`: one name for a forward and a backward."""
    assert ip.run_cell(PGD).success
    view = ip.run_line_magic("jaxpr", "-o train_step(jnp.ones((4, 4)), jnp.ones((2, 4)))")
    assert _folded(view) == ["adversarial_loss → adversarial_loss · backward → clip ×5"], \
        _folded(view)


FROZEN = """
import equinox as eqx
import jax.tree_util as jtu

mlp = eqx.nn.MLP(1, 1, 8, 1, key=jax.random.key(0))
spec = eqx.tree_at(lambda t: (t.layers[-1].weight, t.layers[-1].bias),
                   jtu.tree_map(lambda _: False, mlp), replace=(True, True))

@eqx.filter_grad
def loss(diff, static, x):
    return jnp.mean(jax.vmap(eqx.combine(diff, static))(x) ** 2)

def grads(model, x):
    return loss(*eqx.partition(model, spec), x)
"""


def test_a_frozen_layers_backward_twin_keeps_its_forward_number(ip):
    """Equinox's frozen_layer example trains only the last of two `Linear`s: the backward
    pass holds one `Linear`, titled `Linear · backward` beside `Linear #0` and `Linear #1`
    (which did it mirror?)."""
    assert ip.run_cell(FROZEN).success
    view = ip.run_line_magic("jaxpr", "-o grads(mlp, jnp.ones((4, 1)))")
    titles = {c.title for c in view.full.clusters.values()}
    assert {"Linear #0", "Linear #1", "Linear #1 · backward"} <= titles, titles
    assert "Linear · backward" not in titles


ENCODER = """
import haiku as hk

def enc(x):        # Haiku's VQ-VAE encoder: a 4×4 stride-2 conv, then 3×3 stride-1 ones
    h = jax.nn.relu(hk.Conv2D(16, 4, stride=2, name="enc_1")(x))
    h = jax.nn.relu(hk.Conv2D(16, 3, stride=1, name="enc_2")(h))
    h = jax.nn.relu(hk.Conv2D(16, 3, stride=1, name="enc_3")(h))
    return jnp.sum(h)

enc_t = hk.without_apply_rng(hk.transform(enc))
enc_p = enc_t.init(jax.random.key(0), jnp.ones((2, 16, 16, 16)))
"""


def test_a_conv_with_another_stride_is_no_repeat(ip):
    """`enc_1` (4×4, stride 2) and `enc_2` make results of one shape: they were folded as
    `enc → relu ×3`, drawing `enc_1`'s stride for all three. How an equation works (its
    stride, padding, dimensions) is part of the structure; its constants are not."""
    assert ip.run_cell(ENCODER).success
    view = ip.run_line_magic("jaxpr", "-o enc_t.apply(enc_p, jnp.ones((2, 16, 16, 16)))")
    g = repeats.fold(view.full)
    series = {c.title: c.id for c in g.clusters.values() if c.repeat > 1}
    assert list(series) == ["enc → relu ×2"], series
    first = next(c for c in g.clusters.values() if c.title == "enc_1")
    assert series["enc → relu ×2"] not in G.ancestors(g, first.id)


LOOPS = """
%load_ext jaxmagic
import json
import jax, jax.numpy as jnp
from jaxmagic.explorer import JaxprExplorer

def layer(x, w):
    for _ in range(3):
        x = x @ w
    return x + jnp.tanh(x)

def deep(x, ws):
    for w in ws:
        x = layer(x, w)
    return x.sum()

def cycle(x):
    fs = [jnp.tanh, jnp.sin, jnp.cos, jax.nn.relu, jnp.exp]
    for i in range(200):
        x = fs[i % 5](x)
    return x

def shifted(x, w):
    for i in range(16):
        x = jnp.tanh(x @ w + i)
    return x

def mlp(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w)
    return jnp.sum(x)

ws = [jnp.eye(4)] * 16
w8 = [jnp.eye(8) * 0.5] * 16
"""

SHOWN = ["%jaxpr --lines layer deep(jnp.ones((2, 4)), ws)",
         "v = %jaxpr -o deep(jnp.ones((2, 4)), ws)\n"
         "print(json.dumps([[r['title'], r['equations']] for r in "
         "JaxprExplorer(v).table.values()]))",
         "%jaxpr cycle(jnp.ones(4))",
         "%jaxpr shifted(jnp.ones((2, 4)), ws[0])",
         "%jaxpr jax.grad(mlp)(w8, jnp.ones((2, 8)))"]


@pytest.fixture(scope="module")
def loops():
    """What a real kernel shows of `SHOWN`, by cell: its text (a picture's text/plain)."""
    import os
    from pathlib import Path

    import nbformat
    from nbclient import NotebookClient

    root = Path(__file__).parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root),
                                                       os.environ.get("PYTHONPATH", "")]))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c)
                                         for c in [LOOPS, *SHOWN]])
    NotebookClient(nb, timeout=300, kernel_name="python3").execute(env=env)
    return ["".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                    for o in cell.outputs) for cell in nb.cells[1:]]


@pytest.mark.slow
def test_inside_a_fold_every_box_counts_one_repetition(loops):
    """Issue 42, item 8: inside `layer ×16` a line's box read "48 equations, dot_general
    ×48" and hovering `add` said 16 equations: a fold draws one repetition, its ×16 says
    how many; the fold's own hover still counts all 80."""
    import json

    assert "x = x @ w [3 equations; dot_general ×3]" in loops[0], loops[0]
    assert "2 equations; tanh, add" in loops[0], loops[0]
    hover = dict(map(tuple, json.loads(loops[1])))
    assert hover["add"] == hover["tanh"] == hover["dot_general"] == 1, hover
    assert hover["layer ×16"] == 80, hover


@pytest.mark.slow
def test_a_loop_of_operations_folds_named_for_what_one_iteration_computes(loops):
    """Issue 42, item 9: five functions in turn, 200 times, folded as `relu ×40` (the one
    call of the five); a loop whose constant changes drew the first iteration's; and
    `for w in ws: x = jnp.tanh(x @ w)` under `grad`, no call at all, fell back to
    "grouped by function". A repetition is named by the line that makes it where that
    line says what it computes, else by its steps; its backward by the same line."""
    assert "┌ tanh → sin → cos → relu → exp ×40\n" in loops[2], loops[2]
    assert "┌ tanh(x @ w + i) ×16\n" in loops[3], loops[3]
    assert " add · 0…15 ←" in loops[3], loops[3]
    grad = loops[4]
    assert "grouped by" not in grad, grad
    assert "┌ tanh(x @ w) ×16\n" in grad, grad
    # the first layer's backward makes no derivative of its input: beside the 15 alike
    assert "┌ tanh(x @ w) ×15 · backward\n" in grad and \
        "┌ tanh(x @ w) · backward\n" in grad, grad


WRAPPED = """
import equinox as eqx

class Latent(eqx.Module):
    w: jax.Array

    def _inner(self, x):
        return jnp.tanh(self.w * x)

    def _sample(self, x):
        return self._inner(x) + jnp.sin(x)

    def __call__(self, x):
        y = eqx.filter_vmap(self._sample)(x[None])[0]
        return eqx.Partial(lambda a, b: self._inner(a) * b, y)(2.0)

latent = Latent(jnp.ones(3))
"""


def test_wrappers_of_the_users_methods_are_no_groups(ip):
    """`eqx.filter_vmap(self._sample)` calls Equinox's `BoundMethod`, `eqx.Partial` its
    `__call__`: each only calls the function it holds, which is the group drawn."""
    ip.run_cell(WRAPPED)
    view = ip.run_line_magic("jaxpr", "-o --depth all latent(jnp.ones(3))")
    titles = sorted(c.title for c in view.full.clusters.values())
    assert not [t for t in titles if t.startswith(("BoundMethod", "Partial"))], titles
    assert "_sample" in titles and "_inner" in titles, titles
