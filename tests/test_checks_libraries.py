"""The checker knows what a name is: real Optax, Flax NNX and jax.new_ref objects in a
real InteractiveShell's namespace, the lost NNX Variable update under jax.jit measured
on this flax/JAX, and names resolved per function scope."""
from __future__ import annotations

import re
import warnings

import jax
import jax.numpy as jnp
import pytest
from conftest import run

from jaxmagic.core.checks import check_source

nnx = pytest.importorskip("flax.nnx")
optax = pytest.importorskip("optax")


def cards(cap):
    return [o.data["text/plain"] for o in cap.outputs if "text/html" in o.data]


@pytest.fixture
def shell(ip):
    ip.run_line_magic("jaxcheck", "on")
    ip.run_cell("import jax, jax.numpy as jnp, optax\nfrom flax import nnx")
    yield ip


def test_plain_variable_update_under_jax_jit_is_really_lost():
    """The runtime behaviour JX307 describes: no error, and the Variable is unchanged."""
    v = nnx.Variable(jnp.array(0))

    @jax.jit
    def inc(v):
        v[...] += 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc(v)
    assert int(v[...]) == 0

    @nnx.jit
    def inc_nnx(v):
        v[...] += 1

    inc_nnx(v)
    assert int(v[...]) == 1        # the fix the card gives does update it


def test_jx307_card_for_a_variable_from_the_namespace(shell):
    run(shell, "count = nnx.Variable(jnp.array(0))")
    r, cap = run(shell, "@jax.jit\ndef step(count):\n    count[...] += 1\nstep(count)")
    (card,) = cards(cap)
    assert "JX307" in card and "line 3" in card and "update is lost" in card
    assert "nnx.jit" in card
    assert int(shell.user_ns["count"][...]) == 0       # and it was lost


def test_jx307_for_a_module_attribute(shell):
    run(shell, "class Counter(nnx.Module):\n    def __init__(self):\n"
               "        self.n = nnx.Variable(jnp.array(0))\nc = Counter()")
    r, cap = run(shell, "@jax.jit\ndef tick(c):\n    c.n.value = c.n.value + 1\ntick(c)")
    assert any("JX307" in c and "nnx.split" in c for c in cards(cap))


def test_refs_and_hijax_variables_are_written_in_place_silently(shell):
    run(shell, "r = jax.new_ref(jnp.zeros(3))\nh = nnx.Variable(jnp.array(0), hijax=True)")
    r, cap = run(shell, "@jax.jit\ndef fill(r):\n    r[...] = jnp.ones(3)\nfill(r)")
    assert r.success and cards(cap) == []
    assert float(shell.user_ns["r"][...].sum()) == 3.0
    _, cap = run(shell, "@jax.jit\ndef bump(h):\n    h[...] += 1")
    assert cards(cap) == []


def test_optax_update_is_pure(shell):
    run(shell, "opt = optax.adam(1e-3)\nparams = {'w': jnp.ones(3)}\n"
               "opt_state = opt.init(params)")
    assert isinstance(shell.user_ns["opt"], optax.GradientTransformation)
    r, cap = run(shell, "@jax.jit\ndef step(params, opt_state):\n"
                        "    grads = jax.tree.map(jnp.ones_like, params)\n"
                        "    updates, opt_state = opt.update(grads, opt_state, params)\n"
                        "    return optax.apply_updates(params, updates), opt_state\n"
                        "params, opt_state = step(params, opt_state)")
    assert r.success and cards(cap) == []


def test_a_dict_from_a_helper_is_a_dict(shell):
    r, cap = run(shell, "def compute_metrics(p, y):\n    return {'loss': jnp.mean(p - y)}\n"
                        "@jax.jit\ndef train_step(p, y):\n"
                        "    metrics = compute_metrics(p, y)\n"
                        "    metrics['lr'] = 0.1\n    return metrics\n"
                        "m = train_step(jnp.ones(2), jnp.zeros(2))")
    assert r.success and cards(cap) == [] and float(shell.user_ns["m"]["lr"]) == pytest.approx(0.1)


def test_a_dict_in_the_namespace_is_a_dict(shell):
    run(shell, "stats = {'n': 0}")
    r, cap = run(shell, "stats['n'] = 1")
    assert r.success and cards(cap) == []


