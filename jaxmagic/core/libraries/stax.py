"""`jax.example_libraries.stax`, the layer library JAX's own examples use: a model is a
pair of functions, no module class (`init, predict = stax.serial(Dense(10), Relu)`), and
its code lives inside the `jax` package, whose calls are otherwise the equations. Each
layer's `apply_fun` is that layer's module call: the call tree records it as one."""
from __future__ import annotations

import os
from typing import Any

_FILE = os.path.join("jax", "example_libraries", "stax.py")


def is_layer(code: Any) -> bool:
    """A stax layer's apply function (one code object shared by every layer of a kind)."""
    return code.co_name == "apply_fun" and code.co_filename.endswith(_FILE)


def layer_name(code: Any, local: dict) -> str:
    """The layer that made the apply function (`Dense`, `serial`, `PoolingLayer`); an
    elementwise layer by the function it applies (`relu`, `log_softmax`)."""
    made_by = getattr(code, "co_qualname", "").split(".<locals>.")
    name = made_by[-2] if len(made_by) > 1 else "layer"
    if name == "elementwise":
        name = getattr(local.get("fun"), "__name__", name)
    return name
