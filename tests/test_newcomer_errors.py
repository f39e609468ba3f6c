"""A newcomer's first hour: every magic, given what newcomers get wrong, shows their frames
and JAX's, or one short line; never a frame or a path of jaxmagic's own files.

The inputs: typos in options, missing calls, functions that are not JAX, undefined names,
a call that raises, the wrong number of arguments, syntax errors, Ctrl-C at several
moments (raised by the user's code, and a real SIGINT at fractions of a long %jaxpr).
Everything a cell shows is read: stdout, stderr, every rich output, and the traceback
IPython prints; in a real kernel, the `error` output's traceback too. Also: a typo says
which option was meant, `%magic?` reads as plain help, a failing cell run again shows one
card, and Ctrl-C during the explorer's first layout still shows the picture.
"""
from __future__ import annotations

import itertools
import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest
from conftest import run
from IPython.core.error import UsageError

import jaxmagic

OURS = os.path.dirname(os.path.realpath(jaxmagic.__file__)) + os.sep
ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;]*m")

SETUP = """\
import jax, jax.numpy as jnp, numpy as np
def f(x):
    return jnp.sin(x) * 2
def boom(x):
    raise ValueError("boom in user code")
def kb(x):
    raise KeyboardInterrupt
def py(x):
    return [v + 1 for v in x]
x = jnp.ones(3)
xs = [1.0, 2.0]
"""


def ours_in(text: str) -> list[str]:
    """The lines of `text` that name a file of jaxmagic's (a frame, a path)."""
    return [ln for ln in text.splitlines() if OURS in ln or "<jaxmagic" in ln
            or re.search(r"jaxmagic[/\\]\w+", ln)]


def everything(cap) -> str:
    """All a cell showed: its streams and every mimetype of every rich output."""
    parts = [cap.stdout, cap.stderr]
    parts += [str(v) for o in cap.outputs for v in o.data.values()]
    return ANSI.sub("", "\n".join(parts))


# (cell, what the user must see): a substring of the output, or of the UsageError
CASES = [
    # typos in options
    ("%jaxpr --memroy f(x)", "did you mean --memory?"),
    ("%jaxpr --dpeth 1 f(x)", "did you mean --depth?"),
    ("%%jaxpr --profil\nf(x)", "did you mean --profile?"),
    ("%jit_compare --budjet 0.2 f(x)", "did you mean --budget?"),
    ("%shardviz --pln f(x)", "did you mean --plan?"),
    ("%jaxpr --format svgg f(x)", "invalid choice"),
    ("%jaxpr --depth deep f(x)", "depth"),
    ("%devices --bogus", "unrecognized arguments"),
    ("%jaxcheck of", "usage: %jaxcheck on|off|status"),
    # missing calls
    ("%jaxpr f", "expected a call such as f(x), found a name: f"),
    ("%jaxpr", "usage: %jaxpr"),
    ("%%jaxpr\ny = f(x)", "not a call"),
    ("%jit_compare f", "expected a call such as f(x), found a name: f"),
    ("%%shardviz\ny = 1", "does not end with an expression"),
    ("%shardviz", "draws variables that exist"),
    # functions that are not JAX
    ("%jaxpr py(xs)", ""),
    ("%jaxpr np.sin(x)", ""),
    ("%jit_compare -n 1 -r 1 py(xs)", ""),
    ("%jaxpr --memory np.sin(x)", ""),
    # undefined names
    ("%jaxpr predcit(x)", "NameError: name 'predcit' is not defined"),
    ("%jaxpr f(y_undefined)", "NameError: name 'y_undefined' is not defined"),
    ("%jaxpr --values predcit(x)", "NameError: name 'predcit' is not defined"),
    ("%jit_compare predcit(x)", "NameError: name 'predcit' is not defined"),
    ("%%jaxpr\nq = 1\npredcit(x)", "NameError: name 'predcit' is not defined"),
    ("%shardviz not_here", "'not_here' is not defined"),
    ("%%shardviz\nnot_here", "NameError: name 'not_here' is not defined"),
    ("%shardviz --plan predcit(x)", "NameError: name 'predcit' is not defined"),
    # a call that raises
    ("%jaxpr boom(x)", 'raise ValueError("boom in user code")'),
    ("%jaxpr --sharding boom(x)", 'raise ValueError("boom in user code")'),
    ("%jit_compare boom(x)", 'raise ValueError("boom in user code")'),
    ("%%jaxpr\nq = 1\nboom(x)", 'raise ValueError("boom in user code")'),
    ("%%shardviz\nboom(x)", 'raise ValueError("boom in user code")'),
    # the wrong number of arguments
    ("%jaxpr f(x, x)", "f() takes 1 positional argument but 2 were given"),
    ("%jaxpr f()", "f() missing 1 required positional argument"),
    ("%jaxpr f(x, scale=2)", "unexpected keyword argument 'scale'"),
    ("%jaxpr --profile f(x, x)", "f() takes 1 positional argument but 2 were given"),
    ("%jit_compare f(x, x)", "f() takes 1 positional argument but 2 were given"),
    ("%%jaxpr\nf(x, x)", "f() takes 1 positional argument but 2 were given"),
    ("%shardviz --plan jax.jit(f)(x, x)", "takes 1 positional argument but 2 were given"),
    # syntax errors
    ("%jaxpr f(x", "not a Python expression"),
    ("%%jaxpr\ny = (\nf(x)", "SyntaxError"),
    ("%jit_compare f(x))", "not a Python expression"),
    ("%%jaxcheck\ny = (", ""),
    # Ctrl-C raised by the user's code while JAX traces it, and while it is timed
    ("%jaxpr kb(x)", "raise KeyboardInterrupt"),
    ("%jaxpr --cost kb(x)", "raise KeyboardInterrupt"),
    ("%%jaxpr\nq = 1\nkb(x)", "raise KeyboardInterrupt"),
]


