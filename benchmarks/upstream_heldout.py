"""Held-out train steps for `bench_upstream.py`: public models nobody here tuned on.

The automatic depth of `%jaxpr` was tuned on Flax's gemma and lm1b examples; these four
check that it generalises. Each is upstream code at a pinned commit, run unmodified: a
Flax example imported from its folder, or a notebook's code cells run verbatim in the
shell, in order, as a user runs them. Only what a train step does not need is left out:
data loading and training loops (their cells are skipped), with small configs set after
the notebook's own hyperparameters and random data of the shapes the loaders yield. Each
step is built as its example builds it (`jax.pmap` with the example's axes, `nnx.jit`,
`eqx.filter_jit`).

- Flax `examples/imagenet`: Linen ResNet18 (8 filters, 32 px images), its `train_step`
  with batch_stats under `jax.pmap(..., in_axes=(None, 0), axis_name='batch')`.
- Flax `examples/wmt`: Linen encoder-decoder Transformer, 2 layers, replicated state,
  `jax.pmap(partial(train_step, ...), axis_name='batch', donate_argnums=(0,))`.
- Flax `docs_nnx/mnist_tutorial.ipynb`: the NNX CNN, code cells 3, 5, 6, 7 (model,
  optimizer and metrics, `@nnx.jit train_step`, `nnx.view`); its call from cell 10.
- Equinox `docs/examples/vision_transformer.ipynb`: code cells 1, 2, 4-7 (imports,
  hyperparameters, PatchEmbedding, AttentionBlock, VisionTransformer, `@eqx.filter_jit
  step_model`), 4 blocks of width 32; model and optimizer as its cell 8 makes them.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

FLAX = ("google+flax", "18f8f311c275d57f46d95e41b15aa97b454754c0")
EQUINOX = ("patrick-kidger+equinox", "9336d820b2ef66b360fc6cb3611b3da5cefbb14d")


class Absent:
    """Whatever an IO-only or plotting module's names are used for at import time
    (annotations such as `tf.data.Dataset`, decorators, a class deriving from one,
    `gym.Wrapper`): nothing, never called by a train step."""

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Absent()

    def __call__(self, *args, **kwargs):
        return Absent()

    __getitem__ = __or__ = __ror__ = __call__


def stand_in_attribute(attr: str):
    """A stand-in module's `__getattr__`: every public name is `Absent`."""
    if attr.startswith("__"):
        raise AttributeError(attr)
    return Absent()


@dataclass(frozen=True)
class Notebook:
    """Code cells of a notebook at a pinned commit, counted from 1 as they appear."""

    repo: tuple[str, str]
    path: str
    cells: tuple[int, ...]

    def sources(self, mirrors: Path) -> list[str]:
        name, commit = self.repo
        text = subprocess.run(["git", f"--git-dir={mirrors / name / 'repo'}", "show",
                               f"{commit}:{self.path}"], capture_output=True, check=True,
                              text=True).stdout
        code = [c for c in json.loads(text)["cells"] if c["cell_type"] == "code"]
        return ["".join(code[n - 1]["source"]) for n in self.cells]


IMAGENET = """
import sys; sys.path.insert(0, EXAMPLES + '/imagenet')
import functools
import jax, jax.numpy as jnp
import models, train
from configs import default
config = default.get_config()
model = train.create_model(model_cls=models.ResNet18, half_precision=False, num_filters=8)
learning_rate_fn = train.create_learning_rate_fn(config, 0.1, steps_per_epoch=10)
state = train.create_train_state(jax.random.key(0), config, model, 32, learning_rate_fn)
n = jax.local_device_count()
batch = {'image': jax.random.normal(jax.random.key(1), (n, 2, 32, 32, 3)),
         'label': jax.random.randint(jax.random.key(2), (n, 2), 0, train.NUM_CLASSES)}
p_train_step = jax.pmap(functools.partial(train.train_step, learning_rate_fn=learning_rate_fn),
                        in_axes=(None, 0), out_axes=(None, 0), axis_name='batch')
"""

