"""The abstract interpreter: statements and expressions in order, one scope at a time.

The module body runs first (so globals are known), then each function body, with the
parameters a transform traces bound to traced array values; helpers called from traced
code are scheduled with the arguments they receive. Expressions evaluate to `AV`s, and
the rule mixins (`*_rules.py`) are called where a sharp bit can occur. `Interpreter` is
not used alone: `static.Analyzer` composes it with the call evaluation, the pre-pass and
the rules.
"""
from __future__ import annotations

import ast

from .jaxapi import _ARRAY_ATTRS, _DTYPE64, _STATIC_ATTRS, _SUBMODULES
from .libraries import is_nnx_module_base
from .model import RULES, Finding, char_col, sort_key
from .notebook import DEFAULT_ALIASES, CheckState, _canonical_object, _from_value
from .values import (
    _CONST_AV,
    _STATIC_KINDS,
    AV,
    STATIC,
    UNKNOWN,
    FuncInfo,
    _derived,
    _jax,
    _merge,
    _traced,
    _traced_elt,
    _tracer,
    _truth_traced,
)


class _Ctx:
    """One scope being analysed: the module, or one function body."""

    __slots__ = ("env", "fn", "traced", "staged", "params", "locals", "declared", "parent",
                 "static_params", "returns")

    def __init__(self, fn: FuncInfo | None = None, parent: "_Ctx | None" = None,
                 traced=False, staged=False):
        self.env: dict[str, AV] = {}
        self.fn = fn
        self.parent = parent
        self.traced = traced
        self.staged = staged
        self.params: set[str] = set()
        self.locals: set[str] = set()
        self.declared: dict[str, str] = {}     # name -> "global" | "nonlocal"
        self.static_params: set[str] = set()
        self.returns: list[AV] = []            # the values of its `return` statements


_KEEPS_RESULT = {"jax.jit", "jax.pmap", "jax.vmap", "jax.checkpoint", "jax.remat",
                 "jax.named_call", "jax.custom_jvp", "jax.custom_vjp", "functools.wraps",
                 "functools.cache", "functools.lru_cache", "builtins.staticmethod",
                 "builtins.classmethod", "builtins.property", "jax.named_scope"}


def _scope(ctx: _Ctx):
    """The lexical scope node of `ctx` (None: the module)."""
    return ctx.fn.node if ctx.fn is not None else None


