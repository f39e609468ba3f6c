"""The scope being analysed (`_Ctx`): what the interpreter and every rule mixin pass around.

Kept apart from the mixins so that each of them can name it without importing the
`Interpreter` they are composed into.
"""
from __future__ import annotations

from .values import AV, FuncInfo


class _Ctx:
    """One scope being analysed: the module, or one function body."""

    __slots__ = ("env", "fn", "traced", "staged", "params", "locals", "declared", "parent",
                 "static_params", "returns")

    def __init__(self, fn: FuncInfo | None = None, parent: "_Ctx | None" = None,
                 traced=False, staged=False):
        self.env: dict[str, AV] = {}
        self.fn = fn
        self.parent = parent
        self.traced = traced
        self.staged = staged
        self.params: set[str] = set()
        self.locals: set[str] = set()
        self.declared: dict[str, str] = {}     # name -> "global" | "nonlocal"
        self.static_params: set[str] = set()
        self.returns: list[AV] = []            # the values of its `return` statements


def _scope(ctx: _Ctx):
    """The lexical scope node of `ctx` (None: the module)."""
    return ctx.fn.node if ctx.fn is not None else None
