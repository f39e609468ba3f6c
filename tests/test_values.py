"""`%jaxpr --values`: the summaries of every value and where the first NaN or Inf was
born, on JAX's FAQ traps, in loops, and beside `jax_debug_nans`; nothing of the user's
changed. Real shell, real JAX on 8 CPU devices."""
from __future__ import annotations

import json
import re

import jax
import numpy as np
import pytest
from conftest import run

# the cell's code as IPython runs it (leading blank lines stripped): `loss:2` is the
# second line of the setup
TRAPS = {
    # the gradient of jnp.where(x > 0, jnp.sqrt(x), 0.) at 0 (JAX's FAQ)
    "where": ("""
def loss(x):
    y = jnp.where(x > 0, jnp.sqrt(x), 0.)
    return y.sum()
x = jnp.array([0., 1., 4.])
f = jax.grad(loss)
""", "div", "d/dx sqrt(x) = 1 / (2 sqrt(x)) at x = 0 is +inf", "loss:2"),
    "log": ("""
def f(p):
    return -(p * jnp.log(p)).sum()
x = jnp.array([0.5, 0.5, 0.0])
""", "log", "log(0) = −inf", "f:2"),
    "norm": ("""
def f(v):
    return v / jnp.linalg.norm(v)
x = jnp.zeros(4)
""", "div", "0 / 0", "f:2"),
    "exp": ("""
def f(z):
    e = jnp.exp(z)
    return e / e.sum()
x = jnp.array([1., 100., 2.])
""", "exp", "exp overflows", "f:2"),
    "masked": ("""
def f(s, mask):
    s = jnp.where(mask, s, -jnp.inf)
    s = s - s.max(-1, keepdims=True)
    return jnp.exp(s) / jnp.exp(s).sum(-1, keepdims=True)
x = jnp.ones((2, 3))
m = jnp.array([[True, True, False], [False, False, False]])
""", "sub", "inf − inf", "f:3"),
}


def values_of(ip, setup: str, call: str):
    result, cap = run(ip, setup + f"\n_v = %jaxpr --values -o {call}")
    assert result.error_in_exec is None, cap.stderr
    view = ip.user_ns["_v"]
    assert view.values is not None, view.notes
    return view


@pytest.mark.parametrize("trap", sorted(TRAPS))
def test_the_origin_is_the_right_equation_at_the_right_line_with_its_cause(ip, trap):
    setup, primitive, cause, where = TRAPS[trap]
    call = "f(x, m)" if trap == "masked" else "f(x)"
    card = values_of(ip, setup, call).values.card
    assert card is not None
    assert (card.primitive, card.where.split(" (")[0]) == (primitive, where), card
    assert cause in card.cause, card.cause
    assert card.fix


def test_the_where_trap_names_the_inf_the_forward_line_and_the_double_where(ip):
    setup, *_ = TRAPS["where"]
    view = values_of(ip, setup, "f(x)")
    card = view.values.card
    assert not card.backward and card.first_nan.startswith("mul at loss:2 (backward pass)")
    assert "0 · inf" in card.first_nan
    assert card.gradient_of.startswith("sqrt") and card.discarded
    assert "double where" in card.lines()[-1]
    text = view.text()
    assert "first +Inf: div" in text and "jnp.where discards that branch" in text


def first_nan_primitive(ip, call: str) -> str | None:
    """The primitive `jax_debug_nans` names for `call`, run under jit as the user would."""
    ip.run_cell("import jax")
    with jax.debug_nans(True):
        try:
            ip.user_ns["_run"] = eval(f"lambda: jax.jit({call.split('(')[0]})"
                                      f"({call.split('(', 1)[1]}", ip.user_ns)
            jax.block_until_ready(ip.user_ns["_run"]())
        except FloatingPointError as e:
            found = re.search(r"encountered in (\w+)", str(e))
            return found.group(1) if found else None
    return None


@pytest.mark.parametrize("trap", ["where", "norm", "masked"])
def test_the_first_nan_is_the_primitive_jax_debug_nans_names(ip, trap):
    setup, *_ = TRAPS[trap]
    call = "f(x, m)" if trap == "masked" else "f(x)"
    card = values_of(ip, setup, call).values.card
    assert first_nan_primitive(ip, call) == card.nan_primitive


SCAN = """
def f(c0, xs):
    def body(c, x):
        c = c - x
        y = jnp.sqrt(c)
        return c, y
    return jax.lax.scan(body, c0, xs)
c0 = jnp.float32(37.5)
xs = jnp.ones(60)
"""


def test_a_nan_born_inside_a_scan_body_names_its_line_and_iteration(ip):
    view = values_of(ip, SCAN, "f(c0, xs)")
    card = view.values.card
    assert (card.primitive, card.where.split(" (")[0]) == ("sqrt", "body:4")
    assert card.iteration == "iteration 37 of scan ×60"
    assert "square root of a negative" in card.cause
    # jax_debug_nans names only the scan: no inner equation, no iteration
    assert first_nan_primitive(ip, "f(c0, xs)") in ("scan", None)


