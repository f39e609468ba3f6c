"""Where a value's sharding changes between the equation that makes it and the one that
reads it: the partitioner then moves it (an all-to-all, a collective-permute, an
all-gather) or slices it before the reader runs.

The reader's operand sharding is not written anywhere in the dump: XLA records each
instruction's result only. It follows from the result for the dimensions an operand
shares with it: all of them for an elementwise operation or a sharding constraint, the
permuted ones for a transpose, the batch and free dimensions of a matmul, the kept ones
of a reduction. A dimension the result does not keep (a matmul's contraction, a reduced
one) is not judged: the partitioner may gather it, or reduce over it and slice the
result; where the kept dimensions would then use one axis twice, neither is judged. Other primitives
are not judged.
"""
from __future__ import annotations

from typing import Any

from .. import _compat

Spec = tuple[tuple[str, ...], ...]      # the mesh axes of each dimension

# equations whose operands have the result's shape and sharding, dimension by dimension
ELEMENTWISE = frozenset("""
abs acos acosh add add_any and asin asinh atan atan2 atanh cbrt ceil clamp conj convert_element_type
copy copy_p cos cosh digamma div eq erf erf_inv erfc exp exp2 expm1 floor ge gt imag integer_pow
is_finite le lgamma log log1p logistic lt max min mul ne neg nextafter not or pow real
reduce_precision rem round rsqrt select_n shift_left shift_right_arithmetic
shift_right_logical sign sin sinh sqrt square sub tan tanh xor
sharding_constraint reshard mesh_cast
""".split())
REDUCTIONS = frozenset({"reduce_sum", "reduce_max", "reduce_min", "reduce_prod",
                        "reduce_and", "reduce_or", "argmax", "argmin"})


def operand_dims(eqn: Any, k: int) -> list[int | None] | None:
    """For each dimension of operand `k`, the result dimension it is (None: one the
    result does not keep); None when this primitive is not judged."""
    prim, p = eqn.primitive.name, eqn.params
    shape = tuple(getattr(eqn.invars[k].aval, "shape", ()))
    out = tuple(getattr(eqn.outvars[0].aval, "shape", ())) if eqn.outvars else None
    if out is None:
        return None
    if prim in ELEMENTWISE:
        return list(range(len(shape))) if shape == out else None
    if prim == "transpose":
        perm = p["permutation"]
        return [perm.index(d) for d in range(len(shape))]
    if prim == "broadcast_in_dim" and k == 0:
        dims = p["broadcast_dimensions"]
        return [d if shape[j] == out[d] else None for j, d in enumerate(dims)]
    if prim in REDUCTIONS:
        axes = set(p["axes"])
        kept = [d for d in range(len(shape)) if d not in axes]
        return [None if d in axes else kept.index(d) for d in range(len(shape))]
    if prim == "dot_general" and k < 2:
        ranks = [len(eqn.invars[i].aval.shape) for i in (0, 1)]
        return _dot_dims(p["dimension_numbers"], k, ranks)
    return None


def _dot_dims(numbers: Any, k: int, ranks: list[int]) -> list[int | None]:
    """A matmul's result is batch dims, then the lhs's free dims, then the rhs's."""
    (contract_l, contract_r), (batch_l, batch_r) = numbers
    contract, batch = ((contract_l, batch_l), (contract_r, batch_r))[k]
    free = [[d for d in range(r) if d not in c and d not in b] for r, c, b in
            zip(ranks, (contract_l, contract_r), (batch_l, batch_r))]
    first_free = len(batch) + (0 if k == 0 else len(free[0]))
    dims: list[int | None] = [None] * ranks[k]
    for i, d in enumerate(batch):
        dims[d] = i
    for i, d in enumerate(free[k]):
        dims[d] = first_free + i
    return dims


def expected(eqn: Any, k: int, result: Spec, produced: Spec) -> Spec | None:
    """The sharding operand `k` must have for `eqn` to make `result`, or None where the
    primitive is not judged."""
    dims = operand_dims(eqn, k)
    if dims is None or len(dims) != len(produced):
        return None
    want = tuple(result[d] if d is not None else produced[i] for i, d in enumerate(dims))
    axes = [a for dim in want for a in dim]
    return want if len(axes) == len(set(axes)) else None


def spec_text(spec: Spec) -> str:
    """`P('data', None)`, `P(('data', 'model'), None)`: a spec as the user writes it."""
    def entry(axes: tuple[str, ...]) -> str:
        if not axes:
            return "None"
        return repr(axes[0]) if len(axes) == 1 else "(" + ", ".join(map(repr, axes)) + ")"
    return "P(" + ", ".join(entry(a) for a in spec) + ")"


def change(eqn: Any, k: int, result: Spec | None, produced: Spec | None) -> str:
    """`P('data', None) → P('model', None)` when operand `k` of `eqn` is resharded on
    its way in, else ''."""
    if result is None or produced is None or len(result) != len(
            getattr(eqn.outvars[0].aval, "shape", ())):
        return ""
    want = expected(eqn, k, result, produced)
    if want is None or want == produced:
        return ""
    return f"{spec_text(produced)} → {spec_text(want)}"


def aval_spec(aval: Any) -> Spec | None:
    """The spec an Explicit mesh's type carries, or None where it carries none."""
    return full(from_partitions(aval.sharding.spec), aval) if has_spec(aval) else None


def from_partitions(spec: Any) -> Spec:
    return tuple(() if p is None else (p,) if isinstance(p, str) else tuple(p)
                 for p in _compat.spec_partitions(spec))


def full(spec: Spec, aval: Any) -> Spec:
    """`spec` with an entry for every dimension (a spec may leave trailing ones out)."""
    return spec + ((),) * (len(getattr(aval, "shape", ())) - len(spec))


def has_spec(aval: Any) -> bool:
    spec = getattr(getattr(aval, "sharding", None), "spec", None)
    return spec is not None and any(p is not None for p in _compat.spec_partitions(spec))
