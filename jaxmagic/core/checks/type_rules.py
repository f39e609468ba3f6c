"""Rules JX5xx: types and promotion. lax calls with mixed dtypes, and 64-bit dtypes
asked for while jax_enable_x64 is off."""
from __future__ import annotations

import ast

from .jaxapi import _DTYPE64, _LAX_BINARY

_DTYPE_CTOR_POS = {"array": 1, "asarray": 1, "zeros": 1, "ones": 1, "empty": 1, "full": 2,
                   "arange": 3, "eye": 3, "identity": 1}


def _dtype_kind(d: str | None) -> str | None:
    """'int32' / 'int*' -> 'int': the family promotion works within."""
    if not d:
        return None
    d = d.rstrip("*?")
    if d == "bool":
        return "bool"
    for k in ("uint", "int", "float", "complex", "bfloat"):
        if d.startswith(k):
            return "float" if k == "bfloat" else k
    return None


class TypeRules:
    """Mixin of `Analyzer`: dtype promotion and 64-bit types."""

    def _lax_mixed(self, node, name: str, args) -> None:
        """JX501: a lax binary op on two known, different dtypes (lax never promotes)."""
        da, db = args[0].dtype, args[1].dtype
        if not da or not db:
            return
        ka, kb = _dtype_kind(da), _dtype_kind(db)
        if ka is None or kb is None:
            return
        weak_a, weak_b = da.endswith("*"), db.endswith("*")
        default = {"int": "int64" if self.x64 else "int32",
                   "float": "float64" if self.x64 else "float32",
                   "complex": "complex128" if self.x64 else "complex64"}
        ra = default.get(ka, da) if weak_a else da
        rb = default.get(kb, db) if weak_b else db
        if ka == kb and (ra == rb or (weak_a and weak_b) or "?" in ra + rb):
            return
        ra, rb = ra.rstrip("?"), rb.rstrip("?")
        if ka == kb and (weak_a or weak_b) and ka == "int":
            return
        jname = _LAX_BINARY[name]
        new = self.replace(node.func, f"{self.jnp}.{jname}")
        self.add("JX501", node, f"lax.{name} does not promote types: {ra} and {rb} "
                 "(TypeError: requires arguments to have the same dtypes).",
                 f"use {self.jnp}.{jname}, which promotes, or convert one side "
                 f"explicitly (e.g. .astype({self.jnp}.{ra if ka == 'float' else rb}))",
                 rewrite=new)

    def _dtype64(self, dt_node, node) -> bool:
        name = None
        if type(dt_node) is ast.Constant and isinstance(dt_node.value, str):
            name = dt_node.value
        elif type(dt_node) in (ast.Attribute, ast.Name):
            q = self.resolve(dt_node)
            if q and q.startswith(("jax.numpy.", "numpy.")):
                name = q.rsplit(".", 1)[-1]
        if name not in _DTYPE64:
            return False
        to = _DTYPE64[name]
        new = self.seg(dt_node).replace(name, to)
        self.add("JX502", dt_node, f"`{self.seg(dt_node)}` asks for a 64-bit type, but "
                 f"jax_enable_x64 is off: JAX silently uses {to.replace('f4', 'float32')}.",
                 f"use {to}, or enable 64-bit at startup: "
                 f"{self.jaxn}.config.update('jax_enable_x64', True)",
                 rewrite=self.replace(dt_node, new))
        return True

    def _x64(self, node, q, name, args, kwargs) -> None:
        if q.startswith("jax.numpy.") and name in _DTYPE64:
            self._dtype64(node.func, node)
            return
        for k in node.keywords:
            if k.arg == "dtype":
                if self._dtype64(k.value, node):
                    return
        pos = _DTYPE_CTOR_POS.get(name)
        if q.startswith("jax.numpy.") and pos is not None and len(node.args) > pos:
            self._dtype64(node.args[pos], node)
