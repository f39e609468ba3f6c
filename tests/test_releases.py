"""Behaviour that differs between JAX releases, one test per release range.

Each test names the releases it covers and is skipped on the others; .ci/run runs every
JAX minor from the oldest supported to the newest, so each range runs somewhere. The
ranges were measured on 0.7.2, 0.8.0, 0.8.1, 0.8.3, 0.9.0, 0.9.2, 0.10.0-0.10.2,
0.11.0-0.11.2 and 0.12.0.1 (the slice text's change in 0.8.2 read in JAX's source).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import jaxmagic
from jaxmagic import _compat
from jaxmagic.core.checks import explain

NEWEST = None        # a range open at the top: still so in the newest release


def release(v) -> str:
    return "newest" if v is NEWEST else ".".join(map(str, v))


def span(first, last) -> str:
    return f"{release(first)}-{release(last)}"


def per_range(names: str, table, say):
    """Parametrize over a table of (first, last, value) rows, each id naming its range."""
    return pytest.mark.parametrize(names, table,
                                   ids=[f"{span(a, b)}: {say(v)}" for a, b, v in table])


def only_on(first, last):
    """Skip unless the running JAX is in first..last (inclusive)."""
    v = _compat.JAX_VERSION
    if not (first <= v and (last is NEWEST or v <= last)):
        pytest.skip(f"JAX {span(first, last)} only; this is {jax.__version__}")


# ---- x[i:j] with traced bounds: JX206 from each release's IndexError text ---------------

@per_range("first, last, text", _compat.TRACED_SLICE_TEXTS, repr)
def test_traced_slice_is_jx206(first, last, text):
    only_on(first, last)

    @jax.jit
    def window(x, i):
        return x[i:i + 2]

    with pytest.raises(IndexError) as info:
        window(jnp.arange(5.0), 1)
    assert text in str(info.value)
    finding = explain(info.value)
    assert finding is not None and finding.rule == "JX206", finding
    assert finding.source.strip() == "return x[i:i + 2]" and finding.fix


def test_traced_slice_texts_cover_every_release():
    """The table has no gap: every release from 0.7.0 on raises one of its texts."""
    ranges = [(a, b) for a, b, _ in _compat.TRACED_SLICE_TEXTS]
    assert ranges[0][0] == (0, 7, 0) and ranges[-1][1] is NEWEST
    for (_, last), (first, _) in zip(ranges, ranges[1:]):
        assert first == (last[0], last[1], last[2] + 1), (last, first)


# ---- pmap's own mesh axis ---------------------------------------------------------------

PMAP_AXES = [
    ((0, 7, 0), (0, 7, 2), "PmapSharding", None),
    ((0, 8, 0), (0, 10, 1), "NamedSharding", "<axis 0x"),   # repr(core._TempAxisName(fun))
    ((0, 10, 2), NEWEST, "NamedSharding", "_internal_pmap_axis_name"),
]


@pytest.mark.parametrize("first, last, kind, axis", PMAP_AXES,
                         ids=[f"{span(a, b)}: {k} {x or ''}".strip() for a, b, k, x in PMAP_AXES])
def test_pmap_axis_is_shown_as_pmap_axis(first, last, kind, axis):
    only_on(first, last)
    y = jax.pmap(lambda v: v * 2)(jnp.ones((8, 3)))
    assert type(y.sharding).__name__ == kind
    if axis is not None:
        (name,) = y.sharding.mesh.axis_names
        assert name.startswith(axis) and _compat.is_pmap_axis(name)
    view = jaxmagic.sharding_view(y)
    lay = view.layouts[0]
    assert lay.mesh[0].name == "pmap axis" and lay.spec.startswith("P(pmap axis")
    assert lay.dim_axes == (("pmap axis",), ())
    assert any(n.startswith("made by jax.pmap") for n in lay.notes), lay.notes
    shown = view.text() + view.html()
    assert "<axis 0x" not in shown and _compat.PMAP_INTERNAL_AXIS not in shown


def test_a_named_pmap_axis_keeps_its_name():
    y = jax.pmap(lambda v: v * 2, axis_name="batch")(jnp.ones((8, 3)))
    assert not _compat.is_pmap_axis("batch") and not _compat.is_pmap_axis("<axis 0xzz>")
    if type(y.sharding).__name__ == "NamedSharding":
        lay = jaxmagic.sharding_view(y).layouts[0]
        assert lay.mesh[0].name == "batch" and lay.dim_axes == (("batch",), ())
        assert not any(n.startswith("made by jax.pmap") for n in lay.notes)


# ---- a static argument whose hash changes every time it is hashed -----------------------

def _stamp_class():
    """The `Stamp` of the %jit_compare retrace tests: a static argument whose hash changes
    every time it is hashed."""
    from test_jit_compare import RETRACE

    namespace: dict = {}
    exec(RETRACE, namespace)  # noqa: S102
    return namespace["Stamp"]


Stamp = _stamp_class()


# 0.9.0-0.10.2: jit's trace cache keys on a FlatTree whose hash leaves the static value
# out, so the trace is found again; the C++ fast path still misses on every call.
RETRACES = [((0, 7, 0), (0, 8, 3), True), ((0, 9, 0), (0, 10, 2), False),
            ((0, 11, 0), NEWEST, True)]


@per_range("first, last, retraces", RETRACES, lambda r: "retraces" if r else "no retrace")
def test_unstable_static_hash_card_says_what_happened(first, last, retraces):
    only_on(first, last)
    r = jaxmagic.compare_jit(lambda x, s: x * 2, jnp.ones(3), Stamp(), static_argnums=1,
                             number=2, repeat=3)
    (note,) = r.static_notes
    assert note.startswith("static argument s hashes differently each time"), note
    shown = r.text() + r.html()
    if retraces:
        assert r.traces > 2
        assert note.endswith("jit never finds it in its cache: every call traces the "
                             "function again"), note
        assert f"{r.traces}: the function was traced again {r.traces - 1} times" in shown
    else:
        assert r.traces == 1 and "1 (no retrace)" in shown
        assert "fast path misses its cache on every call" in note and "no retrace" in note
        assert "never finds" not in shown


# ---- JAX's cache-miss explainer and the garbage collector --------------------------------

# 0.9.x: jaxlib's weakref_lru_cache walks its map while explaining a miss, and a collection
# in that walk can crash the process (it did, in this suite); fixed in 0.10.0.
EXPLAINER_GC = [((0, 7, 0), (0, 8, 3), True), ((0, 9, 0), (0, 9, 2), False),
                ((0, 10, 0), NEWEST, True)]


@per_range("first, last, collects", EXPLAINER_GC,
           lambda c: "collector on" if c else "collector off")
def test_collector_while_jit_compare_traces(first, last, collects):
    import gc

    only_on(first, last)
    seen = []

    # jit's traces while explanations are on: when jit loses to eager (noise, on this tiny
    # call), %jit_compare traces once more afterwards, to name the costliest groups.
    def f(x):
        if isinstance(x, jax.core.Tracer) and _compat.config_flag("jax_explain_cache_misses"):
            seen.append(gc.isenabled())
        return x * 2

    jaxmagic.compare_jit(f, jnp.ones(3), number=1, repeat=1)
    assert seen and all(s == collects for s in seen), seen
    assert gc.isenabled(), "the collector is back on after the measurement"


# ---- the sharding XLA propagated, as the dump after propagation writes it ----------------

SHARDING_TEXTS = [
    ((0, 7, 0), (0, 10, 2), "{devices=[2,4]<=[8]}"),     # a tile assignment (measured:
    ((0, 12, 0), NEWEST, "{mesh['data'=2,'model'=4], [{'data'}, {'model'}]}"),  # 0.7.2,
]                                                        # 0.10.2; 0.12.0.1)


@per_range("first, last, text", SHARDING_TEXTS, repr)
def test_propagated_sharding_text_reads_as_the_same_spec(first, last, text):
    """`%jaxpr --sharding` reads either form back to the spec P('data', 'model')."""
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P

    from jaxmagic.core.compiled import propagation
    from jaxmagic.core.compiled.analysis import analyze
    from jaxmagic.core.target import BoundCall
    from jaxmagic.core.trace import trace

    only_on(first, last)
    mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    x = jax.device_put(jnp.ones((16, 32)), NamedSharding(mesh, P("data", None)))
    w = jax.device_put(jnp.ones((32, 64)), NamedSharding(mesh, P(None, "model")))
    t = trace(BoundCall(lambda x, w: x @ w, (x, w), {}, ["x", "w"], {}, "f(x, w)"))
    dump = analyze(t).before_partitioning
    assert f"sharding={text}" in dump
    assert propagation.spec_of(text, ("data", "model"), (2, 4)) == (("data",), ("model",))
