"""The corpus for `bench_control_flow.py`: public JAX programs whose structure is control flow.

`upstream_corpus.py` holds train steps of Flax, Haiku, Equinox, Optax and JAX examples;
these are the programs JAX users run that are loops, searches, samplers and solvers, from
projects that corpus does not use. Each row's code is upstream's, at the commit pinned
below, read from a local mirror (`/work/.mirror/<owner>+<name>/repo`, brought by the
search tool's `fetch`) and run unmodified: a script as a cell, a notebook's (or a MyST
page's) code cells, a function's statements up to its loop (`Body`, `Span`). The
libraries themselves are the released packages pinned in pyproject's `bench-cf` extra
(numpyro 0.22.0, mctx 0.0.71, diffrax 0.7.2, ...; installed beside jax 0.10.2). Each
program is built as its own script builds it (its default config, its `jax.jit` /
`vmap` / `eqx.filter_jit` / mesh), only sizes shrunk after the script's own definitions;
data a loader downloads are random arrays of its shapes. Each setup's docstring names
what was shrunk or stood in.

Classes: rl (rollouts and updates in `scan` over vmapped environments), search
(`while_loop`: tree search, MCMC, root finding, optimal transport), science (ODE solves,
molecular dynamics), models (graph networks, a sharded language model).

23 rows from 14 projects: tuned (13) mctx policy-improvement and visualization demos,
purejaxrl PPO and its MinAtar notebook's train, numpyro's ODE NUTS step and VAE SVI
epoch, optimistix root_find, diffrax neural ODE, neural CDE and latent ODE steps, jraph's
karate-club GCN, higgs-detection RelationNetwork update and ogb molhiv GraphNetwork loss
gradient; held out (10) gymnax's jitted rollout, population rollout and anakin pmap
DQN(lambda) learner, evosax's SNES generations in `scan` over CartPole rollouts, rejax's
DPO (a user's subclass of its PPO) on Pendulum, blackjax's sampling-book rmh loop, ott's
doubly vmapped Sinkhorn, jax-md's NVE fori_loop, e3nn-jax's equivariant tetris update,
nanodo's FSDP train step on the 8-device mesh.

Tried and left out, each failing on its own code with today's libraries: purejaxrl's
ppo_rnn (`nn.GRUCell.initialize_carry` called with Flax 0.7's arguments) and dqn
(`jax.tree_map`, removed in JAX 0.6); nanodo's eval step (a float `where`); gymnax's
03_meta_a2c and 02_evolution notebooks; purejaxrl's ppo_continuous_action (brax
environments only).

Held out, chosen before any row was measured (whole projects, one or more per class;
reported apart, never used to tune): gymnax, evosax and rejax (rl), blackjax and ott-jax
(search), jax-md (science), nanodo and e3nn-jax (models). Tuned: purejaxrl (rl), mctx,
numpyro and optimistix (search), diffrax (science), jraph (models).

    PYTHONPATH=$PWD:benchmarks python benchmarks/bench_control_flow.py --only mctx
"""
from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from upstream_corpus import Body, Cells, Folder, Script, Without, _show, source_text, stand_in  # noqa: F401
from upstream_heldout import Notebook

MCTX = ("google-deepmind+mctx", "b53073fd5035618228a717e29254e36ceb6f0645")
PUREJAXRL = ("luchris429+purejaxrl", "31756b197773a52db763fdbe6d635e4b46522a73")
NUMPYRO = ("pyro-ppl+numpyro", "0b935d488056ae1775b4ab05cbe2812f51f21a4f")
DIFFRAX = ("patrick-kidger+diffrax", "5ea5fcb05058bd22548300a10ea5ef5ce7fb75bb")
JRAPH = ("google-deepmind+jraph", "51f5990104f7374492f8f3ea1cbc47feb411c69c")
OPTIMISTIX = ("patrick-kidger+optimistix", "6415ab15480ebdb7386e17850105ce0dba6786ec")
GYMNAX = ("RobertTLange+gymnax", "086ad95697d5898b95ce3b14fa25f2b0bae4a1fc")
# gymnax's last commit whose `step` returns 5 values, as purejaxrl's wrappers unpack it
GYMNAX_2024 = ("RobertTLange+gymnax", "ed6f1fdc81868f55936595e831ac1c3cafb63b35")
BLACKJAX_BOOK = ("blackjax-devs+sampling-book", "4519a1ac8a682ee46ec8393c38dcd55d313d0f83")
OTT = ("ott-jax+ott", "6aace50f673b877cc3394d0b53a24da0bbf11308")
JAX_MD = ("jax-md+jax-md", "a41c7d19f6468f4e5263c32c12c9ed6cba26ebff")
NANODO = ("google-deepmind+nanodo", "10aefdeed40a63293daf112b91a5538cd24fa3a4")
EVOSAX = ("RobertTLange+evosax", "d4b4127708cb2cd0cc906b910ddcd091013153a9")   # v0.3.1
E3NN = ("e3nn+e3nn-jax", "04e761c8e9a42c339cc712fb8b9af85ddd618eab")           # 0.21.0
# v0.1.3 and a CI-only commit; the released rejax 0.1.3 installed
REJAX = ("keraJLi+rejax", "d7510951b7a89ca8463cb2a6d18e21750ec454ff")
# the last commit whose 01_anakin.ipynb runs: the next (827f441) renamed `PRNGKey` to
# `PkeyKey` in it (`chex.PkeyKey` in an annotation: an AttributeError when cell 4 runs)
GYMNAX_ANAKIN = ("RobertTLange+gymnax", "79d75adaf7c2ea2110ef4c9ce0e92afa978cce19")

