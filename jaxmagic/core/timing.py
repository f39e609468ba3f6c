"""Eager vs jit: what compilation costs and what it buys, measured like `%timeit`.

`measure()` runs one call several ways, in this order, blocking on every output leaf:

  first jit    split into trace, lower and compile (`jit(f).trace(...).lower().compile()`),
               then the first real call (first: what jit cannot handle fails early, as
               the JAX error it is);
  eager        the Python function, op by op (a jitted function is unwrapped first);
  steady jit   per-call time with a loop count chosen from a time budget, several repeats
               (median and spread), then steady eager the same way.

A call with nothing to time stops after the trace with a verdict instead of figures: jit
cannot compile it (JAX's error), or it runs no JAX operation or returns no array.

It compares the results leaf by leaf (`outputs`; a leaf that differs is tested for being
decided by rounding), counts traces (a retrace means jit's cache missed; JAX's own
explanation is captured for this call only: `retraces`), reports donation (`donation`:
every run gets copies of what it would donate) and the compiled cost and memory analyses.
Every global it touches (jax config, loggers, warnings filters, the garbage collector) is
restored afterwards, also on error and Ctrl-C; Ctrl-C returns
what was measured so far. Plain data out, no IPython.
"""
from __future__ import annotations

import functools
import re
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import jax
import numpy as np

from .. import _compat
from . import donation, interrupt, libraries
from .arguments import (
    ArgCall,
    JitArgumentError,
    Partition,
    check_arguments,
    concretization_argument,
    norm_argnames,
    norm_argnums,
    param_names,
    static_positions,
)
from .compiled import hlo
from .jit_measurement import DEFAULT_BUDGET, JitMeasurement, hints, unstable_hash_note
from .outputs import (
    abs_diff,
    arithmetic_floor,
    compare_outputs,
    nudge,
    rtol_of,
    same,
    settle_rounding,
)
from .retraces import CacheMisses, clean_miss
from .timeloop import Timer, blocker, median_spread
from .trace import idle_call, kinds


def _hash_or_none(x: Any):
    try:
        return hash(x)
    except Exception:
        return None


# ---- the measurement ---------------------------------------------------------------------


def measure(func: Callable, args: tuple = (), kwargs: dict | None = None, *,
            arg_names: Sequence[str] | None = None, kwarg_names: dict | None = None,
            name: str | None = None, static_argnums=None, static_argnames=None,
            donate_argnums=None, donate_argnames=None, number: int | None = None,
            repeat: int | None = None, budget: float | None = None, eager: bool = True,
            callee_name: str = "") -> JitMeasurement:
    """Measure `func(*args, **kwargs)` eagerly and under `jax.jit`; see the module doc.

    Raises StaticArgumentError for an argument jit cannot trace, and whatever the
    function raises. Ctrl-C stops the measurement and returns the partial result.
    """
    __tracebackhide__ = True
    m = JitMeasurement()
    m.budget_s = float(budget) if budget else DEFAULT_BUDGET
    if number is not None and number < 1 or repeat is not None and repeat < 1:
        raise ValueError("number and repeat must be at least 1")
    call, opts, fun, kind = _arguments(m, func, args, dict(kwargs or {}), arg_names,
                                       kwarg_names, name, static_argnums, static_argnames,
                                       donate_argnums, donate_argnames)
    part = Partition(call, opts.static_pos, opts.snames, callee_name=callee_name,
                     jit_kind=kind)
    return _Measurement(m, call, opts, part, number, repeat, eager).run(fun, kind)


@dataclass
class _Options:
    """Static and donated arguments, as positions and names, checked against the call."""

    sn: tuple
    snames: tuple
    dn: tuple
    dnames: tuple
    static_pos: set
    donate_pos: set
    donate_keys: set


