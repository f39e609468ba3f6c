"""Trace a call to its jaxpr, naming every input and output by source text and pytree path.

A jitted callee (`jax.jit`, `nnx.jit`, `eqx.filter_jit`, a partial of one) is traced
through: the jaxpr is its function's body. Arguments are split by `arguments.Partition`:
array leaves traced, everything else held fixed, NNX objects split into graph and state.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

import jax

from .. import _compat
from . import calltree, captured, libraries
from .arguments import (
    ArgCall,
    JitArgumentError,
    Partition,
    concretization_argument,
    param_names,
)
from .paths import key_text
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
    notes: list[str] = field(default_factory=list)   # what was held static, changed, ...
    partition: Partition | None = None
    wrappers: frozenset[str] = frozenset()    # library calls drawn as their inside
    in_args: list[str] = field(default_factory=list)   # the argument each input is a leaf of
    const_names: list[str] = field(default_factory=list)   # where each constant was captured
    pmap: bool = False        # the callee is a jax.pmap (drawn as one `pmap:` group)
    library_calls: frozenset[str] = frozenset()   # labels of calls into a library's
    # functions (`optimizer.update`), not its modules: steps beside the user's model


def _normalise(static_argnums, static_argnames, nargs: int):
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums or ())
    names = (static_argnames,) if isinstance(static_argnames, str) else \
        tuple(static_argnames or ())
    return tuple(n % nargs if nargs and n < 0 else n for n in nums), names


def _leaf_names(prefix: str, tree: Any) -> list[str]:
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return [prefix + key_text(path) for path, _ in leaves]


def resolve(call: BoundCall, static_argnums=None, static_argnames=None):
    """(ArgCall, title, static positions, static names, jit kind) for `call`: a jitted
    callee is unwrapped to its Python function, keeping its static options unless others
    are given."""
    fun, title, kind = call.func, call.label, ""
    found = libraries.unwrap_jit(call.func)
    if found is None and _compat.is_pmap(call.func):
        kind = "jax.pmap"       # traced as given, by pmap's rule: every leaf an input
    elif found is not None:
        fun, opts, kind = found
        title = libraries.func_name(fun)
        if static_argnums is None and static_argnames is None:     # as jit applies them:
            static_argnums = [i for i in opts.get("static_argnums", ())   # to the arguments
                              if -len(call.args) <= i < len(call.args)]  # given
            static_argnames = opts.get("static_argnames")
    info = ArgCall(fun, tuple(call.args), dict(call.kwargs), list(call.arg_names),
                   dict(call.kwarg_names), call.source, param_names(fun))
    nums, names = _normalise(static_argnums, static_argnames, len(call.args))
    nums = tuple(sorted(set(nums) | {info.params.index(k) for k in names if k in info.params
                                     and info.params.index(k) < len(call.args)}))
    for n in nums:
        if not 0 <= n < len(call.args):
            raise JitArgumentError(f"static_argnums {n} is out of range for "
                                   f"{len(call.args)} positional arguments",
                                   "count positional arguments from 0")
    return info, title, nums, names, kind


def _make_jaxpr(fn, args: tuple, kwargs: dict):
    """The one place a jaxpr is made: (closed jaxpr, output shapes, (wrapper calls,
    library calls))."""
    __tracebackhide__ = True
    # which call of which function made each equation, inner jits' bodies included
    with calltree.recording() as rec, _compat.fresh_traces():
        closed, out_shape = jax.make_jaxpr(fn, return_shape=True)(*args, **kwargs)
    return closed, out_shape, calltree.learned(rec)


def trace(call: BoundCall, static_argnums: Sequence[int] | int | None = None,
          static_argnames: Sequence[str] | str | None = None) -> Traced:
    """Trace `call` with its static arguments held fixed (as `jax.jit` would)."""
    __tracebackhide__ = True      # the user's error shows their frames, not ours
    info, title, nums, names, kind = resolve(call, static_argnums, static_argnames)
    part = Partition(info, set(nums), names, callee_name=call.func_src, jit_kind=kind)
    pos, dyn_args, dyn_kwargs = part.inputs(bind_static=True)
    try:
        closed, out_shape, (wrappers, library_calls) = _make_jaxpr(part.function(bind_static=True),
                                                  dyn_args, dyn_kwargs)
    except Exception as e:
        # a str or an int used as a size says which argument to mark static, instead of
        # JAX's error about our wrapper's arguments
        problem = concretization_argument(e, info, set(nums), names)
        if problem is None:
            raise
        problem.original = e
        raise problem from None

    in_names = part.in_names(pos, list(dyn_kwargs))
    idle = idle_call(closed, title, in_names, part.dropped)
    if part.returned:
        out_names = _leaf_names("out", out_shape[0]) + [f"{n} (updated)" for n in part.returned]
    else:
        out_names = _leaf_names("out", out_shape)
    return Traced(closed, in_names, out_names, title, call, nums, names,
                  [idle] * bool(idle) + part.notes(title, kind), part, wrappers,
                  part.in_args(pos, list(dyn_kwargs)),
                  captured.names(info.fun, list(_compat.consts_of(closed))),
                  _compat.is_pmap(call.func), library_calls)


def idle_call(closed: Any, name: str, in_names: list[str],
              dropped: list[tuple[str, bool]]) -> str:
    """What a call that makes no JAX operation, or returns no array, does instead ("" when
    it computes arrays it returns): a jaxpr of no equation is no program to draw or time,
    only its inputs passed through, constants or Python values."""
    j = _compat.open_jaxpr(closed)
    if j.eqns and (j.outvars or any(_compat.has_effects(e) for e in j.eqns)):
        return ""
    what = "; ".join(_returns(j, in_names, dropped))
    if not j.eqns:
        return f"{name} runs no JAX operation: {what}"
    n = len(j.eqns)
    return (f"{name} returns no array: {what}; the {n} operation{'s' if n != 1 else ''} it "
            f"traces compute{'s' if n == 1 else ''} nothing it returns")


def _returns(j: Any, in_names: list[str], dropped: list[tuple[str, bool]]) -> list[str]:
    """What the outputs of `j` are, when it computes none: inputs, constants, values jit
    left out (by type), or nothing."""
    invars, clauses = list(j.invars), []
    passed = [in_names[invars.index(v)] for v in j.outvars
              if not _compat.is_literal(v) and v in invars]
    if passed:
        clauses.append(f"its input{'s' if len(passed) > 1 else ''} {', '.join(passed)} "
                       f"pass{'es' if len(passed) == 1 else ''} straight through")
    if constants := len(j.outvars) - len(passed):
        counted = "a constant" if constants == 1 else f"{constants} constants"
        clauses.append(f"it returns {counted}, the same whatever its inputs")
    if dropped:
        clauses.append(f"it returns {kinds(dropped)}, not "
                       + ("arrays" if len(dropped) > 1 else "an array"))
    return clauses or ["it returns None"]


def kinds(dropped: list[tuple[str, bool]]) -> str:
    """The output leaves jit left out, by type: `a str`, `an int and 2 float values`."""
    counts = Counter(t for t, _ in dropped)
    return " and ".join(f"{'an' if t[0] in 'aeiou' else 'a'} {t}" if n == 1 else
                        f"{n} {t} values" for t, n in counts.items())


def stage_text(traced: Traced, stage: str) -> str:
    """Lowered StableHLO, or compiled HLO preceded by its cost and memory analysis."""
    __tracebackhide__ = True
    part = traced.partition
    _, args, kwargs = part.inputs(bind_static=False)
    nums, names = part.jit_static(traced.static_argnums, traced.static_argnames)
    jitted = jax.jit(part.function(bind_static=False), static_argnums=nums or None,
                     static_argnames=names or None)
    lowered = jitted.lower(*args, **kwargs)
    if stage == "lowered":
        return lowered.as_text()
    compiled = lowered.compile()
    lines = [f"// {k}: {v:,.0f}" for k, v in sorted(_compat.cost_analysis(compiled).items())
             if k in ("flops", "bytes accessed", "transcendentals") and v]
    try:
        mem = compiled.memory_analysis()
    except Exception:  # not every backend reports memory
        mem = None
    for field_ in ("argument", "output", "temp", "generated_code"):
        size = getattr(mem, f"{field_}_size_in_bytes", None)
        if size is not None:
            lines.append(f"// {field_.replace('_', ' ')} bytes: {size:,}")
    return "\n".join(lines + [program_first(compiled.as_text())])


def program_first(hlo: str) -> str:
    """The HLO text with the program right after its module line: the source-location
    tables XLA prints first (thousands of characters of notebook-kernel frames) go last."""
    blocks = hlo.split("\n\n")
    tables = [b for b in blocks if b.lstrip("\n").startswith(_compat.HLO_FRAME_TABLES)]
    if not tables:
        return hlo
    rest = [b for b in blocks if b not in tables and b.strip()]
    return "\n\n".join(rest).rstrip() + "\n\n// source locations named by stack_frame_id " \
        "in the program above\n" + "\n\n".join(t.strip("\n") for t in tables) + "\n"
