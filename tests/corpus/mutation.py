# %% setitem | static: JX101@2 | runtime: JX101@2
x = jnp.arange(5)
x[0] = 10
# %% setitem_seed | static: JX101@3 | runtime: JX101@3
# JAX: immutable arrays
x = jnp.arange(10)
x[0] = 10
# %% iadd | static: JX102@2 | runtime: JX102@2
x = jnp.zeros(4)
x[1] += 2.0
# %% isub | static: JX102@3 | runtime: JX102@3
x = jnp.ones(4)
i = 2
x[i] -= 1.0
# %% imul | static: JX102@2 | runtime: JX102@2
x = jnp.ones((2, 2))
x[0, 1] *= 3
# %% idiv | static: JX102@2 | runtime: JX102@2
x = jnp.ones(3)
x[:2] /= 2
# %% ipow | static: JX102@2 | runtime: JX102@2
x = jnp.arange(4.0)
x[3] **= 2
# %% min_form | static: JX101@2 | runtime: JX101@2
x = jnp.array([5.0, 1.0, 7.0])
x[0] = jnp.minimum(x[0], 3.0)
# %% max_form | static: JX101@2 | runtime: JX101@2
x = jnp.array([5.0, 1.0, 7.0])
x[1] = jnp.maximum(x[1], 3.0)
# %% apply_form | static: JX101@2 | runtime: JX101@2
x = jnp.linspace(0, 1, 5)
x[2] = jnp.sin(x[2])
# %% ufunc_at_add | static: JX104@2 | runtime: JX104@2
x = jnp.zeros(5)
np.add.at(x, [0, 0, 1], 1.0)
# %% ufunc_at_unary | static: JX104@2 | runtime: JX104@2
x = jnp.arange(5.0)
np.negative.at(x, [1, 3])
# %% del_item | static: JX103@2 | runtime: JX103@2
x = jnp.arange(5)
del x[0]
# %% del_slice | static: JX103@2 | runtime: JX103@2
x = jnp.arange(5)
del x[1:3]
# %% discarded_set | static: JX105@2
x = jnp.zeros(3)
x.at[0].set(1.0)
print(x)
# %% discarded_sort | static: JX105@2
x = jnp.array([3, 1, 2])
x.sort()
# %% setitem_in_jit | static: JX101@3 | runtime: JX101@3
@jax.jit
def zero_first(x):
    x[0] = 0.0
    return x
zero_first(jnp.ones(3))
# %% iadd_in_fn_result | static: JX102@3 | runtime: JX102@3
y = jnp.sin(jnp.arange(3.0))
z = y * 2
z[0] += 1
# %% setitem_loop | static: JX101@3 | runtime: JX101@3
grid = jnp.zeros((3, 3))
for i in range(3):
    grid[i, i] = 1.0
# %% neg_at_forms | static: -
x = jnp.arange(6.0)
x = x.at[0].set(10.0)
x = x.at[1].add(1.0)
x = x.at[2].multiply(2.0)
x = x.at[3].divide(2.0)
x = x.at[4].power(2)
x = x.at[5].min(0.0)
x = x.at[0].max(3.0)
x = x.at[1].apply(jnp.sin)
y = x.at[2].get()
# %% neg_numpy_mutation | static: -
a = np.zeros(5)
a[0] = 1.0
a[1] += 2.0
a[2:4] *= 3
np.add.at(a, [0, 0], 1)
a.sort()
# %% neg_list_mutation | static: -
xs = [1, 2, 3]
xs[0] = 5
xs[1] += 1
del xs[2]
d = {"a": 1}
d["b"] = 2
# %% neg_converted_to_numpy | static: -
x = jnp.arange(3)
a = np.asarray(x)
a[0] = 7
b = np.array(jnp.ones(3))
b[1] = 0
# %% neg_rebound_to_numpy | static: -
x = jnp.arange(4)
x = np.array(x)
x[0] = 1
# %% neg_unknown_object | static: -
def update(state, i, v):
    state.buffer[i] = v
    state.values[i] += v
    return state
# %% neg_at_in_jit | static: -
@jax.jit
def step(x, i):
    x = x.at[i].add(1.0)
    return x.at[0].set(x[i])
step(jnp.zeros(3), 1)
# %% neg_functional_rebind | static: -
x = jnp.zeros(3)
x = x.at[0].set(1.0)
x = jnp.delete(x, 0)
x = x.sort()