def _arguments(m, func, args, kwargs, arg_names, kwarg_names, name, static_argnums,
               static_argnames, donate_argnums, donate_argnames):
    """The call to measure (a jitted target unwrapped to its function) and its options:
    options given here replace the target's own (static and donate separately)."""
    __tracebackhide__ = True
    fun, inherited, kind = func, {}, ""
    found = libraries.unwrap_jit(func)
    if found is not None:
        fun, inherited, kind = found
        inherited = libraries.resolved(inherited, args, kwargs)
        m.unwrapped_jit = True
    m.pmapped = _compat.is_pmap(func)
    names = list(arg_names) if arg_names is not None else [f"arg{i}" for i in range(len(args))]
    call = ArgCall(fun, tuple(args), kwargs, names,
                   dict(kwarg_names or {k: k for k in kwargs}),
                   name or f"{getattr(func, '__name__', 'f')}(...)", param_names(fun))
    m.name = call.name
    if static_argnums is None and static_argnames is None:
        static_argnums = inherited.get("static_argnums")
        static_argnames = inherited.get("static_argnames")
    if donate_argnums is None and donate_argnames is None:
        donate_argnums = inherited.get("donate_argnums")
        donate_argnames = inherited.get("donate_argnames")
    return call, _options(m, call, static_argnums, static_argnames, donate_argnums,
                          donate_argnames), fun, kind


def _options(m, call, static_argnums, static_argnames, donate_argnums, donate_argnames):
    __tracebackhide__ = True
    n = len(call.args)
    sn, snames = norm_argnums(static_argnums, n), norm_argnames(static_argnames)
    dn, dnames = norm_argnums(donate_argnums, n), norm_argnames(donate_argnames)
    # jax resolves names given for positional parameters itself; keep only the ones used
    m.static_argnums, m.static_argnames = sn, snames
    m.donate_argnums, m.donate_argnames = dn, dnames
    static_pos = static_positions(call, sn, snames)
    donate_pos = set(dn) | {call.params.index(k) for k in dnames if k in call.params}
    donate_keys = {k for k in dnames if k in call.kwargs}
    for what, nums in (("static", sn), ("donate", dn)):
        if bad := sorted(i for i in nums if (i >= n and i >= len(call.params)) or i < 0):
            raise JitArgumentError(f"{what}_argnums {bad[0]} is out of range: the call has "
                                   f"{n} positional argument{'s' if n != 1 else ''}",
                                   f"count positional arguments from 0 (0..{n - 1})")
    if bad := sorted(static_pos & donate_pos):
        raise JitArgumentError(f"argument {call.arg_names[bad[0]]} cannot be both static "
                               "and donated", "donate only array arguments")
    check_arguments(call, static_pos, snames)
    return _Options(sn, snames, dn, dnames, static_pos, donate_pos, donate_keys)


