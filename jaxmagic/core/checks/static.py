"""Static checks: AST rules over a cell (or file) before it runs.

One pre-pass collects imports, function definitions and the transforms applied to them
(`@jax.jit`, `jax.jit(f, ...)`, `lax.fori_loop(..., body, ...)`, `jax.vmap`, ...). One
analysis pass then walks the code in order with a small abstract value per name (JAX
array or not, traced or not, known shape and dtype) and applies the rules.

Precision comes first: a rule fires only when the value is known to be a JAX array (or
a tracer); unknown values stay silent. In a notebook the checker is given the user's
namespace, so arrays and jitted functions made by earlier cells are known too.
"""
from __future__ import annotations

import ast
import builtins
import math
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from .model import RULES, Finding, char_col, sort_key

# ---------------------------------------------------------------------------------------
# names

DEFAULT_ALIASES = {
    "jnp": "jax.numpy", "np": "numpy", "onp": "numpy", "jax": "jax", "lax": "jax.lax",
    "jit": "jax.jit", "vmap": "jax.vmap", "pmap": "jax.pmap", "grad": "jax.grad",
    "partial": "functools.partial", "functools": "functools", "math": "math",
    "checkify": "jax.experimental.checkify", "jr": "jax.random", "jrandom": "jax.random",
    "shard_map": "jax.shard_map",
}

_JAX_PREFIXES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "jax.random.",
                 "jax.image.")
# jax.numpy functions that answer questions about shapes/dtypes: results stay static
_JNP_STATIC = {"shape", "ndim", "size", "result_type", "dtype", "iinfo", "finfo",
               "issubdtype", "isdtype", "promote_types", "can_cast", "isscalar",
               "iscomplexobj", "isrealobj", "save", "load"}
_NP_STATIC_OK = {"shape", "ndim", "size", "result_type", "dtype", "iinfo", "finfo",
                 "issubdtype", "isscalar", "promote_types", "can_cast", "float32",
                 "float64", "int32", "int64", "bool_", "uint8", "int8", "float16",
                 "complex64", "complex128", "newaxis", "s_", "index_exp", "ndindex",
                 "broadcast_shapes"}
_STATIC_ATTRS = {"shape", "ndim", "dtype", "size", "sharding", "weak_type", "itemsize",
                 "nbytes", "aval", "device", "devices"}
_DTYPE64 = {"float64": "float32", "int64": "int32", "uint64": "uint32",
            "complex128": "complex64", "double": "float32", "f8": "f4", "i8": "i4",
            "c16": "c8", "u8": "u4", "longlong": "int32", "cdouble": "complex64"}
_DTYPE_CTOR_POS = {"array": 1, "asarray": 1, "zeros": 1, "ones": 1, "empty": 1, "full": 2,
                   "arange": 3, "eye": 3, "identity": 1}

# transforms: canonical name -> (kind, function-argument positions)
_TRANSFORMS = {
    "jax.jit": ("jit", (0,)), "jax.pmap": ("pmap", (0,)), "jax.vmap": ("vmap", (0,)),
    "jax.lax.fori_loop": ("loop", (2,)), "jax.lax.while_loop": ("loop", (0, 1)),
    "jax.lax.scan": ("loop", (0,)), "jax.lax.cond": ("loop", (1, 2)),
    "jax.lax.switch": ("loop", (1,)), "jax.lax.map": ("loop", (0,)),
    "jax.lax.associative_scan": ("loop", (0,)),
    "jax.experimental.checkify.checkify": ("jit", (0,)), "jax.make_jaxpr": ("jit", (0,)),
    "jax.eval_shape": ("jit", (0,)), "jax.shard_map": ("jit", (0,)),
    "jax.experimental.shard_map.shard_map": ("jit", (0,)),
    "jax.xla_computation": ("jit", (0,)),
}
# wrappers that pass their function through unchanged for our purposes
_PASSTHROUGH = {"jax.grad", "jax.value_and_grad", "jax.jacfwd", "jax.jacrev", "jax.hessian",
                "jax.checkpoint", "jax.remat", "jax.named_call", "jax.custom_jvp",
                "jax.custom_vjp", "functools.wraps", "jax.vmap"}

_SHAPE_ARGS = {  # jnp/lax callables whose arguments at these positions must be static ints
    "jax.numpy.zeros": (0,), "jax.numpy.ones": (0,), "jax.numpy.empty": (0,),
    "jax.numpy.full": (0,), "jax.numpy.arange": (0, 1, 2), "jax.numpy.eye": (0, 1),
    "jax.numpy.identity": (0,), "jax.numpy.tri": (0, 1), "jax.numpy.linspace": (2,),
    "jax.numpy.reshape": (1,), "jax.numpy.broadcast_to": (1,), "jax.numpy.tile": (1,),
    "jax.numpy.resize": (1,), "jax.numpy.split": (1,), "jax.numpy.zeros_like": (),
    "jax.lax.full": (0,), "jax.lax.broadcast": (1,), "jax.lax.iota": (1,),
    "jax.lax.dynamic_slice": (2,), "jax.lax.dynamic_slice_in_dim": (2,),
    "jax.random.normal": (1,), "jax.random.uniform": (1,), "jax.random.randint": (1,),
    "jax.random.bernoulli": (2,), "jax.random.choice": (2,), "jax.random.gumbel": (1,),
    "jax.random.exponential": (1,), "jax.random.laplace": (1,),
    "jax.random.truncated_normal": (3,), "jax.random.split": (1,),
}
_SHAPE_KWARGS = {"shape", "newshape", "num", "size", "reps", "slice_sizes", "N", "M"}
_SIZED = {  # value-dependent output sizes: need size=
    "nonzero": 0, "argwhere": 0, "flatnonzero": 0, "unique": 0, "unique_values": 0,
    "unique_counts": 0, "unique_inverse": 0, "unique_all": 0, "compress": 1, "extract": 1,
    "setdiff1d": 0, "union1d": 0, "intersect1d": 0, "setxor1d": 0,
}
_BOOL_FUNCS = {"isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_not",
               "logical_xor", "isclose", "equal", "not_equal", "less", "less_equal",
               "greater", "greater_equal", "isneginf", "isposinf", "signbit", "isin"}
_LAX_BINARY = {  # lax name -> jnp name
    "add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "rem": "fmod",
    "pow": "power", "max": "maximum", "min": "minimum", "atan2": "arctan2",
    "nextafter": "nextafter", "eq": "equal", "ne": "not_equal", "lt": "less",
    "le": "less_equal", "gt": "greater", "ge": "greater_equal", "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor", "complex": "complex",
    "dot": "dot", "shift_left": "left_shift", "shift_right_arithmetic": "right_shift",
}
_AT_OPS = {"set", "add", "subtract", "multiply", "mul", "divide", "power", "min", "max",
           "apply", "get"}
_AUG_AT = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide",
           ast.Pow: "power"}
_BIN_AT = {ast.Add: "add", ast.Mult: "multiply", ast.Div: "divide", ast.Pow: "power",
           ast.Sub: "subtract"}
_UFUNC_AT = {"add": "add", "subtract": "subtract", "multiply": "multiply",
             "divide": "divide", "true_divide": "divide", "power": "power",
             "minimum": "min", "maximum": "max"}
_OUTER_MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault", "pop",
                   "appendleft", "remove", "clear", "popitem", "discard", "put"}
_DISCARDED_METHODS = {"sort", "astype", "reshape", "clip", "round", "transpose", "squeeze",
                      "flatten", "ravel", "cumsum", "argsort"}
