"""Rules JX2xx: static shapes and tracing. A traced value used where Python needs a
concrete one (control flow, ints, sizes, slices, NumPy), boolean masks and shapes
computed with jax.numpy. Fixes suggest the traced-safe form or marking the parameter
static.
"""
from __future__ import annotations

import ast
import re

from .jaxapi import _JAX_PREFIXES, _SHAPE_ARGS, _SIZED
from .scopes import _Ctx
from .values import _OPSYM, AV, UNKNOWN, FuncInfo, _int_const, _traced, _traced_elt

_CMPSYM = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
           ast.NotEq: "!="}


class TracingRules:
    """Mixin of `Analyzer`: concrete values asked of tracers."""

    def _traced_slice(self, node: ast.Subscript, idx: AV, ctx: _Ctx) -> None:
        sl = node.slice
        slices = [sl] if type(sl) is ast.Slice else \
            [e for e in sl.elts if type(e) is ast.Slice] if type(sl) is ast.Tuple else []
        for s in slices:
            parts = [s.lower, s.upper, s.step]
            avs = [self.ev(p, ctx) if p is not None else UNKNOWN for p in parts]
            if not any(_traced(a) for a in avs):
                continue
            x = self.seg(node.value)
            rewrite = None
            size_node = None
            lo, hi = s.lower, s.upper
            if lo is not None and hi is not None and type(hi) is ast.BinOp and \
                    type(hi.op) is ast.Add and ast.dump(hi.left) == ast.dump(lo):
                size_node = hi.right
            if size_node is not None and not _traced(self.ev(size_node, ctx)) and \
                    type(sl) is ast.Slice and s.step is None:
                size = self.seg(size_node)
                rewrite = self.replace(node, f"{self.lax}.dynamic_slice_in_dim({x}, "
                                       f"{self.seg(lo)}, {size})")
            params = self._traced_params(s, ctx)
            fix = (f"the slice size is static, so use {self.lax}.dynamic_slice_in_dim({x}, "
                   f"{self.seg(lo)}, {self.seg(size_node)})" if rewrite else
                   "a slice's size must be static: use lax.dynamic_slice(x, start, sizes) "
                   "with a static size, or keep the shape and mask with jnp.where")
            if params and not rewrite:
                fix += "; or " + self._static_hint(ctx, params)
            self.add("JX206", node, f"`{self.seg(node)}` slices with traced bounds: its "
                     "shape would depend on a traced value (IndexError under jit).", fix,
                     rewrite=rewrite, params=tuple(params))
            return

    def _bool_mask(self, mask_node, node, ctx: _Ctx, stmt=None) -> None:
        x = self.seg(node.value) if type(node) is ast.Subscript else self.seg(node)
        m = self.seg(mask_node)
        if stmt is not None:           # x[mask] = v
            v = self.seg(stmt.value)
            new = f"{x} = {self.jnp}.where({m}, {v}, {x})"
            self.add("JX201", node, f"`{self.seg(node)}` indexes with a traced boolean mask: "
                     "the result's size would depend on values (NonConcreteBooleanIndexError).",
                     f"select instead: {new}", rewrite=self.replace(stmt, new))
            return
        new_expr = f"{self.jnp}.where({m}, {x}, 0)"
        self.add("JX201", node, f"`{self.seg(node)}` indexes with a traced boolean mask: the "
                 "result's size would depend on values (NonConcreteBooleanIndexError).",
                 f"keep the shape: {new_expr} (or pass where= to the reduction), or "
                 f"{self.jnp}.nonzero({m}, size=N) for at most N indices",
                 rewrite=self.replace(node, new_expr))

    def _bool_mask_at(self, node, base_node, idx_node, op: str) -> None:
        """JX201 on `x.at[mask].op(v)`: the same select, written with jnp.where."""
        x = self.seg(base_node)
        m = self.seg(idx_node)
        v = self.seg(node.args[0]) if node.args else ""
        expr = {"set": f"{self.jnp}.where({m}, {v}, {x})",
                "add": f"{self.jnp}.where({m}, {x} + {v}, {x})",
                "multiply": f"{self.jnp}.where({m}, {x} * {v}, {x})",
                "get": f"{self.jnp}.where({m}, {x}, 0)"}[op]
        self.add("JX201", node, f"`{self.seg(node)}` uses a traced boolean mask as "
                 "an index (NonConcreteBooleanIndexError).",
                 f"select instead: {expr}", rewrite=self.replace(node, expr))

    def _control_flow(self, stmt, test, ctx: _Ctx, kind: str) -> None:
        t = self.seg(test)
        params = self._traced_params(test, ctx)
        jnp = self.jnp
        rewrite = None
        fix_line = None
        if kind == "ifexp":
            new = f"{jnp}.where({t}, {self.seg(stmt.body)}, {self.seg(stmt.orelse)})"
            rewrite = self.replace(stmt, new)
            fix = f"select with {new}"
            what = f"`{self.seg(stmt)}` branches"
        elif kind == "if":
            new = self._if_rewrite(stmt, t)
            if new:
                rewrite, fix_line = new, stmt.lineno
                fix = f"compute both branches and select: {new}"
            else:
                fix = (f"use {self.lax}.cond({t}, true_fn, false_fn, operands) or "
                       f"{jnp}.where({t}, a, b)")
            what = f"`if {t}:` branches"
        elif kind == "while":
            fix = f"use {self.lax}.while_loop(cond_fun, body_fun, init) (or " \
                  f"{self.lax}.fori_loop for a counted loop)"
            what = f"`while {t}:` loops"
        elif kind == "assert":
            fix = "check values with checkify.check(...) under checkify, or " \
                  "jax.debug.callback; or assert on static shapes only"
            what = f"`assert {t}` checks"
        elif kind in ("and", "or"):
            fn = "logical_and" if kind == "and" else "logical_or"
            vals = [self.seg(v) for v in stmt.values]
            new = vals[-1]
            for v in reversed(vals[:-1]):
                new = f"{jnp}.{fn}({v}, {new})"
            rewrite = self.replace(stmt, new)
            fix = f"combine arrays with {new}"
            what = f"`{t}` calls bool()"
        elif kind == "not":
            new = f"{jnp}.logical_not({t})"
            rewrite = self.replace(stmt, new)
            fix = f"use {new}"
            what = f"`not {t}` calls bool()"
        elif kind == "chain":
            vals = [stmt.left] + list(stmt.comparators)
            parts = [f"({self.seg(a)} {_CMPSYM.get(type(o), '?')} {self.seg(b)})"
                     for a, o, b in zip(vals, stmt.ops, vals[1:])]
            new = " & ".join(parts)
            rewrite = self.replace(stmt, new)
            fix = f"compare elementwise and combine with &: {new}"
            what = f"the chained comparison `{t}` calls bool()"
        else:   # bool(x), any(), all()
            fix = f"keep it an array ({jnp}.any / {jnp}.all / {jnp}.where) or use " \
                  f"{self.lax}.cond"
            what = f"`{self.seg(stmt)}` converts to a Python bool"
        if params and ctx.fn is not None:
            hint = self._static_hint(ctx, params)
            jr = self._jit_rewrite(ctx.fn, names=params) if ctx.fn.transform in ("jit",
                                                                                 "pmap") \
                else None
            fix += f"; or, {hint}"
            if rewrite is None and jr:
                rewrite, fix_line = jr, ctx.fn.jit_node.lineno
        self.add("JX202", stmt, f"{what} on a traced value: under a transform it has no "
                 "concrete True/False (TracerBoolConversionError).", fix, rewrite=rewrite,
                 fix_line=fix_line, params=tuple(params))

    def _if_rewrite(self, stmt: ast.If, t: str) -> str | None:
        body, orelse = stmt.body, stmt.orelse
        jnp = self.jnp
        if len(body) == 1 and len(orelse) == 1:
            a, b = body[0], orelse[0]
            if type(a) is ast.Return and type(b) is ast.Return and a.value and b.value:
                return f"return {jnp}.where({t}, {self.seg(a.value)}, {self.seg(b.value)})"
            if type(a) is ast.Assign and type(b) is ast.Assign and len(a.targets) == 1 and \
                    len(b.targets) == 1 and type(a.targets[0]) is ast.Name and \
                    type(b.targets[0]) is ast.Name and a.targets[0].id == b.targets[0].id:
                n = a.targets[0].id
                return f"{n} = {jnp}.where({t}, {self.seg(a.value)}, {self.seg(b.value)})"
        if len(body) == 1 and not orelse:
            a = body[0]
            if type(a) is ast.Assign and len(a.targets) == 1 and type(a.targets[0]) is \
                    ast.Name:
                n = a.targets[0].id
                return f"{n} = {jnp}.where({t}, {self.seg(a.value)}, {n})"
            if type(a) is ast.AugAssign and type(a.target) is ast.Name and \
                    type(a.op) in _OPSYM:
                n = a.target.id
                return (f"{n} = {jnp}.where({t}, {n} {_OPSYM[type(a.op)]} "
                        f"{self.seg(a.value)}, {n})")
        return None

    def _builtin_minmax(self, node, name: str) -> None:
        """JX202: builtin max()/min() on traced values compares them with Python `<`."""
        fn = "maximum" if name == "max" else "minimum"
        if len(node.args) == 2:
            new = f"{self.jnp}.{fn}({self.seg(node.args[0])}, {self.seg(node.args[1])})"
        else:
            new = f"{self.jnp}.{name}({', '.join(self.seg(a) for a in node.args)})"
        self.add("JX202", node, f"builtin {name}() compares traced values with Python "
                 "`<`, which needs a concrete bool (TracerBoolConversionError).",
                 f"use {new}", rewrite=self.replace(node, new))

    def _int_use(self, node, av: AV, ctx: _Ctx, how: str, rewrite=None,
                 range_call=None) -> None:
        params = self._traced_params(node, ctx)
        fix_line = None
        if av.shape_src is not None:
            self._shape_from_jnp(node, av, ctx, how)
            return
        if range_call is not None:
            fix = (f"loop with {self.lax}.fori_loop(0, {self.seg(node)}, body, init), "
                   "whose bound may be traced")
        elif rewrite is not None:
            fix = f"index an array instead: {rewrite}"
        else:
            fix = "sizes and shapes must be static: compute them from shapes (x.shape) " \
                  "with NumPy/Python"
        if params and ctx.fn is not None:
            fix += "; or, " + self._static_hint(ctx, params)
            jr = self._jit_rewrite(ctx.fn, names=params) if ctx.fn.transform in ("jit",
                                                                                 "pmap") \
                else None
            if rewrite is None and jr:
                rewrite, fix_line = jr, ctx.fn.jit_node.lineno
        self.add("JX203", node, f"`{self.seg(node)}` is traced but used {how}, which "
                 "needs a concrete Python int (TracerIntegerConversionError).", fix,
                 rewrite=rewrite, fix_line=fix_line, params=tuple(params))

    def _shape_arg(self, node, av: AV, ctx: _Ctx, q: str) -> None:
        if type(node) in (ast.Tuple, ast.List):
            for e in node.elts:
                self._shape_arg(e, self.ev(e, ctx), ctx, q)
            return
        t = _traced_elt(av)
        if t is None:
            return
        name = q.rsplit(".", 1)[-1]
        self._int_use(node, t, ctx, f"as a shape/size in {name}()")

    def _shape_from_jnp(self, node, av: AV, ctx: _Ctx, how: str) -> None:
        src = av.shape_src
        text = self.seg(src)
        new_expr = re.sub(rf"\b{re.escape(self.jnp)}\.", f"{self.np}.", text)
        if new_expr == text:
            new_expr = None
        rewrite = self.replace(src, new_expr) if new_expr else None
        fix_line = src.lineno if rewrite and src.lineno != node.lineno else None
        self.add("JX204", node, f"`{self.seg(node)}` is used {how}, but it was computed with "
                 f"jax.numpy (`{text}`), which makes a tracer even from static shapes.",
                 "compute shapes with NumPy or Python, which stay static: " +
                 (new_expr if new_expr else "math.prod(x.shape)"),
                 rewrite=rewrite, fix_line=fix_line)

    def _is_shape_expr(self, node, ctx) -> bool:
        """`x.shape`, `x.shape[0]`, `len(x)`, `x.size` or a tuple of such: static ints."""
        t = type(node)
        if t is ast.Attribute:
            return node.attr in ("shape", "size", "ndim")
        if t is ast.Subscript:
            return self._is_shape_expr(node.value, ctx)
        if t is ast.Call and type(node.func) is ast.Name and node.func.id == "len":
            return True
        if t in (ast.Tuple, ast.List):
            return bool(node.elts) and all(self._is_shape_expr(e, ctx) or
                                           _int_const(e) is not None for e in node.elts)
        if t is ast.Call and type(node.func) is ast.Attribute:
            return self._is_shape_expr(node.func.value, ctx)
        return False

    def _sized(self, node, name: str, args, ctx: _Ctx) -> None:
        pos = _SIZED.get(name, 0)
        if len(node.args) <= pos or not _traced(args[pos]):
            return
        a = node.args[pos]
        if type(a) is ast.Compare and type(a.left) in (ast.Name, ast.Attribute):
            base = self.seg(a.left)
        elif type(a) in (ast.Name, ast.Attribute):
            base = self.seg(a)
        else:
            base = f"({self.seg(a)})"
        call = self.seg(node)
        new_call = call[:-1].rstrip() + f", size={base}.size)"
        extra = ", fill_value=..." if name.startswith("unique") else ""
        self.add("JX205", node, f"`{call}` returns an array whose size depends on the values "
                 "(ConcretizationTypeError under a transform).",
                 f"give a static upper bound: {new_call}" + (
                     f" (and choose{extra[1:]} for the padding)" if extra else
                     " (padding uses fill_value)"),
                 rewrite=self.replace(node, new_call))

    def _concrete_cast(self, node, name: str, ctx: _Ctx) -> None:
        """JX207: int()/float()/complex() of a traced value."""
        a = self.seg(node.args[0])
        new = f"{a}.astype({name})" if type(node.args[0]) in (ast.Name, ast.Attribute) \
            else f"({a}).astype({name})"
        self.add("JX207", node, f"`{self.seg(node)}` needs a concrete value, but "
                 f"{a} is traced (ConcretizationTypeError).",
                 f"keep it an array: {new}; or, if it is an argument the shapes "
                 "depend on, mark it static (static_argnames)",
                 rewrite=self.replace(node, new),
                 params=tuple(self._traced_params(node.args[0], ctx)))

    def _concrete_item(self, node, meth: str) -> None:
        """JX207: `.item()`, `.tolist()`, `__int__` ... on a traced array."""
        x = self.seg(node.func.value)
        new = self.replace(node, x)
        self.add("JX207", node, f"`{self.seg(node)}` needs a concrete value, but {x} "
                 f"is traced (ConcretizationTypeError).",
                 f"keep it an array and drop .{meth}(): {x}", rewrite=new)

    def _math_on_tracer(self, node, name: str) -> None:
        """JX207: a `math` function of a traced value converts it to a Python float."""
        args_text = ", ".join(self.seg(a) for a in node.args)
        new = self.replace(node, f"{self.jnp}.{name}({args_text})")
        self.add("JX207", node, f"`{self.seg(node)}` converts a traced value to a "
                 "Python float (ConcretizationTypeError).",
                 f"use the jax.numpy function: {self.jnp}.{name}(...)", rewrite=new)

    def _numpy_on_tracer(self, node, name: str, top_level: bool) -> None:
        """JX207: a NumPy function of a traced value (`np.f`, rewritten as `jnp.f`)."""
        new = self.replace(node.func, f"{self.jnp}.{name}") if top_level else None
        conv = name in ("asarray", "array")
        self.add("JX207", node, f"`{self.seg(node)}` converts a tracer to a NumPy "
                 "array (TracerArrayConversionError)" + (
                     "" if conv else ": NumPy cannot run on traced values") + ".",
                 f"use {self.jnp}.{name} — jax.numpy works on tracers; use NumPy only "
                 "for static values such as shapes",
                 rewrite=new)

    def _traced_params(self, node, ctx: _Ctx) -> list[str]:
        """Traced parameters of the current function that `node` reads and that look like
        Python values (flags, counts) rather than arrays: candidates for static_argnames."""
        out = []
        if ctx.fn is None:
            return out
        arrays = self._array_params(ctx.fn)
        for n in ast.walk(node):
            if type(n) is ast.Name and n.id in ctx.params and n.id not in ctx.static_params \
                    and n.id not in out:
                v = ctx.env.get(n.id)
                if v is not None and v.param == n.id:
                    if n.id in arrays:
                        return []
                    out.append(n.id)
        return out

    def _array_params(self, fn: FuncInfo) -> set[str]:
        """Parameters the function uses as arrays (indexes, .shape, jnp calls on them)."""
        cached = self._arrays.get(id(fn.node))
        if cached is not None:
            return cached
        params = {p.lstrip("*") for p in fn.params}
        out: set[str] = set()
        body = fn.node.body if isinstance(fn.node.body, list) else [fn.node.body]
        for st in body:
            for n in ast.walk(st):
                t = type(n)
                if t is ast.Subscript and type(n.value) is ast.Name:
                    out.add(n.value.id)
                elif t is ast.Attribute and type(n.value) is ast.Name and \
                        n.attr not in ("append", "get", "items", "keys", "values"):
                    out.add(n.value.id)
                elif t is ast.Call:
                    q = self.resolve(n.func) if type(n.func) in (ast.Name, ast.Attribute) \
                        else None
                    if q and q.startswith(_JAX_PREFIXES):
                        shape_pos = _SHAPE_ARGS.get(q, ())
                        for i, a in enumerate(n.args):
                            if type(a) is ast.Name and i not in shape_pos:
                                out.add(a.id)
                elif t is ast.BinOp and type(n.op) is ast.MatMult:
                    for a in (n.left, n.right):
                        if type(a) is ast.Name:
                            out.add(a.id)
        out &= params
        self._arrays[id(fn.node)] = out
        return out

    def _static_hint(self, ctx: _Ctx, params: list[str]) -> str:
        names = ", ".join(repr(p) for p in params)
        return f"if {' and '.join(params)} is a Python value, mark it static: " \
            f"static_argnames=({names}{',' if len(params) == 1 else ''})"
