# %% where_sqrt | static: JX701@2
def loss(x):
    return jnp.where(x > 0, jnp.sqrt(x), 0.).sum()
g = jax.grad(loss)(jnp.array([0., 1.]))
# %% where_entropy_value_and_grad | static: JX701@2
def entropy(p):
    return -jnp.where(p > 0, p * jnp.log(p), 0.).sum()
value, grad = jax.value_and_grad(entropy)(jnp.array([0., 1.]))
# %% where_division_decorated | static: JX701@3
@jax.grad
def inverse(x):
    return jnp.where(x == 0, 0., 1. / x).sum()
# %% where_reversed_compare | static: JX701@2
def loss(d):
    return jnp.where(0 < d, jnp.log(d), -10.).mean()
jax.grad(loss)(jnp.zeros(3))
# %% double_where_is_safe | static: -
def loss(x):
    safe = jnp.where(x > 0, x, 1.)
    return jnp.where(x > 0, jnp.sqrt(safe), 0.).sum()
g = jax.grad(loss)(jnp.array([0., 1.]))
# %% where_without_grad | static: -
def forward(x):
    return jnp.where(x > 0, jnp.sqrt(x), 0.)
forward(jnp.array([0., 1.]))
# %% where_on_a_positive_branch | static: -
def loss(x):
    return jnp.where(x > 0, jnp.sqrt(x * x + 1.), 0.).sum()
jax.grad(loss)(jnp.ones(2))
