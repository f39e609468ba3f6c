"""%jit_compare compares eager and jit on the same call: a Python number the function
returns, a static argument, a NumPy input are never a false "DIFFER". Each case is
checked independently: `f(*args)` against `jax.jit(f, static_...)(*args)`."""
import os
from pathlib import Path

import jax
import numpy as np
import pytest
from conftest import run

ROOT = Path(__file__).parents[1]

DEFINITIONS = '''
import jax, jax.numpy as jnp, numpy as np

def f(x, neg):
    return -x if neg else x

def scaled(x, n):
    return x * n, n

def keyword(x, *, n=2):
    return x * n, n

def mixed(p, flag):
    return {"y": p["a"] * p["b"], "b": p["b"], "flag": flag, "s": p["a"].sum() + 1}

def twice(n):
    return n * 2

x = jnp.arange(3.0)
jscaled = jax.jit(scaled, static_argnums=1)
jf = jax.jit(f, static_argnames="neg")
'''

# (the call's function, its arguments, jax.jit's static options)
CASES = [
    ("scaled", "x, 2", {}),
    ("scaled", "x, 2.5", {}),
    ("scaled", "x, True", {}),
    ("scaled", "x, 2", {"static_argnums": 1}),
    ("keyword", "x, n=3", {}),
    ("keyword", "x, n=3", {"static_argnames": "n"}),
    ("mixed", "{'a': x, 'b': 1.5}, True", {}),
    ("mixed", "{'a': x, 'b': 1.5}, True", {"static_argnums": 1}),
    ("f", "np.arange(3.0), 1", {"static_argnums": 1}),
    ("f", "x, neg=1", {"static_argnames": "neg"}),
]
# (a jitted target, its Python function, its arguments, its static options)
JITTED = [
    ("jscaled", "scaled", "x, 2", {"static_argnums": 1}),
    ("jf", "f", "np.arange(3.0), neg=True", {"static_argnames": "neg"}),
]


@pytest.fixture
def sh(ip):
    res, _ = run(ip, DEFINITIONS)
    assert res.success
    return ip


def _flags(opts: dict) -> str:
    return " ".join(f"--{k.replace('_', '-')} {v}" for k, v in opts.items())


def _eager_and_jit(sh, fun: str, args: str, opts: dict):
    """`fun(*args)` and `jax.jit(fun, **opts)(*args)`, computed here, not by jaxmagic."""
    ns = dict(sh.user_ns)
    a, k = eval(f"(lambda *a, **k: (a, k))({args})", ns)
    return ns[fun](*a, **k), jax.jit(ns[fun], **opts)(*a, **k)


def _equal(a, b) -> bool:
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    return ta == tb and all(np.allclose(np.asarray(u), np.asarray(v)) for u, v in zip(la, lb))


def _compare(sh, line: str):
    res, cap = run(sh, f"_jc = %jit_compare -o --budget 0.05 {line}")
    assert res.success, cap.stdout + cap.stderr
    return sh.user_ns["_jc"]


def _matches(sh, line: str, eager, jitted) -> None:
    assert _equal(eager, jitted), (eager, jitted)
    r = _compare(sh, line)
    assert not r.verdict, r.verdict
    assert r.results_match is True, [(d.path, d.problem) for d in r.leaves]


@pytest.mark.parametrize("fun,args,opts", CASES)
def test_a_call_jit_agrees_with_is_a_match(sh, fun, args, opts):
    _matches(sh, f"{_flags(opts)} {fun}({args})", *_eager_and_jit(sh, fun, args, opts))


@pytest.mark.parametrize("target,fun,args,opts", JITTED)
def test_a_jitted_target_jit_agrees_with_is_a_match(sh, target, fun, args, opts):
    _matches(sh, f"{target}({args})", *_eager_and_jit(sh, fun, args, opts))


@pytest.mark.parametrize("flags", ["--static-argnums 1", "--static-argnames neg"])
def test_python_arithmetic_is_said_equal_to_jits_result(sh, flags):
    """The gallery's `f(1., 1)`: Python computes -1.0, jit returns the array -1.0."""
    eager, jitted = _eager_and_jit(sh, "f", "1., 1", {"static_argnums": 1})
    assert _equal(eager, jitted)
    r = _compare(sh, f"{flags} f(1., 1)")
    assert r.verdict == ("f runs no JAX operation op by op: Python computes what it returns "
                         "(a float), equal to what jax.jit returns; there is no JAX work to "
                         "speed up"), r.verdict


def test_python_arithmetic_jit_disagrees_with_differs(sh):
    """Python's ints do not overflow; jit's int32 does: compared, not waved through."""
    eager, jitted = _eager_and_jit(sh, "twice", "2**30", {})
    assert not _equal(eager, jitted), (eager, jitted)
    r = _compare(sh, "twice(2**30)")
    assert not r.verdict, r.verdict
    assert r.results_match is False


def test_the_gallery_cells_in_a_kernel():
    """02_jit's `%jit_compare --static-argnums 1 f(1., 1)` and a tuple with the Python
    number it was given, shown by a real kernel."""
    import nbformat
    from nbclient import NotebookClient

    cells = ["%load_ext jaxmagic\n" + DEFINITIONS,
             "%jit_compare --budget 0.1 --static-argnums 1 f(1., 1)",
             "%jit_compare --budget 0.1 scaled(x, 2)"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT),
                                                       os.environ.get("PYTHONPATH", "")]))
    NotebookClient(nb, timeout=300, kernel_name="python3").execute(env=env)
    static, scaled = ("".join(o["data"]["text/plain"] for o in c.outputs
                              if o["output_type"] == "display_data") for c in nb.cells[1:])
    assert "equal to what jax.jit returns" in static, static
    assert "DIFFER" not in static + scaled, static + scaled
    assert "results          match" in scaled and "over 2 leaves" in scaled, scaled
