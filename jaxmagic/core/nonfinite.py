"""Why a value went non-finite, read from the mathematics of the primitive that made it
(`--values`): its domain, its singular points and the largest finite value of its dtype
(`RULES`), and, for an Inf a derivative made, the forward primitive whose derivative is
infinite at the point its input was at (`DERIVATIVES`: "d/dx sqrt(x) … at x = 0 is
+inf").

What an equation made is read from where it was born (a NaN, or an Inf, from inputs
holding none), not from its summary, which pools the later iterations of a loop; a fix
is offered only where it is right for that primitive at that point, and an equation no
rule explains is named with what it made, never guessed at. A fix that is a change of
one equation (`REWRITES`) is run on the user's arguments to check it; the others are said
to be unchecked.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .flow import Equation, Flow, Summary

_FLOATS = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
NAN, PINF, NINF = "NaN", "+Inf", "−Inf"


@dataclass(frozen=True)
class Cause:
    what: str        # "log(0) = −inf"
    fix: str


def dtype_of(s: Summary) -> str:
    return s.aval.split("[", 1)[0]


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


def made(flow: Flow, eqn: Equation) -> str:
    """What `eqn` made where it was born: a NaN where that came first, else its Inf."""
    if eqn.nan_born_at is not None and (eqn.born_at is None
                                        or eqn.nan_born_at <= eqn.born_at):
        return NAN
    outs = [s for v in eqn.outs if (s := flow.summaries.get(v)) is not None]
    return NINF if any(s.ninf for s in outs) and not any(s.pinf for s in outs) else PINF


def reach(s: Summary) -> str:
    return f"{max(abs(s.min), abs(s.max)):.4g}"


# ---- from finite inputs: (equation, inputs, output, made) → the cause, or None ------------

EPS = "jnp.maximum(x, 1e-12)"
DOUBLE_WHERE = ("if a jnp.where discards this branch, make its input safe too (the "
                "double where): safe = jnp.where(ok, x, 1.0); jnp.where(ok, f(safe), 0.)")


def wider(s: Summary, loops: tuple) -> str:
    """The fix for a value past its dtype's largest: float32 only where it is wider."""
    kind = dtype_of(s)
    grow = "the loop's carry grows without bound: bound or normalise it each iteration" \
        if loops else "rescale (normalise) the values"
    if kind == "f16":
        return "compute in float32 (float16's largest is 65504): x.astype(jnp.float32); " \
            "or " + grow
    if kind == "bf16":
        return grow + " (float32 has bfloat16's range: it would not help)"
    return grow


def _overflow(eqn, ins, out, kind):
    if kind == NAN:
        return None
    return Cause(f"overflow: the result passes {dtype_max(out.aval):.3g}, the largest "
                 f"{dtype_of(out)}", wider(out, eqn.loops))


def _log(eqn, ins, out, kind):
    if kind == NINF:
        if eqn.called.endswith("logsumexp"):
            return Cause("log(0) = −inf: logsumexp of entries that are all −inf",
                         "mask with a large negative number, jnp.finfo(x.dtype).min, "
                         "instead of -inf (the gradient of an all −inf row is NaN), or "
                         "leave such rows out")
        return Cause("log(0) = −inf", f"keep its input above 0: jnp.log({EPS}); of "
                     "probabilities, jax.nn.log_softmax(logits) instead of "
                     "jnp.log(jax.nn.softmax(logits))")
    if kind == NAN:
        return Cause("log of a negative number is NaN", f"keep its input positive: "
                     f"jnp.log({EPS}); " + DOUBLE_WHERE)


def _log1p(eqn, ins, out, kind):
    if kind == NINF:
        return Cause("log1p(−1) = −inf", "keep its input above −1: "
                     "jnp.log1p(jnp.maximum(x, -1 + 1e-6))")
    if kind == NAN:
        return Cause("log1p of a number below −1 is NaN", "keep its input above −1: "
                     "jnp.log1p(jnp.maximum(x, -1 + 1e-6))")


