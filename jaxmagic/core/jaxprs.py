"""What every reader of a jaxpr shares: which primitives are collectives (and which of
those move no data), which hold nested jaxprs and in what order a walk visits them, and
how an abstract value prints (`f32[16,64]`, as JAX prints it). `graph.build` draws from
these; `--values`, `--sharding` and the cost model join their rows to its equations by
the same walk."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _compat

COLLECTIVES = frozenset({
    "psum", "pmax", "pmin", "pmean", "psum2", "psum_invariant", "pbroadcast", "pvary",
    "all_gather", "all_gather_invariant", "all_to_all", "ppermute", "psum_scatter",
    "reduce_scatter", "axis_index", "pgather", "all_reduce",
})


# Named like collectives but move no data: a change of type under shard_map's check of
# which values vary over a manual axis (`pcast`/`pvary`), or the device's own index.
NO_DATA = frozenset({"pvary", "pbroadcast", "pcast", "axis_index"})


# Nested-jaxpr kinds, by primitive name, in JAX 0.7 to 0.12.
CALLS = {"pjit": "jit", "jit": "jit", "closed_call": "call", "core_call": "call",
          "custom_jvp_call": "custom_jvp", "custom_vjp_call": "custom_vjp",
          "custom_vjp_call_jaxpr": "custom_vjp", "remat2": "remat", "checkpoint": "remat",
          "remat": "remat", "shard_map": "shard_map", "custom_lin": "custom_lin",
          "linear_call": "linear_call", "xla_pmap": "pmap", "xla_call": "jit"}


def jaxpr_params(eqn: Any) -> list:
    """An equation's parameters that hold jaxprs (a jaxpr, or a tuple of them)."""
    return [v for v in eqn.params.values() if isinstance(v, _compat.JAXPR_TYPES)
            or (isinstance(v, tuple) and v and isinstance(v[0], _compat.JAXPR_TYPES))]


def bodies(eqn: Any) -> list:
    """The sub-jaxprs `build` walks inside `eqn`, in its order; the walk order numbers
    equations (`Node.eqns`), so anything joined to them by index (`--values`) walks
    these too: a scan's body, a cond's branches, a while's cond then body, a call's
    first jaxpr."""
    p, prim = eqn.params, eqn.primitive.name
    if prim == "scan":
        return [p["jaxpr"]]
    if prim == "cond":
        return list(p["branches"])
    if prim == "while":
        return [p["cond_jaxpr"], p["body_jaxpr"]]
    subs = jaxpr_params(eqn)
    return subs[:1] if subs and isinstance(subs[0], _compat.JAXPR_TYPES) else []


_DTYPES = {"float": "f", "int": "i", "uint": "u", "complex": "c", "bfloat": "bf"}


_AVAL_TEXT: dict[Any, str] = {}


def aval_str(aval: Any) -> str:
    """`f32[16,64]`, as JAX prints avals in every jaxpr, from any shaped value: with the
    sharding its type carries on an Explicit mesh (`f32[8@X,4]`), its varying manual axes
    (`{V:i}`) and unreduced or reduced axes (`{U:X}`), as `jax.make_jaxpr` shows them."""
    try:
        return _AVAL_TEXT[aval]      # a 64-layer gradient prints 28,000 avals, 20 distinct
    except (KeyError, TypeError):
        text = _aval_text(aval)
    try:
        _AVAL_TEXT[aval] = text
    except TypeError:                # an unhashable aval
        pass
    return text


def _aval_text(aval: Any) -> str:
    if hasattr(aval, "str_short"):
        return _compat.typed_aval_str(aval)
    shape = getattr(aval, "shape", None)
    dtype = getattr(aval, "dtype", None)
    if shape is None or dtype is None:
        return type(aval).__name__
    name = np.dtype(dtype).name if not hasattr(dtype, "name") else dtype.name
    for long, abbrev in sorted(_DTYPES.items(), key=lambda kv: -len(kv[0])):
        if name.startswith(long) and name[len(long):].isdigit():
            name = abbrev + name[len(long):]
            break
    return f"{name}[{','.join(map(str, shape))}]"
