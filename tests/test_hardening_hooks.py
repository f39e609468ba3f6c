"""Nothing runs twice, nothing hangs, nothing is left behind.

- Each cell magic runs the statements of its cell once, evaluates the final call's callee
  and arguments once, and (%%jaxpr) traces once; %%jaxcheck runs nothing.
- A real Ctrl-C (SIGINT to this process) during a graph layout (dot and the WebAssembly
  Graphviz) stops it within its budget, and during %jit_compare's timing (also one Python
  dropped) in less than a comparison of one call takes; the shell runs the next cell and
  both renderers still draw.
- `%unload_ext` / `%load_ext` / `%reload_ext` leave exactly one set of hooks (event
  callbacks, custom exception handler), no duplicated cards, no leaked handlers, and a
  user's own exception handler as it was.
"""
from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager

import pytest
from conftest import run
from hardening.state import GlobalState

import jaxmagic
from jaxmagic.core import interrupt
from jaxmagic.graph import auto_depth
from jaxmagic.render import layout

# ---- nothing runs twice -------------------------------------------------------------------

COUNTERS = """\
import jax, jax.numpy as jnp
runs = {"prefix": 0, "callee": 0, "arg": 0, "body": 0, "value": 0}
def bump(key, value):
    runs[key] += 1
    return value
def body(v):
    runs["body"] += 1
    return jnp.sin(v) * 2
"""

ONCE = {
    # magic line + cell: which counters must read 1 after it (others as noted)
    "%%jaxpr": ("%%jaxpr\nbump('prefix', 0)\nbump('callee', body)(bump('arg', x0))\n",
                {"prefix": 1, "callee": 1, "arg": 1, "body": 1}),
    "%jaxpr": ("%jaxpr bump('callee', body)(bump('arg', x0))",
               {"prefix": 0, "callee": 1, "arg": 1, "body": 1}),
    "%%jit_compare": ("%%jit_compare -n 1 -r 1\nbump('prefix', 0)\n"
                      "bump('callee', body)(bump('arg', x0))\n",
                      {"prefix": 1, "callee": 1, "arg": 1}),
    "%jit_compare": ("%jit_compare -n 1 -r 1 bump('callee', body)(bump('arg', x0))",
                     {"prefix": 0, "callee": 1, "arg": 1}),
    "%%shardviz": ("%%shardviz\nbump('prefix', 0)\nbump('value', x0)\n",
                   {"prefix": 1, "value": 1}),
    "%%shardviz --plan": ("%%shardviz --plan\nbump('prefix', 0)\n"
                          "bump('callee', jax.jit(body))(bump('arg', x0))\n",
                          {"prefix": 1, "callee": 1, "arg": 1, "body": 1}),
    "%%jaxcheck": ("%%jaxcheck\nbump('prefix', 0)\nbump('callee', body)(bump('arg', x0))\n",
                   {"prefix": 0, "callee": 0, "arg": 0, "body": 0}),
}


@pytest.mark.parametrize("magic", list(ONCE))
def test_each_statement_runs_once(ip, magic):
    cell, expect = ONCE[magic]
    ip.run_line_magic("jaxcheck", "on")        # static checks run first: they run nothing
    ip.run_cell(COUNTERS)
    ip.user_ns["x0"] = ip.ev("jnp.arange(8.0)")
    r, _ = run(ip, cell)
    assert r.success, r.error_in_exec
    runs = ip.user_ns["runs"]
    for key, n in expect.items():
        assert runs[key] == n, f"{key} ran {runs[key]} times: {runs}"


# ---- Ctrl-C: a real SIGINT, as Jupyter's interrupt sends ---------------------------------

def sigint_after(seconds: float) -> threading.Timer:
    t = threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGINT))
    t.start()
    return t