# Each row's first cell after `upstream_corpus`'s: the last row's float64 switched back
# off (optimistix's and jax-md's examples turn `jax_enable_x64` on, as their users do).
RESET = "import jax as _jax; _jax.config.update('jax_enable_x64', False)"


@dataclass(frozen=True)
class Span:
    """The statements of function `func` (None: the file's or cell's own) from the one
    whose text starts with `start` up to the one that starts with `until`, as a cell:
    the part of a `main` between two lines a benchmark replaces (a dataset download)."""

    repo: tuple[str, str]
    path: str
    func: str | None
    start: str
    until: str
    cell: int | None = None

    def sources(self, mirrors: Path) -> list[str]:
        text = source_text(mirrors, self.repo, self.path, self.cell)
        lines = text.splitlines()
        tree = ast.parse(text)
        func = tree if self.func is None else next(
            n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == self.func)

        def first(stmt):
            return min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        starts = [first(s) for s in func.body]
        begin = next(i for i in starts if lines[i - 1].strip().startswith(self.start))
        end = next(i for i in starts if i > begin
                   and lines[i - 1].strip().startswith(self.until)) - 1
        return [textwrap.dedent("\n".join(lines[begin - 1:end]))]


@dataclass(frozen=True)
class Myst:
    """Code cells of a MyST (jupytext) page, counted from 1, their `:tags:` lines dropped:
    the sampling book's pages are notebooks stored as text."""

    repo: tuple[str, str]
    path: str
    cells: tuple[int, ...]

    def sources(self, mirrors: Path) -> list[str]:
        text = _show(mirrors, self.repo, self.path)
        code = re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", text, re.S)
        return ["\n".join(line for line in code[n - 1].splitlines()
                          if not line.startswith(":")) for n in self.cells]


def cells(*parts) -> Cells:
    return Cells((RESET,) + tuple(parts))


@dataclass(frozen=True)
class Program:
    """One row: its class, project (a pinned repo), title, the call `%jaxpr` draws, the
    names of the user's own classes and functions a picture should show inside the call
    (group titles that start with one; not the called function, whose body the picture
    is), and the cells that build it."""

    cls: str
    repo: tuple[str, str]
    title: str
    call: str
    user: tuple[str, ...]
    parts: Cells
    setup: str = ""

    @property
    def project(self) -> str:
        return f"{self.repo[0].split('+')[1]}@{self.repo[1][:7]}"

    def sources(self, mirrors: Path) -> list[str]:
        return self.parts.sources(mirrors) + ([self.setup] if self.setup else [])


# ---- mctx (search) ---------------------------------------------------------------------

MCTX_POLICY = """
\"\"\"mctx examples/policy_improvement_demo.py: `_run_demo` (random prior logits, a bandit
`recurrent_fn` made by `_make_bandit_recurrent_fn`, `mctx.gumbel_muzero_policy` with
`qtransform_completed_by_mix_value`) under `jax.jit` as `main` makes it; flag defaults
but batch 256 -> 8 (4 simulations, 82 actions, 16 considered kept).\"\"\"
FLAGS.batch_size = 8
"""
MCTX_VIS = """
\"\"\"mctx examples/visualization_demo.py: `_run_demo` (a batched deterministic env model,
`mctx.gumbel_muzero_policy` with 32 simulations, its `recurrent_fn`) under `jax.jit` as
`main` makes it; flag defaults, nothing shrunk. pygraphviz (the tree's drawing) stands
in.\"\"\"
"""

# ---- purejaxrl (rl) ----------------------------------------------------------------------

PPO_SIZES = """
\"\"\"purejaxrl's default config (its `__main__`), shrunk: 4 envs kept, 128 -> 16 steps,
5e5 -> 128 timesteps (2 updates), 4 epochs x 4 minibatches kept. DEBUG stays True (its
`jax.debug.callback` prints returns).\"\"\"
config["NUM_STEPS"], config["TOTAL_TIMESTEPS"] = 16, 128
rng = jax.random.PRNGKey(30)
train_jit = jax.jit(make_train(config))
"""

