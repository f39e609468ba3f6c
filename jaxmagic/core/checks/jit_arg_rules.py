"""Rules JX6xx: jit arguments. Non-array arguments not marked static, unhashable static
arguments, and @jit on a method taking self."""
from __future__ import annotations

import ast

from .scopes import _Ctx
from .values import FuncInfo

MUTABLE_STATE = ("ref", "nnxvar", "nnxmodule")


class JitArgRules:
    """Mixin of `Analyzer`: what is passed to jitted functions."""

    def _method_self(self, fn: FuncInfo) -> None:
        """@jax.jit on a method: `self` is traced as an array argument and fails."""
        if fn.class_name is None or fn.transform not in ("jit", "pmap") or \
                not fn.jit_is_decorator or not fn.params or \
                fn.class_name in self._pytree_classes:
            return
        first = fn.params[0]
        node = fn.node
        if any(self.resolve(d) in ("builtins.staticmethod", None) and
               isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
               for d in node.decorator_list):
            return
        if first in fn.static or fn.statics_unknown:
            return
        dec = fn.jit_node
        nums = sorted({0} | {fn.params.index(p) for p in fn.static if p in fn.params})
        new = self._jit_rewrite(fn, argnums=nums)
        self.add("JX603", dec, f"@jit on method {fn.class_name}.{fn.name}: `{first}` is "
                 "passed as an array argument, and calling it raises TypeError.",
                 f"mark {first} static (its class then needs __hash__/__eq__), or jit a "
                 f"function of arrays, or register {fn.class_name} as a pytree",
                 rewrite=new, fix_line=dec.lineno)
        fn.static.add(first)

    def _jit_args(self, node, fn: FuncInfo, args, kwargs, ctx: _Ctx) -> None:
        if fn.statics_unknown:
            return
        params = [p for p in fn.params if not p.startswith("*")]
        if fn.class_name and params and params[0] in ("self", "cls") and \
                type(node.func) is ast.Attribute:
            params = params[1:]
        bound = list(zip(params, node.args, args))
        bound += [(k.arg, k.value, kwargs[k.arg]) for k in node.keywords
                  if k.arg in params]
        for p, n, av in bound:
            if type(n) is ast.Starred:
                break
            if av.kind in MUTABLE_STATE:       # known inside the body: not a tracer
                self._arg_kinds[(id(fn.node), p)] = av
                continue
            static = p in fn.static
            if static:
                if type(n) in (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp,
                               ast.SetComp) or av.kind in ("jax", "np"):
                    new = None
                    if type(n) is ast.List:
                        inner = ", ".join(self.seg(e) for e in n.elts)
                        new = self.replace(n, f"({inner}{',' if len(n.elts) == 1 else ''})")
                    elif type(n) is ast.Set:
                        new = self.replace(n, f"frozenset({self.seg(n)})")
                    what = {ast.List: "a list", ast.Dict: "a dict", ast.Set: "a set"}.get(
                        type(n), "an array" if av.kind in ("jax", "np") else "a " +
                        type(n).__name__)
                    self.add("JX602", n, f"static argument `{p}` of {fn.name} gets {what}, "
                             "which is unhashable (ValueError: Non-hashable static "
                             "arguments).",
                             "pass a hashable value: a tuple" + (
                                 f": {new}" if new else
                                 " (or a frozenset; for arrays, make the argument traced)"),
                             rewrite=new)
                continue
            if (type(n) is ast.Constant and isinstance(n.value, str)) or \
                    type(n) is ast.JoinedStr or av.kind == "str" or type(n) is ast.Lambda \
                    or av.kind in ("func", "jaxfunc"):
                what = "a function" if type(n) is ast.Lambda or av.kind == "func" else \
                    "a string"
                new = self._jit_rewrite(fn, names=[p])
                fn.static.add(p)        # what it means; don't cascade inside the function
                self.add("JX601", n, f"`{self.seg(n)}` is {what}, passed to jitted "
                         f"{fn.name} as `{p}`, which is not static: jit can only trace "
                         "arrays (TypeError).",
                         f"mark it static: static_argnames=({p!r},)" + (
                             f" — {new}" if new else ""),
                         rewrite=new, fix_line=fn.jit_node.lineno if new else None)
            elif type(n) in (ast.List, ast.Tuple) and self._used_statically(fn, p):
                new = self._jit_rewrite(fn, names=[p])
                self.add("JX601", n, f"`{self.seg(n)}` passed to jitted {fn.name} as `{p}` "
                         "is traced element by element, but the function uses it as a "
                         "static shape/size (TracerIntegerConversionError).",
                         f"mark it static: static_argnames=({p!r},)" + (
                             f" — {new}" if new else ""),
                         rewrite=new, fix_line=fn.jit_node.lineno if new else None)

    def _used_statically(self, fn: FuncInfo, p: str) -> bool:
        for f in self.findings.values():
            if f.rule in ("JX203", "JX202") and p in f.detail.get("params", ()):
                return True
        # the function body may not be analysed yet: run it now (findings dedupe)
        self._schedule(fn, fn.parent)
        while self.queue:
            item = self.queue.pop(0)
            self._function(*item)
        return any(f.rule in ("JX203", "JX202") and p in f.detail.get("params", ())
                   for f in self.findings.values())
