"""Bad input, every magic: one parametrised test per row of the matrix.

Rows: syntax error, exception in the cell, empty cell, no final call, non-array
arguments, arguments needing static marking, Ctrl-C mid-way, a 10,000-equation graph,
no renderer, a single device, a value with no array. Each row lists only the magics it
applies to. Every case checks the same contract:

- the outcome: a clear short message (UsageError, no traceback), or the user's own
  exception with their traceback (their raising line shown, no frame of jaxmagic's), or
  success;
- the user namespace exactly as documented: cell forms run the statements before the
  final call once (so they define names even when the final call is refused), `%%jaxpr`
  / `%%jit_compare` run nothing when the cell has no final call or cannot be parsed,
  `%%shardviz` runs the whole cell, `%%jaxcheck` runs nothing; no helper left behind;
- every `jax.config` value, every logger, the warnings filters, the garbage collector,
  the SIGINT handler and the shell's hooks as they were;
- the shell still runs the next cell.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import run
from hardening.state import GlobalState, ns_changes, user_names
from IPython.core.error import UsageError
from jax.experimental import checkify

import jaxmagic

OURS = os.path.dirname(jaxmagic.__file__) + os.sep
ANSI = re.compile(r"\x1b\[[0-9;]*m")

SETUP = """\
import jax, jax.numpy as jnp, numpy as np
def f(x):
    return jnp.sin(x) * 2
def g(x, n):
    return jnp.zeros(n) + x
def boom(x):
    raise ValueError("boom in user code")
def kb(x):
    raise KeyboardInterrupt
def h0():
    return 3
calls = [0]
def kc(x):
    calls[0] += 1
    if calls[0] == 4:      # eager first call, trace, then the steady eager loop
        raise KeyboardInterrupt
    return jnp.sin(x) * 2
def oob(v):
    return v[7]
