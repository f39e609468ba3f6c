"""Snapshots of everything a magic could leave changed behind it.

`GlobalState.take(shell)` records every `jax.config` value, every logger's level,
handlers, propagation and disabled flag, the warnings filters, the garbage collector,
the SIGINT handler, trace/profile functions, and the shell's hooks (event callbacks,
custom exception handler, AST transformers, input transformers, display formatters).
`diff` names whatever differs.
"""
from __future__ import annotations

import gc
import logging
import signal
import sys
import warnings
from dataclasses import dataclass

import jax


def jax_config() -> dict:
    out = {}
    for name in sorted(jax.config.values):
        try:
            out[name] = repr(getattr(jax.config, name))
        except Exception as e:          # options that cannot be read in this version
            out[name] = f"<unreadable {type(e).__name__}>"
    return out


def loggers() -> dict:
    out = {}
    items = [("", logging.getLogger())] + sorted(
        (n, lg) for n, lg in logging.root.manager.loggerDict.items()
        if isinstance(lg, logging.Logger))
    for name, lg in items:
        out[name] = (lg.level, lg.propagate, lg.disabled, tuple(map(id, lg.handlers)))
    return out


def shell_hooks(shell) -> dict:
    events = {ev: tuple(map(repr, cbs)) for ev, cbs in shell.events.callbacks.items()}
    return {
        "events": events,
        "custom_exceptions": shell.custom_exceptions,
        "CustomTB": repr(shell.CustomTB),
        "ast_transformers": tuple(map(id, shell.ast_transformers)),
        "input_transformers_post": tuple(map(id, shell.input_transformers_post)),
        "input_transformers_cleanup": tuple(map(id, shell.input_transformers_cleanup)),
        "formatters": tuple(sorted(shell.display_formatter.formatters)),
        "displayhook": repr(sys.displayhook),
        "excepthook": repr(sys.excepthook),
    }


@dataclass
class GlobalState:
    config: dict
    loggers: dict
    warnings: tuple
    gc: bool
    sigint: object
    trace: object
    profile: object
    hooks: dict

    @classmethod
    def take(cls, shell) -> "GlobalState":
        return cls(jax_config(), loggers(), tuple(map(repr, warnings.filters)),
                   gc.isenabled(), signal.getsignal(signal.SIGINT), sys.gettrace(),
                   sys.getprofile(), shell_hooks(shell))

    def diff(self, other: "GlobalState") -> list[str]:
        out = []
        for k in sorted(set(self.config) | set(other.config)):
            if self.config.get(k) != other.config.get(k):
                out.append(f"jax.config.{k}: {self.config.get(k)} -> {other.config.get(k)}")
        for k in sorted(set(self.loggers) & set(other.loggers)):    # new loggers are fine
            if self.loggers[k] != other.loggers[k]:
                out.append(f"logger {k or 'root'!r}: {self.loggers[k]} -> {other.loggers[k]}")
        for k in set(other.loggers) - set(self.loggers):
            level, _, _, handlers = other.loggers[k]
            if handlers:
                out.append(f"new logger {k!r} has handlers")
        for field in ("warnings", "gc", "sigint", "trace", "profile"):
            if getattr(self, field) != getattr(other, field):
                out.append(f"{field} changed")
        for k in self.hooks:
            if self.hooks[k] != other.hooks[k]:
                out.append(f"shell {k}: {self.hooks[k]} -> {other.hooks[k]}")
        return out


# IPython's own bookkeeping names in the user namespace
def user_names(ns: dict) -> dict:
    return {k: id(v) for k, v in ns.items() if not k.startswith("_") and k not in
            ("In", "Out", "exit", "quit", "get_ipython")}


def ns_changes(before: dict, after: dict) -> tuple[set, set, set]:
    """(added, removed, rebound) user names."""
    added = set(after) - set(before)
    removed = set(before) - set(after)
    rebound = {k for k in set(before) & set(after) if before[k] != after[k]}
    return added, removed, rebound
