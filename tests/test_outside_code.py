"""Issue 18's reproductions: what stopped a user on code nobody here wrote (Flax's examples,
JAX's sharding docs, Equinox and Diffrax), each in a real shell on real JAX objects."""
import jax.numpy as jnp
import pytest
from conftest import run

from jaxmagic.core.errors import as_typed
from jaxmagic.core.outputs import compare_outputs


def _text(cap) -> str:
    return cap.stdout + "".join(o.data.get("text/plain", "") for o in cap.outputs)


def test_typed_prng_keys_in_results_are_compared_by_key_data(ip):
    ip.run_cell("@jax.jit\n"
                "def step(key, x):\n"
                "    key, sub = jax.random.split(key)\n"
                "    return key, x + jax.random.normal(sub, x.shape)\n")
    res, cap = run(ip, "r = %jit_compare -o --budget 0.1 step(jax.random.key(0), jnp.ones(3))")
    assert res.error_in_exec is None, cap.stderr
    r = ip.user_ns["r"]
    assert r.results_match is True
    assert [d.dtype for d in r.leaves][0] == "uint32"       # the key, as its key data


def test_a_leaf_that_cannot_be_compared_is_named_not_raised():
    class Opaque:                 # a leaf with a dtype NumPy cannot hold
        dtype = jnp.float32
        shape = (2,)

        def __array__(self, *a, **k):
            raise TypeError("no host form")

    ok, _, _, leaves = compare_outputs([Opaque(), jnp.ones(2)], [Opaque(), jnp.ones(2)])
    assert ok
    assert leaves[0].skipped.startswith("TypeError: no host form")
    assert leaves[1].skipped == "" and leaves[1].ok


def test_python_constant_operand_of_cond_draws(ip):
    ip.run_cell("from jax import lax\n"
                "def pick(t):\n"
                "    return lax.cond(t > 0, lambda a, b: a, lambda a, b: b, t, -0.1)\n")
    res, cap = run(ip, "v = %jaxpr -o --format text pick(jnp.float32(1.0))")
    assert res.error_in_exec is None, cap.stderr
    text = ip.user_ns["v"].text()
    assert "cond (2 branches)" in text and "merge" in text


@pytest.mark.parametrize("cell, shown", [
    ("%jaxpr f(jnp.arange(6.).reshape(4, 4))", "%jaxpr f(jnp.arange(6.).reshape(4, 4))"),
    ("x = 1\n%jit_compare f(jnp.arange(6.).reshape(4, 4))",
     "%jit_compare f(jnp.arange(6.).reshape(4, 4))"),
])
def test_error_cards_quote_the_line_as_typed(ip, cell, shown):
    ip.run_cell("def f(x):\n    return x\n")
    _, cap = run(ip, cell)
    text = _text(cap)
    assert shown in text
    assert "run_line_magic" not in text.split("Traceback")[0]


def test_as_typed_inverts_ipythons_rewrite():
    assert as_typed("r = get_ipython().run_line_magic('jaxpr', '-o f(x)')") == \
        "r = %jaxpr -o f(x)"
    assert as_typed("    get_ipython().run_line_magic('devices', '')\n") == "    %devices\n"
    assert as_typed("get_ipython().run_cell_magic('jaxpr', '--depth 2', 'f(x)\\n')") == \
        "%%jaxpr --depth 2"
    assert as_typed("y = f(x)  # get_ipython(). in a comment") == \
        "y = f(x)  # get_ipython(). in a comment"


