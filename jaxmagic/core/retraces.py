"""JAX's own explanation of each trace-cache miss, captured for one measurement only.

`jax_explain_cache_misses` logs why jit traced a function again; `CacheMisses` turns it on,
collects its records by phase, and restores the flag, the loggers and the garbage
collector afterwards, also on error and Ctrl-C.
"""
from __future__ import annotations

import gc
import logging
import re

import jax

from .. import _compat


class MissLog(logging.Handler):
    """Collects JAX's TRACING CACHE MISS explanations, per phase."""

    def __init__(self, forward: bool):
        super().__init__(logging.DEBUG)
        self.records: list[tuple[str, str]] = []
        self.phase = ""
        self.forward = forward

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:
            return
        if "CACHE MISS" in msg:
            if not _compat.from_fresh_traces(msg):     # ours, not the user's
                self.records.append((self.phase, msg))
            if not self.forward:
                return
        parent = logging.getLogger(record.name).parent
        if parent is not None:
            parent.handle(record)


class CacheMisses:
    """Turn on jax_explain_cache_misses and capture its log for one measurement only."""

    FLAG = "jax_explain_cache_misses"

    def __enter__(self):
        self.before = bool(_compat.config_flag(self.FLAG))
        self.log = MissLog(forward=self.before)
        self.loggers = []
        for name in _compat.CACHE_MISS_LOGGERS:
            lg = logging.getLogger(name)
            self.loggers.append((lg, lg.propagate))
            lg.addHandler(self.log)
            lg.propagate = False
        self.gc_was = gc.isenabled()
        if _compat.EXPLAINER_NEEDS_GC_OFF:
            gc.disable()
        self.explaining = True
        jax.config.update(self.FLAG, True)
        return self

    def stop_explaining(self) -> None:
        """JAX 0.7's explainer can assert on keys it cannot diff; measure without it."""
        self.explaining = False
        jax.config.update(self.FLAG, self.before)

    def __exit__(self, *exc):
        try:
            jax.config.update(self.FLAG, self.before)
        finally:
            for lg, prop in self.loggers:
                lg.removeHandler(self.log)
                lg.propagate = prop
            if self.gc_was:
                gc.enable()
        return False


def clean_miss(msg: str) -> str:
    """Drop the header's call site when it is jaxmagic's own line, keep the reason."""
    lines = msg.splitlines()
    head = lines[0] if lines else msg
    if any(own in head for own in ("jaxmagic", "timing.py", "timeloop.py")):
        head = "TRACING CACHE MISS"
    head = re.sub(r" costing [\d.]+ ms because:?$", ":", head)
    return "\n".join([head] + [ln for ln in lines[1:]])