@pytest.fixture
def newcomer(ip):
    ip.run_line_magic("jaxcheck", "on")
    ip.run_cell(SETUP)
    ip.user_ns.pop("predcit", None)    # the typo stays undefined, whatever ran before
    return ip


@pytest.mark.parametrize("cell,expect", CASES, ids=[c for c, _ in CASES])
def test_no_frame_of_ours_for_what_newcomers_get_wrong(newcomer, cell, expect):
    r, cap = run(newcomer, cell)
    err = r.error_in_exec or r.error_before_exec
    text = everything(cap) + (f"\n{err}" if isinstance(err, UsageError) else "")
    assert not ours_in(text), f"a frame or path of jaxmagic's is shown:\n{text[-3000:]}"
    assert expect in text, f"{expect!r} is not shown:\n{text[-3000:]}"
    probe, _ = run(newcomer, "__probe = 1 + 2")
    assert probe.success and newcomer.user_ns.pop("__probe") == 3, "the shell is unusable"


def test_an_undefined_name_is_one_line(newcomer):
    """Not a traceback whose one frame is the call jaxmagic evaluated ("Could not get
    source"): the error as one line, its type kept, after the cell's line it came from."""
    r, cap = run(newcomer, "x = 1\n%jaxpr predcit(x)")
    assert isinstance(r.error_in_exec, NameError)
    text = everything(cap).strip()
    assert text == "line 2: %jaxpr predcit(x)\nNameError: name 'predcit' is not defined", text


@pytest.mark.parametrize("magic", ["jaxpr", "jit_compare", "shardviz --plan"])
def test_a_wrong_number_of_arguments_is_one_line_and_no_card(newcomer, magic):
    """Python's own words, once: a card naming the magic's line said them again."""
    callee = "jax.jit(f)" if "plan" in magic else "f"
    r, cap = run(newcomer, f"%{magic} {callee}(x, x)")
    assert isinstance(r.error_in_exec, TypeError)
    text = everything(cap).strip()
    assert text == (f"line 1: %{magic} {callee}(x, x)\n"
                    "TypeError: f() takes 1 positional argument but 2 were given"), text
    assert not cap.outputs, [o.data.get("text/plain") for o in cap.outputs]


def test_the_users_exception_shows_their_frames_only(newcomer):
    """The user's exception: the cell's line, then their raising line; no frame of a
    wrapper (contextlib's) between."""
    r, cap = run(newcomer, "%jaxpr boom(x)")
    assert isinstance(r.error_in_exec, ValueError)
    text = everything(cap)
    assert "contextlib" not in text and "ContextDecorator" not in text, text
    frames = re.findall(r"^(?:Cell In\[\d+\], line \d+|File \S+)", text, re.M)
    assert len(frames) == 2 and all(fr.startswith("Cell") for fr in frames), frames


# ---- a real Ctrl-C, at fractions of a long %jaxpr -----------------------------------------

LONG = """\
def long(v):
    for i in range(800):
        v = jnp.sin(v) * 1.001 + v[::-1] * 0.5
    return v
"""


