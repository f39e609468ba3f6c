"""%jaxpr and %%jaxpr through a real InteractiveShell."""
import base64
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import run
from IPython.core.error import UsageError


def html_of(cap):
    return next(o.data["text/html"] for o in cap.outputs if "text/html" in o.data)


def svg_in(html):
    b64 = html.split("data:image/svg+xml;base64,")[1].split('"')[0]
    return base64.b64decode(b64).decode()


SETUP = """
import jax, jax.numpy as jnp
def loss(params, x):
    h = jnp.tanh(x @ params['w1'])
    return jnp.sum(h @ params['w2'])
params = {'w1': jnp.ones((4, 8)), 'w2': jnp.ones((8, 2))}
x = jnp.ones((3, 4))
"""


def test_line_form_draws_graph_as_img_and_png(ip):
    ip.run_cell(SETUP)
    r, cap = run(ip, "%jaxpr loss(params, x)")
    assert r.success
    (out,) = [o for o in cap.outputs if "text/html" in o.data]
    assert set(out.data) >= {"text/plain", "text/html", "image/png"}
    assert out.data["image/png"][:4] in (b"\x89PNG", "iVBO")
    svg = svg_in(out.data["text/html"])
    assert "dot_general" in svg and "w1 f32[4,8]" in svg
    assert "<svg" not in out.data["text/html"].split("data:")[0]   # no inline svg beside


def test_outermost_call_is_traced_grad(ip):
    ip.run_cell(SETUP)
    view = ip.run_line_magic("jaxpr", "-o jax.grad(loss)(params, x)")
    inputs = [n.title for n in view.full.nodes.values() if n.kind == "input"]
    assert inputs == ["params['w1']", "params['w2']", "x"]
    outputs = [n.title for n in view.full.nodes.values() if n.kind == "output"]
    assert outputs == ["out['w1']", "out['w2']"]
    assert any(n.backward for n in view.full.nodes.values())


def test_cell_form_runs_statements_once_and_traces_final_call(ip):
    ip.user_ns["runs"] = 0
    r, cap = run(ip, textwrap.dedent("""\
        %%jaxpr --format text
        runs += 1
        def g(v):
            global runs
            runs += 100
            return jnp.sin(v) * 2
        y0 = jnp.ones(5)
        g(y0)
        """))
    assert r.success, r.error_in_exec
    assert ip.user_ns["runs"] == 101          # prefix once, the traced body once
    assert "g" in ip.user_ns and "y0" in ip.user_ns
    text = cap.outputs[0].data["text/plain"]
    assert "sin" in text and "mul · 2" in text and "y0" in text


@pytest.mark.parametrize("cell,message", [
    ("x = 1\n", "ends with assign statement, not a call"),
    ("1 + 2\n", "ends with an arithmetic expression"),
    ("\n", "empty"),
])
def test_cell_without_final_call_gives_usage(ip, cell, message):
    ip.user_ns["runs"] = 0
    with pytest.raises(UsageError) as e:
        ip.run_cell_magic("jaxpr", "", "runs += 1\n" + cell if cell.strip() else cell)
    assert message in str(e.value) and "usage: %%jaxpr" in str(e.value)
    assert ip.user_ns["runs"] == 0            # nothing ran


@pytest.mark.parametrize("line,message", [
    ("", "nothing to trace"),
    ("loss", "expected a call"),
    ("loss(", "not a Python expression"),
    ("--bogus loss(params, x)", "unknown option"),
])
def test_line_without_call_gives_usage(ip, line, message):
    ip.run_cell(SETUP)
    with pytest.raises(UsageError) as e:
        ip.run_line_magic("jaxpr", line)
    assert message in str(e.value)


def test_usage_errors_show_one_line_not_a_traceback(ip):
    r, cap = run(ip, "%jaxpr 42")
    assert not r.success
    assert "Traceback" not in cap.stdout + cap.stderr
    assert "UsageError" in cap.stderr and "expected a call" in cap.stderr


def test_syntax_error_in_cell_is_the_users(ip):
    r, cap = run(ip, "%%jaxpr\nx = (\nf(x)\n")
    assert isinstance(r.error_in_exec, SyntaxError)


def test_trace_error_points_at_failing_line_not_def(ip):
    r, cap = run(ip, textwrap.dedent("""\
        %%jaxpr
        def relu_or_zero(v):
            w = v * 2
            if w.sum() > 0:
                return w
            return 0 * w
        relu_or_zero(jnp.ones(3))
        """))
    import jax

    assert isinstance(r.error_in_exec, jax.errors.ConcretizationTypeError)
    card = next(o for o in cap.outputs if "text/html" in o.data)
    text = card.data["text/plain"]
    assert "if w.sum() > 0:" in text and "line 3" in text
    shown = cap.stdout + cap.stderr                     # JAX's own traceback is kept
    assert type(r.error_in_exec).__name__ in shown and "relu_or_zero" in shown
    assert "jaxmagic" not in shown.split("Traceback")[-1].split("skipping")[0]


