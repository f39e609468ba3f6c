# %% mask_seed | static: JX201@2 | runtime: JX201@2
def get_negatives(x):
    return x[x < 0]
x = jnp.array([-1.0, 2.0, -3.0])
jax.jit(get_negatives)(x)
# %% mask_var | static: JX201@4 | runtime: JX201@4
@jax.jit
def positive_sum(x):
    m = x > 0
    return x[m].sum()
positive_sum(jnp.arange(-2.0, 3.0))
# %% mask_at_set | static: JX201@3 | runtime: JX201@3
@jax.jit
def relu(x):
    return x.at[x < 0].set(0.0)
relu(jnp.arange(-2.0, 3.0))
# %% mask_setitem_jit | static: JX201@3
@jax.jit
def clip_neg(x):
    x[x < 0] = 0.0
    return x
# %% ifexp_seed | static: JX202@3 | runtime: JX202@3
@jax.jit
def f(x, neg):
    return -x if neg else x
f(1, True)
# %% if_stmt | static: JX202@3 | runtime: JX202@3
@jax.jit
def g(x):
    if x.sum() > 0:
        y = x
    else:
        y = -x
    return y
g(jnp.ones(3))
# %% while_traced | static: JX202@3 | runtime: JX202@3
@jax.jit
def grow(x):
    while x < 10:
        x = x * 2
    return x
grow(1.0)
# %% and_traced | static: JX202@3 | runtime: JX202@3
@jax.jit
def in_unit(x):
    return x > 0 and x < 1
in_unit(0.5)
# %% not_traced | static: JX202@3 | runtime: JX202@3
@jax.jit
def is_zero(x):
    return not x
is_zero(0.0)
# %% vmap_if | static: JX202@2 | runtime: JX202@2
def sign(x):
    if x > 0:
        return 1.0
    return -1.0
jax.vmap(sign)(jnp.arange(-1.0, 2.0))
# %% helper_from_jit | static: JX202@2 | runtime: JX202@2
def clamp(v):
    if v > 1.0:
        return 1.0
    return v
@jax.jit
def h(x):
    return clamp(x) * 2
h(3.0)
# %% max_builtin | static: JX202@3 | runtime: JX202@3
@jax.jit
def relu1(x):
    return max(x, 0.0)
relu1(2.0)
# %% range_traced | static: JX203@3 | runtime: JX203@3
@jax.jit
def power(x, n):
    for _ in range(n):
        x = x * x
    return x
power(2.0, 3)
# %% list_index_traced | static: JX203@4 | runtime: JX203@4
TABLE = [1.0, 2.0, 3.0]
@jax.jit
def lookup(x, i):
    return x * TABLE[i]
lookup(1.0, 1)
# %% zeros_traced | static: JX203@3 | runtime: JX203@3
@jax.jit
def pad(x, n):
    return jnp.concatenate([x, jnp.zeros(n)])
pad(jnp.ones(2), 3)
# %% arange_traced | static: JX203@3 | runtime: JX203@3
@jax.jit
def first_n(n):
    return jnp.arange(n).sum()
first_n(4)
# %% reshape_prod_seed | static: JX204@3 | runtime: JX204@3
@jax.jit
def flatten(x):
    return x.reshape(jnp.array(x.shape).prod())
flatten(jnp.ones((2, 3)))
# %% prod_var | static: JX204@4 | runtime: JX204@4
@jax.jit
def flat2(x):
    n = jnp.prod(jnp.array(x.shape))
    return jnp.reshape(x, (n,))
flat2(jnp.ones((2, 3)))
# %% nonzero_nosize | static: JX205@3 | runtime: JX205@3
@jax.jit
def where_pos(x):
    return jnp.nonzero(x > 0)
where_pos(jnp.arange(-2.0, 3.0))
# %% where_one_arg | static: JX205@3 | runtime: JX205@3
@jax.jit
def idx(x):
    return jnp.where(x > 0)
idx(jnp.arange(-2.0, 3.0))
# %% unique_nosize | static: JX205@3 | runtime: JX205@3
@jax.jit
def uniq(x):
    return jnp.unique(x)
uniq(jnp.array([1, 1, 2]))
# %% argwhere_vmap | static: JX205@2 | runtime: JX205@2
def nz(row):
    return jnp.argwhere(row)
