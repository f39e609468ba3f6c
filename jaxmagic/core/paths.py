"""Pytree key paths as Python would index them (`['params'][0].w`).

`jax.tree_util.keystr` writes a flattened index as `[<flat index 0>]` (Equinox's
`nn.State` flattens that way); a user reads `[0]`.
"""
from __future__ import annotations

from typing import Any, Iterable


def key_text(path: Iterable[Any]) -> str:
    out = []
    for k in path:
        if hasattr(k, "key"):        # DictKey, FlattenedIndexKey
            out.append(f"[{k.key!r}]")
        elif hasattr(k, "idx"):      # SequenceKey
            out.append(f"[{k.idx}]")
        elif hasattr(k, "name"):     # GetAttrKey
            out.append(f".{k.name}")
        else:
            out.append(str(k))
    return "".join(out)
