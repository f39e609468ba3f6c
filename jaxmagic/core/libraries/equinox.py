"""Equinox: `eqx.filter_jit` wrappers. Modules are pytrees and need nothing special."""
from __future__ import annotations

from typing import Any, Callable


def unwrap_jit(f: Any) -> Callable | None:
    """The function inside an `eqx.filter_jit` wrapper (equinox's private `_JitWrapper`)."""
    if type(f).__name__ == "_JitWrapper" and type(f).__module__.startswith("equinox"):
        return getattr(f, "__wrapped__", None)
    return None
