"""Rules JX4xx: constant indices out of bounds of a known shape. JAX clamps the read or
drops the update instead of raising."""
from __future__ import annotations

import ast

from .values import AV, _int_const


class IndexingRules:
    """Mixin of `Analyzer`: out-of-bounds constant indices."""

    def _oob(self, node, base: AV, idx_node, read: bool, at_op: str | None = None,
             call=None) -> None:
        """JX401 (a read) / JX402 (an `.at[]` update) for the first constant index out of
        bounds of the known shape."""
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
