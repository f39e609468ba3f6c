"""The abstract interpreter: statements and expressions in order, one scope at a time.

The module body runs first (so globals are known), then each function body, with the
parameters a transform traces bound to traced array values; helpers called from traced
code are scheduled with the arguments they receive. Expressions evaluate to `AV`s, and
the rule mixins (`*_rules.py`) are called where a sharp bit can occur. `Interpreter` is
not used alone: `static.Analyzer` composes it with the call evaluation, the pre-pass and
the rules.

Here: the state of one analysis, its entry point, name resolution and findings; the
walk itself is in `statements.py`, `functions.py` and `expressions.py`.
"""
from __future__ import annotations

import ast

from .expressions import Expressions
from .functions import Functions
from .model import RULES, Finding, char_col, sort_key
from .notebook import DEFAULT_ALIASES, CheckState, _canonical_object
from .scopes import _Ctx
from .statements import Statements
from .values import AV, FuncInfo


class Interpreter(Statements, Functions, Expressions):
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