_MINATAR = "examples/brax_minatar.ipynb"
MINATAR_SIZES = """
\"\"\"purejaxrl examples/brax_minatar.ipynb cells 2, 3 (up to its run): the notebook's own
`ActorCritic` and `make_train` (PPO, `lax.scan` of `_update_step` over a scanned
`_env_step` of vmapped gymnax SpaceInvaders-MinAtar, annealed adam) under
`jax.jit(make_train(config))`; its config shrunk: 64 -> 4 envs, 128 -> 16 steps, 1e7 ->
128 timesteps (2 updates), 4 epochs x 8 minibatches kept. gymnax as `_purejaxrl` pins it
(its `step` returns 5 values, as the notebook unpacks).\"\"\"
config["NUM_ENVS"], config["NUM_STEPS"], config["TOTAL_TIMESTEPS"] = 4, 16, 128
rng = jax.random.PRNGKey(42)
train_jit = jax.jit(make_train(config))
"""

# ---- numpyro (search) --------------------------------------------------------------------

NUMPYRO_ODE = """
\"\"\"numpyro examples/ode.py: the Lotka-Volterra `model` (`jax.experimental.ode.odeint` of
the user's `dz_dt`) under `NUTS(model, dense_mass=True)`, as `main` builds it; one
sampler step as `MCMC.run` takes it (`kernel.init`, then `kernel.sample(state, args,
kwargs)`, which MCMC jits). The LYNXHARE download stands in: 91 years of random
populations of its shape (91, 2).\"\"\"
import numpy as _np
data = _np.random.RandomState(0).uniform(5, 80, (91, 2)).astype(_np.float32)
kernel = NUTS(model, dense_mass=True)
state = kernel.init(key(1), 10, None, (data.shape[0],), {"y": data})
"""
NUMPYRO_VAE_ARGS = """
\"\"\"numpyro examples/vae.py: its argparse defaults, shrunk: batch 128 -> 8, hidden 400 ->
32, latent 50 -> 8.\"\"\"
import argparse
args = argparse.Namespace(num_epochs=15, learning_rate=1.0e-3, batch_size=8, z_dim=8,
                          hidden_dim=32)
"""
NUMPYRO_VAE_DATA = """
\"\"\"The MNIST loader (a download) stands in: `train_fetch(i, idx)` gives batch i of
random [0, 1) images of its shape (8, 28, 28); 4 batches an epoch.\"\"\"
import numpy as _np
_images = jnp.asarray(_np.random.RandomState(0).rand(32, 28, 28).astype(_np.float32))
def train_fetch(i, idx):
    return (lax.dynamic_slice_in_dim(_images[idx], i * args.batch_size, args.batch_size),)
num_train, train_idx = 4, jnp.arange(32)
"""
NUMPYRO_VAE = """
\"\"\"numpyro examples/vae.py: `model`/`guide` (stax encoder and decoder registered by
`numpyro.module`), `SVI(..., Trace_ELBO())` with `optim.Adam`, and `main`'s jitted
`epoch_train`: a `lax.fori_loop` over the epoch's batches of `svi.update`.\"\"\"
"""

# ---- optimistix (search) -----------------------------------------------------------------

OPTX_ROOT = """
\"\"\"optimistix docs/examples/root_find.ipynb cell 1: `optx.root_find` of the user's `fn`
with `optx.Newton` (float64, as the cell sets it). Nothing shrunk.\"\"\"
"""

# ---- diffrax (science) -------------------------------------------------------------------

DIFFRAX_NODE_ARGS = """
\"\"\"diffrax neural_ode.ipynb: `main`'s keyword defaults, shrunk: dataset 256 -> 8, batch
32 -> 4, width 64 -> 16 (depth 2, adabelief 3e-3 kept).\"\"\"
dataset_size, batch_size, lr, steps_strategy, length_strategy = 8, 4, 3e-3, (500, 500), (0.1, 1)
width_size, depth, seed, plot, print_every = 16, 2, 5678, False, 100
"""
DIFFRAX_NODE = """
\"\"\"diffrax docs/examples/neural_ode.ipynb: `NeuralODE` (a `diffeqsolve` with Tsit5 and a
PID controller of the user's `Func` MLP), `main`'s `@eqx.filter_value_and_grad grad_loss`
and `@eqx.filter_jit make_step`; the first stage of its loop (10% of each series) and
one batch from its dataloader.\"\"\"
steps, length = 500, 0.1
opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))
_ts = ts[: int(length_size * length)]
_ys = ys[:, : int(length_size * length)]
(yi,) = next(dataloader((_ys,), batch_size, key=loader_key))
"""
DIFFRAX_CDE_ARGS = """
\"\"\"diffrax neural_cde.ipynb: `main`'s keyword defaults, shrunk: dataset 256 -> 8, batch
32 -> 4, width 128 -> 16.\"\"\"
dataset_size, add_noise, batch_size, lr, steps = 8, False, 4, 1e-2, 20
hidden_size, width_size, depth, seed = 8, 16, 1, 5678
"""
DIFFRAX_CDE = """
\"\"\"diffrax docs/examples/neural_cde.ipynb: `NeuralCDE` (a `diffeqsolve` of a
`ControlTerm` over a cubic interpolation, the user's `Func`), `main`'s `@eqx.filter_jit
loss`, `grad_loss`, `@eqx.filter_jit make_step` and adam, up to its loop; one batch from
its dataloader.\"\"\"
data_i = next(dataloader((ts, labels) + coeffs, batch_size, key=loader_key))
"""
DIFFRAX_LATENT_ARGS = """
\"\"\"diffrax latent_ode.ipynb: `main`'s keyword defaults, shrunk: dataset 10000 -> 8,
batch 256 -> 4 (sizes 16, depth 2, adam 1e-2 kept).\"\"\"
dataset_size, batch_size, lr, steps, save_every = 8, 4, 1e-2, 250, 50
hidden_size, latent_size, width_size, depth, seed = 16, 16, 16, 2, 5678
"""
DIFFRAX_LATENT = """
\"\"\"diffrax docs/examples/latent_ode.ipynb: `LatentODE` (a GRU encoder, a `diffeqsolve` of
the user's `Func`, `model.train` calling `_latent` and `_sample` of the same module, as
`BoundMethod`s), `main`'s `@eqx.filter_value_and_grad loss` and `@eqx.filter_jit
make_step` (up to its loop, its plot axes made by matplotlib); one batch from its
dataloader.\"\"\"
ts_i, ys_i = next(dataloader((ts, ys), batch_size, key=loader_key))
"""

