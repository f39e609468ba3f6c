"""Which call of which function or module each equation came from.

While a function is traced, `recording()` watches Python calls (`sys.setprofile`) and
opens one JAX name-stack scope per call instance of
  * a function defined in the user's code (a notebook cell or the user's own files, not
    site-packages, the standard library, JAX or jaxmagic), and
  * the `__call__` of a Flax NNX / Linen, Equinox or Haiku module (matched by the
    libraries' public base classes, and only when the user has imported the library).
Scopes are named `label #k` (the k-th call of `label` in its parent call), so every call
instance is its own group; JAX adds `jvp`/`transpose`/`vmap` around them by itself.
"""
from __future__ import annotations

import functools
import os
import re
import site
import sys
import sysconfig
from contextlib import contextmanager
from typing import Any, Iterator

from .. import _compat

_MODULE_BASES = (("flax.nnx", "Module"), ("flax.linen", "Module"),
                 ("equinox", "Module"), ("haiku", "Module"))
_INSTANCE = re.compile(r"^(.*) #(\d+)$")


def scope_name(label: str, k: int) -> str:
    return f"{label} #{k}"


def parse(name: str) -> tuple[str, int] | None:
    """(label, instance) of a scope this module opened, else None (a user's named_scope)."""
    m = _INSTANCE.match(name)
    return (m.group(1), int(m.group(2))) if m else None


_LIBRARIES = ("jax", "jaxlib", "numpy", "flax", "equinox", "haiku", "optax")


def library_dirs() -> tuple[str, ...]:
    """Where installed code lives (site-packages, the standard library, jaxmagic, and the
    model libraries wherever they are): calls from there are not the user's."""
    return _library_dirs(tuple(m for m in _LIBRARIES if m in sys.modules))


@functools.lru_cache(maxsize=8)
def _library_dirs(loaded: tuple[str, ...]) -> tuple[str, ...]:
    dirs = set(site.getsitepackages() + [site.getusersitepackages()])
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        dirs.add(sysconfig.get_path(key))
    dirs.add(os.path.dirname(os.path.abspath(_compat.__file__)))
    for mod in loaded:
        file = getattr(sys.modules.get(mod), "__file__", None)
        if file:
            dirs.add(os.path.dirname(file))
    paths = {os.path.abspath(d) for d in dirs if d} | {os.path.realpath(d) for d in dirs if d}
    return tuple(sorted(d + "/" for d in paths))


def _module_bases() -> tuple[type, ...]:
    bases = []
    for mod, name in _MODULE_BASES:
        m = sys.modules.get(mod)
        base = getattr(m, name, None) if m is not None else None
        if isinstance(base, type):
            bases.append(base)
    return tuple(bases)


_SKIP_FLAGS = 0x20 | 0x80 | 0x100 | 0x200    # generators and coroutines: no call/return pairs


class _Recorder:
    def __init__(self) -> None:
        self.library = library_dirs()
        self.bases = _module_bases()
        self.user_code: dict[Any, bool] = {}    # code object → defined in the user's code
        self.open: dict[Any, tuple[Any, str]] = {}   # frame → (scope, label)
        self.stack: list[str] = []
        self.counts: dict[tuple, int] = {}

    def _is_user(self, code) -> bool:
        found = self.user_code.get(code)
        if found is None:
            file = code.co_filename
            if code.co_name.startswith("<") or code.co_flags & _SKIP_FLAGS:
                found = False
            elif file.startswith("<"):
                found = not file.startswith("<frozen")    # a cell, exec'd source
            else:
                found = not os.path.realpath(file).startswith(self.library)
            self.user_code[code] = found
        return found

    def _label(self, frame) -> str | None:
        code = frame.f_code
        if code.co_name == "__call__":
            this = frame.f_locals.get("self") if code.co_argcount else None
            if this is not None and (self.bases and isinstance(this, self.bases)
                                     or self._is_user(code)):
                return type(this).__name__
            return None
        return code.co_name if self._is_user(code) else None

    def enter(self, frame) -> bool:
        """Open a scope if `frame` starts a call we record; False if it never will."""
        label = self._label(frame)
        if label is None:
            return False
        key = (tuple(self.stack), label)
        k = self.counts.get(key, 0)
        self.counts[key] = k + 1
        scope = _compat.name_scope(scope_name(label, k))
        scope.__enter__()
        self.open[frame] = (scope, label)
        self.stack.append(scope_name(label, k))
        return True

    def leave(self, frame) -> None:
        entry = self.open.pop(frame, None)
        if entry is not None:
            entry[0].__exit__(None, None, None)
            self.stack.pop()

    def close(self) -> None:
        while self.open:      # a call still open when recording stops (an exception)
            _, (scope, _) = self.open.popitem()
            scope.__exit__(None, None, None)

    def profile(self, frame, what: str, arg: Any) -> None:
        """`sys.setprofile` hook (Python < 3.12)."""
        if what == "call":
            self.enter(frame)
        elif what == "return":
            self.leave(frame)


@contextmanager
def _monitoring(rec: _Recorder) -> Iterator[None]:
    """`sys.monitoring` (3.12+): code objects that never start a scope are switched off
    after their first call, so tracing runs at nearly full speed."""
    mon = sys.monitoring
    tool = next((t for t in (mon.PROFILER_ID, 3, 4, 5) if mon.get_tool(t) is None), None)
    if tool is None:        # every tool slot taken (profilers, debuggers): no call tree
        yield
        return
    ev = mon.events
    user_calls = set()      # code objects that may start a scope (user functions, __call__)

    def start(code, offset):
        if rec.enter(sys._getframe(1)) or code.co_name == "__call__":
            user_calls.add(code)
            return None
        return mon.DISABLE

    def done(code, offset, value=None):
        if code not in user_calls:
            return mon.DISABLE
        rec.leave(sys._getframe(1))
        return None

    def unwind(code, offset, exc):    # PY_UNWIND cannot be switched off per code object
        if code in user_calls:
            rec.leave(sys._getframe(1))

    mon.use_tool_id(tool, "jaxmagic call tree")
    try:
        mon.restart_events()
        mon.register_callback(tool, ev.PY_START, start)
        mon.register_callback(tool, ev.PY_RETURN, done)
        mon.register_callback(tool, ev.PY_UNWIND, unwind)
        mon.set_events(tool, ev.PY_START | ev.PY_RETURN | ev.PY_UNWIND)
        yield
    finally:
        mon.set_events(tool, 0)
        mon.free_tool_id(tool)


@contextmanager
def recording() -> Iterator[None]:
    """Name every user-function and module call traced inside the block (see module doc)."""
    rec = _Recorder()
    try:
        if hasattr(sys, "monitoring"):
            with _monitoring(rec):
                yield
        else:
            previous = sys.getprofile()
            sys.setprofile(rec.profile)
            try:
                yield
            finally:
                sys.setprofile(previous)
    finally:
        rec.close()