_BUILTINS = frozenset(dir(builtins))
_ARRAY_ATTRS = {
    "T", "mT", "real", "imag", "at", "flat", "all", "any", "argmax", "argmin",
    "argpartition", "argsort", "astype", "choose", "clip", "compress", "conj", "conjugate",
    "copy", "cumprod", "cumsum", "diagonal", "dot", "flatten", "item", "max", "mean", "min",
    "nonzero", "prod", "ptp", "ravel", "repeat", "reshape", "round", "searchsorted", "sort",
    "squeeze", "std", "sum", "swapaxes", "take", "tolist", "trace", "transpose", "var",
    "view", "block_until_ready", "broadcast_to", "__float__", "__int__", "__index__",
    "nanmean", "nansum", "cumulative_sum", "to_device", "copy_to_host_async"}
_LAX_STATIC = {"axis_size", "broadcast_shapes", "dtype", "iinfo", "finfo"}
_FLOAT_FUNCS = {"sin", "cos", "tan", "exp", "log", "log1p", "expm1", "tanh", "sqrt",
                "mean", "std", "var", "sigmoid", "softmax", "log_softmax", "arctan",
                "arcsin", "arccos", "sinh", "cosh", "exp2", "log2", "log10", "relu",
                "gelu", "silu", "erf", "cbrt", "rsqrt"}
_SUBMODULES = {"numpy", "lax", "random", "linalg", "fft", "nn", "scipy", "experimental",
               "tree_util", "image", "ops", "special", "stats", "signal", "sparse",
               "config", "debug", "tree", "dtypes", "errors", "sharding", "extend",
               "checkify", "shard_map", "initializers", "ndimage", "testing", "ma"}
_X64_RE = re.compile(r"jax_enable_x64|JAX_ENABLE_X64|enable_x64")
_PY_CELL_MAGICS = {"jaxpr", "jit_compare", "shardviz", "time", "timeit", "capture",
                   "prun", "jaxcheck", "debug"}


def _qualify_magic_line(line: str) -> str:
    return line


def cell_source(raw: str) -> tuple[str, int] | None:
    """A notebook cell as Python for the checker: (source, line offset), or None.

    IPython syntax is masked line for line (so line numbers and columns stay the cell's):
    `%magic ...` and `!cmd` become `pass`, `x = %magic` becomes `x = None`. A cell magic
    whose body is Python (`%%jaxpr`, `%%time`, ...) is checked without its first line;
    any other cell magic (`%%bash`, `%%html`) is not Python and is skipped.
    """
    lines = raw.split("\n")
    offset = 0
    first = lines[0].lstrip() if lines else ""
    if first.startswith("%%"):
        name = first[2:].split(None, 1)[0] if first[2:].strip() else ""
        if name not in _PY_CELL_MAGICS:
            return None
        lines = lines[1:]
        offset = 1
    out = []
    for ln in lines:
        s = ln.lstrip()
        if s[:1] in ("%", "!") and not s.startswith("%="):
            out.append(ln[: len(ln) - len(s)] + "pass" + " " * max(0, len(s) - 4))
        elif s.endswith("?") and not s.startswith("#") and "?" not in s[:-2]:
            out.append(ln[: len(ln) - len(s)] + "pass")
        else:
            m = re.match(r"^(\s*[\w.,\s\[\]()]+=\s*)[%!]", ln)
            out.append(m.group(1) + "None" if m and "==" not in m.group(1) else ln)
    return "\n".join(out), offset


# ---------------------------------------------------------------------------------------
# abstract values


class AV:
    """What is known about a value: kind, traced or not, shape, dtype."""

    __slots__ = ("kind", "traced", "boolean", "shape", "dtype", "shape_src", "elts", "func",
                 "param", "items")

    def __init__(self, kind=None, traced=False, boolean=False, shape=None, dtype=None,
                 shape_src=None, elts=None, func=None, param=None, items=None):
        self.kind = kind            # "jax", "np", "int", "float", "bool", "str", "complex",
        # "none", "list", "tuple", "dict", "set", "func", "module", "dtype", "static", None
        self.traced = traced        # a tracer (inside a transform)
        self.boolean = boolean      # a boolean array
        self.shape = shape          # known constant shape
        self.dtype = dtype          # "int32", "float32", "bool", "int*" / "float*" (weak)
        self.shape_src = shape_src  # traced only because jnp was used on static shapes
        self.elts = elts            # tuple/list literal elements
        self.func = func            # FuncInfo for functions
        self.param = param          # the traced parameter this value is
        self.items = items          # dict literal: constant key -> value

    def __repr__(self):  # pragma: no cover - debugging aid
        return (f"AV({self.kind}, traced={self.traced}, bool={self.boolean}, "
                f"shape={self.shape}, dtype={self.dtype})")


UNKNOWN = AV()          # shared: never mutate these
STATIC = AV("static")
_CONST_AV = {int: AV("int", dtype="int*"), float: AV("float", dtype="float*"),
             bool: AV("bool", dtype="bool"), complex: AV("complex", dtype="complex*"),
             str: AV("str"), type(None): AV("none")}
_SCALAR_KIND = {bool: "bool", int: "int", float: "float", complex: "complex", str: "str",
                type(None): "none"}
_STATIC_KINDS = {"int", "float", "bool", "str", "complex", "none", "static", "dtype",
                 "module", "np"}


def _traced(av: AV) -> bool:
    if av.traced:
        return True
    if av.elts:
        return any(_traced(e) for e in av.elts)
    return False


def _truth_traced(av: AV) -> bool:
    """bool(value) needs a concrete array value (containers answer by their length)."""
    if av.kind in ("tuple", "list", "dict", "set", "str", "range"):
        return False
    return _traced(av)


def _traced_elt(av: AV) -> AV | None:
    if av.traced:
        return av
    for e in av.elts or ():
        t = _traced_elt(e)
        if t is not None:
            return t
    return None


def _jax(traced=False, **kw) -> AV:
    return AV("jax", traced=traced, **kw)


def _dtype_kind(d: str | None) -> str | None:
    if not d:
        return None
    d = d.rstrip("*?")
    if d == "bool":
        return "bool"
    for k in ("uint", "int", "float", "complex", "bfloat"):
        if d.startswith(k):
            return "float" if k == "bfloat" else k
    return None


# ---------------------------------------------------------------------------------------
# functions and the transforms applied to them


@dataclass(eq=False)
class FuncInfo:
    node: ast.AST                      # FunctionDef / AsyncFunctionDef / Lambda
    name: str
    params: list[str]
    defaults: set[str]                 # params with a default value
    class_name: str | None = None
    transform: str | None = None       # "jit", "pmap", "vmap", "loop"
    static: set[str] = field(default_factory=set)
    statics_unknown: bool = False
    jit_node: ast.AST | None = None    # the decorator / jax.jit(...) call that jits it
    jit_is_decorator: bool = False
    wrapper_name: str | None = None    # g in `g = jax.jit(f)`
    global_reads: dict = field(default_factory=dict)   # name -> first line read
    parent: Any = None                 # enclosing _Ctx for nested functions
    cell: str = ""                     # where it was defined (for cross-cell messages)
    src: str | None = None             # the source it was defined in

    @property
    def traced(self) -> bool:
        return self.transform is not None

    @property
    def staged(self) -> bool:
        return self.transform in ("jit", "pmap", "loop")

    @property
    def line(self) -> int:
        return getattr(self.node, "lineno", 0)


def _params(node) -> tuple[list[str], set[str]]:
    a = node.args
    pos = [p.arg for p in a.posonlyargs + a.args]
    kw = [p.arg for p in a.kwonlyargs]
    defaults = set(pos[len(pos) - len(a.defaults):]) if a.defaults else set()
    defaults |= {p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None}
    names = pos + kw
    if a.vararg:
        names.append("*" + a.vararg.arg)
    return names, defaults


def _const_ints(node) -> list[int] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) \
            and not isinstance(node.value, bool):
        return [node.value]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
            and isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, int):
        return [-node.operand.value]
    if isinstance(node, (ast.Tuple, ast.List)):
        out = []
        for e in node.elts:
            v = _const_ints(e)
            if v is None or len(v) != 1:
                return None
            out += v
        return out
    return None


