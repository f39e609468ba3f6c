"""What `--values` found, as plain data: a `Summary` per value, an `Equation` per
equation, and the `Flow` of one run with the questions asked of it (where a NaN or Inf
was born, where it arrived or stopped, whether the program meant it), apart from the walk
that measures them so readers (the card, the cause) need none of its machinery.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .summary_rows import (
    BAD_AT,
    BOOL,
    FINITE,
    FLOAT,
    INTEGER,
    M2,
    MAX,
    MIN,
    NAN,
    NAN_AT,
    NINF,
    PINF,
    SUM,
    ZERO,
    N,
)


@dataclass(frozen=True)
class Summary:
    """One value, over every iteration of the loops around it."""

    aval: str                   # `f32[256,128]`
    kind: str                   # float | int | bool | key | other
    n: int                      # elements seen (0: a branch never taken)
    nan: int = 0
    pinf: int = 0
    ninf: int = 0
    zeros: int = 0
    finite: int = 0
    mean: float = float("nan")
    std: float = float("nan")
    min: float = float("nan")
    max: float = float("nan")
    bad_at: int | None = None   # the first iteration (of the outermost loop) it held a
    nan_at: int | None = None   # non-finite value / a NaN; 0 outside loops

    @property
    def nonfinite(self) -> int:
        return self.nan + self.pinf + self.ninf

    @property
    def magnitude(self) -> float:
        """The largest |x| among its finite elements, for floats: what blows up or
        vanishes (a PRNG's uint32 bits reach 4.3e9 by design); 0 for others."""
        if self.kind != FLOAT or not self.finite:
            return 0.0
        return float(max(abs(self.min), abs(self.max)))


@dataclass
class Equation:
    """What `--values` knows of one equation, by walk index."""

    index: int
    primitive: str
    ins: tuple            # each input's value id, or ("literal", value)
    outs: tuple           # its outputs' value ids
    loops: tuple = ()     # the loop equations around it, outermost first
    body: bool = False    # a body run as one equation (`shard_map`, `pmap`): not opened
    born_at: int | None = None      # the first iteration its outputs went non-finite
    nan_born_at: int | None = None  # from finite (NaN-free) inputs
    called: str = ""      # the JAX function the user's line called (`jnp.linalg.norm`)
    params: dict = field(default_factory=dict)     # its numbers (integer_pow's `y`)


@dataclass
class Flow:
    """The summaries of one run: by value id (`(equation, output)`, `(-1, i)` for the
    i-th argument, `(-2, i)` for a captured constant, `("in", body, k)` for a loop's or a
    shard_map's k-th argument as its body saw it, pooled over iterations or devices) and
    the equations."""

    summaries: dict[tuple, Summary]
    equations: dict[int, Equation]
    loops: dict[int, tuple[str, int, bool]] = field(default_factory=dict)  # kind, length, rev
    skipped: list[str] = field(default_factory=list)    # bodies run unsummarised, and why
    budget_left_out: int = 0       # values past the budget: only their non-finite counts
    seconds: float = 0.0
    results: list = field(default_factory=list)       # the call's results' value ids
    # integer divisions (`div`) whose divisor held a 0, by equation: what they returned
    # there (as `Summary`: n the zero divisors, min/max the values); `by_zero_in` names
    # the call whose result that is (`floor_divide`: `x // 0`) where it is not the div's
    by_zero: dict[int, Summary] = field(default_factory=dict)
    by_zero_in: dict[int, str] = field(default_factory=dict)
    names: dict[tuple, str] = field(default_factory=dict)   # arguments' and constants'
    # vmapped whiles (batched predicate) by equation: the NaN/Inf their bodies made for
    # lanes that had finished, which the loop drops (those lanes keep their carry)
    lanes: dict[int, int] = field(default_factory=dict)

    def reached_results(self) -> bool:
        """Whether a NaN or Inf is in the call's results (not only made and discarded, as
        by a `jnp.where`)."""
        return any(s.nonfinite for v in self.results if (s := self.summaries.get(v)))

    def born(self, nan: bool) -> list[Equation]:
        """Equations where a NaN (`nan`) or any non-finite value was born, in the order
        they ran: the earliest iteration first, then walk order."""
        key = "nan_born_at" if nan else "born_at"
        found = [e for e in self.equations.values() if getattr(e, key) is not None]
        return sorted(found, key=lambda e: (getattr(e, key), e.index))

    def origin(self) -> Equation | None:
        """The first equation to make a NaN or Inf from inputs that held none (or a NaN
        from inputs that held no NaN: `x - x` of an Inf), in the order they ran; None
        where everything is finite."""
        found = [(at, e.index, e) for e in self.equations.values()
                 for at in [min((a for a in (e.born_at, e.nan_born_at) if a is not None),
                                default=None)] if at is not None]
        return min(found, key=lambda t: t[:2])[2] if found else None

    def arrived(self) -> list[tuple[tuple, Summary]]:
        """The arguments and captured constants that brought a NaN or Inf into the call:
        made before it, by no equation of the program."""
        return [(v, s) for v, s in self.summaries.items() if v[0] in (-1, -2) and
                s.nonfinite]

    def absorbed(self) -> Equation | None:
        """The first equation to make finite values of a NaN or Inf (a select dropping
        it, x / inf = 0): where a non-finite value stops before the results."""
        found = [e for e in self.equations.values() if any(
            s.nonfinite for v in e.ins if (s := self.summaries.get(v)) is not None)
            and not any(s.nonfinite for v in e.outs if (s := self.summaries.get(v)))]
        return min(found, key=lambda e: e.index) if found else None

    def alarms(self) -> set[tuple]:
        """The values that hold a NaN, or an Inf that comes of where one was born or of
        an argument that brought one in; the other infinities are the program's own (a
        −inf mask, an inf sentinel in a min). A value no equation here made (a loop's)
        counts as one where anything was born."""
        born = any(e.born_at is not None or e.nan_born_at is not None
                   for e in self.equations.values())
        tainted = {v for v, _ in self.arrived()}

        def tainted_in(v) -> bool:
            return v in tainted or born and v[0] not in self.equations and \
                v[0] not in (-1, -2, "literal")

        for e in sorted(self.equations.values(), key=lambda e: e.index):
            if e.born_at is not None or e.nan_born_at is not None or \
                    any(tainted_in(v) for v in e.ins if v):
                tainted.update(e.outs)
        return {v for v, s in self.summaries.items()
                if s.nan or s.nonfinite and tainted_in(v)}

    def written(self) -> list[tuple[Equation, float]]:
        """The equations whose outputs hold a NaN or ±Inf because they read one the
        program writes as a constant (`jnp.nan`, a `-jnp.inf` fill), with it: where the
        non-finite values come from that no equation made."""
        return [(e, v[1]) for e in sorted(self.equations.values(), key=lambda e: e.index)
                for v in e.ins if v and v[0] == "literal" and isinstance(v[1], float)
                and not np.isfinite(v[1]) and any(
                    s.nonfinite for o in e.outs if (s := self.summaries.get(o)))]

    def intended(self) -> bool:
        """Whether every non-finite value is an infinity the program writes itself."""
        return any(s.nonfinite for s in self.summaries.values()) and not self.alarms()

    def first_nan(self) -> Equation | None:
        """The first equation to make a NaN from NaN-free inputs: where `jax_debug_nans`
        stops."""
        found = self.born(nan=True)
        return found[0] if found else None


def summary_of(meta: tuple[str, str], r: np.ndarray) -> Summary:
    """The `Summary` of a value of (aval, kind) `meta` from its row, read on the host."""
    aval, kind = meta
    n, finite = int(r[N]), int(r[FINITE])
    seen = kind in (FLOAT, INTEGER, BOOL) and finite > 0 and r[MIN] <= r[MAX]
    return Summary(
        aval, kind, n, int(r[NAN]), int(r[PINF]), int(r[NINF]), int(r[ZERO]), finite,
        float(r[SUM] / finite) if seen else float("nan"),
        float(np.sqrt(max(r[M2], 0) / finite)) if seen else float("nan"),
        float(r[MIN]) if seen else float("nan"), float(r[MAX]) if seen else float("nan"),
        int(r[BAD_AT]) if r[BAD_AT] >= 0 else None,
        int(r[NAN_AT]) if r[NAN_AT] >= 0 else None)
