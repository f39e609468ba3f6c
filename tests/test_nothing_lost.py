"""Nothing of the user's lost, no false alarm: every magic on every donating form.

A train step donates its state (`jax.jit` / `nnx.jit` `donate_argnums`, `jax.pmap`'s own,
`eqx.filter_jit(donate=...)`, a donating jit called from a plain function); the magics
trace, compile, time and run it many times, and afterwards every array the user holds
(plain, sharded, pmapped, typed PRNG keys, `nnx.Rngs` and model state) must be alive and
unchanged, with no traceback from jaxmagic. And `%jit_compare` says "DIFFER" only where
the difference is more than float rounding, naming a cause only with evidence.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import run

import jaxmagic
from jaxmagic import overlays

SETUP = """
import jax, jax.numpy as jnp, numpy as np, optax, equinox as eqx
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec as P
shard_map = getattr(jax, "shard_map", None) or \\
    __import__("jax.experimental.shard_map", fromlist=["shard_map"]).shard_map

n = jax.local_device_count()
x = jnp.ones((n, 4))
w = jax.pmap(lambda a: a * 2.0)(x)                     # pmapped: one shard per device
key = jax.random.key(0)                                # a typed PRNG key
mesh = jax.make_mesh((n,), ("d",))
ws = jax.device_put(jnp.arange(4.0 * n).reshape(n, 4), NamedSharding(mesh, P("d")))
a = jnp.arange(4.0)

