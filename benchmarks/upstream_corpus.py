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

With `bench_upstream`'s own 6 rows (gemma, lm1b tuned; imagenet, wmt, mnist_tutorial, ViT
held out) the corpus has 39 rows from six sources (Flax Linen and NNX, Haiku, Equinox,
Optax's examples, JAX's examples), 20 of them held out:

- tuned (17): Haiku mnist, transformer LM, rnn LSTM; Flax vae, sst2, nlp_seq (pmap, adamw
  with schedule), mnist (NNX), ppo; Equinox mnist, train_rnn, stateful, DCGAN
  discriminator and generator steps; Optax flax_example, lookahead_mnist; JAX
  mnist_classifier (stax), spmd_mnist (Explicit mesh).
- held out (16): Haiku vae, imagenet ResNet50 (pmap, schedule); Flax seq2seq; Equinox
  score-based diffusion; Optax nanolm; JAX mnist_vae (a whole epoch in `fori_loop`);
  and ten added after the automatic depth was last tuned, measured before any change:
  Optax adversarial_training (a jitted PGD attack loop in the step); Flax NNX docs'
  minigpt (global mesh, sharded parameters, `nnx.jit(donate_argnums=(0, 1, 3))`), gspmd
  guide (a plain `jax.jit` over NNX objects on an Auto mesh), digits diffusion U-Net and
  machine translation; Equinox parallelism (`filter_jit(donate="all")` on a mesh) and
  frozen_layer (`eqx.partition` by a filter spec); Haiku's mnist_gan (a method jitted in
  its class), vqvae_example and haiku_lstms. Two were tried and left out, each failing
  on its own code: Optax's cifar10_resnet assigns a module to an NNX attribute it first
  set to `None` (Flax 0.12.12 refuses), Equinox's bert annotates with
  `jax.random.PRNGKey | None` (a function: a TypeError before Python 3.14); the Flax
  vit_training notebook is not in the mirror.

