"""`%jaxpr --values` on every control-flow form JAX has: loops and branches whose bodies
return constants, vmapped while_loops whose predicate is batched, switch, fori_loop,
nested and vmapped forms, custom rules, remat, shard_map and pmap. Each runs with no
failure note, its results' summaries are what `jax.jit` returns, a NaN born inside a
body is found at its line, and the headline never contradicts the panel. Real shell,
real JAX on 8 CPU devices."""
from __future__ import annotations

import re

import jax
import numpy as np
import pytest
from conftest import run

# each form: (setup, call); `f` is the function called
FORMS = {
    "while body returns a literal": ("""
def f(x):
    return jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, 1.0), (0, x))
""", "f(0.5)"),
    "scan body returns literals": ("""
def f(x):
    return jax.lax.scan(lambda c, y: (1.0, 2.0), x, jnp.ones(3))
""", "f(0.5)"),
    "cond branch returns a literal": ("""
def f(x):
    return jax.lax.cond(x > 0, lambda v: 1.0, lambda v: v, x)
""", "f(0.5)"),
    "jit returns a literal": ("""
def f(x):
    return jax.jit(lambda v: (v * 2., 1.0))(x)
""", "f(jnp.float32(0.5))"),
    "custom_jvp returns a literal": ("""
@jax.custom_jvp
def one(x):
    return 1.0 + 0 * x
one.defjvp(lambda p, t: (one(p[0]), t[0]))
def f(x):
    return jax.grad(lambda v: one(v) * v)(x)
""", "f(jnp.float32(0.5))"),
    "checkpoint returns a literal": ("""
def f(x):
    return jax.checkpoint(lambda v: (v * 2., 3.0))(x)
""", "f(jnp.float32(0.5))"),
    "the result is a literal": ("""
def f(x):
    return x + 1., jnp.float32(1.0)
""", "f(jnp.float32(0.5))"),
    "vmapped while, batched predicate": ("""
def f(xs):
    return jax.vmap(lambda x: jax.lax.while_loop(lambda c: c < 10., lambda c: c * 2.,
                                                 x))(xs)
""", "f(jnp.array([1., 3., 20.]))"),
    "vmapped while over a key and a vector": ("""
def f(ks, xs):
    def one(k, x):
        def body(c):
            k, v = c
            k, sub = jax.random.split(k)
            return k, v + jax.random.uniform(sub, (4,))
        return jax.lax.while_loop(lambda c: c[1].sum() < 10., body, (k, x))[1]
    return jax.vmap(one)(ks, xs)
""", "f(jax.random.split(jax.random.key(0), 3), jnp.arange(12.).reshape(3, 4))"),
    "vmapped while holding a scan, in_axes=1": ("""
def f(xs):
    def one(x):
        def body(c):
            y, _ = jax.lax.scan(lambda a, b: (a + b, None), c[1], jnp.ones(2))
            return c[0] * 2., y
        return jax.lax.while_loop(lambda c: c[0].sum() < 10., body, (x, x))
    return jax.vmap(one, in_axes=1)(xs)
""", "f(jnp.array([[1., 3., 20.], [2., 4., 6.]]))"),
    "nested vmap of a while": ("""
def f(xs):
    one = lambda x: jax.lax.while_loop(lambda c: c < 10., lambda c: c * 2., x)
    return jax.vmap(jax.vmap(one))(xs)
""", "f(jnp.array([[1., 3.], [20., 0.5]]))"),
    "fori_loop, vmapped trip count": ("""
def f(ns, x):
    return jax.vmap(lambda n: jax.lax.fori_loop(0, n, lambda i, c: c * 2., x))(ns)
""", "f(jnp.array([1, 3, 0]), jnp.float32(1.))"),
    "switch": ("""
def f(i, x):
    return jax.lax.switch(i, [lambda v: v + 1., lambda v: v * 3., lambda v: 2.0], x)
""", "f(1, jnp.float32(2.))"),
    "vmapped switch": ("""
def f(i, x):
    return jax.vmap(lambda j, v: jax.lax.switch(j, [lambda u: u + 1., lambda u: u * 3.],
                                                v))(i, x)
""", "f(jnp.array([0, 1, 1]), jnp.array([1., 2., 3.]))"),
    "fori_loop, static trip count": ("""
def f(x):
    return jax.lax.fori_loop(0, 5, lambda i, c: c * 2. + i, x)
""", "f(jnp.float32(1.))"),
    "fori_loop, dynamic trip count": ("""
def f(n, x):
    return jax.lax.fori_loop(0, n, lambda i, c: c * 2. + i, x)
""", "f(5, jnp.float32(1.))"),
    "scan in a while": ("""
def f(x):
    def body(c):
        i, v = c
        v, _ = jax.lax.scan(lambda a, b: (a + b, a), v, jnp.ones(3))
        return i + 1, v
    return jax.lax.while_loop(lambda c: c[0] < 4, body, (0, x))
""", "f(jnp.float32(1.))"),
    "cond in vmap": ("""
def f(xs):
    return jax.vmap(lambda x: jax.lax.cond(x > 0, lambda v: v * 2., lambda v: -v, x))(xs)
""", "f(jnp.array([1., -1., 0.]))"),
    "custom_vjp under grad": ("""
@jax.custom_vjp
def double(x):
    return x * 2.
double.defvjp(lambda x: (x * 2., None), lambda r, g: (g * 2.,))
def f(x):
    return jax.grad(lambda v: double(v).sum())(x)
""", "f(jnp.ones(3))"),
    "checkpoint under grad": ("""
def f(x):
    return jax.grad(lambda v: jax.checkpoint(lambda u: jnp.sin(u) * u)(v).sum())(x)
""", "f(jnp.ones(3))"),
    "shard_map": ("""
from jax.sharding import Mesh, PartitionSpec as P
mesh = Mesh(jax.devices(), ("d",))
def f(x):
    return jax.shard_map(lambda v: v * jax.lax.psum(v.sum(), "d"), mesh=mesh,
                         in_specs=P("d"), out_specs=P("d"))(x)
""", "f(jnp.arange(16.))"),
    "pmap": ("""
def f(x):
    return jax.pmap(lambda v: v * 2.)(x)
""", "f(jnp.ones((jax.local_device_count(), 2)))"),
}