def test_while_loops_and_conds_report_the_iteration_and_the_branch_taken(ip):
    setup = """
def g(x):
    def body(s):
        i, v = s
        v = jax.lax.cond(i > 4, lambda v: jnp.log(v - 3.), lambda v: v * 1., v)
        return i + 1, v
    return jax.lax.while_loop(lambda s: s[0] < 8, body, (0, x))
x = jnp.float32(2.)
"""
    values = values_of(ip, setup, "g(x)").values
    card = values.card
    assert (card.primitive, card.iteration) == ("log", "iteration 5 of while")
    ran = {values.flow.equations[vid[0]].primitive: s.n
           for vid, s in values.flow.summaries.items() if vid[0] in values.flow.equations}
    assert (ran["mul"], ran["log"]) == (5, 3)     # each branch, at the iterations it ran


def test_summaries_are_the_values_statistics(ip):
    setup = """
def h(a, k):
    b = a * 2.
    return b, (a > 1).astype(jnp.int32), jax.random.split(k)
a = jnp.array([[0., 1.], [2., 3.]])
k = jax.random.key(0)
"""
    values = values_of(ip, setup, "h(a, k)").values
    rows = {r["primitive"]: r for r in values.records()}
    b = rows["mul"]
    expected = np.array([0., 2., 4., 6.])
    assert b["n"] == 4 and b["zeros"] == 1 and b["nan"] == 0
    assert np.isclose(b["mean"], expected.mean()) and np.isclose(b["std"], expected.std())
    assert (b["min"], b["max"]) == (0.0, 6.0)
    assert values.card is None and "all finite" in values.headline()
    kinds = {r["kind"] for r in values.records()}
    assert {"float", "bool", "int", "key"} <= kinds


def test_every_equation_of_the_walk_is_a_node_of_the_graph(ip, transformer):
    ip.user_ns["params"], ip.user_ns["x"] = transformer.make(2, d=16, t=8)
    ip.user_ns["grad"] = jax.grad(transformer.model)
    view = values_of(ip, "", "grad(params, x)")
    nodes = {e: n for n in view.full.nodes.values() if n.kind == "op" for e in n.eqns}
    eqns = view.values.flow.equations
    unused = [e for i, e in eqns.items() if i not in nodes]    # constants nothing reads
    assert set(nodes) <= set(eqns) and unused and \
        all(e.ins == (("literal", 0.0),) for e in unused)     # relu's jvp: zeros
    assert f"{len(unused)} unused constant" in " ".join(view.full.notes)
    assert all(nodes[i].primitive == e.primitive for i, e in eqns.items() if i in nodes)
    layers = view.values.layers()
    assert layers and len(layers[0][1]) == 2     # `block ×2`: a row per layer


def test_the_picture_marks_the_origin_and_its_red_edges(ip):
    setup, *_ = TRAPS["where"]
    view = values_of(ip, setup, "f(x)")
    dot = view.dot()
    assert "first NaN/Inf born here" in dot and "penwidth=3" in dot
    assert "NaN 1" in dot and "#dc2626" in dot
    html = view._repr_mimebundle_()["text/html"]
    assert "first +Inf: div" in html and "double where" in html


def test_nothing_of_the_users_changes(ip):
    setup = """
import jax
@jax.jit
def step(w, k):
    return w * jnp.sqrt(w - 1.), jax.random.split(k)[0]
step_d = jax.jit(step, donate_argnums=0)
w = jnp.array([0., 2.])
k = jax.random.key(3)
w_before, k_before = np.asarray(w), np.asarray(jax.random.key_data(k))
"""
    jax.config.update("jax_debug_nans", True)
    try:
        view = values_of(ip, setup, "step_d(w, k)")
        assert jax.config.jax_debug_nans is True
    finally:
        jax.config.update("jax_debug_nans", False)
    assert view.values.card.primitive == "sqrt"
    ns = ip.user_ns
    assert not ns["w"].is_deleted()
    np.testing.assert_array_equal(np.asarray(ns["w"]), ns["w_before"])
    np.testing.assert_array_equal(np.asarray(jax.random.key_data(ns["k"])), ns["k_before"])


def test_a_budget_keeps_the_origin_and_says_what_it_left_out(ip):
    setup, *_ = TRAPS["where"]
    ip.run_line_magic("config", "JaxMagic.values_budget = 3")
    try:
        view = values_of(ip, setup, "f(x)")
    finally:
        ip.run_line_magic("config", "JaxMagic.values_budget = 20000")
    assert (view.values.card.primitive, view.values.card.nan_primitive) == ("div", "mul")
    assert view.values.flow.budget_left_out > 0
    assert any("values_budget" in n for n in view.values.notes())