def sigint_in_layout(seconds: float) -> threading.Timer:
    """SIGINT `seconds` into the layout's wait (its Ctrl-C handler installed), not into
    the view's building before it: under load that can take longer than `seconds`, and
    a Ctrl-C there is another test's."""
    default = signal.getsignal(signal.SIGINT)

    def send():            # until `cancel()`: never into a later test
        while signal.getsignal(signal.SIGINT) is default and not t.finished.is_set():
            time.sleep(0.01)
        if not t.finished.wait(seconds):
            os.kill(os.getpid(), signal.SIGINT)

    t = threading.Timer(0, send)
    t.daemon = True
    t.start()
    return t


@pytest.fixture(scope="module")
def tangled():
    """A jaxpr whose one-node-per-equation layout takes seconds (many crossing edges)."""
    import jax.numpy as jnp

    def tangle(xs):
        vals = list(xs)
        for i in range(400):
            vals.append(jnp.sin(vals[-1]) + vals[(i * 7919) % len(vals)]
                        * vals[(i * 104729) % len(vals)])
        return vals[-1]

    return jaxmagic.trace(tangle, [jnp.ones(3)] * 8)


# wasm: in CI's jax 0.8 fast suite (only there: not in the full suites on 0.7, 0.10 and
# 0.12, not in 7 local runs of that very venv) the signal was lost twice, the layout ran
# to its budget (16.6 s); unexplained, so it runs with the full suites
@pytest.mark.parametrize("engine", ["dot", pytest.param("wasm", marks=pytest.mark.slow)])
def test_ctrl_c_during_layout(ip, tangled, engine, default_sigint):
    if not layout.available(engine):
        pytest.skip(f"{engine} is not installed")   # (both are in CI)
    budget = 8.0
    ip.user_ns["view"] = tangled.configure(max_nodes=5000, layout_timeout=budget,
                                           renderer=engine, png=False, depth=None)
    before = GlobalState.take(ip)
    timer = sigint_in_layout(0.3)
    t0 = time.perf_counter()
    try:
        r, cap = run(ip, "display(view)")
    finally:
        timer.cancel()
    took = time.perf_counter() - t0
    assert r.success, r.error_in_exec
    # at once, not at the budget: dot is killed; the wasm layout runs in a worker thread
    # and is trapped (Python cannot interrupt a thread inside wasm)
    shown = [o.data.get("text/plain", "")[-400:] for o in cap.outputs]
    assert took < 3, f"Ctrl-C took {took:.1f} s to stop the layout; shown: {shown}"
    (out,) = [o.data for o in cap.outputs]
    assert "layout interrupted (Ctrl-C)" in out["text/plain"]
    assert not before.diff(GlobalState.take(ip))
    # the shell and the same renderer work afterwards
    ip.user_ns["small"] = jaxmagic.trace(lambda a: a * 2, ip.ev("jnp.ones(2)")).configure(
        renderer=engine, png=False)
    r, cap = run(ip, "display(small)")
    assert r.success and "data:image/svg+xml" in cap.outputs[0].data["text/html"]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_ctrl_c_swallowed_by_a_finalizer_still_stops_the_wait(default_sigint):
    """CI on 0.7.2: the SIGINT's KeyboardInterrupt was raised inside a WeakSet callback the
    garbage collector ran, printed as "Exception ignored" and dropped, and the layout went
    on to its budget. Here the signal arrives inside a `__del__` the wait's own poll runs."""
    class SendsCtrlC:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)     # the handler runs here, in __del__
            for _ in range(1000):                   # bytecodes for it to be delivered on
                pass

    polls = []

    def finished(seconds):
        polls.append(1)
        if len(polls) == 5:
            SendsCtrlC()            # dropped at once: its KeyboardInterrupt is swallowed
        time.sleep(seconds)
        return False

    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        layout._wait(finished, timeout=10)
    assert time.perf_counter() - t0 < 2
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # restored


def _layers(v):
    import jax.numpy as jnp

    def block(u):
        return jnp.tanh(u * 2.0 + 1.0) + u

    for _ in range(3):
        v = block(v)
    return jnp.sum(v)