def values_of(ip, setup: str, call: str):
    """The view of `%jaxpr --values -o call`, with no failure note of the run."""
    result, cap = run(ip, setup + f"\n_v = %jaxpr --values -o {call}")
    assert result.error_in_exec is None, cap.stderr
    view = ip.user_ns["_v"]
    assert not [n for n in view.notes if n.startswith("--values")], view.notes
    assert view.values is not None
    return view


def jitted(ip, call: str) -> list:
    """The flat results of `call` run under `jax.jit`, as the user would run it."""
    name, rest = call.split("(", 1)
    return ip.user_ns["jax"].tree.leaves(eval(f"jax.jit({name})({rest}", ip.user_ns))


def assert_results_are_jits(ip, view, call: str) -> None:
    flow = view.values.flow
    want = jitted(ip, call)
    assert len(flow.results) == len(want)
    for vid, w in zip(flow.results, want):
        if vid[0] == "literal":
            np.testing.assert_allclose(vid[1], np.asarray(w))
            continue
        s, w = flow.summaries[vid], np.asarray(w)
        if w.dtype.kind not in "fiub":      # a key: its count only
            assert s.n == w.size
            continue
        w = w.astype(np.float64)
        assert (s.n, s.nan) == (w.size, int(np.isnan(w).sum())), (s, w)
        fin = w[np.isfinite(w)]
        if fin.size:
            np.testing.assert_allclose([s.mean, s.min, s.max],
                                       [fin.mean(), fin.min(), fin.max()], rtol=1e-5)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_control_flow_form_runs_and_summarises_what_jit_returns(ip, form):
    setup, call = FORMS[form]
    view = values_of(ip, setup, call)
    assert_results_are_jits(ip, view, call)


