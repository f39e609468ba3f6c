"""What the checker knows about objects from model libraries and JAX's mutable refs.

A name's kind decides which rules may fire: an Optax transformation's `.update` is a pure
function (not `dict.update`); a `jax.new_ref` ref is written in place on purpose; an NNX
Variable passed through `jax.jit` is a copy, so updating it inside is silently lost. A
library is looked at only when the user's code already imported it (`sys.modules`); none
is a dependency of jaxmagic.

Kinds (the `AV.kind` the interpreter gives such values):

    "ref"        jax.new_ref(...), or an NNX Variable made with hijax=True / ref=True
    "nnxvar"     a plain NNX Variable (nnx.Variable, nnx.Param, nnx.BatchStat, ...)
    "nnxmodule"  an NNX Module (its attributes hold Variables)
    "pure"       an Optax GradientTransformation (init/update are pure functions)
"""
from __future__ import annotations

import ast
import sys

# constructors, by canonical name: what the call returns
_REF_CALLS = {"jax.new_ref", "jax.ref.new_ref", "jax.array_ref", "jax.empty_ref"}
_NNX = ("flax.nnx.", "flax.experimental.nnx.")
_NNX_VARIABLES = {"Variable", "Param", "BatchStat", "Cache", "Intermediate", "Perturbation"}
_NNX_MODULES = {"Module", "Linear", "Conv", "Embed", "LayerNorm", "BatchNorm", "RMSNorm",
                "Dropout", "MultiHeadAttention", "Sequential", "LinearGeneral", "Einsum",
                "ConvTranspose", "GroupNorm", "LSTMCell", "GRUCell", "Optimizer"}


def kind_of_call(q: str, node: ast.Call) -> str | None:
    """The kind a call to canonical `q` returns, if a library says (else None)."""
    if q in _REF_CALLS:
        return "ref"
    if q.startswith(_NNX):
        name = q.rsplit(".", 1)[-1]
        if name in _NNX_VARIABLES:
            mutable = any(k.arg in ("hijax", "ref") and not (
                type(k.value) is ast.Constant and not k.value.value) for k in node.keywords)
            return "ref" if mutable else "nnxvar"
        if name in _NNX_MODULES:
            return "nnxmodule"
    if q.startswith("optax.") and q.count(".") == 1 and q[6:7].islower():
        return "pure"        # optax.adam(...), optax.chain(...): a transformation
    return None


def is_nnx_module_base(q: str | None) -> bool:
    """`class Model(nnx.Module)`: instances are NNX modules."""
    return bool(q) and q.startswith(_NNX) and q.rsplit(".", 1)[-1] == "Module"


def kind_of_value(obj) -> str | None:
    """The kind of a live object from the user's namespace, if a library says."""
    t = type(obj)
    mod = t.__module__ or ""
    if mod.startswith("jax") and t.__name__ in ("Ref", "ArrayRef", "MutableArray"):
        return "ref"
    nnx = sys.modules.get("flax.nnx")
    if nnx is not None and mod.startswith("flax"):
        if isinstance(obj, nnx.Variable):
            mutable = getattr(obj, "hijax", False) or getattr(obj, "ref", False)
            return "ref" if mutable else "nnxvar"
        if isinstance(obj, nnx.Module):
            return "nnxmodule"
    optax = sys.modules.get("optax")
    if optax is not None and isinstance(obj, getattr(optax, "GradientTransformation", ())):
        return "pure"
    return None