def _const_strs(node) -> list[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List)):
        out = []
        for e in node.elts:
            if not (isinstance(e, ast.Constant) and isinstance(e.value, str)):
                return None
            out.append(e.value)
        return out
    return None


def _num_const(node) -> float | None:
    if type(node) is ast.Constant and isinstance(node.value, (int, float)) and \
            not isinstance(node.value, bool):
        return node.value
    if type(node) is ast.UnaryOp and type(node.op) is ast.USub:
        v = _num_const(node.operand)
        return -v if v is not None else None
    return None


def _int_const(node) -> int | None:
    v = _const_ints(node)
    return v[0] if v is not None and len(v) == 1 and not isinstance(node, (ast.Tuple,
                                                                          ast.List)) else None


# ---------------------------------------------------------------------------------------
# the analysis


class _Ctx:
    """One scope being analysed: the module, or one function body."""

    __slots__ = ("env", "fn", "traced", "staged", "params", "locals", "declared", "parent",
                 "static_params")

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


_FIELDS: dict[type, tuple[str, ...]] = {}


def _scan(tree: ast.Module):
    """One pass over the tree: calls, function defs, classes, imports, and the names each
    function binds (its locals). Expression contexts (Load/Store) are not visited."""
    calls: list = []
    defs: list = []
    classes: list = []
    imports: list = []
    bound: dict = {}
    stack: list = [(tree, None)]
    pop, push = stack.pop, stack.append
    Name, Const, Call = ast.Name, ast.Constant, ast.Call
    FDef, AFDef, Lam, Cls = ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef
    Load, AST = ast.Load, ast.AST
    while stack:
        node, owner = pop()
        t = type(node)
        if t is Name:
            if owner is not None and type(node.ctx) is not Load:
                bound[owner].add(node.id)
            continue
        if t is Const:
            continue
        if t is Call:
            calls.append(node)
        elif t is FDef or t is AFDef or t is Lam:
            bound[node] = set()
            a = node.args
            for d in a.defaults:
                push((d, owner))
            for d in a.kw_defaults:
                if d is not None:
                    push((d, owner))
            if t is Lam:
                push((node.body, node))
                continue
            defs.append(node)
            if owner is not None:
                bound[owner].add(node.name)
            for d in node.decorator_list:
                push((d, owner))
            for st in node.body:
                push((st, node))
            continue
        elif t is Cls:
            classes.append(node)
            if owner is not None:
                bound[owner].add(node.name)
            for d in node.decorator_list + node.bases:
                push((d, owner))
            for st in node.body:
                push((st, None))
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
                        push((x, owner))
            elif v is not None:
                tv = type(v)
                if tv is Name:
                    if owner is not None and type(v.ctx) is not Load:
                        bound[owner].add(v.id)
                elif tv is not Const and isinstance(v, AST):
                    push((v, owner))
    return calls, defs, classes, imports, bound