def _sqrt(eqn, ins, out, kind):
    if kind == NAN:
        name = "square root" if eqn.primitive == "sqrt" else eqn.primitive
        return Cause(f"{name} of a negative number is NaN", "clip the input: "
                     f"jnp.{eqn.primitive}(jnp.maximum(x, 0.)); " + DOUBLE_WHERE)
    if eqn.primitive == "rsqrt":
        return Cause("rsqrt(0) = +inf", "put an eps inside: lax.rsqrt(x + 1e-6), as a "
                     "layer norm does with its variance")


def _div(eqn, ins, out, kind):
    num, den = ins[0], ins[1]
    fix = "guard the denominator: x / jnp.where(d == 0, 1., d), or x / jnp.maximum(d, " \
        "1e-12) for a norm or a count"
    if kind == NAN and num.zeros and den.zeros:
        return Cause("0 / 0", fix)
    if kind != NAN and den.zeros:
        return Cause("division by 0", fix)
    return _overflow(eqn, ins, out, kind)


def _rem(eqn, ins, out, kind):
    if kind == NAN and ins[1].zeros:
        return Cause("x % 0 is NaN (a float remainder by 0)",
                     "guard the divisor: jnp.where(d == 0, 1., d)")


def _pow(eqn, ins, out, kind):
    base = ins[0]
    if kind == NAN and eqn.primitive == "pow" and base.min < 0:
        return Cause("a negative number to a fractional power is NaN",
                     "jnp.abs(x) ** p, or clip the base at 0")
    if kind != NAN and base.zeros and eqn.params.get("y", -1) < 0:
        return Cause("0 to a negative power is +inf", f"keep the base above 0: {EPS} ** p")
    return _overflow(eqn, ins, out, kind)


def _exp(eqn, ins, out, kind):
    limit = float(np.log(dtype_max(out.aval)) / (np.log(2) if eqn.primitive == "exp2"
                                                  else 1))
    if kind != PINF or ins[0].max <= limit:
        return None
    what = (f"{eqn.primitive} overflows past an input of {limit:.4g} for {dtype_of(out)}:"
            f" its input reaches {ins[0].max:.4g}")
    return Cause(what, "subtract the maximum first (jax.nn.softmax and jax.nn.logsumexp "
                 "do); 1 / (1 + exp(-x)) is jax.nn.sigmoid(x), log(1 + exp(x)) is "
                 "jax.nn.softplus(x)" + ("; or compute in float32" if dtype_of(out) ==
                                         "f16" else ""))


def _cast(eqn, ins, out, kind):
    top = dtype_max(out.aval)
    if kind != NAN and max(abs(ins[0].min), abs(ins[0].max)) > top:
        return Cause(f"a cast to {dtype_of(out)} overflows: its input reaches "
                     f"{reach(ins[0])}, past {top:.4g}",
                     "keep this value in float32, or rescale it before the cast")


def _clip_fix(name: str) -> str:
    return f"clip the input inside [−1, 1]: jnp.{name}(jnp.clip(x, -1., 1.))"


def _inverse_trig(eqn, ins, out, kind):
    name = {"acos": "arccos", "asin": "arcsin", "atanh": "arctanh"}[eqn.primitive]
    if kind == NAN:
        return Cause(f"{eqn.primitive} of a number outside [−1, 1] is NaN: its input "
                     f"reaches {reach(ins[0])}", _clip_fix(name))
    if eqn.primitive == "atanh":
        return Cause("atanh(±1) = ±inf", "clip the input inside (−1, 1): "
                     "jnp.arctanh(jnp.clip(x, -1 + 1e-6, 1 - 1e-6))")


def _gamma(eqn, ins, out, kind):
    if ins[0].min > 0:
        return None
    return Cause(f"{eqn.primitive} at 0 or a negative integer is "
                 f"{'+inf' if kind == PINF else kind}", "keep its input above 0")