def test_a_global_only_printed_is_no_stale_capture():
    """JAX's docs/parallel.md: `add_arrays` prints jax.typeof(result) while tracing; a
    later `result = ...` changes nothing the compiled function computes."""
    from jaxmagic import check_source
    src = ("import jax\n"
           "arg0 = jax.numpy.ones((4, 1))\n"
           "result = arg0 + 1\n"
           "scale = 2.0\n"
           "@jax.jit\n"
           "def add_arrays(x, y):\n"
           "  print(f'{jax.typeof(result)=!s}')\n"
           "  jax.debug.print('{}', result)\n"
           "  return x + y * scale\n"
           "add_arrays(arg0, arg0)\n"
           "result = 3\n"
           "scale = 3.0\n")
    stale = [(f.line, f.message.split("`")[1]) for f in check_source(src) if f.rule == "JX304"]
    assert stale == [(12, "scale")]


REDUCED_SETUP = """
from jax.sharding import AxisType
_mesh = jax.make_mesh((2,), ('X',), axis_types=(AxisType.Explicit,))
with jax.set_mesh(_mesh):
    w_ = jax.reshard(jnp.ones((4, 2)), jax.P(None, None, reduced={'X'}))
    u_ = jax.jit(lambda a, b: jnp.einsum('ij,jk->ik', a, b,
                 out_sharding=jax.P(None, None, unreduced={'X'})))(
        jax.reshard(jnp.ones((4, 8)), jax.P(None, 'X')),
        jax.reshard(jnp.ones((8, 2)), jax.P('X', None)))
"""


@pytest.fixture
def reduced(ip):
    """JAX's sharding-in-types docs: arrays whose spec has reduced / unreduced axes."""
    res, cap = run(ip, REDUCED_SETUP)
    if res.error_in_exec is not None:
        pytest.skip(f"this JAX has no reduced/unreduced specs: {res.error_in_exec!r}")
    return ip


def test_shardviz_draws_a_reduced_array_with_its_whole_spec(reduced):
    res, cap = run(reduced, "v = %shardviz -o w_")
    assert res.error_in_exec is None, _text(cap)
    lay = reduced.user_ns["v"].layouts[0]
    assert lay.spec == "P(None, None, reduced={'X'})"
    assert lay.typed == "float32[4,2]{R:X}"


def test_shardviz_says_unreduced_blocks_are_partial_sums(reduced):
    res, cap = run(reduced, "v = %shardviz -o u_")
    assert res.error_in_exec is None, _text(cap)
    view = reduced.user_ns["v"]
    lay = view.layouts[0]
    assert lay.spec == "P(None, None, unreduced={'X'})" and lay.unreduced == ("X",)
    assert [t.devices for t in lay.tiles] == [(0, 1)]
    assert "partial sums over X" in view.text()
    assert "partial sum" in view._repr_mimebundle_()["text/html"]


def test_configure_takes_depth_as_the_magic_does(ip):
    ip.run_cell("def two(v):\n    def inner(u):\n        return jnp.sin(u) + 1\n"
                "    return inner(v) * 2\n")
    v = ip.run_line_magic("jaxpr", "-o --depth 0 two(jnp.ones(2))")
    assert v.configure(depth="all").depth is None
    assert v.configure(depth="1").depth == 1
    assert "sin" in v.configure(depth="all").text()
    with pytest.raises(ValueError, match="depth takes a number"):
        v.configure(depth="deep")


def test_each_coarsening_note_says_which_level(ip):
    ip.run_cell("def deep(v):\n    for _ in range(30):\n        v = jnp.tanh(v) * 2\n    return v")
    ip.run_line_magic("config", "JaxMagic.max_nodes = 2")
    try:
        v = ip.run_line_magic("jaxpr", "-o deep(jnp.ones(2))")
    finally:
        ip.run_line_magic("config", "JaxMagic.max_nodes = 400")
    skips = [n for n in v.notes if "coarser view" in n]
    assert len(skips) >= 2 and len(set(skips)) == len(skips), skips


