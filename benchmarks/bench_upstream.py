"""The default `%jaxpr` picture of train steps nobody here wrote, in one run.

Flax's own `examples/gemma` (NNX) and `examples/lm1b` (Linen), at a pinned commit, read
from a local mirror of google/flax and imported unmodified, with small configs and random
data. Each step is built as the example's `train_and_evaluate` builds it (`nnx.jit` /
`jax.jit` with its static arguments, `optax.adamw` with the example's own learning-rate
schedule, `create_learning_rate_schedule`; no mesh) and drawn by `%jaxpr` in a real IPython
shell, at default settings. Per graph: the smallest text on screen at 1100 px (940 px of cell), the
nodes drawn, the seconds the magic took (once the cells' own dispatched work has finished),
the SVG's size, how the view is grouped, and the groups that name the model's own code.

The examples' IO libraries are not needed by a train step: TensorFlow (lm1b's input
pipeline) and clu's TensorBoard writers stand in as empty modules when not installed;
`clu`, `grain` and `sentencepiece` must be (`pip install -e '.[bench]'`).

Targets: text ≥ 8 px, ≤ 2 s, ≤ 300 KB; the model's class among the groups, and where the
model repeats a block of a class the row names (a folded series: `Block ×4`), that block.

A second table, "held out", draws four more public train steps the automatic depth was
not tuned on (Flax's imagenet, wmt and NNX MNIST tutorial, Equinox's ViT notebook; see
`upstream_heldout.py`). They are reported, not gated: the exit status is the tuned rows'.
PyTorch (the ViT notebook's data loader) stands in as an empty module like TensorFlow;
`einops` and `ml_collections` must be installed (`.[bench]`), and the mirrors of
google/flax and patrick-kidger/equinox fetched.

    PYTHONPATH=$PWD python benchmarks/bench_upstream.py [--mirrors /work/.mirror]
        [--flags=--kernels]     # every row with an overlay too
"""
from __future__ import annotations

import argparse
import importlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import types
from contextlib import contextmanager
from pathlib import Path

import upstream_corpus
from upstream_heldout import EQUINOX, FLAX, HELD_OUT, stand_in_attribute

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

LIMIT_S = 120   # per graph: a row that hangs is reported, and the next one drawn

IO_ONLY = ("tensorflow", "tensorflow_datasets", "tensorflow_text", "clu.metric_writers",
           "clu.periodic_actions", "clu.deterministic_data", "torch", "torchvision",
           "torchvision.transforms")

GEMMA = """
import sys; sys.path.insert(0, EXAMPLES + '/gemma')
from functools import partial
import jax, jax.numpy as jnp, optax
from flax import nnx
import train, transformer as transformer_lib
from transformer_cfg import TransformerConfig
base = TransformerConfig.gemma3_270m()
cfg = TransformerConfig.gemma3_270m(num_layers=4, num_embed=256, embed_dim=64, hidden_dim=128,
                                    num_heads=2, head_dim=16, num_kv_heads=1,
                                    sliding_window_size=16,
                                    attention_types=base.attention_types[:4])
model = transformer_lib.Transformer(cfg, rngs=nnx.Rngs(0))
learning_rate_fn = train.create_learning_rate_schedule(learning_rate=1e-3, warmup_steps=10)
optimizer = nnx.Optimizer(model, optax.adamw(learning_rate_fn, b1=0.9, b2=0.98, eps=1e-9,
                                             weight_decay=0.1), wrt=nnx.Param)
rngs = nnx.Rngs(1)
batch = {'inputs': jnp.ones((2, 16), jnp.int32), 'targets': jnp.ones((2, 16), jnp.int32),
         'inputs_position': jnp.tile(jnp.arange(16), (2, 1)),
         'inputs_segmentation': jnp.ones((2, 16), jnp.int32)}
train_metrics = nnx.MultiMetric(loss=nnx.metrics.Average('loss'),
                                accuracy=nnx.metrics.Accuracy())
jit_train_step = nnx.jit(partial(train.nnx_train_step, with_capture=False),
                         static_argnames=('label_smoothing', 'pad_id'),
                         donate_argnames=('model', 'optimizer'))
"""
GEMMA_CALL = "jit_train_step(model, optimizer, rngs, batch, train_metrics, 0.0, 0)"

