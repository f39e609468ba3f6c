"""Whole files for the checker: a `.py` module or a notebook's code cells in order.

Shared by `python -m jaxmagic check` and the benchmark over real projects; both read the
text themselves (from disk, or from a git object), so this module only parses.
"""
from __future__ import annotations

import json
import re

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


def check_text(path: str, text: str, *, x64: bool | None = None
               ) -> list[tuple[int | None, Finding]]:
    """(cell number or None, finding) for a `.py` file or an `.ipynb` notebook. `x64`:
    64-bit turned on before the file runs (e.g. by a conftest.py, see `conftest_x64`)."""
    if path.endswith(".ipynb"):
        return check_notebook_text(text)
    return [(None, f) for f in check_source(text, filename=path, x64=x64)]


_X64_ON = re.compile(r"""jax_enable_x64["']\s*,\s*True"""
                     r"""|JAX_ENABLE_X64["']\s*\]?\s*=\s*["']?(1|True)""")


def conftest_x64(text: str) -> bool:
    """A conftest.py that turns jax_enable_x64 on for the tests beside and below it."""
    return bool(_X64_ON.search(text))
