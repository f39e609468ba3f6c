"""%jit_compare / jaxmagic.compare_jit: eager vs jit through a real InteractiveShell.

Budgets are small (0.2-0.3 s) so each measurement takes well under a second; timing
*targets* live in benchmarks/bench_jit_compare.py, not here.
"""
import _thread
import gc
import logging
import re
import threading
import warnings
import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import run
from IPython.core.error import UsageError

import jaxmagic
from jaxmagic import _compat
from jaxmagic.core.arguments import StaticArgumentError
from jaxmagic.core.outputs import compare_outputs
from jaxmagic.render.jit import JitComparison
from jaxmagic.render.units import fmt_time

FAST = "--budget 0.25"

SETUP = """
import jax, jax.numpy as jnp, numpy as np
from functools import partial

def norm(X):
    X = X - X.mean(0)
    return X / X.std(0)

np.random.seed(1701)
X = jnp.array(np.random.rand(10000, 10), dtype=jnp.float32)

def chain(a, ws):
    for w in ws:
        a = jnp.tanh(a @ w)
    return a

A = jnp.ones((64, 64)) / 64
WS = [jnp.eye(64) * 0.5 + 0.01 * i for i in range(8)]
"""


@pytest.fixture
def sh(ip):
    res, _ = run(ip, SETUP)
    assert res.success
    return ip


def comparison(sh, line):
    """Run `%jit_compare -o ...` and return the JitComparison."""
    res, cap = run(sh, f"_jc = %jit_compare -o {line}")
    if res.error_in_exec is not None:
        raise res.error_in_exec
    return sh.user_ns["_jc"]


# ---- measurements ---------------------------------------------------------------------


def test_measurement_is_consistent(sh):
    r = comparison(sh, f"{FAST} chain(A, WS)")
    assert isinstance(r, JitComparison)
    for f in ("eager_s", "trace_s", "lower_s", "compile_s", "jit_s", "jit_spread_s",
              "speedup", "max_abs_diff", "max_rel_diff"):
        assert getattr(r, f) is not None, f
    assert 0 < r.jit_s < r.compile_s          # steady per call is far below compiling
    assert r.trace_s > 0 and r.lower_s > 0 and r.eager_s > 0
    assert r.speedup == pytest.approx(r.eager_s / r.jit_s)
    assert r.jit_repeats == 7 and len(r.jit_runs) == 7 and r.jit_loops >= 1
    assert r.jit_s == pytest.approx(float(np.median(r.jit_runs)))
    assert min(r.jit_runs) <= r.jit_s <= max(r.jit_runs)
    assert r.results_match is True and r.traces == 1 and not r.retrace_reasons
    assert r.max_abs_diff < 1e-3
    assert r.flops and r.flops > 8 * 2 * 64 ** 3 * 0.9     # eight 64x64 matmuls
    assert r.argument_bytes and r.output_bytes == 64 * 64 * 4
    assert r.interrupted is None and r.total_s < 5


def test_explicit_loops_and_runs(sh):
    r = comparison(sh, "-n 3 -r 4 norm(X)")
    assert (r.jit_loops, r.jit_repeats, len(r.jit_runs)) == (3, 4, 4)
    assert (r.eager_loops, r.eager_repeats, len(r.eager_runs)) == (3, 4, 4)
    assert r.results_match is True


def test_display_has_text_and_static_html(sh):
    res, cap = run(sh, f"%jit_compare {FAST} norm(X)")
    assert res.success
    data = cap.outputs[-1].data
    assert data["text/plain"].startswith("jit_compare norm(X)")
    for word in ("eager, op by op", "trace", "lower", "compile", "jit, steady", "speedup",
                 "results", "match", "traces"):
        assert word in data["text/plain"], word
    html = data["text/html"]
    assert "<script" not in html and "<style" not in html and "var(--" not in html
    assert "<svg" not in html and "<img" not in html    # the chart is inline-styled boxes
    for label in ("eager, per call", "trace + lower + compile", "jit, per call", "log scale"):
        assert label in html
    # every table cell carries the light panel colour: themes stripe rows with their own
    cells = re.findall(r"<td style=\"([^\"]*)\"", html)
    assert cells and all("background:#f7f9fb" in c for c in cells)
    ET.fromstring(html.replace("&nbsp;", " "))         # well-formed markup


