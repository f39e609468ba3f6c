"""What each equation costs, estimated from shapes: flops and bytes, per equation and group.

The numbers follow XLA's HloCostAnalysis where the two can be compared: `dot_general` is
2·M·N·K (times the batch), a convolution 2 flops per multiply-add of its window, a
reduction one flop per input element, an elementwise op one per output element, and data
movement (reshape, transpose, slice, gather, convert…) none. Bytes are the bytes read and
written: every non-literal input plus every output; a collective (psum, all_gather,
ppermute…) does no arithmetic here and moves the larger of its input and its output, per
device (its avals inside shard_map are per device). Equations inside a scan body count
once per iteration; a while body's trip count is unknown and counts once; each cond
branch counts as if it ran.

Equations are numbered in the order `graph.build` walks them (pre-order, nested jaxprs
after the equation that holds them), the numbering `Node.eqns` records.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import numpy as np

from .. import _compat
from ..graph.model import ancestors
from ..graph.repeats import series_title
from .jaxprs import COLLECTIVES, NO_DATA

# Primitives that move or reinterpret data without arithmetic.
MOVEMENT = frozenset({
    "reshape", "broadcast_in_dim", "transpose", "squeeze", "expand_dims", "slice",
    "dynamic_slice", "dynamic_update_slice", "gather", "scatter", "concatenate", "pad",
    "convert_element_type", "bitcast_convert_type", "copy", "copy_p", "iota", "rev",
    "device_put", "stop_gradient", "reduce_precision", "split", "select_and_scatter",
    "optimization_barrier", "sharding_constraint", "mesh_cast", "pvary", "squeeze_p",
    "full_like", "empty", "random_bits", "random_seed", "random_wrap", "random_unwrap",
    "threefry2x32", "shard_map", "broadcast", "tie_in", "axis_index", "copy_to_host_async",
})
REDUCTIONS = frozenset({
    "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
    "reduce_xor", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin",
    "cumlogsumexp", "reduce_window_sum",
    "reduce_window_max", "reduce_window_min", "reduce_window",
})
SCATTERS = frozenset({"scatter-add", "scatter_add", "scatter_mul", "scatter_min",
                      "scatter_max", "scatter_sub"})


@dataclass(frozen=True)
class EqnCost:
    """One equation in walk order, with its estimated cost per call of the whole program."""

    index: int
    primitive: str
    flops: float
    bytes: float
    times: int            # how often it runs per call (scan iterations multiply)
    parents: tuple[int, ...]   # indices of the nested-jaxpr equations around it
    is_op: bool           # a leaf equation (a graph node), not one that holds a jaxpr
    sources: tuple[int, ...] = ()   # equations (same jaxpr) that produce its inputs


# ---- walk order (the same as graph.build) ----------------------------------------------

def sub_jaxprs(eqn: Any) -> list[tuple[str, int | None]]:
    """The (param, tuple position) of each nested jaxpr `graph.build` walks, in its order."""
    prim, p = eqn.primitive.name, eqn.params
    if prim == "scan":
        return [("jaxpr", None)]
    if prim == "cond":
        return [("branches", i) for i in range(len(p["branches"]))]
    if prim == "while":
        return [("cond_jaxpr", None), ("body_jaxpr", None)]
    for k, v in p.items():
        if isinstance(v, _compat.JAXPR_TYPES):
            return [(k, None)]
        if isinstance(v, tuple) and v and isinstance(v[0], _compat.JAXPR_TYPES):
            return [(k, None)]
    return []


def sub_jaxpr(eqn: Any, key: str, pos: int | None):
    """The nested jaxpr `sub_jaxprs(eqn)` names by (key, position)."""
    v = eqn.params[key]
    return v[pos] if pos is not None else v


def walk(jaxpr: Any) -> Iterator[tuple[int, Any, int, tuple[int, ...], tuple[int, ...]]]:
    """(index, equation, runs per call, enclosing equation indices, equations feeding it)
    in graph walk order."""
    counter = [0]

    def go(j, times: int, parents: tuple[int, ...]):
        producer: dict = {}
        for eqn in _compat.open_jaxpr(j).eqns:
            i = counter[0]
            counter[0] += 1
            sources = tuple(sorted({producer[v] for v in eqn.invars
                                    if not _compat.is_literal(v) and v in producer}))
            for v in eqn.outvars:
                producer[v] = i
            yield i, eqn, times, parents, sources
            inner = times * (int(eqn.params["length"]) if eqn.primitive.name == "scan"
                             else 1)
            for key, pos in sub_jaxprs(eqn):
                sub = sub_jaxpr(eqn, key, pos)
                if isinstance(sub, tuple):     # graph.build does not walk these either
                    continue
                yield from go(sub, inner, parents + (i,))

    yield from go(jaxpr, 1, ())


# ---- per-equation estimates ------------------------------------------------------------

def _size(aval: Any) -> int:
    return int(np.prod(getattr(aval, "shape", ()) or (), dtype=np.int64))


def _nbytes(aval: Any) -> int:
    dtype = getattr(aval, "dtype", None)
    try:
        itemsize = np.dtype(dtype).itemsize
    except TypeError:        # key types, tokens: no plain itemsize
        itemsize = 0
    return _size(aval) * itemsize


def flops_of(eqn: Any) -> float:
    """Flops of one execution of a leaf equation."""
    prim, p = eqn.primitive.name, eqn.params
    outs = sum(_size(v.aval) for v in eqn.outvars)
    if is_communication(prim):
        return 0.0
    if prim == "dot_general":
        (lc, _), _ = p["dimension_numbers"]
        shape = eqn.invars[0].aval.shape
        k = math.prod(shape[d] for d in lc)
        return 2.0 * outs * k
    if prim == "conv_general_dilated":
        rhs = eqn.invars[1].aval.shape
        out_feature = p["dimension_numbers"].rhs_spec[0]
        per_output = _size(eqn.invars[1].aval) // max(1, rhs[out_feature])
        return 2.0 * outs * per_output / max(1, p.get("batch_group_count", 1))
    if prim in REDUCTIONS:
        return float(sum(_size(v.aval) for v in eqn.invars if not _compat.is_literal(v)))
    if prim in SCATTERS:
        return float(_size(eqn.invars[-1].aval))
    if prim == "sort":
        n = eqn.invars[0].aval.shape[p.get("dimension", -1)] if eqn.invars[0].aval.shape \
            else 1
        return float(_size(eqn.invars[0].aval) * max(1.0, math.log2(max(n, 1))))
    if prim == "integer_pow":
        return float(outs * max(1, abs(int(p["y"])).bit_length()))
    if prim in MOVEMENT or prim.startswith(("custom_call", "pure_callback", "io_callback")):
        return 0.0
    return float(outs)       # elementwise: one flop per output element


def is_communication(prim: str) -> bool:
    """A collective that moves data between devices (not a pcast or axis_index)."""
    return prim in COLLECTIVES and prim not in NO_DATA


def bytes_of(eqn: Any) -> float:
    """Bytes one execution reads and writes (literals are folded into the program); for a
    collective, the bytes it moves per device."""
    if is_communication(eqn.primitive.name):
        return float(max([_nbytes(v.aval) for v in [*eqn.invars, *eqn.outvars]
                          if not _compat.is_literal(v)], default=0))
    ins = sum(_nbytes(v.aval) for v in eqn.invars if not _compat.is_literal(v))
    return float(ins + sum(_nbytes(v.aval) for v in eqn.outvars))


def estimate(jaxpr: Any) -> list[EqnCost]:
    """Every equation of `jaxpr` (nested ones included) with its cost per call."""
    out = []
    for i, eqn, times, parents, sources in walk(jaxpr):
        op = not sub_jaxprs(eqn)
        flops = flops_of(eqn) * times if op else 0.0
        nbytes = bytes_of(eqn) * times if op else 0.0
        out.append(EqnCost(i, eqn.primitive.name, flops, nbytes, times, parents, op,
                           sources))
    return out


# ---- rows: the data `view.costs` holds -----------------------------------------------------

@dataclass
class CostRow:
    """One equation: what it costs, where the user wrote it, which group it belongs to."""

    index: int
    primitive: str
    flops: float
    bytes: float
    seconds: float | None      # measured device time per call (None: not profiled)
    share: float               # of the measured time (or, unprofiled, of the flops)
    where: str                 # the user's function and line, "loss:12"
    group: str                 # the chain of groups around it, "jit: layer › scan"
    clusters: tuple[int, ...] = ()   # the graph's cluster ids of that chain
    parents: tuple[int, ...] = ()    # enclosing nested-jaxpr equations
    split: bool = False        # its time is a share of a fusion with other equations
    is_op: bool = True         # False: a scan/jit/… equation, its loop or call overhead
    backward: bool = False     # emitted by reverse-mode differentiation
    series: str = ""           # `group` as drawn: a repeated call named for its series,
    #                            "block ×16 · backward" for each of the 16 calls
    collective: bool = False   # a collective's own row (`--sharding --profile`): the time
    #                            it spent moving data, apart from its equation's compute


def line_of(row: CostRow | None, graph: Any) -> str:
    """The user's line of a row's equation, or of the innermost group around it that has
    one (an equation inside `jnp.std`'s own jit names no line of its own)."""
    if row is None:
        return ""
    if row.where:
        return row.where
    return next((graph.clusters[c].where for c in reversed(row.clusters)
                 if graph.clusters[c].where), "")


def rows(graph: Any, estimates: list[EqnCost], seconds: dict[int, float] | None = None,
         split: Iterable[int] = ()) -> list[CostRow]:
    """One row per op equation (and per nested-jaxpr equation that took time).

    `graph` is the full graph (`graph.build`): its op nodes name each equation's line and
    cluster chain. Shares are of the measured time when `seconds` is given, else of flops.
    """
    split = set(split)
    nodes = {n.eqns[0]: n for n in graph.nodes.values() if n.kind == "op" and n.eqns}
    chains = {i: tuple(ancestors(graph, n.cluster)) for i, n in nodes.items()}
    total = sum(seconds.values()) if seconds else sum(e.flops for e in estimates)
    out = []
    for e in estimates:
        node = nodes.get(e.index)
        if node is None:
            if not seconds or not seconds.get(e.index):
                continue
            inner = [chains[i] for i in chains if e.index in _parents(estimates, i)]
            chain, where = _common_prefix(inner), ""
        else:
            chain, where = chains[e.index], node.where
        value = seconds.get(e.index, 0.0) if seconds else e.flops
        out.append(CostRow(
            e.index, e.primitive, e.flops, e.bytes,
            None if seconds is None else seconds.get(e.index, 0.0),
            value / total if total else 0.0, where,
            _group_name(graph, chain), chain, e.parents,
            e.index in split, e.is_op, bool(node and node.backward),
            _group_name(graph, chain, series=True)))
    return out


def _group_name(graph: Any, chain: tuple[int, ...], series: bool = False) -> str:
    """"layer #3 › attention": the chain's titles below the traced function itself (level
    0, the whole program, is no group to name); with `series`, each call of a repeated
    series under the series' title, "layer ×16 › attention", as `repeats.fold` draws it."""
    def title(c: int) -> str:
        if not series or c not in graph.series:
            return graph.clusters[c].title
        return series_title(graph.clusters[graph.series[c][0]])

    return " › ".join(title(c) for c in chain if graph.clusters[c].level > 0)


def _parents(estimates: list[EqnCost], index: int) -> tuple[int, ...]:
    return estimates[index].parents if index < len(estimates) else ()


def _common_prefix(chains: list[tuple[int, ...]]) -> tuple[int, ...]:
    if not chains:
        return ()
    first = chains[0]
    n = len(first)
    for c in chains[1:]:
        n = min(n, next((k for k, (a, b) in enumerate(zip(first, c)) if a != b),
                        min(len(first), len(c))))
    return first[:n]
