"""The corpus for `bench_upstream.py`: public train steps from five libraries' examples.

Each row is upstream code at a pinned commit, read from a local mirror (`/work/.mirror/
<owner>+<name>/repo`, fetched with the search tool's `fetch`) and run unmodified, built as
its example builds it with its default config (learning-rate schedules, `pmap`, meshes,
`jit` arguments); only sizes are shrunk, after the example's own definitions, and data are
random arrays of the shapes the example's loader yields. Code comes in as:

- an example folder on `sys.path`, its modules imported (`Folder`);
- a notebook's code cells run verbatim in order, those that load or plot data skipped
  (`Notebook`, from `upstream_heldout`);
- a script run as a cell without its `if __name__ == '__main__'` lines (`Script`);
- the statements of a function that builds the step (a script's `main`, a notebook's
  `train`) up to its training loop, run as a cell (`Body`): how a step defined inside
  `main` is built exactly as `main` builds it.

The rows were split before any was measured: TUNED may guide the automatic depth,
HELD_OUT must not (reported apart). Per row, the docstring of its setup names the upstream
file, the commit and what was shrunk.
"""
from __future__ import annotations

import ast
import json
import subprocess
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

from upstream_heldout import EQUINOX, FLAX, Notebook

HAIKU = ("google-deepmind+dm-haiku", "f4d858a5cbb29140855d68f81f5fd625e078a5ae")
OPTAX = ("google-deepmind+optax", "2edbcbe2390da13983b92cbef94ac0460ecde1c5")
JAX = ("jax-ml+jax", "cec06d116c05f0d52adfceee3d3b730fdbcb0ce5")

ROOT = tempfile.mkdtemp(prefix="upstream-corpus-")


def _show(mirrors: Path, repo: tuple[str, str], path: str) -> str:
    name, commit = repo
    return subprocess.run(["git", f"--git-dir={mirrors / name / 'repo'}", "show",
                           f"{commit}:{path}"], capture_output=True, check=True,
                          text=True).stdout


# The first cell of every row: the last row's upstream modules and absl flags forgotten
# (two Haiku examples both define `learning_rate`; both jax's and Haiku's are `examples`).
_FORGET = f"""
import sys as _sys
from absl import flags as _flags
for _name, _module in list(_sys.modules.items()):
    if (getattr(_module, '__file__', None) or '').startswith({ROOT!r}):
        del _sys.modules[_name]
_sys.path[:] = [_p for _p in _sys.path if not _p.startswith({ROOT!r})]
_BASE_FLAGS = globals().setdefault('_BASE_FLAGS', frozenset(_flags.FLAGS))
for _name in set(_flags.FLAGS) - _BASE_FLAGS:
    delattr(_flags.FLAGS, _name)
_flags.FLAGS.mark_as_parsed()
"""