NNX_COUNTER = """
from flax import nnx

class Count(nnx.Variable):
    pass

class Counted(nnx.Module):
    def __init__(self, rngs):
        self.l = nnx.Linear(3, 3, rngs=rngs)
        self.count = Count(jnp.array(0))

    def __call__(self, x):
        self.count[...] += 1
        return self.l(x)

counted = Counted(nnx.Rngs(0))

@nnx.jit
def counted_step(model, x):
    return model(x).sum()

cached = nnx.cached_partial(counted_step, counted)
cached(jnp.ones((2, 3)))
"""


def test_jit_compare_of_an_nnx_cached_partial(ip):
    """flax's nnx_toy_examples/02_lifted_transforms.py times `cached_train_step`."""
    ip.run_cell(NNX_COUNTER)
    before = int(ip.user_ns["counted"].count[...])
    res, cap = run(ip, "r = %jit_compare -o --budget 0.1 cached(jnp.ones((2, 3)))")
    assert res.error_in_exec is None, _text(cap)
    assert ip.user_ns["r"].results_match
    assert int(ip.user_ns["counted"].count[...]) == before == 1     # the user's state kept
    v = ip.run_line_magic("jaxpr", "-o cached(jnp.ones((2, 3)))")
    inputs = [n.title for n in v.full.nodes.values() if n.kind == "input"]
    assert "model.l.kernel" in inputs and "model.count" in inputs, inputs


def test_jit_compare_of_a_pmap_says_what_each_row_ran(ip):
    ip.run_cell("pf = jax.pmap(lambda x: jnp.sin(x) * 2)")
    r = ip.run_line_magic("jit_compare", "-o --budget 0.1 pf(jnp.ones((8, 4)))")
    assert r.pmapped and r.break_even_calls is None
    text = r.text()
    assert "pmap, as given" in text and "op by op" not in text.split("\n")[1]
    assert "pays for itself" not in text and "two compiled programs" in text


EQX_SETUP = """
import equinox as eqx

class Reprs(eqx.Module):
    layers: list

    def __init__(self, key):
        self.layers = [eqx.nn.Linear(4, 4, key=k) for k in jax.random.split(key, 2)]

    def __call__(self, x):
        for layer in self.layers:
            x = jax.nn.relu(layer(x))
        return x

    def __repr__(self):             # counts what tracing formats (a U-Net's took 1.3 s)
        reprs.append(1)
        return "Reprs(...)"

reprs = []
emodel = Reprs(jax.random.key(0))
bn, bn_state = eqx.nn.make_with_state(eqx.nn.BatchNorm)(4, "batch", mode="batch")
"""


def test_an_equinox_module_callee_is_not_formatted_while_tracing(ip):
    ip.run_cell(EQX_SETUP)
    v = ip.run_line_magic("jaxpr", "-o emodel(jnp.ones(4))")
    assert v.num_equations > 0 and ip.user_ns["reprs"] == []


def test_equinox_state_leaves_are_named_by_index(ip):
    ip.run_cell(EQX_SETUP)
    ip.run_cell("def bn_apply(m, s, x):\n    return jax.vmap(m, axis_name='batch', "
                "in_axes=(0, None), out_axes=(0, None))(x, s)\n")
    v = ip.run_line_magic("jaxpr", "-o bn_apply(bn, bn_state, jnp.ones((3, 4)))")
    names = " ".join(n.title + " " + " ".join(n.detail) for n in v.full.nodes.values()
                     if n.kind == "input")
    assert "bn_state[0]" in names and "flat index" not in names, names


def test_a_first_eager_call_outside_the_budget_is_named(ip):
    """An Equinox step's first eager call took 4 s (each operation compiled op by op), and
    the view did not say where the time went."""
    ip.run_cell("import time\ndef slow_first(x):\n    time.sleep(0.05)\n    return x * 2\n")
    r = ip.run_line_magic("jit_compare", "-o --budget 0.02 -n 1 -r 1 slow_first(jnp.ones(3))")
    assert r.eager_first_s > 0.05
    assert any("first eager call took" in n and "--no-eager" in n for n in r.notes)


