"""The summary row of one value (count, NaN, ±Inf, zeros, the finite elements' sum,
spread and range, the first iteration it went non-finite) and how rows pool over a loop's
iterations or a shard_map's devices: the reductions `--values` runs in the program (or on
the host, outside any loop), kept apart from the walk that places them.
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compat

# the fields of a summary row
N, NAN, PINF, NINF, ZERO, FINITE, SUM, M2, MIN, MAX, BAD_AT, NAN_AT = range(12)
WIDTH = 12
FLOAT, INTEGER, BOOL, KEY, OTHER = "float", "int", "bool", "key", "other"


def kind_of(aval: Any) -> str:
    dtype = getattr(aval, "dtype", None)
    if dtype is None:
        return OTHER
    if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        return KEY
    if jnp.issubdtype(dtype, jnp.bool_):
        return BOOL
    if jnp.issubdtype(dtype, jnp.inexact):
        return FLOAT
    if jnp.issubdtype(dtype, jnp.integer):
        return INTEGER
    return OTHER


# float64 on the host: the spread of a vanishing gradient (1e-26) squared stays > 0
EMPTY = np.array([0, 0, 0, 0, 0, 0, 0, 0, np.inf, -np.inf, -1, -1], np.float64)


def row(x: Any, full: bool = True) -> Any:
    """The summary row of array `x` (`full=False`: only its counts of elements and
    non-finite ones, for values past the budget): in the program where `x` is traced (a
    loop's body), else on the host, where it costs no compile."""
    kind = kind_of(x)
    if kind in (KEY, OTHER) or x.size == 0:
        out = EMPTY.copy()
        out[N] = x.size if kind != OTHER else 0
        return out if not _compat.is_tracer(x) else jnp.asarray(out, jnp.float32)
    if _compat.is_tracer(x):
        return _traced_row(x, kind, full)
    return _host_row(np.asarray(x), kind, full)


def masked_row(x: Any, mask: Any) -> Any:
    """The summary row of `x` where `mask` holds (n: the count; no NaN, as integers)."""
    xp = jnp if _compat.is_tracer(x) or _compat.is_tracer(mask) else np
    dtype = np.float32 if xp is jnp else np.float64
    x, mask = xp.ravel(xp.asarray(x)).astype(dtype), xp.ravel(mask)
    count = mask.sum().astype(dtype)
    nil = xp.zeros((), dtype)
    return xp.stack([count, nil, nil, nil, (mask & (x == 0)).sum().astype(dtype), count,
                     xp.where(mask, x, 0).sum(), nil, xp.where(mask, x, xp.inf).min(),
                     xp.where(mask, x, -xp.inf).max(), nil - 1, nil - 1])


def _host_row(x: np.ndarray, kind: str, full: bool) -> np.ndarray:
    x = (np.abs(x) if np.iscomplexobj(x) else x).astype(np.float64).ravel()
    out = EMPTY.copy()
    ok = np.isfinite(x)
    fin = x[ok] if not ok.all() else x
    out[[N, NAN, PINF, FINITE]] = x.size, np.isnan(x).sum(), (x == np.inf).sum(), fin.size
    out[NINF] = x.size - fin.size - out[NAN] - out[PINF]
    if full and fin.size:
        mean = fin.mean()
        out[[ZERO, SUM, M2, MIN, MAX]] = ((x == 0).sum(), fin.sum(),
                                         ((fin - mean) ** 2).sum(), fin.min(), fin.max())
    out[BAD_AT] = 0 if fin.size < x.size else -1
    out[NAN_AT] = 0 if out[NAN] else -1
    return out


def _add(a, b):
    return tuple(x + y for x, y in zip(a[:6], b[:6])) + (jnp.minimum(a[6], b[6]),
                                                       jnp.maximum(a[7], b[7]))


def _traced_row(x: Any, kind: str, full: bool) -> Any:
    """One variadic reduction (XLA makes it one kernel): counts, the sums of the finite
    elements shifted by the first (a one-pass spread that keeps its digits), the range."""
    # the barrier: XLA would fold the reduction of a value made of constants at compile
    # time, seconds each for a broadcast of a large constant
    x = jax.lax.optimization_barrier(x)
    x = (jnp.abs(x) if jnp.iscomplexobj(x) else x).astype(jnp.float32).ravel()
    ok = jnp.isfinite(x)
    shift = jnp.where(ok[0], x[0], 0.0)
    d = jnp.where(ok, x - shift, 0.0)
    f = jnp.float32
    zero = (x == 0).astype(f) if full else jnp.zeros_like(x)
    ops = (ok.astype(f), jnp.isnan(x).astype(f), (x == jnp.inf).astype(f), zero,
           d if full else zero, d * d if full else zero, jnp.where(ok, x, jnp.inf),
           jnp.where(ok, x, -jnp.inf))
    init = tuple(f(v) for v in (0, 0, 0, 0, 0, 0, jnp.inf, -jnp.inf))
    fin, nan, pinf, zeros, s1, s2, lo, hi = jax.lax.reduce(ops, init, _add, (0,))
    n = f(x.size)
    total = s1 + shift * fin if full else s1     # a partial row's sum is 0, as on the host
    m2 = jnp.maximum(s2 - s1 * s1 / jnp.maximum(fin, 1.0), 0.0)
    return jnp.stack([n, nan, pinf, n - fin - nan - pinf, zeros, fin, total, m2, lo, hi,
                      jnp.where(fin < n, 0.0, -1.0), jnp.where(nan > 0, 0.0, -1.0)])


# traced values of one size are summarised together, stacked as the rows of one array
# reduced along them (XLA:CPU compiles one kernel for the lot, where one for each cost some
# 40 ms); at most this many elements in a stack, a copy that costs memory
SHARED_ELEMENTS = 2 ** 20


class Pending:
    """The summary row of a traced value, made with its body's others by `resolve`."""
    __slots__ = ("x", "full", "row")

    def __init__(self, x: Any, full: bool) -> None:
        self.x, self.full, self.row = x, full, None


def resolve(pending: list[Pending]) -> None:
    """Set each pending row: the values of one size (and budget) stacked and reduced
    together, SHARED_ELEMENTS elements at most at a time."""
    alike: dict[tuple[int, bool], list[Pending]] = {}
    for p in pending:
        if p.row is None:
            alike.setdefault((p.x.size, p.full), []).append(p)
    for (n, full), group in alike.items():
        per = max(1, SHARED_ELEMENTS // n)
        for k in range(0, len(group), per):
            _stacked_rows(group[k:k + per], full)


def _stacked_rows(group: list[Pending], full: bool) -> None:
    if len(group) == 1:
        group[0].row = _traced_row(group[0].x, kind_of(group[0].x), full)
        return
    xs = jax.lax.optimization_barrier(tuple(p.x for p in group))    # as in _traced_row
    stack = jnp.stack([(jnp.abs(x) if jnp.iscomplexobj(x) else x).astype(jnp.float32)
                       .ravel() for x in xs])
    rows = jax.vmap(lambda x: _traced_row(x, FLOAT, full))(stack)
    for p, r in zip(group, rows):
        p.row = r


def over_iterations(rows: Any, reverse: bool = False) -> Any:
    """Rows stacked over a loop's iterations ([L, V, WIDTH]) as one row per value: sums,
    the pooled spread (Chan's), the range, and the first iteration (by position along
    the scanned axis) each went non-finite. On the host where `rows` is (no compile)."""
    xp, length = _xp(rows), rows.shape[0]
    count = rows[..., FINITE]
    sums = rows[..., SUM]
    fin = count.sum(0)
    with np.errstate(all="ignore"):     # a diverging loop's spread is inf: no warning
        mean = sums.sum(0) / xp.maximum(fin, 1.0)
        own = sums / xp.maximum(count, 1.0)
        m2 = (rows[..., M2] + xp.where(count > 0, count * (own - mean) ** 2, 0.0)).sum(0)
    return _with(rows.sum(0), {M2: m2, MIN: rows[..., MIN].min(0),
                               MAX: rows[..., MAX].max(0),
                               **{col: first_iteration(rows[..., col] >= 0, reverse, length)
                                  for col in (BAD_AT, NAN_AT)}})


def first_iteration(flags: Any, reverse: bool, length: int) -> Any:
    """The first iteration run (`reverse`: counted from the end) where `flags` ([L, ...])
    holds, as its position along the loop's axis; -1 where none does."""
    xp = _xp(flags)
    order = flags[::-1] if reverse else flags
    t = xp.argmax(order, axis=0)
    where = (length - 1 - t) if reverse else t
    return xp.where(order.any(0), where, -1).astype(np.float32)


def _xp(*arrays: Any) -> Any:
    return jnp if any(_compat.is_tracer(a) for a in arrays) else np


def _with(rows: Any, cols: dict[int, Any]) -> Any:
    """`rows` ([V, WIDTH]) with the columns `cols` holds in place of its own."""
    return _xp(rows, *cols.values()).stack(
        [cols[c] if c in cols else rows[:, c] for c in range(WIDTH)], axis=-1)


def born_flags(out_rows: list, in_rows: list) -> Any:
    """[born, nan born] for one equation: an output non-finite (holding NaN) while no
    input is (holds NaN); 0 where born, -1 where not (an iteration, once in a loop)."""
    xp = jnp if any(_compat.is_tracer(r) for r in out_rows + in_rows) else np
    if not out_rows or any(r is None for r in out_rows + in_rows):   # one not summarised
        return xp.asarray([-1.0, -1.0], np.float32)
    outs = xp.stack(out_rows)
    ins = xp.stack(in_rows) if in_rows else xp.full((1, WIDTH), -1.0, np.float32)
    born = (outs[:, BAD_AT] >= 0).any() & ~(ins[:, BAD_AT] >= 0).any()
    nan = (outs[:, NAN_AT] >= 0).any() & ~(ins[:, NAN_AT] >= 0).any()
    return xp.where(xp.stack([born, nan]), 0.0, -1.0).astype(np.float32)


def born_all(equations: list[tuple[list, list]]) -> list:
    """`born_flags` of each (output rows, input rows) in a traced body at once: the rows'
    flags in one array, pooled per equation by segment sums (XLA compiles a few kernels,
    not some for each equation)."""
    out: list = [jnp.asarray([-1.0, -1.0], np.float32)] * len(equations)
    live = [j for j, (outs, ins) in enumerate(equations)
            if outs and all(r is not None for r in outs + ins)]
    if not live:
        return out
    refs: dict[int, int] = {}
    rows: list = []
    pairs: dict[bool, tuple[list, list]] = {True: ([], []), False: ([], [])}
    for e, j in enumerate(live):
        for is_out, part in ((True, equations[j][0]), (False, equations[j][1])):
            for r in part:
                if id(r) not in refs:
                    refs[id(r)] = len(rows)
                    rows.append(r)
                pairs[is_out][0].append(e)
                pairs[is_out][1].append(refs[id(r)])
    flags = (jnp.stack([jnp.asarray(r, jnp.float32) for r in rows])[:, [BAD_AT, NAN_AT]]
             >= 0).astype(jnp.float32)

    def seen(eqs: list, at: list) -> Any:
        if not at:
            return jnp.zeros((len(live), 2), bool)
        return jax.ops.segment_sum(flags[np.asarray(at)], np.asarray(eqs, np.int32),
                                   len(live), indices_are_sorted=True) > 0

    born = jnp.where(seen(*pairs[True]) & ~seen(*pairs[False]), 0.0, -1.0) \
        .astype(np.float32)
    for e, j in enumerate(live):
        out[j] = born[e]
    return out




def over_devices(rows: Any) -> Any:
    """Rows of each device's block ([D, V, WIDTH]) as the global value's: pooled as a
    loop's iterations are, each iteration the earliest any device saw."""
    return _with(over_iterations(rows), {col: earliest(rows[..., col])
                                         for col in (BAD_AT, NAN_AT)})


def earliest(at: Any) -> Any:
    """The smallest non-negative entry along axis 0, else -1."""
    xp, seen = _xp(at), at >= 0
    return xp.where(seen.any(0), xp.where(seen, at, xp.inf).min(0), -1.0)


def accumulate(acc: Any, rows: Any, t: Any) -> Any:
    """A while loop's rows so far, with this iteration's (`t`) pooled in."""
    return _with(over_iterations(jnp.stack([acc, rows])), {
        col: jnp.where(acc[:, col] >= 0, acc[:, col], jnp.where(rows[:, col] >= 0, t, -1.0))
        for col in (BAD_AT, NAN_AT)})