# ---- jraph (models) ----------------------------------------------------------------------

JRAPH_KARATE = """
\"\"\"jraph examples/zacharys_karate_club.py: a 2-layer GCN (`network_definition`, haiku)
on the karate club graph; `optimize_club`'s `@jax.jit update` (grad of the jitted
`prediction_loss`, adam 1e-2), built by its statements up to the loop. Nothing shrunk.\"\"\"
"""

_HIGGS = "jraph/examples/higgs_detection.py"
JRAPH_HIGGS = """
\"\"\"jraph examples/higgs_detection.py: a `RelationNetwork` (haiku MLP edges of the user's
`update_edge_fn`, vmapped and `concatenated_args`) on a padded fully connected photon
graph; `train`'s `@jax.jit update` (grad of the jitted `prediction_loss`, adam 2e-4),
built by its statements up to the loop, and the loop's first problem. Nothing shrunk.\"\"\"
problem = get_higgs_problem(*train_dataset)
"""

_OGB = "jraph/ogb_examples/train.py"
JRAPH_OGB_ARGS = """
\"\"\"`train`'s arguments as jraph's own train_test.py passes them: the molhiv test data the
repository ships (extracted from the mirror), batch 1 (the flag's default).\"\"\"
import pathlib, control_flow_corpus as _cf
ogb_path = pathlib.Path(_cf.Folder(_cf.JRAPH, "").root(), "jraph/ogb_examples")
master_csv_path = pathlib.Path(ogb_path, 'test_data', 'master.csv')
split_path = pathlib.Path(ogb_path, 'test_data', 'train.csv.gz')
data_path, batch_size, num_training_steps, save_dir = master_csv_path.parents[0], 1, 101, None
"""
JRAPH_OGB = """
\"\"\"jraph ogb_examples/train.py: a haiku `GraphNetwork` (`net_fn`: `GraphMapFeatures`
embedder, the user's `concatenated_args` edge, node and global MLPs) on ogbg-molhiv;
`train`'s `jax.jit(jax.value_and_grad(partial(compute_loss, net=net), has_aux=True))`
up to its loop, and the loop's first batch, padded to a power of two and its label taken
out as the loop does. Nothing shrunk.\"\"\"
graph = next(reader)
graph = pad_graph_to_nearest_power_of_two(graph)
label = graph.globals['label']
graph = graph._replace(globals={})
"""

# ---- gymnax (rl, held out) ---------------------------------------------------------------

GYMNAX_ROLLOUT = """
\"\"\"gymnax examples/00_getting_started.ipynb cells 2, 3, 9-11: a Linen `MLP` policy on
Pendulum-v1, the user's `rollout` (`lax.scan` of `policy_step` over the env's step)
under `jax.jit(rollout, static_argnums=3)`. Shrunk: 200 -> 20 steps.\"\"\"
"""
GYMNAX_POP = """
\"\"\"gymnax examples/00_getting_started.ipynb cells 2, 3, 9, 12, 13: `RolloutWrapper`'s
`population_rollout` (vmap over 5 networks of vmap over 10 keys of a scanned episode of
Pendulum-v1's 200 steps) of the notebook's `MLP`. Nothing shrunk.\"\"\"
"""

