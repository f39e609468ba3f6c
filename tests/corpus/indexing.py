# %% oob_read | static: JX401@2
x = jnp.arange(3)
y = x[5]
# %% oob_negative | static: JX401@2
x = jnp.arange(3)
y = x[-4]
# %% oob_2d | static: JX401@2
m = jnp.zeros((2, 3))
v = m[1, 3]
# %% oob_literal | static: JX401@1
v = jnp.array([1, 2, 3])[3]
# %% oob_at_get | static: JX401@2
x = jnp.arange(4.0)
v = x.at[7].get()
# %% oob_set | static: JX402@2
x = jnp.zeros(3)
x = x.at[10].set(1.0)
# %% oob_add | static: JX402@2
x = jnp.ones((2, 2))
x = x.at[0, 2].add(1.0)
# %% oob_checkify_read | static: - | runtime: JX401@2
def f(x):
    return x[5]
checkified(f)(jnp.arange(3))
# %% oob_checkify_update | static: - | runtime: JX402@2
def f(x):
    return x.at[5].set(1)
checkified(f)(jnp.arange(3))
# %% oob_checkify_jit | static: - | runtime: JX401@2
def gather(x, i):
    return x[i]
checkified(gather, jit=True)(jnp.arange(3), 7)
# %% neg_in_bounds | static: -
x = jnp.arange(3)
a = x[2]
b = x[-3]
m = jnp.zeros((2, 3))
c = m[1, 2]
d = m[-1]
# %% neg_fill_mode | static: -
x = jnp.arange(3.0)
v = x.at[5].get(mode="fill", fill_value=jnp.nan)
x = x.at[5].set(1.0, mode="drop")
# %% neg_slices | static: -
x = jnp.arange(3)
a = x[1:10]
b = x[None, 0]
c = x[..., 2]
# %% neg_numpy_oob | static: -
a = np.arange(3)
try:
    a[5]
except IndexError:
    pass
# %% neg_reshaped | static: -
x = jnp.arange(6).reshape(2, 3)
v = x[1, 2]
y = jnp.arange(3)
y = jnp.concatenate([y, y])
w = y[5]