def _inside(code) -> bool:
    """Whether a call of `code` is running below here."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code is not code:
        frame = frame.f_back
    return frame is not None


@contextmanager
def collector_sends_ctrl_c(inside):
    """SIGINT from the garbage collector's first collection inside a call of `inside`
    (the collector's threshold lowered for the block, so one comes soon): the handler
    runs there, in the collector, which prints its KeyboardInterrupt and drops it.
    Yields the list that holds, once it was sent, the calls `_many_calls` had made.

    The magics rest the collector while they work (`collector.paused`), but a `__del__`
    or a weakref callback drops a Ctrl-C the same way; the collector's callback is the
    one place a test can land it at will, so `gc.disable` does nothing for the block."""
    fired = []

    def sends_ctrl_c(phase, info):
        if phase == "start" and not fired and _inside(inside.__code__):
            fired.append(len(_STEPS))
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):           # bytecodes for it to be delivered on
                pass

    thresholds, enabled, disable = gc.get_threshold(), gc.isenabled(), gc.disable
    gc.callbacks.append(sends_ctrl_c)
    gc.set_threshold(50)
    gc.enable()
    gc.disable = lambda: None
    try:
        yield fired
    finally:
        gc.disable = disable
        gc.callbacks.remove(sends_ctrl_c)
        gc.set_threshold(*thresholds)
        if not enabled:
            gc.disable()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_ctrl_c_swallowed_while_the_views_are_built_stops_the_drawing(default_sigint):
    """A Ctrl-C that lands in a garbage collector's callback while the automatic depth
    builds its trial views (a hundred on a train step, garbage all the time) is dropped
    there as "Exception ignored"; the drawing stops at its next trial all the same, and
    shows the text it has."""
    import jax.numpy as jnp
    view = jaxmagic.trace(_layers, jnp.ones(4)).configure(png=False)
    with collector_sends_ctrl_c(auto_depth._search) as fired:
        bundle = view._repr_mimebundle_()
    assert fired
    assert "layout interrupted (Ctrl-C)" in bundle["text/plain"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # restored
    assert interrupt._notes == []


_STEPS: list[int] = []       # one a call of `step` traced


def _many_calls(v):
    import jax.numpy as jnp

    def step(u):
        _STEPS.append(1)
        return jnp.sin(u) + 1.0

    for _ in range(300):
        v = step(v)
    return v


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_ctrl_c_swallowed_while_jax_traces_stops_the_trace(default_sigint):
    """The same Ctrl-C, dropped while JAX traces the user's function (a train step makes a
    million calls and garbage all the time), stops the magic once the trace returns
    instead of drawing. (Not at the next call the call tree records: an exception
    raised from the 3.11 profile hook can crash the interpreter.)"""
    import jax.numpy as jnp
    _STEPS.clear()
    with collector_sends_ctrl_c(_many_calls) as fired, pytest.raises(KeyboardInterrupt):
        jaxmagic.trace(_many_calls, jnp.ones(4))
    assert fired and fired[0] < len(_STEPS) == 300, (fired, len(_STEPS))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # restored
    assert interrupt._notes == []
    assert jaxmagic.trace(_many_calls, jnp.ones(4)).num_equations == 600     # and again


@pytest.mark.parametrize("engine", ["dot", "wasm"])
def test_layout_stops_at_its_budget(tangled, engine):
    """Past `layout_timeout` the layout is abandoned (dot killed, wasm trapped) and a
    coarser view drawn: the whole drawing takes about one budget per level tried."""
    if not layout.available(engine):
        pytest.skip(f"{engine} is not installed")
    budget = 0.3
    view = tangled.configure(max_nodes=5000, layout_timeout=budget, renderer=engine,
                             png=False, depth=None)
    t0 = time.perf_counter()
    bundle = view._repr_mimebundle_()
    took = time.perf_counter() - t0
    assert "layout took longer than 0.3 s" in bundle["text/plain"]
    assert "data:image/svg+xml" in bundle["text/html"]        # the coarser view
    assert took < budget * 4 + 5, f"{took:.1f} s"


def test_timing_stays_within_its_budget(ip):
    ip.run_cell("import jax.numpy as jnp\ndef cheap(v):\n    return jnp.sin(v) * 2\n"
                "v0 = jnp.ones(16)")
    view = ip.run_line_magic("jit_compare", "--budget 0.5 -o cheap(v0)")
    assert view.total_s < 0.5 + 5, view.total_s       # compile included
    assert view.jit_repeats >= 1 and view.eager_repeats >= 1


SLOWISH = "import jax.numpy as jnp\ndef slowish(v):\n    return jnp.tanh(v @ v.T)\n" \
    "m0 = jnp.ones((64, 64))"


def one_comparison(ip) -> float:
    """Seconds a whole `%jit_compare` takes that times one call each way: all the magic
    does after a Ctrl-C stops its timing (the call running, the verdict, the display)
    is less, at any load."""
    ip.run_cell(SLOWISH)
    t0 = time.perf_counter()
    r, _ = run(ip, "%jit_compare -n 1 -r 1 slowish(m0)")
    assert r.success, r.error_in_exec
    return time.perf_counter() - t0


def sigint_once_running(code) -> tuple[threading.Thread, list]:
    """SIGINT once the main thread runs `code` (the timing loop); the list gets the time
    it was sent."""
    sent: list[float] = []
    main = threading.main_thread().ident

    def send():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            frame = sys._current_frames().get(main)
            while frame is not None and frame.f_code is not code:
                frame = frame.f_back
            if frame is not None:
                sent.append(time.perf_counter())
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.001)

    t = threading.Thread(target=send, daemon=True)
    t.start()
    return t, sent


def test_ctrl_c_during_timing(ip, default_sigint):
    """%jit_compare stops its timing loop once the call running returns, and shows what
    it measured: from the Ctrl-C on it takes less than a comparison of one call."""
    from jaxmagic.core import timeloop

    one = one_comparison(ip)
    before = GlobalState.take(ip)
    sender, sent = sigint_once_running(timeloop._loop.__code__)
    r, cap = run(ip, "%jit_compare --budget 30 slowish(m0)")
    stopped = time.perf_counter()
    sender.join()
    assert r.success, r.error_in_exec
    assert sent and stopped - sent[0] < 2 * one, \
        f"Ctrl-C took {stopped - sent[0]:.2f} s to stop the timing; one comparison {one:.2f} s"
    (out,) = [o.data for o in cap.outputs]
    assert "interrupted (Ctrl-C)" in out["text/plain"]
    assert not before.diff(GlobalState.take(ip))
    r, _ = run(ip, "%jit_compare -n 1 -r 1 slowish(m0)")
    assert r.success


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_ctrl_c_swallowed_while_jit_compare_traces_stops_the_timing(ip, default_sigint):
    """A Ctrl-C dropped while jit traces the call (in a collector's callback; at load, the
    trace is where a Ctrl-C sent a second in lands) stops %jit_compare at its next step,
    not at the end of its budget (CI: 26.6 s)."""
    one = one_comparison(ip)
    budget = 30
    t0 = time.perf_counter()
    with collector_sends_ctrl_c(ip.user_ns["slowish"]) as fired:
        r, cap = run(ip, f"%jit_compare --budget {budget} slowish(m0)")
    took = time.perf_counter() - t0
    assert fired and r.success, r.error_in_exec
    # stopped at its next step: a small part of the budget it ran to before, however long
    # the one trace and compile it waited for took at this load
    assert took < max(3 * one, budget / 10), f"{took:.2f} s; one comparison {one:.2f} s"
    (out,) = [o.data for o in cap.outputs]
    assert "interrupted (Ctrl-C)" in out["text/plain"]


# ---- unload / reload ----------------------------------------------------------------------

def ours(shell) -> dict:
    """jaxmagic's hooks as the shell holds them."""
    def mine(cb):
        return "CellHooks" in getattr(cb, "__qualname__", "")
    return {
        "pre_run_cell": sum(map(mine, shell.events.callbacks["pre_run_cell"])),
        "post_run_cell": sum(map(mine, shell.events.callbacks["post_run_cell"])),
        "exc_handler": any(                # set_custom_exc wraps our method in a closure
            getattr(getattr(c.cell_contents, "__func__", None), "__name__", "")
            == "on_exception"
            for c in getattr(shell.CustomTB, "__func__", shell.CustomTB).__closure__ or ()),
        "magics": sorted(n for n in ("jaxpr", "jit_compare", "jaxcheck", "devices",
                                     "shardviz") if n in shell.magics_manager.magics["line"]
                         or n in shell.magics_manager.magics["cell"]),
        "registry": [k for k in shell.magics_manager.registry if k == "JaxMagic"],
    }