WMT = """
import sys; sys.path.insert(0, EXAMPLES + '/wmt')
import functools
import jax, jax.numpy as jnp, optax
from flax import jax_utils, linen as nn
from flax.training import common_utils
import models, train
train_config = models.TransformerConfig(
    vocab_size=64, output_vocab_size=64, emb_dim=32, num_heads=2, num_layers=2, qkv_dim=32,
    mlp_dim=64, max_len=16, dropout_rate=0.1, attention_dropout_rate=0.1,
    deterministic=False, decode=False, kernel_init=nn.initializers.xavier_uniform(),
    bias_init=nn.initializers.normal(stddev=1e-6))
eval_config = train_config.replace(deterministic=True)
m = models.Transformer(eval_config)
initial_variables = jax.jit(m.init)(jax.random.key(0), jnp.ones((2, 16), jnp.float32),
                                    jnp.ones((2, 16), jnp.float32))
learning_rate_fn = train.create_learning_rate_schedule(learning_rate=0.0625, warmup_steps=10)
state = train.TrainState.create(
    apply_fn=m.apply, params=initial_variables['params'],
    tx=optax.adamw(learning_rate=learning_rate_fn, b1=0.9, b2=0.98, eps=1e-9,
                   weight_decay=0.0),
    dynamic_scale=None)
state = jax_utils.replicate(state)
p_train_step = jax.pmap(functools.partial(train.train_step, config=train_config,
                                          learning_rate_fn=learning_rate_fn,
                                          label_smoothing=0.1),
                        axis_name='batch', donate_argnums=(0,))
n = jax.local_device_count()
tokens = jax.random.randint(jax.random.key(1), (2, n * 2, 16), 1, 64)
batch = common_utils.shard({'inputs': tokens[0], 'targets': tokens[1]})
dropout_rngs = jax.random.split(jax.random.key(2), n)
"""

MNIST = """
import jax
batch_size = 32  # as cell 2, which loads the data, sets it
rngs = nnx.Rngs(0)
batch = {'image': jax.random.uniform(jax.random.key(1), (batch_size, 28, 28, 1)),
         'label': jax.random.randint(jax.random.key(2), (batch_size,), 0, 10)}
"""

VIT = """
embedding_dim, hidden_dim, num_heads, num_layers, batch_size = 32, 64, 2, 4, 4
key = jr.PRNGKey(2003)
model = VisionTransformer(embedding_dim=embedding_dim, hidden_dim=hidden_dim,
                          num_heads=num_heads, num_layers=num_layers,
                          dropout_rate=dropout_rate, patch_size=patch_size,
                          num_patches=num_patches, num_classes=num_classes, key=key)
optimizer = optax.adamw(learning_rate=lr, b1=beta1, b2=beta2)
state = optimizer.init(eqx.filter(model, eqx.is_inexact_array))
images = np.asarray(jr.normal(jr.PRNGKey(1), (batch_size, channels, height, width)))
labels = np.asarray(jr.randint(jr.PRNGKey(2), (batch_size,), 0, num_classes))
key, *subkeys = jr.split(key, num=batch_size + 1)
subkeys = jnp.array(subkeys)
"""

# title, setup, call, the names the graph gives the model's own modules (Linen's scope
# names where the model sets them: wmt's `encoderblock_0`), notebook cells run first
HELD_OUT = [
    ("imagenet ResNet18 (Linen)", IMAGENET, "p_train_step(state, batch)",
     ("ResNet", "ResNetBlock"), None),
    ("wmt Transformer (Linen)", WMT, "p_train_step(state, batch, dropout_rng=dropout_rngs)",
     ("Transformer", "encoder", "decoder", "encoderblock", "encoderdecoderblock", "MlpBlock",
      "posembed"), None),
    ("mnist_tutorial CNN (NNX)", MNIST, "train_step(train_model, optimizer, metrics, rngs, batch)",
     ("CNN",), Notebook(FLAX, "docs_nnx/mnist_tutorial.ipynb", (3, 5, 6, 7))),
    ("Equinox ViT notebook", VIT, "step_model(model, optimizer, state, images, labels, subkeys)",
     ("VisionTransformer", "AttentionBlock", "PatchEmbedding"),
     Notebook(EQUINOX, "docs/examples/vision_transformer.ipynb", (1, 2, 4, 5, 6, 7))),
]
