"""Rules JX1xx: JAX arrays are immutable (item assignment, del, ufunc.at, discarded
functional updates), each with the `.at[]` rewrite."""
from __future__ import annotations

import ast

from .purity_rules import _has_ellipsis
from .scopes import _Ctx
from .values import _OPSYM, _at_parts, _traced

_AUG_AT = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide",
           ast.Pow: "power"}
_BIN_AT = {ast.Add: "add", ast.Mult: "multiply", ast.Div: "divide", ast.Pow: "power",
           ast.Sub: "subtract"}
_UFUNC_AT = {"add": "add", "subtract": "subtract", "multiply": "multiply",
             "divide": "divide", "true_divide": "divide", "power": "power",
             "minimum": "min", "maximum": "max"}
_DISCARDED_METHODS = {"sort", "astype", "reshape", "clip", "round", "transpose", "squeeze",
                      "flatten", "ravel", "cumsum", "argsort"}


class MutationRules:
    """Mixin of `Analyzer`: in-place updates of JAX arrays."""

    def _expr_stmt(self, s: ast.Expr, ctx: _Ctx) -> None:
        """An expression statement; JX105 when it is a functional update left unused."""
        v = s.value
        self.ev(v, ctx)
        if type(v) is not ast.Call or type(v.func) is not ast.Attribute:
            return
        at = _at_parts(v)
        if at is not None:
            base, idx, op = at
            if op != "get" and isinstance(base, (ast.Name, ast.Attribute)):
                bt = self.seg(base)
                self.add("JX105", v, f"`{self.seg(v)}` returns a new array; the result is "
                         f"discarded, so {bt} is unchanged.",
                         f"assign the result: {bt} = {self.seg(v)}",
                         rewrite=self.replace(s, f"{bt} = {self.seg(v)}"))
            return
        meth = v.func.attr
        if meth in _DISCARDED_METHODS and isinstance(v.func.value, ast.Name):
            recv = self.ev(v.func.value, ctx)
            if recv.kind == "jax":
                bt = v.func.value.id
                self.add("JX105", v, f"JAX arrays are immutable: `{self.seg(v)}` returns a "
                         f"new array and leaves {bt} unchanged; the result is discarded.",
                         f"assign the result: {bt} = {self.seg(v)}",
                         rewrite=self.replace(s, f"{bt} = {self.seg(v)}"))

    def _setitem(self, target: ast.Subscript, stmt, ctx: _Ctx) -> None:
        base = self.ev(target.value, ctx)
        idx = self.ev(target.slice, ctx)
        if self._variable_update(target, stmt, ctx):
            return
        if base.param is not None and _has_ellipsis(target):
            return      # `x_ref[...] = v` on an argument: a ref or Variable, written on purpose
        if base.kind != "jax":
            if ctx.staged and type(target.value) is ast.Name:
                self._outer_write(target, ctx, stmt)
            return
        tv = target.value
        simple = type(tv) in (ast.Name, ast.Attribute)
        bt, it = self.seg(tv), self.seg(target.slice)
        if isinstance(stmt, ast.AugAssign):
            op = _AUG_AT.get(type(stmt.op))
            val = self.seg(stmt.value)
            if op:
                new = f"{bt} = {bt}.at[{it}].{op}({val})"
            else:
                sym = _OPSYM.get(type(stmt.op), "?")
                new = f"{bt} = {bt}.at[{it}].set({bt}[{it}] {sym} {val})"
            self._in_place("JX102", stmt, new, simple, f"{bt}.at[{it}].{op or 'set'}")
            return
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            self.add("JX101", target, f"JAX arrays are immutable: assigning to "
                     f"`{self.seg(target)}` raises TypeError.",
                     f"use {bt}.at[{it}].set(value) and assign the result")
            return
        if idx.boolean and _traced(idx):
            self._bool_mask(target.slice, target, ctx, stmt=stmt)
            return
        op, arg = self._set_form(target, stmt.value)
        new = f"{bt} = {bt}.at[{it}].{op}({arg})"
        self._in_place("JX101", stmt, new, simple, f"{bt}.at[{it}].{op}")

    def _in_place(self, rule: str, stmt, new: str, simple: bool, at_call: str) -> None:
        """An in-place update of a JAX array; the rewrite where the target is a plain name."""
        self.add(rule, stmt, f"JAX arrays are immutable: `{self.seg(stmt)}` raises "
                 "TypeError (in-place update).",
                 f"use the functional update: {new}" if simple else
                 f"use {at_call}(...) and assign the result",
                 rewrite=self.replace(stmt, new) if simple else None)

    def _set_form(self, target: ast.Subscript, value) -> tuple[str, str]:
        """Which `.at` method a `x[i] = <value>` assignment is: x[i] = x[i] + y -> add."""
        same = lambda n: type(n) is ast.Subscript and ast.dump(n) == ast.dump(  # noqa: E731
            ast.Subscript(target.value, target.slice, ast.Load()))
        if type(value) is ast.Call:
            q = self.resolve(value.func) or ""
            name = q.rsplit(".", 1)[-1]
            if len(value.args) == 2 and name in ("minimum", "maximum", "fmin", "fmax") \
                    and q.startswith(("jax.numpy.", "numpy.")):
                a, b = value.args
                other = b if same(a) else a if same(b) else None
                if other is not None:
                    return ("min" if "min" in name else "max"), self.seg(other)
            if len(value.args) == 1 and same(value.args[0]) and q.startswith("jax.numpy."):
                return "apply", self.seg(value.func)
        if type(value) is ast.BinOp and same(value.left) and type(value.op) in _BIN_AT:
            return _BIN_AT[type(value.op)], self.seg(value.right)
        if type(value) is ast.BinOp and same(value.right) and type(value.op) in (ast.Add,
                                                                                 ast.Mult):
            return _BIN_AT[type(value.op)], self.seg(value.left)
        return "set", self.seg(value)

    def _delete(self, target, ctx: _Ctx) -> None:
        if type(target) is not ast.Subscript:
            return
        base = self.ev(target.value, ctx)
        self.ev(target.slice, ctx)
        if base.kind != "jax":
            if ctx.staged and type(target.value) is ast.Name:
                self._outer_write(target, ctx, target)
            return
        bt = self.seg(target.value)
        sl = target.slice
        idx = f"{self.jnp}.s_[{self.seg(sl)}]" if type(sl) is ast.Slice else self.seg(sl)
        new = f"{bt} = {self.jnp}.delete({bt}, {idx})"
        simple = type(target.value) in (ast.Name, ast.Attribute)
        stmt_line = self.lines[target.lineno - 1].strip()
        self.add("JX103", target, f"JAX arrays are immutable: `del {self.seg(target)}` "
                 "fails (no __delitem__).",
                 f"make a new array without those elements: {new}",
                 rewrite=new if simple and stmt_line.startswith("del ") and
                 "," not in stmt_line else None)

    def _ufunc_at(self, node, ufunc: str, args) -> None:
        if not args or args[0].kind != "jax":
            return
        a = node.args
        x = self.seg(a[0])
        idx = self.seg(a[1]) if len(a) > 1 else "..."
        if ufunc in _UFUNC_AT and len(a) > 2:
            new = f"{x} = {x}.at[{idx}].{_UFUNC_AT[ufunc]}({self.seg(a[2])})"
        elif len(a) == 2:
            new = f"{x} = {x}.at[{idx}].apply({self.jnp}.{ufunc})"
        else:
            new = None
        self.add("JX104", node, f"`{self.seg(node)}` updates in place, but {x} is an "
                 "immutable JAX array (TypeError).",
                 f"use the functional update: {new}" if new else
                 f"use {x}.at[{idx}].apply(...) and assign the result",
                 rewrite=(self.lines[node.lineno - 1][: len(self.lines[node.lineno - 1]) -
                          len(self.lines[node.lineno - 1].lstrip())] + new).strip()
                 if new and self.seg(node) == self.lines[node.lineno - 1].strip() else None)