LOADED = {"pre_run_cell": 1, "post_run_cell": 1, "exc_handler": True,
          "magics": ["devices", "jaxcheck", "jaxpr", "jit_compare", "shardviz"],
          "registry": ["JaxMagic"]}
UNLOADED = {"pre_run_cell": 0, "post_run_cell": 0, "exc_handler": False, "magics": [],
            "registry": []}

MUTATION = "z = jnp.zeros(3)\nz[0] = 1\n"          # a static card, then JAX's TypeError


def cards(cap) -> int:
    return sum("text/html" in o.data for o in cap.outputs)


def test_unload_then_load_leaves_one_set_of_hooks(ip):
    ip.run_cell("import jax.numpy as jnp")
    assert ours(ip) == LOADED
    before = GlobalState.take(ip)
    for _ in range(3):
        ip.run_line_magic("unload_ext", "jaxmagic")
        assert ours(ip) == UNLOADED
        r, cap = run(ip, MUTATION)          # no extension: no card, IPython's traceback
        assert isinstance(r.error_in_exec, TypeError) and cards(cap) == 0
        ip.run_line_magic("load_ext", "jaxmagic")
        assert ours(ip) == LOADED
        ip.run_line_magic("reload_ext", "jaxmagic")
        ip.run_line_magic("load_ext", "jaxmagic")      # "already loaded": no second set
        assert ours(ip) == LOADED
        ip.run_line_magic("jaxcheck", "on")
        r, cap = run(ip, MUTATION)
        assert isinstance(r.error_in_exec, TypeError)
        assert cards(cap) == 1, "one finding, one card"
        assert cap.stdout.count("TypeError") >= 1
    # everything else as it was (the hooks are a new instance's: ours() counted them)
    changed = [d for d in before.diff(GlobalState.take(ip))
               if not d.startswith(("shell events", "shell CustomTB"))]
    assert not changed, changed


