# %% print_traced | static: JX301@3
@jax.jit
def f(x):
    print("x =", x)
    return x * 2
f(1.0)
# %% print_fstring_seed | static: JX301@3 JX301@5
@jax.jit
def f(x, y):
    print(f"  x = {x}")
    result = jnp.dot(x + 1, y + 1)
    print(f"  result = {result}")
    return result
f(np.ones((3, 4)), np.ones(4))
# %% print_static | static: JX301@3
@jax.jit
def f(x):
    print("tracing f")
    return x + 1
# %% print_in_scan_body | static: JX301@2
def body(carry, x):
    print(carry)
    return carry + x, carry
lax.scan(body, 0.0, jnp.arange(3.0))
# %% append_outer | static: JX302@4
results = []
@jax.jit
def f(x):
    results.append(x)
    return x
f(1.0)
# %% dict_outer | static: JX302@4
cache = {}
@jax.jit
def f(x):
    cache["last"] = x
    return x
# %% attr_outer | static: JX302@6
class Box:
    pass
box = Box()
@jax.jit
def f(x):
    box.value = x + 1
    return x
# %% global_write | static: JX303@5
counter = 0
@jax.jit
def f(x):
    global counter
    counter += 1
    return x
f(1.0)
# %% nonlocal_write | static: JX303@6
def make():
    total = 0.0
    @jax.jit
    def add(x):
        nonlocal total
        total = total + x
        return total
    return add
# %% stale_scalar | static: JX304@6
scale = 2.0
@jax.jit
def f(x):
    return x * scale
f(1.0)
scale = 3.0
f(1.0)
# %% stale_array | static: JX304@6
bias = jnp.zeros(3)
@jax.jit
def f(x):
    return x + bias
print(f(jnp.ones(3)))
bias = jnp.ones(3)
print(f(jnp.ones(3)))
# %% stale_loop | static: JX304@5
lr = 0.1
@jax.jit
def step(w):
    return w - lr * w
for lr in [0.1, 0.01]:
    w = step(1.0)
# %% leaked_tracer | static: JX302@5 | runtime: JX305@8
store = []
@jax.jit
def f(x):
    y = x * 2
    store.append(y)
    return x
f(1.0)
z = store[0] + 1
# %% leaked_attr | static: JX302@6 | runtime: JX305@9
class State:
    pass
s = State()
@jax.jit
def g(x):
    s.v = x + 1
    return x
g(2.0)
jnp.sin(s.v)
# %% np_random | static: JX306@3
@jax.jit
def noisy(x):
    return x + np.random.randn(3)
noisy(jnp.zeros(3))
# %% py_random | static: JX306@4
import random
@jax.jit
def jitter(x):
    return x + random.random()
# %% neg_debug_print | static: -
@jax.jit
def f(x):
    jax.debug.print("x = {x}", x=x)
    return x * 2
print(f(1.0))
# %% neg_local_list | static: -
@jax.jit
def f(x):
    ys = []
    for i in range(3):
        ys.append(x * i)
    d = {}
    d["a"] = x
    return jnp.stack(ys) + d["a"]
f(1.0)
# %% neg_global_read_constant | static: -
scale = 2.0
@jax.jit
def f(x):
    return x * scale
f(1.0)
f(2.0)
# %% neg_rebind_before_call | static: -
scale = 2.0
@jax.jit
def f(x):
    return x * scale
scale = 3.0
f(1.0)
# %% neg_global_as_argument | static: -
scale = 2.0
@jax.jit
def f(x, scale):
    return x * scale
f(1.0, scale)
scale = 3.0
f(1.0, scale)
# %% neg_jax_random | static: -
key = jax.random.key(0)
@jax.jit
def noisy(key, x):
    return x + jax.random.normal(key, x.shape)
noisy(key, jnp.zeros(3))
noise = np.random.randn(3)
# %% neg_eager_side_effects | static: -
history = []
def train_step(x):
    print("step", x)
    history.append(x)
    return x + 1
train_step(jnp.ones(2))
# %% nnx_variable_under_jax_jit | static: JX307@5
from flax import nnx
count = nnx.Variable(jnp.array(0))
@jax.jit
def step(count):
    count[...] += 1
step(count)
# %% nnx_module_under_jax_jit | static: JX307@8
from flax import nnx
class Counter(nnx.Module):
    def __init__(self):
        self.n = nnx.Variable(jnp.array(0))
counter = Counter()
@jax.jit
def tick(counter):
    counter.n.value = counter.n.value + 1
tick(counter)
# %% neg_nnx_jit_propagates | static: -
from flax import nnx
count = nnx.Variable(jnp.array(0))
@nnx.jit
def step(count):
    count[...] += 1
step(count)
# %% neg_array_ref_under_jit | static: -
x_ref = jax.new_ref(jnp.zeros(3))
@jax.jit
def fill(x_ref):
    x_ref[...] = jnp.ones(3)
fill(x_ref)
# %% neg_optax_update_is_pure | static: -
import optax
optimizer = optax.adam(1e-3)
params = {"w": jnp.ones(3)}
opt_state = optimizer.init(params)
@jax.jit
def step(params, opt_state, grads):
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state
# %% neg_metrics_dict_from_helper | static: -
def compute_metrics(logits, labels):
    return {"loss": jnp.mean((logits - labels) ** 2)}
@jax.jit
def train_step(x, y):
    metrics = compute_metrics(x, y)
    metrics["lr"] = 0.1
    return metrics
