"""Static rules: rewrites, spans, cross-cell memory, namespace awareness, IPython syntax."""
from __future__ import annotations

import textwrap

import jax.numpy as jnp
import numpy as np
import pytest

from jaxmagic.core.checks import RULES, Checker, Finding, cell_source, check_source


def one(src: str, rule: str | None = None, **kw) -> Finding:
    found = check_source(textwrap.dedent(src), **kw)
    if rule is not None:
        found = [f for f in found if f.rule == rule]
    assert len(found) == 1, [f.text() for f in found]
    return found[0]


@pytest.mark.parametrize("stmt, rewrite", [
    ("x[i] = y", "x = x.at[i].set(y)"),
    ("x[i] += y", "x = x.at[i].add(y)"),
    ("x[i] -= y", "x = x.at[i].subtract(y)"),
    ("x[i] *= y", "x = x.at[i].multiply(y)"),
    ("x[i] /= y", "x = x.at[i].divide(y)"),
    ("x[i] **= y", "x = x.at[i].power(y)"),
    ("x[i] //= y", "x = x.at[i].set(x[i] // y)"),
    ("x[i] = jnp.minimum(x[i], y)", "x = x.at[i].min(y)"),
    ("x[i] = jnp.maximum(y, x[i])", "x = x.at[i].max(y)"),
    ("x[i] = jnp.sin(x[i])", "x = x.at[i].apply(jnp.sin)"),
    ("x[i] = x[i] + y", "x = x.at[i].add(y)"),
    ("x[i] = x[i] * y", "x = x.at[i].multiply(y)"),
    ("x[1:3] = 0", "x = x.at[1:3].set(0)"),
    ("np.add.at(x, i, y)", "x = x.at[i].add(y)"),
    ("np.maximum.at(x, i, y)", "x = x.at[i].max(y)"),
    ("np.sqrt.at(x, i)", "x = x.at[i].apply(jnp.sqrt)"),
    ("del x[i]", "x = jnp.delete(x, i)"),
    ("del x[1:3]", "x = jnp.delete(x, jnp.s_[1:3])"),
    ("x.at[i].set(y)", "x = x.at[i].set(y)"),
])
def test_mutation_rewrites(stmt, rewrite):
    f = one(f"x = jnp.zeros(5)\ni, y = 1, 2.0\n{stmt}\n")
    assert f.line == 3 and f.rewrite == rewrite and f.severity in ("error", "warning")
    assert f.rule.startswith("JX1")
    assert rewrite in f.fix or f.rule == "JX105"


def test_all_nine_at_forms_are_taught():
    fixes = " ".join(one(f"x = jnp.zeros(5)\n{s}\n").fix for s in (
        "x[0] = 1", "x[0] += 1", "x[0] *= 2", "x[0] /= 2", "x[0] **= 2",
        "x[0] = jnp.minimum(x[0], 1)", "x[0] = jnp.maximum(x[0], 1)",
        "x[0] = jnp.exp(x[0])", "y = x[9]"))
    for form in ("set", "add", "multiply", "divide", "power", "min", "max", "apply", "get"):
        assert f".at[0].{form}(" in fixes or f".at[9].{form}(" in fixes, form


def test_span_is_one_based_and_inclusive():
    f = one("x = jnp.arange(3)\ny = 1 + x[7]\n")
    assert (f.line, f.col, f.end_col) == (2, 9, 12)
    assert f.source[f.col - 1:f.end_col] == "x[7]"
    assert "^^^^" in f.text()


def test_columns_count_characters_not_bytes():
    f = one("x = jnp.arange(3)\ns = 'é'; y = x[7]\n")
    assert f.source[f.col - 1:f.end_col] == "x[7]"


def test_unknown_values_stay_silent():
    assert check_source("def f(a):\n    a[0] = 1\n    del a[1]\n    return a\n") == []
    assert check_source("import torch\nt = torch.zeros(3)\nt[0] = 1\n") == []


def test_namespace_arrays_from_earlier_cells():
    ns = {"x": jnp.arange(3), "a": np.arange(3), "jnp": jnp, "np": np}
    found = check_source("x[0] = 1\na[0] = 1\nv = x[3]\n", namespace=ns)
    assert [(f.rule, f.line) for f in found] == [("JX101", 1), ("JX401", 3)]


def test_checker_remembers_earlier_cells():
    c = Checker()
    assert c.check("import jax\nimport jax.numpy as jnp\nx = jnp.ones(4)") == []
    assert [f.rule for f in c.check("x[0] = 2.0")] == ["JX101"]
    c.check("@jax.jit\ndef f(x, mode):\n    return x")
    f = c.check("f(1.0, 'relu')")
    assert [g.rule for g in f] == ["JX601"]


def test_checker_transform_in_a_later_cell_reports_the_defining_cell():
    c = Checker()
    c.check("import jax\ndef neg(x):\n    return x[x < 0]", cell="In [1]")
    found = c.check("jax.jit(neg)(jnp.arange(3.0))", cell="In [2]")
    assert [(f.rule, f.line, f.where) for f in found] == [("JX201", 3, "In [1], line 3")]


def test_checker_stale_capture_across_cells():
    c = Checker()
    c.check("import jax\nscale = 2.0\n@jax.jit\ndef f(x):\n    return x * scale\nf(1.0)",
            cell="In [1]")
    found = c.check("scale = 3.0", cell="In [2]")
    assert [(f.rule, f.line) for f in found] == [("JX304", 1)]
    assert "In [1], line 5" in found[0].message


