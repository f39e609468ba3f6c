"""The transformer the benchmarks (and the profile tests) trace: `layers` identical blocks
of attention and an MLP, with a layer norm, as a plain function of a parameter list."""
import jax
import jax.numpy as jnp


def block(p, x):
    q, k, v = x @ p['wq'], x @ p['wk'], x @ p['wv']
    a = jax.nn.softmax(q @ k.T / jnp.sqrt(q.shape[-1]), axis=-1)
    x = x + a @ v
    x = x + jnp.tanh(x @ p['w1']) @ p['w2']
    return (x - x.mean(-1, keepdims=True)) / (x.std(-1, keepdims=True) + 1e-5)


def model(params, x):
    for p in params:
        x = block(p, x)
    return jnp.sum(x ** 2)


def make(layers, d=128, t=128):
    """(params, x): `layers` blocks of width `d`, on `t` tokens."""
    k = jax.random.split(jax.random.PRNGKey(0), 5)
    p = {n: jax.random.normal(k[i], (d, d)) * 0.1
         for i, n in enumerate(['wq', 'wk', 'wv', 'w1', 'w2'])}
    return [dict(p) for _ in range(layers)], jnp.ones((t, d))
