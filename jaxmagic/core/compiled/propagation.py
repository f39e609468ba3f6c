"""The sharding the compiler chose for every value, read from the analysis compile's
program after sharding propagation (before partitioning), in the form `jax.make_jaxpr`
prints an Explicit mesh's types: `f32[256@data,1024@model]`.

On an Auto mesh the jaxpr's types carry no sharding; XLA propagates one to every
instruction. Each equation's output is the last instruction tagged with it whose shape is
the output's. A sharding is written either against a mesh (`{mesh['x'=2], [{'x'}, {}]}`,
Shardy on newer releases) or as a tile assignment (`{devices=[2,1,4]<=[8]
last_tile_dim_replicate}`), which is turned back into a spec by trying the ways the mesh's
axes can tile the dimensions.
"""
from __future__ import annotations

import functools
import itertools
import math
import re
from typing import Any

import numpy as np

from ... import _compat
from ..cost import walk
from ..jaxprs import aval_str
from ..reshard import Spec, from_partitions, full
from ..reshard import has_spec as _has_spec
from . import hlo


def value_types(analysis: Any, traced: Any, names: tuple[str, ...],
                sizes: tuple[int, ...], typed_too: bool = False) -> dict[Any, str]:
    """{jaxpr variable: typed text} for each equation output the dump gives a sharding
    for; variables whose type already carries one (Explicit meshes) are left out unless
    `typed_too`."""
    return {v: typed_text(v.aval, spec)
            for v, spec in value_specs(analysis, traced, names, sizes).items()
            if typed_too or not _typed(v.aval)}


def _typed(aval: Any) -> bool:
    """The jaxpr's own type says how the value is sharded: a dimension's mesh axes, or
    reduced, unreduced or varying axes (`f32[2,2]{U:X}`) that the compiler's propagated
    sharding does not write: JAX's text stands."""
    return _has_spec(aval) or _compat.typed_aval_str(aval) != aval_str(aval)


def value_specs(analysis: Any, traced: Any, names: tuple[str, ...],
                sizes: tuple[int, ...]) -> dict[Any, Spec]:
    """{jaxpr variable: the mesh axes of each dimension} for each equation output the
    dump gives a sharding for."""
    if not analysis.before_partitioning or not names:
        return {}
    program = hlo.parse(analysis.before_partitioning)
    by_tag: dict[int, list[hlo.Instruction]] = {}
    for ins in program.values():       # program order: the last one wins
        if ins.tags:
            by_tag.setdefault(ins.tags[-1], []).append(ins)
    out: dict[Any, Spec] = {}
    for index, eqn, *_ in walk(traced.jaxpr):
        candidates = by_tag.get(index, [])
        for k, v in enumerate(eqn.outvars):
            if _compat.is_dropvar(v):
                continue
            ins = _producer(candidates, v.aval, k, len(eqn.outvars))
            spec = spec_of(ins.attr("sharding"), names, sizes) if ins else None
            if spec is not None:
                out[v] = full(spec, v.aval)
    return out


def input_types(traced: Any, args: list) -> dict[Any, str]:
    """{input variable: typed text} from the arguments' own NamedShardings."""
    return {v: typed_text(v.aval, spec) for v, spec in input_specs(traced, args).items()
            if not _typed(v.aval)}


def input_specs(traced: Any, args: list) -> dict[Any, Spec]:
    """{input variable: the mesh axes of each dimension} from the arguments' own
    NamedShardings."""
    out = {}
    for v, a in zip(_compat.open_jaxpr(traced.jaxpr).invars, args):
        spec = getattr(getattr(a, "sharding", None), "spec", None)
        if spec is not None:
            out[v] = full(from_partitions(spec), v.aval)
    return out


def _producer(candidates: list, aval: Any, k: int, n: int):
    """The instruction holding output `k` of `n`: the last one of the output's shape."""
    dims = ",".join(map(str, getattr(aval, "shape", ())))
    same = [i for i in candidates if re.match(r"\w+\[" + dims + r"\]", i.shape)]
    if n > 1 and len(same) >= n:
        return same[len(same) - n + k]
    return same[-1] if same else None


def typed_text(aval: Any, spec: Spec) -> str:
    """`f32[256@data,1024]`: the type with each dimension's mesh axes, as JAX prints."""
    base = aval_str(aval)
    shape = getattr(aval, "shape", ())
    if not any(spec) or len(spec) != len(shape):
        return base
    dims = [str(d) if not axes else
            f"{d}@{axes[0]}" if len(axes) == 1 else f"{d}@({','.join(axes)})"
            for d, axes in zip(shape, spec)]
    return base[:base.index("[")] + "[" + ",".join(dims) + "]"


@functools.lru_cache(maxsize=512)
def spec_of(text: str | None, names: tuple[str, ...], sizes: tuple[int, ...]) -> Spec | None:
    """The per-dimension mesh axes of an HLO sharding, or None when it is not one array
    tiled over this mesh (a tuple, a manual or maximal sharding)."""
    if not text:
        return None
    text = text.strip()
    if text == "{replicated}":
        return ()
    m = re.match(r"\{mesh\[[^\]]*\],\s*\[(.*)\]", text)
    if m:
        return tuple(tuple(re.findall(r"'([^']*)'", dim))
                     for dim in re.findall(r"\{([^}]*)\}", m.group(1)))
    m = re.fullmatch(r"\{devices=(\[[\d,]+\])(\S+)( last_tile_dim_replicate)?\}", text)
    if m is None:
        return None
    tiles = [int(d) for d in m.group(1)[1:-1].split(",")]
    arr = hlo.iota_devices(m.group(1) + m.group(2))
    if arr is None:
        ids = [int(d) for d in m.group(2).split(",") if d]
        if len(ids) != math.prod(tiles):
            return None
        arr = np.array(ids).reshape(tiles)
    ndim = len(tiles) - (1 if m.group(3) else 0)
    return _search(arr, tiles, ndim, names, sizes)


def _search(arr: np.ndarray, tiles: list[int], ndim: int, names: tuple[str, ...],
            sizes: tuple[int, ...]) -> Spec | None:
    """The spec whose tile assignment over the mesh is `arr` (device id = mesh position)."""
    if arr.size != math.prod(sizes):
        return None
    mesh = np.arange(arr.size).reshape(sizes)
    live = [a for a in range(len(sizes)) if sizes[a] > 1]     # size-1 axes tile nothing
    for order in itertools.permutations(live):
        for slots in itertools.product(range(ndim + 1), repeat=len(live)):
            where = dict(zip(live, slots))
            dims = [[a for a in order if where[a] == d] for d in range(ndim + 1)]
            dims[ndim] += [a for a in range(len(sizes)) if sizes[a] == 1]
            if any(math.prod(sizes[a] for a in dims[d]) != tiles[d] for d in range(ndim)):
                continue
            perm = [a for d in dims for a in d]
            shape = tiles[:ndim] + [math.prod(sizes[a] for a in dims[ndim])]
            if np.array_equal(mesh.transpose(perm).reshape(shape),
                              arr.reshape(shape)):
                return tuple(tuple(names[a] for a in dims[d]) for d in range(ndim))
    return None