def test_a_program_that_raises_is_a_note_not_a_traceback(ip):
    setup = """
import numpy as np
def refuse(v):
    raise ValueError("the callback refuses")
def calls_back(x):
    return jax.pure_callback(refuse, jax.ShapeDtypeStruct(x.shape, x.dtype), x) + 1.
x = jnp.ones(3)
"""
    result, cap = run(ip, setup + "\n_v = %jaxpr --values -o calls_back(x)")
    assert result.error_in_exec is None, cap.stderr
    view = ip.user_ns["_v"]
    assert view.values is None
    assert any(n.startswith("--values: the run raised") for n in view.notes), view.notes


def test_the_python_api(ip):
    import jax.numpy as jnp

    import jaxmagic

    view = jaxmagic.values(lambda v: jnp.log(v), jnp.array([1.0, 0.0]))
    assert view.values.card.primitive == "log" and view.values.card.what == "−Inf"


SHARDED = """
from jax.sharding import Mesh, PartitionSpec as P
mesh = Mesh(jax.devices(), ("d",))
def body(v):
    total = jax.lax.psum(v.sum(), "d")
    return jnp.log(v - 1.) * total
sm = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=P("d")))
xs16 = jnp.arange(16.)
"""


def test_a_nan_born_inside_a_shard_map_body_is_found_at_its_line(ip):
    values = values_of(ip, SHARDED, "sm(xs16)").values
    card = values.card
    assert (card.primitive, card.where.split(" (")[0]) == ("log", "body:5")
    log = values.flow.summaries[values.flow.origin().outs[0]]
    # the global value's summary, pooled over the 8 devices' blocks: log(-1), log(0)
    assert (log.n, log.nan, log.ninf) == (16, 1, 1)
    assert not any("only its outputs" in n for n in values.notes())


# a division by the body's own argument, 0 / 0 on one device's block or one iteration
BODY_ARGUMENT = {
    "shard_map": ("""
from jax.sharding import Mesh, PartitionSpec as P
mesh = Mesh(jax.devices(), ("d",))
def ratio(v):
    return (v * 2.) / v
r = jax.jit(jax.shard_map(ratio, mesh=mesh, in_specs=P("d"), out_specs=P("d")))
""", "r(jnp.arange(16.))", "ratio:4", ""),
    "shard_map_argument_only": ("""
from jax.sharding import Mesh, PartitionSpec as P
mesh = Mesh(jax.devices(), ("d",))
def ratio(v):
    return v / v
r = jax.jit(jax.shard_map(ratio, mesh=mesh, in_specs=P("d"), out_specs=P("d")))
""", "r(jnp.arange(16.))", "ratio:4", ""),
    "scan": ("""
def r(c0, xs):
    def step(c, x):
        return c - 1., x / c
    return jax.lax.scan(step, c0, xs)
""", "r(jnp.float32(2.), jnp.zeros(4))", "step:3", "iteration 2 of scan ×4"),
}


@pytest.mark.parametrize("case", sorted(BODY_ARGUMENT))
def test_a_division_by_a_bodys_own_argument_has_its_cause(ip, case):
    setup, call, where, iteration = BODY_ARGUMENT[case]
    view = values_of(ip, setup, call)
    card = view.values.card
    assert (card.primitive, card.where.split(" (")[0], card.iteration) == \
        ("div", where, iteration)
    assert card.cause == "0 / 0" and "guard the denominator" in card.fix
    assert "0 / 0" in view.text() and "0 / 0" in view._repr_mimebundle_()["text/html"]


def test_a_cause_whose_inputs_were_not_all_summarised_says_so_and_guesses_nothing():
    from jaxmagic.core.flow import Equation, Flow, Summary
    from jaxmagic.core.nonfinite import cause

    zero, nan = Summary("f32[2]", "float", 2, zeros=2, finite=2), \
        Summary("f32[2]", "float", 2, nan=2)
    div = Equation(0, "div", ((-1, 0), (-1, 1)), ((0, 0),), nan_born_at=0)
    for known in ((-1, 0), (-1, 1)):        # the numerator's summary, or the denominator's
        why = cause(Flow({known: zero, (0, 0): nan}, {0: div}), div)
        assert why.what == "div made NaN from inputs --values did not summarise (see " \
            "the notes)", why


def test_a_pmap_body_is_opened_where_pmap_is_a_shard_map(ip):
    from jaxmagic import _compat

    setup = """
pf = jax.pmap(lambda v: jnp.log(v - 1.))
xp = jnp.ones((jax.local_device_count(), 2))
"""
    values = values_of(ip, setup, "pf(xp)").values
    if _compat.PMAP_IS_SHARD_MAP:
        assert values.card.primitive == "log" and values.card.cause == "log(0) = −inf"
    else:       # JAX 0.7's xla_pmap: its body runs whole, and the card says so
        assert "did not summarise in full" in values.card.cause
        assert any("only its outputs are summarised" in n for n in values.notes())