class _Measurement:
    """One measurement's steps, in order: the first jit call (trace, lower, compile, run),
    the first eager call, steady jit, steady eager; then what the log of cache misses
    says. What jit traces is the partition's: array leaves traced, the rest held fixed,
    NNX objects split into state; every call (eager or jitted) rebuilds its own
    containers and objects, so the user's models, optimizers and dicts are exactly as
    before afterwards."""

    def __init__(self, m: JitMeasurement, call: ArgCall, opts: _Options, part: Partition,
                 number: int | None, repeat: int | None, eager: bool):
        self.m, self.call, self.opts, self.part = m, call, opts, part
        self.number, self.repeat, self.eager = number, repeat, eager
        self.t_start = time.perf_counter()
        _, self.run_args, self.run_kwargs = part.inputs(bind_static=False)
        self.fn = part.function(bind_static=False)
        self.trace_count = [0]
        self.jitted = jax.jit(self._counted(), **self._jit_options())
        self.donating = bool(opts.donate_pos or opts.donate_keys)
        self.inner_donated: set[int] = set()   # flat inputs a call inside fn donates
        self.jaxpr = None                       # what jit traced (where JAX says)
        self.floor = None        # its least precise float arithmetic (`_compare`)
        self.written: dict | None = None        # per donated leaf: written in place
        self.eager_args, self.eager_kwargs = self.run_args, self.run_kwargs
        if part.every_leaf:     # the body of a jitted target never sees a Python number
            self.eager_args, self.eager_kwargs = self._map_leaves(
                self.run_args, self.run_kwargs, None, donation.as_traced)
        self.phase = "eager"
        self.eager_first = self.jit_first = None
        self.unstable: list[str] = []       # static arguments whose hash changes every time
        try:
            m.backend = f"{jax.default_backend()} ({jax.devices()[0].device_kind})"
        except Exception:
            m.backend = jax.default_backend()

    def _counted(self) -> Callable:
        run, count = self.fn, self.trace_count

        @functools.wraps(run)
        def traced_fun(*a, **k):
            __tracebackhide__ = True
            count[0] += 1
            return run(*a, **k)
        return traced_fun

    def _jit_options(self) -> dict:
        o, n = self.opts, len(self.call.args)
        out = {}
        jit_nums, jit_names = self.part.jit_static(o.sn, o.snames)
        if jit_nums:
            out["static_argnums"] = jit_nums
        if jit_names:
            out["static_argnames"] = jit_names
        if given := tuple(i for i in o.dn if i < n):
            out["donate_argnums"] = given
        if o.dnames:
            out["donate_argnames"] = o.dnames
        return out

    def fresh(self) -> tuple[tuple, dict]:
        """The call's inputs, donated ones copied (each jitted call donates its own)."""
        o = self.opts
        a = tuple(donation.copy(x) if i in o.donate_pos else x for i, x in enumerate(self.run_args))
        k = {key: (donation.copy(v) if key in o.donate_keys else v)
             for key, v in self.run_kwargs.items()}
        return a, k

    def inputs(self) -> tuple[tuple, dict]:
        return self.fresh() if self.donating else (self.run_args, self.run_kwargs)

    def eager_inputs(self) -> tuple[tuple, dict]:
        """The call's inputs for an eager call: run op by op, a `jax.pmap` or a donating
        `jax.jit` inside the function deletes what it is handed, so those leaves are
        copies (the user's buffers never reach it)."""
        if not self.inner_donated:
            return self.eager_args, self.eager_kwargs
        return self._map_leaves(self.eager_args, self.eager_kwargs, self.inner_donated,
                                donation.copy)

    def _map_leaves(self, args: tuple, kwargs: dict, flat: set[int] | None,
                    make: Callable) -> tuple[tuple, dict]:
        """`args`, `kwargs` with `make` applied to the traced leaves at `flat` (all: None),
        numbered as jit flattens the call."""
        nums, names = self.part.jit_static(self.opts.sn, self.opts.snames)
        return donation.map_leaves(args, kwargs, set(nums), set(names), flat, make)

    def _flat_names(self) -> list[str]:
        """The names of the jitted call's flat inputs (the traced leaves, in jit's order)."""
        nums, names = self.part.jit_static(self.opts.sn, self.opts.snames)
        return self.part.in_names([i for i in range(len(self.run_args)) if i not in nums],
                                  [k for k in self.run_kwargs if k not in names])

    def _inner_donation_note(self, title: str) -> str:
        named = [n for i, n in enumerate(self._flat_names()) if i in self.inner_donated]
        shown = ", ".join(named[:4]) + (f" and {len(named) - 4} more" if len(named) > 4 else "")
        return (f"{title} donates {shown} to a jax.pmap or jax.jit it calls: every eager "
                "call was given its own copy, so your arrays were not deleted")

    def _dyn_leaves(self, flat: set[int] | None) -> list:
        """The inputs' leaves at the flat positions `flat` (all: None), as jit flattens
        the call."""
        nums, names = self.part.jit_static(self.opts.sn, self.opts.snames)
        dyn = ([a for i, a in enumerate(self.run_args) if i not in nums],
               {k: v for k, v in self.run_kwargs.items() if k not in names})
        return [x for i, x in enumerate(jax.tree_util.tree_leaves(dyn))
                if flat is None or i in flat]

    def _set_phase(self, phase: str) -> None:
        """The next phase, unless a Ctrl-C came in this one (also one Python dropped)."""
        interrupt.stop_if_interrupted()
        self.phase = self.log.phase = phase

    def guarded(self, step: Callable):
        """Run a step; if JAX's cache-miss explainer itself fails, rerun without it."""
        __tracebackhide__ = True
        try:
            return step()
        except AssertionError:
            if not self.cap.explaining:
                raise
            self.cap.stop_explaining()
            self.m.notes.append("JAX could not explain a cache miss (its explainer failed "
                                "on this key); measured without explanations")
            return step()

    def run(self, fun: Callable, kind: str) -> JitMeasurement:
        __tracebackhide__ = True
        m = self.m
        with CacheMisses() as self.cap, interrupt.ctrl_c_noted():
            self.log = self.cap.log
            try:
                self.first_jit_call(fun, kind)
                if self.eager and not m.verdict:
                    self.first_eager_call()
                if m.verdict:
                    return m
                self.steady_jit()
                if self.eager:
                    self.steady_eager()
                    self.rounding()
            except KeyboardInterrupt:
                m.interrupted = self.phase
                m.jit_s, m.jit_spread_s = median_spread(m.jit_runs)
                m.eager_s, m.eager_spread_s = median_spread(m.eager_runs)
                if m.jit_s and m.eager_s:
                    m.speedup = m.eager_s / m.jit_s
            finally:
                self.verdict()
        return m

    # ---- the steps ---------------------------------------------------------------------

    def first_jit_call(self, fun: Callable, kind: str) -> None:
        """Trace, lower, compile, then the first real call: first, so a function jit
        cannot handle fails as a JAX error."""
        __tracebackhide__ = True
        m, call, o = self.m, self.call, self.opts
        n = len(call.args)
        statics = [(call.arg_names[i], call.args[i]) for i in sorted(o.static_pos) if i < n] \
            + [(call.kwarg_names.get(k, k), v) for k, v in call.kwargs.items() if k in o.snames]
        self._set_phase("trace")
        before = [(nm, _hash_or_none(v)) for nm, v in statics]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                compiled, (m.trace_s, m.lower_s, m.compile_s) = self.guarded(self._aot)
            except Exception as e:
                if self.phase == "compile":     # JAX traced it, XLA rejects it: in its words
                    m.verdict = (f"jax.jit cannot compile {libraries.func_name(fun)}: XLA "
                                 "rejects the program JAX traced from it: "
                                 + " ".join(str(e).split())[:600])
                    return
                problem = concretization_argument(e, call, o.static_pos, o.snames)
                if problem is not None:
                    problem.original = e        # JAX's error, kept without its trace
                    raise problem from None
                raise
        m.notes[:0] = self.part.notes(libraries.func_name(fun), kind)
        if self.inner_donated:
            m.notes.append(self._inner_donation_note(libraries.func_name(fun)))
        self._donation(caught)
        self._static_hashes(before, statics)
        m.verdict = self._nothing_to_time(libraries.func_name(fun), kind)
        if m.verdict:
            return
        _analyses(m, compiled)
        self._set_phase("first call")
        self.jit_first, m.first_call_s = self.guarded(self._timed_jit_call)

    def _aot(self):
        __tracebackhide__ = True
        a0, k0 = self.run_args, self.run_kwargs      # trace/lower/compile run nothing
        t0 = time.perf_counter()
        traced = self.jitted.trace(*a0, **k0) if hasattr(self.jitted, "trace") else None
        t1 = time.perf_counter()
        self._set_phase("lower")
        lowered = traced.lower() if traced is not None else self.jitted.lower(*a0, **k0)
        t2 = time.perf_counter()
        self._set_phase("compile")
        compiled = lowered.compile()
        t3 = time.perf_counter()
        if traced is not None:
            self.inner_donated = _compat.donated_inputs(traced.jaxpr)
            self.jaxpr = traced.jaxpr
        if self.donating:
            self.written = self._written(compiled, lowered)
        return compiled, (t1 - t0 if traced is not None else None, t2 - t1, t3 - t2)

    def _nothing_to_time(self, name: str, kind: str) -> str:
        """Why there is nothing to time, or "": an output jax.jit cannot return (in JAX's
        words), or a call that runs no JAX operation or returns no array
        (`trace.idle_call`). Outputs jax.jit cannot return beside arrays it can are timed
        without them, as `eqx.filter_jit` would return them, and a note says so."""
        if self.jaxpr is None:
            return ""
        error = self._jit_error() if kind != "eqx.filter_jit" and any(
            not ok for _, ok in self.part.dropped) else ""
        if error and (kind == "jax.jit" or not self.part.kept_outputs):
            return (f"jax.jit cannot compile {name}: {error}; return arrays (or pytrees of "
                    "them), and keep other values outside the jitted function")
        if error:
            self.m.notes.append(f"jax.jit({name}) itself raises: {error}; timed for its "
                                "array outputs, the rest left out as eqx.filter_jit does")
        idle = idle_call(self.jaxpr, name, self._flat_names(), self.part.dropped)
        if not idle:
            return ""
        if not _compat.open_jaxpr(self.jaxpr).outvars and not self.part.dropped:
            idle += ("; under jit its Python code runs only while jit traces it, so a print "
                     "or other side effect in it happens once, not on every call")
        return f"{idle}; there is nothing for jit to compile or speed up"

    def _jit_error(self) -> str:
        """JAX's error for the call's whole output under jax.jit (it traces it as jax.jit
        would be handed it), or "" where there is none."""
        whole = jax.jit(self.part.function(False, every_output=True), **self._jit_options())
        try:
            whole.trace(*self.run_args, **self.run_kwargs)
        except TypeError as e:
            return str(e)
        return ""

    def _written(self, compiled: Any, lowered: Any) -> dict | None:
        """Per argument (position or name), whether XLA writes an output into each of its
        leaves (`hlo.aliased_parameters`, through the inputs jit kept), else None."""
        params = hlo.aliased_parameters(compiled.as_text())
        if params is None:
            return None
        kept = _compat.kept_inputs(lowered)
        flat = {kept[p] if kept and p < len(kept) else p for p in params}
        nums, names = self.part.jit_static(self.opts.sn, self.opts.snames)
        spans = donation.spans(self.run_args, self.run_kwargs, set(nums), set(names))
        return {key: [j in flat for j in span] for key, span in spans.items()}

    def _timed_jit_call(self):
        __tracebackhide__ = True
        a, k = self.inputs()
        if self.donating:
            jax.block_until_ready((a, k))
        t0 = time.perf_counter()
        out = self.jitted(*a, **k)
        jax.block_until_ready(out)
        return out, time.perf_counter() - t0

    def _donation(self, caught: list) -> None:
        """Keep jit's donation warnings as data; re-issue every other warning."""
        m, o, n = self.m, self.opts, len(self.call.args)
        warning = ""
        for w in caught:
            text = str(w.message)
            if "donated buffers" in text or "Donation is not implemented" in text:
                warning = text
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        m.donation_warning = warning
        if self.donating:
            m.donated = donation.donated_arguments(
                self.call, tuple(sorted(i for i in o.donate_pos if i < n)),
                tuple(sorted(o.donate_keys)), warning, self.written)

    def _static_hashes(self, before: list, statics: list) -> None:
        """Static arguments the function mutated, or whose hash is unstable."""
        for (nm, h0), (_, v) in zip(before, statics):
            h1, h2 = _hash_or_none(v), _hash_or_none(v)
            if h1 != h2:
                self.unstable.append(nm)
            elif h0 != h1:
                self.m.static_notes.append(
                    f"static argument {nm} changed while the function was traced (its hash "
                    "changed): the function mutates it, so later calls may look new to "
                    "jit's cache")

    def first_eager_call(self) -> None:
        """The warm-up: op-by-op dispatch compiles each primitive on its first use."""
        __tracebackhide__ = True
        self._set_phase("eager")

        def eager_once():
            __tracebackhide__ = True
            a, k = self.eager_inputs()
            jax.block_until_ready((a, k))
            t0 = time.perf_counter()
            out = self.fn(*a, **k)
            jax.block_until_ready(out)
            return out, time.perf_counter() - t0

        m = self.m
        self.eager_first, m.eager_first_s = self.guarded(eager_once)
        self.floor = _compare(m, self.eager_first, self.jit_first, self.jaxpr)
        numbers = jax.tree_util.tree_leaves(self.eager_first)
        if m.results_match and numbers and not any(hasattr(x, "dtype") for x in numbers):
            m.verdict = (f"{libraries.func_name(self.call.fun)} runs no JAX operation op by "
                         "op: Python computes what it returns ("
                         f"{kinds([(type(x).__name__, True) for x in numbers])}), equal to what "
                         "jax.jit returns; there is no JAX work to speed up")
            return
        _name_updates(m.leaves, self.part.returned)

    def steady_jit(self) -> None:
        __tracebackhide__ = True
        m = self.m
        self._set_phase("steady jit")
        share = m.budget_s * (0.5 if self.eager else 1.0)
        donated = donation.nbytes(self._donated())
        timer = Timer(self.jitted, self.run_args, self.run_kwargs, blocker(self.jit_first),
                       self.fresh if self.donating else None, donated)
        m.jit_loops, m.jit_repeats = self.guarded(
            lambda: timer.run(share, self.number, self.repeat, m.jit_runs))
        m.jit_s, m.jit_spread_s = median_spread(m.jit_runs)
        a, k = self.inputs()
        m.jit_varies = not same(self.jit_first, self.jitted(*a, **k))

    def _donated(self) -> list:
        o, n = self.opts, len(self.call.args)
        return [self.run_args[i] for i in o.donate_pos if i < n] + \
            [self.run_kwargs[key] for key in o.donate_keys]

    def steady_eager(self) -> None:
        __tracebackhide__ = True
        m = self.m
        self._set_phase("steady eager")
        share = m.budget_s * 0.5
        timer = Timer(self.fn, self.eager_args, self.eager_kwargs, blocker(self.eager_first),
                       self.eager_inputs if self.inner_donated else None,
                       donation.nbytes(self._dyn_leaves(self.inner_donated)))
        m.eager_loops, m.eager_repeats = self.guarded(
            lambda: timer.run(m.budget_s - share, self.number, self.repeat, m.eager_runs))
        m.eager_s, m.eager_spread_s = median_spread(m.eager_runs)
        if m.eager_first_s > m.budget_s:
            m.notes.append(_slow_eager_note(m))
        # one call more, to see whether eager results vary: unless a steady call alone
        # outruns eager's share of the budget (then not known, and not said)
        if m.eager_s is not None and m.eager_s <= m.budget_s - share:
            a, k = self.eager_inputs()
            m.eager_varies = not same(self.eager_first, self.fn(*a, **k))
        if m.jit_s:
            m.speedup = m.eager_s / m.jit_s

    def rounding(self) -> None:
        """Which differing float leaves rounding decides, by experiment: the jitted call
        again on its inputs, each element moved by one ulp (of the program's arithmetic)
        at random (as if rounded the other way), twice. A leaf that moves about as far as it
        differs from eager (a tenth of its largest difference or more) is ill-conditioned
        at float precision: a parameter whose gradient is mathematically zero, its
        rounding noise scaled by Adam to a full step, and that noise's moments. Eager and
        jit cannot agree on it, and its difference says nothing about the function: it is
        named as rounding-decided and not counted as a difference."""
        m = self.m
        bad = [i for i, d in enumerate(m.leaves) if not d.ok and not d.problem and d.rtol]
        if not bad or self.jit_first is None:
            return
        self._set_phase("rounding check")
        traces = self.trace_count[0]
        first = jax.tree_util.tree_leaves(self.jit_first)
        moved = dict.fromkeys(bad, 0.0)
        rng = np.random.default_rng(0)
        for _ in range(2):
            a, k = self.inputs()
            a, k = self._map_leaves(a, k, None, functools.partial(nudge, rng=rng, floor=self.floor))
            got = jax.tree_util.tree_leaves(self.jitted(*a, **k))
            if len(got) == len(first):
                for i in bad:
                    moved[i] = max(moved[i], float(np.max(abs_diff(got[i], first[i]),
                                                          initial=0.0)))
        self.trace_count[0] = traces        # a retrace here is ours, not the function's
        m.results_match, m.max_abs_diff, m.max_rel_diff = settle_rounding(m.leaves, moved)

    def verdict(self) -> None:
        """What the traces and JAX's cache-miss log say; the hints; the total time."""
        m = self.m
        m.traces = self.trace_count[0]
        m.static_notes += [unstable_hash_note(nm, m.traces) for nm in self.unstable]
        jit_phases = ("trace", "lower", "compile", "first call", "steady jit")
        misses = [msg for ph, msg in self.log.records if ph in jit_phases]
        # the first trace of the function is expected; later ones are retraces (our
        # wrapper is new each time, so JAX's "re-defined repeatedly?" guess for it is noise)
        m.retrace_reasons = [clean_miss(s) for s in misses if "never seen function" not in s]
        eager_misses = [msg for ph, msg in self.log.records if ph == "steady eager"]
        m.eager_retraces = len(eager_misses)
        m.eager_retrace_reasons = [clean_miss(s) for s in eager_misses[:3]]
        m.hints = hints(m)
        m.total_s = time.perf_counter() - self.t_start