def test_chart_bars_are_log_scaled():
    r = JitComparison(name="f(x)", eager_s=1e-3, jit_s=1e-4, trace_s=1e-3, lower_s=1e-3,
                      compile_s=98e-3)
    widths = [float(w) for w in re.findall(r"height:12px;width:([\d.]+)%", r.chart_html())]
    # axis 100 µs .. 100 ms (3 decades): eager 1 ms at 1/3, compile 100 ms at the end
    assert widths == pytest.approx([100 / 3, 100.0, 0.6], abs=0.5)


def test_no_eager(sh):
    r = comparison(sh, f"{FAST} --no-eager norm(X)")
    assert r.eager_s is None and r.speedup is None and r.results_match is None
    assert r.jit_s > 0 and r.compile_s > 0
    assert "skipped (--no-eager)" in r.text()


def test_cell_form_runs_prefix_once(sh):
    res, cap = run(sh, f"""%%jit_compare {FAST}
ran = globals().get("ran", 0) + 1
def scaled(x, k):
    return x * k
scaled(X, 3.0)""")
    assert res.success, res.error_in_exec
    assert sh.user_ns["ran"] == 1 and "scaled" in sh.user_ns
    assert cap.outputs[-1].data["text/plain"].startswith("jit_compare scaled(X, 3.0)")


# ---- results and side effects -----------------------------------------------------------


def test_python_side_effect_is_flagged(sh):
    run(sh, """
calls = []
def drift(x):
    calls.append(1)          # Python state read at trace time
    return {"same": x, "scaled": x * len(calls)}
""")
    r = comparison(sh, f"{FAST} drift(X)")
    assert r.results_match is False
    assert r.eager_varies is True
    bad = [d.path for d in r.leaves if not d.ok]
    assert bad == ["['scaled']"]
    assert any("change from call to call" in h for h in r.hints)
    text = r.text()
    assert "DIFFER" in text and "['scaled']" in text


def test_float_reassociation_hint():
    a, b = np.float32([1.0, 2.0]), np.float32([1.0, 2.001])
    ok, max_abs, max_rel, leaves = compare_outputs(a, b)
    assert not ok and max_abs == pytest.approx(0.001, rel=1e-2)
    assert leaves[0].rtol == 1e-4


@pytest.mark.parametrize("ref, got, ok", [
    (np.float32([1, 2, 3]), np.float32([1, 2, 3.00001]), True),
    (np.float32([1, 2, np.nan]), np.float32([1, 2, np.nan]), True),
    (np.float32([1, 2, np.nan]), np.float32([1, 2, 3]), False),
    (np.int32([1, 2]), np.int32([1, 3]), False),
    (np.float64([1e6, 1]), np.float64([1e6, 1 + 1e-8]), True),
    ((np.float32(1),), [np.float32(1)], False),          # structure differs
    (np.float32([[1, 2]]), np.float32([1, 2]), False),    # shape differs
])
def test_compare_outputs(ref, got, ok):
    assert compare_outputs(ref, got)[0] is ok


# ---- static and donated arguments ---------------------------------------------------------


def test_static_argnums_and_argnames(sh):
    run(sh, "def g(x, neg):\n    return -x if neg else x")
    r = comparison(sh, f"{FAST} --static-argnums 1 g(X, True)")
    assert r.static_argnums == (1,) and r.results_match is True and r.traces == 1
    r = comparison(sh, f"{FAST} --static-argnames neg g(X, neg=True)")
    assert r.static_argnames == ("neg",) and r.results_match is True


def test_already_jitted_target_keeps_its_static_args(sh):
    run(sh, "@partial(jax.jit, static_argnums=(1,))\ndef f(x, neg):\n    return -x if neg else x")
    r = comparison(sh, f"{FAST} f(1., True)")
    assert r.unwrapped_jit and r.static_argnums == (1,)
    assert r.results_match is True and r.eager_s > 0
    assert "already jitted" in r.text()


def test_donated_arguments(sh):
    run(sh, """
def upd(x, y):
    return x + 1, y.sum()
Y = jnp.ones(7)
""")
    r = comparison(sh, f"{FAST} --donate-argnums 0,1 upd(X, Y)")
    assert r.donate_argnums == (0, 1)
    by_name = {d["name"]: d for d in r.donated}
    assert by_name["X"]["usable"] is True          # an output of X's shape and dtype exists
    assert by_name["Y"]["usable"] is False         # nothing float32[7] to write into
    assert "not usable" in r.donation_warning
    assert r.alias_bytes == 10000 * 10 * 4
    assert r.results_match is True
    # the magic donated copies: the user's arrays are still alive and unchanged
    assert not sh.user_ns["X"].is_deleted() and not sh.user_ns["Y"].is_deleted()
    assert float(sh.user_ns["Y"].sum()) == 7.0
    assert "NOT usable" in r.text()