def _bound_names(body: list[ast.stmt]) -> set[str]:
    """Names assigned anywhere in a function body (its locals), not in nested defs."""
    out: set[str] = set()
    stack = list(body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
            continue
        if isinstance(n, ast.Lambda):
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out.add((a.asname or a.name).split(".")[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        stack.extend(ast.iter_child_nodes(n))
    return out


class Analyzer:
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
        self.defs_by_name: dict[str, list[FuncInfo]] = {}
        self.calls_by_name: dict[str, list[ast.Call]] = {}
        self.x64_base = bool(x64) if x64 is not None else self.state.x64
        self.x64_toggles: list[tuple[int, bool]] = []    # config.update lines in order
        self._line = 0
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
        self._arrays: dict[int, set] = {}

    # ---- entry ---------------------------------------------------------------------

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

    # ---- pre-pass: imports, defs, transforms ------------------------------------------

    def _prepass(self, tree: ast.Module) -> None:
        calls, defs, classes, imports, bound = _scan(tree)
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
            for n in c.body:
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self._class_of[n] = c.name
        self._bound = bound
        defs.sort(key=lambda n: (n.lineno, n.col_offset))
        for node in defs:
            params, defaults = _params(node)
            fn = FuncInfo(node, node.name, params, defaults,
                          class_name=self._class_of.get(node), cell=self.cell, src=self.src)
            self.funcs[node] = fn
            self.defs_by_name.setdefault(node.name, []).append(fn)
            for dec in node.decorator_list:
                self._apply_decorator(fn, dec)
        for call in calls:
            f = call.func
            if isinstance(f, ast.Name):
                self.calls_by_name.setdefault(f.id, []).append(call)
            q = self.resolve(f)
            if q is None:
                if isinstance(f, ast.Call):       # jax.jit(f)(...) handled at the call
                    pass
                continue
            if q in _TRANSFORMS:
                kind, positions = _TRANSFORMS[q]
                for pos in positions:
                    if pos < len(call.args):
                        self._mark_transformed(call.args[pos], kind, call, q)
                if q == "jax.lax.cond" and len(call.args) > 3:
                    pass
            elif q == "functools.partial" and call.args:
                inner = self.resolve(call.args[0])
                if inner in _TRANSFORMS and len(call.args) > 1:
                    kind, positions = _TRANSFORMS[inner]
                    for pos in positions:
                        if pos + 1 < len(call.args):
                            self._mark_transformed(call.args[pos + 1], kind, call, inner)
            elif q.endswith("config.update") and len(call.args) >= 2 and \
                    type(call.args[0]) is ast.Constant and \
                    call.args[0].value == "jax_enable_x64" and \
                    type(call.args[1]) is ast.Constant:
                self.x64_toggles.append((call.lineno, bool(call.args[1].value)))
        if not self.x64_toggles:
            for m in _X64_RE.finditer(self.src):
                line = self.src.count("\n", 0, m.start()) + 1
                text = self.lines[line - 1].replace(" ", "")
                if "True" in text or "=\"1\"" in text or "='1'" in text or \
                        "enable_x64()" in text:
                    self.x64_toggles.append((line, True))
        self.x64_toggles.sort()

    @property
    def x64(self) -> bool:
        """jax_enable_x64 at the statement being analysed."""
        v = self.x64_base
        for line, val in self.x64_toggles:
            if line > self._line:
                break
            v = val
        return v

    _class_of: dict = {}

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
        strongest = {"jit": 3, "pmap": 3, "loop": 2, "vmap": 1, None: 0}
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
            kws = call.keywords if q in ("jax.jit", "jax.pmap") else []
            fns = self.defs_by_name.get(arg.id, ())
            for fn in fns:
                self._set_transform(fn, kind, q, kws, call)
                if bound[0] or bound[1]:
                    positional = [p for p in fn.params if not p.startswith("*")]
                    fn.static.update(positional[:bound[0]])
                    fn.static.update(bound[1])
            if not fns:      # defined in an earlier cell
                v = self.state.env.get(arg.id)
                fn = v.func if v is not None and v.kind == "func" else None
                if fn is not None and fn.src is not None and fn.src != self.src:
                    self._foreign.append((fn, kind, q, kws))
            return
        if isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) \
                and arg.value.id == "self":
            return   # jax.jit(self.method): a bound method, self is not an argument

    # ---- names -------------------------------------------------------------------------

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
                return q
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
        for k, v in self.aliases.items():
            if v == canonical:
                return k
        if self.ns is not None:
            for k in (default,):
                if self._ns_name(k) == canonical:
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

    # ---- findings ----------------------------------------------------------------------

    def seg(self, node) -> str:
        l0, l1 = node.lineno - 1, node.end_lineno - 1
        if l0 == l1:
            line = self.lines[l0]
            if line.isascii():
                return line[node.col_offset:node.end_col_offset]
            b = line.encode()
            return b[node.col_offset:node.end_col_offset].decode(errors="replace")
        return ast.get_source_segment(self.src, node) or ast.unparse(node)

    def replace(self, node, new: str, line_node=None) -> str | None:
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

    # ---- statements --------------------------------------------------------------------

    def _body(self, stmts, ctx: _Ctx, top=False) -> None:
        for s in stmts:
            try:
                self._stmt(s, ctx, top)
            except RecursionError:   # pragma: no cover - pathological nesting
                pass

    def _stmt(self, s, ctx: _Ctx, top: bool) -> None:
        t = type(s)
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
            if s.value is not None:
                self.ev(s.value, ctx)
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
            ctx.env[s.name] = AV("static")
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

    def _expr_stmt(self, s: ast.Expr, ctx: _Ctx) -> None:
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

    def _if(self, s: ast.If, ctx: _Ctx, top: bool) -> None:
        test = self.ev(s.test, ctx)
        if _truth_traced(test):
            self._control_flow(s, s.test, ctx, "if")
        self._body(s.body, ctx, top)
        self._body(s.orelse, ctx, top)

    # assignment ------------------------------------------------------------------------

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
            if ctx.declared.get(name) and ctx.staged:
                self._global_write(target, ctx, stmt)
            if isinstance(stmt, ast.Assign) and type(stmt.value) is ast.Call:
                self._maybe_jit_wrapper(name, stmt.value, ctx)
        elif t is ast.Tuple or t is ast.List:
            elts = val.elts if val.elts and len(val.elts) == len(target.elts) else None
            for i, e in enumerate(target.elts):
                if type(e) is ast.Starred:
                    self._bind_target(e.value, AV("list"), ctx, stmt, top)
                    continue
                sub = elts[i] if elts else (
                    _jax(traced=True) if val.traced else
                    (AV("jax") if val.kind == "jax" else UNKNOWN))
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
        fns = self.defs_by_name.get(tr.id)
        if fns:
            fns[-1].wrapper_name = name
            ctx.env[name] = AV("func", func=fns[-1])

    def _setitem(self, target: ast.Subscript, stmt, ctx: _Ctx) -> None:
        base = self.ev(target.value, ctx)
        idx = self.ev(target.slice, ctx)
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
            self.add("JX102", stmt, f"JAX arrays are immutable: `{self.seg(stmt)}` raises "
                     "TypeError (in-place update).",
                     f"use the functional update: {new}" if simple else
                     f"use {bt}.at[{it}].{op or 'set'}(...) and assign the result",
                     rewrite=self.replace(stmt, new) if simple else None)
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
        self.add("JX101", stmt, f"JAX arrays are immutable: `{self.seg(stmt)}` raises "
                 "TypeError (in-place update).",
                 f"use the functional update: {new}" if simple else
                 f"use {bt}.at[{it}].{op}(...) and assign the result",
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
                self._global_write(t, ctx, s)
            ctx.env[t.id] = merged
            ctx.locals.add(t.id)
            if top:
                self.module_assigns.setdefault(t.id, []).append(s.lineno)

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

    # purity ------------------------------------------------------------------------------

    def _is_outer(self, name: str, ctx: _Ctx) -> bool:
        """A name the traced function does not own: a global, a closure or a parameter."""
        if ctx.fn is None:
            return False
        if ctx.declared.get(name):
            return True
        return name not in ctx.locals or name in ctx.params

    def _outer_write(self, target, ctx: _Ctx, stmt) -> None:
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

    def _global_write(self, target, ctx: _Ctx, stmt) -> None:
        kind = ctx.declared.get(target.id, "global")
        self.add("JX303", stmt, f"`{self.seg(stmt)}` writes the {kind} `{target.id}` inside "
                 f"traced {ctx.fn.name}: it runs once while tracing and stores a tracer.",
                 f"return the new value of {target.id} from {ctx.fn.name} and assign it "
                 f"outside: {target.id} = {ctx.fn.name}(...)")

    # ---- functions ---------------------------------------------------------------------

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
            sub = Analyzer(fn.src, namespace=self.ns, x64=self.x64,
                           state=CheckState(env=dict(self.state.env),
                                            aliases=dict(self.aliases), commit=False),
                           cell=fn.cell)
            sub._class_of = {}
            sub._loops = []
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
                traced_params = frozenset(p for p in fn.params if p not in fn.static
                                          and (p not in fn.defaults or
                                               self._passed(fn, p)))
            else:
                traced_params = frozenset()
        if staged is None:
            staged = fn.staged
        key = (id(fn.node), traced_params, staged)
        if key in self.done:
            return
        self.done.add(key)
        if fn.src is not None and fn.src != self.src:       # from an earlier cell
            self._foreign.append((fn, None, traced_params, staged))
            return
        self.queue.append((fn, traced_params, staged, parent if parent is not None else
                           fn.parent))

    def _passed(self, fn: FuncInfo, p: str) -> bool:
        """A parameter with a default is traced only when a call passes it."""
        idx = fn.params.index(p)
        names = [fn.name] + ([fn.wrapper_name] if fn.wrapper_name else [])
        for n in names:
            for call in self.calls_by_name.get(n, ()):
                if len(call.args) > idx or any(k.arg == p for k in call.keywords):
                    return True
        return False      # lax loop bodies get their required arguments only

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
                    "tuple", "list", "dict") else _jax(traced=True, param=p)
            else:
                ctx.env[p] = UNKNOWN
        if type(node) is ast.Lambda:
            ctx.locals = set(ctx.params)
            self.ev(node.body, ctx)
            return
        ctx.locals = self._bound.get(node, set()) | ctx.params
        for s in node.body:
            if type(s) in (ast.Global, ast.Nonlocal):
                for n in s.names:
                    ctx.declared[n] = "global" if type(s) is ast.Global else "nonlocal"
        self._body(node.body, ctx)

    def _method_self(self, fn: FuncInfo) -> None:
        """@jax.jit on a method: `self` is traced as an array argument and fails."""
        if fn.class_name is None or fn.transform not in ("jit", "pmap") or \
                not fn.jit_is_decorator or not fn.params:
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

    # ---- expressions -------------------------------------------------------------------

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
                if _traced(c) and ctx.traced:
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
        if it.traced:
            return _jax(traced=True)
        if it.kind == "jax":
            return AV("jax")
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

    # subscripts ----------------------------------------------------------------------------

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
                     rewrite=rewrite, **self._static_detail(ctx, params, rewrite is None))
            return

    def _bool_mask(self, mask_node, node, ctx: _Ctx, stmt=None, at_op=None,
                   at_val=None) -> None:
        x = self.seg(node.value) if type(node) is ast.Subscript else self.seg(node)
        m = self.seg(mask_node)
        if stmt is not None:           # x[mask] = v
            v = self.seg(stmt.value)
            new = f"{x} = {self.jnp}.where({m}, {v}, {x})"
            self.add("JX201", node, f"`{self.seg(node)}` indexes with a traced boolean mask: "
                     "the result's size would depend on values (NonConcreteBooleanIndexError).",
                     f"select instead: {new}", rewrite=self.replace(stmt, new))
            return
        if at_op is not None:
            return
        new_expr = f"{self.jnp}.where({m}, {x}, 0)"
        self.add("JX201", node, f"`{self.seg(node)}` indexes with a traced boolean mask: the "
                 "result's size would depend on values (NonConcreteBooleanIndexError).",
                 f"keep the shape: {new_expr} (or pass where= to the reduction), or "
                 f"{self.jnp}.nonzero({m}, size=N) for at most N indices",
                 rewrite=self.replace(node, new_expr))

    def _oob(self, node, base: AV, idx_node, read: bool, at_op: str | None = None,
             call=None) -> None:
        shape = base.shape
        if not shape:
            return
        idx = idx_node.elts if type(idx_node) is ast.Tuple else [idx_node]
        axis = 0
        for e in idx:
            if type(e) is ast.Constant and e.value is None:
                continue
            if type(e) is ast.Constant and e.value is Ellipsis:
                return
            if axis >= len(shape):
                return
            i = _int_const(e)
            if i is not None and not (-shape[axis] <= i < shape[axis]):
                x = self.seg(node.value) if type(node) is ast.Subscript else None
                n = shape[axis]
                if read:
                    if x is None:
                        return
                    it = self.seg(idx_node)
                    clamped = max(0, min(i, n - 1)) if i >= 0 else 0
                    new = f"{x}.at[{it}].get(mode='fill')"
                    self.add("JX401", node, f"index {i} is out of bounds for axis {axis} of "
                             f"size {n}: JAX does not raise, it clamps to index {clamped} "
                             "and returns that element.",
                             f"use an index in range({n}); to get a fill value instead of a "
                             f"clamped one: {new}; to raise, run it under checkify "
                             "(%jaxpr --checkify)",
                             rewrite=self.replace(node, new))
                else:
                    self.add("JX402", call or node, f"index {i} is out of bounds for axis "
                             f"{axis} of size {n}: the .at[].{at_op}() update is silently "
                             "dropped.",
                             f"use an index in range({n}); to raise instead of dropping, run "
                             "it under checkify with index_checks (%jaxpr --checkify)")
                return
            axis += 1

    # calls ---------------------------------------------------------------------------------

    def _call(self, node: ast.Call, ctx: _Ctx) -> AV:
        func = node.func
        q = self.resolve(func) if type(func) in (ast.Name, ast.Attribute) else None
        if q is not None and type(func) is ast.Name and self._shadowed(func.id, ctx):
            q = None
        if q is None and type(func) is ast.Name and func.id in _BUILTINS and \
                self._lookup(func.id, ctx) is UNKNOWN:
            q = "builtins." + func.id
        args = [self.ev(a, ctx) for a in node.args]
        kwargs = {k.arg: self.ev(k.value, ctx) for k in node.keywords}
        if q is not None:
            return self._known_call(node, q, args, kwargs, ctx)
        # methods and user functions
        if type(func) is ast.Attribute:
            at = _at_parts(node)
            if at is not None:
                return self._at_call(node, at, args, ctx)
            recv = self.ev(func.value, ctx)
            return self._method(node, recv, func.attr, args, kwargs, ctx)
        fv = self.ev(func, ctx)
        if fv.kind == "func" and fv.func is not None:
            return self._user_call(node, fv.func, args, kwargs, ctx)
        if type(func) is ast.Call:     # jax.jit(f, ...)(args)
            inner = self.resolve(func.func)
            if inner in ("jax.jit", "jax.pmap") and func.args and \
                    type(func.args[0]) is ast.Name:
                fns = self.defs_by_name.get(func.args[0].id)
                if fns:
                    return self._user_call(node, fns[-1], args, kwargs, ctx)
            if inner in ("jax.jit", "jax.pmap", "jax.vmap", "jax.grad"):
                return _jax(traced=ctx.traced)
        return AV(None, traced=False)

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

    def _local_shadow(self, name: str, ctx: _Ctx) -> bool:
        c = ctx
        while c is not None and c is not self.module:
            if name in c.locals:
                return True
            c = c.parent
        return False

    def _known_call(self, node, q: str, args, kwargs, ctx: _Ctx) -> AV:
        any_traced = any(_traced(a) for a in args) or any(_traced(v) for v in
                                                          kwargs.values())
        if q.startswith("builtins."):
            return self._builtin(node, q[9:], args, kwargs, ctx)
        if q.startswith(_JAX_PREFIXES):
            return self._jax_call(node, q, args, kwargs, ctx, any_traced)
        if q.startswith("numpy."):
            return self._np_call(node, q, args, kwargs, ctx)
        if q.startswith("math.") and ctx.traced:
            t = next((a for a in args if _traced(a)), None)
            if t is not None:
                name = q[5:]
                args_text = ", ".join(self.seg(a) for a in node.args)
                new = self.replace(node, f"{self.jnp}.{name}({args_text})")
                self.add("JX207", node, f"`{self.seg(node)}` converts a traced value to a "
                         "Python float (ConcretizationTypeError).",
                         f"use the jax.numpy function: {self.jnp}.{name}(...)", rewrite=new)
            return AV("float")
        if q.startswith("random.") and ctx.staged and ctx.fn is not None:
            self._randomness(node, q, ctx)
            return AV("float")
        if q in ("jax.device_put", "jax.block_until_ready"):
            a = args[0] if args else UNKNOWN
            return _jax(traced=_traced(a), shape=a.shape, dtype=a.dtype)
        if q == "jax.device_get":
            return AV("np")
        if q in ("jax.jit", "jax.pmap", "jax.vmap", "jax.grad", "jax.value_and_grad",
                 "jax.checkpoint", "jax.remat"):
            fn = None
            if node.args and type(node.args[0]) is ast.Name:
                fns = self.defs_by_name.get(node.args[0].id)
                fn = fns[-1] if fns else None
            if q in ("jax.jit", "jax.pmap") and fn is not None:
                return AV("func", func=fn)
            return AV("jaxfunc")
        if q.startswith("jax.debug."):
            return AV("none")
        if q.startswith("jax.experimental.checkify."):
            return AV("static")
        if q.startswith(("jax.tree", "jax.tree_util")):
            return UNKNOWN
        return UNKNOWN          # other jax.* functions: not known to make arrays

    def _builtin(self, node, name: str, args, kwargs, ctx: _Ctx) -> AV:
        if name == "print":
            if ctx.staged and ctx.fn is not None:
                self._print(node, args, ctx)
            return AV("none")
        if name in ("int", "float", "complex") and args:
            if _traced(args[0]) and ctx.traced:
                a = self.seg(node.args[0])
                new = f"{a}.astype({name})" if type(node.args[0]) in (ast.Name,
                                                                     ast.Attribute) \
                    else f"({a}).astype({name})"
                self.add("JX207", node, f"`{self.seg(node)}` needs a concrete value, but "
                         f"{a} is traced (ConcretizationTypeError).",
                         f"keep it an array: {new}; or, if it is an argument the shapes "
                         "depend on, mark it static (static_argnames)",
                         rewrite=self.replace(node, new),
                         **self._static_detail(ctx, self._traced_params(node.args[0], ctx),
                                               False))
            return AV(name, dtype=f"{name}*")
        if name == "bool" and args:
            if _traced(args[0]) and ctx.traced:
                self._control_flow(node, node.args[0], ctx, "bool")
            return AV("bool")
        if name == "range":
            for a, n in zip(args, node.args):
                t = _traced_elt(a)
                if t is not None and ctx.traced:
                    self._int_use(n, t, ctx, "as a loop bound in range()", range_call=node)
                    break
            return AV("range")
        if name == "len":
            return AV("int", dtype="int*")
        if name in ("max", "min") and ctx.traced:
            if (len(args) >= 2 and any(_traced(a) for a in args)) or \
                    (len(args) == 1 and _traced(args[0]) and args[0].kind == "jax"):
                fn = "maximum" if name == "max" else "minimum"
                if len(args) == 2:
                    new = f"{self.jnp}.{fn}({self.seg(node.args[0])}, {self.seg(node.args[1])})"
                else:
                    new = f"{self.jnp}.{name}({', '.join(self.seg(a) for a in node.args)})"
                self.add("JX202", node, f"builtin {name}() compares traced values with Python "
                         "`<`, which needs a concrete bool (TracerBoolConversionError).",
                         f"use {new}", rewrite=self.replace(node, new))
                return _jax(traced=True)
            return AV("static")
        if name in ("isinstance", "hasattr", "callable", "type", "id", "getattr",
                    "issubclass", "repr", "str", "tuple", "list", "dict", "set", "sorted",
                    "enumerate", "zip", "sum", "abs", "round", "reversed", "map", "filter",
                    "iter", "next", "any", "all", "divmod", "pow", "frozenset", "hash"):
            if name in ("sum", "abs", "round", "pow", "divmod") and any(_traced(a) for a in
                                                                        args):
                return _jax(traced=True)
            if name in ("tuple", "list") and args:
                return AV(name, traced=_traced(args[0]), elts=args[0].elts)
            if name in ("any", "all") and args and _traced(args[0]) and ctx.traced:
                self._control_flow(node, node.args[0], ctx, "bool")
            if name in ("enumerate", "zip"):
                return AV("static", traced=any(_traced(a) for a in args))
            return AV("static") if name not in ("tuple", "list", "dict", "set") else AV(name)
        return UNKNOWN

    def _jax_call(self, node, q: str, args, kwargs, ctx: _Ctx, any_traced: bool) -> AV:
        mod, _, name = q.rpartition(".")
        if (mod == "jax.numpy" and name in _JNP_STATIC) or (mod == "jax.lax" and
                                                             name in _LAX_STATIC):
            return AV("static")
        # shape-position arguments must be static
        if ctx.traced:
            for pos in _SHAPE_ARGS.get(q, ()):
                if pos < len(args):
                    self._shape_arg(node.args[pos], args[pos], ctx, q)
            for k in node.keywords:
                if k.arg in _SHAPE_KWARGS:
                    self._shape_arg(k.value, kwargs[k.arg], ctx, q)
            if mod == "jax.numpy" and name in _SIZED and "size" not in kwargs:
                self._sized(node, name, args, ctx)
            elif q == "jax.numpy.where" and len(args) == 1 and "size" not in kwargs:
                self._sized(node, "where", args, ctx)
            elif q == "jax.numpy.repeat" and len(args) > 1 and _traced(args[1]) and \
                    "total_repeat_length" not in kwargs:
                self._int_use(node.args[1], args[1], ctx, "as repeats in jnp.repeat "
                              "(add total_repeat_length=N)")
        if mod == "jax.lax" and name in _LAX_BINARY and len(args) == 2:
            self._lax_mixed(node, name, args)
        if not self.x64:
            self._x64(node, q, name, args, kwargs)
        if q in ("jax.experimental.checkify.check",):
            return AV("none")
        # result
        traced = any_traced or ctx.traced
        from_shape = None
        if ctx.traced and not any_traced and mod == "jax.numpy" and node.args and \
                self._is_shape_expr(node.args[0], ctx):
            from_shape = node
        boolean = (mod == "jax.numpy" and name in _BOOL_FUNCS) or (
            name in ("any", "all") and mod == "jax.numpy")
        shape, dtype = self._ctor_shape_dtype(q, name, node, args, kwargs)
        if dtype is None and name in _FLOAT_FUNCS and (mod == "jax.numpy" or
                                                       mod == "jax.nn"):
            dtype = "float?"
        if not ctx.traced and any(a.traced for a in args):
            traced = True
        av = _jax(traced=traced and (ctx.traced or any_traced), boolean=boolean,
                  shape=shape, dtype=dtype, shape_src=from_shape)
        if from_shape is None and any_traced:
            src = next((a.shape_src for a in args if a.shape_src is not None), None)
            if src is not None and all(a.shape_src is not None or not _traced(a)
                                       for a in args):
                av.shape_src = node       # the whole static-shape computation
        return av

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

    def _ctor_shape_dtype(self, q, name, node, args, kwargs):
        shape = dtype = None
        mod = q.rpartition(".")[0]
        dt = node.keywords and next((k.value for k in node.keywords if k.arg == "dtype"),
                                    None)
        if mod == "jax.numpy":
            if name in ("zeros", "ones", "empty", "full") and node.args:
                v = _const_ints(node.args[0])
                if v is not None:
                    shape = tuple(v)
                dtype = "float32"
                if name == "full" and len(args) > 1 and args[1].dtype:
                    dtype = args[1].dtype.rstrip("*") + ("32" if args[1].dtype.endswith("*")
                                                         else "")
                    dtype = {"bool32": "bool"}.get(dtype, dtype)
            elif name == "arange":
                nums = [_num_const(a) for a in node.args]
                if nums and len(nums) <= 3 and all(n is not None for n in nums):
                    start, stop, step = (0, nums[0], 1) if len(nums) == 1 else \
                        (nums[0], nums[1], nums[2] if len(nums) == 3 else 1)
                    if step:
                        shape = (max(0, math.ceil((stop - start) / step)),)
                if node.args and all(a.kind == "int" for a in args):
                    dtype = "int32"
                elif node.args and any(a.kind == "float" for a in args):
                    dtype = "float32"
            elif name in ("array", "asarray") and node.args:
                shape, kinds = _literal_shape(node.args[0])
                if kinds:
                    dtype = "bool" if kinds == {"bool"} else "float32" if "float" in kinds \
                        else "int32" if kinds <= {"int", "bool"} else None
                elif args and args[0].kind == "jax":
                    shape, dtype = args[0].shape, args[0].dtype
            elif name in ("eye", "identity") and node.args:
                n = _int_const(node.args[0])
                m = _int_const(node.args[1]) if len(node.args) > 1 and name == "eye" else n
                if n is not None and m is not None:
                    shape = (n, m)
                dtype = "float32"
            elif name == "linspace":
                num = _int_const(node.args[2]) if len(node.args) > 2 else next(
                    (_int_const(k.value) for k in node.keywords if k.arg == "num"), 50)
                if num is not None:
                    shape = (num,)
                dtype = "float32"
            elif name in _DTYPE64 or name in ("float32", "int32", "float16", "bfloat16",
                                              "int8", "uint8", "int16", "uint32"):
                dtype = name if name not in _DTYPE64 or self.x64 else _DTYPE64[name]
        elif mod == "jax.random" and name in ("normal", "uniform") and len(node.args) > 1:
            v = _const_ints(node.args[1])
            if v is not None:
                shape = tuple(v)
            dtype = "float32"
        if dt is not None:
            if type(dt) is ast.Constant and isinstance(dt.value, str):
                dtype = dt.value
            elif type(dt) in (ast.Attribute, ast.Name):
                r = self.resolve(dt)
                last = (r or (dt.id if type(dt) is ast.Name else dt.attr)).rsplit(".", 1)[-1]
                dtype = {"float": "float32", "int": "int32", "bool_": "bool",
                         "complex": "complex64"}.get(last, last)
        if dtype in _DTYPE64 and not self.x64:
            dtype = _DTYPE64[dtype]
        return shape, dtype

    def _np_call(self, node, q: str, args, kwargs, ctx: _Ctx) -> AV:
        parts = q.split(".")
        if len(parts) >= 3 and parts[1] == "random":
            if ctx.staged and ctx.fn is not None:
                self._randomness(node, q, ctx)
            return AV("np")
        if len(parts) == 3 and parts[2] == "at" and node.args:
            self._ufunc_at(node, parts[1], args)
            return AV("none")
        name = parts[-1]
        if ctx.traced and name not in _NP_STATIC_OK:
            t = next((a for a in args if _traced(a)), None)
            if t is not None:
                new = self.replace(node.func, f"{self.jnp}.{name}") if len(parts) == 2 \
                    else None
                conv = name in ("asarray", "array")
                self.add("JX207", node, f"`{self.seg(node)}` converts a tracer to a NumPy "
                         "array (TracerArrayConversionError)" + (
                             "" if conv else ": NumPy cannot run on traced values") + ".",
                         f"use {self.jnp}.{name} — jax.numpy works on tracers; use NumPy only "
                         "for static values such as shapes",
                         rewrite=new)
                return _jax(traced=True)
        if name in ("prod", "sum") and node.args and self._is_shape_expr(node.args[0], ctx):
            return AV("int", dtype="int*")
        shape, dtype = None, None
        if name in ("float32", "int32"):
            dtype = name
        return AV("np", shape=shape, dtype=dtype)

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

    def _method(self, node, recv: AV, meth: str, args, kwargs, ctx: _Ctx) -> AV:
        any_traced = recv.traced or any(_traced(a) for a in args)
        if recv.kind == "jax" and meth not in _ARRAY_ATTRS:
            return UNKNOWN
        if recv.kind == "jax":
            if meth in ("item", "tolist", "__float__", "__int__", "__index__") and \
                    recv.traced and ctx.traced:
                x = self.seg(node.func.value)
                new = self.replace(node, x)
                self.add("JX207", node, f"`{self.seg(node)}` needs a concrete value, but {x} "
                         f"is traced (ConcretizationTypeError).",
                         f"keep it an array and drop .{meth}(): {x}", rewrite=new)
                return AV("static")
            if meth in ("reshape", "broadcast_to") and ctx.traced:
                for a, n in zip(args, node.args):
                    self._shape_arg(n, a, ctx, "reshape")
            if meth == "astype" and node.args and not self.x64:
                self._dtype64(node.args[0], node)
            shape = recv.shape if meth in ("astype", "block_until_ready", "copy") else None
            if meth == "reshape":
                v = _const_ints(node.args[0]) if len(node.args) == 1 else \
                    _const_ints(ast.Tuple(node.args, ast.Load()))
                shape = tuple(v) if v is not None and all(i >= 0 for i in v) else None
            dtype = recv.dtype
            if meth == "astype" and node.args:
                dtype = None
            boolean = meth in ("any", "all")
            if meth in ("any", "all", "sum", "mean", "max", "min", "prod", "argmax",
                        "argmin", "std", "var"):
                shape = None
            src = node if recv.shape_src is not None and not any(
                _traced(a) and a.shape_src is None for a in args) else None
            return _jax(traced=any_traced, shape=shape, dtype=dtype, boolean=boolean,
                        shape_src=src)
        if recv.kind == "method" or recv.kind == "atref":
            return _jax(traced=any_traced)
        if recv.kind == "np":
            return AV("np")
        if meth in _OUTER_MUTATORS and ctx.staged and ctx.fn is not None and \
                type(node.func.value) is ast.Name:
            name = node.func.value.id
            if self._is_outer(name, ctx) and name not in ctx.params:
                leak = any(_traced(a) for a in args)
                self._purity_write(node, ctx, name, leak)
        if recv.kind == "func" and recv.func is not None:
            return UNKNOWN
        if recv.kind in ("static", "int", "float", "str"):
            return AV("static")
        if recv.kind is None and recv.traced:
            return _jax(traced=True)
        return AV(None, traced=any_traced and ctx.traced and recv.kind in ("tuple",
                                                                            "list"))

    def _at_call(self, node, at, args, ctx: _Ctx) -> AV:
        base_node, idx_node, op = at
        base = self.ev(base_node, ctx)
        idx = self.ev(idx_node, ctx)
        if base.kind == "jax":
            if idx.boolean and _traced(idx) and ctx.traced and op in ("set", "add",
                                                                      "multiply", "get"):
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
            has_mode = any(k.arg == "mode" for k in node.keywords)
            if not has_mode:
                fake = ast.Subscript(base_node, idx_node, ast.Load())
                ast.copy_location(fake, node)
                fake.end_lineno, fake.end_col_offset = node.end_lineno, node.end_col_offset
                self._oob(fake, base, idx_node, read=(op == "get"), at_op=op, call=node)
        return _jax(traced=base.traced or _traced(idx) or any(_traced(a) for a in args),
                    shape=base.shape if op != "get" else None, dtype=base.dtype)

    def _user_call(self, node, fn: FuncInfo, args, kwargs, ctx: _Ctx) -> AV:
        if fn.transform in ("jit", "pmap"):
            self._jit_args(node, fn, args, kwargs, ctx)
            self.state.called.add(fn.name)
            if fn.wrapper_name:
                self.state.called.add(fn.wrapper_name)
            return _jax(traced=ctx.traced)
        # a helper called from a traced function: analyse it with those params traced
        if ctx.traced and type(fn.node) is not ast.Lambda:
            traced_params = set()
            avs = {}
            for p, a in zip(fn.params, args):
                if p.startswith("*"):
                    break
                if _traced(a):
                    traced_params.add(p)
                    avs[p] = a
            for k, v in kwargs.items():
                if k in fn.params and _traced(v):
                    traced_params.add(k)
                    avs[k] = v
            if traced_params:
                self._helper_avs.setdefault(id(fn.node), avs)
                self._schedule(fn, fn.parent, frozenset(traced_params), ctx.staged)
                return _jax(traced=True)
        return UNKNOWN

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

    # operators ---------------------------------------------------------------------------

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
            return _jax(traced=True)
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
        if traced or any(v.kind == "jax" for v in vals):
            if len(node.ops) > 1 and traced and ctx.traced:
                self._control_flow(node, node, ctx, "chain")
            return _jax(traced=traced, boolean=True,
                        shape=next((v.shape for v in vals if v.shape), None))
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

    # rule helpers ------------------------------------------------------------------------

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

    def _static_detail(self, ctx: _Ctx, params, want_rewrite: bool) -> dict:
        return {"params": tuple(params)}

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

    def _lax_mixed(self, node, name: str, args) -> None:
        da, db = args[0].dtype, args[1].dtype
        if not da or not db:
            return
        ka, kb = _dtype_kind(da), _dtype_kind(db)
        if ka is None or kb is None:
            return
        weak_a, weak_b = da.endswith("*"), db.endswith("*")
        default = {"int": "int64" if self.x64 else "int32",
                   "float": "float64" if self.x64 else "float32",
                   "complex": "complex128" if self.x64 else "complex64"}
        ra = default.get(ka, da) if weak_a else da
        rb = default.get(kb, db) if weak_b else db
        if ka == kb and (ra == rb or (weak_a and weak_b) or "?" in ra + rb):
            return
        ra, rb = ra.rstrip("?"), rb.rstrip("?")
        if ka == kb and (weak_a or weak_b) and ka == "int":
            return
        jname = _LAX_BINARY[name]
        new = self.replace(node.func, f"{self.jnp}.{jname}")
        self.add("JX501", node, f"lax.{name} does not promote types: {ra} and {rb} "
                 "(TypeError: requires arguments to have the same dtypes).",
                 f"use {self.jnp}.{jname}, which promotes, or convert one side "
                 f"explicitly (e.g. .astype({self.jnp}.{ra if ka == 'float' else rb}))",
                 rewrite=new)

    def _dtype64(self, dt_node, node) -> bool:
        name = None
        if type(dt_node) is ast.Constant and isinstance(dt_node.value, str):
            name = dt_node.value
        elif type(dt_node) in (ast.Attribute, ast.Name):
            q = self.resolve(dt_node)
            if q and q.startswith(("jax.numpy.", "numpy.")):
                name = q.rsplit(".", 1)[-1]
        if name not in _DTYPE64:
            return False
        to = _DTYPE64[name]
        new = self.seg(dt_node).replace(name, to)
        self.add("JX502", dt_node, f"`{self.seg(dt_node)}` asks for a 64-bit type, but "
                 f"jax_enable_x64 is off: JAX silently uses {to.replace('f4', 'float32')}.",
                 f"use {to}, or enable 64-bit at startup: "
                 f"{self.jaxn}.config.update('jax_enable_x64', True)",
                 rewrite=self.replace(dt_node, new))
        return True

    def _x64(self, node, q, name, args, kwargs) -> None:
        if q.startswith("jax.numpy.") and name in _DTYPE64:
            self._dtype64(node.func, node)
            return
        for k in node.keywords:
            if k.arg == "dtype":
                if self._dtype64(k.value, node):
                    return
        pos = _DTYPE_CTOR_POS.get(name)
        if q.startswith("jax.numpy.") and pos is not None and len(node.args) > pos:
            self._dtype64(node.args[pos], node)

    # stale captures --------------------------------------------------------------------

    def _stale_captures(self, tree) -> None:
        """A jitted function reads a global that the code later rebinds (after a call)."""
        fns = [fn for fn in self.funcs.values() if fn.staged and fn.global_reads]
        for fn in fns:
            self.state.captures[fn.name] = (fn, dict(fn.global_reads), self.cell)
        for fname, (fn, reads, cell) in list(self.state.captures.items()):
            for g, read_line in reads.items():
                for line in self.module_assigns.get(g, ()):
                    if cell == self.cell and line <= fn.line:
                        continue
                    if not self._called_before(fn, line, cell):
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

    _loops: list = []

    def _commit(self) -> None:
        st = self.state
        if not st.commit:
            return
        st.aliases.update(self.aliases)
        for k, v in self.module.env.items():
            st.env[k] = v
        if self.x64_toggles:
            st.x64 = self.x64_toggles[-1][1]
        for fn in self.funcs.values():
            if fn.parent is None and type(fn.node) is not ast.Lambda:
                st.env.setdefault(fn.name, AV("func", func=fn))


_OPSYM = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
          ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
          ast.LShift: "<<", ast.RShift: ">>", ast.MatMult: "@"}