def _compare(m: JitMeasurement, eager: Any, jit: Any, jaxpr: Any) -> Any:
    """Eager's results against jit's, at the precision of the program's least precise
    arithmetic (`outputs.arithmetic_floor`, returned), and at what precision, said."""
    floor = arithmetic_floor(jaxpr)
    m.results_match, m.max_abs_diff, m.max_rel_diff, m.leaves = \
        compare_outputs(eager, jit, floor)
    m.notes += _precision_note(m.leaves, floor)
    return floor


def _precision_note(leaves: list, floor: Any) -> list[str]:
    """What precision results of a finer dtype were compared at, where the program's
    least precise arithmetic (`floor`) set it."""
    finer = sorted({d.dtype for d in leaves if floor is not None and d.rtol and
                    d.dtype != floor.name and d.rtol == rtol_of(floor)})
    if not finer:
        return []
    return [f"{', '.join(finer)} results compared at {floor.name} precision (rtol "
            f"{rtol_of(floor):.0e}): the program computes in {floor.name}, and agrees with "
            "eager only that closely"]


def _slow_eager_note(m: JitMeasurement) -> str:
    """Why the first eager call outran the budget: JAX compiling each operation op by
    op where the steady calls are much faster, else the function is this slow."""
    why = "op by op, JAX compiled each operation the first time it ran; " \
        if m.eager_s and m.eager_first_s > 2 * m.eager_s else ""
    calls = len(m.eager_runs) * (m.eager_loops or 1)
    return (f"the first eager call took {m.eager_first_s:.1f} s, outside the timing budget "
            f"({m.budget_s:g} s): {why}eager is timed from {calls} call"
            f"{'s' if calls > 1 else ''} more (--no-eager skips eager)")