class Drop(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(4, 4, rngs=rngs)
        self.drop = nnx.Dropout(0.5, rngs=rngs)
    def __call__(self, v):
        return self.drop(self.lin(v))

model = Drop(nnx.Rngs(0))
emlp = eqx.nn.MLP(4, 4, 8, 2, key=jax.random.key(1))

pmap_step = jax.pmap(lambda w, x: w + x, donate_argnums=0)
jit_step = jax.jit(lambda w, x: w * 2.0 + x, donate_argnums=0)
key_step = jax.jit(lambda k, v: (jax.random.split(k)[0], v + 1.0), donate_argnums=0)
nnx_step = nnx.jit(lambda m, v: m(v).sum(), donate_argnums=0)
eqx_step = eqx.filter_jit(lambda m, v: m(v), donate="all")
smap_step = jax.jit(shard_map(lambda p, q: p + q, mesh=mesh, in_specs=(P("d"), P("d")),
                              out_specs=P("d")), donate_argnums=0)
inner = jax.jit(lambda p, q: p + q, donate_argnums=0)
def outer_step(p, q):                  # plain Python: run eagerly, `inner` donates p
    return inner(p, q) * 2.0
"""

FORMS = {
    "jax.pmap": "pmap_step(w, x)",
    "jax.jit": "jit_step(a, a)",
    "typed key": "key_step(key, a)",
    "nnx.jit with nnx.Rngs": "nnx_step(model, x)",
    "eqx.filter_jit(donate)": "eqx_step(emlp, a)",
    "shard_map in jit": "smap_step(ws, ws)",
    "jit inside Python": "outer_step(a, a)",
}

# `%jaxpr` plain and with every registered overlay (--cost, --profile, --sharding,
# --memory, --values: each one added is swept too), and %jit_compare
MAGICS = ["%jaxpr"] + [f"%jaxpr {flag.option}" for flag in overlays.flags()] + \
    ["%jit_compare --budget 0.1"]


@pytest.fixture
def sh(ip):
    res, _ = run(ip, SETUP)
    assert res.success, res.error_in_exec
    return ip


def snapshot(sh) -> dict:
    """Every array the user holds, as host values (a key as its key data)."""
    import jax

    ns = sh.user_ns
    held = {"x": ns["x"], "w": ns["w"], "key": ns["key"], "ws": ns["ws"], "a": ns["a"],
            "model": ns["nnx"].state(ns["model"]), "emlp": ns["emlp"]}
    out = {}
    for name, tree in held.items():
        for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
            if not isinstance(leaf, jax.Array):
                continue
            assert not leaf.is_deleted(), f"{name}{jax.tree_util.keystr(path)} was deleted"
            if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
                leaf = jax.random.key_data(leaf)
            out[name + jax.tree_util.keystr(path)] = np.asarray(leaf)
    return out


def assert_unchanged(before: dict, after: dict) -> None:
    assert before.keys() == after.keys()
    for k in before:
        np.testing.assert_array_equal(before[k], after[k], err_msg=k)


def compared(sh, call: str):
    """`%jit_compare -o` of `call`: no traceback, and every array of the user's as it was."""
    before = snapshot(sh)
    res, cap = run(sh, f"_r = %jit_compare -o --budget 0.1 {call}")
    assert res.success and "Traceback" not in cap.stdout + cap.stderr, res.error_in_exec
    assert_unchanged(before, snapshot(sh))
    return sh.user_ns["_r"]


# ---- the four cases that lost data or raised ----------------------------------------------


def test_jit_compare_of_a_donating_pmap_keeps_the_users_arrays(sh):
    r = compared(sh, "pmap_step(w, x)")
    assert r.results_match is True
    assert any("donates w" in n and "own copy" in n for n in r.notes)


def test_jit_compare_of_a_function_calling_a_donating_jit(sh):
    before = snapshot(sh)
    r = jaxmagic.compare_jit(sh.user_ns["outer_step"], sh.user_ns["a"], sh.user_ns["a"],
                             budget=0.1)
    assert_unchanged(before, snapshot(sh))
    assert r.results_match is True and r.eager_s is not None


def test_jit_compare_of_a_donated_typed_key(sh):
    r = compared(sh, "key_step(key, a)")
    assert [d["shape"] for d in r.donated] == ["key<fry>[]"]
    assert r.donated[0]["bytes"] == 8 and r.results_match is True


def test_jit_compare_donates_what_eqx_filter_jit_donates(sh):
    """`eqx.filter_jit(donate="all")` (Equinox's parallelism example) donates every array
    argument; %jit_compare re-wrapped it donating nothing while saying "with the same
    static and donated arguments"."""
    r = compared(sh, "eqx_step(emlp, a)")
    assert [(d["name"], d["shape"]) for d in r.donated] == [("emlp", "6 arrays"),
                                                            ("a", "float32[4]")], r.donated
    assert r.results_match is True
    run(sh, "eqx_rest = eqx.filter_jit(lambda m, v, s: m(v) * s, donate='all-except-first')")
    r = compared(sh, "eqx_rest(emlp, a, 2.0)")
    assert [d["name"] for d in r.donated] == ["a"], r.donated
    # and --memory compiles it donating, as the user's program runs
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    params = {"w1": jnp.ones((128, 128)), "w2": jnp.ones((128, 128))}
    step = eqx.filter_jit(lambda p: jax.tree.map(lambda w: w * 0.9, p), donate="all")
    assert jaxmagic.memory(step, params).memory.profile.alias_bytes >= 2 * 128 * 128 * 4
    assert not params["w1"].is_deleted()


def test_memory_reads_a_pmaps_donation_as_jits():
    import jax
    import jax.numpy as jnp

    n = jax.local_device_count()

    def update(params, x):
        return jax.tree.map(lambda p: p * 0.9 + x.sum(), params)

    params = {"w1": jnp.ones((n, 128, 128)), "w2": jnp.ones((n, 128, 128))}
    x = jnp.ones((n, 8, 128))
    plain = jaxmagic.memory(jax.pmap(update), params, x).memory
    assert "donating those arguments" in plain.text()
    donated = jaxmagic.memory(jax.pmap(update, donate_argnums=0), params, x).memory
    assert donated.profile.alias_bytes >= 2 * 128 * 128 * 4
    assert "donating those arguments" not in donated.text()
    assert not params["w1"].is_deleted()


def test_eager_sees_a_traced_python_number_as_jit_gives_it(sh):
    """lm1b's `TrainState.step = 0` reaches its schedule as an array under jit; run op
    by op with the Python 0, `(0 * 1.0) ** -0.5` raised ZeroDivisionError."""
    run(sh, "sched_step = jax.jit(lambda st, v: v * (st['step'] * 1.0) ** -0.5)\n"
            "st = {'step': 0}")
    r = compared(sh, "sched_step(st, a)")
    assert r.results_match is True and r.eager_s is not None
    assert sh.user_ns["st"] == {"step": 0}


# ---- float rounding is no difference ---------------------------------------------------------

BATCHNORM_STEP = """
class Net(nnx.Module):     # l1's bias feeds a BatchNorm: its gradient is exactly zero
    def __init__(self, rngs):
        self.l1 = nnx.Linear(16, 32, rngs=rngs)
        self.bn = nnx.BatchNorm(32, rngs=rngs)
        self.l2 = nnx.Linear(32, 4, rngs=rngs)
    def __call__(self, v):
        return self.l2(nnx.relu(self.bn(self.l1(v))))
net = Net(nnx.Rngs(0))
opt = nnx.Optimizer(net, optax.adam(1e-3), wrt=nnx.Param)
xb = jax.random.normal(jax.random.key(1), (64, 16))
yb = jax.random.normal(jax.random.key(2), (64, 4))
@nnx.jit
def train_step(net, opt, v, y):
    loss, g = nnx.value_and_grad(lambda m: ((m(v) - y) ** 2).mean())(net)
    opt.update(net, g)
    return loss
"""


def test_a_zero_gradient_scaled_by_adam_is_rounding_not_a_difference(sh):
    assert run(sh, BATCHNORM_STEP)[0].success
    r = jaxmagic.compare_jit(sh.user_ns["train_step"], sh.user_ns["net"], sh.user_ns["opt"],
                             sh.user_ns["xb"], sh.user_ns["yb"], budget=0.1)
    assert r.results_match is True, r.text()
    noisy = {d.path for d in r.leaves if d.rounding}
    assert "net.l1.bias (updated)" in noisy       # the API names arguments by parameter
    assert not {p for p in noisy if "kernel" in p}       # the well-conditioned leaves
    text = r.text()
    assert "match" in text and "DIFFER" not in text and "decided by float rounding" in text
    assert "Python state" not in text and "randomness" not in text


def test_a_real_difference_still_differs_with_its_evidence(sh):
    """numpy randomness read at call time: eager changes from call to call (the
    evidence), so the view says DIFFER and names that cause."""
    run(sh, "def noisy(v):\n    return v * np.random.rand()")
    r = jaxmagic.compare_jit(sh.user_ns["noisy"], sh.user_ns["a"], budget=0.1)
    assert r.results_match is False and r.eager_varies is True
    assert not any(d.rounding for d in r.leaves)
    assert "DIFFER" in r.text() and "numpy.random" in r.text()


# ---- the sweep: every magic on every donating form -------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("form", list(FORMS))
def test_no_magic_loses_or_changes_a_users_array(sh, form):
    before = snapshot(sh)
    for magic in MAGICS:
        res, cap = run(sh, f"{magic} {FORMS[form]}")
        out = cap.stdout + cap.stderr
        assert res.success, f"{magic} {FORMS[form]}: {res.error_in_exec!r}"
        assert "Traceback" not in out and "jaxmagic/" not in out, f"{magic}: {out}"
        assert_unchanged(before, snapshot(sh))


def test_shardviz_of_a_donating_steps_output_and_of_what_it_donated(sh):
    """%%shardviz runs the cell as written, so the donation there is the user's own: it
    draws the step's output, and the donated array's layout, without a traceback."""
    before = snapshot(sh)
    for cell in ("%%shardviz\nout = pmap_step(jnp.array(w, copy=True), x)\nout",
                 "%%shardviz\nw2 = jnp.array(w, copy=True)\npmap_step(w2, x)\nw2",
                 "%%shardviz\nsmap_step(jnp.array(ws, copy=True), ws)"):
        res, cap = run(sh, cell)
        out = cap.stdout + cap.stderr
        assert res.success and "Traceback" not in out, out
        assert cap.outputs, cell
    assert_unchanged(before, snapshot(sh))


def test_a_donated_batch_xla_does_not_write_into_is_said_so_without_jaxs_warning(sh):
    """Equinox's parallelism example donates its sharded batch (`donate="all"`): XLA
    writes no output into it, and on an Auto mesh JAX 0.12 warns of nothing (it leaves the
    buffer to XLA as a `buffer_donor`): %jit_compare said the batch was "used in place".
    XLA's own aliasing (`input_output_alias`) decides now."""
    run(sh, """
from jax.sharding import AxisType, NamedSharding
auto = jax.make_mesh((n,), ("d",), axis_types=(AxisType.Auto,))   # as the example makes it
sharded_step = eqx.filter_jit(lambda m, b: m(b.sum(0)), donate="all")
batch = jax.device_put(jnp.ones((n, 4)), NamedSharding(auto, P("d")))
""")
    r = compared(sh, "sharded_step(emlp, batch)")
    by_name = {d["name"]: d for d in r.donated}
    assert by_name["batch"]["usable"] is False, r.donated
    assert by_name["emlp"]["leaves"] == 6 and r.results_match is True
    assert not sh.user_ns["batch"].is_deleted()
