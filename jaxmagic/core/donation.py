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


def holds_arrays(tree: Any) -> bool:
    """Whether a JAX or NumPy array is among `tree`'s leaves (what Equinox donates)."""
    return any(isinstance(x, (jax.Array, np.ndarray)) for x in jax.tree_util.tree_leaves(tree))


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


def donated_arguments(call: ArgCall, argnums: tuple, argnames: tuple, warning: str) -> list[dict]:
    """Each donated argument: its name, shape, bytes and `unusable`, the avals of its
    leaves jit could not use in place. The warning lists those avals in the order jit
    flattens the donated leaves, each the global or (sharded) one shard's: they are
    matched in order, so an argument is blamed only for leaves of its own (a model's
    PRNG keys, not its parameters; a sharded batch by its shards' shape)."""
    m = re.search(r"not usable:\s*(.*?)\.\s*(?:\n|See|$)", warning or "", re.S)
    listed = [re.sub(r"^ShapedArray\((.*)\)$", r"\1", t.strip())
              for t in m.group(1).split(", ")] if m else []
    whole = "not implemented" in (warning or "")
    donated = [(call.arg_names[i], call.args[i]) for i in argnums if i < len(call.args)]
    donated += [(call.kwarg_names.get(k, k), call.kwargs[k]) for k in argnames
                if k in call.kwargs]
    out, k = [], 0
    for name, value in donated:
        leaves = [x for x in jax.tree_util.tree_leaves(value) if hasattr(x, "dtype")]
        unusable = []
        for leaf in leaves:
            if whole or k < len(listed) and listed[k] in (aval_text(leaf), shard_text(leaf)):
                unusable.append(aval_text(leaf))
                k += not whole
        shape = aval_text(leaves[0]) if len(leaves) == 1 else f"{len(leaves)} arrays"
        out.append({"name": name, "shape": shape, "bytes": nbytes(leaves), "leaves": len(leaves),
                    "unusable": unusable, "usable": not unusable})
    if k < len(listed):      # named otherwise than we name them: no argument is blamed
        for d in out:
            d["unusable"], d["usable"] = [], None
    return out


def copy(x: Any) -> Any:
    return jax.tree_util.tree_map(lambda a: jax.numpy.array(a, copy=True), x)


def as_traced(x: Any) -> Any:
    """A Python number as jit hands it to the function: a weakly-typed array."""
    return jax.numpy.asarray(x) if isinstance(x, (int, float, complex)) else x


def map_leaves(args: tuple, kwargs: dict, static_nums: set, static_names: set,
                 flat: set[int] | None, make: Callable = copy) -> tuple[tuple, dict]:
    """`args` and `kwargs` with the leaves at `flat` (all: None) replaced by `make(leaf)`
    (a copy), counting leaves as jit flattens the call (static arguments left out,
    keywords in sorted order)."""
    slots = [("a", i) for i in range(len(args)) if i not in static_nums] + \
        [("k", key) for key in sorted(kwargs) if key not in static_names]
    args, kwargs, start = list(args), dict(kwargs), 0
    for where, key in slots:
        box = args if where == "a" else kwargs
        leaves, tree = jax.tree_util.tree_flatten(box[key])
        if flat is None or any(start + j in flat for j in range(len(leaves))):
            box[key] = jax.tree_util.tree_unflatten(tree, [
                make(x) if flat is None or start + j in flat else x
                for j, x in enumerate(leaves)])
        start += len(leaves)
    return tuple(args), kwargs


__all__ = ["as_traced", "aval_text", "copy", "donated_arguments", "holds_arrays", "map_leaves",
           "nbytes", "shard_text"]