def test_a_donated_argument_is_blamed_only_for_the_leaves_jit_could_not_use(sh):
    """Flax's minigpt donates its model, whose PRNG keys have no output to write into:
    the whole model (84 arrays) was reported NOT usable, its parameters used in place."""
    run(sh, """
def step(state, x):
    return state["w"] * state["b"].sum() + jax.random.normal(state["key"], (5,)) + x.sum()

STATE = {"w": jnp.ones(5), "b": jnp.ones(3), "key": jax.random.key(0)}
""")
    r = comparison(sh, f"{FAST} --donate-argnums 0 step(STATE, jnp.ones(3))")
    (d,) = r.donated
    assert d["leaves"] == 3 and d["usable"] is False, d
    assert sorted(d["unusable"]) == ["float32[3]", "key<fry>[]"], d
    assert "2 of 3 NOT usable (float32[3], key<fry>[])" in r.text(), r.text()
    assert not any(x.is_deleted() for x in jax.tree.leaves(sh.user_ns["STATE"]))


def test_a_sharded_donated_argument_is_matched_by_its_shards(sh):
    """JAX names a sharded argument's unusable buffers by one shard's shape
    (`float32[1,4]` for 8 rows over 8 devices): the batch was reported used in place."""
    run(sh, """
from jax.sharding import NamedSharding, PartitionSpec as P
_mesh = jax.make_mesh((8,), ("d",))
B = jax.device_put(jnp.ones((8, 4)), NamedSharding(_mesh, P("d")))
W = jnp.ones((4, 4))

def fit(w, b):
    return w - (b @ w).mean()
""")
    r = comparison(sh, f"{FAST} --no-eager --donate-argnums 0,1 fit(W, B)")
    if not r.donation_warning:
        pytest.skip(f"JAX {jax.__version__} says nothing of a sharded buffer it cannot use")
    by_name = {d["name"]: d for d in r.donated}
    assert by_name["W"]["usable"] is True, r.donated
    assert by_name["B"]["usable"] is False and by_name["B"]["unusable"] == ["float32[8,4]"]
    assert "B (float32[8,4]) NOT usable" in r.text(), r.text()
    assert not sh.user_ns["B"].is_deleted()


def test_non_array_argument_is_held_static(sh):
    """A string argument is held static automatically (Equinox's filter rule), and the
    view names it; marking it static by hand still works."""
    run(sh, "def g(x, mode):\n    return x * 2 if mode == 'double' else x")
    r = comparison(sh, f"{FAST} g(X, 'double')")
    assert r.results_match is True and r.traces == 1
    assert "held static (not traced): mode='double'" in r.text()
    assert "mode=&#x27;double&#x27;" in r.html() or "mode='double'" in r.html()
    r = comparison(sh, f"{FAST} --static-argnames mode g(X, 'double')")
    assert r.results_match is True and r.static_argnames == ("mode",)
    assert "held static" not in r.text()


def test_python_bool_in_control_flow_needs_static(sh):
    run(sh, "def h3(k, x, neg):\n    return -x * k if neg else x")
    res, cap = run(sh, f"%%jit_compare {FAST} --static-argnums 0\nh3(2, X, 1)")
    err = res.error_in_exec
    assert isinstance(err, UsageError)
    assert "neg=1 (an int)" in str(err) and "--static-argnums 2" in str(err)
    assert "TracerBoolConversionError" in str(err)
    # the fixed command merges with the static argnums already given
    assert f"try: %%jit_compare {FAST} --static-argnums 0,2" in cap.outputs[-1].data["text/plain"]
    r = comparison(sh, f"{FAST} --static-argnums 0,2 h3(2, X, 1)")
    assert r.results_match is True and r.static_argnums == (0, 2)


def test_api_static_error_is_a_type_error():
    def h(x, neg):
        return -x if neg else x
    with pytest.raises(StaticArgumentError) as info:
        jaxmagic.compare_jit(h, jnp.ones(3), 1, budget=0.1)   # (a bool would be held static)
    assert isinstance(info.value, TypeError)
    assert info.value.__cause__ is None and info.value.__suppress_context__   # short trace
    assert isinstance(info.value.original, jax.errors.TracerBoolConversionError)
    assert "static_argnums=(1,)" in str(info.value)
    assert "static_argnames=('neg',)" in str(info.value)