RULES: dict[str, Callable] = {
    "log": _log, "log1p": _log1p, "div": _div, "rem": _rem, "sqrt": _sqrt,
    "rsqrt": _sqrt, "pow": _pow, "integer_pow": _pow, "exp": _exp, "exp2": _exp,
    "expm1": _exp, "convert_element_type": _cast, "acos": _inverse_trig,
    "asin": _inverse_trig, "atanh": _inverse_trig, "lgamma": _gamma, "digamma": _gamma,
    **{p: _overflow for p in ("mul", "dot_general", "add", "sub", "add_any",
                              "reduce_sum", "cumsum", "square", "reduce_prod")},
}

# ---- from inputs holding an Inf: a NaN -------------------------------------------------------


def _of_inf(eqn: Equation, ins: list[Summary]) -> Cause | None:
    infinite = [s for s in ins if s.pinf or s.ninf]
    if eqn.primitive in ("mul", "dot_general") and infinite and any(s.zeros for s in ins):
        return Cause("0 · inf", "the Inf comes first: find where it was born (above); a "
                     "masked softmax: jax.nn.softmax(x, where=mask), or mask with "
                     "jnp.finfo(x.dtype).min instead of -inf")
    if eqn.primitive in ("add", "sub", "add_any", "reduce_sum", "cumsum") and (
            len(infinite) >= 2 or any(s.pinf and s.ninf for s in ins)):
        return Cause("inf − inf", "a row masked entirely with -inf: mask with "
                     "jnp.finfo(x.dtype).min, or jax.nn.softmax(x, where=mask)")
    if eqn.primitive == "div" and len(infinite) == 2:
        return Cause("inf / inf", "the Inf comes first: find where it was born (above)")
    return None


# ---- derivatives: a forward primitive whose derivative is infinite where its input is ------

@dataclass(frozen=True)
class Derivative:
    primitive: str
    point: str        # "x = 0"
    what: str         # "d/dx sqrt(x) = 1 / (2 sqrt(x)) at x = 0 is +inf"
    fix: str
    index: int        # the forward equation's


# fixes a run can check, as a change of one equation's inputs: only where the derivative
# JAX computes reads that equation's result (sqrt's is 0.5 / sqrt(s)), so the change
# reaches it; log's and acos's read their input, which the change leaves as it was
REWRITES: dict[str, tuple[Callable, str]] = {
    "sqrt": (lambda xs: [xs[0] + 1e-12], "jnp.sqrt(s + 1e-12)")}


def _ends(s: Summary) -> str:
    """Which of ±1 a summary reaches (an input to acos, asin, atanh)."""
    return "x = 1" if s.max >= 1 else "x = −1" if s.min <= -1 else ""