@dataclass(frozen=True)
class Folder:
    """A repository folder extracted under ROOT and put first on `sys.path`."""

    repo: tuple[str, str]
    path: str            # extracted
    on_path: str = ""    # what goes on sys.path, relative to the repository ("" = path)

    def sources(self, mirrors: Path) -> list[str]:
        name, commit = self.repo
        out = Path(ROOT) / name
        if not (out / self.path).exists():
            out.mkdir(parents=True, exist_ok=True)
            archive = subprocess.run(["git", f"--git-dir={mirrors / name / 'repo'}", "archive",
                                      commit, self.path], capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
        where = out / (self.on_path or self.path)
        return [f"import sys; sys.path.insert(0, {str(where)!r})"]


@dataclass(frozen=True)
class Script:
    """A script's text run as a cell, less its `if __name__ == '__main__':` block."""

    repo: tuple[str, str]
    path: str

    def sources(self, mirrors: Path) -> list[str]:
        text = _show(mirrors, self.repo, self.path)
        tree = ast.parse(text)
        lines = text.splitlines()
        for node in tree.body:
            if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
                del lines[node.lineno - 1:node.end_lineno]
                break
        return ["\n".join(lines)]


@dataclass(frozen=True)
class Body:
    """The statements of function `func` (in a file, or in a notebook's code cell `cell`),
    from its first up to the one whose text starts with `until`, run as a cell."""

    repo: tuple[str, str]
    path: str
    func: str
    until: str
    cell: int | None = None

    def sources(self, mirrors: Path) -> list[str]:
        text = _show(mirrors, self.repo, self.path)
        if self.cell is not None:
            code = [c for c in json.loads(text)["cells"] if c["cell_type"] == "code"]
            text = "".join(code[self.cell - 1]["source"])
        lines = text.splitlines()
        func = next(n for n in ast.walk(ast.parse(text))
                    if isinstance(n, ast.FunctionDef) and n.name == self.func)

        def first(stmt):
            return min([stmt.lineno] + [d.lineno for d in
                                        getattr(stmt, "decorator_list", [])])
        body = func.body
        start = first(body[0])
        end = next(first(s) for s in body
                   if lines[first(s) - 1].strip().startswith(self.until)) - 1
        return [textwrap.dedent("\n".join(lines[start - 1:end]))]


@dataclass(frozen=True)
class Cells:
    """Parts run in order: `Folder`, `Script`, `Body`, `Notebook` or a literal cell."""

    parts: tuple

    def sources(self, mirrors: Path) -> list[str]:
        out = [_FORGET]
        for part in self.parts:
            out += [part] if isinstance(part, str) else part.sources(mirrors)
        return out


def cells(*parts) -> Cells:
    return Cells(tuple(parts))


# ---- Haiku -------------------------------------------------------------------------------

HAIKU_MNIST = """
\"\"\"dm-haiku examples/mnist.py: LeNet-300-100 MLP (`hk.Sequential` in `net_fn`); `main`'s
statements up to its datasets build the network, `optax.adam(1e-3)` and the `@jax.jit
update` (grad, optimiser, `incremental_update` of avg_params). Shrunk: batch 1000 -> 8.\"\"\"
batch = Batch(image=np.random.RandomState(0).randint(0, 256, (8, 28, 28, 1)).astype(np.uint8),
              label=np.random.RandomState(1).randint(0, NUM_CLASSES, (8,)))
initial_params = network.init(jax.random.PRNGKey(seed=0), batch.image)
initial_opt_state = optimiser.init(initial_params)
state = TrainingState(initial_params, initial_params, initial_opt_state)
"""

HAIKU_LM = """
\"\"\"dm-haiku examples/transformer (train.py, model.py): the `LanguageModel` over a
`Transformer` of pre-LN blocks with dropout, `optax.chain(clip_by_global_norm, adam)`, the
module-level `@jax.jit update`; state from `init` as `main` makes it. Shrunk: 6 -> 4
layers, 8 -> 2 heads, model 128 -> 32, key 32 -> 16, sequence 64 -> 16.\"\"\"
from examples.transformer import dataset, train
import jax, numpy as np
train.NUM_LAYERS, train.NUM_HEADS, train.MODEL_SIZE, train.KEY_SIZE = 4, 2, 32, 16
train.SEQUENCE_LENGTH = 16
tokens = np.random.RandomState(0).randint(
    1, dataset.VOCAB_SIZE, (train.BATCH_SIZE, train.SEQUENCE_LENGTH + 1))
data = dataset.Batch(inputs=tokens[:, :-1], targets=tokens[:, 1:])
state = train.init(jax.random.PRNGKey(train.SEED), data)
"""

HAIKU_RNN = """
\"\"\"dm-haiku examples/rnn/train.py: `hk.DeepRNN` of two `hk.LSTM`s and an `hk.nets.MLP`
unrolled by `hk.dynamic_unroll`, `optax.adam`, the module-level `@jax.jit update`; state as
`main` makes it. Shrunk (its flags): hidden 256 -> 32, sequence 128 -> 16, batch 32 -> 8.\"\"\"
from absl import flags
from examples.rnn import train
flags.FLAGS.hidden_size, flags.FLAGS.sequence_length, flags.FLAGS.train_batch_size = 32, 16, 8
import haiku as hk, jax, numpy as np
tokens = np.random.RandomState(0).randint(0, 128, (17, 8))   # time-major, as dataset.load
train_batch = {'input': tokens[:-1], 'target': tokens[1:]}
params_init, loss_fn = hk.without_apply_rng(hk.transform(train.sequence_loss))
opt_init, _ = train.make_optimizer()
rng = hk.PRNGSequence(train.SEED.value)
initial_params = params_init(next(rng), train_batch)
state = train.TrainingState(params=initial_params, opt_state=opt_init(initial_params))
"""

# ---- Flax Linen --------------------------------------------------------------------------

FLAX_VAE = """
\"\"\"flax examples/vae (train.py, models.py): Linen VAE (Encoder, Decoder, reparameterize),
`train_step` as `train_and_evaluate` calls it (not jitted there: %jaxpr traces it), default
config (adam 1e-3, 20 latents). Shrunk: batch 128 -> 8.\"\"\"
import jax, jax.numpy as jnp, optax
from jax import random
from flax.training import train_state
import models, train
from configs import default
config = default.get_config()
config.batch_size = 8
rng, key = random.split(random.key(0))
init_data = jnp.ones((config.batch_size, 784), jnp.float32)
params = models.model(config.latents).init(key, init_data, rng)['params']
state = train_state.TrainState.create(apply_fn=models.model(config.latents).apply,
                                      params=params, tx=optax.adam(config.learning_rate))
batch = (random.uniform(random.key(1), (config.batch_size, 784)) > 0.5).astype(jnp.float32)
"""

# title, setup, call, prefixes of the model's own group titles, cells run first
TUNED = [
    ("haiku mnist MLP", HAIKU_MNIST, "update(state, batch)", ("net_fn", "sequential", "linear"),
     cells(Script(HAIKU, "examples/mnist.py"),
           Body(HAIKU, "examples/mnist.py", "main", "train_dataset ="))),
    ("haiku transformer LM", HAIKU_LM, "train.update(state, data)",
     ("LanguageModel", "language_model", "Transformer", "transformer", "forward_pass"),
     cells(Folder(HAIKU, "examples", "."))),
    ("haiku rnn LSTM unroll", HAIKU_RNN, "train.update(state, train_batch)",
     ("deep_rnn", "DeepRNN", "lstm", "LSTM", "sequence_loss"),
     cells(Folder(HAIKU, "examples", "."))),
    ("flax vae (Linen)", FLAX_VAE, "train.train_step(state, batch, random.key(2), config.latents)",
     ("VAE", "encoder", "decoder", "Encoder", "Decoder"),
     cells(Folder(FLAX, "examples/vae"))),
]

HELD_OUT = []