def test_unhashable_static_and_bad_argnums(sh):
    run(sh, "def k(x, sizes):\n    return x * len(sizes)")
    res, _ = run(sh, f"%jit_compare {FAST} --static-argnums 1 k(X, [1, 2])")
    assert isinstance(res.error_in_exec, UsageError)
    assert "not hashable" in str(res.error_in_exec) and "tuple" in str(res.error_in_exec)
    res, _ = run(sh, f"%jit_compare {FAST} --static-argnums 5 k(X, (1, 2))")
    assert isinstance(res.error_in_exec, UsageError)
    assert "out of range" in str(res.error_in_exec)


# ---- retraces ---------------------------------------------------------------------------

RETRACE = """
class Stamp:
    '''A static argument whose hash changes every time it is hashed.'''
    def __init__(self):
        self.t = 0
    def __hash__(self):
        self.t += 1
        return self.t
    def __eq__(self, other):
        return other is self

class Cfg:
    '''A static config the function mutates: a Python-level side effect.'''
    def __init__(self):
        self.calls = 0
    def __hash__(self):
        return hash(self.calls)
    def __eq__(self, other):
        return isinstance(other, Cfg) and other.calls == self.calls

def step(x, s):
    return x * 2

def counted_step(x, cfg):
    cfg.calls += 1
    return x * 2
"""


def test_retraces_are_counted_and_explained(sh):
    if (0, 9, 0) <= _compat.JAX_VERSION <= (0, 10, 2):
        pytest.skip("JAX 0.9.0-0.10.2 do not retrace here (test_releases.py covers them)")
    run(sh, RETRACE)
    r = comparison(sh, f"{FAST} --static-argnums 1 step(X, Stamp())")
    assert r.traces > 2
    assert any("hashes differently" in n for n in r.static_notes)
    # JAX's own explanation, captured for this call (0.7's explainer gives up on this key)
    assert r.retrace_reasons or any("could not explain" in n for n in r.notes)
    assert all("never seen function" not in s for s in r.retrace_reasons)
    text = r.text()
    assert f"{r.traces}: the function was traced again {r.traces - 1} times" in text
    assert "hashes differently" in r.html()
    if r.speedup < 1:           # the retraces are the time, not the program's work
        assert "because the measured calls traced and compiled again" in text, text
        assert not r.costliest and "costliest groups" not in text, text


def test_jaxpr_s_own_traces_are_no_retrace_reason(sh):
    """`%jaxpr` traces in a context of its own (`_compat.fresh_traces`). A `%jit_compare`
    after it met Adam's jitted bias correction for the first time in the user's context,
    and JAX's explainer blamed the one difference, our own setting: a wrong cause in the
    card, under "1 (no retrace)"."""
    pytest.importorskip("optax")
    if (0, 9, 0) <= _compat.JAX_VERSION < (0, 10, 0):
        pytest.skip("JAX 0.9's explainer names no difference of context to tell ours by")
    run(sh, "import optax\ntx = optax.adam(1e-2)\nparams = {'w': jnp.ones((4, 1))}\n"
            "opt_state = tx.init(params)\ngrads = jax.tree.map(jnp.ones_like, params)")
    run(sh, "%jaxpr tx.update(grads, opt_state, params)")
    r = comparison(sh, f"{FAST} tx.update(grads, opt_state, params)")
    assert r.traces == 1 and not r.retrace_reasons, r.retrace_reasons
    assert "TRACING CACHE MISS" not in r.html()


def test_mutated_static_argument_is_flagged(sh):
    run(sh, RETRACE)
    r = comparison(sh, f"{FAST} --static-argnums 1 counted_step(X, Cfg())")
    assert any("changed while the function was traced" in n for n in r.static_notes)
    if r.traces > 1:        # whether it retraces depends on when JAX hashes the key
        assert r.retrace_reasons or any("could not explain" in n for n in r.notes)


def test_eager_retraces_from_a_jit_made_inside(sh):
    run(sh, "def inner_jit(x):\n    return jax.jit(lambda y: y + 1)(x)")
    r = comparison(sh, f"{FAST} inner_jit(X)")
    assert r.eager_retraces > 0
    assert "eager retraces" in r.text()


# ---- bad inputs ---------------------------------------------------------------------------