_CMPSYM = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
           ast.NotEq: "!="}


def _has_ellipsis(target) -> bool:
    if type(target) is not ast.Subscript:
        return False
    sl = target.slice
    elts = sl.elts if type(sl) is ast.Tuple else [sl]
    return any(type(e) is ast.Constant and e.value is Ellipsis for e in elts)


def _at_parts(call: ast.Call):
    """`x.at[idx].op(...)` -> (x, idx, op), else None."""
    f = call.func
    if type(f) is not ast.Attribute or f.attr not in _AT_OPS:
        return None
    sub = f.value
    if type(sub) is not ast.Subscript:
        return None
    at = sub.value
    if type(at) is not ast.Attribute or at.attr != "at":
        return None
    return at.value, sub.slice, f.attr


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


def _literal_shape(node) -> tuple[tuple | None, set]:
    """Shape and element kinds of a (nested) list literal, if rectangular."""
    if type(node) in (ast.List, ast.Tuple):
        if not node.elts:
            return (0,), set()
        subs = [_literal_shape(e) for e in node.elts]
        shapes = {s for s, _ in subs}
        kinds = set().union(*(k for _, k in subs))
        if len(shapes) != 1 or None in shapes:
            return None, kinds
        return (len(node.elts),) + subs[0][0], kinds
    if type(node) is ast.Constant and isinstance(node.value, (bool, int, float, complex)):
        return (), {_SCALAR_KIND[type(node.value)]}
    if type(node) is ast.UnaryOp and type(node.operand) is ast.Constant and \
            isinstance(node.operand.value, (int, float)):
        return (), {_SCALAR_KIND[type(node.operand.value)]}
    return None, set()


