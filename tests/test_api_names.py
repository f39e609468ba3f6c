"""The Python API names a call's inputs by the callee's parameters, as the magic names
them by their source text: `jaxmagic.trace(loss, params, x, y)` draws `params`, `x`, `y`,
through partials, jit, grad, bound methods and `*args`; `arg0` only where no name exists."""
import functools
import os
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import jaxmagic

ROOT = Path(__file__).parents[1]


def loss(params, x, y):
    return jnp.sum((x @ params["w"] - y) ** 2)


P, X, Y = {"w": jnp.ones((3, 2))}, jnp.ones((4, 3)), jnp.zeros((4, 2))


def inputs(view) -> list[str]:
    return [n.title for n in view.full.nodes.values() if n.kind == "input"]


class Scaler:
    def apply(self, a, b):
        return a * b


def spread(first, *rest, **options):
    return first + sum(rest) + options["k"]


@pytest.mark.parametrize("f, args, kwargs, names", [
    (loss, (P, X, Y), {}, ["params['w']", "x", "y"]),
    (functools.partial(loss, P), (X, Y), {}, ["x", "y"]),
    (jax.jit(loss), (P, X, Y), {}, ["params['w']", "x", "y"]),
    (jax.grad(loss), (P, X, Y), {}, ["params['w']", "x", "y"]),
    (Scaler().apply, (X, X), {}, ["a", "b"]),
    (spread, (X, X, X), {"k": X}, ["first", "rest[0]", "rest[1]", "k"]),
], ids=["plain", "partial", "jit", "grad", "method", "varargs"])
def test_trace_names_inputs_by_parameter(f, args, kwargs, names):
    assert inputs(jaxmagic.trace(f, *args, **kwargs)) == names


def test_every_api_function_that_names_inputs_uses_the_parameters():
    assert jaxmagic.compare_jit(loss, P, X, Y, budget=0.1).name == "loss(params, x, y)"
    assert inputs(jaxmagic.values(loss, P, X, Y)) == ["params['w']", "x", "y"]
    live = {b.input for b in jaxmagic.memory(loss, P, X, Y).memory.live if b.input}
    assert live and live <= {"params['w']", "x", "y"}
    assert inputs(jaxmagic.profile(loss, P, X, Y, measure=False)) == ["params['w']", "x", "y"]
    plan = jaxmagic.sharding_plan(jax.jit(loss), P, X, Y).text()
    assert "params['w']" in plan and "arg" not in plan


def test_a_name_is_made_up_only_where_the_signature_has_none():
    from jaxmagic.api import _arg_names

    assert _arg_names(max, 2) == ["arg0", "arg1"]          # no signature
    assert _arg_names(lambda a: a, 2) == ["a", "arg1"]      # more arguments than names


def test_in_a_kernel_the_api_names_parameters_and_the_magic_source_text():
    import nbformat
    from nbclient import NotebookClient

    cells = ["%load_ext jaxmagic\nimport jax.numpy as jnp, jaxmagic\n"
             "def loss(params, x):\n    return jnp.sum(x @ params)\n"
             "p, batch = jnp.ones(3), jnp.ones((2, 3))",
             "print(jaxmagic.trace(loss, p, batch).text())",
             "%jaxpr --format text loss(p, batch)"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    NotebookClient(nb, timeout=300, kernel_name="python3").execute(
        env=dict(os.environ, PYTHONPATH=path))
    api = nb.cells[1].outputs[0]["text"]
    magic = nb.cells[2].outputs[0]["data"]["text/plain"]
    assert "input  params" in api and "input  x" in api and "arg0" not in api
    assert "input  p " in magic and "input  batch" in magic