def test_options_format_dot_rankdir_save_stage(ip, tmp_path):
    ip.run_cell(SETUP)
    r, cap = run(ip, "%jaxpr --format dot --rankdir LR loss(params, x)")
    assert "digraph" in cap.outputs[0].data["text/plain"]
    assert "rankdir=LR" in cap.outputs[0].data["text/plain"]
    for suffix in (".svg", ".dot", ".txt"):
        path = tmp_path / f"g{suffix}"
        run(ip, f"%jaxpr --save {path} loss(params, x)")
        assert path.stat().st_size > 100
    lowered = ip.run_line_magic("jaxpr", "-o --stage lowered loss(params, x)")
    assert "stablehlo.dot_general" in lowered.text()
    compiled = ip.run_line_magic("jaxpr", "-o --stage compiled loss(params, x)")
    assert "flops" in compiled.text() and "argument bytes" in compiled.text()
    import jaxmagic  # the frame tables name the user's frames, not ours
    own = os.path.dirname(jaxmagic.__file__)
    for program in (lowered.text(), compiled.text()):
        assert own not in program and "users_frames" not in program
    assert "loss" in compiled.text().split("source locations named by")[-1]


def test_static_arguments(ip):
    ip.run_cell("def powr(v, n, *, mode='sum'):\n"
                "    r = v ** n\n"
                "    return r.sum() if mode == 'sum' else r.max()")
    v = ip.run_line_magic("jaxpr", "-o --static-argnums 1 --static-argnames mode "
                                   "powr(jnp.ones(3), 3, mode='max')")
    prims = [n.primitive for n in v.full.nodes.values() if n.kind == "op"]
    assert "integer_pow" in prims and "reduce_max" in prims
    assert [n.title for n in v.full.nodes.values() if n.kind == "input"] == ["jnp.ones(3)"]


def test_an_int_a_library_needs_as_a_shape_is_named_static(ip):
    """`jax.random.split(key, n)` raises JAX's unhashable-parameter TypeError, which names
    no argument: the one Python int traced is the only one it can be, and is named; with
    two, which one cannot be told, and the error is JAX's own."""
    ip.run_cell("def loop(key, n):\n    keys = jax.random.split(key, n)\n"
                "    return jax.lax.scan(lambda c, k: (c + jax.random.normal(k), c), 0.,"
                " keys)[1]\n"
                "def loop2(key, n, m):\n    return jax.random.split(key, n)[:m]")
    with pytest.raises(UsageError) as e:
        ip.run_line_magic("jaxpr", "loop(jax.random.key(0), 100)")
    assert "argument n=100 (an int) is used as a Python value" in str(e.value)
    assert "%jaxpr --static-argnums 1 loop(jax.random.key(0), 100)" in str(e.value)
    view = ip.run_line_magic("jaxpr", "-o --static-argnums 1 loop(jax.random.key(0), 100)")
    assert "scan" in {n.primitive for n in view.full.nodes.values() if n.kind == "op"} | \
        {c.kind for c in view.full.clusters.values()}
    with pytest.raises(Exception) as two:
        ip.run_line_magic("jaxpr", "loop2(jax.random.key(0), 4, 2)")
    assert "argument n" not in str(two.value) and "argument m" not in str(two.value)


def test_depth_and_expand(ip):
    ip.run_cell("@jax.jit\ndef inner(v):\n    return jnp.sin(v) + 1\n"
                "def outer(v):\n    return inner(v) * inner(v + 1)")
    collapsed = ip.run_line_magic("jaxpr", "-o --depth 0 outer(jnp.ones(2))")
    assert [n.title for n in collapsed.graph.nodes.values() if n.kind == "call"] == [
        "jit: inner", "jit: inner"]     # not consecutive (an add between): not folded
    for opt in ("", "--depth auto", "--depth all", "--depth 1", "--expand inner"):
        g = ip.run_line_magic("jaxpr", f"-o {opt} outer(jnp.ones(2))").graph
        assert not [n for n in g.nodes.values() if n.kind == "call"]
    with pytest.raises(UsageError):
        ip.run_line_magic("jaxpr", "--depth deep outer(jnp.ones(2))")


def test_node_budget_gives_coarser_view_with_note(ip):
    # a loop whose every iteration differs (its array shrinks): nothing folds
    ip.run_cell("def deep(v):\n    for _ in range(30):\n        v = jnp.tanh(v[1:]) * 2\n"
                "    return v")
    ip.run_line_magic("config", "JaxMagic.max_nodes = 20")
    try:
        v = ip.run_line_magic("jaxpr", "-o deep(jnp.ones(40))")
    finally:
        ip.run_line_magic("config", "JaxMagic.max_nodes = 400")
    # the ladder: the requested (automatic) depth, then grouped by function, then phase
    assert v.graph.grouping == "function"
    assert any("exceed max_nodes=20" in n for n in v.notes)
    assert "grouped by function" in v.text()