def _line_node(tree, line: int):
    for node in tree.body:
        if node.lineno <= line <= node.end_lineno:
            if node.lineno == line:
                return node
            for n in ast.walk(node):
                if isinstance(n, ast.stmt) and n.lineno == line:
                    return n
            return node
    return None


# ---------------------------------------------------------------------------------------
# values from the user's namespace (a notebook's earlier cells)

_CANON: dict[int, str] | None = None


def _canonical_object(obj) -> str | None:
    global _CANON
    mod = getattr(obj, "__module__", None) or ""
    if not (mod.startswith(("jax", "functools", "numpy", "_functools"))):
        return None
    if _CANON is None:
        _CANON = {}
        import functools
        _CANON[id(functools.partial)] = "functools.partial"
        if "jax" in sys.modules:
            import jax
            for name in ("jit", "vmap", "pmap", "grad", "value_and_grad", "jacfwd", "jacrev",
                         "hessian", "checkpoint", "remat", "make_jaxpr", "eval_shape",
                         "device_put", "device_get", "block_until_ready"):
                if hasattr(jax, name):
                    _CANON[id(getattr(jax, name))] = f"jax.{name}"
            for name in ("fori_loop", "while_loop", "scan", "cond", "switch", "map"):
                _CANON[id(getattr(jax.lax, name))] = f"jax.lax.{name}"
            try:
                from jax.experimental import checkify
                _CANON[id(checkify.checkify)] = "jax.experimental.checkify.checkify"
            except Exception:  # pragma: no cover
                pass
            if hasattr(jax, "shard_map"):
                _CANON[id(jax.shard_map)] = "jax.shard_map"
    c = _CANON.get(id(obj))
    if c is not None:
        return c
    name = getattr(obj, "__name__", None)
    if name and mod.startswith("jax.numpy") or mod.startswith("jax._src.numpy"):
        return f"jax.numpy.{name}"
    if name and mod.startswith(("jax.lax", "jax._src.lax")):
        return f"jax.lax.{name}"
    if name and mod.startswith("numpy"):
        return f"numpy.{name}"
    return None