def test_commit_false_does_not_remember():
    c = Checker()
    c.check("x = jnp.ones(3)", commit=False)
    assert c.check("x[0] = 1") == []


def test_ipython_syntax_is_masked_line_for_line():
    src, offset = cell_source("%timeit f(x)\nx = jnp.ones(3)\n!ls\nfiles = !ls\nx[0] = 1")
    assert offset == 0 and len(src.splitlines()) == 5
    found = Checker().check("%timeit f(x)\nx = jnp.ones(3)\n!ls\nx[0] = 1")
    assert [(f.rule, f.line, f.source) for f in found] == [("JX101", 4, "x[0] = 1")]


def test_cell_magics_python_bodies_checked_others_skipped():
    assert cell_source("%%bash\nx[0] = 1") is None
    found = Checker().check("%%time\nx = jnp.ones(3)\nx[0] = 1")
    assert [(f.rule, f.line) for f in found] == [("JX101", 2)]   # body lines, as IPython


def test_syntax_errors_give_no_findings():
    assert check_source("def f(:\n  pass") == []


def test_x64_follows_the_config_in_order():
    src = "x = jnp.zeros(3, dtype=jnp.float64)\n"
    assert [f.rule for f in check_source(src)] == ["JX502"]
    assert check_source(src, x64=True) == []
    on = 'import jax\njax.config.update("jax_enable_x64", True)\n' + src
    assert check_source(on) == []
    before = src + 'jax.config.update("jax_enable_x64", True)\n'
    assert [f.rule for f in check_source(before)] == ["JX502"]


def test_jit_args_rewrite_the_decorator():
    f = one("""\
        from functools import partial
        import jax
        @partial(jax.jit, static_argnums=0)
        def f(n, x, mode):
            return x * n
        f(2, 1.0, "relu")
        """)
    assert f.rule == "JX601" and f.line == 6 and f.fix_line == 3
    assert f.rewrite == "@partial(jax.jit, static_argnums=0, static_argnames=('mode',))"


def test_jit_wrapper_assignment_rewrite():
    f = one("import jax\ndef g(x, how):\n    return x\ng2 = jax.jit(g)\ng2(1.0, 'a')\n")
    assert f.rule == "JX601" and f.fix_line == 4
    assert f.rewrite == "g2 = jax.jit(g, static_argnames=('how',))"


def test_method_self_rewrite():
    f = one("import jax\nclass M:\n    @jax.jit\n    def f(self, x):\n        return x\n")
    assert (f.rule, f.line) == ("JX603", 3)
    assert f.rewrite == "@partial(jax.jit, static_argnums=0)"


def test_bool_flag_suggests_static_not_for_arrays():
    flag = one("import jax\n@jax.jit\ndef f(x, neg):\n    return -x if neg else x\n")
    assert "static_argnames=('neg',)" in flag.fix
    data = one("import jax\n@jax.jit\ndef f(x):\n    return x[0] if x.sum() > 0 else x[1]\n")
    assert "static" not in data.fix and data.rewrite.startswith("return jnp.where(")


def test_debug_print_rewrite_keeps_format():
    f = one("import jax\n@jax.jit\ndef f(x):\n    print(f'x = {x:.3f}', x.shape)\n"
            "    return x\n")
    assert f.rewrite == "jax.debug.print('x = {:.3f} {}', x, x.shape)"


def test_print_of_a_constant_is_info():
    f = one("import jax\n@jax.jit\ndef f(x):\n    print('compiling')\n    return x\n")
    assert f.severity == "info"


@pytest.mark.parametrize("what", ["x.shape", "'shape', x.shape, x.dtype",
                                  "jax.typeof(x).sharding", "f'{x.ndim} dims'"])
def test_print_of_static_information_is_silent(what):
    src = f"import jax\n@jax.jit\ndef f(x):\n    print({what})\n    return x\n"
    assert check_source(src) == []


def test_shape_from_jnp_rewrites_to_numpy():
    f = one("import jax\n@jax.jit\ndef f(x):\n    n = jnp.prod(jnp.array(x.shape))\n"
            "    return x.reshape(n)\n")
    assert (f.rule, f.line, f.fix_line) == ("JX204", 5, 4)
    assert f.rewrite == "n = np.prod(np.array(x.shape))"


def test_value_dependent_size_rewrite():
    f = one("import jax\n@jax.jit\ndef f(x):\n    return jnp.unique(x)\n")
    assert f.rewrite == "return jnp.unique(x, size=x.size)"


def test_helper_called_from_jit_is_traced_with_its_args():
    found = check_source(textwrap.dedent("""\
        import jax
        def helper(a, n):
            if a > 0:
                return a
            return jnp.zeros(n)
        @jax.jit
        def f(x):
            return helper(x, 3)
        """))
    assert [(f.rule, f.line) for f in found] == [("JX202", 3)]


def test_aliases_are_resolved():
    src = "import jax.numpy as np2\nfrom jax import jit as J\nx = np2.arange(3)\nx[0] = 1\n" \
          "@J\ndef f(v):\n    print(v)\n    return v\n"
    assert [f.rule for f in check_source(src)] == ["JX101", "JX301"]


def test_every_rule_has_metadata():
    for r in RULES.values():
        assert r.id.startswith("JX") and r.severity in ("error", "warning", "info")
        assert r.family and r.title and r.docs.startswith("https://")


def test_findings_serialise():
    d = one("x = jnp.ones(2)\nx[0] = 3\n").to_dict()
    assert {"rule", "severity", "line", "message", "fix", "col", "end_col", "rewrite",
            "family"} <= set(d)