def test_non_call_target(sh):
    res, _ = run(sh, "%jit_compare X + 1")
    assert isinstance(res.error_in_exec, UsageError)
    assert "expected a call" in str(res.error_in_exec)
    assert "usage: %jit_compare" in str(res.error_in_exec)
    res, _ = run(sh, "%%jit_compare\ny = norm(X)")
    assert isinstance(res.error_in_exec, UsageError)
    assert "usage: %%jit_compare" in str(res.error_in_exec)
    res, _ = run(sh, "%jit_compare -n 0 norm(X)")
    assert isinstance(res.error_in_exec, UsageError)
    # the usage line is the options `%jit_compare?` lists, on one line, then the call
    assert str(res.error_in_exec).splitlines()[1] == (
        "usage: %jit_compare [-n N] [-r R] [--budget SECONDS] [--no-eager] "
        "[--static-argnums I,J] [--static-argnames A,B] [--donate-argnums I,J] "
        "[--checkify] [-o] F(ARGS...)")


def test_function_raising_is_located(sh):
    run(sh, "def bad(x):\n    y = x + 1\n    return y @ jnp.ones((3, 3))")
    res, cap = run(sh, f"%jit_compare {FAST} bad(X)")
    assert isinstance(res.error_in_exec, TypeError)
    card = [o.data["text/plain"] for o in cap.outputs if "line 3" in o.data["text/plain"]]
    assert card and "return y @ jnp.ones((3, 3))" in card[0]


def test_jit_only_error_is_located(sh):
    # the seed's get_negatives: fine op by op, impossible under jit
    run(sh, "def get_negatives(x):\n    return x[x < 0]")
    res, cap = run(sh, f"%jit_compare {FAST} get_negatives(jnp.arange(-3., 3.))")
    err = res.error_in_exec
    assert isinstance(err, jax.errors.NonConcreteBooleanIndexError)
    assert any("return x[x < 0]" in o.data["text/plain"] for o in cap.outputs)


# ---- globals restored ---------------------------------------------------------------------


def _globals_state():
    loggers = [logging.getLogger(n) for n in _compat.CACHE_MISS_LOGGERS]
    return (bool(jax.config.jax_explain_cache_misses), gc.isenabled(),
            [(lg.propagate, list(lg.handlers)) for lg in loggers], len(warnings.filters))


def test_config_restored_after_success_and_error(sh):
    before = _globals_state()
    assert before[0] is False
    comparison(sh, f"{FAST} norm(X)")
    assert _globals_state() == before
    run(sh, "def bad2(x):\n    raise ValueError('boom')")
    res, _ = run(sh, f"%jit_compare {FAST} bad2(X)")
    assert isinstance(res.error_in_exec, ValueError)
    assert _globals_state() == before
    run(sh, "def negatives(x):\n    return x[x < 0]")
    res, _ = run(sh, f"%jit_compare {FAST} --no-eager negatives(X)")   # fails while tracing
    assert isinstance(res.error_in_exec, jax.errors.NonConcreteBooleanIndexError)
    assert _globals_state() == before


def test_user_setting_of_explain_flag_is_kept(sh):
    jax.config.update("jax_explain_cache_misses", True)
    try:
        comparison(sh, f"{FAST} norm(X)")
        assert jax.config.jax_explain_cache_misses is True
    finally:
        jax.config.update("jax_explain_cache_misses", False)


def test_ctrl_c_returns_partial_results(sh, default_sigint):
    before = _globals_state()
    timer = threading.Timer(1.5, _thread.interrupt_main)     # well past compiling
    timer.start()
    try:
        r = comparison(sh, "--budget 60 -n 20 -r 100000 chain(A, WS)")
    finally:
        timer.cancel()
    assert r.interrupted == "steady jit"
    assert r.compile_s > 0 and r.results_match is True
    assert r.jit_runs and r.jit_s > 0 and r.eager_s is None
    assert r.total_s < 10
    assert "interrupted (Ctrl-C) during steady jit" in r.text()
    assert _globals_state() == before
    res, _ = run(sh, "1 + 1")                       # the shell is fine
    assert res.success and res.result == 2


# ---- rendering ----------------------------------------------------------------------------


def test_user_strings_are_escaped():
    r = JitComparison(name="<b>f</b>(x)", eager_s=1e-3, jit_s=1e-4, trace_s=1e-3,
                      lower_s=1e-3, compile_s=1e-2, speedup=10.0, traces=2,
                      retrace_reasons=["TRACING CACHE MISS:\n  now <Cfg> and before <Cfg>"])
    html = r.html()
    assert "<b>f</b>" not in html and "&lt;b&gt;f&lt;/b&gt;(x)" in html
    assert "&lt;Cfg&gt;" in html


