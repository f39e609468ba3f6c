"""Model libraries (Flax NNX, Equinox, ...): each module knows one library's objects.

A module here is consulted only when the user has already imported its library (it is in
`sys.modules`); jaxmagic never imports a model library itself, and each library's private
names stay in its own module.
"""
from __future__ import annotations

import functools
import sys
import types
from typing import Any, Callable

import jax
import numpy as np

from ... import _compat


def nnx():
    """The Flax NNX support module, when the user has imported `flax.nnx`; else None."""
    if "flax.nnx" not in sys.modules:
        return None
    from . import flax_nnx

    return flax_nnx


def unwrap_jit(f: Any) -> tuple[Callable, dict, str] | None:
    """(Python function, jit options, wrapper name) of a jitted callee, else None.

    Knows `jax.jit`, `nnx.jit`, `eqx.filter_jit`, a `functools.partial` of any of them
    and a method jitted in its class (`self` bound as a partial binds it), and jit of a
    partial: the function is the partial, named by what it wraps."""
    if isinstance(f, types.MethodType):
        f = functools.partial(f.__func__, f.__self__)
    if isinstance(f, functools.partial):
        inner = unwrap_jit(f.func)
        if inner is None:
            return None
        fun, opts, kind = inner
        return functools.partial(fun, *f.args, **f.keywords), _shift(opts, len(f.args)), kind
    opts = _compat.jit_options(f)
    if opts is not None:
        return opts[0], opts[1], "jax.jit"
    if "flax.nnx" in sys.modules:
        from . import flax_nnx

        found = flax_nnx.unwrap_jit(f)
        if found is not None:
            return found[0], found[1], "nnx.jit"
    if "equinox" in sys.modules:
        from . import equinox

        fun = equinox.unwrap_jit(f)
        if fun is not None:
            return fun, equinox.jit_options(f), "eqx.filter_jit"
    return None


def resolved(opts: dict, args: tuple, kwargs: dict) -> dict:
    """`unwrap_jit`'s options for a call with `args` and `kwargs`: Equinox's `donate_from`
    as the array arguments it donates (`donate_argnums` and `donate_argnames`)."""
    if "donate_from" not in opts:
        return opts
    out = {k: v for k, v in opts.items() if k != "donate_from"}
    out["donate_argnums"] = tuple(i for i, x in enumerate(args)
                                  if i >= opts["donate_from"] and _holds_arrays(x))
    out["donate_argnames"] = tuple(k for k, x in kwargs.items() if _holds_arrays(x))
    return out


def _holds_arrays(tree: Any) -> bool:
    """Whether a JAX or NumPy array is among `tree`'s leaves (what Equinox donates)."""
    return any(isinstance(x, (jax.Array, np.ndarray)) for x in jax.tree_util.tree_leaves(tree))


def cached_arguments(f: Any) -> tuple[Callable, tuple] | None:
    """(function, leading arguments) of a callee that holds some of its arguments itself
    (`nnx.cached_partial(train_step, model, optimizer)`), so they are passed explicitly."""
    found = nnx()
    return found.unwrap_cached_partial(f) if found is not None else None


def _shift(opts: dict, bound: int) -> dict:
    """A partial binds `bound` leading arguments: static/donate positions move down."""
    out = dict(opts)
    for key in ("static_argnums", "donate_argnums"):
        if key in out:
            out[key] = tuple(i - bound for i in out[key] if i >= bound)
    return out


def func_name(f: Any) -> str:
    """The name of the Python function a callee runs (through partials and jit)."""
    while isinstance(f, functools.partial):
        f = f.func
    return getattr(f, "__name__", None) or type(f).__name__
