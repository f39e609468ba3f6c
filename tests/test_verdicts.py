"""Honest verdicts on calls that are not JAX work, in a real kernel: a call jit cannot
compile says so in JAX's words, a call that runs no JAX operation says what it does
instead; never a speedup, a "match" over 0 leaves, or an empty picture."""
import os
from pathlib import Path

import jax.numpy as jnp
import pytest

import jaxmagic

ROOT = Path(__file__).parents[1]

DEFINITIONS = '''
def shout(x):
    return "hello " + str(x)

def nothing(x):
    print("side effect")

def ident(x):
    return x

def const(x):
    return np.arange(3.0)

def as_text(x):
    return str(jnp.sin(x))

def logs(x):
    jax.debug.print("x={}", x)

def labelled(x):
    return jnp.sin(x), "sine"

def twice(n):
    return n * 2

def npsin(x):
    return np.sin(np.asarray(x))

def foreign(x):
    return jax.ffi.ffi_call("no_such_target", jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
'''

CELLS = {
    "shout": "%jit_compare --budget 0.2 shout(x)",
    "jitted shout": "%jit_compare --budget 0.2 jax.jit(shout)(x)",
    "nothing": "%jit_compare --budget 0.2 nothing(x)",
    "ident": "%jit_compare --budget 0.2 ident(x)",
    "const": "%jit_compare --budget 0.2 const(x)",
    "as_text": "%jit_compare --budget 0.2 as_text(x)",
    "logs": "%jit_compare -n 1 -r 1 logs(x)",
    "twice": "%jit_compare --budget 0.2 twice(3)",
    "labelled": "%jit_compare --budget 0.2 labelled(x)",
    "npsin": "%jit_compare --budget 0.2 npsin(x)",
    "foreign": "%jit_compare --budget 0.2 foreign(x)",
    "jaxpr shout": "%jaxpr shout(1)",
    "jaxpr ident": "%jaxpr ident(x)",
    "jaxpr const": "%jaxpr const(x)",
    "jaxpr save": "%jaxpr --save /tmp/jaxmagic-test-ident.svg ident(x)",
}


@pytest.fixture(scope="module")
def kernel_outputs():
    """Each cell of CELLS run once in a real ipykernel: its outputs by name."""
    import nbformat
    from nbclient import NotebookClient

    setup = ("%load_ext jaxmagic\nimport jax, jax.numpy as jnp, numpy as np\n"
             "x = jnp.ones(3)\n" + DEFINITIONS)
    cells = [setup] + list(CELLS.values())
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True).execute(env=env)
    assert not nb.cells[0].outputs, nb.cells[0].outputs
    return dict(zip(CELLS, (c.outputs for c in nb.cells[1:])))


def _shown(outputs) -> list[dict]:
    return [o["data"] for o in outputs if o["output_type"] in ("display_data",
                                                               "execute_result")]


def _verdict(outputs) -> str:
    """The one view a cell shows, as text, after checking it claims no figure."""
    assert not [o for o in outputs if o["output_type"] == "error"], outputs
    shown = _shown(outputs)
    assert len(shown) == 1, shown
    text = shown[0]["text/plain"]
    for claim in ("faster", "slower", "pays for itself", "match", "0 leaves", "speedup",
                  "trace + lower + compile"):
        assert claim not in text and claim not in shown[0].get("text/html", ""), text
    return text


def test_an_output_jit_cannot_return_is_judged_in_jaxs_words(kernel_outputs):
    for name in ("shout", "jitted shout"):
        text = _verdict(kernel_outputs[name])
        assert "jax.jit cannot compile shout" in text, text
        # JAX's words (0.7 names the output component between them)
        assert "returned a value of type <class 'str'>" in text, text
        assert "which is not a valid JAX type" in text, text
        assert "return arrays" in text


def test_arrays_beside_an_output_jit_cannot_return_are_timed_and_it_is_said(kernel_outputs):
    (data,) = _shown(kernel_outputs["labelled"])
    text = data["text/plain"]
    assert "jit, steady" in text and "over 1 leaf" in text
    assert "jax.jit(labelled) itself raises: function labelled at" in text, text
    assert "timed for its array outputs" in text


def test_a_call_of_no_jax_operation_says_what_it_does(kernel_outputs):
    text = _verdict(kernel_outputs["ident"])
    assert "ident runs no JAX operation: its input x passes straight through" in text
    text = _verdict(kernel_outputs["const"])
    assert "const runs no JAX operation: it returns a constant" in text
    text = _verdict(kernel_outputs["as_text"])
    assert "jax.jit cannot compile as_text" in text, text


def test_python_arithmetic_is_no_jax_operation_op_by_op(kernel_outputs):
    text = _verdict(kernel_outputs["twice"])
    assert "twice runs no JAX operation op by op: Python computes what it returns (an int)" \
        in text, text


def test_a_call_returning_none_runs_its_side_effect_once(kernel_outputs):
    outputs = kernel_outputs["nothing"]
    text = _verdict(outputs)
    assert "nothing runs no JAX operation: it returns None" in text
    assert "happens once, not on every call" in text
    printed = "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")
    assert printed.count("side effect") == 1, printed


def test_an_effect_returning_none_is_timed_with_nothing_to_compare(kernel_outputs):
    shown = _shown(kernel_outputs["logs"])
    text = shown[0]["text/plain"]
    assert "jit, steady" in text
    assert "nothing to compare: the call returns no array" in text
    assert "0 leaves" not in text and "match" not in text


def test_a_jit_that_raises_at_trace_time_shows_jaxs_error_and_no_frame_of_ours(
        kernel_outputs):
    outputs = kernel_outputs["npsin"]
    errors = [o for o in outputs if o["output_type"] == "error"]
    assert [e["ename"] for e in errors] == ["TracerArrayConversionError"]
    assert not any("jaxmagic" in line for line in errors[0]["traceback"])
    assert not any("faster" in d["text/plain"] for d in _shown(outputs))


def test_a_program_xla_cannot_compile_is_judged_in_its_words(kernel_outputs):
    text = _verdict(kernel_outputs["foreign"])
    assert "jax.jit cannot compile foreign: XLA rejects the program JAX traced" in text
    assert "no_such_target" in text, text


def test_jaxpr_of_no_jax_operation_is_said_not_drawn(kernel_outputs):
    expected = {"jaxpr shout": "shout runs no JAX operation: it returns a str, not an array",
                "jaxpr ident": "ident runs no JAX operation: its input x passes straight "
                               "through",
                "jaxpr const": "const runs no JAX operation: it returns a constant"}
    for name, said in expected.items():
        (data,) = _shown(kernel_outputs[name])
        assert said in data["text/plain"] and said in data["text/html"], data
        assert "0 equations" not in data["text/plain"]
        assert "image/png" not in data and "<img" not in data["text/html"], name


def test_saving_the_picture_of_no_jax_operation_says_why_there_is_none(kernel_outputs):
    outputs = kernel_outputs["jaxpr save"]
    assert not [o for o in outputs if o["output_type"] == "error"], outputs
    said = "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")
    assert "UsageError: --save: no picture to save as SVG: ident runs no JAX operation" \
        in said, said
    assert not Path("/tmp/jaxmagic-test-ident.svg").exists()


def test_api_verdict_has_no_figures():
    def shout(x):
        return "hello " + str(x)

    r = jaxmagic.compare_jit(shout, jnp.ones(3), budget=0.2)
    assert r.verdict.startswith("jax.jit cannot compile shout")
    assert r.speedup is None and r.results_match is None and r.jit_s is None
    assert "jax.jit cannot compile shout" in repr(r)
