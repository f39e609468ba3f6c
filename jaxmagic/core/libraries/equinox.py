"""Equinox: `eqx.filter_jit` wrappers, and the name scopes its layers open. Modules are
pytrees and need nothing special."""
from __future__ import annotations

from typing import Any, Callable


def unwrap_jit(f: Any) -> Callable | None:
    """The function inside an `eqx.filter_jit` wrapper (equinox's private `_JitWrapper`)."""
    if type(f).__name__ == "_JitWrapper" and type(f).__module__.startswith("equinox"):
        return getattr(f, "__wrapped__", None)
    return None


def jit_options(f: Any) -> dict:
    """`filter_jit(donate="all")`'s donation as an option of ours: `donate_from`, the first
    argument donated (0; 1 for "all-except-first"), every array argument after it too."""
    if not getattr(f, "donate_rest", False):
        return {}
    return {"donate_from": 0 if getattr(f, "donate_first", False) else 1}


def is_layer_scope(name: str) -> bool:
    """Equinox's own `named_scope("eqx.nn.Conv")` around a layer's `__call__` (and its base
    class's, for `super().__call__`): the call tree's `Conv2d` group already stands for it."""
    return name.startswith("eqx.nn.")
