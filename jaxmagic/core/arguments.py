"""What jit accepts as arguments: arrays traced, hashable values static.

Shared by %jit_compare and %jaxpr, so both name the argument to mark static (with the
user's source text) instead of JAX's error about an internal wrapper.
"""
from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass
from typing import Any, Callable

import jax
import numpy as np


class JitArgumentError(TypeError):
    """The call's arguments do not fit jit (the options, not the function, need fixing).

    `problem` says which argument and why, `fix` what to pass instead (API spelling);
    `option_hint()` the magic's spelling.
    """

    def __init__(self, problem: str, fix: str = ""):
        self.problem, self.fix = problem, fix
        super().__init__(f"{problem}; {fix}" if fix else problem)

    def option_hint(self) -> str:
        return self.fix


class StaticArgumentError(JitArgumentError):
    """An argument jit cannot trace (not an array, or used as a Python value).

    `argname` is its source text; `index` / `param` how to name it in
    `static_argnums` / `static_argnames`.
    """

    def __init__(self, problem: str, argname: str, index: int | None, param: str | None):
        self.argname, self.index, self.param = argname, index, param
        fixes = []
        if index is not None:
            fixes.append(f"static_argnums=({index},)")
        if param is not None:
            fixes.append(f"static_argnames=({param!r},)")
        super().__init__(problem, f"mark it static: {' or '.join(fixes)}")

    def option_hint(self) -> str:
        fixes = []
        if self.index is not None:
            fixes.append(f"--static-argnums {self.index}")
        if self.param is not None:
            fixes.append(f"--static-argnames {self.param}")
        return f"mark it static: {' or '.join(fixes)}"


def is_arraylike(x: Any) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, np.generic, bool, int, float, complex)) \
        or hasattr(x, "__jax_array__") or (hasattr(x, "shape") and hasattr(x, "dtype"))


def describe(x: Any) -> str:
    r = repr(x)
    r = r if len(r) <= 40 else r[:37] + "..."
    return f"{r}, a {type(x).__name__}"


@dataclass
class ArgCall:
    fun: Callable
    args: tuple
    kwargs: dict
    arg_names: list
    kwarg_names: dict
    name: str
    params: list          # positional parameter names of fun, when known


def param_names(fun: Callable) -> list:
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def norm_argnums(nums, n: int) -> tuple:
    if nums is None:
        return ()
    nums = (nums,) if isinstance(nums, int) else tuple(nums)
    return tuple(sorted({i + n if i < 0 else i for i in nums}))


def norm_argnames(names) -> tuple:
    if names is None:
        return ()
    return (names,) if isinstance(names, str) else tuple(names)


def static_positions(call: ArgCall, argnums: tuple, argnames: tuple) -> set:
    pos = set(argnums)
    for nm in argnames:
        if nm in call.params:
            pos.add(call.params.index(nm))
    return pos


def _label(call: ArgCall, index: int | None, key: str | None, value: Any) -> str:
    """`neg=True (a bool)`: the parameter, the caller's source text, the value's type."""
    if key is not None:
        param, src = key, call.kwarg_names.get(key, key)
    else:
        param = call.params[index] if index < len(call.params) else None
        src = call.arg_names[index]
    if src.startswith(f"{param}["):
        param = None                     # *args / **kwargs entries carry their own path
    head = f"{param}={src}" if param and src != param else src
    r = repr(value)
    try:
        literal = ast.literal_eval(src) == value
    except Exception:
        literal = False
    shown = "" if literal or r == src or len(r) > 40 else f"{r}, "
    return f"{head} ({shown}a {type(value).__name__})"


def _static_error(call: ArgCall, problem: str, index: int | None, key: str | None):
    if key is not None:
        return StaticArgumentError(problem, call.kwarg_names.get(key, key), None, key)
    param = call.params[index] if index is not None and index < len(call.params) else None
    return StaticArgumentError(problem, call.arg_names[index], index, param)


def check_arguments(call: ArgCall, static_pos: set, static_names: tuple) -> None:
    """Every traced argument must be made of arrays; every static one hashable."""
    __tracebackhide__ = True
    items = [(i, None, a) for i, a in enumerate(call.args)] + \
            [(None, k, v) for k, v in call.kwargs.items()]
    for i, k, value in items:
        static = (i in static_pos) if k is None else (k in static_names)
        if static:
            try:
                hash(value)
            except TypeError:
                raise JitArgumentError(
                    f"static argument {_label(call, i, k, value)} is not hashable, and jit "
                    "keys its cache on static values",
                    "pass a tuple instead of a list, or leave an array argument traced"
                ) from None
            continue
        bad = [leaf for leaf in jax.tree_util.tree_leaves(value) if not is_arraylike(leaf)]
        if bad:
            what = "is not an array" if bad[0] is value else \
                f"holds {describe(bad[0])}, not only arrays"
            raise _static_error(call, f"argument {_label(call, i, k, value)} {what}, so jit "
                                "cannot trace it", i, k)


def concretization_argument(exc: BaseException, call: ArgCall, static_pos: set,
                             static_names: tuple) -> StaticArgumentError | None:
    """A tracer-to-Python error caused by a non-array argument that should be static."""
    if not isinstance(exc, (jax.errors.ConcretizationTypeError, TypeError)):
        return None
    m = re.search(r"depends on the value of the argument[s]? [`']?([A-Za-z_][\w]*)", str(exc))
    if not m:
        return None
    param = m.group(1)
    if param in call.kwargs and param not in static_names:
        value, index, key = call.kwargs[param], None, param
    elif param in call.params and call.params.index(param) < len(call.args):
        index = call.params.index(param)
        if index in static_pos:
            return None
        value, key = call.args[index], None
    else:
        return None
    if isinstance(value, (jax.Array, np.ndarray)):
        return None     # an array used in Python control flow: static would not help
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return _static_error(call, f"argument {_label(call, index, key, value)} is used as a "
                         f"Python value while tracing ({type(exc).__name__}: {first})",
                         index, key)
