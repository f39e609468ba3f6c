# %% lax_int_float_seed | static: JX501@2 | runtime: JX501@2
from jax import lax
lax.add(1, 1.0)
# %% lax_arrays | static: JX501@3 | runtime: JX501@3
x = jnp.ones(3)
i = jnp.arange(3)
y = lax.mul(x, i)
# %% lax_float16 | static: JX501@2 | runtime: JX501@2
h = jnp.float16(1.0)
z = lax.add(h, 1.0)
# %% lax_in_jit | static: JX501@3 | runtime: JX501@3
@jax.jit
def f(x):
    return lax.max(jnp.tanh(x), 0)
f(jnp.ones(3))
# %% float64_array | static: JX502@1
x = jnp.array([1.0, 2.0], dtype=jnp.float64)
# %% float64_astype | static: JX502@2
x = jnp.arange(3)
y = x.astype(jnp.float64)
# %% float64_string | static: JX502@1
z = jnp.zeros(3, dtype="float64")
# %% float64_scalar | static: JX502@1
eps = jnp.float64(1e-12)
# %% int64_zeros | static: JX502@1
counts = jnp.zeros(10, jnp.int64)
# %% neg_jnp_promotes | static: -
a = jnp.add(1, 1.0)
b = jnp.ones(3) * jnp.arange(3)
# %% neg_explicit_promotion | static: -
c = lax.add(jnp.float32(1), 1.0)
x = jnp.ones(3)
d = lax.mul(x, jnp.arange(3).astype(jnp.float32))
e = lax.add(jnp.arange(3), 1)
# %% neg_x64_enabled | static: -
jax.config.update("jax_enable_x64", True)
x = jnp.array([1.0], dtype=jnp.float64)
jax.config.update("jax_enable_x64", False)
# %% neg_numpy_float64 | static: -
a = np.zeros(3, dtype=np.float64)
b = np.arange(3).astype(np.float64)
c = np.float64(1.0)
# %% neg_float32 | static: -
x = jnp.zeros(3, dtype=jnp.float32)
y = x.astype("float32")
z = jnp.array([1, 2], dtype=int)
