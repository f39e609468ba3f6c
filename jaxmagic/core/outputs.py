"""Eager vs jit, leaf by leaf: does the jitted call return what the function returns?

A float leaf matches when its largest difference is within a tolerance for its dtype,
relative to the largest magnitude in the eager leaf (XLA reorders reductions: a few ulps
times sqrt(size)); NaNs must sit in the same places; integer, bool and key leaves must be
equal. Plain data out; `timing` decides which differences rounding explains.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from .paths import key_text

# Relative tolerance (to the largest magnitude in the eager leaf) per float width:
# reductions that XLA reorders differ by a few ulps times sqrt(size).
_RTOL = {8: 1e-9, 4: 1e-4, 2: 1e-2, 1: 0.25}
_RTOL_BF16 = 5e-2


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


def _rtol(dtype: np.dtype) -> float:
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


def compare_outputs(ref: Any, got: Any) -> tuple[bool, float, float, list[LeafDiff]]:
    """Compare `got` (jit) with `ref` (eager) leaf by leaf.

    A float leaf matches when max|got - ref| <= rtol(dtype) * max|ref| (NaNs in the same
    places); integer and bool leaves must be equal.
    """
    ref_leaves, ref_tree = jax.tree_util.tree_flatten_with_path(ref)
    got_leaves, got_tree = jax.tree_util.tree_flatten_with_path(got)
    if ref_tree != got_tree:
        d = LeafDiff("output", "", (), math.inf, math.inf, 0.0, False,
                     f"structure differs: eager {ref_tree}, jit {got_tree}")
        return False, math.inf, math.inf, [d]
    diffs, max_abs, max_rel = [], 0.0, 0.0
    for (path, r), (_, g) in zip(ref_leaves, got_leaves):
        name = key_text(path) or "output"
        try:
            # a Python number, or NumPy's float64 where JAX computes float32: jit's dtype
            weak = not isinstance(r, jax.Array) and (not hasattr(r, "dtype") or (
                jax.dtypes.canonicalize_dtype(r.dtype) == getattr(g, "dtype", None)))
            r, g = host(r), host(g)
        except Exception as e:  # a leaf NumPy cannot hold: say so, never fail the view
            diffs.append(LeafDiff(name, str(getattr(g, "dtype", type(g).__name__)),
                                  tuple(getattr(g, "shape", ())), 0.0, 0.0, 0.0, True,
                                  skipped=f"{type(e).__name__}: {e}"))
            continue
        rtol = _rtol(g.dtype)
        if r.shape != g.shape:
            diffs.append(LeafDiff(name, str(g.dtype), g.shape, math.inf, math.inf, rtol, False,
                                  f"shape differs: eager {r.shape}, jit {g.shape}"))
            max_abs = max_rel = math.inf
            continue
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
        diffs.append(LeafDiff(name, str(g.dtype), tuple(g.shape), a, rel, rtol, ok, problem))
        max_abs, max_rel = max(max_abs, a), max(max_rel, rel)
    return all(d.ok for d in diffs), max_abs, max_rel, diffs


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


def nudge(x: Any, rng: np.random.Generator) -> Any:
    """A float array with each element moved by one ulp, up or down at random, on the
    devices and in the sharding it had; any other leaf as it is."""
    if not (isinstance(x, jax.Array) and jax.numpy.issubdtype(x.dtype, jax.numpy.floating)):
        return x
    host = np.asarray(jax.device_get(x))
    toward = np.where(rng.random(host.shape) < 0.5, -np.inf, np.inf).astype(host.dtype)
    return jax.device_put(np.nextafter(host, toward), x.sharding)


__all__ = ["LeafDiff", "abs_diff", "compare_outputs", "host", "nudge", "same"]
