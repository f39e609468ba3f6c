"""The pre-pass: imports, function definitions and the JAX transforms applied to them.

Before the code is interpreted, one walk over the tree finds which functions are jitted,
vmapped or used as lax loop bodies (by decorator, `jax.jit(f, ...)` or `partial`), which
of their arguments are static, and where `jax_enable_x64` is switched. `_jit_rewrite`
turns a function's jit decorator or call into one with extra static arguments (the fix
several rules suggest).
"""
from __future__ import annotations

import ast
import re

from .model import char_col
from .notebook import DEFAULT_ALIASES
from .values import FuncInfo, _const_ints, _const_strs, _param_names, _params

# transforms: canonical name -> (kind, function-argument positions)
_TRANSFORMS = {
    "jax.jit": ("jit", (0,)), "jax.pmap": ("pmap", (0,)), "jax.vmap": ("vmap", (0,)),
    "jax.lax.fori_loop": ("loop", (2,)), "jax.lax.while_loop": ("loop", (0, 1)),
    "jax.lax.scan": ("loop", (0,)), "jax.lax.cond": ("loop", (1, 2)),
    "jax.lax.switch": ("loop", (1,)), "jax.lax.map": ("loop", (0,)),
    "jax.lax.associative_scan": ("loop", (0,)),
    "jax.experimental.checkify.checkify": ("jit", (0,)), "jax.make_jaxpr": ("trace", (0,)),
    "jax.eval_shape": ("trace", (0,)),
    # shard_map outside jit runs eagerly (print shows values); inside jit it is staged
    "jax.shard_map": ("shard", (0,)), "jax.experimental.shard_map.shard_map": ("shard", (0,)),
    "jax.xla_computation": ("jit", (0,)),
}
# wrappers that pass their function through unchanged for our purposes
_PASSTHROUGH = {"jax.grad", "jax.value_and_grad", "jax.jacfwd", "jax.jacrev", "jax.hessian",
                "jax.checkpoint", "jax.remat", "jax.named_call", "jax.custom_jvp",
                "jax.custom_vjp", "functools.wraps", "jax.vmap", "jax.shard_map",
                "jax.experimental.shard_map.shard_map"}
# turning 64-bit on without config.update (env var, jax.experimental.enable_x64())
_X64_RE = re.compile(r"jax_enable_x64|JAX_ENABLE_X64|enable_x64")

_FIELDS: dict[type, tuple[str, ...]] = {}    # node type -> fields _scan visits


def _scan(tree: ast.Module):
    """One pass over the tree: calls, function defs, classes, imports, the names each
    function binds (its locals) and the lexical scope (def, lambda or class node; None
    for the module) of every call, def and scope. Load/Store contexts are not visited."""
    calls: list = []
    defs: list = []
    classes: list = []
    imports: list = []
    bound: dict = {}
    scope_of: dict = {}          # call / def / lambda / class node -> its scope node
    stack: list = [(tree, None, None)]
    pop, push = stack.pop, stack.append
    Name, Const, Call = ast.Name, ast.Constant, ast.Call
    FDef, AFDef, Lam, Cls = ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef
    Load, AST = ast.Load, ast.AST
    while stack:
        node, owner, scope = pop()
        t = type(node)
        if t is Name:
            if owner is not None and type(node.ctx) is not Load:
                bound[owner].add(node.id)
            continue
        if t is Const:
            continue
        if t is Call:
            calls.append(node)
            scope_of[node] = scope
        elif t is FDef or t is AFDef or t is Lam:
            bound[node] = set()
            scope_of[node] = scope
            a = node.args
            for d in a.defaults:
                push((d, owner, scope))
            for d in a.kw_defaults:
                if d is not None:
                    push((d, owner, scope))
            if t is Lam:
                push((node.body, node, node))
                continue
            defs.append(node)
            if owner is not None:
                bound[owner].add(node.name)
            for d in node.decorator_list:
                push((d, owner, scope))
            for st in node.body:
                push((st, node, node))
            continue
        elif t is Cls:
            classes.append(node)
            scope_of[node] = scope
            if owner is not None:
                bound[owner].add(node.name)
            for d in node.decorator_list + node.bases + node.keywords:
                push((d, owner, scope))
            for st in node.body:
                push((st, None, node))
            continue
        elif t is ast.Import or t is ast.ImportFrom:
            imports.append(node)
            if owner is not None:
                for al in node.names:
                    bound[owner].add((al.asname or al.name).split(".")[0])
            continue
        elif t is ast.ExceptHandler and node.name and owner is not None:
            bound[owner].add(node.name)
        fields = _FIELDS.get(t)
        if fields is None:
            fields = _FIELDS[t] = tuple(f for f in t._fields if f not in ("ctx",
                                                                         "type_comment"))
        for f in fields:
            v = getattr(node, f, None)
            if type(v) is list:
                for x in v:
                    tx = type(x)
                    if tx is Name:        # leaves handled here: no push
                        if owner is not None and type(x.ctx) is not Load:
                            bound[owner].add(x.id)
                    elif tx is not Const and isinstance(x, AST):
                        push((x, owner, scope))
            elif v is not None:
                tv = type(v)
                if tv is Name:
                    if owner is not None and type(v.ctx) is not Load:
                        bound[owner].add(v.id)
                elif tv is not Const and isinstance(v, AST):
                    push((v, owner, scope))
    return calls, defs, classes, imports, bound, scope_of