Where a step needs a stand-in beyond `bench_upstream.IO_ONLY` (matplotlib, diffrax's
sampler, flax's TensorBoard writer, gymnasium, dm-tree's `flatten_with_path`) or departs
from upstream (the DCGAN's optimizer states), its docstring says so.

    PYTHONPATH=$PWD python benchmarks/bench_upstream.py --only haiku
"""
from __future__ import annotations

import ast
import json
import subprocess
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from upstream_heldout import EQUINOX, FLAX, Notebook, stand_in_attribute  # noqa: F401

HAIKU = ("google-deepmind+dm-haiku", "f4d858a5cbb29140855d68f81f5fd625e078a5ae")
OPTAX = ("google-deepmind+optax", "2edbcbe2390da13983b92cbef94ac0460ecde1c5")
JAX = ("jax-ml+jax", "cec06d116c05f0d52adfceee3d3b730fdbcb0ce5")

ROOT = tempfile.mkdtemp(prefix="upstream-corpus-")
UPSTREAM = str(Path(tempfile.gettempdir()) / "upstream-")   # bench_upstream's examples too


def _show(mirrors: Path, repo: tuple[str, str], path: str) -> str:
    name, commit = repo
    return subprocess.run(["git", f"--git-dir={mirrors / name / 'repo'}", "show",
                           f"{commit}:{path}"], capture_output=True, check=True,
                          text=True).stdout


def source_text(mirrors: Path, repo: tuple[str, str], path: str, cell: int | None) -> str:
    """A file at its pinned commit, or its notebook's code cell `cell` (from 1)."""
    text = _show(mirrors, repo, path)
    if cell is None:
        return text
    code = [c for c in json.loads(text)["cells"] if c["cell_type"] == "code"]
    return "".join(code[cell - 1]["source"])


# The first cell of every row: the last rows' upstream modules and absl flags forgotten
# (two Haiku examples both define `learning_rate`; both jax's and Haiku's are `examples`;
# Flax's `configs` folders, having no `__init__.py`, are namespace packages with no file).
_FORGET = f"""
import sys as _sys
from absl import flags as _flags
for _name, _module in list(_sys.modules.items()):
    _where = [getattr(_module, '__file__', None) or ''] + list(getattr(_module, '__path__', []))
    if any(str(_w).startswith({UPSTREAM!r}) for _w in _where):   # namespace `configs` too
        del _sys.modules[_name]
_sys.path[:] = [_p for _p in _sys.path if not _p.startswith({ROOT!r})]
_BASE_FLAGS = globals().setdefault('_BASE_FLAGS', frozenset(_flags.FLAGS))
for _name in set(_flags.FLAGS) - _BASE_FLAGS:
    delattr(_flags.FLAGS, _name)
_flags.FLAGS.mark_as_parsed()
import jax as _jax
_jax.set_mesh(None)   # the spmd row sets its mesh globally, as `with jax.set_mesh` would
"""


@dataclass(frozen=True)
class Folder:
    """A repository folder extracted under ROOT (one folder per commit: rows may pin one
    repository at two) and put first on `sys.path`."""

    repo: tuple[str, str]
    path: str            # extracted
    on_path: str = ""    # what goes on sys.path, relative to the repository ("" = path)

    def root(self) -> Path:
        name, commit = self.repo
        return Path(ROOT) / f"{name}@{commit[:12]}"

    def sources(self, mirrors: Path) -> list[str]:
        name, commit = self.repo
        out = self.root()
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
    """The statements of function `func` (in a file, or in a notebook's code cell `cell`;
    func None: the cell's or file's own; "__main__": its `if __name__ == '__main__':`
    block), from the first up to the one whose text starts with `until`, run as a cell.
    A cell's IPython magic lines (`%%time`) are blanked."""

    repo: tuple[str, str]
    path: str
    func: str | None
    until: str
    cell: int | None = None

    def sources(self, mirrors: Path) -> list[str]:
        text = source_text(mirrors, self.repo, self.path, self.cell)
        lines = ["" if line.lstrip().startswith("%") else line for line in text.splitlines()]
        tree = ast.parse("\n".join(lines))
        if self.func == "__main__":
            func = next(n for n in tree.body if isinstance(n, ast.If)
                        and "__name__" in ast.unparse(n.test))
        else:
            func = tree if self.func is None else next(
                n for n in ast.walk(tree)
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
class Without:
    """A part's cells less the lines that contain `text`: a setting only a fresh kernel
    takes (`jax.config.update("jax_num_cpu_devices", 8)`: JAX refuses it once a backend
    runs, and the bench's `XLA_FLAGS` already give 8 CPU devices), or a line only a real
    plotting library or TensorFlow runs (`ggplot(df) + aes(...)`, `tf.__version__`)."""

    part: Any
    text: str

    def sources(self, mirrors: Path) -> list[str]:
        return ["\n".join(line for line in cell.splitlines() if self.text not in line)
                for cell in self.part.sources(mirrors)]


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


def stand_in(*names: str) -> str:
    """A cell that makes each module `name` an empty stand-in unless it imports; for the
    few a notebook imports that `bench_upstream.IO_ONLY` does not cover (matplotlib,
    diffrax's samplers, flax's TensorBoard writer) and submodules of the stand-ins
    (`tensorflow.compat.v2`)."""
    return f"""
import importlib as _il, sys as _sys, types as _types, upstream_corpus as _uc
for _name in {names!r}:
    try:
        _il.import_module(_name)
    except Exception:
        _m = _types.ModuleType(_name)
        _m.__getattr__ = lambda attr: _uc.stand_in_attribute(attr)
        _sys.modules[_name] = _m
        _parent, _, _child = _name.rpartition('.')
        if _parent in _sys.modules:
            setattr(_sys.modules[_parent], _child, _m)
"""


HAIKU_NB = "examples/{}.ipynb".format

HAIKU_GAN_DATA = """
\"\"\"Cell 3 loads MNIST with tfds: its `make_dataset` stood in by an iterator of random
images of its loader's shape, (batch, 28, 28, 1) floats in [-1, 1]. Shrunk: batch 64 -> 8
(cell 5 asks for 64; the stand-in yields 8).\"\"\"
def make_dataset(batch_size, seed=1):
  _rs = np.random.RandomState(seed)
  while True:
    yield _rs.uniform(-1.0, 1.0, (min(batch_size, 8), 28, 28, 1)).astype(np.float32)
"""
HAIKU_GAN = """
\"\"\"dm-haiku examples/mnist_gan.ipynb: `Generator` (Linear, 2 Conv2DTranspose) and
`Discriminator` (5 Conv2D, Flatten, Linear) under `hk.transform`, the `GAN` class (cell 4)
whose `update` is a method jitted with `static_argnums=0` (self) that steps both adams;
cell 5 up to its loop (`GAN(num_latents=20)`, the jitted `initial_state`); one batch as
the loop takes it. matplotlib and seaborn (plots only) stand in.\"\"\"
batch = next(dataset)
"""

HAIKU_VQVAE_DATA = """
\"\"\"Cells 3 and 4 load CIFAR-10 with tfds and split it: random uint8 images of its shape
stand in for the three splits (cell 5 computes the data variance from the training split
as upstream). Shrunk: 40000 / 10000 / 10000 -> 64 / 16 / 16 images.\"\"\"
_images = np.random.RandomState(0).randint(0, 256, (96, 32, 32, 3)).astype(np.uint8)
train_data_dict = {'image': _images[:64]}
valid_data_dict = {'image': _images[64:80]}
test_data_dict = {'image': _images[80:]}
"""
HAIKU_VQVAE_SIZES = """
\"\"\"Cell 7's tf.data pipelines stand in: `train_dataset` yields batches as cell 7's
`cast_and_normalise_images` makes them, {'image': float32 in [-0.5, 0.5]}. Shrunk, after
cell 7's hyperparameters (`forward` reads them when traced): batch 32 -> 8, hiddens
128 -> 32, residual hiddens 32 -> 8, embedding 64 -> 16, 512 -> 64 codes.\"\"\"
batch_size, num_hiddens, num_residual_hiddens = 8, 32, 8
embedding_dim, num_embeddings = 16, 64
def _cifar_batches(rs=np.random.RandomState(1)):
  while True:
    yield {'image': (rs.randint(0, 256, (batch_size, image_size, image_size, 3)
                                ).astype(np.float32) / 255.0) - 0.5}
train_dataset = _cifar_batches()
"""
HAIKU_VQVAE = """
\"\"\"dm-haiku examples/vqvae_example.ipynb: `VQVAEModel` (`Encoder`, `Decoder`, each with a
`ResidualStack` of 2 layers; `hk.nets.VectorQuantizerEMA`) under `hk.transform_with_state`
(cells 6, 7), `optax.adam(3e-4)`, the `@jax.jit train_step` (cell 7); cell 8 up to its loop
(`forward.init`, `optimizer.init`); one batch as the loop takes it. TensorFlow and
matplotlib stand in; cell 2's line that prints `tf.__version__` is left out.\"\"\"
data = next(train_dataset_iter)
"""

HAIKU_LSTMS = """
\"\"\"dm-haiku examples/haiku_lstms.ipynb: `unroll_net` (an `hk.LSTM(32)` under
`hk.dynamic_unroll`, `hk.BatchApply(hk.Linear(1))`) under `hk.transform` (cell 6),
`train_model`'s statements up to its loop (`optax.adam(1e-3)`, the `@jax.jit loss` and
`@jax.jit update`, params from `model.init`). Its data are the notebook's own sine waves
(cells 4, 5; cell 5's pandas/plotnine plot lines left out, pandas and plotnine stand in);
one batch as the loop's first step takes it. Nothing shrunk (batch 8, 64 steps). Cell 3
runs `warnings.filterwarnings('ignore')`, as upstream: warnings stay off for later rows.\"\"\"
step = 0
x, y = next(train_ds)
"""


# ---- Flax NNX docs -------------------------------------------------------------------------

MINIGPT_NB = "docs_nnx/examples/minigpt.ipynb"
MINIGPT_SIZES = """
\"\"\"Cell 5 makes the GPT-2 tokenizer (tiktoken, not installed: it stands in, so the
vocabulary is set here). Shrunk, after cell 9's hyperparameters: vocabulary 50,257 -> 256,
maxlen 256 -> 32, embed 256 -> 32, 8 -> 2 heads, feed-forward 256 -> 64, batch 144 -> 8.\"\"\"
vocab_size, maxlen, embed_dim, num_heads, feed_forward_dim, batch_size = 256, 32, 32, 2, 64, 8
"""
MINIGPT = """
\"\"\"flax docs_nnx/examples/minigpt.ipynb: NNX `MiniGPT` (4 `TransformerBlock`s in an
`nnx.Sequential`, parameters sharded by `out_sharding` metadata) on the global
`('batch', 'model')` mesh of cell 4, `nnx.Optimizer(adam)` and `nnx.MultiMetric`, the
`@nnx.jit(donate_argnums=(0, 1, 3)) train_step` (cell 11); one batch of random tokens made
and placed as cell 15 makes and places it.\"\"\"
_tokens = jax.random.randint(jax.random.key(1), (batch_size, maxlen), 0, vocab_size)
input_batch = jnp.stack(list(_tokens.T)).T
target_batch = prep_target_batch(input_batch)
batch = jax.device_put((input_batch, target_batch), P("batch", None))
"""


GSPMD_NB = "docs_nnx/guides/flax_gspmd.ipynb"
GSPMD_MESH = """
\"\"\"Cell 2 as its comment says ("an auto-mode mesh"): JAX 0.12's `jax.make_mesh` makes
Explicit axes unless told (it made Auto ones when the guide was written), and with
Explicit axes cell 10's `jnp.dot` of two 'model'-sharded operands fails outside `%jaxpr`
too (ShardingTypeError: contracting dimensions sharded). The one departure.\"\"\"
auto_mesh = jax.make_mesh((2, 4), ('data', 'model'), axis_types=(AxisType.Auto,) * 2)
"""
GSPMD = """
\"\"\"flax docs_nnx/guides/flax_gspmd.ipynb: NNX `MultiDotReluDot` (2 `DotReluDot` layers
made by `nnx.vmap`, kernels sharded by `nnx.with_partitioning` and `sharding` metadata,
run by `jax.lax.scan`; cell 9) on the auto `('data', 'model')` (2, 4) mesh of cell 2,
`nnx.Optimizer(adam)` and the plain `@jax.jit train_step` of cell 10 (which also runs its
5-step loop); the mesh set as its `with jax.set_mesh(auto_mesh)` sets it. Cells 1-10 run
as they are but cell 2 (Auto axes: see GSPMD_MESH) and cell 5, a one-line demo that fails
upstream too (`jnp.ones(4,4)`: 4 is no dtype); cell 1's `jax_num_cpu_devices` is skipped
by its own guard once a backend runs (the bench's XLA_FLAGS give 8 CPU devices). Nothing
shrunk (depth 1024, batch 8). Note: a plain `jax.jit` does not write back what
`optimizer.update` changes; the guide's optimizer state stays at step 0 upstream too.\"\"\"
jax.set_mesh(auto_mesh)
"""

DIGITS_NB = "docs_nnx/examples/digits_diffusion_model.ipynb"
DIGITS_DATA = """
\"\"\"Cell 2 loads scikit-learn's bundled digits (sklearn is not installed: it stands in):
the 177 images of the digit 2, scaled to [-1, 1], as one (177, 8, 8, 1) array that every
step takes whole; random values of that shape and range stand in. Nothing shrunk.\"\"\"
images = jax.random.uniform(jax.random.key(1), (177, 8, 8, 1), minval=-1.0, maxval=1.0)
data_shape = images.shape[1:]
"""
DIGITS_MODEL = """
\"\"\"Cell 6 as it is, the U-Net's width shrunk: features 64 -> 16 (time embedding 128 kept:
`_pos_encoding` is called with 128).\"\"\"
rngs = nnx.Rngs(0)
model = UNet(1, 1, 16, rngs=rngs)
"""
DIGITS = """
\"\"\"flax docs_nnx/examples/digits_diffusion_model.ipynb: NNX `UNet` (8 `ResBlock`s of
Conv/LayerNorm, 3 `nnx.MultiHeadAttention`, sinusoidal time embedding; cells 4, 5) trained
by flow matching (`loss_fn` draws its noise and times from the `nnx.Rngs` passed in, cell
9); `nnx.ModelAndOptimizer` of `optax.chain(clip_by_global_norm, adamw)` with its
warmup-cosine `join_schedules` (cells 7, 8), the `@nnx.jit train_step` of cell 10.
diffrax (its sampler only) and matplotlib stand in.\"\"\"
"""

MT_NB = "docs_nnx/examples/machine_translation.ipynb"
MT_SIZES = """
\"\"\"Cell 7 makes tiktoken's cl100k_base tokenizer (tiktoken, not installed: it stands in,
so the vocabulary is set here). Shrunk, after cell 23's hyperparameters: vocabulary
100,277 -> 256, embed 256 -> 32, latent 2048 -> 64, 8 -> 2 heads; batch 512 (set by cell
18, whose grain loaders are skipped) -> 8. Sequence length 20 kept.\"\"\"
vocab_size, embed_dim, latent_dim, num_heads, batch_size = 256, 32, 64, 2, 8
"""
MT = """
\"\"\"flax docs_nnx/examples/machine_translation.ipynb: NNX `TransformerModel` (a shared
`PositionalEmbedding`, one `TransformerEncoder`, one `TransformerDecoder` with causal
self-attention and cross-attention, dropout 0.5; cells 14-17), `nnx.ModelAndOptimizer`
with `optax.adamw` and the `nnx.view(model, deterministic=False)` train model (cell 24),
the `@nnx.jit train_step` (cell 20) called as cell 25 calls it; one batch as cell 18's
grain loader yields it: a dict of int64 numpy token arrays (encoder 20, decoder and
targets 19 tokens, 0 padding).\"\"\"
_r = np.random.RandomState(0)
batch = {"encoder_inputs": _r.randint(0, vocab_size, (batch_size, sequence_length)),
         "decoder_inputs": _r.randint(0, vocab_size, (batch_size, sequence_length - 1)),
         "target_output": _r.randint(0, vocab_size, (batch_size, sequence_length - 1))}
"""


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

HAIKU_VAE = """
\"\"\"dm-haiku examples/vae.py: `VariationalAutoEncoder` (MLP `Encoder`, `Decoder`) in
`main`'s `@hk.transform model`, its `@jax.jit loss_fn` and `update` (adam 1e-3), built by
`main`'s statements up to its datasets; state as `main` makes it. Shrunk: batch 128 -> 8.
The binarised MNIST batch: (8, 28, 28, 1) of 0/1 floats.\"\"\"
batch = Batch(image=(np.random.RandomState(0).rand(8, 28, 28, 1) > 0.5).astype(np.float32))
initial_rng_key = jax.random.PRNGKey(config.seed)
initial_params = model.init(initial_rng_key, batch.image)
initial_opt_state = optimizer.init(initial_params)
state = TrainingState(initial_params, initial_opt_state, initial_rng_key)
"""

HAIKU_TREE = """
\"\"\"dm-tree (`import tree`, a compiled package, not installed here): its `flatten_with_path`
for the nested dicts of Haiku params, the one call a train step makes (the l2 term).\"\"\"
import sys as _sys, types as _types, jax as _jax
if 'tree' not in _sys.modules:
    try:
        import tree as _tree
    except ImportError:
        _tree = _types.ModuleType('tree')
        _tree.flatten_with_path = lambda s: [
            (tuple(k.key for k in path), leaf)
            for path, leaf in _jax.tree_util.tree_flatten_with_path(s)[0]]
        _sys.modules['tree'] = _tree
"""
HAIKU_IMAGENET = """
\"\"\"dm-haiku examples/imagenet/train.py: `hk.nets.ResNet50` (v2, BatchNorm) under
`hk.transform_with_state`, the module-level `jax.pmap(axis_name='i', donate_argnums=(0,))
train_step` with its `lr_schedule` (warmup, cosine), `optax.sgd` nesterov, label smoothing,
l2, `jmp` policies and loss scale; `main`'s state (`set_policy`, `jax.pmap(initial_state)`).
Shrunk: batch 128 -> 2 per device, images 224 -> 32 px.\"\"\"
from absl import flags
from examples.imagenet import dataset, train
import haiku as hk, jax, jax.numpy as jnp
FLAGS = flags.FLAGS
FLAGS.train_device_batch_size = 2
mp_policy = train.get_policy()
bn_policy = train.get_bn_policy().with_output_dtype(mp_policy.compute_dtype)
hk.mixed_precision.set_policy(hk.BatchNorm, bn_policy)
hk.mixed_precision.set_policy(hk.nets.ResNet50, mp_policy)
local_device_count = jax.local_device_count()
rng = jax.random.PRNGKey(FLAGS.train_init_random_seed)
rng = jnp.broadcast_to(rng, (local_device_count,) + rng.shape)
batch = {'images': jax.random.normal(jax.random.PRNGKey(1),
                                     (local_device_count, 2, 32, 32, 3)),
         'labels': jax.random.randint(jax.random.PRNGKey(2), (local_device_count, 2), 0,
                                      1000).astype(jnp.uint32)}
train_state = jax.pmap(train.initial_state)(rng, batch)
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


# ---- Equinox -----------------------------------------------------------------------------

EQX_NB = "docs/examples/{}.ipynb".format

EQX_FROZEN_ARGS = """
\"\"\"`main`'s keyword defaults, as its statements (run below as a cell) read them. Shrunk:
dataset 10000 -> 512, batch 256 -> 32.\"\"\"
dataset_size, batch_size, learning_rate, steps, width_size, depth, seed = \\
    512, 32, 3e-3, 1000, 8, 1, 5678
"""
EQX_FROZEN = """
\"\"\"equinox docs/examples/frozen_layer.ipynb: an `eqx.nn.MLP` whose last layer alone
trains (a `filter_spec` made with `eqx.tree_at`), the `@eqx.filter_jit make_step` that
partitions it, `optax.sgd` (cell 3's `main` up to its loop); a batch from its loader.\"\"\"
x, y = next(data_iter)
"""

EQX_PARALLEL = """
\"\"\"equinox docs/examples/parallelism.ipynb: an `eqx.nn.MLP` (depth 1, width 32), its
`@eqx.filter_jit(donate="all") train_step` on a `batch` mesh of all (8 host) devices
(cells 1, 2); model, optimizer state and one batch sharded as cell 3 shards them.
Nothing shrunk (its batch is 16).\"\"\"
model, opt_state = eqx.filter_shard((model, opt_state), model_sharding)
x, y = next(train_dataloader((xs, ys), batch_size))
x, y = eqx.filter_shard((x, y), data_sharding)
"""

EQX_MNIST_DATA = """
\"\"\"Cell 4's batch from the torch loader, as numpy: (64, 1, 28, 28) and (64,).\"\"\"
dummy_x = np.asarray(jax.random.normal(jax.random.PRNGKey(1), (BATCH_SIZE, 1, 28, 28)))
dummy_y = np.asarray(jax.random.randint(jax.random.PRNGKey(2), (BATCH_SIZE,), 0, 10))
"""
EQX_MNIST = """
\"\"\"equinox docs/examples/mnist.ipynb: the `CNN` (cell 5), loss (cell 7), `optax.adamw`
(cell 14) and `train`'s statements up to its loop (cell 15: opt_state, `@eqx.filter_jit
make_step`). Nothing shrunk (batch 64, as the notebook).\"\"\"
x, y = dummy_x, dummy_y
"""

EQX_RNN_ARGS = """
\"\"\"equinox docs/examples/train_rnn.ipynb: `main`'s defaults, dataset 10000 -> 64.\"\"\"
dataset_size, batch_size, learning_rate, steps = 64, 32, 3e-3, 200
hidden_size, depth, seed = 16, 1, 5678
"""
EQX_RNN = """
\"\"\"equinox docs/examples/train_rnn.ipynb: `RNN` (a `GRUCell` under `lax.scan`, cell 3),
`main`'s statements up to its loop (cell 4: `@eqx.filter_value_and_grad compute_loss`,
`@eqx.filter_jit make_step`, adam); a batch from its dataloader.\"\"\"
x, y = next(iter_data)
"""

EQX_STATEFUL = """
\"\"\"equinox docs/examples/stateful.ipynb: `Model` (BatchNorm, SpectralNorm, Linear; cell 2),
`make_step` (cell 3), cell 4 up to its loop (`make_with_state`, adam). Nothing shrunk.\"\"\"
"""

EQX_GAN = """
\"\"\"equinox docs/examples/deep_convolutional_gan.ipynb: `Generator`, `Discriminator`
(ConvTranspose2d/Conv2d, BatchNorm, PReLU; cells 5, 6), the steps (cell 7), cell 8 up to
`train(...)` (models, `eqx.nn.State`, two adams). Shrunk: batch 32 -> 4 (set after cell 2).
A batch from the torch loader: (4, 1, 64, 64). One departure: the notebook's
`optimizer.init(eqx.filter(model, eqx.is_array))` takes BatchNorm's boolean
`ema_first_time_index` for a parameter, and with optax 0.2.8 the step then fails outside
`%jaxpr` too (`tree_cast_like`: pytree structure error, None vs tracer); the states are
made again with `eqx.is_inexact_array`, as the other Equinox notebooks make theirs.\"\"\"
generator_opt_state = generator_optimizer.init(eqx.filter(generator, eqx.is_inexact_array))
discriminator_opt_state = discriminator_optimizer.init(
    eqx.filter(discriminator, eqx.is_inexact_array))
import numpy as np
real_batch = np.asarray(jr.normal(jr.PRNGKey(1), (batch_size, channels, height, width)))
"""
EQX_GAN_BATCH = "batch_size = 4  # shrunk from cell 2's 32"

EQX_DIFFUSION_DATA = """
\"\"\"Cell 4 downloads MNIST: its `mnist()` stood in by random uint8 of its shape, 64
images; the `dataloader` as cell 4 defines it is not needed by the step.\"\"\"
def mnist():
    return jr.randint(jr.PRNGKey(0), (64, 1, 28, 28), 0, 256).astype(jnp.uint8)
patch_size, hidden_size, mix_patch_size, mix_hidden_size, num_blocks, t1 = 4, 32, 64, 64, 4, 10.0
num_steps, lr, batch_size, print_every = 1_000_000, 3e-4, 8, 10_000
dt0, sample_size, seed = 0.1, 10, 5678
"""
EQX_DIFFUSION = """
\"\"\"equinox docs/examples/score_based_diffusion.ipynb: `Mixer2d` of `MixerBlock`s (cell 2),
the losses (cell 3), `make_step` and `main`'s statements up to its loop (cell 5: model,
`int_beta`, `weight`, `optax.adabelief`). Shrunk (`main`'s defaults): hidden 64 -> 32,
mix sizes 512 -> 64, batch 256 -> 8. diffrax (its sampler only) and matplotlib stand in.\"\"\"
batch = data[:batch_size]
"""

SST2 = """
\"\"\"flax examples/sst2 (train.py, models.py): Linen `TextClassifier` (Embedder with word
dropout, bidirectional LSTM `SimpleBiLSTM`, `AttentionClassifier` head) and `train_step`
under `jax.jit` as `train_and_evaluate` builds it; default config (sgd with momentum and
`add_decayed_weights`). Shrunk: embedding 300 -> 32, hidden 256 -> 32, vocab 64, batch
64 -> 8, length 60 -> 16.\"\"\"
import jax, jax.numpy as jnp
import train
from configs import default
config = default.get_config()
config.embedding_size, config.hidden_size, config.batch_size = 32, 32, 8
config.vocab_size = 64   # set from the vocabulary by train_and_evaluate
train_step_fn = jax.jit(train.train_step)
rng = jax.random.key(config.seed)
model = train.model_from_config(config)
state = train.create_train_state(rng, config, model)
batch = {'token_ids': jax.random.randint(jax.random.key(1), (8, 16), 2, 64),
         'length': jnp.full((8,), 16, jnp.int32),
         'label': jax.random.randint(jax.random.key(2), (8,), 0, 2).astype(jnp.float32)}
rngs = {'dropout': jax.random.key(3)}
"""

NLP_SEQ = """
\"\"\"flax examples/nlp_seq (train.py, models.py): Linen encoder `Transformer` for POS
tagging; `main`'s state (jitted init, `create_learning_rate_scheduler`, `optax.adamw` with
the schedule, replicated) and `jax.pmap(partial(train_step, model=..., learning_rate_fn=
...), axis_name='batch', donate_argnums=(0,))`. Shrunk: emb/qkv 512 -> 32, mlp 2048 -> 64,
8 -> 2 heads, 6 -> 2 layers, max_length 256 -> 16, batch 64 -> 2 per device; vocabularies
of 64 and 16 (read from the treebank by `main`).\"\"\"
import functools
import jax, jax.numpy as jnp, optax
from jax import random
from flax import jax_utils
from flax.training import common_utils, train_state
import models, train
config = models.TransformerConfig(vocab_size=64, output_vocab_size=16, max_len=16,
                                  emb_dim=32, qkv_dim=32, mlp_dim=64, num_heads=2,
                                  num_layers=2)
model = models.Transformer(config)
rng, init_rng = random.split(random.key(0))
@jax.jit
def initialize_variables(init_rng):
  init_batch = jnp.ones((config.max_len, 1), jnp.float32)
  return model.init(init_rng, inputs=init_batch, train=False)
init_variables = initialize_variables(init_rng)
learning_rate_fn = train.create_learning_rate_scheduler(base_learning_rate=0.05)
optimizer = optax.adamw(learning_rate_fn, b1=0.9, b2=0.98, eps=1e-9, weight_decay=1e-1)
state = train_state.TrainState.create(apply_fn=model.apply, params=init_variables['params'],
                                      tx=optimizer)
state = jax_utils.replicate(state)
p_train_step = jax.pmap(functools.partial(train.train_step, model=model,
                                          learning_rate_fn=learning_rate_fn),
                        axis_name='batch', donate_argnums=(0,))
n = jax.local_device_count()
batch = common_utils.shard({
    'inputs': jax.random.randint(random.key(1), (n * 2, 16), 1, 64),
    'targets': jax.random.randint(random.key(2), (n * 2, 16), 1, 16)})
dropout_rngs = random.split(rng, n)
"""

SEQ2SEQ = """
\"\"\"flax examples/seq2seq (train.py, models.py): Linen `Seq2seq` (LSTM `Encoder`, `Decoder`
with teacher forcing, `nn.scan`ned cells) and the module-level `@jax.jit train_step`, state
from `get_train_state` and batches from `CTable.get_batch` (in-memory arithmetic, no IO),
as `train_and_evaluate` makes them. Shrunk (its flags): hidden 512 -> 32, batch 128 -> 8.\"\"\"
from absl import flags
import jax
import train
flags.FLAGS.hidden_size, flags.FLAGS.batch_size = 32, 8
ctable = train.CTable('0123456789+= ', flags.FLAGS.max_len_query_digit)
rng = jax.random.key(0)
state = train.get_train_state(rng, ctable)
batch = ctable.get_batch(flags.FLAGS.batch_size)
"""

FLAX_MNIST = """
\"\"\"flax examples/mnist/train.py (NNX): `CNN` (Conv, BatchNorm, Dropout, avg_pool, Linear),
the module-level `@nnx.jit train_step` (nnx.value_and_grad, optimizer, metrics), model,
`nnx.Optimizer(optax.sgd(lr, momentum))`, `MultiMetric` and `Rngs` as `train_and_evaluate`
makes them, `model.train()`; default config. Shrunk: batch 128 -> 8.\"\"\"
import jax, optax
from flax import nnx
import train
from configs import default
config = default.get_config()
model = train.CNN(rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.sgd(config.learning_rate, config.momentum),
                          wrt=nnx.Param)
metrics = nnx.MultiMetric(accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average('loss'))
rngs = nnx.Rngs(0)
model.train()
batch = {'image': jax.random.uniform(jax.random.key(1), (8, 28, 28, 1)),
         'label': jax.random.randint(jax.random.key(2), (8,), 0, 10)}
"""

FLAX_PPO = """
\"\"\"flax examples/ppo (ppo_lib.py, models.py): Linen `ActorCritic` (Atari conv torso,
policy and value heads) for Pong's 6 actions, `create_train_state` with the default
`decaying_lr_and_clip_param` (an `optax.linear_schedule` learning rate), and
`train_step` (`jax.jit`, static batch size: a Python loop over the epoch's minibatches that
adds each loss to `0.0`) called as `train` calls it. Shrunk: 8 -> 1 agent, 128 -> 16 actor
steps, batch 256 -> 4 (4 minibatches). gymnasium, ale_py and cv2 (the simulators) stand
in.\"\"\"
import jax, jax.numpy as jnp, numpy as np
import models, ppo_lib
from configs import default
config = default.get_config()
config.num_agents, config.actor_steps, config.batch_size = 1, 16, 4
model = models.ActorCritic(num_outputs=6)
loop_steps = config.total_frames // (config.num_agents * config.actor_steps)
iterations_per_step = config.num_agents * config.actor_steps // config.batch_size
initial_params = ppo_lib.get_initial_params(jax.random.key(0), model)
state = ppo_lib.create_train_state(initial_params, model, config,
                                   loop_steps * config.num_epochs * iterations_per_step)
n = config.num_agents * config.actor_steps
trajectories = (np.random.RandomState(0).rand(n, 84, 84, 4).astype(np.float32),
                np.random.RandomState(1).randint(0, 6, (n,)),
                np.log(np.full((n,), 1 / 6, np.float32)),
                np.random.RandomState(2).randn(n).astype(np.float32),
                np.random.RandomState(3).randn(n).astype(np.float32))
clip_param = config.clip_param * 1.0
"""

# ---- Optax -------------------------------------------------------------------------------

OPTAX_NB = "examples/{}.ipynb".format

OPTAX_FLAX = """
\"\"\"optax examples/flax_example.ipynb: an `nnx.Linear` regression; the notebook never jits a
whole step: its loop calls `loss_grad_fn(model)` (`jax.value_and_grad` of the jitted `mse`,
cell 6) and then `optimizer.update` (scale_by_adam, scale; cells 7, 8). The row draws the
gradient call. Nothing shrunk.\"\"\"
"""

OPTAX_LOOKAHEAD_DATA = """
\"\"\"Cell 3 reads MNIST with tfds and grain: its shapes (28, 28, 1) and 10 classes, and one
batch of (images / 255, labels) for each loader. Shrunk: batch 256 -> 8.\"\"\"
BATCH_SIZE = 8
IMG_SIZE, NUM_CLASSES = (28, 28, 1), 10
_batch = (jax.random.uniform(jax.random.PRNGKey(1), (BATCH_SIZE,) + IMG_SIZE),
          jax.random.randint(jax.random.PRNGKey(2), (BATCH_SIZE,), 0, NUM_CLASSES))
train_loader_batched = test_loader_batched = [_batch]
"""
OPTAX_LOOKAHEAD = """
\"\"\"optax examples/lookahead_mnist.ipynb: NNX `CNN` (cell 4), `predict` / `loss_accuracy`
(cell 5), `optax.lookahead(adam)` on `LookaheadParams` (cell 6), cell 7 up to its epoch
loop (the `@jax.jit train_step`).\"\"\"
train_batch = _batch
"""

NANOLM_DATA = """
\"\"\"Cell 3 reads tiny_shakespeare with tfds: 2000 random characters of its 65-letter
alphabet stand in for the text. Shrunk (after cell 2): batch 128 -> 8, block 64 -> 16, 6 -> 4
layers, embed 256 -> 32, 8 -> 2 heads of 16.\"\"\"
import random as _random
_alphabet = "\\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_random.seed(0)
text_train = "".join(_random.choice(_alphabet) for _ in range(2000))
text_validation = text_train[:500]
BATCH_SIZE, BLOCK_SIZE, NUM_LAYERS, EMBED_SIZE, NUM_HEADS, HEAD_SIZE = 8, 16, 4, 32, 2, 16
"""
NANOLM = """
\"\"\"optax examples/nanolm.ipynb: Linen `NanoLM` (a decoder-only transformer written inline
with `nn.compact`, cell 9), its loss (cell 10), `optax.adamw` (cell 13) and cell 14 up to
its loop (the `@jax.jit step` that samples its own batch).\"\"\"
"""

OPTAX_ADVERSARIAL_DATA = """
\"\"\"Cell 4 reads MNIST with tfds and grain: its image shape and 10 classes, and one batch
of uint8 images and labels as its loader yields them. Shrunk: batch 128 -> 8.\"\"\"
import numpy as _np
input_shape, num_classes = (1, 28, 28, 1), 10
train_loader_batched = test_loader_batched = [
    (_np.random.RandomState(0).randint(0, 256, (8, 28, 28, 1)).astype(_np.uint8),
     _np.random.RandomState(1).randint(0, 10, (8,)))]
iter_per_epoch_train = iter_per_epoch_test = 1
"""
OPTAX_ADVERSARIAL = """
\"\"\"optax examples/adversarial_training.ipynb: a Linen `CNN` (cell 3) trained on the
images a 10-step PGD attack (`pgd_attack`, a jitted Python loop of `jax.grad` of the
jitted `loss_fun`) makes of each batch, `optax.adam`; the `@jax.jit train_step` of cell 6,
params and optimizer as cell 7 makes them.\"\"\"
train_batch = train_loader_batched[0]
"""

# ---- JAX examples ------------------------------------------------------------------------

JAX_MNIST_DATA = """
\"\"\"`datasets.mnist_raw` downloads: random uint8 images and labels of its shapes stand
in (512 train, 128 test); `datasets.mnist` processes them as it does.\"\"\"
import numpy as _np
datasets.mnist_raw = lambda: (
    _np.random.RandomState(0).randint(0, 256, (512, 28, 28)).astype(_np.uint8),
    _np.random.RandomState(1).randint(0, 10, (512,)),
    _np.random.RandomState(2).randint(0, 256, (128, 28, 28)).astype(_np.uint8),
    _np.random.RandomState(3).randint(0, 10, (128,)))
"""
JAX_MNIST = """
\"\"\"jax examples/mnist_classifier.py: a `stax.serial` MLP (Dense 1024, Relu, Dense 1024,
Relu, Dense 10, LogSoftmax), `optimizers.momentum`, the `@jit update` built by its
`__main__` block up to its loop. Nothing shrunk but the dataset.\"\"\"
batch = next(batches)
"""
JAX_SPMD = """
\"\"\"jax examples/spmd_mnist_classifier_fromscratch.py: a tanh MLP in plain jnp, its
`@jax.jit(donate_argnums=0) train_step` on an Explicit `batch` mesh of all (8 host)
devices, params replicated and data sharded by `NamedSharding`, built by its `__main__`
block up to its loop; the mesh set as its `with jax.set_mesh(mesh)` sets it. Nothing
shrunk but the dataset.\"\"\"
batch = next(batches)
jax.set_mesh(mesh)
"""
JAX_VAE = """
\"\"\"jax examples/mnist_vae.py: stax encoder/decoder (Dense, Softplus, FanOut), `elbo`, and
the `@jit run_epoch` (a `fori_loop` of grad and `optimizers.momentum` updates over the
epoch's batches) built by its `__main__` block up to its loop. Shrunk: 60000 -> 512 train
images (16 batches of 32).\"\"\"
opt_state = opt_init(init_params)
"""

# title, setup, call, prefixes of the model's own group titles (its classes, or for Haiku
# and stax the function that is the model: `net_fn`, `forward_pass`, `predict`,
# `encode`; never the loss), cells run first
TUNED = [
    ("haiku mnist MLP", HAIKU_MNIST, "update(state, batch)", ("net_fn", "sequential", "linear"),
     cells(Script(HAIKU, "examples/mnist.py"),
           Body(HAIKU, "examples/mnist.py", "main", "train_dataset ="))),
    ("haiku transformer LM", HAIKU_LM, "train.update(state, data)",
     ("LanguageModel", "language_model", "Transformer", "transformer", "forward_pass"),
     cells(Folder(HAIKU, "examples", "."))),
    ("haiku rnn LSTM unroll", HAIKU_RNN, "train.update(state, train_batch)",
     ("deep_rnn", "DeepRNN", "lstm", "LSTM"),
     cells(stand_in("tensorflow.compat", "tensorflow.compat.v2"),
           Folder(HAIKU, "examples", "."))),
    ("flax vae (Linen)", FLAX_VAE, ("--static-argnums 3 "
                           "train.train_step(state, batch, random.key(2), config.latents)"),
     ("VAE", "encoder", "decoder", "Encoder", "Decoder"),
     cells(Folder(FLAX, "examples/vae"))),
    ("equinox mnist CNN", EQX_MNIST, "make_step(model, opt_state, x, y)", ("CNN",),
     cells(Notebook(EQUINOX, EQX_NB("mnist"), (1, 2, 5)), EQX_MNIST_DATA,
           Notebook(EQUINOX, EQX_NB("mnist"), (7, 11, 14)),
           Body(EQUINOX, EQX_NB("mnist"), "train", "for step", cell=15))),
    ("equinox train_rnn GRU", EQX_RNN, "make_step(model, x, y, opt_state)", ("RNN",),
     cells(Notebook(EQUINOX, EQX_NB("train_rnn"), (1, 2, 3)), EQX_RNN_ARGS,
           Body(EQUINOX, EQX_NB("train_rnn"), "main", "for step", cell=4))),
    ("equinox stateful BatchNorm", EQX_STATEFUL, "make_step(model, state, opt_state, xs, ys)",
     ("Model",),
     cells(Notebook(EQUINOX, EQX_NB("stateful"), (1, 2, 3)),
           Body(EQUINOX, EQX_NB("stateful"), None, "for _", cell=4))),
    ("equinox DCGAN discriminator", EQX_GAN,
     "step_discriminator(discriminator, generator, real_batch, discriminator_optimizer,"
     " discriminator_opt_state, generator_state, discriminator_state, key)",
     ("Discriminator", "Generator"),
     cells(stand_in("matplotlib", "matplotlib.pyplot"),
           Notebook(EQUINOX, EQX_NB("deep_convolutional_gan"), (1, 2)), EQX_GAN_BATCH,
           Notebook(EQUINOX, EQX_NB("deep_convolutional_gan"), (5, 6, 7)),
           Body(EQUINOX, EQX_NB("deep_convolutional_gan"), None, "(", cell=8))),
    ("equinox DCGAN generator", EQX_GAN,
     "step_generator(generator, discriminator, generator_optimizer, generator_opt_state,"
     " discriminator_state, generator_state, key)",
     ("Generator", "Discriminator"),
     cells(stand_in("matplotlib", "matplotlib.pyplot"),
           Notebook(EQUINOX, EQX_NB("deep_convolutional_gan"), (1, 2)), EQX_GAN_BATCH,
           Notebook(EQUINOX, EQX_NB("deep_convolutional_gan"), (5, 6, 7)),
           Body(EQUINOX, EQX_NB("deep_convolutional_gan"), None, "(", cell=8))),
    ("flax sst2 (Linen)", SST2, "train_step_fn(state, batch, rngs)",
     ("TextClassifier", "embedder", "Embedder", "encoder", "SimpleBiLSTM", "classifier",
      "AttentionClassifier"),
     cells(stand_in("flax.metrics.tensorboard"), Folder(FLAX, "examples/sst2"))),
    ("flax nlp_seq (Linen)", NLP_SEQ, "p_train_step(state, batch, dropout_rng=dropout_rngs)",
     ("Transformer", "encoderblock", "Encoder1DBlock", "MlpBlock", "AddPositionEmbs"),
     cells(stand_in("flax.metrics.tensorboard"), Folder(FLAX, "examples/nlp_seq"))),
    ("flax mnist CNN (NNX)", FLAX_MNIST, "train.train_step(model, optimizer, metrics, batch, rngs)",
     ("CNN",), cells(stand_in("flax.metrics.tensorboard"), Folder(FLAX, "examples/mnist"))),
    ("flax ppo ActorCritic (Linen)", FLAX_PPO,
     "ppo_lib.train_step(state, trajectories, config.batch_size, clip_param=clip_param,"
     " vf_coeff=config.vf_coeff, entropy_coeff=config.entropy_coeff)",
     ("ActorCritic",),
     cells(stand_in("flax.metrics.tensorboard", "gymnasium", "gymnasium.spaces",
                    "gymnasium.spaces.box", "ale_py", "cv2"),
           Folder(FLAX, "examples/ppo"))),
    ("optax flax_example (NNX)", OPTAX_FLAX, "loss_grad_fn(model)", ("Linear", "mse"),
     cells(stand_in("matplotlib", "matplotlib.pyplot"),
           Notebook(OPTAX, OPTAX_NB("flax_example"), (1, 2, 3, 4, 5, 6, 7, 8)))),
    ("optax lookahead_mnist (NNX)", OPTAX_LOOKAHEAD,
     "train_step(params, net, solver_state, train_batch)", ("CNN",),
     cells(Notebook(OPTAX, OPTAX_NB("lookahead_mnist"), (1, 2)), OPTAX_LOOKAHEAD_DATA,
           Notebook(OPTAX, OPTAX_NB("lookahead_mnist"), (4, 5, 6)),
           Body(OPTAX, OPTAX_NB("lookahead_mnist"), None, "for epoch", cell=7))),
    ("jax mnist_classifier (stax)", JAX_MNIST, "update(0, opt_state, batch)",
     ("predict",),
     cells(Folder(JAX, "examples", "."), Script(JAX, "examples/mnist_classifier.py"),
           JAX_MNIST_DATA, Body(JAX, "examples/mnist_classifier.py", "__main__", "print("))),
    ("jax spmd_mnist (mesh)", JAX_SPMD, "train_step(replicated_params, batch)", ("predict",),
     cells(Folder(JAX, "examples"),
           Script(JAX, "examples/spmd_mnist_classifier_fromscratch.py"), JAX_MNIST_DATA,
           Body(JAX, "examples/spmd_mnist_classifier_fromscratch.py", "__main__",
                "for epoch"))),
]

HELD_OUT = [
    ("haiku vae", HAIKU_VAE, "update(state, batch)",
     ("model", "variational_auto_encoder", "encoder", "decoder"),
     cells(Script(HAIKU, "examples/vae.py"),
           Body(HAIKU, "examples/vae.py", "main", "train_dataset ="))),
    ("equinox score diffusion", EQX_DIFFUSION,
     "make_step(model, weight, int_beta, batch, t1, train_key, opt_state, opt.update)",
     ("Mixer2d", "MixerBlock"),
     cells(stand_in("diffrax", "matplotlib", "matplotlib.pyplot"),
           Notebook(EQUINOX, EQX_NB("score_based_diffusion"), (1, 2, 3)), EQX_DIFFUSION_DATA,
           Body(EQUINOX, EQX_NB("score_based_diffusion"), None, "def main", cell=5),
           Body(EQUINOX, EQX_NB("score_based_diffusion"), "main", "total_value", cell=5))),
    ("flax seq2seq (Linen)", SEQ2SEQ, "train.train_step(state, batch, rng, ctable.eos_id)",
     ("Seq2seq", "encoder", "decoder", "Encoder", "Decoder"),
     cells(Folder(FLAX, "examples/seq2seq"))),
    ("optax nanolm (Linen)", NANOLM, "step(key, var_params, opt_state)", ("NanoLM",),
     cells(stand_in("matplotlib", "matplotlib.pyplot"),
           Notebook(OPTAX, OPTAX_NB("nanolm"), (1, 2)), NANOLM_DATA,
           Notebook(OPTAX, OPTAX_NB("nanolm"), (6, 7, 8, 9, 10, 11, 13)),
           Body(OPTAX, OPTAX_NB("nanolm"), None, "for i", cell=14))),
    ("jax mnist_vae (stax)", JAX_VAE, "run_epoch(random.key(0), opt_state, train_images)",
     ("encode", "decode"),
     cells(stand_in("matplotlib", "matplotlib.pyplot"), Folder(JAX, "examples", "."),
           Script(JAX, "examples/mnist_vae.py"), JAX_MNIST_DATA,
           Body(JAX, "examples/mnist_vae.py", "__main__", "opt_state ="))),
    ("haiku imagenet ResNet50", HAIKU_IMAGENET, "train.train_step(train_state, batch)",
     ("res_net50", "ResNet50", "_forward", "block_group", "block"),
     cells(stand_in("tensorflow.compat", "tensorflow.compat.v2"), HAIKU_TREE,
           Folder(HAIKU, "examples", "."))),
    ("optax adversarial CNN (Linen)", OPTAX_ADVERSARIAL,
     "train_step(var_params, opt_state, train_batch)", ("CNN",),
     cells(stand_in("grain", "matplotlib", "matplotlib.pyplot"),
           Notebook(OPTAX, OPTAX_NB("adversarial_training"), (1, 2, 3)),
           OPTAX_ADVERSARIAL_DATA,
           Notebook(OPTAX, OPTAX_NB("adversarial_training"), (5, 6)),
           Body(OPTAX, OPTAX_NB("adversarial_training"), None, "start =", cell=7))),
    ("flax minigpt (NNX, mesh)", MINIGPT, "train_step(model, optimizer, metrics, batch)",
     ("MiniGPT", "TransformerBlock"),
     cells(stand_in("tiktoken", "pandas"),
           Notebook(FLAX, MINIGPT_NB, (1, 3, 4, 5, 6, 7, 8, 9)), MINIGPT_SIZES,
           Notebook(FLAX, MINIGPT_NB, (11, 12, 13)),
           Body(FLAX, MINIGPT_NB, None, "step = 0", cell=15))),
    ("equinox frozen_layer MLP", EQX_FROZEN, "make_step(model, x, y, opt_state)", ("MLP",),
     cells(Notebook(EQUINOX, EQX_NB("frozen_layer"), (1, 2)), EQX_FROZEN_ARGS,
           Body(EQUINOX, EQX_NB("frozen_layer"), "main", "for step", cell=3))),
    ("equinox parallelism MLP (mesh)", EQX_PARALLEL, "train_step(model, opt_state, x, y)",
     ("MLP",), cells(Without(Notebook(EQUINOX, EQX_NB("parallelism"), (1, 2)),
                             "jax_num_cpu_devices"))),
    ("flax gspmd DotReluDot (NNX, mesh)", GSPMD, "train_step(model, optimizer, input, label)",
     ("MultiDotReluDot", "DotReluDot"),
     cells(Notebook(FLAX, GSPMD_NB, (1,)), GSPMD_MESH,
           Notebook(FLAX, GSPMD_NB, (3, 4, 6, 7, 8, 9, 10)))),
    ("flax digits diffusion UNet (NNX)", DIGITS, "train_step(model, images, rngs, optimizer)",
     ("UNet", "ResBlock"),
     cells(stand_in("sklearn", "sklearn.datasets", "diffrax", "matplotlib",
                    "matplotlib.pyplot"),
           Notebook(FLAX, DIGITS_NB, (1,)), DIGITS_DATA, Notebook(FLAX, DIGITS_NB, (4, 5)),
           DIGITS_MODEL, Notebook(FLAX, DIGITS_NB, (7, 8, 9, 10)))),
    ("flax machine_translation (NNX)", MT, "train_step(train_model, optimizer, batch)",
     ("TransformerModel", "TransformerEncoder", "TransformerDecoder", "PositionalEmbedding"),
     cells(stand_in("tiktoken", "matplotlib", "matplotlib.pyplot"),
           Notebook(FLAX, MT_NB, (2, 3, 4, 7, 8, 9, 10, 11, 14, 15, 16, 17, 19, 20, 21, 22,
                                  23)),
           MT_SIZES, Notebook(FLAX, MT_NB, (24,)))),
    ("haiku mnist_gan GAN", HAIKU_GAN, "gan.update(rng, gan_state, batch)",
     ("generator", "Generator", "discriminator", "Discriminator"),
     cells(stand_in("matplotlib", "matplotlib.pyplot", "seaborn"),
           Notebook(HAIKU, HAIKU_NB("mnist_gan"), (2,)), HAIKU_GAN_DATA,
           Notebook(HAIKU, HAIKU_NB("mnist_gan"), (4,)),
           Body(HAIKU, HAIKU_NB("mnist_gan"), None, "steps =", cell=5))),
    ("haiku vqvae VQVAEModel", HAIKU_VQVAE, "train_step(params, state, opt_state, data)",
     ("vqvae_model", "VQVAEModel", "encoder", "Encoder", "decoder", "Decoder",
      "residual_stack", "ResidualStack", "vector_quantizer", "VectorQuantizer"),
     cells(stand_in("matplotlib", "matplotlib.pyplot", "tensorflow.compat",
                    "tensorflow.compat.v2"),
           Without(Notebook(HAIKU, HAIKU_NB("vqvae_example"), (2,)), "tf.__version__"),
           HAIKU_VQVAE_DATA, Notebook(HAIKU, HAIKU_NB("vqvae_example"), (5, 6, 7)),
           HAIKU_VQVAE_SIZES,
           Body(HAIKU, HAIKU_NB("vqvae_example"), None, "for step", cell=8))),
    ("haiku lstms sine LSTM", HAIKU_LSTMS, "update(step, params, opt_state, x, y)",
     ("unroll_net", "lstm", "LSTM", "batch_apply", "BatchApply"),
     cells(stand_in("pandas", "plotnine"),
           Notebook(HAIKU, HAIKU_NB("haiku_lstms"), (3, 4)),
           Without(Without(Notebook(HAIKU, HAIKU_NB("haiku_lstms"), (5,)), "df"), "plot"),
           Notebook(HAIKU, HAIKU_NB("haiku_lstms"), (6,)),
           Body(HAIKU, HAIKU_NB("haiku_lstms"), "train_model", "for step", cell=6))),
]
