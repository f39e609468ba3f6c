"""Eager vs jit, leaf by leaf: does the jitted call return what the function returns?

A float leaf matches when its largest difference is within a tolerance for its dtype,
relative to the largest magnitude in the eager leaf (XLA reorders reductions: a few ulps
times sqrt(size)); NaNs must sit in the same places; integer, bool and key leaves must be
equal. What is no array (a static field: an optimizer's functions, a module's sizes) is
compared for what it is, never by identity: a function built again on each call is the
same function when its code and what it captures agree. Plain data out; `timing` decides
which differences rounding explains.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import types
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from .. import _compat
from .paths import key_text

# Relative tolerance (to the largest magnitude in the eager leaf) per float width:
# reductions that XLA reorders differ by a few ulps times sqrt(size).
_RTOL = {8: 1e-9, 4: 1e-4, 2: 1e-2, 1: 0.25}
_RTOL_BF16 = 5e-2
# Pairs of static values compared at most per comparison (a closure can reach a whole
# object graph): past it, what is left counts as agreeing.
_MAX_PAIRS = 10_000


@dataclass
class LeafDiff:
    """How one output leaf of the jitted call compares with the eager one."""

    path: str
    dtype: str
    shape: tuple
    max_abs: float
    max_rel: float
    rtol: float
    ok: bool
    problem: str = ""    # structure/shape/dtype mismatch, NaN placement
    skipped: str = ""    # why this leaf could not be compared (it counts as no difference)
    rounding: bool = False   # differs, but rounding decides it (see `_Measurement.rounding`)
    static: bool = False     # no array: a static field or the structure, compared by value


def rtol_of(dtype: np.dtype) -> float:
    """The relative tolerance a float leaf of `dtype` is compared at (0: exact)."""
    if dtype.name == "bfloat16":
        return _RTOL_BF16
    if np.issubdtype(dtype, np.complexfloating):
        return _RTOL.get(dtype.itemsize // 2, 1e-4)
    if np.issubdtype(dtype, np.floating) or "float" in dtype.name:
        return _RTOL.get(dtype.itemsize, 0.25)
    return 0.0


def host(x: Any) -> np.ndarray:
    """A leaf as NumPy; a typed PRNG key as its key data (keys have no NumPy form)."""
    if hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        x = jax.random.key_data(x)
    return np.asarray(jax.device_get(x))


def arithmetic_floor(jaxpr: Any) -> np.dtype | None:
    """The least precise float dtype any equation of `jaxpr` (nested ones included)
    computes, None where none does (or no jaxpr, or one this walk cannot read: then
    each leaf at its own precision): a model that casts its matmuls to bfloat16 gives
    float32 results only as close as bfloat16 arithmetic makes them."""
    try:
        return _floor(jaxpr) if jaxpr is not None else None
    except Exception:  # noqa: BLE001 - a library's primitive of its own: no floor
        return None


def _floor(jaxpr: Any) -> np.dtype | None:
    from .jaxprs import jaxpr_params

    widest, todo = None, [_compat.open_jaxpr(jaxpr)]
    while todo:
        for eqn in todo.pop().eqns:
            for v in eqn.outvars:
                dtype = getattr(getattr(v, "aval", None), "dtype", None)
                if dtype is None or not jax.numpy.issubdtype(dtype, jax.numpy.floating):
                    continue
                if widest is None or rtol_of(np.dtype(dtype)) > rtol_of(widest):
                    widest = np.dtype(dtype)
            for sub in jaxpr_params(eqn):        # a tuple's other items: not jaxprs
                todo += [_compat.open_jaxpr(j) for j in (sub if isinstance(sub, tuple)
                                                         else (sub,))
                         if isinstance(j, _compat.JAXPR_TYPES)]
    return widest


def compare_outputs(ref: Any, got: Any, floor: np.dtype | None = None
                    ) -> tuple[bool, float, float, list[LeafDiff]]:
    """Compare `got` (jit) with `ref` (eager) leaf by leaf.

    A float leaf matches when max|got - ref| <= rtol(dtype) * max|ref| (NaNs in the same
    places), at the precision of `floor` where it is coarser (`arithmetic_floor`: the
    program's least precise arithmetic); integer and bool leaves must be equal. Where
    the two structures differ only in static data that agrees for what it is, the arrays
    are compared as usual; a static field that truly differs is one more LeafDiff after
    the arrays' (which keep their leaf order); a structure that differs is the only one,
    no array compared.
    """
    ref_leaves, ref_tree = jax.tree_util.tree_flatten_with_path(ref)
    got_leaves, got_tree = jax.tree_util.tree_flatten_with_path(got)
    statics = [] if ref_tree == got_tree else _static_diffs_or_trees(ref, got)
    if any(d.problem.startswith("structure") for d in statics):
        return False, math.inf, math.inf, statics[:1]
    diffs = [_leaf_diff(key_text(path) or "output", r, g, floor)
             for (path, r), (_, g) in zip(ref_leaves, got_leaves)]
    max_abs = max((d.max_abs for d in diffs), default=0.0)
    max_rel = max((d.max_rel for d in diffs), default=0.0)
    diffs += statics
    return all(d.ok for d in diffs), max_abs, max_rel, diffs


def _leaf_diff(name: str, r: Any, g: Any, floor: np.dtype | None = None) -> LeafDiff:
    """One array leaf, eager `r` against jit `g`."""
    try:
        # a Python number, or NumPy's float64 where JAX computes float32: jit's dtype
        weak = not isinstance(r, jax.Array) and (not hasattr(r, "dtype") or (
            jax.dtypes.canonicalize_dtype(r.dtype) == getattr(g, "dtype", None)))
        r, g = host(r), host(g)
    except Exception as e:  # a leaf NumPy cannot hold: say so, never fail the view
        return LeafDiff(name, str(getattr(g, "dtype", type(g).__name__)),
                        tuple(getattr(g, "shape", ())), 0.0, 0.0, 0.0, True,
                        skipped=f"{type(e).__name__}: {e}")
    rtol = rtol_of(g.dtype)
    if floor is not None and rtol and g.dtype.kind == "f":
        rtol = max(rtol, rtol_of(floor))
    if r.shape != g.shape:
        return LeafDiff(name, str(g.dtype), g.shape, math.inf, math.inf, rtol, False,
                        f"shape differs: eager {r.shape}, jit {g.shape}")
    problem = ""
    if r.dtype != g.dtype and not weak:
        problem = f"dtype differs: eager {r.dtype}, jit {g.dtype}"
    if r.dtype.kind in "fc" or g.dtype.kind in "fc" or "float" in g.dtype.name:
        rf = r.astype(np.complex128 if "c" in (r.dtype.kind + g.dtype.kind) else np.float64)
        gf = g.astype(rf.dtype)
        rnan, gnan = np.isnan(rf), np.isnan(gf)
        if rnan.shape and (rnan != gnan).any() or (not rnan.shape and rnan != gnan):
            problem = problem or "NaN in different places"
        both = ~(rnan | gnan)
        with np.errstate(invalid="ignore", over="ignore"):
            delta = np.abs(np.where(both, gf - rf, 0))
            delta = np.where(np.isnan(delta), 0, delta)      # inf - inf at same spot
            scale = float(np.max(np.abs(np.where(both & np.isfinite(rf), rf, 0)),
                                 initial=0.0))
        a = float(np.max(delta, initial=0.0))
        rel = a / scale if scale > 0 else (0.0 if a == 0 else math.inf)
        ok = (rel <= rtol if scale > 0 else a <= rtol) and not problem
    else:
        ok = bool(np.array_equal(r, g)) and not problem
        with np.errstate(over="ignore"):
            a = float(np.max(np.abs(g.astype(np.float64) - r.astype(np.float64)),
                             initial=0.0)) if r.size else 0.0
        scale = float(np.max(np.abs(r.astype(np.float64)), initial=0.0)) if r.size else 0.0
        rel = a / scale if scale > 0 else (0.0 if a == 0 else math.inf)
    return LeafDiff(name, str(g.dtype), tuple(g.shape), a, rel, rtol, ok, problem)


# ---- what is no array: the structure and its static data ---------------------------------


def _static_diffs_or_trees(ref: Any, got: Any) -> list[LeafDiff]:
    """`static_diffs`, or where a value in them cannot even be looked at (a property that
    raises), the two structures as JAX prints them: never a failed view."""
    try:
        return static_diffs(ref, got)
    except Exception:
        trees = [jax.tree_util.tree_structure(x) for x in (ref, got)]
        return [_static_leaf(f"structure differs: eager {trees[0]}, jit {trees[1]}", "output")]


def _node(x: Any) -> tuple[list, Any]:
    """One level of a pytree: its children as (key path, child), and its node data
    ((type, static data), or None for a leaf)."""
    kids, tree = jax.tree_util.tree_flatten_with_path(x, is_leaf=lambda y: y is not x)
    return kids, tree.node_data()


def static_diffs(ref: Any, got: Any, path: tuple = ()) -> list[LeafDiff]:
    """Where eager's output `ref` and jit's `got` differ other than in their array leaves:
    a structure that differs (the walk stops there), or static data that differs for
    what it is. [] when the two hold the same tree of arrays."""
    rk, rn = _node(ref)
    gk, gn = _node(got)
    if rn is None and gn is None:
        return []
    name = key_text(path) or "output"
    if (rn is None or gn is None or not _same_class(rn[0], gn[0])
            or [k for k, _ in rk] != [k for k, _ in gk]):
        return [_static_leaf(f"structure differs at {name}: eager {_shape_of(ref, rn, rk)}, "
                             f"jit {_shape_of(got, gn, gk)}", name)]
    out = []
    if rn[1] is not gn[1] and (why := differs(rn[1], gn[1])):
        out += _field_diffs(ref, got, rk, path) or [_static_leaf(
            f"static data of {rn[0].__name__} differs: {why}", name)]
    for (k, r), (_, g) in zip(rk, gk):
        out += static_diffs(r, g, path + k)
        if out and out[-1].problem.startswith("structure"):
            return out[-1:]
    return out


def _field_diffs(ref: Any, got: Any, kids: list, path: tuple) -> list[LeafDiff]:
    """A dataclass node's static fields (those not among its children) that differ,
    each by name; [] where the node is no such dataclass."""
    children = {k[0].name for k, _ in kids if isinstance(k[0], jax.tree_util.GetAttrKey)}
    if not dataclasses.is_dataclass(ref) or len(children) != len(kids):
        return []
    out = []
    for f in dataclasses.fields(ref):
        if f.name in children or not hasattr(ref, f.name) or not hasattr(got, f.name):
            continue
        if why := differs(getattr(ref, f.name), getattr(got, f.name)):
            name = key_text(path + (jax.tree_util.GetAttrKey(f.name),))
            out.append(_static_leaf(f"static field {name} differs: {why}", name))
    return out


def _static_leaf(problem: str, name: str) -> LeafDiff:
    return LeafDiff(name, "", (), 0.0, 0.0, 0.0, False, problem, static=True)


def _same_class(a: type, b: type) -> bool:
    """The same class, or one defined again by the same statement (a class made inside
    the function is a new object on each call)."""
    return a is b or (a.__qualname__, a.__module__) == (b.__qualname__, b.__module__)


def _shape_of(x: Any, node: Any, kids: list) -> str:
    if node is None:
        return "an array" if hasattr(x, "shape") else f"a {type(x).__name__}"
    if node[0] is type(None):
        return "None"
    if isinstance(x, dict):
        keys = ", ".join(_short(k) for k in x)
        return f"a {type(x).__name__} with keys {keys}" if x else f"an empty {type(x).__name__}"
    return f"a {node[0].__name__} of {len(kids)}"


def _short(x: Any) -> str:
    """A static value in a few words: a function by its name, a number or string as
    itself, anything else by its type (a repr can be long and slow)."""
    if isinstance(x, (bool, int, float, complex, str, bytes, type(None))):
        r = repr(x)
        return r if len(r) <= 60 else r[:57] + "..."
    if callable(x) and hasattr(x, "__qualname__"):
        return str(x.__qualname__)
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return f"an array {x.dtype}{list(x.shape)}"
    return f"a {type(x).__name__}"


def differs(a: Any, b: Any, seen: dict | None = None) -> str:
    """How two static values differ for what they are ("" where they agree): containers
    item by item, functions by their code and what they capture, dataclasses and plain
    objects by their fields, arrays by value, the rest by ==. What cannot be checked (a
    tracer, an object with neither == nor fields, a pair already met: a cycle, or past
    `_MAX_PAIRS`) counts as agreeing."""
    seen = {} if seen is None else seen
    if a is b or (id(a), id(b)) in seen or len(seen) > _MAX_PAIRS \
            or _compat.is_tracer(a) or _compat.is_tracer(b):
        return ""
    seen[id(a), id(b)] = a, b          # held, so no id is reused while comparing
    if hasattr(a, "shape") and hasattr(a, "dtype") or hasattr(b, "shape") and hasattr(b, "dtype"):
        return _array_differs(a, b)
    if isinstance(a, type) and isinstance(b, type):
        return "" if _same_class(a, b) else f"eager {_short(a)}, jit {_short(b)}"
    if type(a) is not type(b) and not _same_class(type(a), type(b)):
        return _equal_differs(a, b)       # 1 and 1.0 are one value; a str and a None not
    if isinstance(a, (tuple, list, dict)):
        return _items_differ(a, b, seen)
    if isinstance(a, (types.FunctionType, types.MethodType, functools.partial)):
        return _function_differs(a, b, seen)
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        pairs = [(f.name, getattr(a, f.name, None), getattr(b, f.name, None))
                 for f in dataclasses.fields(a)]
    elif type(a).__eq__ is object.__eq__:
        if not (hasattr(a, "__dict__") and hasattr(b, "__dict__")):
            return ""
        pairs = [(k, v, getattr(b, k, None)) for k, v in vars(a).items()]
        if set(vars(a)) != set(vars(b)):
            return f"eager {_short(a)}, jit {_short(b)} (different attributes)"
    else:
        return _equal_differs(a, b)
    for k, u, v in pairs:
        if why := differs(u, v, seen):
            return f".{k}: {why}"
    return ""


def _array_differs(a: Any, b: Any) -> str:
    try:
        x, y = host(a), host(b)
        nan = x.dtype.kind in "fc" and y.dtype.kind in "fc"
        same_value = x.shape == y.shape and bool(np.array_equal(x, y, equal_nan=nan))
    except Exception:      # no host form: it cannot be checked
        return ""
    return "" if same_value else f"eager {_short(a)}, jit {_short(b)} (different values)"


def _items_differ(a: Any, b: Any, seen: dict) -> str:
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return f"eager keys {list(map(_short, a))}, jit {list(map(_short, b))}"
        pairs = [(f"[{_short(k)}]", a[k], b[k]) for k in a]
    else:
        if len(a) != len(b):
            return f"eager {len(a)} items, jit {len(b)}"
        names = getattr(a, "_fields", None) or [f"[{i}]" for i in range(len(a))]
        pairs = [(n if n.startswith("[") else f".{n}", u, v) for n, u, v in zip(names, a, b)]
    for k, u, v in pairs:
        if why := differs(u, v, seen):
            return f"{k}: {why}"
    return ""


def _function_differs(a: Any, b: Any, seen: dict) -> str:
    """Two callables are the same function when their code agrees and so do what they
    capture (closure, defaults, a bound method's object, a partial's arguments)."""
    if isinstance(a, types.MethodType):
        return differs(a.__func__, b.__func__, seen) or differs(a.__self__, b.__self__, seen)
    if isinstance(a, functools.partial):
        why = differs(a.func, b.func, seen) or differs(a.args, b.args, seen) or differs(
            a.keywords, b.keywords, seen)
        return why and f"partial({_short(a.func)}, ...): {why}"
    if a.__code__ != b.__code__:
        return f"eager {_short(a)}, jit {_short(b)} (different functions)"
    cells = [(n, _cell(c), _cell(d)) for n, c, d in
             zip(a.__code__.co_freevars, a.__closure__ or (), b.__closure__ or ())]
    for k, u, v in [("defaults", a.__defaults__, b.__defaults__),
                    ("keyword defaults", a.__kwdefaults__, b.__kwdefaults__)] + cells:
        if why := differs(u, v, seen):
            return f"{_short(a)} captures {k}: {why}"
    return ""


def _cell(c: Any) -> Any:
    try:
        return c.cell_contents
    except ValueError:       # a cell not yet filled
        return None


def _equal_differs(a: Any, b: Any) -> str:
    """By the class's own ==, where it answers True or False (else it cannot be checked)."""
    try:
        eq = a == b
        if isinstance(eq, (bool, np.bool_)):
            if bool(eq) or (isinstance(a, float) and math.isnan(a) and math.isnan(b)):
                return ""
            return f"eager {_short(a)}, jit {_short(b)}"
    except Exception:
        pass
    return ""


def abs_diff(a: Any, b: Any) -> np.ndarray:
    """|a - b| elementwise on the host in float64 (NaN or inf where both agree: 0)."""
    x, y = host(a), host(b)
    wide = np.complex128 if np.iscomplexobj(x) or np.iscomplexobj(y) else np.float64
    x, y = x.astype(wide), y.astype(wide)
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(x - y)
    return np.where(np.isnan(d), 0.0, d)


def same(a: Any, b: Any) -> bool:
    try:
        return compare_outputs(a, b)[0]
    except Exception:
        return False


def nudge(x: Any, rng: np.random.Generator, floor: np.dtype | None = None) -> Any:
    """A float array with each element moved by one ulp, up or down at random (an ulp of
    `floor` where it is coarser: the precision the program rounds at), on the devices and
    in the sharding it had; any other leaf as it is."""
    if not (isinstance(x, jax.Array) and jax.numpy.issubdtype(x.dtype, jax.numpy.floating)):
        return x
    host = np.asarray(jax.device_get(x))
    up = rng.random(host.shape) < 0.5
    if floor is not None and jax.numpy.finfo(floor).eps > jax.numpy.finfo(host.dtype).eps:
        step = float(jax.numpy.finfo(floor).eps)
        moved = (host * np.where(up, 1 + step, 1 - step)).astype(host.dtype)
    else:
        moved = np.nextafter(host, np.where(up, np.inf, -np.inf).astype(host.dtype))
    return jax.device_put(moved, x.sharding)


__all__ = ["LeafDiff", "abs_diff", "arithmetic_floor", "compare_outputs", "differs", "host",
           "nudge", "rtol_of", "same", "static_diffs"]


def settle_rounding(leaves: list[LeafDiff], moved: dict[int, float]) -> tuple:
    """(match, max abs diff, max rel diff) once the leaves that moved, nudged by an ulp,
    at least a tenth as far as they differ from eager (`moved`: by leaf index) are named
    as decided by rounding and agree: their difference says nothing of the function."""
    for i, far in moved.items():
        if far >= 0.1 * leaves[i].max_abs:
            leaves[i].rounding = leaves[i].ok = True
    kept = [d for d in leaves if not d.rounding]
    return (all(d.ok for d in leaves), max((d.max_abs for d in kept), default=0.0),
            max((d.max_rel for d in kept), default=0.0))
