"""What `%jit_compare` measured (`JitMeasurement`: plain data, the fields the view and
users read) and the likely causes it gives for a difference (`hints`), apart from the
steps that measure it (`timing`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_BUDGET = 1.5     # seconds of timing loops (eager + steady jit) per measurement


@dataclass
class JitMeasurement:
    """Everything `%jit_compare` measured. Times are seconds (per call where a rate)."""

    name: str = ""
    backend: str = ""
    # eager (op by op)
    eager_s: float | None = None          # steady median per call
    eager_spread_s: float | None = None   # std. dev. across repeats (as %timeit)
    eager_first_s: float | None = None    # first call, warm-up included
    eager_loops: int = 0
    eager_repeats: int = 0
    eager_runs: list = field(default_factory=list)   # per-call time of each repeat
    # first jit call, split
    trace_s: float | None = None
    lower_s: float | None = None
    compile_s: float | None = None
    first_call_s: float | None = None     # the first real call after compiling
    # steady jit
    jit_s: float | None = None
    jit_spread_s: float | None = None
    jit_loops: int = 0
    jit_repeats: int = 0
    jit_runs: list = field(default_factory=list)
    speedup: float | None = None          # eager_s / jit_s
    # why nothing was timed: jit cannot compile the call (JAX's error), or it runs no JAX
    # operation or returns no array (then there is no speedup to measure or result to match)
    verdict: str = ""
    # results
    results_match: bool | None = None
    max_abs_diff: float | None = None
    max_rel_diff: float | None = None
    leaves: list = field(default_factory=list)        # LeafDiff per output leaf
    eager_varies: bool | None = None      # eager results changed between calls
    jit_varies: bool | None = None
    hints: list = field(default_factory=list)         # likely causes of a difference
    # tracing
    traces: int = 0                       # times the function was traced under jit
    retrace_reasons: list = field(default_factory=list)
    static_notes: list = field(default_factory=list)  # static args mutated / unhashable
    eager_retraces: int = 0               # jit cache misses during steady eager calls
    eager_retrace_reasons: list = field(default_factory=list)
    # options in effect
    static_argnums: tuple = ()
    static_argnames: tuple = ()
    donate_argnums: tuple = ()
    donate_argnames: tuple = ()
    unwrapped_jit: bool = False           # the target was already jitted
    pmapped: bool = False                 # the target is a jax.pmap: compiled as given
    # donation: [{"name", "shape", "bytes", "leaves", "unusable", "usable"}]
    donated: list = field(default_factory=list)
    donation_warning: str = ""
    # cost and memory analyses (None where the backend does not say)
    flops: float | None = None
    transcendentals: float | None = None
    bytes_accessed: float | None = None
    argument_bytes: int | None = None
    output_bytes: int | None = None
    temp_bytes: int | None = None
    alias_bytes: int | None = None
    code_bytes: int | None = None
    # run
    budget_s: float = DEFAULT_BUDGET
    total_s: float | None = None
    interrupted: str | None = None        # phase in which Ctrl-C arrived
    notes: list = field(default_factory=list)

    @property
    def compile_total_s(self) -> float | None:
        parts = [t for t in (self.trace_s, self.lower_s, self.compile_s) if t is not None]
        return sum(parts) if parts else None

    @property
    def break_even_calls(self) -> float | None:
        """Calls after which compiling has paid for itself (None when jit is not faster)."""
        c = self.compile_total_s
        if c is None or self.eager_s is None or self.jit_s is None or self.pmapped:
            return None           # (a pmap compiles too: no compile to pay back)
        gain = self.eager_s - self.jit_s
        return c / gain if gain > 0 else None


def unstable_hash_note(name: str, traces: int) -> str:
    """What a static argument whose hash changes each time cost, as measured. Most JAX
    releases trace the function again on every call; 0.9–0.10 find the trace in their
    trace cache (its key leaves the static value's hash out), but jit's C++ fast path
    still misses on every call and dispatches through Python."""
    head = f"static argument {name} hashes differently each time it is hashed, so "
    if traces > 1:
        return head + "jit never finds it in its cache: every call traces the function again"
    return head + ("jit's fast path misses its cache on every call and dispatches through "
                   "Python (this JAX's trace cache still matched it: no retrace)")


def hints(m: JitMeasurement) -> list[str]:
    out = []
    if m.eager_varies:
        out.append("the eager results change from call to call: the function reads state "
                   "that changes (a global, a counter, a closure) or draws random numbers "
                   "outside JAX (numpy.random, random); jit froze those values when it traced")
    if m.results_match is False:
        bad = [d for d in m.leaves if not d.ok]
        values = [d for d in bad if not d.problem]
        small = [d for d in values if d.rtol and d.max_rel < 100 * d.rtol]
        if small and not m.eager_varies:
            out.append("float reassociation: XLA fuses and reorders floating-point work, so "
                       "sums and reductions round differently; differences this small are "
                       "expected, compare with a looser tolerance")
        elif values and m.eager_varies is False:
            out.append("a second eager call gave the first one's results, so this is not "
                       "state or randomness read at call time; jit computed these leaves "
                       "differently (XLA may fuse an operation into a faster approximation, "
                       "or run matmuls at a lower precision on GPU and TPU: try "
                       "jax.default_matmul_precision('highest'))")
    if m.jit_varies:
        out.append("the jitted results change between calls: a host callback or an input "
                   "that is modified in place")
    return out
