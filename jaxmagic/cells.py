"""A magic's cell, run as an ordinary cell would be, through the shell's own machinery.

`%%jaxpr` and its kin run the cell's statements before its final call once (the call is
left for the magic to trace, time or compile); `%%shardviz` runs the whole cell with
`shell.run_cell` but keeps its final value undisplayed, with an AST transformer in
IPython's `ast_transformers`. IPython's displayhook would give the value only after
formatting it (an array's repr copies it to the host and waits for it), not for a cell
ending in `;`, and would store it in `Out` and `_`.
"""
from __future__ import annotations

import ast

from IPython.core.error import UsageError

from .core.target import CallTarget, TargetError, split_cell
from .options import usage

_SINK = "__jaxmagic_shardviz_keep__"


def final_call(shell, cell: str) -> tuple[CallTarget, str]:
    """The cell's final call, its other statements run first (once), and the name the
    cell's code runs under (its tracebacks show its lines). A cell that Python cannot
    parse raises its SyntaxError as a cell's would; one not ending in a call, a
    TargetError."""
    __tracebackhide__ = True
    code = shell.transform_cell(cell)
    prefix, target, problem = split_cell(code)
    if target is None:
        if problem == "syntax":      # the user's SyntaxError, shown as a cell's
            try:
                compile(code, shell.compile.cache(code, shell.execution_count), "exec")
            except SyntaxError as e:
                e._jaxmagic_parse_error = True
                raise
        raise TargetError(problem)
    filename = shell.compile.cache(code, shell.execution_count)
    if prefix:
        exec(compile(prefix, filename, "exec", dont_inherit=True), shell.user_ns)  # noqa: S102
    return target, filename


class _KeepLast(ast.NodeTransformer):
    """A cell's final expression handed to `_SINK` instead of displayed."""

    def visit_Module(self, node):
        if node.body and isinstance(node.body[-1], ast.Expr):
            last = node.body[-1]
            keep = ast.Call(ast.Name(_SINK, ast.Load()), [last.value], [])
            node.body[-1] = ast.copy_location(ast.Expr(keep), last)
            ast.fix_missing_locations(node)
        return node


def run_keeping_value(shell, cell: str) -> tuple[bool, bool, object]:
    """Run `cell` with `shell.run_cell` (display, tracebacks and hooks as usual), but
    keep its final expression's value instead of displaying it. Returns (succeeded, had
    a final expression, value)."""
    __tracebackhide__ = True
    kept: dict = {}

    def keep(value):
        kept["value"] = value

    outer = shell.displayhook.exec_result     # the nested run_cell clears it
    code = shell.transform_cell(cell)
    try:          # a cell that cannot be parsed: Python's own message, nothing runs
        compile(code, shell.compile.cache(code, shell.execution_count), "exec",
                dont_inherit=True)
    except SyntaxError as e:
        shell.showsyntaxerror()
        if outer is not None and outer.error_in_exec is None:
            outer.error_in_exec = e
        return False, False, None
    transformer = _KeepLast()
    shell.user_ns[_SINK] = keep
    shell.ast_transformers.append(transformer)
    try:
        result = shell.run_cell(cell)
    finally:
        if transformer in shell.ast_transformers:
            shell.ast_transformers.remove(transformer)
        shell.user_ns.pop(_SINK, None)
        shell.displayhook.exec_result = outer
    error = result.error_before_exec or result.error_in_exec
    if error is not None and outer is not None and outer.error_in_exec is None:
        # the traceback is shown once (by the nested run); the cell still fails, so a
        # kernel replies "error" and a notebook run stops here, as for any cell
        outer.error_in_exec = error
    return result.success, "value" in kept, kept.get("value")


def values_named(shell, names: list[str]) -> dict:
    """Each NAME's value after the cell ran (a name, or an expression such as p.w)."""
    __tracebackhide__ = True
    ns, out = shell.user_ns, {}
    for name in names:
        if name in ns:
            out[name] = ns[name]
            continue
        try:
            out[name] = shell.ev(name)
        except NameError:
            raise UsageError(f"shardviz: {name!r} is not defined\n{usage('shardviz')}") \
                from None
        except SyntaxError as e:     # not the user's code: a NAME we were given
            raise UsageError(f"shardviz: {name!r} is not a variable or expression "
                             f"({e.msg})\n{usage('shardviz')}") from None
    return out
