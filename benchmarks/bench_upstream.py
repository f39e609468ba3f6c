"""The default `%jaxpr` picture of train steps nobody here wrote, in one run.

Flax's own `examples/gemma` (NNX) and `examples/lm1b` (Linen), at a pinned commit, read
from a local mirror of google/flax and imported unmodified, with small configs and random
data. Each step is built as the example's `train_and_evaluate` builds it (`nnx.jit` /
`jax.jit` with its static arguments) and drawn by `%jaxpr` in a real IPython shell, at
default settings. Per graph: the smallest text on screen at 1100 px (940 px of cell), the
nodes drawn, the seconds the magic took (and how many of them went to tracing, building
the graph and drawing it, Graphviz's layouts included), the SVG's size, how the view is
grouped, and the groups that name the model's own code.

The examples' IO libraries are not needed by a train step: TensorFlow (lm1b's input
pipeline) and clu's TensorBoard writers stand in as empty modules when not installed;
`clu`, `grain` and `sentencepiece` must be (`pip install -e '.[bench]'`).

Targets: text ≥ 8 px, ≤ 2 s, ≤ 300 KB; the model's block class among the groups.

    PYTHONPATH=$PWD python benchmarks/bench_upstream.py [--mirrors /work/.mirror]
"""
from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import tempfile
import time
import types
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

FLAX = ("google+flax", "18f8f311c275d57f46d95e41b15aa97b454754c0")
IO_ONLY = ("tensorflow", "tensorflow_datasets", "tensorflow_text", "clu.metric_writers",
           "clu.periodic_actions", "clu.deterministic_data")

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
                                    sliding_window_size=16, attention_types=base.attention_types[:4])
model = transformer_lib.Transformer(cfg, rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)
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
state = train_state.TrainState.create(apply_fn=None, params=init['params'],
                                      tx=optax.adamw(1e-3))
batch = {'inputs': jnp.ones((2, 16), jnp.int32)}
learning_rate_fn = train.create_learning_rate_schedule(1e-3, 10)
jit_train_step = jax.jit(train.train_step, static_argnums=(2, 3, 4), donate_argnums=0)
"""
LM1B_CALL = "jit_train_step(state, batch, cfg, learning_rate_fn, 0.0, jax.random.key(1))"

MODELS = [("gemma train step (NNX)", GEMMA, GEMMA_CALL, ("Block", "Transformer")),
          ("lm1b train step (Linen)", LM1B, LM1B_CALL, ("encoderdecoderblock", "decoder"))]


def extract(mirrors: Path) -> str | None:
    """The pinned flax examples in a temporary folder, or None without the mirror."""
    repo, commit = FLAX
    git_dir = mirrors / repo / "repo"
    if not git_dir.exists():
        print(f"missing mirror {git_dir}: fetch github:google/flax (search tool `fetch`)")
        return None
    out = tempfile.mkdtemp(prefix="upstream-")
    archive = subprocess.run(["git", f"--git-dir={git_dir}", "archive", commit,
                              "examples/gemma", "examples/lm1b"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", out], input=archive.stdout, check=True)
    return out + "/examples"


class _Absent:
    """Whatever an IO-only module's name is used for at import time (annotations such as
    `tf.data.Dataset`, decorators): nothing, never called by a train step."""

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Absent()

    def __call__(self, *args, **kwargs):
        return _Absent()

    __getitem__ = __or__ = __ror__ = __call__


def _stand_in_attribute(attr: str):
    if attr.startswith("__"):
        raise AttributeError(attr)
    return _Absent()


def forget(examples: str) -> None:
    """Drop the last example's modules: both have a `train`, a `tokenizer`..."""
    for name, module in list(sys.modules.items()):
        if (getattr(module, "__file__", None) or "").startswith(examples):
            del sys.modules[name]
    sys.path[:] = [p for p in sys.path if not p.startswith(examples)]


def io_stand_ins() -> list[str]:
    import flax.training.checkpoints  # noqa: F401 - asks whether TensorFlow exists: first
    made = []
    for name in IO_ONLY:
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - absent, or present but broken: stand in
            module = types.ModuleType(name)
            module.__getattr__ = _stand_in_attribute
            sys.modules[name] = module
            parent, _, child = name.rpartition(".")
            if parent and parent in sys.modules:
                setattr(sys.modules[parent], child, module)
            made.append(name)
    return made


# where the magic's time goes: (phase, module, function), timed where the magic calls them
PHASES = (("trace", "jaxmagic.core.trace", "trace"), ("build", "jaxmagic.core.graph", "build"),
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


def measure(ip, setup: str, call: str, blocks: tuple[str, ...]) -> dict:
    from jaxmagic.render.jaxpr import _text_px

    result = ip.run_cell(setup)
    if not result.success:
        return {"error": repr(result.error_in_exec or result.error_before_exec)[:120]}
    with phases({}) as spent:
        t0 = time.perf_counter()
        view = ip.run_line_magic("jaxpr", f"-o {call}")
        t1 = time.perf_counter()
        svg = view.svg().encode()
        t2 = time.perf_counter()
    seconds, spent["draw"] = t2 - t0, t2 - t1
    bundle = view._repr_mimebundle_()
    size = sum(len(str(v)) for v in bundle.values() if v is not None)
    groups = sorted({c.title for c in view.graph.clusters.values()} |
                    {n.title for n in view.graph.nodes.values() if n.kind in ("call", "group")})
    return {"px": _text_px(svg),
            "nodes": len(view.graph.nodes), "s": seconds, "kb": size / 1024,
            "grouping": view.graph.grouping, "equations": view.num_equations, "phases": spent,
            "groups": groups, "model": [g for g in groups if g.startswith(blocks)]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirrors", default=os.environ.get("JAXMAGIC_MIRRORS", "/work/.mirror"))
    examples = extract(Path(ap.parse_args().mirrors))
    if examples is None:
        return 1
    stand_ins = io_stand_ins()
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    ip = InteractiveShell.instance(config=config)
    ip.run_line_magic("load_ext", "jaxmagic")
    ip.user_ns["EXAMPLES"] = examples
    if stand_ins:
        print("empty stand-ins for IO-only modules:", ", ".join(stand_ins))
    print(f"{'graph':<26} {'eqns':>5} {'text px':>7} {'nodes':>5} {'time s':>6} {'KB':>5}"
          f"  {'grouping':<9} model groups")
    ok = True
    for title, setup, call, blocks in MODELS:
        forget(examples)
        r = measure(ip, setup, call, blocks)
        if "error" in r:
            print(f"{title:<26} failed: {r['error']}")
            ok = False
            continue
        good = r["px"] >= 8 and r["s"] <= 2 and r["kb"] <= 300 and bool(r["model"])
        ok &= good
        print(f"{title:<26} {r['equations']:>5} {r['px']:>7.1f} {r['nodes']:>5} {r['s']:>6.2f}"
              f" {r['kb']:>5.0f}  {r['grouping']:<9} {', '.join(r['model']) or '-'}"
              + ("" if good else "  (misses a target)"))
        p = r["phases"]
        print(f"{'':<26} seconds: trace {p['trace']:.2f}, build {p['build']:.2f}, draw "
              f"{p['draw']:.2f} (of which layouts {p.get('layouts', 0):.2f})")
        print(f"{'':<26} groups: {', '.join(r['groups'])[:160]}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
