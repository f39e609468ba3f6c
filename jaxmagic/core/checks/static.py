"""Static checks: AST rules over a cell (or file) before it runs.

One pre-pass collects imports, function definitions and the transforms applied to them
(`@jax.jit`, `jax.jit(f, ...)`, `lax.fori_loop(..., body, ...)`, `jax.vmap`, ...). One
analysis pass then walks the code in order with a small abstract value per name (JAX
array or not, traced or not, known shape and dtype) and applies the rules.

Precision comes first: a rule fires only when the value is known to be a JAX array (or
a tracer); unknown values stay silent. In a notebook the checker is given the user's
namespace, so arrays and jitted functions made by earlier cells are known too.

The pieces, composed here into `Analyzer`:

    values.py        abstract values (AV, FuncInfo) and AST constant helpers
    jaxapi.py        what is known about the JAX / NumPy / Python APIs
    notebook.py      IPython cells, names and values of the user namespace, CheckState
    transforms.py    pre-pass: functions and the transforms applied to them
    scopes.py        the scope being analysed (_Ctx)
    interpreter.py   one analysis: its state, entry, names and findings, composed of
    statements.py      statements and bindings
    functions.py       function scheduling and bodies
    expressions.py     expressions and operators
    calls.py         calls: JAX, NumPy, builtins, methods, user functions
    *_rules.py       one mixin per rule family (JX1xx ... JX7xx, see model.RULES)
"""
from __future__ import annotations

import ast
import os
import warnings

from .calls import Calls
from .gradient_rules import GradientRules
from .indexing_rules import IndexingRules
from .interpreter import Interpreter
from .jit_arg_rules import JitArgRules
from .model import Finding, sort_key
from .mutation_rules import MutationRules
from .notebook import CheckState
from .purity_rules import PurityRules
from .tracing_rules import TracingRules
from .transforms import Transforms
from .type_rules import TypeRules


class Analyzer(MutationRules, TracingRules, PurityRules, IndexingRules, TypeRules,
               JitArgRules, GradientRules, Calls, Transforms, Interpreter):
    """The static checker: the interpreter with the pre-pass, calls and every rule family."""


def analyze(src: str, *, namespace=None, x64=None, state: CheckState | None = None,
            line_offset: int = 0, cell: str = "") -> list[Finding]:
    try:
        with warnings.catch_warnings():      # e.g. "invalid escape sequence": Python
            warnings.simplefilter("ignore")  # tells the user itself when the code runs
            tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return []      # the cell will report its own SyntaxError when it runs
    a = Analyzer(src, namespace=namespace, x64=x64, state=state, line_offset=line_offset,
                 cell=cell)
    a._loops = [(n.lineno, n.end_lineno) for n in tree.body
                if isinstance(n, (ast.For, ast.While))]
    try:
        return a.run(tree)
    except Exception:           # a checker bug must not break the user's work
        if os.environ.get("JAXMAGIC_CHECK_DEBUG"):
            raise
        return sorted(a.findings.values(), key=sort_key)
    except RecursionError:      # pragma: no cover - absurdly deep code
        return []
