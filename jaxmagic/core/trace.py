"""Trace a call to its jaxpr, naming every input and output by source text and pytree path."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import jax

from .. import _compat
from . import calltree
from .arguments import (
    ArgCall,
    JitArgumentError,
    StaticArgumentError,
    check_arguments,
    concretization_argument,
    param_names,
)
from .target import BoundCall


@dataclass
class Traced:
    """A traced call: the closed jaxpr plus the names its flat inputs and outputs carry."""

    jaxpr: Any
    in_names: list[str]
    out_names: list[str]
    func_name: str
    call: BoundCall
    static_argnums: tuple[int, ...]
    static_argnames: tuple[str, ...]


def _normalise(static_argnums, static_argnames, nargs: int):
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums or ())
    names = (static_argnames,) if isinstance(static_argnames, str) else \
        tuple(static_argnames or ())
    return tuple(n % nargs if nargs and n < 0 else n for n in nums), names


def _leaf_names(prefix: str, tree: Any) -> list[str]:
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return [prefix + jax.tree_util.keystr(path) for path, _ in leaves]


def trace(call: BoundCall, static_argnums: Sequence[int] | int | None = None,
          static_argnames: Sequence[str] | str | None = None) -> Traced:
    """Trace `call` with its static arguments held fixed (as `jax.jit` would)."""
    __tracebackhide__ = True      # the user's error shows their frames, not ours
    nums, names = _normalise(static_argnums, static_argnames, len(call.args))
    # the same argument checks as %jit_compare: a str or an int used as a size says which
    # argument to mark static, instead of JAX's error about our wrapper's arguments
    info = ArgCall(call.func, tuple(call.args), dict(call.kwargs), list(call.arg_names),
                   dict(call.kwarg_names), call.source, param_names(call.func))
    nums = tuple(sorted(set(nums) | {info.params.index(k) for k in names if k in info.params
                                     and info.params.index(k) < len(call.args)}))
    for n in nums:
        if not 0 <= n < len(call.args):
            raise JitArgumentError(f"static_argnums {n} is out of range for "
                                   f"{len(call.args)} positional arguments",
                                   "count positional arguments from 0")
    dyn_pos = [i for i in range(len(call.args)) if i not in nums]
    dyn_kw = sorted(k for k in call.kwargs if k not in names)  # pytree order

    def fixed(*dyn_args, **dyn_kwargs):
        __tracebackhide__ = True
        args = list(call.args)
        for i, v in zip(dyn_pos, dyn_args):
            args[i] = v
        kwargs = {**{k: v for k, v in call.kwargs.items() if k in names}, **dyn_kwargs}
        return call.func(*args, **kwargs)

    fixed.__name__ = fixed.__qualname__ = call.func_name
    fixed.__wrapped__ = call.func            # JAX's messages name the user's def line
    fixed.__signature__ = _dynamic_signature(info.params, dyn_pos, dyn_kw)
    dyn_args = [call.args[i] for i in dyn_pos]
    dyn_kwargs = {k: call.kwargs[k] for k in dyn_kw}
    try:
        check_arguments(info, set(nums), names)
    except StaticArgumentError:
        raise
    except JitArgumentError:       # an unhashable static argument: tracing does not mind
        pass
    try:
        with calltree.recording():
            closed, out_shape = jax.make_jaxpr(fixed, return_shape=True)(*dyn_args, **dyn_kwargs)
    except Exception as e:
        problem = concretization_argument(e, info, set(nums), names)
        if problem is None:
            raise
        problem.original = e
        raise problem from None

    in_names = [n for i in dyn_pos for n in _leaf_names(call.arg_names[i], call.args[i])]
    in_names += [n for k in dyn_kw for n in _leaf_names(call.kwarg_names[k], call.kwargs[k])]
    out_names = _leaf_names("out", out_shape)
    return Traced(closed, in_names, out_names, call.label, call, nums, names)


def _dynamic_signature(params: list[str], dyn_pos: list[int], dyn_kw: list[str]):
    """The traced wrapper's signature in the user's parameter names, so JAX's errors say
    "argument n" rather than "dyn_args[1]"."""
    import inspect

    P = inspect.Parameter
    try:
        if dyn_pos and max(dyn_pos) >= len(params):
            raise ValueError("*args")
        return inspect.Signature([P(params[i], P.POSITIONAL_ONLY) for i in dyn_pos]
                                 + [P(k, P.KEYWORD_ONLY) for k in dyn_kw])
    except ValueError:    # *args, or keywords that are not identifiers
        return inspect.Signature([P("args", P.VAR_POSITIONAL), P("kwargs", P.VAR_KEYWORD)])


def stage_text(traced: Traced, stage: str) -> str:
    """Lowered StableHLO, or compiled HLO preceded by its cost and memory analysis."""
    __tracebackhide__ = True
    call = traced.call
    jitted = jax.jit(call.func, static_argnums=traced.static_argnums or None,
                     static_argnames=traced.static_argnames or None)
    lowered = jitted.lower(*call.args, **call.kwargs)
    if stage == "lowered":
        return lowered.as_text()
    compiled = lowered.compile()
    lines = [f"// {k}: {v:,.0f}" for k, v in sorted(_compat.cost_analysis(compiled).items())
             if k in ("flops", "bytes accessed", "transcendentals") and v]
    try:
        mem = compiled.memory_analysis()
    except Exception:  # not every backend reports memory
        mem = None
    for field in ("argument", "output", "temp", "generated_code"):
        size = getattr(mem, f"{field}_size_in_bytes", None)
        if size is not None:
            lines.append(f"// {field.replace('_', ' ')} bytes: {size:,}")
    return "\n".join(lines + [compiled.as_text()])
