# %% str_arg | static: JX601@4 | runtime: JX601@4
@jax.jit
def act(x, mode):
    return x
act(1.0, "relu")
# %% str_kwarg | static: JX601@4 | runtime: JX601@4
@jax.jit
def act(x, mode="relu"):
    return x
act(1.0, mode="tanh")
# %% function_arg | static: JX601@4 | runtime: JX601@4
@jax.jit
def apply(f, x):
    return f(x)
apply(jnp.sin, 1.0)
# %% lambda_arg | static: JX601@4 | runtime: JX601@4
@jax.jit
def apply(x, f):
    return f(x)
apply(1.0, lambda v: v + 1)
# %% list_as_shape | static: JX203@3 JX601@4 | runtime: JX203@3
@jax.jit
def reshape(x, shape):
    return x.reshape(shape)
reshape(jnp.ones(6), [2, 3])
# %% wrapper_str | static: JX601@4 | runtime: JX601@4
def scale(x, how):
    return x * 2
scale_jit = jax.jit(scale)
scale_jit(1.0, "double")
# %% unhashable_list | static: JX602@5 | runtime: JX602@5
from functools import partial
@partial(jax.jit, static_argnums=1)
def tile(x, reps):
    return jnp.tile(x, reps)
tile(jnp.ones(2), [2, 2])
# %% unhashable_dict | static: JX602@4 | runtime: JX602@4
@partial(jax.jit, static_argnames=("cfg",))
def f(x, cfg):
    return x * cfg["scale"]
f(1.0, cfg={"scale": 2.0})
# %% method_self | static: JX603@2 | runtime: JX603@8
class Model:
    @jax.jit
    def forward(self, x):
        return x * self.w
    def __init__(self):
        self.w = 2.0
m = Model()
m.forward(1.0)
# %% neg_static_str | static: -
@partial(jax.jit, static_argnames=("mode",))
def act(x, mode):
    return jnp.tanh(x) if mode == "tanh" else jnp.maximum(x, 0)
act(1.0, "tanh")
act(1.0, mode="relu")
# %% neg_static_tuple | static: -
@partial(jax.jit, static_argnums=1)
def tile(x, reps):
    return jnp.tile(x, reps)
tile(jnp.ones(2), (2, 2))
# %% neg_method_static_self | static: -
class Scaler:
    def __init__(self, k):
        self.k = k
    def __hash__(self):
        return hash(self.k)
    def __eq__(self, other):
        return isinstance(other, Scaler) and other.k == self.k
    @partial(jax.jit, static_argnums=0)
    def __call__(self, x):
        return x * self.k
Scaler(2.0)(1.0)
# %% neg_jit_bound_method | static: -
class Net:
    def __init__(self):
        self.w = 2.0
        self.fwd = jax.jit(self._fwd)
    def _fwd(self, x):
        return x * 2
Net().fwd(1.0)
# %% neg_pytree_args | static: -
@jax.jit
def total(params, xs):
    return params["w"] * sum(xs)
total({"w": 2.0}, [jnp.ones(2), jnp.ones(2)])
# %% neg_unjitted_strings | static: -
def act(x, mode):
    return x if mode == "linear" else jnp.tanh(x)
act(1.0, "tanh")
