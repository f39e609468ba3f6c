"""Issue 25: repeats fold whatever their period and phase."""
import pytest

from jaxmagic.core import graph as G


def _folded(view):
    return [G.series_title(c) for c in G.fold(view.full).clusters.values() if c.repeat > 1]


def _top(view):
    """The titles of the groups directly inside the traced function's own call, folded."""
    g = G.fold(view.full)
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
    inside = [c for c in G.fold(grad.full).clusters.values()
              if c.title.startswith(LAYER) and not c.backward]
    assert sorted(G.series_title(c) for c in inside) == [LAYER, f"{LAYER} ×5"]


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