def test_names_are_resolved_per_scope():
    src = ("import jax, jax.numpy as jnp\n"
           "def test_a():\n"
           "    def reference_impl(x):\n        return x * 2\n"
           "    return jax.vmap(reference_impl)(jnp.ones(3))\n"
           "def test_b():\n"
           "    def reference_impl(s):\n"
           "        if s <= -1.0:\n            return 0.0\n        return s\n"
           "    return reference_impl(10.0)\n"
           "apply = lambda f, x: jax.jit(f)(x)\n"
           "def f(n):\n    return list(range(n))\n")
    assert check_source(src) == []


def test_vmap_in_axes_none_is_not_traced():
    src = ("import jax, jax.numpy as jnp\n"
           "def f(x, n):\n    return x * jnp.ones(n)\n"
           "jax.vmap(f, in_axes=(0, None))(jnp.ones((2, 3)), 3)\n")
    assert check_source(src) == []


def test_x64_on_earlier_in_the_same_function():
    src = ("import jax, jax.numpy as jnp\n"
           "def test_f64():\n"
           "    jax.config.update('jax_enable_x64', True)\n"
           "    x = jnp.array([1.0], dtype=jnp.float64)\n"
           "def test_other():\n"
           "    return jnp.zeros(2, dtype=jnp.float64)\n")
    assert [(f.rule, f.line) for f in check_source(src)] == [("JX502", 6)]


def test_shard_map_outside_jit_prints_values():
    src = ("import jax\nfrom jax.sharding import PartitionSpec as P\n"
           "@jax.shard_map(out_specs=P('x'))\ndef f(x):\n    print(x)\n    return x\n")
    assert check_source(src) == []
    jitted = src + "g = jax.jit(jax.shard_map(f, out_specs=P('x')))\n"
    assert [f.rule for f in check_source(jitted)] == ["JX301"]


def test_the_broken_method_is_flagged_and_the_pytree_one_is_not():
    broken = ("import jax.numpy as jnp\nfrom jax import jit\n\nclass C:\n"
              "  def __init__(self, x, mul):\n    self.x = x\n    self.mul = mul\n\n"
              "  @jit  # <---- How to do this correctly?\n"
              "  def calc(self, y):\n    return self.x * y if self.mul else y\n")
    assert [(f.rule, f.line) for f in check_source(broken)] == [("JX603", 9)]
    from jaxmagic.core.checks import Checker
    assert [f.rule for f in Checker().check(broken)] == ["JX603"]    # `?` in a comment
    fixed = broken + ("\nfrom jax import tree_util\n"
                      "tree_util.register_pytree_node(C, lambda c: ((c.x,), c.mul),\n"
                      "                               lambda mul, ch: C(*ch, mul))\n")
    assert check_source(fixed) == []


def test_a_finding_is_not_repeated_nor_shown_with_another_cells_line():
    from jaxmagic.core.checks import Checker
    ch = Checker()
    first = ch.check("import jax\ndef nansum(x):\n    mask = x > 0\n    return x[mask].sum()",
                     cell="cell 1")
    assert first == []
    later = ch.check("import jax.numpy as jnp\n\n\nf = jax.jit(nansum)", cell="cell 2")
    (f,) = later
    assert (f.rule, f.filename, f.line) == ("JX201", "cell 1", 4)
    assert f.source == "" or "x[mask]" in f.source
    assert ch.check("g = jax.jit(nansum)", cell="cell 3") == []


def test_no_syntax_warning_leaks(recwarn):
    assert check_source('import re\npat = re.compile("\\d+")\n') == []
    assert not [w for w in recwarn if issubclass(w.category, SyntaxWarning)]


def test_cli_on_an_empty_folder_is_quiet_and_imports_no_jax(tmp_path):
    import os
    import subprocess
    import sys
    code = ("import sys, runpy\nsys.argv = ['jaxmagic', 'check', %r]\n"
            "try:\n    runpy.run_module('jaxmagic', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "print('jax' in sys.modules)\n") % str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert out.stdout.strip() == "False" and out.stderr == ""
    bad = tmp_path / "escape.py"
    bad.write_text('import re\nX = re.compile("\\d")\n')
    out = subprocess.run([sys.executable, "-m", "jaxmagic", "check", str(tmp_path)],
                         capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert out.returncode == 0 and out.stderr == "" and not re.search("Warning", out.stdout)
