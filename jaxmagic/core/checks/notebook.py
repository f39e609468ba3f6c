"""What a notebook gives the checker: cells, names and values from earlier cells.

`cell_source` masks IPython syntax so a cell parses as Python; `_canonical_object` and
`_from_value` turn objects in the user's namespace into canonical names and abstract
values; `CheckState` carries what earlier cells defined into the next check.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

from .libraries import kind_of_value
from .values import _SCALAR_KIND, AV, UNKNOWN

# what these names mean when neither an import in the code nor the namespace says
DEFAULT_ALIASES = {
    "jnp": "jax.numpy", "np": "numpy", "onp": "numpy", "jax": "jax", "lax": "jax.lax",
    "jit": "jax.jit", "vmap": "jax.vmap", "pmap": "jax.pmap", "grad": "jax.grad",
    "partial": "functools.partial", "functools": "functools", "math": "math",
    "checkify": "jax.experimental.checkify", "jr": "jax.random", "jrandom": "jax.random",
    "shard_map": "jax.shard_map",
}
# cell magics whose body is Python (checked without the %% line)
_HELP = re.compile(r"^\?{0,2}[\w.*]+\?{0,2}\s*$(?<=\?)|^\?{1,2}[\w.*]+\s*$")  # obj? ?obj
_PY_CELL_MAGICS = {"jaxpr", "jit_compare", "shardviz", "time", "timeit", "capture",
                   "prun", "jaxcheck", "debug"}


def cell_source(raw: str) -> tuple[str, int] | None:
    """A notebook cell as Python for the checker: (source, line offset), or None.

    IPython syntax is masked line for line (so line numbers and columns stay the cell's):
    `%magic ...` and `!cmd` become `pass`, `x = %magic` becomes `x = None`. A cell magic
    whose body is Python (`%%jaxpr`, `%%time`, ...) is checked without its first line;
    any other cell magic (`%%bash`, `%%html`) is not Python and is skipped.
    """
    lines = raw.split("\n")
    offset = 0
    first = lines[0].lstrip() if lines else ""
    if first.startswith("%%"):
        name = first[2:].split(None, 1)[0] if first[2:].strip() else ""
        if name not in _PY_CELL_MAGICS:
            return None
        lines = lines[1:]
        offset = 1
    out = []
    for ln in lines:
        s = ln.lstrip()
        if s[:1] in ("%", "!") and not s.startswith("%="):
            out.append(ln[: len(ln) - len(s)] + "pass" + " " * max(0, len(s) - 4))
        elif _HELP.match(s):
            out.append(ln[: len(ln) - len(s)] + "pass")
        else:
            m = re.match(r"^(\s*[\w.,\s\[\]()]+=\s*)[%!]", ln)
            out.append(m.group(1) + "None" if m and "==" not in m.group(1) else ln)
    return "\n".join(out), offset


_CANON: dict[int, str] | None = None


def _canonical_object(obj) -> str | None:
    global _CANON
    mod = getattr(obj, "__module__", None) or ""
    if not (mod.startswith(("jax", "functools", "numpy", "_functools"))):
        return None
    if _CANON is None:
        _CANON = {}
        import functools
        _CANON[id(functools.partial)] = "functools.partial"
        if "jax" in sys.modules:
            import jax
            for name in ("jit", "vmap", "pmap", "grad", "value_and_grad", "jacfwd", "jacrev",
                         "hessian", "checkpoint", "remat", "make_jaxpr", "eval_shape",
                         "device_put", "device_get", "block_until_ready"):
                if hasattr(jax, name):
                    _CANON[id(getattr(jax, name))] = f"jax.{name}"
            for name in ("fori_loop", "while_loop", "scan", "cond", "switch", "map"):
                _CANON[id(getattr(jax.lax, name))] = f"jax.lax.{name}"
            try:
                from jax.experimental import checkify
                _CANON[id(checkify.checkify)] = "jax.experimental.checkify.checkify"
            except Exception:  # pragma: no cover
                pass
            if hasattr(jax, "shard_map"):
                _CANON[id(jax.shard_map)] = "jax.shard_map"
    c = _CANON.get(id(obj))
    if c is not None:
        return c
    name = getattr(obj, "__name__", None)
    if name and mod.startswith("jax.numpy") or mod.startswith("jax._src.numpy"):
        return f"jax.numpy.{name}"
    if name and mod.startswith(("jax.lax", "jax._src.lax")):
        return f"jax.lax.{name}"
    if name and mod.startswith("numpy"):
        return f"numpy.{name}"
    return None


def _from_value(v) -> AV:
    t = type(v)
    k = _SCALAR_KIND.get(t)
    if k is not None:
        return AV(k, dtype={"int": "int*", "float": "float*", "bool": "bool",
                            "complex": "complex*"}.get(k))
    lib = kind_of_value(v)
    if lib is not None:
        return AV(lib)
    mod = t.__module__ or ""
    if mod.startswith("jaxlib") or mod.startswith("jax"):
        if hasattr(v, "shape") and hasattr(v, "dtype") and not callable(v):
            try:
                return AV("jax", shape=tuple(v.shape), dtype=str(v.dtype))
            except Exception:
                return AV("jax")
        if t.__name__ in ("PjitFunction", "JitWrapped") or hasattr(v, "lower"):
            return AV("jaxfunc")
        return UNKNOWN
    if mod == "numpy":
        if t.__name__ == "ndarray":
            return AV("np", shape=tuple(v.shape), dtype=str(v.dtype))
        if hasattr(v, "dtype"):
            return AV("np", dtype=str(v.dtype))
        return UNKNOWN
    if t is list:
        return AV("list")
    if t is tuple:
        return AV("tuple")
    if t is dict:
        return AV("dict")
    if t is set:
        return AV("set")
    if t.__name__ == "module":
        return AV("module")
    return UNKNOWN


@dataclass
class CheckState:
    """What a notebook's earlier cells taught the checker (the `Checker` keeps one)."""

    env: dict = field(default_factory=dict)
    aliases: dict = field(default_factory=dict)
    captures: dict = field(default_factory=dict)    # jitted fn -> (FuncInfo, reads, cell)
    called: set = field(default_factory=set)
    x64: bool = False
    hijax: bool = False          # nnx.var_defaults(hijax=True): Variables are mutable refs
    reported: set = field(default_factory=set)      # (cell, rule, line) already shown
    consts: dict = field(default_factory=dict)      # global -> literal it holds
    commit: bool = True
