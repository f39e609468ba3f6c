"""Why a value went non-finite: the cause read from the equation's primitive and the
summaries of its inputs (`--values`), and the fix JAX's FAQ gives for it.

Each rule is one primitive's known way to make NaN or Inf from finite inputs (`log` of 0,
division by 0, `exp` past the float's range, `0 · inf`, `inf − inf`, a narrowing cast);
an equation no rule explains is named with what it made, never guessed at.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .values import Equation, Flow, Summary

_FLOATS = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


@dataclass(frozen=True)
class Cause:
    what: str        # "log of 0"
    fix: str


def dtype_max(aval: str) -> float:
    """The largest finite value of a summary's float type (`bf16`: float32's range)."""
    prefix = aval.split("[", 1)[0]
    if prefix == "bf16":
        return float(np.finfo(np.float32).max) * (1 - 2 ** -8)
    return float(np.finfo(_FLOATS.get(prefix, np.float32)).max)


def literal(value) -> Summary:
    x = np.asarray(value, np.float64)
    ok = np.isfinite(x)
    return Summary("literal", "float", int(x.size), int(np.isnan(x).sum()),
                   int((x == np.inf).sum()), int((x == -np.inf).sum()), int((x == 0).sum()),
                   int(ok.sum()), float(x[ok].mean()) if ok.any() else 0.0, 0.0,
                   float(x[ok].min()) if ok.any() else 0.0,
                   float(x[ok].max()) if ok.any() else 0.0)


def inputs(flow: Flow, eqn: Equation) -> list[Summary]:
    return [literal(v[1]) if v and v[0] == "literal" else flow.summaries.get(v)
            for v in eqn.ins]


# ---- the rules: (inputs, output) → the cause, or None -------------------------------------

EPS = "an eps: jnp.maximum(x, 1e-12), or x + 1e-12"
# forward primitives whose derivative is infinite somewhere finite: what an Inf born at
# their line in a gradient is the derivative of
SINGULAR = {"sqrt": "sqrt where its input is 0", "log": "log where its input is 0",
            "pow": "a power below 1 where its base is 0", "rsqrt": "rsqrt at 0",
            "div": "a division where the denominator is 0", "acos": "acos at ±1",
            "asin": "asin at ±1", "atanh": "atanh at ±1", "cbrt": "cbrt at 0"}
DOUBLE_WHERE = ("if a jnp.where discards this branch, make its input safe too (the "
                "double where): safe = jnp.where(ok, x, 1.0); jnp.where(ok, f(safe), 0.)")


def _log(ins, out):
    x = ins[0]
    if x.min < 0:
        return Cause("log of a negative number", f"keep the input positive ({EPS}); "
                     + DOUBLE_WHERE)
    if x.zeros:
        return Cause("log of 0", f"add {EPS}; for probabilities use jax.nn.log_softmax "
                     "or jax.nn.logsumexp instead of jnp.log(softmax(...))")


def _div(ins, out):
    num, den = ins[0], ins[1]
    if den.zeros:
        what = "0 / 0" if num.zeros and out.nan else "division by 0"
        return Cause(what, "guard the denominator: x / jnp.maximum(d, 1e-12), or "
                     "jnp.where(d == 0, 1.0, d); a norm: jnp.linalg.norm(x) + 1e-12")
    return _overflow(ins, out)


def _sqrt(ins, out):
    x = ins[0]
    if x.min < 0:
        return Cause("square root of a negative number",
                     "clip the input: jnp.sqrt(jnp.maximum(x, 0.)); " + DOUBLE_WHERE)
    if x.zeros:
        return Cause("1 / sqrt(0)", f"add {EPS}")


def _pow(ins, out):
    base = ins[0]
    if base.min < 0 and out.nan:
        return Cause("a negative number to a fractional power",
                     "jnp.abs(x) ** p, or clip the base at 0")
    if base.zeros:
        return Cause("0 to a negative power", f"add {EPS} to the base")
    return _overflow(ins, out)


def _exp(ins, out):
    limit = float(np.log(dtype_max(out.aval)))
    if ins[0].max > limit:
        return Cause(f"exp overflows: its input reaches {ins[0].max:.4g}, past "
                     f"{limit:.4g} for {out.aval.split('[')[0]}",
                     "subtract the maximum first (jax.nn.softmax, jax.nn.logsumexp do), "
                     "or compute in float32")


def _product(ins, out):
    infinite = any(s.pinf or s.ninf for s in ins)
    if infinite and any(s.zeros for s in ins) and out.nan:
        return Cause("0 · inf", "the Inf comes first: find where it was born (below); a "
                     "masked softmax: jax.nn.softmax(x, where=mask), or mask with "
                     "jnp.finfo(x.dtype).min instead of -inf")
    return _overflow(ins, out)


def _sum(ins, out):
    if out.nan and sum(1 for s in ins if s.pinf or s.ninf) >= 2 or \
            any(s.pinf and s.ninf for s in ins):
        return Cause("inf − inf", "a row masked entirely with -inf: mask with "
                     "jnp.finfo(x.dtype).min, or jax.nn.softmax(x, where=mask)")
    return _overflow(ins, out)


def _overflow(ins, out):
    top = dtype_max(out.aval)
    if out.pinf or out.ninf:
        return Cause(f"overflow: the result passes {top:.3g}, the largest "
                     f"{out.aval.split('[')[0]}", "rescale, or compute in float32")


def _cast(ins, out):
    top = dtype_max(out.aval)
    if max(abs(ins[0].min), abs(ins[0].max)) > top:
        return Cause(f"a cast to {out.aval.split('[')[0]} overflows (largest {top:.4g})",
                     "keep this value in float32, or rescale it before the cast")


def _inverse_trig(ins, out):
    if max(abs(ins[0].min), abs(ins[0].max)) > 1:
        return Cause("an input outside [−1, 1]", "clip it: jnp.clip(x, -1., 1.)")


RULES: dict[str, Callable] = {
    "log": _log, "div": _div, "sqrt": _sqrt, "rsqrt": _sqrt, "pow": _pow,
    "integer_pow": _pow, "exp": _exp, "exp2": _exp, "mul": _product,
    "dot_general": _product, "add": _sum, "sub": _sum, "add_any": _sum,
    "reduce_sum": _sum, "cumsum": _sum, "convert_element_type": _cast,
    "acos": _inverse_trig, "asin": _inverse_trig,
}


def cause(flow: Flow, eqn: Equation) -> Cause:
    """Why `eqn` made a non-finite value from finite inputs."""
    if eqn.body:
        return Cause(f"inside {eqn.primitive}, whose inside --values did not summarise "
                     "in full (see the notes)",
                     f"run %jaxpr --values on the function {eqn.primitive} runs, with "
                     "one shard's (one iteration's) inputs")
    ins = inputs(flow, eqn)
    outs = [flow.summaries[v] for v in eqn.outs if v in flow.summaries]
    out = next((s for s in outs if s.nonfinite), outs[0] if outs else None)
    rule = RULES.get(eqn.primitive)
    # a rule reads its inputs by position: only where every one was summarised
    missing = None in ins or out is None
    found = rule(ins, out) if rule is not None and ins and not missing else None
    if found is not None:
        return found
    made = "NaN" if out is not None and out.nan else "Inf"
    if missing:
        return Cause(f"{eqn.primitive} made {made} from inputs --values did not "
                     "summarise (see the notes)", "run %jaxpr --values on the function "
                     "this line is in, with the inputs it sees there")
    if any(s.pinf or s.ninf for s in ins):
        return Cause(f"{eqn.primitive} of an Inf made {made}",
                     "the Inf comes first: see where it was born")
    return Cause(f"{eqn.primitive} made {made} from finite inputs",
                 "check its inputs' ranges in the table")