LM1B = """
import sys; sys.path.insert(0, EXAMPLES + '/lm1b')
import jax, jax.numpy as jnp, optax
from flax.training import train_state
import models, train
cfg = models.TransformerConfig(vocab_size=64, output_vocab_size=64, emb_dim=32, num_heads=2,
                               num_layers=4, qkv_dim=32, mlp_dim=64, max_len=16,
                               dropout_rate=0.1, attention_dropout_rate=0.1, deterministic=False)
init = models.TransformerLM(cfg.replace(deterministic=True)).init(
    jax.random.key(0), jnp.ones((2, 16), jnp.int32))
learning_rate_fn = train.create_learning_rate_schedule(learning_rate=1e-3, warmup_steps=10)
state = train_state.TrainState.create(
    apply_fn=None, params=init['params'],
    tx=optax.adamw(learning_rate_fn, b1=0.9, b2=0.98, eps=1e-9, weight_decay=0.1))
batch = {'inputs': jnp.ones((2, 16), jnp.int32)}
jit_train_step = jax.jit(train.train_step, static_argnums=(2, 3, 4), donate_argnums=0)
"""
LM1B_CALL = "jit_train_step(state, batch, cfg, learning_rate_fn, 0.0, jax.random.key(1))"

MODELS = [("gemma train step (NNX)", GEMMA, GEMMA_CALL, ("Block", "Transformer"), None),
          ("lm1b train step (Linen)", LM1B, LM1B_CALL, ("encoderdecoderblock", "decoder"),
           None)]