def test_a_batched_while_runs_its_body_on_every_lane_while_any_runs(ip):
    """[1, 3, 20] doubled while < 10: four steps (the first lane's), the body computing
    all three lanes each time (as XLA does), the finished lanes keeping their carry."""
    setup, call = FORMS["vmapped while, batched predicate"]
    flow = values_of(ip, setup, call).values.flow
    mul = next(e for e in flow.equations.values() if e.primitive == "mul")
    s = flow.summaries[mul.outs[0]]
    assert (s.n, s.min, s.max) == (12, 2.0, 40.0)
    result = flow.summaries[flow.results[0]]
    assert (result.min, result.max, result.mean) == (12.0, 20.0, 16.0)


BORN = {
    "while": ("""
def f(x):
    def body(c):
        i, v, _ = c
        v = jnp.log(v - 1.)
        return i + 1, v, 1.0
    return jax.lax.while_loop(lambda c: c[0] < 5, body, (0, x, 0.))
""", "f(jnp.float32(20.))", "log", "body:4", "iteration 2 of while"),
    "vmapped while": ("""
def f(xs):
    def one(x):
        return jax.lax.while_loop(lambda c: c < 10.,
                                  lambda c: jnp.sqrt(c - 2.) * 4., x)
    return jax.vmap(one)(xs)
""", "f(jnp.array([1., 3., 20.]))", "sqrt", "<lambda>:4", "iteration 0 of while"),
    "switch branch": ("""
def f(i, x):
    def shifted(v):
        return jnp.log(v - 5.)
    return jax.lax.switch(i, [lambda v: v + 1., shifted, lambda v: v * 0.], x)
""", "f(1, jnp.float32(2.))", "log", "shifted:3", ""),
}


@pytest.mark.parametrize("case", sorted(BORN))
def test_a_nan_born_inside_a_body_is_found_at_its_line(ip, case):
    setup, call, primitive, where, iteration = BORN[case]
    view = values_of(ip, setup, call)
    card = view.values.card
    assert (card.primitive, card.where.split(" (")[0], card.iteration) == \
        (primitive, where, iteration)
    assert card.reached and card.what == "NaN"
    assert_results_are_jits(ip, view, call)


def test_a_nan_a_vmapped_while_makes_for_finished_lanes_is_said_to_be_dropped(ip):
    """log(10 - c) in a lane past 10: the body still runs there, and the loop keeps the
    lane's carry; the results are right, not 'finite and wrong'."""
    setup = """
def f(xs):
    step = lambda c: c * 2. + jnp.log(10. - c)
    return jax.vmap(lambda x: jax.lax.while_loop(lambda c: c < 10., step, x))(xs)
"""
    call = "f(jnp.array([1., 5., 20.]))"
    view = values_of(ip, setup, call)
    assert_results_are_jits(ip, view, call)
    card = view.values.card
    assert (card.primitive, card.where.split(" (")[0]) == ("log", "<lambda>:2")
    assert card.dropped and not card.reached
    text = "\n".join(card.lines())
    assert "nothing to fix for these results: the vmapped while_loop at <lambda>:3" in text
    assert "wrong" not in text and "but :" not in text


def test_a_nan_nothing_reads_is_said_not_to_reach_the_results(ip):
    setup = """
def f(x):
    unused = jnp.log(x - 5.)
    return x * 2.
"""
    card = values_of(ip, setup, "f(jnp.ones(3))").values.card
    assert card.primitive == "log" and not card.reached
    lines = card.lines()
    assert "no result holds NaN or Inf: nothing they are made of reads it" in lines
    assert not any("but :" in x or "wrong" in x for x in lines), lines