def _from_value(v) -> AV:
    t = type(v)
    k = _SCALAR_KIND.get(t)
    if k is not None:
        return AV(k, dtype={"int": "int*", "float": "float*", "bool": "bool",
                            "complex": "complex*"}.get(k))
    mod = t.__module__ or ""
    if mod.startswith("jaxlib") or mod.startswith("jax"):
        if hasattr(v, "shape") and hasattr(v, "dtype") and not callable(v):
            try:
                return AV("jax", shape=tuple(v.shape), dtype=str(v.dtype))
            except Exception:
                return AV("jax")
        if t.__name__ in ("PjitFunction", "JitWrapped") or hasattr(v, "lower"):
            return AV("jaxfunc")
        return UNKNOWN
    if mod == "numpy":
        if t.__name__ == "ndarray":
            return AV("np", shape=tuple(v.shape), dtype=str(v.dtype))
        if hasattr(v, "dtype"):
            return AV("np", dtype=str(v.dtype))
        return UNKNOWN
    if t is list:
        return AV("list")
    if t is tuple:
        return AV("tuple")
    if t is dict:
        return AV("dict")
    if t.__name__ == "module":
        return AV("module")
    if callable(v) and t.__name__ == "function":
        return UNKNOWN
    return UNKNOWN


def _cache_size(f) -> int:
    try:
        from ..._compat import jit_cache_size
    except Exception:  # pragma: no cover - compat helper missing
        return 0
    return jit_cache_size(f)


# ---------------------------------------------------------------------------------------
# public entry points


@dataclass
class CheckState:
    """What a notebook's earlier cells taught the checker (the `Checker` keeps one)."""

    env: dict = field(default_factory=dict)
    aliases: dict = field(default_factory=dict)
    captures: dict = field(default_factory=dict)    # jitted fn -> (FuncInfo, reads, cell)
    called: set = field(default_factory=set)
    x64: bool = False
    commit: bool = True


def analyze(src: str, *, namespace=None, x64=None, state: CheckState | None = None,
            line_offset: int = 0, cell: str = "") -> list[Finding]:
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return []      # the cell will report its own SyntaxError when it runs
    a = Analyzer(src, namespace=namespace, x64=x64, state=state, line_offset=line_offset,
                 cell=cell)
    a._class_of = {}
    a._loops = [(n.lineno, n.end_lineno) for n in tree.body
                if isinstance(n, (ast.For, ast.While))]
    try:
        return a.run(tree)
    except Exception:           # a checker bug must not break the user's work
        if os.environ.get("JAXMAGIC_CHECK_DEBUG"):
            raise
        return sorted(a.findings.values(), key=sort_key)
    except RecursionError:      # pragma: no cover - absurdly deep code
        return []