_ANAKIN = "examples/01_anakin.ipynb"
ANAKIN_GYMNAX = """
\"\"\"The notebook steps gymnax as 5 results (gymnax 1.0.1 returns 6): gymnax at
`GYMNAX_2024` (5 results, as `_purejaxrl` pins it) replaces the installed one.\"\"\"
import sys as _sys
for _name in [m for m in _sys.modules if m == "gymnax" or m.startswith("gymnax.")]:
    del _sys.modules[_name]
"""
ANAKIN_ARGS = """
\"\"\"Cell 6's `run_experiment(env, 128, 16, 3e-4, 10000, 42)` shrunk: batch 128 -> 2 per
device, 10000 -> 2 iterations (16-step rollouts kept); 8 devices (the bench's host
platform count; cell 2 asks for 4 after JAX has started, a no-op in a running kernel).\"\"\"
batch_size, rollout_len, step_size, iterations, seed = 2, 16, 3e-4, 2, 42
"""
ANAKIN_LEARN = """
\"\"\"gymnax examples/01_anakin.ipynb cells 2-5: Anakin DQN(lambda) on SpaceInvaders-MinAtar:
the user's `learner_fn` (a `lax.fori_loop` of `iterate_fn`, `jax.vmap(update_fn,
axis_name="j")` of `jax.grad(loss_fn)`, a `lax.scan` of `step_fn` over the env and the
haiku `network_fn`, rlax's `td_lambda`, `pmean` over both axes) under `jax.pmap(learn,
axis_name="i")`, built by `run_experiment`'s statements up to its compile. rlax 0.1.9.\"\"\"
"""

# ---- blackjax (search, held out) ---------------------------------------------------------

BLACKJAX_LOGREG_DATA = """
\"\"\"Cell 4's `sklearn.datasets.make_biclusters` (scikit-learn is not installed) stands in:
50 random points in [-3, 3]^2 and a random cluster mask of its shapes.\"\"\"
import numpy as _np
num_points = 50
X = _np.random.RandomState(314).uniform(-3, 3, (num_points, 2))
rows = _np.random.RandomState(315).rand(2, num_points) > 0.5
y = rows[0] * 1.0
"""
BLACKJAX_LOGREG = """
\"\"\"blackjax sampling-book book/models/logistic_regression.md cells 2, 3, 6-8: random-walk
Rosenbluth-Metropolis-Hastings (`blackjax.rmh`) of the user's `logdensity_fn`, the page's
`inference_loop` (a `lax.scan` of its jitted `one_step`). Shrunk: 5000 -> 100 samples.
matplotlib and sklearn stand in.\"\"\"
rng_key, sample_key = jax.random.split(rng_key)
"""

# ---- ott-jax (search, held out) ----------------------------------------------------------

OTT_DATA = """
\"\"\"Cells 2, 3 download word embeddings: random ones stand in, shrunk: 4000 -> 64 words of
dimension 50 -> 8, 653 -> 50 row-normalised histograms.\"\"\"
import numpy as np
_r = np.random.RandomState(0)
X = _r.randn(64, 8).astype(np.float32)
HIST = _r.rand(50, 64).astype(np.float32)
HIST = HIST / HIST.sum(1, keepdims=True)
"""
OTT_SINK = """
\"\"\"ott docs/tutorials/linear/000_One_Sinkhorn.ipynb cells 1, 5, 6, 8, 10-12: the user's
`sink` (`linear.solve` of a `Geometry`, lse_mode off) vmapped twice and jitted with static
iteration bounds (`sink_2vmap`), called as cell 13 calls it (epsilon 1, 0-100
iterations).\"\"\"
"""

# ---- jax-md (science, held out) ----------------------------------------------------------

JAX_MD_NVE = """
\"\"\"jax-md examples/nve_simulation.py up to its loop, with its own SMOKE_TEST sizes
(READTHEDOCS set: 500 particles in a 40-box): a soft-sphere pair energy of two species,
`simulate.nve`, `step = jit(lambda i, state: apply(state))`, and the loop's
`lax.fori_loop(0, 10, step, state)`. matplotlib and seaborn stand in.\"\"\"
"""

# ---- nanodo (models, held out) -----------------------------------------------------------

NANODO_CONFIG = """
\"\"\"nanodo configs/default.py shrunk: batch 256 -> 8 (one per device), D 512 -> 32, 8 -> 2
heads, L 512 -> 16, N 6 -> 2 blocks, F 2048 -> 64; bf16, FSDP, adamw with warmup-cosine
kept; the workdir a temporary folder. The sentencepiece tokenizer stands in: 64 pieces.\"\"\"
import tempfile
from nanodo.configs import default
c = default.get_config()
c.batch_size, c.workdir = 8, tempfile.mkdtemp()
c.model.D, c.model.H, c.model.L, c.model.N, c.model.F = 32, 2, 16, 2, 64
vocab_size = 64
"""
NANODO_STEP = """
\"\"\"nanodo train.py: `train_and_evaluate`'s statements up to its tokenizer (the data mesh
of all 8 devices), then from its model to its dataset (`TransformerDo` of `DoConfig`,
sharded `TrainState` from `_init_train_state`), and its `Trainer` whose `step_fn` is
`jax.jit(partial(_train_step, ...), in/out_shardings, donate_argnames=("state",
"in_BxL"))`; one batch of random tokens. clu, grain, orbax and TensorFlow stand in.\"\"\"
trainer = Trainer(c=c, state=state, mesh=mesh, shardings=shardings, get_loss_fn=get_loss_fn)
in_BxL = jax.random.randint(jax.random.key(1), (c.batch_size, c.model.L), 0, vocab_size)
"""

