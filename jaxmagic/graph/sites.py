"""The user's line behind an equation and behind a call: what a node's location, a
call's hover and the search name. Read from the source frames JAX records per equation,
past JAX's and installed libraries' own frames (`core.calltree` says which are whose).
"""
from __future__ import annotations

import functools
import linecache
import os
from typing import Any, Callable

from .. import _compat
from ..core import calltree
from .model import Cluster, Draft, Site, base_label


def equation_site(eqn: Any, is_library_file: Callable[[str], bool]) -> Site:
    """The user's line: the innermost frame outside JAX and installed libraries (Optax's
    `<lambda>:398` tells a reader nothing); the library's line inside it, for tooltips."""
    lib = next(_compat.source_frames(eqn), None)
    src = lib if lib is None or not is_library_file(lib[0]) else \
        next(_compat.source_frames(eqn, skip=is_library_file), None)
    if src is None:
        return Site()
    where, text = where_text(*src)
    if not _compat.is_user_file(lib[0]):
        text += f"  (in {lib[2]}, {os.path.basename(lib[0])}:{lib[1]})"
    return Site(where, text, src[0])


@functools.lru_cache(maxsize=4096)
def where_text(file: str, line: int, func: str) -> tuple[str, str]:
    text = linecache.getline(file, line).strip()
    func = _function_name(func) if func and func != "<module>" else os.path.basename(file)
    return f"{func}:{line}", text


def _function_name(qualname: str) -> str:
    """A method with its class (`Attention.__call__`: three classes share `__call__`),
    a function by its name; the functions it is defined in left out (JAX's frames carry
    the code's `co_qualname`, `make.<locals>.Attention.__call__`)."""
    return ".".join(qualname.rsplit(".<locals>.", 1)[-1].split(".")[-2:])


def call_frame(b: Draft, c: Cluster, exact: bool = False) \
        -> tuple[str, int, str] | None:
    """(file, line, function) of the user's frame that calls scope `c`; failing that
    (a named scope, which no function's frame shows), its first line unless `exact`."""
    first = first_equation(b, c)
    if first is None:
        return None
    skip = calltree.library_dirs()
    frames = [f for f in _compat.source_frames(first) if not f[0].startswith(skip)]
    label = base_label(c.label)
    inside = [k for k, f in enumerate(frames) if label in f[2].split(".")]
    if inside and inside[0] + 1 < len(frames):
        return frames[inside[0] + 1]
    return None if exact or not frames else frames[0]


def first_equation(b: Draft, c: Cluster) -> Any:
    """The first equation in walk order in `c` or a call inside it, or None."""
    below = [c.id]
    while below:
        x = below.pop(0)
        if x in b.first_eqn:
            return b.first_eqn[x]
        below = [j for kind, j in b.order.get(x, ()) if kind == "c"] + below
    return None


def call_sites(b: Draft) -> None:
    """Each recorded call's `site`: the user's line that calls it, which its hover and
    search name (a line inside it says where its first equation is, not the call)."""
    for c in b.clusters.values():
        f = call_frame(b, c, exact=True) if c.kind == "scope" else None
        if f:
            c.site = Site(*where_text(*f), f[0])