jax.vmap(nz)(jnp.eye(3))
# %% slice_traced | static: JX206@3 | runtime: JX206@3
@jax.jit
def window(x, i):
    return x[i:i + 2]
window(jnp.arange(5.0), 1)
# %% slice_traced_stop | static: JX206@3 | runtime: JX206@3
@jax.jit
def head(x, n):
    return x[:n].sum()
head(jnp.arange(5.0), 2)
# %% int_tracer | static: JX207@3 | runtime: JX207@3
@jax.jit
def as_int(x):
    return int(x) + 1
as_int(2.0)
# %% float_tracer | static: JX207@3 | runtime: JX207@3
@jax.jit
def as_float(x):
    return float(x.sum())
as_float(jnp.ones(2))
# %% item_tracer | static: JX207@3 | runtime: JX207@3
@jax.jit
def first(x):
    return x[0].item()
first(jnp.ones(2))
# %% np_asarray_tracer | static: JX207@3 | runtime: JX207@3
@jax.jit
def to_np(x):
    return np.asarray(x) * 2
to_np(jnp.ones(2))
# %% np_func_tracer | static: JX207@3 | runtime: JX207@3
@jax.jit
def npsin(x):
    return np.sin(x)
npsin(jnp.ones(2))
# %% neg_shape_numpy_seed | static: -
@jax.jit
def flatten_ok(x):
    return x.reshape((np.prod(x.shape),))
flatten_ok(jnp.ones((2, 3)))
# %% neg_lax_cond | static: -
@jax.jit
def f(x, neg):
    return lax.cond(neg, lambda v: -v, lambda v: v, x)
f(1.0, True)
# %% neg_where | static: -
@jax.jit
def relu(x):
    return jnp.where(x > 0, x, 0.0)
relu(jnp.arange(-2.0, 3.0))
# %% neg_fori_loop | static: -
@jax.jit
def power(x, n):
    return lax.fori_loop(0, n, lambda i, acc: acc * x, 1.0)
power(2.0, 3)
# %% neg_static_range | static: -
@jax.jit
def cumulative(x):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + x[i]
    for j in range(3):
        total = total * 2
    return total
cumulative(jnp.ones(4))
# %% neg_static_argnames | static: -
from functools import partial
@partial(jax.jit, static_argnames=("n",))
def rep(x, n):
    out = jnp.zeros(n)
    for i in range(n):
        out = out.at[i].set(x)
    return out
rep(1.0, 3)
# %% neg_static_argnums_flag | static: -
@partial(jax.jit, static_argnums=(1,))
def f(x, neg):
    return -x if neg else x
f(1, True)
# %% neg_shape_conditions | static: -
@jax.jit
def norm(x, w=None):
    if x.ndim == 2 and x.shape[0] > 1:
        x = x - x.mean(0)
    if w is None:
        return x
    return x * w
norm(jnp.ones((3, 2)))
# %% neg_sized_ops | static: -
@jax.jit
def pos_idx(x):
    i = jnp.nonzero(x > 0, size=x.size, fill_value=-1)
    u = jnp.unique(x, size=3, fill_value=0)
    w = jnp.where(x > 0, x, 0.0)
    return i, u, w
pos_idx(jnp.arange(-2.0, 3.0))
# %% neg_dynamic_slice | static: -
@jax.jit
def window(x, i):
    return lax.dynamic_slice_in_dim(x, i, 2)
window(jnp.arange(5.0), 1)
# %% neg_eager_mask | static: -
x = jnp.array([-1.0, 2.0, -3.0])
neg = x[x < 0]
n = int(jnp.sum(x > 0))
if x.sum() > 0:
    print(float(x[0]), x.max().item())
# %% neg_grad_control_flow | static: -
def f(x):
    if x > 0:
        return x ** 2
    return -x
jax.grad(f)(2.0)
# %% neg_default_param | static: -
@jax.jit
def shift(x, n=3):
    return x + jnp.zeros(n)
shift(jnp.ones(3))
# %% neg_static_ints_numpy | static: -
@jax.jit
def f(x):
    n = x.shape[0] // 2
    k = int(np.prod(x.shape[1:]))
    return x[:n].reshape(n, k) + jnp.arange(k)
f(jnp.ones((4, 3)))