def extract(mirrors: Path) -> str | None:
    """The pinned flax examples in a temporary folder, or None without the mirror."""
    for repo, _ in (FLAX, EQUINOX):
        if not (mirrors / repo / "repo").exists():
            print(f"missing mirror {mirrors / repo}: fetch github:{repo.replace('+', '/')}"
                  " (search tool `fetch`)")
            return None
    repo, commit = FLAX
    out = tempfile.mkdtemp(prefix="upstream-")
    examples = [f"examples/{name}" for name in ("gemma", "lm1b", "imagenet", "wmt")]
    archive = subprocess.run(["git", f"--git-dir={mirrors / repo / 'repo'}", "archive", commit,
                              *examples], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", out], input=archive.stdout, check=True)
    return out + "/examples"


def forget(examples: str) -> None:
    """Drop the last example's modules: both have a `train`, a `tokenizer`..."""
    for name, module in list(sys.modules.items()):
        if (getattr(module, "__file__", None) or "").startswith(examples):
            del sys.modules[name]
    sys.path[:] = [p for p in sys.path if not p.startswith(examples)]


def io_stand_ins() -> dict[str, types.ModuleType]:
    import flax.training.checkpoints  # noqa: F401 - asks whether TensorFlow exists: first
    made = {}
    for name in IO_ONLY:
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - absent, or present but broken: stand in
            module = types.ModuleType(name)
            module.__getattr__ = stand_in_attribute
            sys.modules[name] = module
            parent, _, child = name.rpartition(".")
            if parent and parent in sys.modules:
                setattr(sys.modules[parent], child, module)
            made[name] = module
    return made


@contextmanager
def standing_in(made: dict[str, types.ModuleType]):
    """The stand-ins in `sys.modules` while upstream code runs its imports, and only
    then: while `%jaxpr` draws, einops (the ViT's patches) takes any `tensorflow` or
    `torch` there for the real framework and asks it for tensor types."""
    sys.modules.update(made)
    try:
        yield
    finally:
        for name in made:
            sys.modules.pop(name, None)


class Failed(Exception):
    """Why a row has no figures: the error text the table shows."""


def run_cells(ip, cells: list[str]) -> None:
    """Run cells as a notebook does, quietly (`nnx.display`...)."""
    from IPython.utils.capture import capture_output

    for cell in cells:
        with capture_output():
            result = ip.run_cell(cell)
        if not result.success:
            raise Failed(repr(result.error_in_exec or result.error_before_exec)[:160])
    settle(ip.user_ns)


def settle(namespace: dict) -> None:
    """Wait for what the cells dispatched to finish: JAX runs asynchronously, and a
    ResNet50's `pmap(initial_state)` still ran on both cores for 2.8 s into the timed
    `%jaxpr` (its trace took 5.0 s beside it, 1.1 s alone). A person reads the output
    before the next cell; the magic's own seconds are what a row reports."""
    import jax

    for value in list(namespace.values()):
        try:
            leaves = jax.tree_util.tree_leaves(value)
        except Exception:  # noqa: BLE001 - an object no pytree rule flattens holds none
            continue
        jax.block_until_ready([x for x in leaves if isinstance(x, jax.Array)])


@contextmanager
def time_limit(seconds: int):
    """Raise TimeoutError in what runs past `seconds` (pure-Python loops included)."""
    def stop(signum, frame):
        raise TimeoutError(f"still drawing after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# where the magic's time goes: (phase, module, function), timed where the magic calls them
PHASES = (("trace", "jaxmagic.core.trace", "trace"), ("build", "jaxmagic.graph.build", "build"),
          ("layouts", "jaxmagic.render.layout", "render"))


@contextmanager
def phases(seconds: dict[str, float]):
    """Add each phase's seconds to `seconds` while the block runs."""
    saved = []
    for phase, module, name in PHASES:
        mod = importlib.import_module(module)
        saved.append((mod, name, getattr(mod, name)))

        def timed(*args, _f=getattr(mod, name), _phase=phase, **kwargs):
            t0 = time.perf_counter()
            try:
                return _f(*args, **kwargs)
            finally:
                seconds[_phase] = seconds.get(_phase, 0.0) + time.perf_counter() - t0
        setattr(mod, name, timed)
    try:
        yield seconds
    finally:
        for mod, name, f in saved:
            setattr(mod, name, f)


def cpu_seconds() -> float:
    """This process's CPU time and its finished children's (dot): on a shared machine
    the wall clock counts the time other guests took the core, this does not."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def draw(ip, call: str):
    """The view `%jaxpr -o call` returns, its SVG, and the seconds both took (wall, and
    CPU in `CPU_SPENT`)."""
    from IPython.utils.capture import capture_output

    t0, cpu0 = time.perf_counter(), cpu_seconds()
    try:
        with time_limit(LIMIT_S), capture_output() as printed:
            view = ip.run_line_magic("jaxpr", f"-o {FLAGS} {call}".replace("  ", " "))
            svg = view.svg().encode() if view is not None else None
    except Exception as e:  # noqa: BLE001 - a finding: the row shows it, the next runs
        frame = traceback.extract_tb(e.__traceback__)[-2 if isinstance(e, TimeoutError) else -1]
        raise Failed(f"{type(e).__name__}: {e} (at {Path(frame.filename).name}:{frame.lineno}"
                     f" {frame.name})") from None
    if view is None:
        raise Failed("%jaxpr drew nothing: " + " ".join(printed.stdout.split())[:160])
    CPU_SPENT[call] = cpu_seconds() - cpu0
    return view, svg, time.perf_counter() - t0


CPU_SPENT: dict[str, float] = {}     # call → CPU seconds of its last `draw`
FLAGS = ""      # more `%jaxpr` options for every row (`--flags=--kernels`)


def _stored(value) -> int:
    """The characters an output takes in the saved notebook: a PNG's bytes as base64
    (as Jupyter sends and stores them), not the repr of the bytes (4 characters a byte)."""
    return 4 * -(-len(value) // 3) if isinstance(value, bytes) else len(str(value))


def measure(ip, cells: list[str], call: str, blocks: tuple[str, ...],
            stand_ins: dict[str, types.ModuleType]) -> dict:
    from jaxmagic.graph.auto_depth import model_blocks
    from jaxmagic.render.jaxpr import _text_px

    try:
        with standing_in(stand_ins):
            run_cells(ip, cells)
        with phases({}) as spent:
            view, svg, seconds = draw(ip, call)
    except Failed as e:
        return {"error": str(e)}
    bundle = view._repr_mimebundle_()
    size = sum(_stored(v) for v in bundle.values() if v is not None)
    groups = sorted({c.title for c in view.graph.clusters.values()} |
                    {n.title for n in view.graph.nodes.values() if n.kind in ("call", "group")})
    # where the model repeats a block of a class the row names, the picture must draw it:
    # a title prefix of the model's classes alone is met by the outer model closed
    repeated = [t for t in model_blocks(view.folded) if t.startswith(blocks)]
    return {"px": _text_px(svg),
            "nodes": len(view.graph.nodes), "s": seconds, "kb": size / 1024,
            "grouping": view.graph.grouping, "equations": view.num_equations,
            "groups": groups, "model": [g for g in groups if g.startswith(blocks)],
            "repeated": repeated, "block": sorted(set(repeated) & set(groups)),
            "phases": spent, "cpu": CPU_SPENT[call]}


def table(ip, models: list, examples: str, mirrors: Path,
          stand_ins: dict[str, types.ModuleType]) -> bool:
    """Print one row per model (and its groups); whether every row met the targets."""
    print(f"{'graph':<26} {'eqns':>5} {'text px':>7} {'nodes':>5} {'time s':>6} {'KB':>5}"
          f"  {'grouping':<9} model groups")
    ok = True
    for title, setup, call, blocks, notebook in models:
        forget(examples)
        cells = (notebook.sources(mirrors) if notebook else []) + [setup]
        r = measure(ip, cells, call, blocks, stand_ins)
        if "error" in r:
            print(f"{title:<26} failed: {r['error']}")
            ok = False
            continue
        block = not r["repeated"] or bool(r["block"])
        good = r["px"] >= 8 and r["s"] <= 2 and r["kb"] <= 300 and bool(r["model"]) and block
        ok &= good
        print(f"{title:<26} {r['equations']:>5} {r['px']:>7.1f} {r['nodes']:>5} {r['s']:>6.2f}"
              f" {r['kb']:>5.0f}  {r['grouping']:<9} {', '.join(r['model']) or '-'}"
              + ("" if good else "  (misses a target)"))
        if r["repeated"]:
            print(f"{'':<26} repeated blocks drawn: {', '.join(r['block']) or 'none'}"
                  f" (of {', '.join(r['repeated'])[:120]})")
        p = r["phases"]
        print(f"{'':<26} seconds: trace {p.get('trace', 0):.2f}, build {p.get('build', 0):.2f},"
              f" layouts {p.get('layouts', 0):.2f}; CPU {r['cpu']:.2f}")
        print(f"{'':<26} groups: {', '.join(r['groups'])[:160]}")
    return ok


def shell(examples: str):
    """A real IPython shell with jaxmagic loaded and `EXAMPLES` (the extracted examples'
    folder) set, as the rows' cells expect."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    ip = InteractiveShell.instance(config=config)
    ip.run_line_magic("load_ext", "jaxmagic")
    ip.user_ns["EXAMPLES"] = examples
    return ip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirrors", default=os.environ.get("JAXMAGIC_MIRRORS", "/work/.mirror"))
    ap.add_argument("--only", default="", help="draw only rows whose title contains this")
    ap.add_argument("--flags", default="", help="more %%jaxpr options for every row "
                    "(--flags=--kernels: each row's overlay, drawn at default)")
    args = ap.parse_args()
    global FLAGS
    FLAGS = args.flags
    mirrors = Path(args.mirrors)

    def only(rows):
        return [r for r in rows if args.only.lower() in r[0].lower()]
    examples = extract(mirrors)
    if examples is None:
        return 1
    stand_ins = io_stand_ins()
    ip = shell(examples)
    if stand_ins:
        print("empty stand-ins for IO-only modules:", ", ".join(stand_ins))
    ok = table(ip, only(MODELS), examples, mirrors, stand_ins)
    print("\nheld out: not used for tuning (reported, not gated)")
    table(ip, only(HELD_OUT), examples, mirrors, stand_ins)
    print("\ncorpus, tuned (upstream_corpus.py; reported, not gated)")
    table(ip, only(upstream_corpus.TUNED), examples, mirrors, stand_ins)
    print("\ncorpus, held out: not used for tuning (reported, not gated)")
    table(ip, only(upstream_corpus.HELD_OUT), examples, mirrors, stand_ins)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
