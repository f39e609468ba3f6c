"""JAX's sharp bits, found before a cell runs (static) and explained after it fails
(runtime): rule ids `JX...`, a severity, the line, a message and a concrete fix.

    check_source(src)          -> list[Finding]   AST rules, no JAX needed
    Checker().check(cell, ...) -> list[Finding]   the same, remembering earlier cells
    explain(exc, src=None)     -> Finding | None  a JAX exception mapped to a rule + line
    checkified(f)              -> f run under checkify's index checks (raises on OOB)
"""
from __future__ import annotations

from .model import FAMILIES, RULES, SEVERITIES, Finding, Rule
from .notebook import CheckState, cell_source

_RUNTIME = ("checkified", "checkify_function", "explain", "run_checkified")


def __getattr__(name):
    """The runtime half on first use: the command line's static checks do without it."""
    if name in _RUNTIME:
        from . import runtime
        return getattr(runtime, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_source(src: str, *, namespace: dict | None = None, x64: bool | None = None,
                 filename: str | None = None) -> list[Finding]:
    """Static findings for `src` (a cell or a file), sorted by line.

    `namespace` (a notebook's user namespace) tells which names already hold JAX arrays
    or jitted functions; `x64` is the current `jax_enable_x64` (None: off unless `src`
    turns it on).
    """
    from .static import analyze
    found = analyze(src, namespace=namespace, x64=x64)
    if filename is not None:
        found = [f.with_(filename=filename) for f in found]
    return found


class Checker:
    """Checks notebook cells in order, carrying what earlier cells defined (imports,
    arrays, jitted functions and the globals they captured) into later ones."""

    def __init__(self) -> None:
        self.state = CheckState()
        self.count = 0

    def check(self, raw: str, *, namespace: dict | None = None, x64: bool | None = None,
              cell: str | None = None, commit: bool = True, ipython: bool = True
              ) -> list[Finding]:
        """Findings for one cell. IPython syntax (`%magic`, `!cmd`, `%%magic`) is masked
        when `ipython`; `commit=False` checks without remembering (`%%jaxcheck`)."""
        self.count += 1
        label = cell if cell is not None else f"cell {self.count}"
        if ipython:
            masked = cell_source(raw)
            if masked is None:
                return []
            src, offset = masked
        else:
            src, offset = raw, 0
        self.state.commit = commit
        from .static import analyze
        try:
            # a `%%magic` cell's lines count from its body, as IPython's tracebacks do
            found = analyze(src, namespace=namespace, x64=x64, state=self.state, cell=label)
        finally:
            self.state.commit = True
        lines = raw.split("\n")[offset:]
        out = []
        for f in found:
            where = (f.filename or label, f.rule, f.line)
            if f.filename is not None and where in self.state.reported:
                continue     # an earlier cell's finding, found again through a new transform
            if commit:
                self.state.reported.add(where)
            if f.filename is None and f.line - 1 < len(lines):
                f = f.with_(source=lines[f.line - 1])    # as written (magics unmasked)
            out.append(f)
        return out

    def reset(self) -> None:
        self.__init__()


__all__ = ["Finding", "Rule", "RULES", "FAMILIES", "SEVERITIES", "check_source", "Checker",
           "explain", "checkified", "checkify_function", "run_checkified", "cell_source"]