def _name_updates(leaves: list, updated: list) -> None:
    """Outputs `(out, [state...])` of a call that changes NNX state: name each leaf as the
    trace does (`[1][3]` is `optimizer.step (updated)`, `[0]['loss']` is `['loss']`)."""
    if not updated:
        return
    for d in leaves:
        m = re.match(r"^\[(0|1)\](.*)$", d.path)
        if m and m.group(1) == "0":
            d.path = m.group(2) or "output"
        elif m and re.fullmatch(r"\[(\d+)\]", m.group(2)):
            i = int(m.group(2)[1:-1])
            d.path = f"{updated[i]} (updated)" if i < len(updated) else d.path


def _analyses(m: JitMeasurement, compiled: Any) -> None:
    cost = _compat.cost_analysis(compiled)
    m.flops = cost.get("flops")
    m.transcendentals = cost.get("transcendentals")
    m.bytes_accessed = cost.get("bytes accessed")
    try:
        mem = compiled.memory_analysis()
    except Exception:
        mem = None
    if mem is not None:
        m.argument_bytes = getattr(mem, "argument_size_in_bytes", None)
        m.output_bytes = getattr(mem, "output_size_in_bytes", None)
        m.temp_bytes = getattr(mem, "temp_size_in_bytes", None)
        m.alias_bytes = getattr(mem, "alias_size_in_bytes", None)
        m.code_bytes = getattr(mem, "generated_code_size_in_bytes", None) or None