# ---- evosax (rl, held out: new project) --------------------------------------------------

_EVO = "examples/02_rl.ipynb"
EVOSAX_SIZES = """
\"\"\"Cell 7's `population_size = 128` -> 8 (set before the cell, its line dropped).\"\"\"
population_size = 8
"""
EVOSAX_SCAN = """
\"\"\"evosax examples/02_rl.ipynb cells 3-9 (up to the run): SNES (adamw 1e-2) on a
`GymnaxProblem` (CartPole-v1, an evosax `MLP` policy with categorical output, 200-step
episodes, 16 rollouts, normalized observations), the notebook's `step` (`es.ask`,
`problem.eval`, `es.tell`) under its `jax.lax.scan` over generations. Shrunk: population
128 -> 8, 64 -> 4 generations. matplotlib stands in.\"\"\"
keys = jax.random.split(subkey, 4)
"""

# ---- rejax (rl, held out: new project) ---------------------------------------------------

REJAX_GYMNAX = """
\"\"\"rejax 0.1.3's `evaluate` unpacks gymnax's `step` as 5 results (gymnax 1.0.1 returns 6):
gymnax at `GYMNAX_2024` replaces the installed one for this row.\"\"\"
import sys as _sys
for _name in [m for m in _sys.modules if m == "gymnax" or m.startswith("gymnax.")]:
    del _sys.modules[_name]
"""
REJAX_DPO = """
\"\"\"rejax examples/dpo.py up to its run: the user's `DPO`, a subclass of rejax's `PPO`
overriding `update_actor` (its `actor_loss_fn` with the `dpo_drift` of Discovered
Policy Optimisation), created on gymnax Pendulum-v1 with the script's hyperparameters
and its `eval_with_print` callback (`jax.debug.print`); `DPO.train(algo, key)` as the
script calls it (not jitted: rejax's `lax.scan` over evaluations of a `fori_loop` of
`train_iteration`s, each a scanned vmapped env step, GAE and scanned epochs of
minibatch updates). Shrunk with `algo.replace`: 50 -> 4 envs, 100 -> 8 steps, 20 -> 4
minibatches, 1e6 -> 128 timesteps, eval every 5000 -> 64 (2 evaluations of 2
iterations; 5 epochs kept).\"\"\"
algo = algo.replace(num_envs=4, num_steps=8, num_minibatches=4, total_timesteps=128,
                    eval_freq=64)
key = jax.random.PRNGKey(0)
"""

# ---- e3nn-jax (models, held out: new project) --------------------------------------------

_TETRIS = "examples/tetris_point.py"
E3NN_TETRIS = """
\"\"\"e3nn-jax examples/tetris_point.py: the E(3)-equivariant `Model` (3 `Layer`s, each a
jraph `GraphNetwork` of the user's `update_edge_fn` (spherical harmonics, tensor
product) and `update_node_fn` (e3nn `Linear`s, gated activation)) on the 8 tetris
pieces; `train`'s `@jax.jit update_fn` (grad of `loss_fn`, adam 1e-2), built by its
statements up to its compile step. Nothing shrunk.\"\"\"
"""

IO = ("matplotlib", "matplotlib.pyplot", "seaborn", "pygraphviz", "sklearn",
      "sklearn.datasets", "requests")


GYMNAX_OLD = """
\"\"\"purejaxrl's wrappers unpack gymnax's `step` as 5 results (gymnax 1.0.1 returns 6):
gymnax at its last commit before the change replaces the installed one for this row.\"\"\"
import sys as _sys
for _name in [m for m in _sys.modules if m == "gymnax" or m.startswith("gymnax.")]:
    del _sys.modules[_name]
"""


def _purejaxrl(script: str) -> Cells:
    """Its `wrappers` module imports brax and navix for wrappers CartPole does not use:
    they stand in."""
    return cells(stand_in(*IO, "brax", "brax.envs", "brax.envs.wrappers",
                          "brax.envs.wrappers.training", "navix"),
                 GYMNAX_OLD, Folder(GYMNAX_2024, "gymnax", "."), Folder(PUREJAXRL, "purejaxrl"),
                 Script(PUREJAXRL, f"purejaxrl/{script}"),
                 Body(PUREJAXRL, f"purejaxrl/{script}", "__main__", "rng ="))