def test_the_hover_repeats_every_value_summary(ip):
    setup, *_ = TRAPS["where"]
    view = values_of(ip, setup, "f(x)")
    lines = view.hover_lines(view.graph)
    div = next(n.id for n in view.graph.nodes.values() if n.primitive == "div")
    assert any("+Inf 1" in x and "f32[3]" in x for x in lines[f"n{div}"])


@pytest.mark.parametrize("scale, vanishes", [(0.05, True), (1 / 8, False)])
def test_vanishing_activations_and_gradients_read_layer_by_layer(ip, scale, vanishes):
    setup = f"""
def layer(w, x):
    return jnp.tanh(x @ w)
def mlp(ws, x):
    for w in ws:
        x = layer(w, x)
    return (x ** 2).sum()
ws = [jax.random.normal(k, (64, 64)) * {scale} for k in jax.random.split(jax.random.key(0), 32)]
xs = jax.random.normal(jax.random.key(1), (8, 64))
"""
    values = values_of(ip, setup, "jax.grad(mlp)(ws, xs)").values
    series = dict(values.layers())
    assert set(series) == {"layer", "layer · backward"}
    assert len(series["layer"]) == 32
    trends = [values.trend(rows) for rows in series.values()]
    assert all(t.startswith(("σ shrinks", "σ vanishes")) for t in trends) if vanishes \
        else trends == ["", ""], trends
    html = values.side_html()
    assert ("σ shrinks" in html or "σ vanishes" in html) == vanishes


def test_an_inf_a_where_discards_is_said_to_be_discarded_not_alarmed(ip):
    setup = """
def rate(count):
    warm = count / 10.
    decay = (count + 0.) ** -0.5          # Inf at step 0, dropped by the where below
    return jnp.where(count < 10, warm, decay)
c = jnp.float32(0.)
"""
    view = values_of(ip, setup, "rate(c)")
    card = view.values.card
    assert (card.primitive, card.reached) == ("pow", False)
    assert "discarded: no result holds NaN or Inf" in card.lines()[0]
    assert not any(x.startswith("fix:") for x in card.lines())
    setup, *_ = TRAPS["where"]
    assert values_of(ip, setup, "f(x)").values.card.reached     # the NaN gradient is kept


def test_a_compiled_body_past_its_budget_stands_as_one_equation(ip, monkeypatch):
    from jaxmagic.core import values as V

    monkeypatch.setattr(V, "COMPILED_BUDGET", 2)
    card = values_of(ip, SCAN, "f(c0, xs)").values.card
    assert (card.primitive, card.where.split(" (")[0]) == ("scan", "f:6")
    assert "did not summarise in full" in card.cause
    values = values_of(ip, SCAN, "f(c0, xs)").values
    assert any("values not summarised" in n for n in values.notes())


MLP = """
def layer(w, x):
    return jnp.tanh(x @ w)
def mlp(ws, x):
    for w in ws:
        x = layer(w, x)
    return (x ** 2).sum()
ws = [jnp.full((4, 4), 0.05 * (i + 1)) for i in range(16)]
xs = jnp.ones((2, 4))
"""


def test_the_text_lists_the_values_to_look_at_and_says_where_the_rest_are(ip):
    """A terminal's text lists the largest values and the NaN/Inf ones first, not all of
    them (a 32-layer MLP's gradient listed 325, 27 KB stored in every notebook)."""
    view = values_of(ip, "import jax, jax.numpy as jnp\n" + MLP, "jax.grad(mlp)(ws, xs)")
    records = view.values.records()
    rows = view.values.text().split("the largest values (|x|):\n")[1].splitlines()[1:]
    listed = [r for r in rows if not r.startswith("note:")]
    assert len(records) > 2 * len(listed) > 10
    assert f"note: {len(records) - len(listed)} more in view.values.records()" in rows
    largest = max(records, key=lambda r: max(abs(r["min"]), abs(r["max"])))
    assert largest["primitive"] in listed[0] and "reduce_sum" in listed[0]
    setup, *_ = TRAPS["where"]
    text = values_of(ip, setup, "f(x)").values.text()
    first = text.split("values with NaN or Inf, then the largest |x|:\n")[1].splitlines()[1]
    assert "inf" in first.lower() or "nan" in first.lower()


DEBUG_NANS_AFTER = """
import json, sys
import jax, jax.numpy as jnp
import jaxmagic
def g(w):
    return jnp.clip(w, 0., 1.) * jnp.sqrt(w - 3.)
w = jnp.array([0., 2.])
g(w), jax.jit(g)(w)      # jit's C++ path now holds g, clip and each eager primitive
before = jax.config.values.copy()
jax.config.update("jax_debug_nans", True)
if sys.argv[1] == "values":
    jaxmagic.values(lambda x: jnp.log(x - 1.), jnp.ones(3)).values.card
said = []
for f in (g, jax.jit(g)):
    try:
        f(w)
        said.append("no error")
    except FloatingPointError as e:
        said.append(str(e).splitlines()[0])
jax.config.update("jax_debug_nans", False)
changed = sorted(k for k, v in jax.config.values.items() if before.get(k) != v)
print(json.dumps({"said": said, "changed": changed}))
"""