class Transforms:
    """Mixin of `Analyzer`: finds functions and their transforms before interpretation."""

    def _prepass(self, tree: ast.Module) -> None:
        calls, defs, classes, imports, bound, scope_of = _scan(tree)
        self._scope_of = scope_of
        for node in imports:
            if type(node) is ast.Import:
                for a in node.names:
                    if a.asname:
                        self.aliases[a.asname] = a.name
                    else:
                        top = a.name.split(".")[0]
                        self.aliases[top] = top
            elif node.module and not node.level:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        for c in classes:
            if c.bases or c.keywords or any(_registers(self.resolve(
                    d.func if type(d) is ast.Call else d)) for d in c.decorator_list):
                self._pytree_classes.add(c.name)     # maybe a pytree: self is fine
            for n in c.body:
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self._class_of[n] = c.name
        self._bound = bound
        defs.sort(key=lambda n: (n.lineno, n.col_offset))
        for node in defs + classes:      # autodidax's own `def jit(f)` is not jax.jit
            if scope_of.get(node) is None and node.name in DEFAULT_ALIASES:
                self.aliases[node.name] = ""
        for node in defs:
            params, defaults = _params(node)
            fn = FuncInfo(node, node.name, params, defaults,
                          class_name=self._class_of.get(node), cell=self.cell, src=self.src)
            self.funcs[node] = fn
            self._defs_in.setdefault((scope_of.get(node), node.name), []).append(fn)
            for dec in node.decorator_list:
                self._apply_decorator(fn, dec)
        for call in calls:
            f = call.func
            if isinstance(f, ast.Name):
                self.calls_by_name.setdefault(f.id, []).append(call)
            q = self.resolve(f)
            if q is None:                         # jax.jit(f)(...) is handled at the call
                continue
            if q in _TRANSFORMS:
                kind, positions = _TRANSFORMS[q]
                for pos in positions:
                    if pos < len(call.args):
                        self._mark_transformed(call.args[pos], kind, call, q)
            elif q == "functools.partial" and call.args:
                inner = self.resolve(call.args[0])
                if inner in _TRANSFORMS and len(call.args) > 1:
                    kind, positions = _TRANSFORMS[inner]
                    for pos in positions:
                        if pos + 1 < len(call.args):
                            self._mark_transformed(call.args[pos + 1], kind, call, inner)
            elif _registers(q) and call.args and type(call.args[0]) is ast.Name:
                self._pytree_classes.add(call.args[0].id)
            elif q.endswith("config.update") and len(call.args) >= 2 and \
                    type(call.args[0]) is ast.Constant and \
                    call.args[0].value == "jax_enable_x64" and \
                    type(call.args[1]) is ast.Constant:
                self.x64_toggles.append((call.lineno, bool(call.args[1].value),
                                         _function_of(call, scope_of)))
        if not self.x64_toggles:
            for m in _X64_RE.finditer(self.src):
                line = self.src.count("\n", 0, m.start()) + 1
                text = self.lines[line - 1].replace(" ", "")
                if "True" in text or "=\"1\"" in text or "='1'" in text or \
                        "enable_x64()" in text:
                    self.x64_toggles.append((line, True, None))
        self.x64_toggles.sort(key=lambda t: t[0])

    def visible_defs(self, name: str, scope) -> list[FuncInfo] | None:
        """The functions `name` can mean at `scope` (a def/lambda/class node, None for the
        module), by Python's scoping rules: [] when it is a parameter or another local
        there, None when this source does not define it."""
        s = scope
        while True:
            fns = self._defs_in.get((s, name))
            if fns:
                return fns
            if s is None:
                return None
            if type(s) is not ast.ClassDef and (name in self._bound.get(s, ()) or
                                                name in _param_names(s)):
                return []
            s = self._scope_of.get(s)     # class bodies are not visible from their methods
            while type(s) is ast.ClassDef:
                s = self._scope_of.get(s)

    @property
    def x64(self) -> bool:
        """jax_enable_x64 at the statement being analysed: module-level switches before
        it, and switches earlier in the same function (a test turning 64-bit on)."""
        v = self.x64_base
        for line, val, fn in self.x64_toggles:
            if (fn is None and line <= self._line) or \
                    (fn is not None and fn is self._cur_fn and line <= self._stmt_line):
                v = val
        return v

    def _transform_of(self, dec: ast.AST) -> tuple[str, str, list[ast.keyword]] | None:
        """(kind, canonical, keywords) when `dec` is a transform (maybe via partial)."""
        if isinstance(dec, ast.Call):
            q = self.resolve(dec.func)
            if q == "functools.partial" and dec.args:
                inner = self.resolve(dec.args[0])
                if inner in _TRANSFORMS:
                    return _TRANSFORMS[inner][0], inner, dec.keywords
                return None
            if q in _TRANSFORMS and not dec.args:       # jax.jit(static_argnames=...)
                return _TRANSFORMS[q][0], q, dec.keywords
            return None
        q = self.resolve(dec)
        if q in _TRANSFORMS:
            return _TRANSFORMS[q][0], q, []
        return None

    def _apply_decorator(self, fn: FuncInfo, dec: ast.AST) -> None:
        tr = self._transform_of(dec)
        if tr is None:
            return
        kind, q, keywords = tr
        self._set_transform(fn, kind, q, keywords, dec, decorator=True)

    def _set_transform(self, fn, kind, q, keywords, node, decorator=False):
        strongest = {"jit": 3, "pmap": 3, "trace": 3, "loop": 2, "vmap": 1, "shard": 1,
                     None: 0}
        if strongest[kind] >= strongest[fn.transform]:
            fn.transform = kind
        if kind in ("jit", "pmap") and q in ("jax.jit", "jax.pmap"):
            fn.jit_node = node
            fn.jit_is_decorator = decorator
            self._statics(fn, keywords, q)
        elif kind == "vmap":
            for k in keywords:
                if k.arg == "in_axes" and isinstance(k.value, (ast.Tuple, ast.List)):
                    for p, e in zip(fn.params, k.value.elts):
                        if isinstance(e, ast.Constant) and e.value is None:
                            fn.static.add(p)

    def _statics(self, fn: FuncInfo, keywords: list[ast.keyword], q: str) -> None:
        for k in keywords:
            if k.arg in ("static_argnums", "static_broadcasted_argnums"):
                nums = _const_ints(k.value)
                if nums is None:
                    fn.statics_unknown = True
                    continue
                for i in nums:
                    if -len(fn.params) <= i < len(fn.params):
                        fn.static.add(fn.params[i])
            elif k.arg == "static_argnames":
                names = _const_strs(k.value)
                if names is None:
                    fn.statics_unknown = True
                    continue
                fn.static.update(names)
            elif k.arg is None:
                fn.statics_unknown = True

    def _mark_transformed(self, arg: ast.AST, kind: str, call: ast.Call, q: str,
                          bound: tuple[int, tuple] = (0, ())) -> None:
        if isinstance(arg, ast.Call):      # jax.jit(jax.grad(f)), jax.jit(partial(f, ...))
            inner = self.resolve(arg.func)
            if (inner in _PASSTHROUGH or inner == "functools.partial") and arg.args:
                if inner == "functools.partial":     # arguments bound by partial: static
                    self._mark_transformed(arg.args[0], kind, call, q,
                                           (len(arg.args) - 1,
                                            tuple(k.arg for k in arg.keywords if k.arg)))
                    return
                self._mark_transformed(arg.args[0], kind, call, q)
                if inner == "jax.vmap":
                    self._mark_transformed(arg.args[0], "vmap", arg, inner)
            return
        if isinstance(arg, (ast.List, ast.Tuple)):    # lax.switch branches
            for e in arg.elts:
                self._mark_transformed(e, kind, call, q)
            return
        if isinstance(arg, ast.Lambda):
            fn = self.funcs.get(arg)
            if fn is None:
                params, defaults = _params(arg)
                fn = FuncInfo(arg, "<lambda>", params, defaults, cell=self.cell,
                              src=self.src)
                self.funcs[arg] = fn
            self._set_transform(fn, kind, q, call.keywords if q in ("jax.jit", "jax.pmap")
                                else [], call)
            return
        if isinstance(arg, ast.Name):
            kws = call.keywords if q in ("jax.jit", "jax.pmap", "jax.vmap") else []
            if q == "jax.vmap" and len(call.args) > 1:       # vmap(f, (0, None))
                kws = kws + [ast.keyword("in_axes", call.args[1])]
            fns = self.visible_defs(arg.id, self._scope_of.get(call))
            for fn in fns or ():
                self._set_transform(fn, kind, q, kws, call)
                if bound[0] or bound[1]:
                    positional = [p for p in fn.params if not p.startswith("*")]
                    fn.static.update(positional[:bound[0]])
                    fn.static.update(bound[1])
            if fns is None:      # not defined here: maybe in an earlier cell
                v = self.state.env.get(arg.id)
                fn = v.func if v is not None and v.kind == "func" else None
                if fn is not None and fn.src is not None and fn.src != self.src:
                    self._foreign.append((fn, kind, q, kws))
            return
        if isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) \
                and arg.value.id == "self":
            return   # jax.jit(self.method): a bound method, self is not an argument

    def _jit_rewrite(self, fn: FuncInfo, names=(), argnums=None) -> str | None:
        """The decorator line (or `g = jax.jit(f)` line) with extra static arguments."""
        node = fn.jit_node
        if node is None:
            return None
        lines = self.lines if fn.src in (None, self.src) else fn.src.split("\n")
        if fn.jit_is_decorator:
            if isinstance(node, ast.Call) and self.resolve(node.func) == "functools.partial":
                new = _copy_call(node)
            elif isinstance(node, ast.Call):      # jax.jit(static_argnames=...)
                new = _copy_call(node)
            else:
                new = ast.Call(ast.Name(self.partial, ast.Load()), [node], [])
            _add_statics(new, names, argnums)
            return f"@{ast.unparse(new)}"
        if isinstance(node, ast.Call) and node.lineno == node.end_lineno:
            new = _copy_call(node)
            _add_statics(new, names, argnums)
            line = lines[node.lineno - 1]
            a, b = char_col(line, node.col_offset), char_col(line, node.end_col_offset)
            return (line[:a] + ast.unparse(new) + line[b:]).strip()
        return None