TUNED = [
    Program("search", MCTX, "gumbel muzero policy demo", "jitted_run_demo(rng_key)",
            ("recurrent_fn", "_make_bandit_recurrent_fn"),
            cells(Script(MCTX, "examples/policy_improvement_demo.py"),
                  Body(MCTX, "examples/policy_improvement_demo.py", "main", "for _")),
            MCTX_POLICY),
    Program("search", MCTX, "gumbel muzero visualization demo", "jitted_run_demo(rng_key)",
            ("recurrent_fn", "_make_batched_env_model"),
            cells(stand_in(*IO), Script(MCTX, "examples/visualization_demo.py"),
                  Body(MCTX, "examples/visualization_demo.py", "main", "policy_output")),
            MCTX_VIS),
    Program("rl", PUREJAXRL, "ppo CartPole train", "train_jit(rng)",
            ("_update_step", "_env_step", "_update_epoch", "_update_minbatch",
             "_loss_fn", "ActorCritic", "_calculate_gae"), _purejaxrl("ppo.py"), PPO_SIZES),
    Program("search", NUMPYRO, "ode NUTS step",
            "kernel.sample(state, (data.shape[0],), {'y': data})",
            ("model", "dz_dt"),
            cells(stand_in(*IO), Script(NUMPYRO, "examples/ode.py")), NUMPYRO_ODE),
    Program("search", NUMPYRO, "vae SVI epoch (fori_loop)",
            "epoch_train(svi_state, rng_key, train_idx)",
            ("body_fn", "model", "guide", "encoder", "decoder", "binarize"),
            cells(stand_in(*IO), Script(NUMPYRO, "examples/vae.py"), NUMPYRO_VAE_ARGS,
                  Body(NUMPYRO, "examples/vae.py", "main", "train_init"), NUMPYRO_VAE_DATA,
                  Span(NUMPYRO, "examples/vae.py", "main", "rng_key, rng_key_binarize",
                       "def reconstruct_img")), NUMPYRO_VAE),
    Program("search", OPTIMISTIX, "root_find Newton", "optx.root_find(fn, solver, y0)",
            ("fn",), cells(Notebook(OPTIMISTIX, "docs/examples/root_find.ipynb", (1,))),
            OPTX_ROOT),
    Program("science", DIFFRAX, "neural_ode make_step", "make_step(_ts, yi, model, opt_state)",
            ("grad_loss", "NeuralODE", "Func"),
            cells(stand_in(*IO),
                  Notebook(DIFFRAX, "docs/examples/neural_ode.ipynb", (1, 2, 3, 4, 5)),
                  DIFFRAX_NODE_ARGS,
                  Body(DIFFRAX, "docs/examples/neural_ode.ipynb", "main", "for steps", cell=6)),
            DIFFRAX_NODE),
    Program("science", DIFFRAX, "neural_cde make_step", "make_step(model, data_i, opt_state)",
            ("loss", "NeuralCDE", "Func"),
            cells(stand_in(*IO),
                  Notebook(DIFFRAX, "docs/examples/neural_cde.ipynb", (1, 2, 3, 4, 5)),
                  DIFFRAX_CDE_ARGS,
                  Body(DIFFRAX, "docs/examples/neural_cde.ipynb", "main", "for step", cell=6)),
            DIFFRAX_CDE),
    Program("science", DIFFRAX, "latent_ode make_step",
            "make_step(model, opt_state, ts_i, ys_i, train_key)",
            ("loss", "LatentODE", "Func", "train", "_latent", "_sample"),
            cells(stand_in(*IO),
                  Notebook(DIFFRAX, "docs/examples/latent_ode.ipynb", (1, 2, 3, 4, 5)),
                  DIFFRAX_LATENT_ARGS,
                  Body(DIFFRAX, "docs/examples/latent_ode.ipynb", "main", "for step", cell=6)),
            DIFFRAX_LATENT),
    Program("rl", PUREJAXRL, "ppo MinAtar notebook train", "train_jit(rng)",
            ("_update_step", "_env_step", "_update_epoch", "_update_minbatch",
             "_loss_fn", "ActorCritic", "_calculate_gae", "linear_schedule"),
            cells(GYMNAX_OLD, Folder(GYMNAX_2024, "gymnax", "."),
                  Notebook(PUREJAXRL, _MINATAR, (2,)),
                  Body(PUREJAXRL, _MINATAR, None, "rng =", cell=3)), MINATAR_SIZES),
    Program("models", JRAPH, "higgs detection RelationNetwork update",
            "update(params, opt_state, problem)",
            ("prediction_loss", "network_definition", "update_edge_fn"),
            cells(Script(JRAPH, _HIGGS), Body(JRAPH, _HIGGS, "train", "for step")),
            JRAPH_HIGGS),
    Program("models", JRAPH, "ogb molhiv GraphNetwork loss grad",
            "compute_loss_fn(params, graph, label)",
            ("compute_loss", "net_fn", "edge_update_fn", "node_update_fn",
             "update_global_fn"),
            cells(Folder(JRAPH, "jraph/ogb_examples/test_data"), Script(JRAPH, _OGB),
                  JRAPH_OGB_ARGS, Body(JRAPH, _OGB, "train", "for idx")), JRAPH_OGB),
    Program("models", JRAPH, "karate club GCN update", "update(params, opt_state)",
            ("prediction_loss", "network_definition", "gcn", "GCN"),
            cells(Script(JRAPH, "jraph/examples/zacharys_karate_club.py"),
                  Body(JRAPH, "jraph/examples/zacharys_karate_club.py", "optimize_club",
                       "for step")), JRAPH_KARATE),
]

