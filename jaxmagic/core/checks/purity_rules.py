"""Rules JX3xx: purity under jit. Side effects that run once while tracing (print,
outer state, global writes, Python/NumPy randomness) and jitted functions that captured
a global the code later changes.
"""
from __future__ import annotations

import ast

from .scopes import _Ctx
from .values import AV, FuncInfo, _traced, _tracer

_OUTER_MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault", "pop",
                   "appendleft", "remove", "clear", "popitem", "discard", "put"}


class PurityRules:
    """Mixin of `Analyzer`: side effects inside traced functions and stale captures."""

    def _is_outer(self, name: str, ctx: _Ctx) -> bool:
        """A name the traced function does not own: a global, a closure or a parameter."""
        if ctx.fn is None:
            return False
        if ctx.declared.get(name):
            return True
        return name not in ctx.locals or name in ctx.params

    def _variable_update(self, target, stmt, ctx: _Ctx) -> bool:
        """JX307: an NNX Variable (or a Module's) updated inside jax.jit. jax.jit passes
        Variables in as copies, so the update never reaches the caller's Variable, and
        nothing raises. True when `target` belongs to such state (no other rule applies)."""
        root = target
        while type(root) in (ast.Attribute, ast.Subscript):
            root = root.value
        if type(root) is not ast.Name:
            return False
        kind = self._lookup(root.id, ctx).kind
        if kind not in ("nnxvar", "nnxmodule", "ref"):
            return False
        fn = ctx.fn
        if kind != "ref" and fn is not None and fn.transform in ("jit", "pmap") and \
                root.id in ctx.params:
            what = "NNX Variable" if kind == "nnxvar" else "a Variable of NNX Module"
            self.add("JX307", stmt, f"`{self.seg(stmt)}` updates {what} `{root.id}` inside "
                     f"jax.jit: jax.jit passes it in as a copy, so the update is lost when "
                     f"{fn.name} returns (no error is raised).",
                     "use nnx.jit instead of jax.jit (it propagates Variable updates), or " +
                     (f"pass the value in and return the new one: {root.id}[...] = "
                      f"{fn.name}({root.id}[...]) with {fn.name} returning it"
                      if kind == "nnxvar" else
                      f"split the module (graphdef, state = nnx.split({root.id})), return the "
                      f"new state from {fn.name} and apply it with nnx.update({root.id}, "
                      "state)"))
        return True

    def _outer_write(self, target, ctx: _Ctx, stmt) -> None:
        if self._variable_update(target, stmt, ctx):
            return
        if not ctx.staged or ctx.fn is None:
            return
        base = target.value
        while type(base) in (ast.Attribute, ast.Subscript):
            base = base.value
        if type(base) is not ast.Name or not self._is_outer(base.id, ctx) or \
                base.id.endswith("ref") or _has_ellipsis(target):
            return        # Pallas refs (`o_ref[...] = x`) are written on purpose
        if base.id in ctx.params and base.id not in ctx.static_params \
                and type(target) is ast.Subscript:
            return        # params are fresh pytrees under jit: a local update
        val = getattr(stmt, "value", None)
        leak = val is not None and _traced(self.ev(val, ctx)) if val is not None else False
        self._purity_write(stmt, ctx, self.seg(target), leak)

    def _outer_mutation(self, node, meth: str, args, ctx: _Ctx) -> None:
        """JX302 for `outer.append(x)` and other mutating methods of an outer object."""
        if meth not in _OUTER_MUTATORS or not ctx.staged or ctx.fn is None or \
                type(node.func.value) is not ast.Name:
            return
        name = node.func.value.id
        if self._lookup(name, ctx).kind not in ("list", "dict", "set"):
            return        # not known to be a container: `optimizer.update(...)` is pure
        if self._is_outer(name, ctx) and name not in ctx.params:
            leak = any(_traced(a) for a in args)
            self._purity_write(node, ctx, name, leak)

    def _purity_write(self, node, ctx: _Ctx, what: str, leak: bool) -> None:
        fname = ctx.fn.name
        if leak:
            msg = (f"`{self.seg(node)}` stores a tracer outside {fname}: it runs once while "
                   "tracing, and using the stored value later raises UnexpectedTracerError.")
        else:
            msg = (f"`{self.seg(node)}` changes state outside {fname}: under jit it runs "
                   "once, while tracing, not on every call.")
        self.add("JX302", node, msg, f"return the value from {fname} instead and update "
                 "the state outside (state = f(state, x)).", leak=leak)

    def _global_write(self, target, ctx: _Ctx, stmt, val: AV) -> None:
        """JX303: a warning when the value written is a tracer (it leaks); an info when
        it is not (a trace counter: it counts traces, not calls)."""
        kind = ctx.declared.get(target.id, "global")
        leak = _tracer(val)
        self.add("JX303", stmt, f"`{self.seg(stmt)}` writes the {kind} `{target.id}` inside "
                 f"traced {ctx.fn.name}: it runs once while tracing" +
                 (" and stores a tracer." if leak else ", not on every call."),
                 f"return the new value of {target.id} from {ctx.fn.name} and assign it "
                 f"outside: {target.id} = {ctx.fn.name}(...)",
                 severity="warning" if leak else "info")

    def _print(self, node, args, ctx: _Ctx) -> None:
        fmt, vals, ok = [], [], True
        for a in node.args:
            if type(a) is ast.Constant and isinstance(a.value, str):
                fmt.append(a.value.replace("{", "{{").replace("}", "}}"))
            elif type(a) is ast.JoinedStr:
                part = []
                for v in a.values:
                    if type(v) is ast.Constant:
                        part.append(str(v.value).replace("{", "{{").replace("}", "}}"))
                    else:
                        conv = {115: "!s", 114: "!r", 97: "!a"}.get(v.conversion, "")
                        spec = ""
                        if v.format_spec is not None:
                            if all(type(s) is ast.Constant for s in v.format_spec.values):
                                spec = ":" + "".join(str(s.value) for s in
                                                     v.format_spec.values)
                            else:
                                ok = False
                        part.append("{" + conv + spec + "}")
                        vals.append(self.seg(v.value))
                fmt.append("".join(part))
            elif type(a) is ast.Starred:
                ok = False
            else:
                fmt.append("{}")
                vals.append(self.seg(a))
        sep = " "
        for k in node.keywords:
            if k.arg == "sep" and type(k.value) is ast.Constant:
                sep = str(k.value.value)
            else:
                ok = False if k.arg not in ("flush", "file") else ok
        traced = any(_traced(a) for a in args)
        for a in node.args:
            if type(a) is ast.JoinedStr:
                traced = traced or any(type(v) is ast.FormattedValue and
                                       _traced(self.ev(v.value, ctx)) for v in a.values)
        if not traced and not all(type(a) is ast.Constant for a in node.args):
            return      # print(x.shape), print(jax.typeof(x).sharding): static, and right
        new = None
        if ok:
            text = sep.join(fmt)
            new = f"{self.jaxn}.debug.print({text!r}" + "".join(f", {v}" for v in vals) + ")"
        fname = ctx.fn.name
        if traced:
            msg = (f"print() inside traced {fname} runs once, while tracing, and shows "
                   "tracers (Traced<...>), not values.")
        else:
            msg = (f"print() inside traced {fname} runs once, while tracing, not on every "
                   "call.")
        self.add("JX301", node, msg, f"use {self.jaxn}.debug.print to print values on every "
                 "call" + (f": {new}" if new else ""), rewrite=self.replace(node, new)
                 if new else None, severity="warning" if traced else "info")

    def _randomness(self, node, q: str, ctx: _Ctx) -> None:
        name = q.rsplit(".", 1)[-1]
        a = [self.seg(x) for x in node.args]
        jr = f"{self.jaxn}.random"
        new = None
        if name == "rand":
            new = f"{jr}.uniform(key, ({', '.join(a)}{',' if len(a) == 1 else ''}))"
        elif name == "randn":
            new = f"{jr}.normal(key, ({', '.join(a)}{',' if len(a) == 1 else ''}))"
        elif name in ("normal", "uniform") and not a:
            new = f"{jr}.{name}(key)"
        elif name == "random" and not a:
            new = f"{jr}.uniform(key)"
        where = "NumPy" if q.startswith("numpy") else "Python"
        self.add("JX306", node, f"{where} randomness `{self.seg(node)}` runs once while "
                 f"{ctx.fn.name} is traced: the 'random' value is baked into the compiled "
                 "function and repeats on every call.",
                 f"pass a key and use jax.random: {new}" if new else
                 "pass a jax.random key as an argument and use jax.random",
                 rewrite=self.replace(node, new) if new else None)

    def _stale_captures(self, tree) -> None:
        """A jitted function reads a global that the code later rebinds (after a call)."""
        fns = [fn for fn in self.funcs.values()      # compiled once, cached: can go stale
               if fn.transform in ("jit", "pmap") and fn.global_reads]
        for fn in fns:
            self.state.captures[fn.name] = (fn, dict(fn.global_reads), self.cell)
        for fname, (fn, reads, cell) in list(self.state.captures.items()):
            for g, read_line in reads.items():
                for line in self.module_assigns.get(g, ()):
                    if cell == self.cell and line <= fn.line:
                        continue
                    if not self._called_before(fn, line, cell) or self._same_value(g, line):
                        continue
                    node = _line_node(tree, line)
                    if node is None:
                        continue
                    where = f"line {read_line}" if cell == self.cell else \
                        (f"{cell}, line {read_line}" if cell else f"line {read_line}")
                    self.add("JX304", node, f"`{g}` changes here, but jitted {fn.name} read "
                             f"it as a global ({where}) and was already compiled with the "
                             "old value; it keeps using that value.",
                             f"pass {g} as an argument: def {fn.name}(..., {g}) and call "
                             f"{fn.name}(..., {g})")

    def _same_value(self, g: str, line: int) -> bool:
        """`BLOCK = 256` again where BLOCK already held 256: nothing goes stale."""
        new = self._consts.get((g, line), self)
        if new is self:
            return False
        before = [ln for ln in self.module_assigns.get(g, ()) if ln < line]
        if before:
            old = self._consts.get((g, before[-1]), self)
        elif self.ns is not None and g in self.ns:
            old = self.ns[g]
        else:
            old = self.state.consts.get(g, self)
        return type(old) is type(new) and old == new

    def _called_before(self, fn: FuncInfo, line: int, cell: str) -> bool:
        names = {fn.name} | ({fn.wrapper_name} if fn.wrapper_name else set())
        if cell != self.cell:
            if any(n in self.state.called for n in names):
                return True
            if self.ns is not None:
                for n in names:
                    if _cache_size(self.ns.get(n)) > 0:
                        return True
            return False
        for n in names:
            for call in self.calls_by_name.get(n, ()):
                if fn.line < call.lineno < line:
                    return True
                if call.lineno > line and self._same_loop(call.lineno, line):
                    return True     # called and rebound in the same loop
        return False

    def _same_loop(self, a: int, b: int) -> bool:
        return any(lo <= a <= hi and lo <= b <= hi for lo, hi in self._loops)


def _has_ellipsis(target) -> bool:
    """`ref[...] = x`: a Pallas-style write through a ref, not a stray side effect."""
    if type(target) is not ast.Subscript:
        return False
    sl = target.slice
    elts = sl.elts if type(sl) is ast.Tuple else [sl]
    return any(type(e) is ast.Constant and e.value is Ellipsis for e in elts)


def _line_node(tree, line: int):
    """The statement starting at `line` (to place a JX304 finding)."""
    for node in tree.body:
        if node.lineno <= line <= node.end_lineno:
            if node.lineno == line:
                return node
            for n in ast.walk(node):
                if isinstance(n, ast.stmt) and n.lineno == line:
                    return n
            return node
    return None


def _cache_size(f) -> int:
    """How many times an earlier cell's jitted `f` compiled (0: never called yet)."""
    try:
        from ..._compat import jit_cache_size
    except Exception:  # pragma: no cover - compat helper missing
        return 0
    return jit_cache_size(f)
