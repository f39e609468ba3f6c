"""Abstract values and AST helpers shared by the interpreter and the rules.

An `AV` is what the checker knows about one value (JAX array or not, traced or not,
shape, dtype); a `FuncInfo` is one user function and the transform applied to it. The
constant helpers read literal ints/strings out of the AST (static_argnums, shapes).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

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
    """The value depends on traced values (it may or may not be an array itself)."""
    if av.traced:
        return True
    if av.elts:
        return any(_traced(e) for e in av.elts)
    return False


def _tracer(av: AV) -> bool:
    """The value is (or holds) a tracer: an array the source proves is traced. Only
    these fire error-severity rules; a traced-derived value of unknown kind (a helper's
    result, a pytree's part) stays silent."""
    if av.traced and av.kind == "jax":
        return True
    return bool(av.elts) and any(_tracer(e) for e in av.elts)


def _truth_traced(av: AV) -> bool:
    """bool(value) needs a concrete array value (containers answer by their length)."""
    return av.kind == "jax" and av.traced


def _traced_elt(av: AV) -> AV | None:
    """The first proven tracer in `av` (itself or an element)."""
    if av.traced and av.kind == "jax":
        return av
    for e in av.elts or ():
        t = _traced_elt(e)
        if t is not None:
            return t
    return None


def _jax(traced=False, **kw) -> AV:
    return AV("jax", traced=traced, **kw)


def _derived(traced: bool) -> AV:
    """A value of unknown kind computed from traced values (or not)."""
    return AV(None, traced=True) if traced else UNKNOWN


def _merge(avs: list[AV]) -> AV:
    """What a function returns, from its `return` values: their common kind, else unknown
    (still marked traced when any of them is)."""
    if not avs:
        return AV("none")
    kinds = {a.kind for a in avs}
    traced = any(_traced(a) for a in avs)
    if kinds == {"jax"}:
        shapes, dtypes = {a.shape for a in avs}, {a.dtype for a in avs}
        return _jax(traced=traced, shape=shapes.pop() if len(shapes) == 1 else None,
                    dtype=dtypes.pop() if len(dtypes) == 1 else None)
    if kinds == {"tuple"} and all(a.elts is not None for a in avs) and \
            len({len(a.elts) for a in avs}) == 1:
        return AV("tuple", elts=[_merge(list(e)) for e in zip(*(a.elts for a in avs))])
    if len(kinds) == 1 and None not in kinds:
        k = kinds.pop()
        return AV(k, traced=traced, dtype=avs[0].dtype if k in ("int", "float") else None)
    return _derived(traced)


def _concrete(av: AV) -> AV:
    """A jitted function's result as its (eager) caller sees it: same kinds, no tracers."""
    if av.kind == "jax":
        return _jax(shape=av.shape, dtype=av.dtype)
    if av.elts is not None and av.kind in ("tuple", "list"):
        return AV(av.kind, elts=[_concrete(e) for e in av.elts])
    return AV(av.kind) if av.kind is not None else UNKNOWN


# ---------------------------------------------------------------------------------------
# functions


@dataclass(eq=False)
class FuncInfo:
    """One user function (def or lambda) and the transform the pre-pass found for it."""

    node: ast.AST                      # FunctionDef / AsyncFunctionDef / Lambda
    name: str
    params: list[str]
    defaults: set[str]                 # params with a default value
    class_name: str | None = None
    transform: str | None = None       # "jit", "pmap", "vmap", "loop", "shard", "trace"
    static: set[str] = field(default_factory=set)
    statics_unknown: bool = False
    jit_node: ast.AST | None = None    # the decorator / jax.jit(...) call that jits it
    jit_is_decorator: bool = False
    wrapper_name: str | None = None    # g in `g = jax.jit(f)`
    global_reads: dict = field(default_factory=dict)   # name -> first line read
    parent: Any = None                 # enclosing _Ctx for nested functions
    cell: str = ""                     # where it was defined (for cross-cell messages)
    src: str | None = None             # the source it was defined in
    returns: Any = None                # AV it returns (once analysed)

    @property
    def traced(self) -> bool:
        return self.transform is not None

    @property
    def staged(self) -> bool:
        return self.transform in ("jit", "pmap", "loop", "trace")

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


def _param_names(node) -> set[str]:
    """Every name a def or lambda binds as a parameter (`*args`, `**kwargs` included)."""
    a = node.args
    names = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
    names.update(v.arg for v in (a.vararg, a.kwarg) if v is not None)
    return names


# ---------------------------------------------------------------------------------------
# reading the AST


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


_AT_OPS = {"set", "add", "subtract", "multiply", "mul", "divide", "power", "min", "max",
           "apply", "get"}
_OPSYM = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
          ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
          ast.LShift: "<<", ast.RShift: ">>", ast.MatMult: "@"}


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
