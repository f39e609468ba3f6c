"""Flax NNX: Modules, Optimizers, Rngs and Variables are graphs of mutable state.

They are traced as `nnx.jit` traces them: split into a graph definition (held fixed) and
a state of arrays (traced), merged back into fresh objects inside the trace, and the state
the call changed is returned as outputs. The user's objects are never touched, so tracing
or measuring a train step neither trains the model nor advances an RNG counter.
"""
from __future__ import annotations

from typing import Any, Callable

import jax
from flax import nnx

from ... import _compat

_BASES = tuple(c for c in (getattr(nnx, "Pytree", None), getattr(nnx, "Object", None),
                           nnx.Variable) if c is not None)


def is_object(x: Any) -> bool:
    """An NNX object (Module, Optimizer, Rngs, Variable...)."""
    return isinstance(x, _BASES)


def holds_objects(x: Any) -> bool:
    """`x` is, or is a container of, NNX objects."""
    return any(is_object(leaf) for leaf in jax.tree_util.tree_leaves(x, is_leaf=is_object))


def unwrap_jit(f: Any) -> tuple[Callable, dict] | None:
    """(function, options) of an `nnx.jit` wrapper (flax's `JitWrapped`), else None."""
    if type(f).__name__ != "JitWrapped" or not type(f).__module__.startswith("flax"):
        return None
    fun = getattr(f, "fun", None) or getattr(f, "__wrapped__", None)
    if fun is None:
        return None
    opts = {}
    for name in ("static_argnums", "static_argnames", "donate_argnums", "donate_argnames"):
        val = getattr(f, name, None)
        if val:
            opts[name] = (val,) if isinstance(val, (int, str)) else tuple(val)
    # `nnx.jit(static_argnames=...)` keeps the names only on the jax.jit it wraps
    inner = _compat.jit_options(getattr(f, "jitted_fn", None))
    if inner is not None:
        opts.update(inner[1])
    return fun, opts


def unwrap_cached_partial(f: Any) -> tuple[Callable, tuple] | None:
    """(the function, its cached arguments) of an `nnx.cached_partial(f, model, ...)`,
    else None. Its cached arguments are clones sharing the user's Variables; passed as
    arguments they are split and merged like any other NNX argument, so measuring the
    partial neither mutates them from inside a trace nor changes the user's state."""
    code = getattr(f, "__code__", None)
    if code is None or code.co_name != "cache_args_wrapper" or \
            "flax" not in code.co_filename:
        return None
    cells = dict(zip(code.co_freevars, f.__closure__ or ()))
    try:
        return cells["f"].cell_contents, tuple(cells["cached_args"].cell_contents)
    except (KeyError, ValueError):      # another flax's wrapper: leave it as it is
        return None


def split(values: tuple) -> tuple[Any, list]:
    """One graph definition for all `values` (shared objects stay shared) and each one's
    state (empty for a value already reached through an earlier one)."""
    graphdef, state = nnx.split(tuple(values))
    parts = [state[i] if i in state else nnx.State({}) for i in range(len(values))]
    return graphdef, parts


def merge(graphdef: Any, parts: list) -> tuple:
    """Fresh objects from the graph definition and the (traced) states: new Variables
    too, so a call that updates them changes neither `parts` nor the user's objects."""
    return nnx.merge(graphdef, nnx.State({i: p for i, p in enumerate(parts)}), copy=True)


def state_of(values: tuple) -> list:
    """Each value's current state (after a call changed it)."""
    state = nnx.state(tuple(values))
    return [state[i] if i in state else nnx.State({}) for i in range(len(values))]


def leaf_names(prefix: str, part: Any) -> list[str]:
    """`model.l1.kernel` for each leaf of a state, in flattening order."""
    return [prefix + path_text(p) for p, _ in jax.tree_util.tree_flatten_with_path(part)[0]]


def path_text(path: tuple) -> str:
    out = []
    for k in path:
        key = getattr(k, "key", getattr(k, "name", getattr(k, "idx", k)))
        if isinstance(k, jax.tree_util.GetAttrKey) and key == "value":
            continue                      # a Variable's own value: the Variable is the name
        out.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    return "".join(out)
