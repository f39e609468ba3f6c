# %% nested_dict_update | static: JX101@3
params = {"w": jnp.zeros((2, 2)), "b": jnp.zeros(2)}
w = params["w"]
w[0, 0] = 1.0
# %% loop_fill_in_jit | static: JX101@5
@jax.jit
def cumulative(x):
    out = jnp.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[:i + 1].sum()
    return out
# %% shape_then_value | static: JX202@3
@jax.jit
def safe_normalize(x):
    if x.shape[0] > 0 and x.sum() > 0:
        return x / x.sum()
    return x
# %% shape_argument | static: JX203@3 JX601@4
@jax.jit
def make(x, shape):
    return jnp.zeros(shape) + x
make(1.0, (2, 3))
# %% inline_jit_string | static: JX601@3
def reduce(x, how):
    return x.sum() if how == "sum" else x.mean()
jax.jit(reduce)(jnp.ones(3), "mean")
# %% argmax_into_list | static: JX207@4
LABELS = ["cat", "dog", "bird"]
@jax.jit
def predict(logits):
    return LABELS[int(jnp.argmax(logits))]
# %% float64_numpy_dtype | static: JX502@1
weights = jnp.zeros(3, dtype=np.float64)
# %% step_counter_global | static: JX303@5
step = 0
@jax.jit
def train_step(w):
    global step
    step = step + 1
    return w * 0.9
# %% vmap_where_one_arg | static: JX205@2
def positions(row):
    return jnp.where(row > 0)[0]
jax.vmap(positions)(jnp.eye(3))
# %% print_loss_in_jit | static: JX301@4
@jax.jit
def loss_fn(w, x):
    l = jnp.mean((x @ w) ** 2)
    print("loss:", l)
    return l