# primitive → (its inputs → the singular point it was at, or ""; the derivative there;
# the fix), the fix's {name} the function the user called
DERIVATIVES: dict[str, tuple[Callable, str, str]] = {
    "sqrt": (lambda ins: "x = 0" if ins[0].zeros else "",
             "d/dx sqrt(x) = 1 / (2 sqrt(x)) at {at} is +inf",
             "put the eps inside: jnp.sqrt(s + 1e-12) (jnp.sqrt(s) + 1e-12 still has an "
             "infinite derivative at 0), or the double where: ok = s > 0; "
             "jnp.where(ok, jnp.sqrt(jnp.where(ok, s, 1.)), 0.)"),
    "rsqrt": (lambda ins: "x = 0" if ins[0].zeros else "",
              "d/dx rsqrt(x) = −1 / (2 x^1.5) at {at} is −inf",
              "put the eps inside: lax.rsqrt(x + 1e-6)"),
    "cbrt": (lambda ins: "x = 0" if ins[0].zeros else "",
             "d/dx cbrt(x) = 1 / (3 cbrt(x)²) at {at} is +inf",
             "the double where: ok = x != 0; jnp.where(ok, jnp.cbrt(jnp.where(ok, x, 1.)),"
             " 0.)"),
    "log": (lambda ins: "x = 0" if ins[0].zeros else "",
            "d/dx log(x) = 1 / x at {at} is +inf",
            f"keep its input above 0 before the log: jnp.log({EPS})"),
    "log1p": (lambda ins: "x = −1" if ins[0].min <= -1 else "",
              "d/dx log1p(x) = 1 / (1 + x) at {at} is +inf",
              "keep its input above −1: jnp.log1p(jnp.maximum(x, -1 + 1e-6))"),
    "pow": (lambda ins: "x = 0" if ins[0].zeros else "",
            "d/dx x ** p = p x ** (p − 1) at {at} is inf for p < 1",
            f"keep the base above 0: {EPS} ** p"),
    "div": (lambda ins: "y = 0" if ins[1].zeros else "",
            "d/dy x / y = −x / y² at {at} is inf",
            "the double where: safe = jnp.where(y == 0, 1., y); jnp.where(y == 0, 0., "
            "x / safe)"),
    "atan2": (lambda ins: "(y, x) = (0, 0)" if ins[0].zeros and ins[1].zeros else "",
              "d atan2(y, x) = (x dy − y dx) / (x² + y²) at {at} is 0 / 0",
              "the double where around its inputs: ok = (y != 0) | (x != 0); "
              "jnp.where(ok, jnp.arctan2(jnp.where(ok, y, 1.), jnp.where(ok, x, 1.)), 0.)"),
    **{p: (lambda ins: _ends(ins[0]), f"d/dx {p}(x) = {sign}1 / {den} at {{at}} is {inf}",
           f"clip the input inside (−1, 1): jnp.{name}(jnp.clip(x, -1 + 1e-6, 1 - 1e-6))")
       for p, name, sign, den, inf in (
           ("acos", "arccos", "−", "sqrt(1 − x²)", "−inf"),
           ("asin", "arcsin", "", "sqrt(1 − x²)", "+inf"),
           ("atanh", "arctanh", "", "(1 − x²)", "+inf"))},
}
NORM = ("; a norm: optax.safe_norm(x, 0.), or jnp.sqrt(jnp.sum(x ** 2) + 1e-12) "
        "(jnp.linalg.norm(x) + 1e-12 is still NaN at 0)")


def derivative(flow: Flow, forward: list[Equation]) -> Derivative | None:
    """The first of `forward` (the equations of a line that ran before an Inf born
    there) whose derivative is infinite at the point its input was at."""
    for e in forward:
        entry = DERIVATIVES.get(e.primitive)
        ins = inputs(flow, e)
        if entry is None or None in ins:
            continue
        at = entry[0](ins)
        if at:
            fix = entry[2] + (NORM if e.called == "jnp.linalg.norm" else "")
            return Derivative(e.primitive, at, entry[1].format(at=at), fix, e.index)
    return None


# ---- the cause --------------------------------------------------------------------------------

def cause(flow: Flow, eqn: Equation, nan: bool = False) -> Cause:
    """Why `eqn` made a non-finite value (`nan`: its first NaN, where that came after
    its Inf): from finite inputs by its primitive's rule, from an Inf by what an Inf
    does there."""
    kind = NAN if nan else made(flow, eqn)
    if eqn.body:
        return Cause(f"inside {eqn.primitive}, whose inside --values did not summarise "
                     "in full (see the notes)",
                     f"run %jaxpr --values on the function {eqn.primitive} runs, with "
                     "one shard's (one iteration's) inputs")
    ins = inputs(flow, eqn)
    outs = [flow.summaries[v] for v in eqn.outs if v in flow.summaries]
    out = next((s for s in outs if s.nonfinite), outs[0] if outs else None)
    # a rule reads its inputs by position: only where every one was summarised
    missing = None in ins or out is None
    if missing:
        return Cause(f"{eqn.primitive} made {kind} from inputs --values did not "
                     "summarise (see the notes)", "run %jaxpr --values on the function "
                     "this line is in, with the inputs it sees there")
    later = nan and eqn.nan_born_at != eqn.born_at and any(s.pinf or s.ninf for s in ins)
    if eqn.born_at is None or later:       # its inputs held an Inf
        return _of_inf(eqn, ins) or Cause(f"{eqn.primitive} of an Inf made {kind}",
                                          "the Inf comes first: see where it was born")
    rule = RULES.get(eqn.primitive)
    found = rule(eqn, ins, out, kind) if rule is not None and ins else None
    return found or Cause(f"{eqn.primitive} made {kind} from finite inputs",
                          "check its inputs' ranges in the table")
