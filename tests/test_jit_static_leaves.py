"""%jit_compare on results that carry more than arrays: a Flax TrainState, an Equinox
module, an optax state built inside the function hold functions and numbers in static
fields, new objects on every call. Two results agree when their arrays agree and their
static fields agree for what they are; a static field that truly differs is named, with
its two values, never "max abs diff ∞" over a "structure" that differs."""
import math
import re

import jax.numpy as jnp
import pytest
from conftest import run

from jaxmagic.core.outputs import compare_outputs
from jaxmagic.render.jit import JitComparison

DEFINITIONS = '''
from typing import Any, Callable, NamedTuple
import equinox as eqx
import flax.linen as nn
import flax.struct
import optax
from flax.training import train_state

class Dense(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(3)(x)

model = Dense()
x = jnp.ones((2, 4))
calls = [0]

def make_state(x):
    params = model.init(jax.random.key(0), x)
    return train_state.TrainState.create(apply_fn=model.apply, params=params,
                                         tx=optax.adam(1e-3))

def make_counted_state(x):
    calls[0] += 1
    params = jax.tree.map(lambda p: p + calls[0], model.init(jax.random.key(0), x))
    return train_state.TrainState.create(apply_fn=model.apply, params=params,
                                         tx=optax.adam(1e-3))

class Net(eqx.Module):
    mlp: eqx.nn.MLP
    act: Callable = eqx.field(static=True)

def build(key):
    scale = 2.0
    return Net(eqx.nn.MLP(2, 2, 4, 1, key=key), lambda y: scale * jax.nn.relu(y))

def build_counted(key):
    calls[0] += 1
    n = calls[0]
    return Net(eqx.nn.MLP(2, 2, 4, 1, key=key), lambda y: n * y)

class Hyper(NamedTuple):
    lr: float
    tx: Any

@flax.struct.dataclass
class Run:
    opt_state: Any
    hyper: Hyper = flax.struct.field(pytree_node=False)

def start(x):
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(0.1))
    return Run(tx.init({"w": x}), Hyper(0.1, tx))

class Stepped(eqx.Module):
    w: jax.Array
    step: int = eqx.field(static=True)

def stepped(x):
    calls[0] += 1
    return Stepped(x * 2, calls[0])

@flax.struct.dataclass
class Tagged:
    w: jax.Array
    tag: str = flax.struct.field(pytree_node=False)

def tagged(x):
    calls[0] += 1
    return Tagged(x + 1, f"call {calls[0]}")
'''


@pytest.fixture
def sh(ip):
    res, cap = run(ip, DEFINITIONS)
    assert res.success, cap.stderr
    return ip


def _compare(sh, line: str):
    res, cap = run(sh, f"_jc = %jit_compare -o --budget 0.05 {line}")
    assert res.success, cap.stdout + cap.stderr
    r = sh.user_ns["_jc"]
    assert not r.verdict, r.verdict
    return r


@pytest.mark.parametrize("call, leaf", [
    ("make_state(x)", ".opt_state[0].mu['params']['Dense_0']['kernel']"),
    ("build(jax.random.key(0))", ".mlp.layers[1].weight"),
    ("start(x)", ".opt_state[1][0].nu['w']"),
])
def test_static_fields_rebuilt_on_each_call_are_no_difference(sh, call, leaf):
    """An optimizer's closures, a lambda activation, a NamedTuple config with a Python
    float: new objects on each call, the same functions and values."""
    r = _compare(sh, call)
    text = r.text()
    assert r.results_match is True, text
    assert "DIFFER" not in text and "likely cause" not in text, text
    # not known (None) where a steady eager call outran its share of the budget (at load)
    assert r.hints == [] and r.eager_varies is not True, r.hints
    assert leaf in [d.path for d in r.leaves] and all(not d.static for d in r.leaves)


def test_an_array_leaf_that_differs_is_named_with_its_difference(sh):
    r = _compare(sh, "make_counted_state(x)")
    text = r.text()
    bad = sorted(d.path for d in r.leaves if not d.ok)
    assert bad == [".params['params']['Dense_0']['bias']",
                   ".params['params']['Dense_0']['kernel']"], text
    assert r.max_abs_diff == pytest.approx(1.0), text
    assert "DIFFER: max abs diff 1," in text and "∞" not in text, text
    assert "structure" not in text, text
    assert any("change from call to call" in h for h in r.hints), r.hints


@pytest.mark.parametrize("call, words", [
    ("stepped(x)", r"static field \.step differs: eager (\d+), jit (\d+)"),
    ("tagged(x)", r"static field \.tag differs: eager 'call (\d+)', jit 'call (\d+)'"),
    ("build_counted(jax.random.key(0))",
     r"static field \.act differs: build_counted\.<locals>\.<lambda> captures n: "
     r"eager (\d+), jit (\d+)"),
])
def test_a_static_field_that_differs_is_named_with_both_values(sh, call, words):
    """The arrays agree; the static field jit's trace computed is not eager's."""
    r = _compare(sh, call)
    text = r.text()
    assert r.results_match is False and r.max_abs_diff == 0, text
    m = re.search(words, text)
    assert m and m.group(1) != m.group(2), text
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("results"))
    assert re.search(r"DIFFER: static field .*; arrays match: max abs diff 0,", line), line
    assert "∞" not in text and "structure" not in text, text
    assert "(no array: jit returns the value its trace computed)" in text, text
    assert [d.path for d in r.leaves if d.static] == [m.group(0).split()[2]]


def test_a_structure_that_differs_says_where_and_how():
    x = jnp.ones(2)
    ok, _, _, leaves = compare_outputs({"a": x, "b": (x,)}, {"a": x, "b": (x, x)})
    assert not ok and len(leaves) == 1
    assert leaves[0].problem == "structure differs at ['b']: eager a tuple of 1, jit a tuple of 2"
    view = JitComparison(results_match=False, leaves=leaves, max_abs_diff=math.inf,
                         max_rel_diff=math.inf, eager_first_s=0.1)
    line = next(ln for ln in view.text().splitlines() if "results" in ln)
    assert line.split(None, 1)[1] == ("DIFFER: structure differs at ['b']: eager a tuple of "
                                      "1, jit a tuple of 2; no array compared"), line


def test_static_data_that_cannot_be_looked_at_is_said_as_jax_prints_it():
    """A static field whose attributes raise: the comparison says the structures, never
    fails the view (a guard: the words are those JAX prints, as before)."""
    import flax.struct

    class Touchy:
        @property
        def shape(self):
            raise RuntimeError("no shape")

    @flax.struct.dataclass
    class Holder:
        w: jnp.ndarray
        cfg: object = flax.struct.field(pytree_node=False)

    ok, _, _, leaves = compare_outputs(Holder(jnp.ones(2), Touchy()),
                                       Holder(jnp.ones(2), Touchy()))
    assert not ok and [d.static for d in leaves] == [True]
    assert leaves[0].problem.startswith("structure differs: eager PyTreeDef(CustomNode(Holder")
