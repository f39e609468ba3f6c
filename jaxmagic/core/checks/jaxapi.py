"""What the checker knows about the JAX, NumPy and Python APIs it interprets.

Tables keyed by canonical dotted names (`jax.numpy.zeros`) or attribute names, shared by
the interpreter and the rules; tables one rule family alone needs live with that family.
"""
from __future__ import annotations

import builtins

_JAX_PREFIXES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "jax.random.",
                 "jax.image.")
# jax.numpy functions that answer questions about shapes/dtypes: results stay static
_JNP_STATIC = {"shape", "ndim", "size", "result_type", "dtype", "iinfo", "finfo",
               "issubdtype", "isdtype", "promote_types", "can_cast", "isscalar",
               "iscomplexobj", "isrealobj", "save", "load"}
_NP_STATIC_OK = {"shape", "ndim", "size", "result_type", "dtype", "iinfo", "finfo",
                 "issubdtype", "isscalar", "promote_types", "can_cast", "float32",
                 "float64", "int32", "int64", "bool_", "uint8", "int8", "float16",
                 "complex64", "complex128", "newaxis", "s_", "index_exp", "ndindex",
                 "broadcast_shapes"}
_LAX_STATIC = {"axis_size", "broadcast_shapes", "dtype", "iinfo", "finfo"}
_STATIC_ATTRS = {"shape", "ndim", "dtype", "size", "sharding", "weak_type", "itemsize",
                 "nbytes", "aval", "device", "devices"}
_ARRAY_ATTRS = {
    "T", "mT", "real", "imag", "at", "flat", "all", "any", "argmax", "argmin",
    "argpartition", "argsort", "astype", "choose", "clip", "compress", "conj", "conjugate",
    "copy", "cumprod", "cumsum", "diagonal", "dot", "flatten", "item", "max", "mean", "min",
    "nonzero", "prod", "ptp", "ravel", "repeat", "reshape", "round", "searchsorted", "sort",
    "squeeze", "std", "sum", "swapaxes", "take", "tolist", "trace", "transpose", "var",
    "view", "block_until_ready", "broadcast_to", "__float__", "__int__", "__index__",
    "nanmean", "nansum", "cumulative_sum", "to_device", "copy_to_host_async"}
_SUBMODULES = {"numpy", "lax", "random", "linalg", "fft", "nn", "scipy", "experimental",
               "tree_util", "image", "ops", "special", "stats", "signal", "sparse",
               "config", "debug", "tree", "dtypes", "errors", "sharding", "extend",
               "checkify", "shard_map", "initializers", "ndimage", "testing", "ma"}
_DTYPE64 = {"float64": "float32", "int64": "int32", "uint64": "uint32",
            "complex128": "complex64", "double": "float32", "f8": "f4", "i8": "i4",
            "c16": "c8", "u8": "u4", "longlong": "int32", "cdouble": "complex64"}
_SHAPE_ARGS = {  # jnp/lax callables whose arguments at these positions must be static ints
    "jax.numpy.zeros": (0,), "jax.numpy.ones": (0,), "jax.numpy.empty": (0,),
    "jax.numpy.full": (0,), "jax.numpy.arange": (0, 1, 2), "jax.numpy.eye": (0, 1),
    "jax.numpy.identity": (0,), "jax.numpy.tri": (0, 1), "jax.numpy.linspace": (2,),
    "jax.numpy.reshape": (1,), "jax.numpy.broadcast_to": (1,), "jax.numpy.tile": (1,),
    "jax.numpy.resize": (1,), "jax.numpy.split": (1,), "jax.numpy.zeros_like": (),
    "jax.lax.full": (0,), "jax.lax.broadcast": (1,), "jax.lax.iota": (1,),
    "jax.lax.dynamic_slice": (2,), "jax.lax.dynamic_slice_in_dim": (2,),
    "jax.random.normal": (1,), "jax.random.uniform": (1,), "jax.random.randint": (1,),
    "jax.random.bernoulli": (2,), "jax.random.choice": (2,), "jax.random.gumbel": (1,),
    "jax.random.exponential": (1,), "jax.random.laplace": (1,),
    "jax.random.truncated_normal": (3,), "jax.random.split": (1,),
}
_SHAPE_KWARGS = {"shape", "newshape", "num", "size", "reps", "slice_sizes", "N", "M"}
_SIZED = {  # value-dependent output sizes: need size=
    "nonzero": 0, "argwhere": 0, "flatnonzero": 0, "unique": 0, "unique_values": 0,
    "unique_counts": 0, "unique_inverse": 0, "unique_all": 0, "compress": 1, "extract": 1,
    "setdiff1d": 0, "union1d": 0, "intersect1d": 0, "setxor1d": 0,
}
_BOOL_FUNCS = {"isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_not",
               "logical_xor", "isclose", "equal", "not_equal", "less", "less_equal",
               "greater", "greater_equal", "isneginf", "isposinf", "signbit", "isin"}
_FLOAT_FUNCS = {"sin", "cos", "tan", "exp", "log", "log1p", "expm1", "tanh", "sqrt",
                "mean", "std", "var", "sigmoid", "softmax", "log_softmax", "arctan",
                "arcsin", "arccos", "sinh", "cosh", "exp2", "log2", "log10", "relu",
                "gelu", "silu", "erf", "cbrt", "rsqrt"}
_LAX_BINARY = {  # lax name -> jnp name
    "add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "rem": "fmod",
    "pow": "power", "max": "maximum", "min": "minimum", "atan2": "arctan2",
    "nextafter": "nextafter", "eq": "equal", "ne": "not_equal", "lt": "less",
    "le": "less_equal", "gt": "greater", "ge": "greater_equal", "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor", "complex": "complex",
    "dot": "dot", "shift_left": "left_shift", "shift_right_arithmetic": "right_shift",
}
_BUILTINS = frozenset(dir(builtins))