def test_partial_result_renders():
    r = JitComparison(name="f(x)", interrupted="trace")
    assert "interrupted" in r.text() and r.chart_html() == ""
    bundle = r._repr_mimebundle_()
    assert set(bundle) >= {"text/plain", "text/html"}


def test_fmt_time():
    assert fmt_time(523e-6) == "523 µs"
    assert fmt_time(1.5e-3) == "1.5 ms"
    assert fmt_time(2.0) == "2 s"
    assert fmt_time(850e-9) == "850 ns"
    assert fmt_time(None) == "—"


def test_an_eager_call_longer_than_the_budget_runs_once_more_and_is_said_as_it_is(sh):
    """A function slower than the whole budget op by op: eager runs twice (the first call
    and one timed call), not again to check its results vary, and the note says it is
    slow, not that JAX compiled its operations (the steady call is as slow)."""
    run(sh, "import time\ncalls = []\ndef slow(x):\n    calls.append(type(x).__name__)\n"
            "    time.sleep(0.3)\n    return x * 2")
    m = sh.run_line_magic("jit_compare", "--budget 0.2 -o slow(jnp.ones(3))")
    eager = [c for c in sh.user_ns["calls"] if "Tracer" not in c]
    assert len(eager) == 2, sh.user_ns["calls"]
    note = next(n for n in m.notes if n.startswith("the first eager call"))
    assert "compiled" not in note and "timed from 1 call more" in note, note
    assert m.eager_varies is None


MIXED = """
def mixed(x):
    h = x.astype(jnp.bfloat16)
    for _ in range(4):
        h = jnp.tanh(h * 1.7 + 0.3) * h
    return jnp.sum(h.astype(jnp.float32) ** 2, axis=-1)
x = jax.random.normal(jax.random.key(0), (64, 512))
"""


def test_float32_results_of_bfloat16_arithmetic_are_compared_at_its_precision(ip):
    """A program that computes in bfloat16 and returns float32 (a mixed-precision model):
    jit fuses the bfloat16 steps and rounds less often than eager, a few 0.1% apart,
    which is bfloat16's rounding, not a different result. It was "DIFFER" at float32's
    tolerance; compared at bfloat16's, it matches, and the note says at what precision.
    A float32 program keeps float32's tolerance."""
    ip.run_cell(MIXED)
    r = ip.run_line_magic("jit_compare", "-o mixed(x)")
    assert r.max_rel_diff > 1e-4          # beyond float32's tolerance: there is rounding
    assert r.results_match is True and r.leaves[0].rtol == 5e-2
    assert any("compared at bfloat16 precision" in n for n in r.notes), r.notes
    ip.run_cell("def plain(x):\n    return jnp.sum(jnp.tanh(x) ** 2, axis=-1)")
    r = ip.run_line_magic("jit_compare", "-o plain(x)")
    assert r.leaves[0].rtol == 1e-4 and not any("precision" in n for n in r.notes)


def test_the_rounding_experiment_nudges_at_the_programs_precision():
    """Inputs are moved by one ulp of the arithmetic the program rounds at: a float32
    input of a bfloat16 program by bfloat16's (2⁻⁷ of itself), else by float32's."""
    from jaxmagic.core.outputs import nudge

    x = jnp.linspace(1.0, 2.0, 64)
    rng = np.random.default_rng(0)
    coarse = np.abs(np.asarray(nudge(x, rng, jnp.bfloat16)) / np.asarray(x) - 1)
    fine = np.abs(np.asarray(nudge(x, rng)) / np.asarray(x) - 1)
    assert np.allclose(coarse, 2.0 ** -7, rtol=1e-3)
    assert 0 < fine.max() <= 2.0 ** -23


def test_the_programs_precision_is_read_past_a_primitives_non_jaxpr_parameters():
    """A library's primitive may hold a jaxpr in a tuple with other values (lineax's
    `linear_solve`: `static=(jaxpr, ..., True)`, under optimistix's root_find): the
    precision is read from the jaxpr, the rest passed by (it raised AttributeError)."""
    from jax.extend.core import Primitive

    from jaxmagic.core.outputs import arithmetic_floor

    inner = jax.make_jaxpr(lambda x: (x.astype(jnp.bfloat16) * 2).astype(jnp.float32))(1.0)
    holds = Primitive("holds_a_jaxpr")
    holds.def_abstract_eval(lambda x, **params: x)
    outer = jax.make_jaxpr(lambda x: holds.bind(x, static=(inner.jaxpr, "solve", True)))(1.0)
    assert arithmetic_floor(outer) == jnp.bfloat16