# programs with no origin card: each the headline's count, and what the panel must say
QUIET = {
    "nan fill": ("""
def f(x):
    return jnp.where(x > 0, x, jnp.nan)
""", "f(jnp.array([1., -1., 2.]))", "the program writes them itself, nan at f:2"),
    "times nan": ("""
def f(x):
    return x * jnp.nan
""", "f(jnp.ones(3))", "the program writes them itself, nan at f:2"),
    "nan fill in a scan": ("""
def f(x):
    return jax.lax.scan(lambda c, y: (c, jnp.where(y > 1, y, jnp.nan)), 0., x)
""", "f(jnp.array([0., 2., 3.]))", "the program writes them itself, nan at <lambda>:2"),
    "nanmax of a nan fill": ("""
def f(x):
    return jnp.nanmax(jnp.where(x > 1, x, jnp.nan))
""", "f(jnp.array([0., 2., 3.]))", "nan and −inf at f:2"),
    "−inf fill constants": ("""
def f(x):
    return jnp.maximum(jnp.full((6,), -jnp.inf), x)
""", "f(jnp.ones(6))", "the −inf are written by the program"),
    "all finite": ("""
def f(x):
    return x * 2.
""", "f(jnp.ones(6))", "every value finite"),
}


def panel_words(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub("<[^>]+>", " ", html)).replace("&lt;", "<") \
        .replace("&gt;", ">")


@pytest.mark.parametrize("case", sorted(QUIET))
def test_the_headline_never_contradicts_the_panel(ip, case):
    setup, call, said = QUIET[case]
    values = values_of(ip, setup, call).values
    assert values.card is None
    headline, panel = values.headline(), panel_words(values.side_html())
    nonfinite = any(s.nonfinite for s in values.flow.summaries.values())
    assert ("all finite" in headline) == (not nonfinite), headline
    assert ("every value finite" in panel) == (not nonfinite), panel
    assert said in panel and (said in values.text() or said == "every value finite")


def test_the_rows_a_body_makes_together_are_each_values_own(monkeypatch):
    """In a compiled body the summaries of values of one size are made together, stacked
    and reduced along the stack; every field is the one the value's own reduction gives:
    NaN, ±Inf, zeros, complex, integer and boolean values, partial rows past the budget,
    stacks split where they are full, a value of a size of its own."""
    from jaxmagic.core import summary_rows as S

    monkeypatch.setattr(S, "SHARED_ELEMENTS", 40)      # three of 12 elements a stack
    rng = np.random.default_rng(0)
    values = [rng.normal(size=(3, 4)).astype(np.float32) * 1e3,
              np.array([np.nan, np.inf, -np.inf, 0.0, 2.5, 1, 2, 3, 4, 5, 6, 7], np.float32),
              np.full(12, np.nan, np.float32), np.zeros((2, 6), np.float32),
              (rng.normal(size=12) + 1j * rng.normal(size=12)).astype(np.complex64),
              np.arange(-5, 7, dtype=np.int32), rng.normal(size=(4, 3)) > 0,
              rng.normal(size=12).astype(np.float32) + 7.0,
              rng.normal(size=12).astype(np.float32), np.float32(3.0)]
    fulls = [True, True, True, False, True, True, True, True, False, True]

    def both(*xs):
        pending = [S.Pending(x, full) for x, full in zip(xs, fulls)]
        S.resolve(pending)
        return [p.row for p in pending], [S._traced_row(x, S.kind_of(x), full)
                                          for x, full in zip(xs, fulls)]

    shared, alone = jax.jit(both)(*values)
    for x, a, b in zip(values, shared, alone):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-3,
                                   err_msg=str(x))


def test_a_diverging_loops_summaries_warn_of_nothing(ip):
    """A loop whose values overflow pools infinite spreads on the host: the user sees the
    Inf on the graph, and no RuntimeWarning of numpy's below the cell."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        view = values_of(ip, "def f(x):\n    return jax.lax.fori_loop(0, 30, lambda i, x: x ** 3,"
                         " x)", "f(jnp.array([2., 3.]))")
    assert any(s.pinf for s in view.values.flow.summaries.values())
