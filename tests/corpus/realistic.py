# %% mlp_training_loop | static: -
import jax
import jax.numpy as jnp
from functools import partial

def init(key, sizes):
    keys = jax.random.split(key, len(sizes) - 1)
    return [(jax.random.normal(k, (m, n)) / jnp.sqrt(m), jnp.zeros(n))
            for k, m, n in zip(keys, sizes[:-1], sizes[1:])]

def forward(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b

def loss(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)

@jax.jit
def update(params, x, y, lr=0.1):
    grads = jax.grad(loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)

params = init(jax.random.key(0), [4, 8, 1])
x, y = jnp.ones((16, 4)), jnp.zeros((16, 1))
for epoch in range(3):
    params = update(params, x, y)
    if epoch % 1 == 0:
        print(epoch, float(loss(params, x, y)))
# %% scan_rnn | static: -
def rnn_step(h, x_t, w=jnp.eye(3)):
    h = jnp.tanh(h @ w + x_t)
    return h, h

@jax.jit
def run_rnn(h0, xs):
    h, hs = jax.lax.scan(rnn_step, h0, xs)
    return h, hs.sum(axis=0)

run_rnn(jnp.zeros(3), jnp.ones((5, 3)))
# %% per_example_grads | static: -
def example_loss(w, x, y):
    pred = jnp.dot(x, w)
    return (pred - y) ** 2

per_example = jax.jit(jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0)))
g = per_example(jnp.ones(3), jnp.ones((8, 3)), jnp.zeros(8))
print(g.shape, g.mean(0))
# %% dataclass_pytree | static: -
from dataclasses import dataclass

@jax.tree_util.register_dataclass
@dataclass
class State:
    step: jax.Array
    w: jax.Array

@jax.jit
def tick(state: State) -> State:
    if state.w.ndim > 1:
        w = state.w.sum(0)
    else:
        w = state.w
    return State(step=state.step + 1, w=w * 0.9)

s = tick(State(step=jnp.array(0), w=jnp.ones(3)))
# %% shard_map_psum | static: -
from jax.sharding import Mesh, PartitionSpec as P
mesh = Mesh(jax.devices()[:4], ("i",))

@jax.jit
@partial(jax.shard_map, mesh=mesh, in_specs=P("i"), out_specs=P())
def total(x):
    n = jax.lax.axis_size("i")
    if n > 1:
        x = x * 1.0
    return jax.lax.psum(x.sum(), "i")

total(jnp.arange(8.0))
# %% numpy_preprocessing | static: -
import numpy as np
data = np.random.default_rng(0).normal(size=(100, 4))
data[data < 0] = 0.0
mean = data.mean(axis=0)
data -= mean
batches = [jnp.asarray(data[i:i + 10]) for i in range(0, len(data), 10)]
for i, b in enumerate(batches):
    if i > 2:
        break
    print(b.shape, float(b.sum()))
# %% control_flow_done_right | static: -
@jax.jit
def collatz_steps(n):
    def cond(state):
        n, steps = state
        return n != 1
    def body(state):
        n, steps = state
        n = jax.lax.cond(n % 2 == 0, lambda v: v // 2, lambda v: 3 * v + 1, n)
        return n, steps + 1
    return jax.lax.while_loop(cond, body, (n, 0))[1]

collatz_steps(27)
# %% static_shapes_done_right | static: -
@partial(jax.jit, static_argnames=("k",))
def top_k_mean(x, k):
    idx = jnp.argsort(x)[-k:]
    return x[idx].mean()

@jax.jit
def masked_mean(x, mask):
    return jnp.sum(jnp.where(mask, x, 0.0)) / jnp.maximum(mask.sum(), 1)

top_k_mean(jnp.arange(10.0), k=3)
masked_mean(jnp.arange(4.0), jnp.array([True, False, True, False]))
# %% keys_and_checkpoint | static: -
key = jax.random.key(42)
key, sub = jax.random.split(key)
noise = jax.random.normal(sub, (3,))

@jax.checkpoint
def block(x):
    return jnp.sin(x) * jnp.cos(x)

@jax.jit
def net(x):
    for _ in range(4):
        x = block(x)
    return x

net(noise)
# %% image_convolution | static: -
from jax import lax
img = jnp.ones((1, 1, 8, 8))
kernel = jnp.ones((1, 1, 3, 3)) / 9.0
out = lax.conv_general_dilated(img, kernel, window_strides=(1, 1), padding="SAME")
x = jnp.array([1, 2, 1])
y = jnp.ones(10)
result = lax.conv_general_dilated(
    x.reshape(1, 1, 3).astype(float),
    y.reshape(1, 1, 10),
    window_strides=(1,),
    padding=[(len(y) - 1, len(y) - 1)])
result[0, 0]
# %% pallas_style_refs | static: -
def kernel(x_ref, o_ref, acc_scratch):
    @jax.jit
    def body(i, carry):
        acc_scratch[...] += x_ref[i]
        o_ref[...] = acc_scratch[...]
        return carry
    return body
# %% methods_with_jitted_helpers | static: -
class Trainer:
    def __init__(self, lr):
        self.lr = lr
        self.step_fn = jax.jit(self._step)
        self.history = []

    def _step(self, w, g):
        return w - self.lr * g

    def fit(self, w, grads):
        for g in grads:
            w = self.step_fn(w, g)
            self.history.append(float(jnp.abs(w).sum()))
        return w

Trainer(0.1).fit(jnp.ones(2), [jnp.ones(2)] * 3)