class Interpreter:
    """Walks one cell or file, keeping an abstract value per name, and collects findings."""

    def __init__(self, src: str, *, namespace: dict | None = None, x64: bool | None = None,
                 state: "CheckState | None" = None, line_offset: int = 0,
                 cell: str = ""):
        self.src = src
        self.lines = src.split("\n")
        self.ns = namespace
        self.state = state or CheckState()
        self.offset = line_offset
        self.cell = cell
        self.findings: dict[tuple, Finding] = {}
        self.aliases: dict[str, str] = dict(self.state.aliases)
        self.funcs: dict[ast.AST, FuncInfo] = {}
        self._defs_in: dict[tuple, list[FuncInfo]] = {}   # (scope node, name) -> defs
        self._scope_of: dict = {}
        self.calls_by_name: dict[str, list[ast.Call]] = {}
        self.x64_base = bool(x64) if x64 is not None else self.state.x64
        self.x64_toggles: list[tuple] = []    # (line, on, function node or None)
        self._line = 0                    # the top-level statement being analysed
        self._stmt_line = 0               # the statement being analysed
        self._cur_fn = None               # the def / lambda node being analysed
        self.module_assigns: dict[str, list[int]] = {}   # top-level rebinding lines
        self.done: set[tuple] = set()
        self.queue: list[tuple] = []
        self._ev = {
            ast.Name: self._name, ast.Constant: self._const, ast.Attribute: self._attr,
            ast.Subscript: self._subscript, ast.Call: self._call, ast.BinOp: self._binop,
            ast.UnaryOp: self._unary, ast.Compare: self._compare, ast.BoolOp: self._boolop,
            ast.IfExp: self._ifexp, ast.Tuple: self._seq, ast.List: self._seq,
            ast.Set: self._set, ast.Dict: self._dict, ast.JoinedStr: self._fstr,
            ast.Lambda: self._lambda, ast.ListComp: self._comp, ast.SetComp: self._comp,
            ast.GeneratorExp: self._comp, ast.DictComp: self._comp,
            ast.NamedExpr: self._walrus, ast.Starred: self._starred,
            ast.Slice: self._slice, ast.Await: self._await,
        }
        self._np = self._jnp = self._jax_name = self._lax = self._partial = None
        self._foreign: list[tuple] = []
        self._resolved: dict = {}
        self._helper_avs: dict = {}
        self._returns: dict = {}                     # analysis key -> returned value
        self._consts: dict = {}                      # (name, line) -> literal bound there
        self._arg_kinds: dict = {}                   # (def node id, param) -> AV passed
        self._arrays: dict[int, set] = {}
        self._class_of: dict[ast.AST, str] = {}     # method def -> its class name
        self._pytree_classes: set[str] = set()      # classes that are (or may be) pytrees
        self._loops: list[tuple[int, int]] = []     # top-level loops' line ranges

    # ---- entry --------------------------------------------------------------------

    def run(self, tree: ast.Module) -> list[Finding]:
        self._prepass(tree)
        mod = _Ctx()
        mod.env = dict(self.state.env)
        self.module = mod
        self._body(tree.body, mod, top=True)
        # function bodies, after the module (globals are then known); helpers called
        # from traced functions are queued while analysing and run here too
        for fn in list(self.funcs.values()):
            if fn.parent is None:
                self._schedule(fn, None)
        while self.queue:
            fn, traced_params, staged, parent = self.queue.pop(0)
            self._function(fn, traced_params, staged, parent)
        self._foreign_functions()
        self._stale_captures(tree)
        self._commit()
        return sorted(self.findings.values(), key=sort_key)

    # ---- names --------------------------------------------------------------------

    def resolve(self, node) -> str | None:
        """The canonical dotted name of a module-level reference (`jnp.zeros` ->
        `jax.numpy.zeros`), or None for values."""
        try:
            return self._resolved[node]
        except KeyError:
            pass
        q = self._resolved[node] = self._resolve(node)
        return q

    def _resolve(self, node) -> str | None:
        if type(node) is ast.Name:
            name = node.id
            q = self.aliases.get(name)
            if q is not None:
                return q or None            # "": the code's own definition
            if self.ns is not None and name in self.ns:
                return self._ns_name(name)
            return DEFAULT_ALIASES.get(name)
        if type(node) is ast.Attribute:
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def _ns_name(self, name: str) -> str | None:
        obj = self.ns.get(name)
        mod = getattr(obj, "__name__", None) if type(obj).__name__ == "module" else None
        if mod:
            return mod
        return _canonical_object(obj)

    def alias_for(self, canonical: str, default: str) -> str:
        """The name this code imports `canonical` as (for rewrites), else `default`."""
        for k, v in self.aliases.items():
            if v == canonical:
                return k
        return default

    @property
    def np(self) -> str:
        if self._np is None:
            self._np = self.alias_for("numpy", "np")
        return self._np

    @property
    def jnp(self) -> str:
        if self._jnp is None:
            self._jnp = self.alias_for("jax.numpy", "jnp")
        return self._jnp

    @property
    def jaxn(self) -> str:
        if self._jax_name is None:
            self._jax_name = self.alias_for("jax", "jax")
        return self._jax_name

    @property
    def lax(self) -> str:
        if self._lax is None:
            self._lax = self.alias_for("jax.lax", "lax")
        return self._lax

    @property
    def partial(self) -> str:
        if self._partial is None:
            p = self.alias_for("functools.partial", "")
            self._partial = p or ("functools.partial" if "functools" in self.aliases
                                  else "partial")
        return self._partial

    def _shadowed(self, name: str, ctx: _Ctx) -> bool:
        """`name` is a variable here, not the module/function alias it usually is."""
        c = ctx
        while c is not None:
            v = c.env.get(name)
            if v is not None:
                return v.kind != "module"
            if c is not self.module and name in c.locals:
                return True
            c = c.parent
        return False

    # ---- findings -----------------------------------------------------------------

    def seg(self, node) -> str:
        l0, l1 = node.lineno - 1, node.end_lineno - 1
        if l0 == l1:
            line = self.lines[l0]
            if line.isascii():
                return line[node.col_offset:node.end_col_offset]
            b = line.encode()
            return b[node.col_offset:node.end_col_offset].decode(errors="replace")
        return ast.get_source_segment(self.src, node) or ast.unparse(node)

    def replace(self, node, new: str) -> str | None:
        """The line of `node` with node's text replaced by `new` (single-line nodes)."""
        if node.lineno != node.end_lineno:
            return None
        line = self.lines[node.lineno - 1]
        a = char_col(line, node.col_offset)
        b = char_col(line, node.end_col_offset)
        return (line[:a] + new + line[b:]).strip()

    def add(self, rule: str, node, message: str, fix: str, rewrite: str | None = None,
            fix_line: int | None = None, severity: str | None = None, **detail) -> None:
        line_no = node.lineno
        line = self.lines[line_no - 1] if line_no - 1 < len(self.lines) else ""
        col = char_col(line, node.col_offset) + 1
        end = char_col(line, node.end_col_offset) if node.end_lineno == line_no else len(line)
        key = (rule, line_no, col)
        if key in self.findings:
            return
        if fix_line is not None:
            fix_line += self.offset
        self.findings[key] = Finding(
            rule=rule, severity=severity or RULES[rule].severity, line=line_no + self.offset,
            message=message, fix=fix, col=col, end_col=max(end, col), source=line.strip()
            and line, rewrite=rewrite, fix_line=fix_line, detail=detail)

    # ---- statements ---------------------------------------------------------------

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

    # ---- functions ----------------------------------------------------------------

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

    # ---- expressions --------------------------------------------------------------

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

    # ---- commit -------------------------------------------------------------------

    def _commit(self) -> None:
        st = self.state
        if not st.commit:
            return
        st.aliases.update(self.aliases)
        for k, v in self.module.env.items():
            st.env[k] = v
        for name, lines in self.module_assigns.items():
            key = (name, lines[-1])
            if key in self._consts:
                st.consts[name] = self._consts[key]
            else:
                st.consts.pop(name, None)
        module_level = [val for _, val, fn in self.x64_toggles if fn is None]
        if module_level:
            st.x64 = module_level[-1]
        for fn in self.funcs.values():
            if fn.parent is None and type(fn.node) is not ast.Lambda:
                st.env.setdefault(fn.name, AV("func", func=fn))