def test_renderer_wasm_and_none(ip):
    ip.run_cell(SETUP)
    ip.run_line_magic("config", "JaxMagic.renderer = 'wasm'")
    try:
        r, cap = run(ip, "%jaxpr loss(params, x)")
        out = next(o for o in cap.outputs if "text/html" in o.data)
        assert "image/png" not in out.data and "tanh" in svg_in(out.data["text/html"])
        ip.run_line_magic("config", "JaxMagic.renderer = 'none'")
        r, cap = run(ip, "%jaxpr loss(params, x)")
        html = next(o for o in cap.outputs if "text/html" in o.data).data["text/html"]
        assert "no graph renderer" in html and "digraph" in html and "<img" not in html
    finally:
        ip.run_line_magic("config", "JaxMagic.renderer = 'auto'")


def test_no_system_dot_falls_back_to_wasm_in_a_real_process(tmp_path):
    """PATH without `dot`: the in-process WebAssembly Graphviz draws the graph."""
    script = textwrap.dedent("""\
        import shutil, jax.numpy as jnp, jaxmagic
        assert shutil.which("dot") is None
        v = jaxmagic.trace(lambda x: jnp.sin(x) * 2, jnp.ones(3))
        b = v._repr_mimebundle_()
        assert "image/png" not in b and "data:image/svg+xml" in b["text/html"]
        print("renderer", v._drawn.renderer)
        """)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "renderer wasm" in out.stdout


def test_help_lists_options(ip):
    r, cap = run(ip, "%jaxpr?")
    assert "--depth" in cap.stdout and "--stage" in cap.stdout and "final" in cap.stdout


def test_unload_removes_magics_and_reload_restores(ip):
    ip.run_line_magic("unload_ext", "jaxmagic")
    assert "jaxpr" not in ip.magics_manager.magics["line"]
    assert "JaxMagic" not in ip.magics_manager.registry
    ip.run_line_magic("load_ext", "jaxmagic")
    assert "jaxpr" in ip.magics_manager.magics["cell"]
    ip.run_line_magic("load_ext", "jaxmagic")
    assert sum(type(m).__name__ == "JaxMagic" for m in ip.magics_manager.registry.values()) == 1


def test_user_strings_escaped_in_html(ip):
    ip.run_cell("def evil(v):\n"
                "    with jax.named_scope('<script>alert(1)</script>'):\n"
                "        return jnp.sin(v)\n")
    r, cap = run(ip, "%jaxpr --depth all evil(jnp.ones(2))")
    html = next(o for o in cap.outputs if "text/html" in o.data).data["text/html"]
    assert "<script" not in html and "<script" not in svg_in(html)
    assert "&lt;script&gt;" in svg_in(html)


def test_layout_time_budget_never_hangs(ip):
    """A budget no layout can meet: every level is tried, then text, with notes."""
    ip.run_cell(SETUP)
    ip.run_line_magic("config", "JaxMagic.layout_timeout = 0.001")
    try:
        r, cap = run(ip, "%jaxpr loss(params, x)")
    finally:
        ip.run_line_magic("config", "JaxMagic.layout_timeout = 10.0")
    assert r.success
    out = next(o for o in cap.outputs if "text/html" in o.data)
    assert "layout took longer than 0.001 s" in out.data["text/html"]
    assert "dot_general" in out.data["text/plain"]


def test_the_collector_rests_while_a_call_is_traced_and_drawn_and_not_after(ip):
    """A collection of the oldest generation walks JAX's whole heap: paused while the
    magic works (a fifth of a ResNet50 step's time), as `%timeit` pauses it; on again
    after, and left off where the user turned it off."""
    import gc
    import traceback

    ip.run_cell('''
import gc
seen = []
def deep(params, x):
    seen.append(gc.isenabled())          # runs while %jaxpr traces it
    for _ in range(12):
        x = jnp.tanh(x @ params['w1'] @ params['w1'].T)
    return jnp.sum(x)
params = {'w1': jnp.ones((4, 8))}
x = jnp.ones((3, 4))
''')
    drawing = []

    def counted(phase, info):
        if phase == "start" and any(f.name == "_draw" for f in traceback.extract_stack()):
            drawing.append(info)

    assert gc.isenabled()
    r, _ = run(ip, "view = %jaxpr -o jax.grad(deep)(params, x)")
    assert r.success, r.error_in_exec
    gc.callbacks.append(counted)
    try:
        ip.user_ns["view"].svg()
    finally:
        gc.callbacks.remove(counted)
    assert ip.user_ns["seen"] == [False] and drawing == []
    assert gc.isenabled()

    gc.disable()
    try:
        r, _ = run(ip, "%jaxpr -o deep(params, x)")
        assert r.success and not gc.isenabled()
    finally:
        gc.enable()
