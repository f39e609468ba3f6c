"""Function bodies: which to analyse, with which parameters traced, and what they return.

Functions are scheduled once per (traced parameters, staged) combination; those from
earlier cells are re-analysed in their own source, so findings point at their own lines.
"""
from __future__ import annotations

import ast

from .notebook import CheckState
from .scopes import _Ctx
from .values import (
    AV,
    UNKNOWN,
    FuncInfo,
    _derived,
    _jax,
    _merge,
)

_KEEPS_RESULT = {"jax.jit", "jax.pmap", "jax.vmap", "jax.checkpoint", "jax.remat",
                 "jax.named_call", "jax.custom_jvp", "jax.custom_vjp", "functools.wraps",
                 "functools.cache", "functools.lru_cache", "builtins.staticmethod",
                 "builtins.classmethod", "builtins.property", "jax.named_scope"}


class Functions:
    """Schedules and analyses function bodies, and remembers what each returns."""

    def _foreign_functions(self) -> None:
        """Functions defined in earlier cells and transformed (or called traced) here:
        analyse them in their own source, and report at their own cell's lines."""
        seen = set()
        for item in self._foreign:
            fn = item[0]
            if isinstance(item[1], str):
                kind, q, kws = item[1], item[2], item[3]
                traced_params = staged = None
            else:
                kind = q = kws = None
                traced_params, staged = item[2], item[3]
            key = (fn.cell, fn.line, fn.name, kind, traced_params, staged)
            if key in seen:
                continue
            seen.add(key)
            try:
                tree = ast.parse(fn.src)
            except SyntaxError:
                continue
            sub = type(self)(fn.src, namespace=self.ns, x64=self.x64,
                           state=CheckState(env=dict(self.state.env),
                                            aliases=dict(self.aliases), commit=False),
                           cell=fn.cell)
            sub._prepass(tree)
            sfn = next((f for f in sub.funcs.values() if f.line == fn.line and
                        f.name == fn.name), None)
            if sfn is None:
                continue
            if kind is not None:
                sub._set_transform(sfn, kind, q, kws, None)
            sub.module = _Ctx()
            sub.module.env = dict(self.state.env)
            mark = len(sub.findings)
            sub._body(tree.body, sub.module, top=True)
            for k in list(sub.findings)[mark:]:
                del sub.findings[k]            # that cell's own code was checked already
            sub._schedule(sfn, None, traced_params, staged)
            while sub.queue:
                sub._function(*sub.queue.pop(0))
            end = getattr(sfn.node, "end_lineno", sfn.line)
            for (rule, line, col), f in sub.findings.items():
                if sfn.line <= line <= end:
                    self.findings[(fn.cell, rule, line, col)] = f.with_(
                        where=f"{fn.cell}, line {f.line}" if fn.cell else f.where,
                        filename=fn.cell or None)

    def _schedule(self, fn: FuncInfo, parent: _Ctx | None, traced_params=None,
                  staged=None) -> None:
        if traced_params is None:
            if fn.traced and not fn.statics_unknown:
                given = {p for (n, p) in self._arg_kinds if n == id(fn.node)}
                traced_params = frozenset(p for p in fn.params if p not in fn.static
                                          and p not in given and
                                          (p not in fn.defaults or self._passed(fn, p)))
            else:
                traced_params = frozenset()
        if staged is None:
            staged = fn.staged
        key = (id(fn.node), traced_params, staged)
        if key in self.done:
            return key
        self.done.add(key)
        if fn.src is not None and fn.src != self.src:       # from an earlier cell
            self._foreign.append((fn, None, traced_params, staged))
            return None
        self.queue.append((fn, traced_params, staged, parent if parent is not None else
                           fn.parent))
        return key

    def _returned(self, fn: FuncInfo, key) -> AV:
        """What `fn` returns when analysed as `key`: analysed now if it is still queued
        (a recursive call, or a function from an earlier cell, gives what is known)."""
        for i, item in enumerate(self.queue):
            if (id(item[0].node), item[1], item[2]) == key:
                del self.queue[i]
                self._function(*item)
                break
        got = self._returns.get(key)
        if got is None:
            got = fn.returns
        return got if got is not None else _derived(bool(key and key[1]))

    def _passed(self, fn: FuncInfo, p: str) -> bool:
        """A parameter with a default is traced only when a call passes it (lax loop
        bodies get their required arguments only; calling one directly traces nothing)."""
        if fn.transform == "loop":
            return False
        idx = fn.params.index(p)
        names = [fn.name] + ([fn.wrapper_name] if fn.wrapper_name else [])
        for n in names:
            for call in self.calls_by_name.get(n, ()):
                if len(call.args) > idx or any(k.arg == p for k in call.keywords):
                    return True
        return False

    def _param_value(self, fn: FuncInfo, p: str) -> AV:
        """An untraced parameter: what its callers pass when that is known (a mutable
        ref or NNX Variable given to a jitted function), else unknown."""
        return self._arg_kinds.get((id(fn.node), p), UNKNOWN)

    def _function(self, fn: FuncInfo, traced_params, staged: bool, parent: _Ctx | None):
        node = fn.node
        traced = bool(traced_params) or fn.traced
        ctx = _Ctx(fn, parent or self.module, traced=traced or
                   bool(parent and parent.traced), staged=staged or
                   bool(parent and parent.staged))
        ctx.params = {p.lstrip("*") for p in fn.params}
        ctx.static_params = ctx.params - {p.lstrip("*") for p in traced_params}
        for p in fn.params:
            if p.startswith("*"):
                ctx.env[p[1:]] = AV("tuple", traced=p in traced_params)
            elif p in traced_params:
                given = self._helper_avs.get(id(node), {}).get(p)
                ctx.env[p] = given if given is not None and given.kind in (
                    "tuple", "list", "dict", None) else _jax(traced=True, param=p)
            else:
                ctx.env[p] = self._param_value(fn, p)
        kw = node.args.kwarg
        if kw is not None:                 # **kwargs: the function's own fresh dict
            ctx.params.add(kw.arg)
            ctx.env[kw.arg] = AV("dict")
        outer_fn, self._cur_fn = self._cur_fn, node
        if type(node) is ast.Lambda:
            ctx.locals = set(ctx.params)
            ctx.returns.append(self.ev(node.body, ctx))
        else:
            ctx.locals = self._bound.get(node, set()) | ctx.params
            for s in node.body:
                if type(s) in (ast.Global, ast.Nonlocal):
                    for n in s.names:
                        ctx.declared[n] = "global" if type(s) is ast.Global else "nonlocal"
            self._body(node.body, ctx)
        self._cur_fn = outer_fn
        got = _merge(ctx.returns)
        if not all(self._keeps_result(d) for d in getattr(node, "decorator_list", ())):
            got = _derived(got.traced)      # @jax.grad, @value_and_grad, @unknown: not
        fn.returns = self._returns[(id(node), traced_params, staged)] = got   # its return

    def _keeps_result(self, dec) -> bool:
        """A decorator whose function returns what the body returns (jit, vmap, ...)."""
        if type(dec) is ast.Call:
            q = self.resolve(dec.func)
            if q == "functools.partial" and dec.args:
                q = self.resolve(dec.args[0])
        else:
            q = self.resolve(dec)
        return q in _KEEPS_RESULT