def test_users_own_exception_handler_survives(ip):
    """A handler the user set before loading is called for its exceptions while jaxmagic
    is loaded, and is theirs again after unloading."""
    ip.run_line_magic("unload_ext", "jaxmagic")
    seen = []

    def handler(shell, etype, value, tb, tb_offset=None):
        seen.append(etype.__name__)
        return None

    ip.set_custom_exc((LookupError,), handler)
    try:
        ip.run_line_magic("load_ext", "jaxmagic")
        assert ours(ip)["exc_handler"]
        run(ip, "{}['missing']")
        assert seen == ["KeyError"]
        r, cap = run(ip, "raise ValueError('not theirs')")
        assert seen == ["KeyError"] and "ValueError" in cap.stdout
        ip.run_line_magic("unload_ext", "jaxmagic")
        assert ip.custom_exceptions == (LookupError,)
        run(ip, "[][1]")
        assert seen == ["KeyError", "IndexError"]
    finally:
        ip.set_custom_exc((), None)
        ip.run_line_magic("load_ext", "jaxmagic")
    assert ours(ip) == LOADED


def test_cell_starting_with_blank_lines_gets_one_card(ip):
    """IPython drops leading blank lines before running a cell: the static card and JAX's
    runtime error name the same line, so the finding is shown once."""
    ip.run_line_magic("jaxcheck", "on")
    ip.run_cell("import jax.numpy as jnp")
    for blank in ("", "\n", "\n  \n\n"):
        r, cap = run(ip, blank + MUTATION)
        assert isinstance(r.error_in_exec, TypeError)
        html = [o.data["text/plain"] for o in cap.outputs]
        assert len(html) == 1, html
        assert "line 2" in html[0]