def test_a_cell_magics_error_card_names_the_final_calls_line(ip):
    ip.run_cell("def f(x):\n    return x\n")
    _, cap = run(ip, "%%jaxpr\ny = jnp.arange(6.)\nf(y.reshape(4, 4))")
    card = "".join(o.data.get("text/plain", "") for o in cap.outputs)
    assert "at line 2" in card and "f(y.reshape(4, 4))" in card, card
    assert "target.py" not in cap.stdout + cap.stderr      # no frames of jaxmagic's own


JITTED_METHODS = """
import functools

class GAN:            # Haiku's mnist_gan: the update is a method jitted in its class
    @functools.partial(jax.jit, static_argnums=0)
    def update(self, x, y):
        return x * 2 + y

class Sampler(nnx.Module):    # Flax's minigpt: `@nnx.jit(donate_argnums=(1,))` on a method
    def __init__(self):
        self.w = nnx.Param(jnp.ones(3))

    @nnx.jit(donate_argnums=(1,))
    def step(self, tokens, k):
        return (self.w[...] * tokens)[k]

gan, sampler = GAN(), Sampler()
tokens = jnp.arange(3.0)
"""


def test_a_method_jitted_in_its_class_is_called_through_its_instance(ip):
    """`gan.update(x, y)`: the jit's `static_argnums=0` is `self`. The magics dropped the
    bound `self`: %jaxpr raised `missing 1 required positional argument`, %jit_compare
    said "static argument self=x is not hashable"."""
    ip.run_cell("from flax import nnx")
    assert ip.run_cell(JITTED_METHODS).success
    v = ip.run_line_magic("jaxpr", "-o gan.update(jnp.ones(3), tokens)")
    inputs = [n.title for n in v.full.nodes.values() if n.kind == "input"]
    assert inputs == ["jnp.ones(3)", "tokens"], inputs
    r = ip.run_line_magic("jit_compare", "-o --budget 0.1 gan.update(jnp.ones(3), tokens)")
    assert r.results_match is True and r.static_argnums == (), r.text()
    r = ip.run_line_magic("jit_compare", "-o --budget 0.1 sampler.step(tokens, 1)")
    assert r.results_match is True and [d["name"] for d in r.donated] == ["tokens"], r.text()
    assert not ip.user_ns["tokens"].is_deleted()


JAX_JIT_OVER_NNX = """
model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
opt = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

@jax.jit                      # Flax's gspmd guide: a plain jax.jit over NNX objects
def plain_step(model, opt, x):
    opt.update(model, nnx.grad(lambda m: (m(x) ** 2).mean())(model))
    return (model(x) ** 2).mean()
"""


def test_nnx_state_changed_inside_a_plain_jax_jit_is_said_to_be_lost(ip):
    """jax.jit takes a module as a pytree: what the step changes never reaches the
    caller (the guide's optimizer stays at step 0). The magics drew the changes as
    outputs "as nnx.jit does", and measured a program with 6 more outputs than the
    user's."""
    ip.run_cell("import optax\nfrom flax import nnx")
    assert ip.run_cell(JAX_JIT_OVER_NNX).success
    v = ip.run_line_magic("jaxpr", "-o plain_step(model, opt, jnp.ones((4, 2)))")
    outputs = [n.title for n in v.full.nodes.values() if n.kind == "output"]
    assert not any("updated" in t for t in outputs), outputs
    assert any("inside jax.jit, which returns no such change" in n for n in v.full.notes)
    r = ip.run_line_magic("jit_compare", "-o --budget 0.1 plain_step(model, opt, jnp.ones((4, 2)))")
    ns = ip.user_ns
    real = ns["plain_step"].lower(ns["model"], ns["opt"], jnp.ones((4, 2))).compile()
    assert r.output_bytes == real.memory_analysis().output_size_in_bytes == 4
    assert int(ns["opt"].step[...]) == 0 and r.results_match is True
