"""What a call donates, and copies so that the user's buffers never reach a donating call.

jit's `donate_argnums`, a `jax.pmap`'s, or a donating jit called inside a plain function
delete the buffers they are handed; a measurement that runs the call many times gives each
run copies of those inputs. Leaves are numbered as jit flattens a call: static arguments
left out, keywords in sorted order.
"""
from __future__ import annotations

import re
from typing import Any, Callable

import jax
import numpy as np

from .arguments import ArgCall


def aval_text(x: Any) -> str:
    """`f32[3]` as jit's donation warning writes it; `key<fry>[]` for a typed PRNG key."""
    shape = ",".join(str(d) for d in np.shape(x))
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return f"{np.asarray(x).dtype.name}[{shape}]"
    return f"{dtype.name if isinstance(dtype, np.dtype) else dtype}[{shape}]"


def nbytes(tree: Any) -> int:
    """Bytes of a tree's array leaves (a typed key counts its key data)."""
    return sum(int(getattr(x, "nbytes", 0) or np.asarray(x).nbytes)
               for x in jax.tree_util.tree_leaves(tree) if hasattr(x, "dtype"))


def shard_text(x: Any) -> str:
    """`x`'s aval as jit's donation warning writes it for one device's shard (`int32[4,32]`
    for a batch of 8 split over two devices): a sharded or pmapped argument is named so."""
    sharding = getattr(x, "sharding", None)
    try:
        shape = sharding.shard_shape(np.shape(x))
    except Exception:  # noqa: BLE001 - no sharding, or one that names no shard shape
        return aval_text(x)
    return aval_text(x).split("[")[0] + f"[{','.join(str(d) for d in shape)}]"


def donated_arguments(call: ArgCall, argnums: tuple, argnames: tuple, warning: str,
                      written: dict | None = None) -> list[dict]:
    """Each donated argument: its name, shape, bytes and `unusable`, the avals of its
    leaves jit could not use in place (`usable`: none; None where neither source could
    say). XLA's own aliasing decides (`written`: position or name → whether an output
    is written into each leaf); JAX's warning only where that is not known (on an Auto
    mesh JAX 0.12 warns of nothing XLA leaves unwritten: `_from_warning`)."""
    donated = [(i, call.arg_names[i], call.args[i]) for i in argnums if i < len(call.args)]
    donated += [(k, call.kwarg_names.get(k, k), call.kwargs[k]) for k in argnames
                if k in call.kwargs]
    donated = [(key, name, [x for x in jax.tree_util.tree_leaves(v) if hasattr(x, "dtype")])
               for key, name, v in donated]
    if written is not None and "not implemented" not in (warning or "") and \
            all(len(written.get(key, ())) == len(leaves) for key, _, leaves in donated):
        unusable = {key: [aval_text(x) for x, ok in zip(leaves, written[key]) if not ok]
                    for key, _, leaves in donated}
    else:
        unusable = _from_warning(donated, warning or "")
    out = []
    for key, name, leaves in donated:
        bad = unusable.get(key) if unusable is not None else None
        out.append({"name": name, "bytes": nbytes(leaves), "leaves": len(leaves),
                    "shape": aval_text(leaves[0]) if len(leaves) == 1 else
                    f"{len(leaves)} arrays", "unusable": bad or [],
                    "usable": None if bad is None else not bad})
    return out


def _from_warning(donated: list, warning: str) -> dict | None:
    """Each donated argument's unusable avals as jit's warning lists them: in the order
    jit flattens the donated leaves, each the global or (sharded) one shard's aval, so
    matched in order an argument is blamed only for leaves of its own (a model's PRNG
    keys, not its parameters). None where the list names other leaves than there are."""
    if "not implemented" in warning:            # the backend donates nothing
        return {key: [aval_text(x) for x in leaves] for key, _, leaves in donated}
    m = re.search(r"not usable:\s*(.*?)\.\s*(?:\n|See|$)", warning, re.S)
    listed = [re.sub(r"^ShapedArray\((.*)\)$", r"\1", t.strip())
              for t in m.group(1).split(", ")] if m else []
    out, k = {}, 0
    for key, _, leaves in donated:
        out[key] = []
        for x in leaves:
            if k < len(listed) and listed[k] in (aval_text(x), shard_text(x)):
                out[key].append(aval_text(x))
                k += 1
    return out if k == len(listed) else None


def copy(x: Any) -> Any:
    return jax.tree_util.tree_map(lambda a: jax.numpy.array(a, copy=True), x)


def as_traced(x: Any) -> Any:
    """A Python number as jit hands it to the function: a weakly-typed array."""
    return jax.numpy.asarray(x) if isinstance(x, (int, float, complex)) else x


def spans(args: tuple, kwargs: dict, static_nums: set, static_names: set) -> dict:
    """Each argument's flat inputs as jit numbers them (static arguments left out,
    keywords in sorted order): position or name → range."""
    slots = [(i, args[i]) for i in range(len(args)) if i not in static_nums] + \
        [(key, kwargs[key]) for key in sorted(kwargs) if key not in static_names]
    out, start = {}, 0
    for key, value in slots:
        count = len(jax.tree_util.tree_leaves(value))
        out[key], start = range(start, start + count), start + count
    return out


def map_leaves(args: tuple, kwargs: dict, static_nums: set, static_names: set,
                 flat: set[int] | None, make: Callable = copy) -> tuple[tuple, dict]:
    """`args` and `kwargs` with the leaves at `flat` (all: None) replaced by `make(leaf)`
    (a copy), counting leaves as jit flattens the call (`spans`)."""
    args, kwargs = list(args), dict(kwargs)
    for key, span in spans(args, kwargs, static_nums, static_names).items():
        box = kwargs if isinstance(key, str) else args
        leaves, tree = jax.tree_util.tree_flatten(box[key])
        if flat is None or any(j in flat for j in span):
            box[key] = jax.tree_util.tree_unflatten(tree, [
                make(x) if flat is None or j in flat else x for j, x in zip(span, leaves)])
    return tuple(args), kwargs


__all__ = ["as_traced", "aval_text", "copy", "donated_arguments", "map_leaves", "nbytes",
           "shard_text", "spans"]
