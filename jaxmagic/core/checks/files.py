"""Whole files for the checker: a `.py` module or a notebook's code cells in order.

Shared by `python -m jaxmagic check` and the benchmark over real projects; both read the
text themselves (from disk, or from a git object), so this module only parses.
"""
from __future__ import annotations

import json

from . import Checker, check_source
from .model import Finding


def check_notebook_text(text: str) -> list[tuple[int, Finding]]:
    """(cell number, finding) for each code cell of a notebook, checked in order, as a
    kernel runs them. A finding inside a function from an earlier cell names that cell."""
    nb = json.loads(text)
    checker = Checker()
    out = []
    n = 0
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        n += 1
        src = cell.get("source", "")
        if isinstance(src, list):
            src = "".join(src)
        for f in checker.check(src, cell=f"cell {n}"):
            home = f.filename or ""
            out.append((int(home[5:]) if home.startswith("cell ") else n, f))
    return out


def check_text(path: str, text: str) -> list[tuple[int | None, Finding]]:
    """(cell number or None, finding) for a `.py` file or an `.ipynb` notebook."""
    if path.endswith(".ipynb"):
        return check_notebook_text(text)
    return [(None, f) for f in check_source(text, filename=path)]