@pytest.fixture(scope="module")
def whole_jaxpr(shell) -> float:
    """Seconds a whole `%jaxpr long(x)` takes, uninterrupted."""
    shell.run_cell(SETUP + LONG)
    t0 = time.perf_counter()
    whole, _ = run(shell, "%jaxpr long(x)")
    assert whole.success, whole.error_in_exec
    return time.perf_counter() - t0


@pytest.mark.parametrize("fraction", [0.1, 0.3, 0.6, 0.9])
def test_ctrl_c_at_any_moment_of_a_long_jaxpr(newcomer, whole_jaxpr, fraction,
                                              default_sigint):
    """SIGINT at a fraction of the time a whole `%jaxpr` of a long trace takes (tracing,
    the call tree, the graph, the views' search, the layout): the user sees the text
    view, their frames and JAX's, or one line; and the next cell runs."""
    newcomer.run_cell(LONG)
    timer = threading.Timer(whole_jaxpr * fraction, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        r, cap = run(newcomer, "%jaxpr long(x)")
    finally:
        timer.cancel()
        timer.join()
    text = everything(cap)
    assert not ours_in(text), f"at {fraction:.0%}:\n{text[-3000:]}"
    assert r.success or isinstance(r.error_in_exec, KeyboardInterrupt), r.error_in_exec
    if r.success:
        assert "interrupted (Ctrl-C)" in text or "data:image/svg+xml" in text, text[-500:]
    probe, _ = run(newcomer, "__probe = 1 + 2")
    assert probe.success and newcomer.user_ns.pop("__probe") == 3


# ---- help and typos ----------------------------------------------------------------------

@pytest.mark.parametrize("magic", ["jaxpr", "jit_compare", "devices", "shardviz", "jaxcheck"])
def test_help_reads_as_plain_help(ip, magic):
    """`%jaxpr?` as `%timeit?`: what the magic does first, then the usage line; no reST
    code block (`::`)."""
    doc = ip.find_magic(magic).__doc__
    assert "::" not in doc, doc[:300]
    first = doc.strip().splitlines()[0]
    assert not first.startswith(("usage", "%")), first
    if magic != "jaxcheck":
        assert f"usage: %{magic} [" in doc, doc


def test_a_typo_names_the_option_meant_with_the_usage_line(ip):
    with pytest.raises(UsageError) as e:
        ip.run_line_magic("jaxpr", "--memroy f(x)")
    lines = str(e.value).splitlines()
    assert lines[0] == "unknown option --memroy: did you mean --memory?", lines
    assert lines[1].startswith("usage: %jaxpr [--depth DEPTH]"), lines
    assert "::" not in str(e.value) and "--memory" in str(e.value)
    with pytest.raises(UsageError) as e:
        ip.run_line_magic("jaxpr", "--zzzz f(x)")
    assert str(e.value).splitlines()[0] == "unknown option --zzzz", str(e.value)


OTHERS = itertools.count()
JITTED_MUTATION = "@jax.jit\ndef bad(v):\n    v[0] = 1.0\n    return v\nbad(z)"
JITTED_BRANCH = "@jax.jit\ndef h(v):\n    if v.sum() > 0:\n        return v\n    return -v\nh(z)"


# ---- in a real kernel: what a notebook shows ---------------------------------------------

class Kernel:
    """A real ipykernel started as a Jupyter server starts one for JupyterLab (so %jaxpr
    offers its explorer), with what each cell sent to the notebook."""

    def __init__(self, cwd: Path):
        from jupyter_client import KernelManager

        env = dict(os.environ, JPY_SESSION_NAME=str(cwd / "newcomer.ipynb"),
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(env=env, cwd=str(cwd))
        self.client = self.km.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=120)

    def run(self, code: str, interrupt_when=None) -> tuple[str, list[dict]]:
        """(the reply's status, the outputs) of one cell; `interrupt_when()` is asked while
        it runs and, once true, the kernel is interrupted as JupyterLab's stop button does."""
        msg_id = self.client.execute(code)
        outputs = []
        while True:
            if interrupt_when is not None and interrupt_when():
                self.km.interrupt_kernel()
                interrupt_when = None
            try:
                msg = self.client.get_iopub_msg(timeout=0.05)
            except Exception:     # queue.Empty: nothing yet
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "status" and content["execution_state"] == "idle":
                break
            if kind in ("stream", "display_data", "execute_result", "error"):
                outputs.append(dict(content, output_type=kind))
        while True:        # (wait_for_ready's kernel_info replies come first)
            reply = self.client.get_shell_msg(timeout=60)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"]["status"], outputs

    def children(self, name: str) -> list[int]:
        """The kernel's child processes running `name` (the layouts' `dot`)."""
        pid = self.km.provisioner.process.pid
        found = []
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                for child in f.read().split():
                    try:
                        with open(f"/proc/{child}/cmdline", "rb") as c:
                            argv0 = c.read().split(b"\0")[0].decode()
                    except OSError:       # ended meanwhile
                        continue
                    if os.path.basename(argv0) == name:
                        found.append(int(child))
        return found

    def close(self) -> None:
        self.client.stop_channels()
        self.km.shutdown_kernel(now=True)


def shown(outputs: list[dict]) -> str:
    """Everything the outputs show: streams, every mimetype, an error's traceback."""
    parts = []
    for o in outputs:
        parts.append(o.get("text", ""))
        parts += [str(v) for v in o.get("data", {}).values()]
        parts += o.get("traceback", [])
    return ANSI.sub("", "\n".join(parts))


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    k = Kernel(tmp_path_factory.mktemp("newcomer"))
    status, outputs = k.run("%load_ext jaxmagic\n" + SETUP)
    assert status == "ok", shown(outputs)
    yield k
    k.close()


IN_A_KERNEL = ["%jaxpr predcit(x)", "%jaxpr f(x, x)", "%jaxpr boom(x)", "%jaxpr kb(x)",
               "%jaxpr --memroy f(x)", "%%jaxpr\ny = (\nf(x)", "%jit_compare f(x, x)",
               "%%shardviz\nboom(x)", "%jaxpr np.sin(x)", "%shardviz --plan predcit(x)"]


@pytest.mark.parametrize("cell", IN_A_KERNEL)
def test_no_frame_of_ours_in_a_kernel(kernel, cell):
    """A kernel sends a traceback as an `error` output, through `showtraceback`."""
    status, outputs = kernel.run(cell)
    text = shown(outputs)
    assert not ours_in(text), f"a frame or path of jaxmagic's is shown:\n{text[-3000:]}"
    if cell.startswith(("%jaxpr predcit", "%jaxpr f(x, x)", "%jaxpr kb", "%%shardviz")):
        assert status == "error" and [o["output_type"] for o in outputs][-1] == "error"


@pytest.mark.parametrize("cell", ["z[0] = 1", JITTED_MUTATION, JITTED_BRANCH])
def test_a_failing_cell_run_again_shows_one_card(kernel, cell):
    """ipykernel names a cell by its text: run again after other cells, it showed the
    check's card and the error's, the same finding twice."""
    kernel.run("z = jnp.zeros(3)")
    for again in range(2):
        status, outputs = kernel.run(cell)
        cards = [o for o in outputs
                 if re.search(r"\bJX\d{3}\b", o.get("data", {}).get("text/plain", ""))]
        assert status == "error" and len(cards) == 1, (again, shown(outputs))
        kernel.run(f"other = {next(OTHERS)}")     # cells of a text not run before


def test_ctrl_c_in_the_explorers_first_layout_shows_the_picture(kernel):
    """The static picture is drawn (coarsened past `max_nodes`, quickly); the explorer
    then lays out the call tree from its top, 400 equations, for seconds: Ctrl-C there
    shows the picture, not a KeyboardInterrupt through jaxmagic's files."""
    kernel.run(TANGLE + "%config JaxMagic.max_nodes = 60")
    started: dict[int, float] = {}

    def a_long_layout() -> bool:
        for pid in kernel.children("dot"):
            started.setdefault(pid, time.perf_counter())
        return any(time.perf_counter() - t > 0.5 for t in started.values())

    try:
        status, outputs = kernel.run("%jaxpr tangle(xs)", interrupt_when=a_long_layout)
    finally:
        kernel.run("%config JaxMagic.max_nodes = 400")
    assert started, "no layout ran"
    text = shown(outputs)
    assert not ours_in(text) and "KeyboardInterrupt" not in text, text[-3000:]
    assert status == "ok", text[-3000:]
    (picture,) = outputs
    assert "data:image/svg+xml" in picture["data"]["text/html"], sorted(picture["data"])


TANGLE = """\
def tangle(xs):
    vals = list(xs)
    for i in range(400):
        vals.append(jnp.sin(vals[-1]) + vals[(i * 7919) % len(vals)]
                    * vals[(i * 104729) % len(vals)])
    return vals[-1]
xs = [jnp.ones(3)] * 8
"""
