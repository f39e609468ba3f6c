"""Statements: assignments, control flow, definitions and imports, one scope at a time.

Binding a name records the abstract value it now holds (and, at the top level, the line
it was rebound on); the statements where a sharp bit can occur hand over to the rules.
"""
from __future__ import annotations

import ast

from .libraries import is_nnx_module_base
from .scopes import _Ctx, _scope
from .values import (
    AV,
    UNKNOWN,
    _derived,
    _jax,
    _traced,
    _truth_traced,
)


class Statements:
    """Executes statement lists in one scope, updating its environment."""

    def _body(self, stmts, ctx: _Ctx, top=False) -> None:
        for s in stmts:
            try:
                self._stmt(s, ctx, top)
            except RecursionError:   # pragma: no cover - pathological nesting
                pass

    def _stmt(self, s, ctx: _Ctx, top: bool) -> None:
        t = type(s)
        self._stmt_line = s.lineno
        if top:
            self._line = s.lineno
        if t is ast.Expr:
            self._expr_stmt(s, ctx)
        elif t is ast.Assign:
            val = self.ev(s.value, ctx)
            for target in s.targets:
                self._assign(target, val, ctx, s, top)
        elif t is ast.AugAssign:
            self._augassign(s, ctx, top)
        elif t is ast.AnnAssign:
            if s.value is not None:
                self._assign(s.target, self.ev(s.value, ctx), ctx, s, top)
        elif t is ast.Return:
            ctx.returns.append(self.ev(s.value, ctx) if s.value is not None else AV("none"))
        elif t is ast.If:
            self._if(s, ctx, top)
        elif t is ast.While:
            test = self.ev(s.test, ctx)
            if _truth_traced(test):
                self._control_flow(s, s.test, ctx, "while")
            self._body(s.body, ctx, top)
            self._body(s.orelse, ctx, top)
        elif t is ast.For or t is ast.AsyncFor:
            it = self.ev(s.iter, ctx)
            self._bind_target(s.target, self._iter_elt(it, s.iter), ctx, s, top)
            self._body(s.body, ctx, top)
            self._body(s.orelse, ctx, top)
        elif t is ast.FunctionDef or t is ast.AsyncFunctionDef:
            for d in s.decorator_list:
                self.ev(d, ctx)
            fn = self.funcs.get(s)
            if fn is not None:
                if ctx.fn is not None:
                    fn.parent = ctx
                    self._schedule(fn, ctx)
                ctx.env[s.name] = AV("func", func=fn)
                ctx.locals.add(s.name)
                if top:
                    self.module_assigns.setdefault(s.name, []).append(s.lineno)
                self._method_self(fn)
        elif t is ast.ClassDef:
            for d in s.decorator_list:
                self.ev(d, ctx)
            inner = _Ctx(parent=ctx)
            inner.env = ctx.env
            for n in s.body:
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    fn = self.funcs.get(n)
                    if fn is not None:
                        self._method_self(fn)
                else:
                    self._stmt(n, inner, False)
            nnx = any(is_nnx_module_base(self.resolve(b)) for b in s.bases)
            ctx.env[s.name] = AV("nnxclass" if nnx else "static")
        elif t is ast.Delete:
            for target in s.targets:
                self._delete(target, ctx)
        elif t is ast.Global or t is ast.Nonlocal:
            for n in s.names:
                ctx.declared[n] = "global" if t is ast.Global else "nonlocal"
        elif t is ast.Assert:
            test = self.ev(s.test, ctx)
            if _truth_traced(test):
                self._control_flow(s, s.test, ctx, "assert")
        elif t is ast.With or t is ast.AsyncWith:
            for item in s.items:
                self.ev(item.context_expr, ctx)
                if item.optional_vars is not None:
                    self._bind_target(item.optional_vars, UNKNOWN, ctx, s, top)
            self._body(s.body, ctx, top)
        elif t is ast.Try or t.__name__ == "TryStar":
            self._body(s.body, ctx, top)
            for h in s.handlers:
                self._body(h.body, ctx, top)
            self._body(s.orelse, ctx, top)
            self._body(s.finalbody, ctx, top)
        elif t is ast.Import or t is ast.ImportFrom:
            for a in s.names:
                name = (a.asname or a.name).split(".")[0] if t is ast.Import else \
                    (a.asname or a.name)
                ctx.env[name] = AV("module")
        elif t.__name__ == "Match":
            self.ev(s.subject, ctx)
            for case in s.cases:
                self._body(case.body, ctx, top)
        elif t is ast.Raise:
            if s.exc is not None:
                self.ev(s.exc, ctx)

    def _if(self, s: ast.If, ctx: _Ctx, top: bool) -> None:
        test = self.ev(s.test, ctx)
        if _truth_traced(test):
            self._control_flow(s, s.test, ctx, "if")
        if not self._never_traced(s.test, ctx):
            self._body(s.body, ctx, top)
        self._body(s.orelse, ctx, top)

    def _never_traced(self, test, ctx: _Ctx) -> bool:
        """`if isinstance(x, np.ndarray):` on a traced x: the branch never runs traced."""
        if not (type(test) is ast.Call and type(test.func) is ast.Name and
                test.func.id == "isinstance" and len(test.args) == 2 and ctx.traced):
            return False
        types = test.args[1].elts if type(test.args[1]) is ast.Tuple else [test.args[1]]
        concrete = {"numpy.ndarray", "numpy.generic", "numpy.number", "builtins.int",
                    "builtins.float"}
        return _traced(self.ev(test.args[0], ctx)) and all(
            (self.resolve(t) or f"builtins.{getattr(t, 'id', '')}") in concrete for t in types)

    def _assign(self, target, val: AV, ctx: _Ctx, stmt, top: bool) -> None:
        t = type(target)
        if t is ast.Subscript:
            self._setitem(target, stmt, ctx)
        elif t is ast.Attribute:
            self.ev(target.value, ctx)
            self._outer_write(target, ctx, stmt)
        else:
            self._bind_target(target, val, ctx, stmt, top)

    def _bind_target(self, target, val: AV, ctx: _Ctx, stmt, top: bool) -> None:
        t = type(target)
        if t is ast.Name:
            name = target.id
            ctx.env[name] = val
            ctx.locals.add(name)
            if top:
                self.module_assigns.setdefault(name, []).append(stmt.lineno)
                if isinstance(stmt, ast.Assign) and type(stmt.value) is ast.Constant:
                    self._consts[(name, stmt.lineno)] = stmt.value.value
            if ctx.declared.get(name) and ctx.staged:
                self._global_write(target, ctx, stmt, val)
            if isinstance(stmt, ast.Assign) and type(stmt.value) is ast.Call:
                self._maybe_jit_wrapper(name, stmt.value, ctx)
        elif t is ast.Tuple or t is ast.List:
            elts = val.elts if val.elts and len(val.elts) == len(target.elts) else None
            for i, e in enumerate(target.elts):
                if type(e) is ast.Starred:
                    self._bind_target(e.value, AV("list"), ctx, stmt, top)
                    continue
                sub = elts[i] if elts else (
                    _jax(traced=val.traced) if val.kind == "jax" else _derived(val.traced))
                self._bind_target(e, sub, ctx, stmt, top)
        elif t is ast.Subscript:
            self._setitem(target, stmt, ctx)
        elif t is ast.Attribute:
            self._outer_write(target, ctx, stmt)
        elif t is ast.Starred:
            self._bind_target(target.value, AV("list"), ctx, stmt, top)

    def _maybe_jit_wrapper(self, name: str, call: ast.Call, ctx: _Ctx) -> None:
        """`g = jax.jit(f, static_argnums=...)`: calls of g are calls of jitted f."""
        q = self.resolve(call.func)
        tr = None
        if q in ("jax.jit", "jax.pmap") and call.args:
            tr = call.args[0]
        elif q == "functools.partial" and len(call.args) > 1 and \
                self.resolve(call.args[0]) in ("jax.jit", "jax.pmap"):
            tr = call.args[1]
        if tr is None or type(tr) is not ast.Name:
            return
        fns = self.visible_defs(tr.id, _scope(ctx))
        if fns:
            fns[-1].wrapper_name = name
            ctx.env[name] = AV("func", func=fns[-1])

    def _augassign(self, s: ast.AugAssign, ctx: _Ctx, top: bool) -> None:
        val = self.ev(s.value, ctx)
        t = s.target
        if type(t) is ast.Subscript:
            self._setitem(t, s, ctx)
            return
        if type(t) is ast.Attribute:
            self.ev(t.value, ctx)
            self._outer_write(t, ctx, s)
            return
        if type(t) is ast.Name:
            cur = self._lookup(t.id, ctx)
            merged = self._arith(cur, val)
            if ctx.declared.get(t.id) and ctx.staged:
                self._global_write(t, ctx, s, merged)
            ctx.env[t.id] = merged
            ctx.locals.add(t.id)
            if top:
                self.module_assigns.setdefault(t.id, []).append(s.lineno)
