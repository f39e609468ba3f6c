"""Runtime: JAX exceptions mapped to a rule and the user's failing line; checkify."""
from __future__ import annotations

import linecache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import checkify

from jaxmagic.core.checks import checkified, checkify_function, explain


def raised(src: str, name: str = "<cell-rt>", ns: dict | None = None) -> BaseException:
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    g = {"jax": jax, "jnp": jnp, "np": np, "__name__": "__main__", **(ns or {})}
    with pytest.raises(Exception) as info:
        exec(compile(src, name, "exec"), g)  # noqa: S102
    return info.value


def test_failing_line_not_def_line():
    exc = raised("@jax.jit\ndef f(x):\n    y = x * 2\n    if y > 0:\n        return y\n"
                 "    return -y\nf(1.0)\n")
    f = explain(exc)
    assert (f.rule, f.line, f.source.strip()) == ("JX202", 4, "if y > 0:")
    assert f.origin == "runtime" and f.error == "TracerBoolConversionError"
    assert f.rewrite == "return jnp.where(y > 0, y, -y)" or "lax.cond" in f.fix


def test_function_in_another_cell_is_labelled():
    src_a = "@jax.jit\ndef g(x):\n    return x[x > 0]\n"
    linecache.cache["<cell-a>"] = (len(src_a), None, src_a.splitlines(True), "<cell-a>")
    ns = {"jax": jax, "jnp": jnp}
    exec(compile(src_a, "<cell-a>", "exec"), ns)  # noqa: S102
    exc = raised("g(jnp.arange(3.0))\n", name="<cell-b>", ns={"g": ns["g"]})
    f = explain(exc, label=lambda fn: {"<cell-a>": "In [1]", "<cell-b>": "this cell"}.get(fn))
    assert (f.rule, f.line, f.where) == ("JX201", 3, "In [1], line 3")


def test_not_a_jax_error_gives_none():
    assert explain(raised("1 / 0\n")) is None
    assert explain(raised("x = [1]\nx[5]\n")) is None
    assert explain(raised("a = np.arange(3)\ndel a[0]\n")) is None   # NumPy's own error


def test_other_jax_errors_are_not_guessed():
    assert explain(raised("jnp.ones(3) + 'a'\n")) is None


def test_leaked_tracer_names_the_storing_line():
    f = explain(raised("store = []\n@jax.jit\ndef f(x):\n    y = x * 2\n    store.append(y)\n"
                       "    return x\nf(1.0)\nz = store[0] + 1\n"))
    assert (f.rule, f.line) == ("JX305", 8)
    assert "line 5" in f.message and "store.append(y)" in f.message


def test_string_argument_names_the_parameter():
    f = explain(raised("@jax.jit\ndef f(x, act):\n    return x\nf(1.0, 'relu')\n"))
    assert (f.rule, f.line) == ("JX601", 4)
    assert "static_argnames=('act',)" in f.fix


def test_checkified_raises_with_the_indexing_line():
    def f(x):
        return x[5]

    with pytest.raises(checkify.JaxRuntimeError) as info:
        checkified(f)(jnp.arange(3))
    found = explain(info.value)
    assert found.rule == "JX401" and found.source.strip() == "return x[5]"
    assert "index 5" in found.message and "size 3" in found.message


def test_checkified_passes_through_good_calls_and_jits():
    f = checkified(lambda x, i: x[i] * 2, jit=True)
    assert int(f(jnp.arange(3), 1)) == 2
    with pytest.raises(checkify.JaxRuntimeError):
        f(jnp.arange(3), 3)


def test_checkify_function_is_traceable():
    jaxpr = jax.make_jaxpr(checkify_function(lambda x: x[5]))(jnp.arange(3))
    assert "dynamic_slice" in str(jaxpr) or "gather" in str(jaxpr)
    err, out = jax.jit(checkify_function(lambda x: x[1]))(jnp.arange(3))
    assert err.get() is None and int(out) == 1


def test_explain_never_raises_on_odd_exceptions():
    class Weird(Exception):
        def __str__(self):
            raise RuntimeError("no str")
    try:
        raise Weird()
    except Weird as e:
        import jaxmagic
        assert jaxmagic.explain(e) is None


def test_runtime_uses_the_frames_values_for_the_fix():
    f = explain(raised("def fill(buf, value):\n    buf[0] = value\n    return buf\n"
                       "fill(jnp.zeros(3), 1.0)\n"))
    assert (f.rule, f.line) == ("JX101", 2)
    assert f.rewrite == "buf = buf.at[0].set(value)"
    assert f.source[f.col - 1:f.end_col] == "buf[0] = value"