_GYM = "examples/00_getting_started.ipynb"
_SINK = "docs/tutorials/linear/000_One_Sinkhorn.ipynb"

HELD_OUT = [
    Program("rl", GYMNAX, "getting_started jit rollout",
            "jit_rollout(key, policy_params, env_params, 20)",
            ("policy_step", "MLP"),
            cells(Notebook(GYMNAX, _GYM, (2, 3, 9, 10, 11))), GYMNAX_ROLLOUT),
    Program("rl", GYMNAX, "RolloutWrapper population_rollout",
            "manager.population_rollout(key_batch, batch_params)", ("MLP",),
            cells(Notebook(GYMNAX, _GYM, (2, 3, 9, 12, 13))), GYMNAX_POP),
    Program("rl", GYMNAX_ANAKIN, "anakin pmap DQN(lambda) learner",
            "learn(params, opt_state, step_rngs, env_states)",
            ("iterate_fn", "update_fn", "loss_fn", "step_fn", "network_fn"),
            cells(ANAKIN_GYMNAX, Folder(GYMNAX_2024, "gymnax", "."),
                  Notebook(GYMNAX_ANAKIN, _ANAKIN, (2, 3, 4, 5)), ANAKIN_ARGS,
                  Body(GYMNAX_ANAKIN, _ANAKIN, "run_experiment", "with TimeIt", cell=5)),
            ANAKIN_LEARN),
    Program("rl", EVOSAX, "SNES CartPole generations scan",
            "jax.lax.scan(step, (state, params, problem_state), keys)",
            ("step",),
            cells(stand_in(*IO), Notebook(EVOSAX, _EVO, (3, 4, 5, 6)), EVOSAX_SIZES,
                  Without(Notebook(EVOSAX, _EVO, (7,)), "population_size = 128"),
                  Notebook(EVOSAX, _EVO, (8,)),
                  Body(EVOSAX, _EVO, None, "_, metrics", cell=9)), EVOSAX_SCAN),
    Program("rl", REJAX, "DPO (PPO subclass) Pendulum train", "DPO.train(algo, key)",
            ("update_actor", "actor_loss_fn", "dpo_drift", "eval_with_print"),
            cells(REJAX_GYMNAX, Folder(GYMNAX_2024, "gymnax", "."),
                  Body(REJAX, "examples/dpo.py", None, "DPO.train")), REJAX_DPO),
    Program("models", E3NN, "tetris_point equivariant update_fn",
            "update_fn(params, opt_state, graphs)",
            ("loss_fn", "Model", "Layer", "update_edge_fn", "update_node_fn"),
            cells(Script(E3NN, _TETRIS), Body(E3NN, _TETRIS, "train", "wall =")),
            E3NN_TETRIS),
    Program("search", BLACKJAX_BOOK, "logistic regression rmh loop",
            "inference_loop(sample_key, rmh.step, initial_state, 100)",
            ("one_step", "logdensity_fn", "log_sigmoid", "sigmoid"),
            cells(stand_in(*IO),
                  Myst(BLACKJAX_BOOK, "book/models/logistic_regression.md", (2, 3)),
                  BLACKJAX_LOGREG_DATA,
                  Myst(BLACKJAX_BOOK, "book/models/logistic_regression.md", (6, 7, 8))),
            BLACKJAX_LOGREG),
    Program("search", OTT, "Sinkhorn 2x vmapped", "sink_2vmap(HIST_a, HIST_b, cost, 1, 0, 100)",
            ("sink",),
            cells(stand_in(*IO), Notebook(OTT, _SINK, (1,)), OTT_DATA,
                  Notebook(OTT, _SINK, (5, 6, 8, 10, 11, 12))), OTT_SINK),
    Program("science", JAX_MD, "nve soft spheres fori_loop", "lax.fori_loop(0, 10, step, state)",
            ("<lambda>", "step", "energy_fn"),
            cells(stand_in(*IO), "import os; os.environ['READTHEDOCS'] = '1'",
                  Body(JAX_MD, "examples/nve_simulation.py", None, "PE = []")), JAX_MD_NVE),
    Program("models", NANODO, "FSDP LM train step (mesh)", "trainer.step_fn(trainer.state, in_BxL)",
            ("TransformerDo", "TBlock", "CausalAttn", "Mlp", "loss_fn",
             "get_metrics"),
            cells(stand_in("clu", "clu.metric_writers", "clu.periodic_actions", "grain",
                           "grain.python", "orbax", "orbax.checkpoint", "tensorflow",
                           "tensorflow_datasets", "sentencepiece"),
                  Folder(NANODO, "nanodo", "."), Script(NANODO, "nanodo/train.py"),
                  NANODO_CONFIG,
                  Span(NANODO, "nanodo/train.py", "train_and_evaluate", "mesh =", "tokenizer"),
                  Span(NANODO, "nanodo/train.py", "train_and_evaluate", "model, get_loss_fn",
                       "train_ds")), NANODO_STEP),
]