def test_jax_debug_nans_says_after_values_what_it_says_in_a_fresh_process(tmp_path):
    """A NaN check `--values` turns off for its run stays on for every jitted function
    the process called before it (`jnp.clip`'s, each eager primitive's)."""
    import subprocess
    import sys

    script = tmp_path / "after.py"
    script.write_text(DEBUG_NANS_AFTER)

    def said(*argv):
        out = subprocess.run([sys.executable, str(script), *argv], capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.splitlines()[-1])

    fresh, after = said("fresh"), said("values")
    assert fresh["said"] == ["invalid value (nan) encountered in sqrt"] * 2, fresh
    assert after == fresh


INTEGER_DIVISION = """
def f(x, d):
    q = x // d
    def step(c, row):
        return c, jax.lax.div(c, row)
    return q, jax.lax.scan(step, x, jnp.stack([d + 1, d]))[1]
x = jnp.array([5, 0, -3, 7])
d = jnp.array([0, 0, 0, 2])
"""


def test_an_integer_division_by_0_says_what_it_returned_at_its_line(ip):
    from jaxmagic.render.values import num

    view = values_of(ip, INTEGER_DIVISION, "f(x, d)")
    x, d = ip.user_ns["x"], ip.user_ns["d"]      # what JAX itself returns there
    floor, div = np.asarray(x // d)[d == 0], np.asarray(jax.lax.div(x, d))[d == 0]
    said = view.values.by_zero()
    assert said == [
        f"integer division by 0 at f:2: x // y returned {num(floor.min())} to "
        f"{num(floor.max())} where the divisor was 0 (3 of i32[4]), no error and no NaN "
        "(checkify.checkify(f, errors=checkify.div_checks) flags it)",
        f"integer division by 0 at step:4: div returned {num(div.min())} where the divisor "
        "was 0 (3 of i32[4]), no error and no NaN (checkify.checkify(f, "
        "errors=checkify.div_checks) flags it)"], said
    assert floor.min() < floor.max() and div.min() == div.max()
    assert view.values.card is None and said[0] in view.text()
    assert "integer division by 0 at f:2" in view._repr_mimebundle_()["text/html"]


BORN_OUTSIDE = """
scale = jnp.array([1., jnp.inf])
def f(params, batch):
    return (params["w"] * batch["x"]).sum() + batch["y"].sum() * scale.sum()
params = {"w": jnp.ones(3)}
batch = {"x": jnp.array([1., jnp.nan, 2.]), "y": jnp.ones(2)}
"""


def test_a_nan_brought_in_by_an_argument_names_it_and_says_the_program_did_not_make_it(ip):
    from jaxmagic.render import html as H

    view = values_of(ip, BORN_OUTSIDE, "f(params, batch)")
    values = view.values
    assert values.card is None                  # no equation made it
    said = values.arrived()
    assert said[0] == ("NaN 1 of f32[3] came in through the argument batch['x']: f did "
                       "not make it; look where that value is made, before the call"), said
    assert len(said) == 2 and said[1].startswith("+Inf 1 of f32[2] came in through the "
                                                 "captured constant scale:"), said
    assert said[0] in view.text()
    html = view._repr_mimebundle_()["text/html"]
    assert H.esc(said[0]) in html
    assert "every value finite" not in html


def test_the_cards_in_a_kernel_draw_the_graph_and_no_frame_of_ours(tmp_path):
    """A kernel, as a notebook runs these: each cell shows its picture and its card, with
    no error and no path of jaxmagic's."""
    import nbformat
    from notebook_support import errors, execute, jaxmagic_outputs

    cells = ["import jax, jax.numpy as jnp\n%load_ext jaxmagic"]
    cells += [setup + f"\n%jaxpr --values {call}" for setup, call, *_ in
              (BODY_ARGUMENT["shard_map"], BODY_ARGUMENT["scan"])]
    cells += [INTEGER_DIVISION + "\n%jaxpr --values f(x, d)",
              BORN_OUTSIDE + "\n%jaxpr --values f(params, batch)"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbformat.write(nb, tmp_path / "values.ipynb")
    nb, _ = execute(tmp_path / "values.ipynb", tmp_path)
    assert errors(nb) == []
    outs = jaxmagic_outputs(nb)
    said = {o.cell_index: o.html for o in outs if o.is_picture}
    assert sorted(said) == [1, 2, 3, 4], [o.label for o in outs]
    for index, words in ((1, "cause: 0 / 0"), (2, "cause: 0 / 0"),
                         (3, "integer division by 0 at f:2"),
                         (4, "came in through the argument batch[&#x27;x&#x27;]")):
        assert words in said[index], (index, words)
    shown = json.dumps([c.get("outputs") for c in nb.cells])
    assert "jaxmagic/" not in shown and "Traceback" not in shown


# issue 41 items 1–3: each case's equation, line, cause and fix read from the mathematics
# of its primitive, written before running: (setup, what, primitive, first line of the
# card, words of the cause, words of the fix, words the fix must not hold)
MATH = {
    # d/ds sqrt(s) = 1 / (2 sqrt(s)) is +inf at s = 0, before any eps added after it
    "sqrt norm under grad": ("""
def loss(x):
    return jnp.sqrt(jnp.sum(x ** 2))
x = jnp.zeros(3)
f = jax.grad(loss)
""", "+Inf", "div", "div at loss:2", "d/dx sqrt(x) = 1 / (2 sqrt(x)) at x = 0 is +inf",
        "jnp.sqrt(s + 1e-12)", "norm(x) + 1e-12"),
    "jnp.linalg.norm under grad": ("""
def loss(x):
    return jnp.linalg.norm(x)
x = jnp.zeros(3)
f = jax.grad(loss)
""", "+Inf", "div", "div in jnp.linalg.norm at loss:2", "d/dx sqrt(x)",
        "optax.safe_norm(x, 0.)", "guard the denominator"),
    "pairwise distance under vmap": ("""
def loss(x):
    d = jax.vmap(lambda a: jax.vmap(lambda b: jnp.sqrt(((a - b) ** 2).sum()))(x))(x)
    return d.sum()
x = jnp.arange(6.).reshape(3, 2)
f = jax.grad(loss)
""", "+Inf", "div", "div at <lambda>:2", "d/dx sqrt(x) = 1 / (2 sqrt(x)) at x = 0",
        "jnp.sqrt(s + 1e-12)",
        "guard the denominator"),
    # the where guards the division, not the sqrt's derivative at 0
    "a guarded denominator": ("""
def loss(v):
    d = jnp.sqrt(jnp.sum(v ** 2))
    d = jnp.where(d == 0, 1.0, d)
    return (v / d).sum()
x = jnp.zeros(3)
f = jax.grad(loss)
""", "+Inf", "div", "div at loss:2", "d/dx sqrt(x)", "jnp.sqrt(s + 1e-12)",
        "jnp.where(d == 0"),
    # logsumexp of all −inf is log(0); the user wrote no where: no double where
    "logsumexp of all -inf": ("""
def loss(x):
    return jax.nn.logsumexp(x)
x = jnp.array([-jnp.inf, -jnp.inf])
f = jax.grad(loss)
""", "−Inf", "log", "log in jax.nn.logsumexp at loss:2", "log(0) = −inf",
        "jnp.finfo(x.dtype).min", "double where"),
    # d atan2(y, x) = (x dy − y dx) / (x² + y²): 0 / 0 at the origin, no denominator of
    # the user's to guard
    # JAX 0.12.1 writes arctan2 in jnp operations (it rescales its inputs): its div is
    # then named `div in jnp.arctan2 at loss:2`
    "arctan2(a, a) at 0": ("""
def loss(a):
    return jnp.arctan2(a, a).sum()
x = jnp.array([0., 1.])
f = jax.grad(loss)
""", "NaN", "div", "at loss:2", "atan2(y, x)", "jnp.arctan2(jnp.where(ok, y, 1.)",
        "guard the denominator"),
    # 2 ** (3 ** 5) passes float32's 3.4e38 at the 5th iteration (4 counted from 0)
    "x ** 3 in a diverging fori_loop": ("""
def f(x):
    return jax.lax.fori_loop(0, 20, lambda i, v: v ** 3, x)
x = jnp.array([2.0])
""", "+Inf", "integer_pow", "iteration 4 of scan ×20", "overflow", "bound or normalise",
        "float32"),
    "log1p(-1)": ("""
def f(x):
    return jnp.log1p(x)
x = jnp.array([-1.0, 0.0])
""", "−Inf", "log1p", "log1p at f:2", "log1p(−1) = −inf", "jnp.maximum(x, -1 + 1e-6)",
        "ranges"),
    # d/dx acos(x) = −1 / sqrt(1 − x²) at cos(0) = 1, times d cos = −sin(0) = 0: NaN
    "acos at 1 under grad": ("""
def loss(x):
    return jnp.arccos(jnp.cos(x)).sum()
x = jnp.array([0.0, 0.5])
f = jax.grad(loss)
""", "+Inf", "rsqrt", "rsqrt at loss:2", "d/dx acos(x) = −1 / sqrt(1 − x²) at x = 1",
        "jnp.arccos(jnp.clip(x, -1 + 1e-6, 1 - 1e-6))", "1e-12"),
    # exp(200) overflows in the forward pass; the division has no 0 denominator
    "exp(200) in a sigmoid": ("""
def loss(x):
    return (1 / (1 + jnp.exp(-x))).sum()
x = jnp.array([-200., 0.])
f = jax.grad(loss)
""", "+Inf", "exp", "exp at loss:2 (forward pass)", "its input reaches 200",
        "jax.nn.sigmoid(x)", "float32"),
    # 300² = 90000 passes float16's 65504; float32 holds it
    "a float16 cast inside jnp.linalg.norm": ("""
def f(x):
    h = x.astype(jnp.float16)
    return jnp.linalg.norm(h)
x = jnp.array([300., 1.])
""", "+Inf", "mul", "mul in jnp.linalg.norm at f:3", "the largest f16", "float32",
        "select"),
    # JAX places a custom_vjp's backward rule at its call: say that is where it is
    "a custom_vjp's backward rule": ("""
@jax.custom_vjp
def g(x):
    return x
def g_fwd(x):
    return x, x
def g_bwd(x, ct):
    return (ct / x,)
g.defvjp(g_fwd, g_bwd)
def loss(x):
    return g(x).sum()
x = jnp.array([0., 1.])
f = jax.grad(loss)
""", "+Inf", "div", "div in the backward rule of a jax.custom_vjp called at loss:10",
        "division by 0", "guard the denominator", "double where"),
}


@pytest.mark.parametrize("case", sorted(MATH))
def test_the_cause_and_fix_are_the_primitives_mathematics_at_that_point(ip, case):
    setup, what, primitive, head, cause, fix, wrong = MATH[case]
    card = values_of(ip, setup, "f(x)").values.card
    assert (card.what, card.primitive) == (what, primitive), card
    assert head in card.lines()[0], card.lines()
    assert cause in card.cause, card.cause
    assert fix in card.fix and wrong not in card.fix, card.fix
    # the one fix a run checks: a sqrt's input changed, which the derivative reads
    checked = "checked: with jnp.sqrt(s + 1e-12) the gradient is finite on these arguments"
    verdict = checked if cause.startswith("d/dx sqrt(x)") else "unchecked"
    assert card.lines()[-1].startswith(f"fix ({verdict}): "), card.lines()


def test_the_library_function_is_this_programs_call_not_the_first_trace_of_it(ip):
    """JAX reuses `norm`'s traced body, frames and all, from the program that first
    traced it (here JAX's BFGS, drawn just before): the card still names the call the
    user's line made."""
    ip.run_cell("import jax.numpy as jnp\nfrom jax.scipy.optimize import minimize\n"
                "def bowl(w):\n    return jnp.sum(jnp.tanh(w) ** 2)")
    ip.run_line_magic("jaxpr", "-o --depth 0 minimize(bowl, jnp.ones(3), method='BFGS')")
    setup, *_, head = MATH["jnp.linalg.norm under grad"][:4]
    card = values_of(ip, setup, "f(x)").values.card
    assert head in card.lines()[0], card.lines()


def test_a_derivative_names_the_forward_primitive_not_a_division(ip):
    """An Inf of exp in the forward pass is no derivative; acos's at 1 is."""
    sigmoid = values_of(ip, MATH["exp(200) in a sigmoid"][0], "f(x)").values.card
    assert sigmoid.gradient_of == ""
    acos = values_of(ip, MATH["acos at 1 under grad"][0], "f(x)").values.card
    assert acos.gradient_of == "acos at x = 1 (loss:2)"
    assert acos.first_nan.startswith("mul at loss:2 (backward pass): 0 · inf")


def test_a_loop_says_what_was_made_at_its_iteration_and_the_nan_after(ip):
    """log(1) = 0, log(0) = −inf at iteration 1, log(−inf) = NaN at iteration 2: the
    summary pools them, the cause reads what was born."""
    card = values_of(ip, """
def f(x):
    def body(c):
        v, i = c
        return jnp.log(v), i + 1
    return jax.lax.while_loop(lambda c: c[1] < 5, body, (x, 0))[0]
x = jnp.array([1.0])
""", "f(x)").values.card
    assert (card.what, card.where, card.iteration) == ("−Inf", "body:4", "iteration 1 of "
                                                                         "while")
    assert card.cause == "log(0) = −inf"
    assert card.first_nan.startswith("log at body:4, iteration 2 of while: log of an Inf")


def test_an_inf_a_division_absorbs_is_no_select_and_keeps_its_fix(ip):
    """float16's 300² = inf; h / sqrt(mean(inf)) = h / inf = 0: finite and wrong."""
    view = values_of(ip, """
def f(x):
    h = x.astype(jnp.float16)
    return h / jnp.sqrt(jnp.mean(h ** 2))
x = jnp.array([300., 1.])
""", "f(x)")
    card = view.values.card
    text = "\n".join(card.lines())
    assert card.primitive == "integer_pow" and not card.reached and not card.dropped
    assert "select" not in text and "div at f:3 makes finite values of it (x / inf = 0)" \
        in text
    assert "compute in float32" in card.fix
    marks = view.values.overlay(view.values.full)
    assert not any("discarded" in line for _, line, _ in marks.values()), marks


INTENDED = {
    "causal mask": ("""
def f(s):
    mask = jnp.tril(jnp.ones((3, 3), bool))
    s = jnp.where(mask, s, -jnp.inf)
    return jax.nn.softmax(s, axis=-1)
x = jnp.ones((3, 3))
""", "−inf"),
    "sentinel in a min": ("""
def f(x):
    return jnp.min(jnp.where(x > 0, x, jnp.inf))
x = jnp.array([3., -1., 2.])
""", "+inf"),
}


@pytest.mark.parametrize("case", sorted(INTENDED))
def test_an_intended_infinity_is_drawn_without_red_and_never_contradicted(ip, case):
    setup, sign = INTENDED[case]
    view = values_of(ip, setup, "f(x)")
    values = view.values
    assert values.card is None
    lines = values.edge_lines(values.full)
    assert any("Inf" in text for text, _ in lines.values())
    assert not any(red for _, red in lines.values())
    assert not any(fill for fill, _, _ in values.overlay(values.full).values())
    side = values.side_html()
    assert "every value finite" not in side and "NaN or Inf" not in side
    assert f"the {sign} are written by the program" in side
    assert "hold ±Inf the program writes, no NaN" in values.headline()


@pytest.mark.parametrize("dtype, finite", [("float32", True), ("float16", False)])
def test_the_sqrt_fix_is_run_on_the_arguments_and_says_what_it_gave(ip, dtype, finite):
    """sqrt(s + 1e-12) has a finite derivative at s = 0 in float32; in float16 the 1e-12
    rounds to 0 and the gradient is still NaN: the check says so, as JAX does."""
    setup = f"""
def loss(x):
    return jnp.sqrt(jnp.sum(x.astype(jnp.{dtype}) ** 2))
def fixed(x):
    return jnp.sqrt(jnp.sum(x.astype(jnp.{dtype}) ** 2) + 1e-12)
x = jnp.zeros(3)
f = jax.grad(loss)
"""
    card = values_of(ip, setup, "f(x)").values.card
    assert card.gradient_of.startswith("sqrt at x = 0")
    by_hand = bool(np.isfinite(ip.user_ns["jax"].grad(ip.user_ns["fixed"])(
        ip.user_ns["x"])).all())
    assert by_hand == finite
    said = "is finite" if finite else "still holds NaN or Inf"
    assert f"checked: with jnp.sqrt(s + 1e-12) the gradient {said} on these arguments" \
        in card.lines()[-1]


def test_the_mathematics_cards_in_a_kernel(tmp_path):
    """A kernel, as a notebook runs them: jnp.linalg.norm's gradient at 0 names the
    library function, the derivative and the checked fix; a causal mask says its −inf
    is the program's own; no error and no path of jaxmagic's."""
    import nbformat
    from notebook_support import errors, execute, jaxmagic_outputs

    cells = ["import jax, jax.numpy as jnp\n%load_ext jaxmagic",
             MATH["jnp.linalg.norm under grad"][0] + "\n%jaxpr --values f(x)",
             INTENDED["causal mask"][0] + "\n%jaxpr --values f(x)"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbformat.write(nb, tmp_path / "math.ipynb")
    nb, _ = execute(tmp_path / "math.ipynb", tmp_path)
    assert errors(nb) == []
    said = {o.cell_index: o.html for o in jaxmagic_outputs(nb) if o.is_picture}
    assert sorted(said) == [1, 2]
    for words in ("div in jnp.linalg.norm at loss:2",
                  "d/dx sqrt(x) = 1 / (2 sqrt(x)) at x = 0 is +inf",
                  "checked: with jnp.sqrt(s + 1e-12) the gradient is finite"):
        assert words in said[1], words
    assert "the −inf are written by the program" in said[2]
    assert "every value finite" not in said[2]
    shown = json.dumps([c.get("outputs") for c in nb.cells])
    assert "jaxmagic/" not in shown and "Traceback" not in shown


def test_a_masks_infinity_beside_a_real_nan_is_drawn_without_red(ip):
    """A row masked entirely with −inf: the where's −inf and the rows' max are the
    program's own; inf − inf = NaN after them is the alarm, and all that comes of it."""
    values = values_of(ip, TRAPS["masked"][0], "f(x, m)").values
    lines = values.edge_lines(values.full)
    assert any("−Inf" in text and "NaN" not in text for text, _ in lines.values())
    assert all(red == ("NaN" in text) for text, red in lines.values()), lines
    assert "more ±Inf the program writes" in values.headline()
