"""Which Python name each captured constant of a jaxpr was read from.

Arrays a traced function reads from its closure or its globals become the jaxpr's
constants (`jax.vmap(lambda xb: model.apply(variables, xb))`: every array of `variables`).
Named, they are drawn as one record per name, as arguments are, not one `const` oval each.
"""
from __future__ import annotations

import functools
import os
import types
from typing import Any, Callable, Iterator

import jax

from . import libraries
from .paths import key_text

_NOT_DATA = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type,
             functools.partial)


def names(fun: Callable, consts: list) -> list[str]:
    """For each constant, `variables['params']['Dense_0']['kernel']` where it is a leaf of
    a value `fun` captured, else ""."""
    where: dict[int, str] = {}
    wanted = {id(c) for c in consts}
    for name, value in _captures(fun):
        if isinstance(value, _NOT_DATA) or callable(value) and not hasattr(value, "shape"):
            continue
        try:
            leaves = jax.tree_util.tree_flatten_with_path(value)[0]
        except Exception:  # noqa: BLE001 - an object pytrees cannot walk: not a capture
            continue
        for path, leaf in leaves:
            if id(leaf) in wanted:
                where.setdefault(id(leaf), name + key_text(path))
    return [where.get(id(c), "") for c in consts]


def _captures(fun: Any) -> Iterator[tuple[str, Any]]:
    """(name, value) of what `fun` reads from its closure and its globals, through jit
    wrappers and partials (their bound arguments are captures too)."""
    found = libraries.unwrap_jit(fun)
    if found is not None:
        fun = found[0]
    while isinstance(fun, functools.partial):
        yield from ((f"{_name(fun.func)}.args[{i}]", a) for i, a in enumerate(fun.args))
        fun = fun.func
    while hasattr(fun, "__wrapped__") and (not hasattr(fun, "__code__")
                                           or _is_jax(fun.__code__)):
        fun = fun.__wrapped__           # jax.vmap(f), jax.grad(f): f reads the captures
    code = getattr(fun, "__code__", None)
    if code is None:
        return
    for var, cell in zip(code.co_freevars, getattr(fun, "__closure__", None) or ()):
        try:
            yield var, cell.cell_contents
        except ValueError:          # an empty cell
            continue
    scope = getattr(fun, "__globals__", {})
    for var in _global_names(code):
        if var in scope:
            yield var, scope[var]


def _global_names(code: types.CodeType) -> list[str]:
    out = list(code.co_names)
    for const in code.co_consts:        # lambdas and functions defined inside
        if isinstance(const, types.CodeType):
            out += _global_names(const)
    return list(dict.fromkeys(out))


def _is_jax(code: types.CodeType) -> bool:
    return f"{os.sep}jax{os.sep}" in code.co_filename


def _name(f: Any) -> str:
    return getattr(f, "__name__", type(f).__name__)
