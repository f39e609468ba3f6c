"""What a magic acts on: the call `F(args...)` in a line, or a cell's final call.

Parsing is separate from evaluation so the cell's other statements can run first (as an
ordinary cell) and the final call is evaluated once, never executed twice.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable

from . import libraries
from .arguments import param_names
from .errors import TARGET_FILE


class TargetError(ValueError):
    """The source holds no call to act on; the message says what was found instead."""


@dataclass
class CallTarget:
    """A parsed `F(args...)`: the source text of the callee and of each argument."""

    source: str
    func_src: str
    arg_srcs: list[str]                  # "*xs" kept with its star
    kwarg_srcs: dict[str | None, str]    # None key holds "**kw" sources, in order
    starred_kw: list[str] = field(default_factory=list)
    lineno: int = 1


@dataclass
class BoundCall:
    """A call with its values resolved: what to trace and how to name its inputs."""

    func: Callable
    args: tuple
    kwargs: dict
    arg_names: list[str]      # source text naming each positional arg
    kwarg_names: dict[str, str]
    source: str
    func_src: str = ""        # the callee as written: `jax.vmap(dist)`, not `dist`

    @property
    def func_name(self) -> str:
        return getattr(self.func, "__name__", None) or type(self.func).__name__

    @property
    def label(self) -> str:
        """What to call the traced function: its source text where there is one."""
        return self.func_src or self.func_name


def _describe(node: ast.AST) -> str:
    kinds = {ast.Name: "a name", ast.Attribute: "an attribute", ast.Constant: "a constant",
             ast.BinOp: "an arithmetic expression", ast.Subscript: "an indexing expression",
             ast.Lambda: "a lambda", ast.Tuple: "a tuple", ast.List: "a list"}
    return kinds.get(type(node), f"a {type(node).__name__} expression")


def parse_call(expr: str) -> CallTarget:
    """Parse a line like `jax.grad(loss)(params, x)`: the outermost call is the target."""
    src = expr.strip()
    if not src:
        raise TargetError("nothing to trace: give a call such as f(x)")
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError as e:
        raise TargetError(f"not a Python expression: {e.msg}") from None
    return _target(tree.body, src)


def _target(node: ast.expr, src: str, lineno: int = 1) -> CallTarget:
    if not isinstance(node, ast.Call):
        raise TargetError(f"expected a call such as f(x), found {_describe(node)}: "
                          f"{ast.get_source_segment(src, node) or ast.unparse(node)}")
    seg = lambda n: ast.get_source_segment(src, n) or ast.unparse(n)  # noqa: E731
    args = [("*" + seg(a.value)) if isinstance(a, ast.Starred) else seg(a) for a in node.args]
    kwargs = {k.arg: seg(k.value) for k in node.keywords if k.arg is not None}
    starred = [seg(k.value) for k in node.keywords if k.arg is None]
    return CallTarget(seg(node), seg(node.func), args, kwargs, starred, lineno)


def split_cell(code: str) -> tuple[str, CallTarget | None, str]:
    """Split a (transformed) cell into the statements before its final call and the call.

    Returns (prefix, target, problem): the prefix keeps the original line numbers, so
    tracebacks from it point at the cell's own lines. When the cell does not end in a
    call, target is None and problem says what it ends with.
    """
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code, None, "syntax"     # let the cell run and report its own SyntaxError
    if not tree.body:
        return "", None, "the cell is empty"
    last = tree.body[-1]
    if not isinstance(last, ast.Expr):
        return code, None, f"the cell ends with {type(last).__name__.lower()} statement, not a call"
    lines = code.splitlines(keepends=True)
    start = last.lineno - 1
    prefix = "".join(lines[:start]) + lines[start][: last.col_offset]
    # the final statement's own text, with its line offset
    final = ast.get_source_segment(code, last.value) or ast.unparse(last.value)
    if not isinstance(last.value, ast.Call):
        return code, None, (f"the cell ends with {_describe(last.value)}, not a call: "
                            f"{final.splitlines()[0]}")
    node = ast.parse(final, mode="eval").body
    target = _target(node, final, lineno=last.lineno)
    return (prefix if prefix.strip() else ""), target, ""


def _held_arguments(func: Callable) -> tuple[list, list[str]]:
    """The arguments a callee holds itself (an `nnx.cached_partial`'s model and
    optimizer), named by the wrapped function's parameters."""
    found = libraries.cached_arguments(func)
    if found is None:
        return [], []
    inner, held = found
    jitted = libraries.unwrap_jit(inner)
    params = param_names(jitted[0] if jitted else inner)
    return list(held), [params[i] if i < len(params) else f"cached[{i}]"
                        for i in range(len(held))]


def bind(target: CallTarget, namespace: dict[str, Any],
         filename: str = TARGET_FILE) -> BoundCall:
    """Evaluate the callee and arguments in the user's namespace (each exactly once).
    `filename`: the cell's, so an error in an argument is shown at the call's line."""
    __tracebackhide__ = True
    pad = "\n" * (target.lineno - 1)

    def ev(s: str) -> Any:
        __tracebackhide__ = True
        return eval(compile(pad + s, filename, "eval"), namespace)  # noqa: S307
    func = ev(target.func_src)
    if not callable(func):
        raise TargetError(f"{target.func_src} is {type(func).__name__}, not callable")
    args, names = _held_arguments(func)
    if names:
        func = libraries.cached_arguments(func)[0]
    for s in target.arg_srcs:
        if s.startswith("*"):
            vals = list(ev(s[1:]))
            args += vals
            names += [f"{s[1:]}[{i}]" for i in range(len(vals))]
        else:
            args.append(ev(s))
            names.append(s)
    kwargs = {k: ev(v) for k, v in target.kwarg_srcs.items()}
    kwarg_names = {k: k for k in kwargs}
    for s in target.starred_kw:
        extra = dict(ev(s))
        kwargs.update(extra)
        kwarg_names.update({k: f"{s}[{k!r}]" for k in extra})
    return BoundCall(func, tuple(args), kwargs, names, kwarg_names, target.source,
                     target.func_src)