x = jnp.ones(3)
no_array = {"a": 1, "b": "text"}
"""


@dataclass
class Case:
    magic: str
    cell: str
    expect: str                   # "usage" | "user" | "shown" | "ok"
    detail: object = ""           # message substring, or the user's exception type
    defines: tuple = ()           # names the cell (documented) defines
    line: str = ""                # the user's raising line, shown in their traceback

    def __str__(self) -> str:
        return self.magic


def ids(cases):
    return [c.magic for c in cases]


@pytest.fixture
def nb(ip):
    ip.run_line_magic("jaxcheck", "on")
    ip.run_cell(SETUP)
    return ip


def shown_times(text: str, exc: type) -> int:
    """How many tracebacks `text` holds (a chained exception's parts count as one)."""
    if issubclass(exc, SyntaxError):
        return text.count(f"{exc.__name__}:")
    return (text.count("Traceback (most recent call last)")
            - text.count("The above exception was the direct cause")
            - text.count("During handling of the above exception"))


def execute(ip, case: Case):
    """Run `case.cell`; check the contract every row shares. Returns (result, text)."""
    for name in case.defines:
        ip.user_ns.pop(name, None)
    ns_before = user_names(ip.user_ns)
    before = GlobalState.take(ip)
    r, cap = run(ip, case.cell)
    after = GlobalState.take(ip)
    text = ANSI.sub("", cap.stdout + cap.stderr)

    assert not before.diff(after), before.diff(after)
    added, removed, rebound = ns_changes(ns_before, user_names(ip.user_ns))
    assert added == set(case.defines), f"namespace: added {added}, documented {case.defines}"
    assert not removed, f"names removed: {removed}"
    assert not rebound - {"calls"}, f"names rebound: {rebound}"
    assert not [k for k in ip.user_ns if "jaxmagic" in k], "a helper was left behind"
    assert OURS not in text, "a frame of jaxmagic's own code is shown:\n" + text[-2000:]

    if case.expect == "usage":
        err = r.error_in_exec
        assert isinstance(err, UsageError), f"expected a UsageError, got {err!r}\n{text}"
        assert case.detail in str(err), str(err)
        assert "Traceback" not in text, text
        assert len(str(err).strip().splitlines()) <= 3, str(err)
    elif case.expect in ("user", "shown"):
        err = r.error_in_exec
        if case.expect == "user":       # the cell fails with the user's own exception
            assert isinstance(err, case.detail), \
                f"expected {case.detail.__name__}, got {err!r}"
        if case.detail is not SyntaxError:    # (IPython prints no "Traceback" for those)
            assert "Traceback" in text, text
        assert f"{case.detail.__name__}:" in text, text
        assert shown_times(text, case.detail) == 1, "the traceback is not shown once"
        assert case.line in text, f"the user's raising line {case.line!r} is not shown"
    else:
        assert r.success, f"{r.error_in_exec!r}\n{text}"

    probe, _ = run(ip, "__hardening_probe = sum([1, 2])")
    assert probe.success and ip.user_ns.pop("__hardening_probe") == 3, "shell unusable"
    return r, cap, text


# ---- rows ------------------------------------------------------------------------------

SYNTAX = [
    Case("%jaxpr", "%jaxpr f(x", "usage", "not a Python expression"),
    Case("%%jaxpr", "%%jaxpr\na1 = 1\ny = (\nf(x)\n", "user", SyntaxError, line="y = ("),
    Case("%jit_compare", "%jit_compare f(x", "usage", "not a Python expression"),
    Case("%%jit_compare", "%%jit_compare\na1 = 1\ny = (\nf(x)\n", "user", SyntaxError,
         line="y = ("),
    Case("%%shardviz", "%%shardviz\na1 = 1\ny = (\nx\n", "user", SyntaxError, line="y = ("),
    Case("%shardviz", "%shardviz x[", "usage", "is not a variable or expression"),
    Case("%shardviz --plan", "%shardviz --plan f(x", "usage", "not a Python expression"),
    Case("%%jaxcheck", "%%jaxcheck\na1 = 1\ny = (\n", "ok"),
    Case("%jaxcheck", "%jaxcheck sometimes", "usage", "usage: %jaxcheck on|off|status"),
    Case("%devices", "%devices --bogus", "usage", "unrecognized arguments"),
    Case("%jaxpr --save", "%jaxpr --save /tmp/graph.bmp f(x)", "usage",
         "--save takes a .svg, .dot or .txt path"),
    Case("%jaxpr --save dir", "%jaxpr --save /nonexistent-dir/g.svg f(x)", "usage", "--save"),
]


@pytest.mark.parametrize("case", SYNTAX, ids=ids(SYNTAX))
def test_syntax_error(nb, case):
    execute(nb, case)


EXCEPTION = [
    Case("%jaxpr", "%jaxpr boom(x)", "user", ValueError, line='raise ValueError("boom'),
    Case("%%jaxpr", "%%jaxpr\na1 = 1\nraise ValueError('in the cell')\nf(x)\n", "user",
         ValueError, ("a1",), line="raise ValueError('in the cell')"),
    Case("%jit_compare", "%jit_compare -n 1 -r 1 boom(x)", "user", ValueError,
         line='raise ValueError("boom'),
    Case("%%jit_compare", "%%jit_compare -n 1 -r 1\na1 = 1\nraise ValueError('in the cell')"
         "\nf(x)\n", "user", ValueError, ("a1",), line="raise ValueError('in the cell')"),
    Case("%%shardviz", "%%shardviz\na1 = 1\nraise ValueError('in the cell')\nx\n", "user",
         ValueError, ("a1",), line="raise ValueError('in the cell')"),
    Case("%%jaxcheck", "%%jaxcheck\na1 = 1\nraise ValueError('never run')\n", "ok"),
    # --checkify runs the call once with index checks: an out-of-bounds index is the
    # user's error, raised with their line
    Case("%jaxpr --checkify", "%jaxpr --checkify oob(x)", "user", checkify.JaxRuntimeError,
         line="return v[7]"),
    Case("%jit_compare --checkify", "%jit_compare --checkify -n 1 -r 1 oob(x)", "user",
         checkify.JaxRuntimeError, line="return v[7]"),
]


@pytest.mark.parametrize("case", EXCEPTION, ids=ids(EXCEPTION))
def test_exception_in_the_cell(nb, case):
    execute(nb, case)


EMPTY = [
    Case("%jaxpr", "%jaxpr", "usage", "nothing to trace"),
    Case("%%jaxpr", "%%jaxpr\n# nothing here\n", "usage", "the cell is empty"),
    Case("%jit_compare", "%jit_compare", "usage", "nothing to trace"),
    Case("%%jit_compare", "%%jit_compare\n# nothing here\n", "usage", "the cell is empty"),
    Case("%%shardviz", "%%shardviz\n# nothing here\n", "usage", "does not end with"),
    Case("%shardviz", "%shardviz", "usage", "draws variables that exist"),
    Case("%%jaxcheck", "%%jaxcheck\n# nothing here\n", "ok"),
    Case("%jaxcheck", "%jaxcheck", "ok"),
]


@pytest.mark.parametrize("case", EMPTY, ids=ids(EMPTY))
def test_empty_cell(nb, case):
    execute(nb, case)


NO_FINAL_CALL = [
    Case("%jaxpr", "%jaxpr f", "usage", "expected a call"),
    Case("%%jaxpr", "%%jaxpr\na1 = 1\na2 = f(x)\n", "usage", "not a call"),
    Case("%jit_compare", "%jit_compare x + 1", "usage", "expected a call"),
    Case("%%jit_compare", "%%jit_compare\na1 = 1\na2 = f(x)\n", "usage", "not a call"),
    Case("%%shardviz", "%%shardviz\na1 = 1\n", "usage", "does not end with", ("a1",)),
]


@pytest.mark.parametrize("case", NO_FINAL_CALL, ids=ids(NO_FINAL_CALL))
def test_no_final_call(nb, case):
    execute(nb, case)


# a string is held static (not traced), so f's own jnp.sin("abc") is what fails
NON_ARRAY = [
    Case("%jaxpr", '%jaxpr f("abc")', "user", TypeError, line="return jnp.sin(x) * 2"),
    Case("%%jaxpr", '%%jaxpr\ns1 = "abc"\nf(s1)\n', "user", TypeError, ("s1",),
         line="return jnp.sin(x) * 2"),
    Case("%jit_compare", '%jit_compare f("abc")', "user", TypeError,
         line="return jnp.sin(x) * 2"),
    Case("%%jit_compare", '%%jit_compare\ns1 = "abc"\nf(s1)\n', "user", TypeError, ("s1",),
         line="return jnp.sin(x) * 2"),
    Case("%%shardviz --plan", '%%shardviz --plan\nfj = jax.jit(f)\nfj("abc")\n', "user",
         TypeError, ("fj",), line='fj("abc")'),
    Case("%shardviz --plan", '%shardviz --plan jax.jit(f)("abc")', "user", TypeError,
         line='jax.jit(f)("abc")'),
]


@pytest.mark.parametrize("case", NON_ARRAY, ids=ids(NON_ARRAY))
def test_non_array_arguments(nb, case):
    execute(nb, case)


STATIC = [
    Case("%jaxpr", "%jaxpr g(x, 3)", "usage", "--static-argnums 1"),
    Case("%%jaxpr", "%%jaxpr\nn1 = 3\ng(x, n1)\n", "usage", "--static-argnums 1", ("n1",)),
    Case("%jit_compare", "%jit_compare -n 1 -r 1 g(x, n=3)", "usage", "--static-argnames n"),
    Case("%%jit_compare", "%%jit_compare -n 1 -r 1\nn1 = 3\ng(x, n1)\n", "usage",
         "--static-argnums 1", ("n1",)),
]


@pytest.mark.parametrize("case", STATIC, ids=ids(STATIC))
def test_arguments_needing_static(nb, case):
    """The message names the argument and the option; the command it suggests works."""
    r, _, _ = execute(nb, case)
    suggested = str(r.error_in_exec).split("e.g. ", 1)[1].strip()
    assert suggested.split()[0].lstrip("%") == case.magic.lstrip("%")
    if case.magic.startswith("%%"):
        suggested += "\n" + case.cell.split("\n", 1)[1]
    ok, _ = run(nb, suggested)
    assert ok.success, ok.error_in_exec


CTRL_C = [
    Case("%jaxpr", "%jaxpr kb(x)", "user", KeyboardInterrupt, line="raise KeyboardInterrupt"),
    Case("%%jaxpr", "%%jaxpr\na1 = 1\nraise KeyboardInterrupt\nf(x)\n", "user",
         KeyboardInterrupt, ("a1",), line="raise KeyboardInterrupt"),
    # %jit_compare stops measuring and shows what it measured (as documented)
    Case("%jit_compare", "%jit_compare --budget 0.2 kc(x)", "ok"),
    Case("%%jit_compare", "%%jit_compare --budget 0.2\na1 = 1\nkc(x)\n", "ok", defines=("a1",)),
    Case("%%shardviz", "%%shardviz\na1 = 1\nraise KeyboardInterrupt\nx\n", "user",
         KeyboardInterrupt, ("a1",), line="raise KeyboardInterrupt"),
]


@pytest.mark.parametrize("case", CTRL_C, ids=ids(CTRL_C))
def test_ctrl_c_mid_way(nb, case):
    nb.user_ns["calls"][0] = 0
    r, cap, text = execute(nb, case)
    if case.magic.endswith("jit_compare"):
        view = [o.data["text/plain"] for o in cap.outputs if "text/plain" in o.data]
        assert view and "interrupted (Ctrl-C) during steady eager" in view[-1], view


BIG = Case("%%jaxpr", "%%jaxpr\ndef big(v):\n    for _ in range(10_000):\n        v = v + 1.0\n"
           "    return v\nbig(x)\n", "ok", defines=("big",))


@pytest.mark.parametrize("case", [BIG], ids=ids([BIG]))
def test_ten_thousand_equations(nb, case):
    """Drawn coarser, with a note saying so, within the layout budget."""
    _, cap, _ = execute(nb, case)
    (out,) = [o.data for o in cap.outputs if "text/html" in o.data]
    assert "10000 equations" in out["text/plain"]
    assert "exceed max_nodes" in out["text/plain"]
    assert "data:image/svg+xml;base64," in out["text/html"]


NO_RENDERER = [
    Case("%jaxpr", "%jaxpr f(x)", "ok"),
    Case("%%jaxpr", "%%jaxpr\ny1 = x * 2\nf(y1)\n", "ok", defines=("y1",)),
]


@pytest.mark.parametrize("case", NO_RENDERER, ids=ids(NO_RENDERER))
def test_no_renderer(nb, case):
    """Text and DOT source instead of a picture, and one line saying how to get one."""
    magics = nb.magics_manager.registry["JaxMagic"]
    saved = magics.renderer
    magics.renderer = "none"
    try:
        _, cap, _ = execute(nb, case)
    finally:
        magics.renderer = saved
    (out,) = [o.data for o in cap.outputs if "text/html" in o.data]
    assert "image/png" not in out and "data:image" not in out["text/html"]
    assert "DOT source" in out["text/html"] and "digraph" in out["text/html"]
    notes = [ln for ln in out["text/plain"].splitlines() if ln.startswith("note:")]
    assert len(notes) == 1 and "install Graphviz" in notes[0]


ANALYSES = [
    Case("%jaxpr --sharding", "%jaxpr --sharding f(x)", "ok", "collectives of f:"),
    Case("%jaxpr --memory", "%jaxpr --memory f(x)", "ok", "memory of f: peak"),
    Case("%jaxpr --profile", "%jaxpr --profile f(x)", "ok", "profile of f:"),
    Case("%%jaxpr --memory", "%%jaxpr --memory\ny1 = x * 2\nf(y1)\n", "ok",
         "memory of f: peak", defines=("y1",)),
]


@pytest.mark.parametrize("case", ANALYSES, ids=ids(ANALYSES))
def test_analyses(nb, case):
    """The extra compiles and runs of --sharding, --memory and --profile (an XLA dump
    to a temporary directory, compiler options, a timed run) leave every config, logger,
    handler and name as it was, and draw the picture."""
    _, cap, _ = execute(nb, case)
    (out,) = [o.data for o in cap.outputs if "text/html" in o.data]
    assert "data:image/svg+xml;base64," in out["text/html"]
    assert case.detail in out["text/plain"], out["text/plain"][-1500:]


NO_ARRAY = [
    Case("%jaxpr", "%jaxpr h0()", "ok"),
    Case("%%jaxpr", "%%jaxpr\nk1 = 2\n(lambda: k1)()\n", "ok", defines=("k1",)),
    Case("%jit_compare", "%jit_compare -n 1 -r 1 h0()", "ok"),
    Case("%%jit_compare", "%%jit_compare -n 1 -r 1\nk1 = 2\n(lambda: k1)()\n", "ok",
         defines=("k1",)),
    Case("%%shardviz", "%%shardviz\nk1 = {'a': 1, 'b': 'text'}\nk1\n", "ok", defines=("k1",)),
    Case("%shardviz", "%shardviz no_array", "ok"),
]


@pytest.mark.parametrize("case", NO_ARRAY, ids=ids(NO_ARRAY))
def test_value_with_no_array(nb, case):
    _, cap, _ = execute(nb, case)
    outs = [o.data for o in cap.outputs if "text/html" in o.data]
    assert len(outs) == 1
    if "shardviz" in case.magic:
        assert "no JAX array" in outs[0]["text/plain"] or "no array" in outs[0]["text/plain"]


# ---- a single device: a fresh kernel-like process with one CPU device -------------------

SINGLE_DEVICE = {
    "%devices": "%devices",
    "%%shardviz": "%%shardviz\njnp.arange(8.0)\n",
    "%%shardviz mesh": "%%shardviz\nfrom jax.sharding import Mesh, NamedSharding, "
                       "PartitionSpec as P\nm = Mesh(np.array(jax.devices()), ('i',))\n"
                       "jax.device_put(jnp.arange(8.0), NamedSharding(m, P('i')))\n",
    "%%shardviz --plan": "%%shardviz --plan\njax.jit(f)(x)\n",
    "%jaxpr": "%jaxpr f(x)",
    "%jaxpr shard_map": "%%jaxpr\nfrom jax.sharding import Mesh, PartitionSpec as P\n"
                        "m = Mesh(np.array(jax.devices()), ('i',))\n"
                        "jax.shard_map(lambda a: jax.lax.psum(a, 'i'), mesh=m, "
                        "in_specs=P('i'), out_specs=P())(x)\n",
    "%jit_compare": "%jit_compare -n 1 -r 1 f(x)",
}

WORKER = Path(__file__).parent / "hardening" / "single_device.py"


@pytest.fixture(scope="module")
def single_device_results():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=1",
               JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, str(WORKER)], input=json.dumps(
        {"setup": SETUP, "cells": SINGLE_DEVICE}), capture_output=True, text=True, env=env,
        timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("magic", list(SINGLE_DEVICE))
def test_single_device(single_device_results, magic):
    got = single_device_results[magic]
    assert got["devices"] == 1
    assert got["success"], got["text"]
    assert got["outputs"] >= 1 and not got["state_diff"], got
    assert OURS not in got["text"] and "Traceback" not in got["text"]
    if magic == "%devices":
        assert "1 device" in got["plain"] or "cpu" in got["plain"].lower()


# ---- a sanity check of the harness itself ------------------------------------------------

def test_contract_catches_a_leaked_flag(nb):
    """The state snapshot sees a jax.config flag a cell leaves flipped (so it can fail)."""
    before = GlobalState.take(nb)
    nb.run_cell("jax.config.update('jax_explain_cache_misses', "
                "not jax.config.jax_explain_cache_misses)")
    try:
        assert any("jax_explain_cache_misses" in d for d in before.diff(GlobalState.take(nb)))
    finally:
        nb.run_cell("jax.config.update('jax_explain_cache_misses', "
                    "not jax.config.jax_explain_cache_misses)")
    assert not before.diff(GlobalState.take(nb))
