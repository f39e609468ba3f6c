"""User code whose every name is a hostile string, for the escaping fuzz.

`jaxpr_target(p)` returns a function and arguments in which `p` is: the function's
`__name__`/`__qualname__`, a `jax.named_scope`, the name of an inner jitted function,
a pytree dict key (inputs and outputs), a field of a registered pytree dataclass, the
target of a custom call (`jax.ffi.ffi_call`, traced only), and a mesh axis name (shard_map
with a psum over it). The magic's line adds it once more as argument source text.
"""
from __future__ import annotations

import types

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


class Box:
    """A pytree node whose one field is named by the payload (registered per payload)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


def box_class(p: str) -> type:
    cls = type("Box", (Box,), {})
    jax.tree_util.register_dataclass(cls, data_fields=[p], meta_fields=[])
    return cls


def rename(fn: types.FunctionType, p: str) -> types.FunctionType:
    """`fn` named `p` everywhere a name shows: __name__, __qualname__ and its code's name
    (what tracebacks and frames report)."""
    fn.__name__ = fn.__qualname__ = p
    code = fn.__code__.replace(co_name=p)
    if hasattr(code, "co_qualname"):
        code = code.replace(co_qualname=p)
    fn.__code__ = code
    return fn


def mesh(p: str, shape=(8,), other: tuple[str, ...] = ()) -> Mesh:
    devices = np.array(jax.devices()[: int(np.prod(shape))]).reshape(shape)
    return Mesh(devices, (p, *other))


def jaxpr_target(p: str):
    """(f, d, box) for `%jaxpr f(d[p], box)`."""
    m = mesh(p)
    scope = p or "-"

    def inner(v):
        return v * 2

    rename(inner, p)

    def f(x, box):
        x = x[p]
        with jax.named_scope(scope):
            y = jnp.sin(x)
        y = jax.jit(inner)(y) + getattr(box, p)
        y = jax.ffi.ffi_call(p or "t", jax.ShapeDtypeStruct(y.shape, y.dtype))(y)
        total = jax.shard_map(lambda a: jax.lax.psum(a, p), mesh=m, in_specs=P(p),
                              out_specs=P())(y)
        return {p: total}

    rename(f, p)
    d = {p: {p: jnp.arange(8.0)}}
    return f, d, box_class(p)(**{p: jnp.ones(8)})


def memory_target(p: str):
    """(f, d) for `%jaxpr --memory f(d[p])`: a compiled gradient whose function, scope,
    input key and output key are p."""
    scope = p or "-"

    def f(x):
        x = x[p]
        with jax.named_scope(scope):
            y = jnp.tanh(x @ x.T)
        return {p: (y ** 2).sum()}

    rename(f, p)
    return f, {p: {p: jnp.ones((64, 64))}}


def sharding_target(p: str):
    """(f, d) for `%jaxpr --sharding f(d[p])`: a matmul under a scope p whose weight, under
    key p, is sharded so the partitioner gathers it at its use: the collectives table and
    the graph name the input, the line and the group."""
    devices = np.array(jax.devices()[:8]).reshape(2, 4)
    mesh = Mesh(devices, ("data", "model"))
    scope = p or "-"

    def f(t):
        with jax.named_scope(scope):
            return {p: t["x"] @ t[p]}

    rename(f, p)
    x = jax.device_put(jnp.ones((64, 32)), NamedSharding(mesh, P("data", None)))
    w = jax.device_put(jnp.ones((32, 256)), NamedSharding(mesh, P(("data", "model"), None)))
    return f, {p: {"x": x, p: w}}


def impure_target(p: str):
    """(g, d) for `%jit_compare g(d[p])`: eager and jit differ (a NumPy random number is
    baked into the trace), so the differing output leaf `out[p]` is named."""
    def g(x):
        return {p: jnp.sin(x) * np.random.rand()}

    rename(g, p)
    return g, {p: jnp.ones(3)}


def needs_static(p: str):
    """(h, d, s) for `%jit_compare h(d[p], s[p])`: s[p] is an int used as a size, so it
    must be static (a string would be held static on its own)."""
    def h(x, size):
        return x * jnp.ones(size).sum()

    return rename(h, p), {p: jnp.ones(3)}, {p: 2}


def boom(p: str):
    """A function named `p` raising ValueError(p) while JAX traces it."""
    def b(x):
        raise ValueError(p)

    return rename(b, p)


def sharded(p: str):
    """{p: array sharded over a mesh whose first axis is named p}."""
    other = "other" if p != "other" else "other2"
    m = mesh(p, (2, 4), (other,))
    a = jax.device_put(jnp.zeros((8, 8)), NamedSharding(m, P(p, other)))
    return {p: a}