def _function_of(node, scope_of):
    """The def or lambda `node` runs in (None: module level, or a class body)."""
    s = scope_of.get(node)
    while type(s) is ast.ClassDef:
        s = scope_of.get(s)
    return s


def _registers(q: str | None) -> bool:
    """`q` registers a class as a pytree (jax.tree_util, flax.struct, chex, ...)."""
    return bool(q) and ("register_pytree" in q or "register_dataclass" in q or
                        q.startswith(("flax.struct.", "chex.")))


def _copy_call(node: ast.Call) -> ast.Call:
    return ast.Call(node.func, list(node.args), [ast.keyword(k.arg, k.value)
                                                 for k in node.keywords])


def _add_statics(call: ast.Call, names=(), argnums=None) -> None:
    if names:
        existing = next((k for k in call.keywords if k.arg == "static_argnames"), None)
        have = _const_strs(existing.value) if existing is not None else []
        allnames = list(have or []) + [n for n in names if n not in (have or [])]
        val = ast.Tuple([ast.Constant(n) for n in allnames], ast.Load())
        if existing is not None:
            existing.value = val
        else:
            call.keywords.append(ast.keyword("static_argnames", val))
    if argnums is not None:
        existing = next((k for k in call.keywords if k.arg == "static_argnums"), None)
        val = ast.Constant(argnums[0]) if len(argnums) == 1 else \
            ast.Tuple([ast.Constant(i) for i in argnums], ast.Load())
        if existing is not None:
            existing.value = val
        else:
            call.keywords.append(ast.keyword("static_argnums", val))
