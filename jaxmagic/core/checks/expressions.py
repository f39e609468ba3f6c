"""Expressions: each evaluates to an abstract value (`AV`), operators included.

`ev` dispatches on the node type through the table `Interpreter` builds; a node without
an entry still has its sub-expressions evaluated, so no rule misses a nested call.
"""
from __future__ import annotations

import ast

from .jaxapi import _ARRAY_ATTRS, _DTYPE64, _STATIC_ATTRS, _SUBMODULES
from .notebook import DEFAULT_ALIASES, _from_value
from .scopes import _Ctx
from .values import (
    _CONST_AV,
    _STATIC_KINDS,
    AV,
    STATIC,
    UNKNOWN,
    _derived,
    _jax,
    _traced,
    _traced_elt,
    _tracer,
    _truth_traced,
)


class Expressions:
    """Evaluates expressions to abstract values, calling the rules where one applies."""

    def ev(self, node, ctx: _Ctx) -> AV:
        f = self._ev.get(type(node))
        if f is None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.ev(child, ctx)
            return UNKNOWN
        return f(node, ctx)

    def _lookup(self, name: str, ctx: _Ctx) -> AV:
        c = ctx
        while c is not None:
            v = c.env.get(name)
            if v is not None:
                if c is not ctx and c is self.module and ctx.fn is not None and \
                        ctx.staged and v.kind in ("jax", "np", "int", "float", "complex",
                                                  "bool"):
                    ctx.fn.global_reads.setdefault(name, 0)
                return v
            c = c.parent
        if self.ns is not None and name in self.ns:
            v = _from_value(self.ns[name])
            if ctx.fn is not None and ctx.staged and v.kind in ("jax", "np", "int", "float",
                                                                "complex", "bool"):
                ctx.fn.global_reads.setdefault(name, 0)
            return v
        if name in self.aliases or name in DEFAULT_ALIASES:
            return AV("module")
        return UNKNOWN

    def _name(self, node: ast.Name, ctx: _Ctx) -> AV:
        v = self._lookup(node.id, ctx)
        if ctx.fn is not None and ctx.staged and node.id in ctx.fn.global_reads and \
                ctx.fn.global_reads[node.id] == 0:
            ctx.fn.global_reads[node.id] = node.lineno + self.offset
        return v

    def _const(self, node: ast.Constant, ctx) -> AV:
        return _CONST_AV.get(type(node.value)) or STATIC

    def _fstr(self, node, ctx) -> AV:
        for v in node.values:
            if type(v) is ast.FormattedValue:
                self.ev(v.value, ctx)
        return AV("str")

    def _starred(self, node, ctx) -> AV:
        return self.ev(node.value, ctx)

    def _await(self, node, ctx) -> AV:
        self.ev(node.value, ctx)
        return UNKNOWN

    def _walrus(self, node, ctx) -> AV:
        v = self.ev(node.value, ctx)
        ctx.env[node.target.id] = v
        return v

    def _lambda(self, node, ctx) -> AV:
        fn = self.funcs.get(node)
        if fn is not None and fn.traced:
            fn.parent = ctx
            self._schedule(fn, ctx)
        return AV("func", func=fn)

    def _comp(self, node, ctx) -> AV:
        for g in node.generators:
            it = self.ev(g.iter, ctx)
            self._bind_target(g.target, self._iter_elt(it, g.iter), ctx, g.iter, False)
            for cond in g.ifs:
                c = self.ev(cond, ctx)
                if _truth_traced(c) and ctx.traced:
                    self._control_flow(cond, cond, ctx, "bool")
        if type(node) is ast.DictComp:
            self.ev(node.key, ctx)
            self.ev(node.value, ctx)
            return AV("dict")
        v = self.ev(node.elt, ctx)
        return AV("list", traced=_traced(v)) if type(node) is not ast.GeneratorExp else \
            AV("static", traced=_traced(v))

    def _iter_elt(self, it: AV, node) -> AV:
        if it.kind == "range":
            return AV("int", dtype="int*")
        if it.kind in ("zip", "enumerate"):           # each part keeps its own kind
            return AV("tuple", elts=[self._iter_elt(e, node) for e in it.elts])
        if it.kind == "jax":
            return _jax(traced=it.traced)
        if it.traced:
            return _derived(True)
        if it.elts:
            t = _traced_elt(it)
            if t is not None:
                return t
            kinds = {e.kind for e in it.elts}
            return it.elts[0] if len(kinds) == 1 else UNKNOWN
        return UNKNOWN

    def _seq(self, node, ctx) -> AV:
        elts = [self.ev(e, ctx) for e in node.elts]
        return AV("tuple" if type(node) is ast.Tuple else "list", elts=elts)

    def _set(self, node, ctx) -> AV:
        for e in node.elts:
            self.ev(e, ctx)
        return AV("set")

    def _dict(self, node, ctx) -> AV:
        items = {}
        for k, v in zip(node.keys, node.values):
            if k is not None:
                self.ev(k, ctx)
            av = self.ev(v, ctx)
            if type(k) is ast.Constant:
                items[k.value] = av
        return AV("dict", items=items or None, traced=any(_traced(v) for v in
                                                          items.values()))

    def _slice(self, node, ctx) -> AV:
        parts = [self.ev(p, ctx) if p is not None else UNKNOWN
                 for p in (node.lower, node.upper, node.step)]
        return AV("slice", elts=parts)

    def _attr(self, node: ast.Attribute, ctx) -> AV:
        q = self.resolve(node)
        if q is not None and not (type(node.value) is ast.Name and
                                  self._shadowed(node.value.id, ctx)):
            last = q.rsplit(".", 1)[-1]
            if last in _DTYPE64 or last in ("float32", "int32", "float16", "bfloat16",
                                            "uint8", "int8", "bool_", "complex64",
                                            "uint32", "int16", "uint16"):
                return AV("dtype", dtype=last)
            if q.startswith(("jax", "numpy")) and last in ("pi", "e", "inf", "nan"):
                return AV("float", dtype="float*")
            if q.count(".") >= 2 and q.startswith(("jax.", "numpy.", "math.")) and \
                    last not in _SUBMODULES and last[:1].islower():
                return AV("func")
            return AV("module")
        base = self.ev(node.value, ctx)
        a = node.attr
        if a in _STATIC_ATTRS:
            if a == "shape" and base.shape is not None:
                return AV("tuple", elts=[AV("int", dtype="int*") for _ in base.shape])
            return AV("static")
        if base.kind == "jax":
            if a not in _ARRAY_ATTRS:
                return UNKNOWN        # not an array attribute: a pytree object's field
            if a in ("T", "mT", "real", "imag"):
                return _jax(traced=base.traced, shape=base.shape[::-1] if a == "T" and
                            base.shape else None, dtype=base.dtype)
            if a == "at":
                return AV("at", traced=base.traced, shape=base.shape, dtype=base.dtype)
            return AV("method", traced=base.traced)
        if base.kind == "np":
            return AV("np") if a in ("T", "real", "imag") else AV("method")
        if base.kind == "func" and a in ("lower", "trace", "eval_shape"):
            return AV("method")
        return UNKNOWN

    def _subscript(self, node: ast.Subscript, ctx: _Ctx) -> AV:
        base = self.ev(node.value, ctx)
        idx = self.ev(node.slice, ctx)
        if base.kind == "at":
            return AV("atref", traced=base.traced or _traced(idx), shape=base.shape,
                      dtype=base.dtype)
        if base.kind == "jax":
            if idx.boolean and _traced(idx) and ctx.traced:
                self._bool_mask(node.slice, node, ctx)
            self._traced_slice(node, idx, ctx)
            if type(node.ctx) is ast.Load:
                self._oob(node, base, node.slice, read=True)
            return _jax(traced=base.traced or _traced(idx),
                        dtype=base.dtype if base.dtype else None)
        if base.kind in ("list", "tuple", "str") or (base.elts is not None and
                                                      base.kind != "slice"):
            t = _traced_elt(idx)
            if t is not None and type(node.slice) is not ast.Slice:
                self._int_use(node.slice, t, ctx, f"as an index into the Python "
                              f"{base.kind} `{self.seg(node.value)}`",
                              rewrite=self.replace(node, f"{self.jnp}.asarray("
                                                   f"{self.seg(node.value)})"
                                                   f"[{self.seg(node.slice)}]"))
            if base.elts and type(node.slice) is ast.Constant and \
                    isinstance(node.slice.value, int) and \
                    -len(base.elts) <= node.slice.value < len(base.elts):
                return base.elts[node.slice.value]
            if base.kind == "tuple" and base.elts and all(e.kind == "int" for e in base.elts):
                return AV("int", dtype="int*")
            return UNKNOWN
        if base.kind == "dict" and base.items and type(node.slice) is ast.Constant:
            v = base.items.get(node.slice.value)
            return v if v is not None and type(node.ctx) is ast.Load else UNKNOWN
        if base.kind == "static":
            return AV("static")
        if base.kind == "np":
            return AV("np")
        return UNKNOWN

    # ---- operators ----------------------------------------------------------------

    def _arith(self, a: AV, b: AV) -> AV:
        if a.kind == "jax" or b.kind == "jax":
            traced = a.traced or b.traced
            shape = a.shape if b.kind != "jax" else b.shape if a.kind != "jax" else (
                a.shape if a.shape == b.shape else None)
            dtype = a.dtype if a.dtype == b.dtype else None
            src = a.shape_src or b.shape_src
            if src is not None and ((_traced(a) and a.shape_src is None) or
                                    (_traced(b) and b.shape_src is None)):
                src = None
            return _jax(traced=traced, shape=shape, dtype=dtype, shape_src=src)
        if a.traced or b.traced:
            return _derived(True)
        if a.kind == "np" or b.kind == "np":
            return AV("np")
        if a.kind in ("int", "float", "complex") and b.kind in ("int", "float", "complex",
                                                               "bool"):
            k = "complex" if "complex" in (a.kind, b.kind) else "float" if "float" in (
                a.kind, b.kind) else "int"
            return AV(k, dtype=k + "*")
        if a.kind in ("static", "int") and b.kind in ("static", "int", "float"):
            return AV("static")
        if a.kind in ("str",) and b.kind in ("str",):
            return AV("str")
        return UNKNOWN

    def _binop(self, node: ast.BinOp, ctx) -> AV:
        a = self.ev(node.left, ctx)
        b = self.ev(node.right, ctx)
        r = self._arith(a, b)
        if type(node.op) in (ast.BitAnd, ast.BitOr, ast.BitXor) and (a.boolean or b.boolean):
            r = AV(r.kind, traced=r.traced, boolean=True, shape=r.shape, dtype=r.dtype)
        if a.kind == "list" and type(node.op) is ast.Mult:
            return AV("list")
        return r

    def _unary(self, node: ast.UnaryOp, ctx) -> AV:
        v = self.ev(node.operand, ctx)
        if type(node.op) is ast.Not:
            if _truth_traced(v) and ctx.traced:
                self._control_flow(node, node.operand, ctx, "not")
                return _jax(traced=True, boolean=True)
            return AV("bool")
        if v.kind == "jax":
            return _jax(traced=v.traced, shape=v.shape, dtype=v.dtype,
                        boolean=v.boolean and type(node.op) is ast.Invert,
                        shape_src=v.shape_src)
        if v.kind in ("int", "float", "complex"):
            return AV(v.kind, dtype=v.dtype)
        return v if v.traced else (AV("static") if v.kind in _STATIC_KINDS else UNKNOWN)

    def _compare(self, node: ast.Compare, ctx) -> AV:
        vals = [self.ev(node.left, ctx)] + [self.ev(c, ctx) for c in node.comparators]
        if all(type(o) in (ast.Is, ast.IsNot) for o in node.ops):
            return AV("bool")
        if any(type(o) in (ast.In, ast.NotIn) for o in node.ops):
            return AV("bool")
        traced = any(_traced(v) for v in vals)
        if any(v.kind == "jax" for v in vals):
            if len(node.ops) > 1 and any(_tracer(v) for v in vals) and ctx.traced:
                self._control_flow(node, node, ctx, "chain")
            return _jax(traced=traced, boolean=True,
                        shape=next((v.shape for v in vals if v.shape), None))
        if traced:
            return _derived(True)
        if any(v.kind == "np" for v in vals):
            return AV("np")
        return AV("bool")

    def _boolop(self, node: ast.BoolOp, ctx) -> AV:
        vals = [self.ev(v, ctx) for v in node.values]
        if ctx.traced and any(_truth_traced(v) for v in vals[:-1]):
            self._control_flow(node, node, ctx, "and" if type(node.op) is ast.And else "or")
            return _jax(traced=True, boolean=True)
        if _traced(vals[-1]):
            return vals[-1]
        return AV("static")

    def _ifexp(self, node: ast.IfExp, ctx) -> AV:
        test = self.ev(node.test, ctx)
        a = self.ev(node.body, ctx)
        b = self.ev(node.orelse, ctx)
        if _truth_traced(test) and ctx.traced:
            self._control_flow(node, node.test, ctx, "ifexp")
            return _jax(traced=True)
        return a if a.kind is not None else b
