"""Measured device time per equation: run a traced call under JAX's profiler and join each
executed HLO instruction back to the equations it came from.

How the join works: a copy of the jaxpr has each equation's name stack end in
`jaxmagic#<index>` (the index `Node.eqns` uses). Lowering writes name stacks into every HLO
instruction's `op_name` metadata, and XLA keeps that metadata on the instructions inside
a fusion, so a fusion names every equation it fused. The profiler's xplane has one event
per executed instruction (`hlo_op` stat; one per loop iteration inside a while); nested
events (a while and its body) have their children's time subtracted. A fusion of several
equations has its time split over them in proportion to their estimated flops (or bytes),
and those equations are marked as split.

Instructions run on a thread pool on CPU, so summed time exceeds wall time; shares are of
the summed device time. GPU traces put kernels on `/device:GPU:N` planes (one line per
stream) with the same `hlo_op` and `hlo_module` stats; when device planes carry events
for the module, host planes are ignored.
"""
from __future__ import annotations

import glob
import re
import tempfile
import time
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable

import jax

from ... import _compat
from ..cost import EqnCost, estimate, rows, sub_jaxprs
from ..trace import Traced
from . import hlo
from .hlo import TAG


class ProfilerUnavailable(RuntimeError):
    """The profiler could not run or its trace held nothing to join (the message says)."""


@dataclass
class Measured:
    """Device time per equation, per call of the program."""

    seconds: dict[int, float]     # equation index → self time per call
    split: set[int]               # equations whose time came from a shared fusion
    total_s: float                # all of the module's instructions, per call
    wall_s: float                 # median wall time of one call under the profiler
    runs: int
    platform: str
    unjoined: dict[str, float] = field(default_factory=dict)  # instruction → seconds
    instructions: dict[str, float] = field(default_factory=dict)   # all of them, per call
    # instruction → {equation: the seconds per call of it that equation was charged}
    charged: dict[str, dict[int, float]] = field(default_factory=dict)

    @property
    def joined_s(self) -> float:
        return sum(self.seconds.values())

    @property
    def coverage(self) -> float:
        """Share of the measured device time joined to equations."""
        return self.joined_s / self.total_s if self.total_s else 0.0


# ---- tagging ------------------------------------------------------------------------------

def tagged(jaxpr: Any) -> Any:
    """A copy of `jaxpr` whose equations' name stacks end in `jaxmagic#<walk index>`.

    The user's jaxpr is left as it is; nested jaxprs are copied per use, so a layer jitted
    once and called 16 times gets 16 differently tagged bodies.
    """
    counter = [0]

    def go(j):
        eqns = []
        for eqn in _compat.open_jaxpr(j).eqns:
            i = counter[0]
            counter[0] += 1
            params = dict(eqn.params)
            for key, pos in sub_jaxprs(eqn):
                value = params[key]
                if pos is not None:
                    items = list(value)
                    items[pos] = go(items[pos])
                    params[key] = tuple(items)
                elif not isinstance(value, tuple):
                    params[key] = go(value)
            eqns.append(_compat.with_scope(eqn, f"{TAG}{i}", params))
        return _compat.with_eqns(j, eqns)

    return go(jaxpr)


def flat_args(traced: Traced) -> list:
    """The traced call's array arguments, flat, in the order of the jaxpr's inputs: the
    partition's traced leaves (NNX state included), as `trace` passed them."""
    _, dyn_args, dyn_kwargs = traced.partition.inputs(bind_static=True)
    leaves = jax.tree_util.tree_leaves((tuple(dyn_args), dyn_kwargs))
    if len(leaves) != len(_compat.open_jaxpr(traced.jaxpr).invars):
        raise ProfilerUnavailable("the call's arguments do not match its jaxpr's inputs")
    return leaves


def donated_leaves(traced: Traced) -> tuple[int, ...]:
    """The flat inputs (as `flat_args` orders them) that the user's program donates: its
    `jax.jit`'s `donate_argnums` / `donate_argnames`, or a `jax.pmap` or jit inside it that
    is handed an input (its jaxpr says so); a compile for analysis reuses their memory for
    outputs, as the user's program does."""
    from ..libraries import resolved, unwrap_jit

    inner = _compat.donated_inputs(traced.jaxpr)
    found = unwrap_jit(traced.call.func)
    opts = resolved(found[1], traced.call.args, traced.call.kwargs) if found is not None else {}
    n, params = len(traced.call.args), traced.partition.call.params
    names = set(opts.get("donate_argnames", ()))
    nums = {i % n for i in opts.get("donate_argnums", ()) if n} | {
        params.index(k) for k in names if k in params and params.index(k) < n}
    if not nums and not names:
        return tuple(sorted(inner))
    pos, args, kwargs = traced.partition.inputs(bind_static=True)
    out, start = [], 0
    for donated, value in [(i in nums, a) for i, a in zip(pos, args)] + [
            (k in names, kwargs[k]) for k in sorted(kwargs)]:
        count = len(jax.tree_util.tree_leaves(value))
        out.extend(range(start, start + count) if donated else ())
        start += count
    return tuple(sorted(set(out) | inner))


def compile_tagged(traced: Traced, prefix: str = "jaxmagic_profile_",
                   compiler_options: dict | None = None, donate: tuple[int, ...] = ()):
    """(compiled executable, its HLO text, the flat inputs it keeps: `kept_inputs`) of the
    tagged copy of `traced`'s jaxpr, in a program named `prefix` + the function's name,
    donating the flat inputs `donate` (only for a program that never runs on the user's
    arrays)."""
    run = _compat.jaxpr_as_fun(tagged(traced.jaxpr))

    def program(*args):
        return run(*args)

    program.__name__ = program.__qualname__ = prefix + re.sub(
        r"\W", "_", traced.func_name)[:40]
    with warnings.catch_warnings():      # "Some donated buffers were not usable": as jit
        warnings.simplefilter("ignore")  # would say when the user runs it
        lowered = jax.jit(program, donate_argnums=donate).lower(*flat_args(traced))
    compiled = lowered.compile(compiler_options) if compiler_options else lowered.compile()
    return compiled, compiled.as_text(), _compat.kept_inputs(lowered)


# ---- which equations each instruction stands for -----------------------------------------

MATMUL_OPCODES = ("dot", "convolution")
# instructions whose callees run inside their own event: a fusion's computation, and a
# call's (XLA:CPU compiles a small while loop into one kernel behind a `call`)
_INLINING = ("fusion", "call")


@dataclass
class Instructions:
    """What the compiled HLO says about each instruction, by name."""

    module: str
    tags: dict[str, set[int]]      # the equations it stands for (a fusion: all it fused)
    matmul: set[str]               # instructions that are or contain a dot/convolution
    own: dict[str, int] = field(default_factory=dict)   # its own op_name's equation
    opcode: dict[str, str] = field(default_factory=dict)
    operands: dict[str, list[str]] = field(default_factory=dict)
    computation: dict[str, str] = field(default_factory=dict)   # → the one holding it
    roots: dict[str, str] = field(default_factory=dict)         # computation → its ROOT
    callers: dict[str, str] = field(default_factory=dict)       # computation → caller
    parameters: dict[str, int] = field(default_factory=dict)    # parameter → its number;
    # the ENTRY's: the flat input it is (jit drops unused inputs: `kept`)
    index: dict[str, int] = field(default_factory=dict)         # get-tuple-element → index
    bodies: dict[str, str] = field(default_factory=dict)        # while → its body
    entry: str = ""                # the ENTRY computation


def instruction_tags(hlo_text: str, kept: list[int] | None = None) -> Instructions:
    """Read the equations each instruction came from out of its `op_name` metadata (its
    own: the innermost tag; a fusion's or call's: those of everything it calls), and the
    flat input each ENTRY parameter is (the `kept` inputs' numbers)."""
    module = hlo.read(hlo_text)
    program = module.instructions
    out = Instructions(module.name, {}, set(), entry=module.entry)
    members: dict[str, list[str]] = defaultdict(list)   # computation → instructions
    for name, ins in program.items():
        members[ins.computation].append(name)
        out.opcode[name] = ins.opcode
        out.operands[name] = ins.operands
        out.computation[name] = ins.computation
        if ins.root:
            out.roots[ins.computation] = name
        if ins.tags:
            out.own[name] = ins.tags[-1]
        if ins.opcode == "parameter" and ins.operand_text.strip().isdigit():
            n = int(ins.operand_text)
            out.parameters[name] = kept[n] if kept and ins.computation == module.entry \
                and n < len(kept) else n
        elif ins.opcode == "get-tuple-element" and (k := ins.attr("index")) is not None:
            out.index[name] = int(k)
        elif ins.opcode == "while" and (b := ins.attr("body")) is not None:
            out.bodies[name] = b.lstrip("%")

    def inside(comps: list[str], seen: set) -> tuple[set[int], bool]:
        tags, matmul = set(), False
        for comp in comps:
            if comp in seen:
                continue
            seen.add(comp)
            for name in members.get(comp, ()):
                t, mm = inside(program[name].callees, seen)
                tags |= set(program[name].tags[-1:]) | t
                matmul = matmul or mm or program[name].opcode in MATMUL_OPCODES
        return tags, matmul

    for name, ins in program.items():
        t, mm = inside(ins.callees, set()) if ins.opcode in _INLINING else (set(), False)
        out.tags[name] = set(ins.tags[-1:]) | t
        if mm or ins.opcode in MATMUL_OPCODES:
            out.matmul.add(name)
        for comp in ins.callees:
            out.callers.setdefault(comp, name)
    return out


# ---- the xplane: self time per executed instruction --------------------------------------

def _stats(event: Any) -> dict:
    try:
        return dict(event.stats)
    except Exception:      # a stat whose value the reader cannot convert
        return {}


def _module_events(planes: Iterable[Any], module: str):
    """{(plane, line): [(start, duration, instruction)]} of the module's instructions."""
    found: dict[tuple[str, str], list] = defaultdict(list)
    for plane in planes:
        if not plane.name.startswith(("/device:", "/host:CPU")):
            continue
        for line in plane.lines:
            for ev in line.events:
                st = _stats(ev)
                op = st.get("hlo_op") or (ev.name if line.name == "XLA Ops" else None)
                if op is None or st.get("hlo_module", module) != module:
                    continue
                found[(plane.name, line.name)].append(
                    (float(ev.start_ns), float(ev.duration_ns), str(op)))
    device = {k: v for k, v in found.items() if k[0].startswith("/device:")}
    return device or found


def self_times(lines: dict) -> dict[str, float]:
    """Seconds per instruction with nested events' time subtracted, summed over lines."""
    out: dict[str, float] = defaultdict(float)
    for events in lines.values():
        stack: list[list] = []        # [end, instruction, self ns]
        for start, dur, op in sorted(events, key=lambda e: (e[0], -e[1])):
            while stack and stack[-1][0] <= start:
                end, name, own = stack.pop()
                out[name] += own * 1e-9
            if stack:
                stack[-1][2] -= min(dur, stack[-1][0] - start)
            stack.append([start + dur, op, dur])
        for end, name, own in stack:
            out[name] += own * 1e-9
    return out


def join(per_instruction: dict[str, float], hlo: Instructions,
         costs: dict[int, EqnCost], runs: int):
    """(seconds per equation, split equations, unjoined instructions, what each joined
    instruction charged each equation), per call."""
    seconds: dict[int, float] = defaultdict(float)
    split: set[int] = set()
    unjoined: dict[str, float] = {}
    charged: dict[str, dict[int, float]] = {}
    for name, s in per_instruction.items():
        eqns = sorted(hlo.tags.get(name, ()))
        if name in hlo.matmul:
            eqns = _with_matmul(eqns, costs)
        if not eqns:
            unjoined[name] = s / runs
            continue
        if len(eqns) > 1:
            split.update(eqns)
        charged[name] = {e: s * w / runs for e, w in zip(eqns, _weights(eqns, costs))}
        for e, share in charged[name].items():
            seconds[e] += share
    return dict(seconds), split, unjoined, charged


MATMULS = ("dot_general", "conv_general_dilated")


def _with_matmul(eqns: list[int], costs: dict[int, EqnCost]) -> list[int]:
    """A dot or convolution instruction named after a transpose or reshape (XLA folds
    `transpose(dot(a, b))` into one dot that keeps the transpose's metadata): add the
    matmul equation that feeds it."""
    if any(costs[e].primitive in MATMULS for e in eqns if e in costs):
        return eqns
    frontier, seen = list(eqns), set(eqns)
    for _ in range(3):
        frontier = [s for e in frontier if e in costs for s in costs[e].sources
                    if s not in seen]
        seen.update(frontier)
        found = [e for e in frontier if costs[e].primitive in MATMULS]
        if found:
            return sorted(set(eqns) | {found[0]})
    return eqns


def _weights(eqns: list[int], costs: dict[int, EqnCost]) -> list[float]:
    for measure in ("flops", "bytes"):
        w = [getattr(costs[e], measure) if e in costs else 0.0 for e in eqns]
        if sum(w) > 0:
            return [x / sum(w) for x in w]
    return [1 / len(eqns)] * len(eqns)


# ---- the run -------------------------------------------------------------------------------

def _read_trace(directory: str):
    paths = glob.glob(f"{directory}/**/*.xplane.pb", recursive=True)
    if not paths:
        raise ProfilerUnavailable("the profiler wrote no trace file")
    return jax.profiler.ProfileData.from_file(max(paths)).planes


def measure(traced: Traced, costs: list[EqnCost], budget: float = 3.0,
            max_runs: int = 10) -> Measured:
    """Compile, warm up, then run under `jax.profiler.trace` as often as fits `budget`."""
    compiled, hlo, kept = compile_tagged(traced)
    hlo_info = instruction_tags(hlo, kept)
    args = flat_args(traced)
    jax.block_until_ready(compiled(*args))            # warm-up
    start = time.perf_counter()
    jax.block_until_ready(compiled(*args))
    once = time.perf_counter() - start
    runs = max(1, min(max_runs, int(budget / 2 / max(once, 1e-6))))
    walls = []
    with tempfile.TemporaryDirectory(prefix="jaxmagic-profile-") as d:
        try:
            with jax.profiler.trace(d):
                for _ in range(runs):
                    start = time.perf_counter()
                    jax.block_until_ready(compiled(*args))
                    walls.append(time.perf_counter() - start)
        except RuntimeError as e:        # e.g. another profiler session is running
            raise ProfilerUnavailable(f"the profiler could not run: {e}") from e
        planes = _read_trace(d)
    lines = _module_events(planes, hlo_info.module)
    if not lines:
        raise ProfilerUnavailable(f"the trace holds no events of {hlo_info.module}")
    per_instruction = self_times(lines)
    seconds, split, unjoined, charged = join(per_instruction, hlo_info,
                                             {c.index: c for c in costs}, runs)
    walls.sort()
    return Measured(seconds, split, sum(per_instruction.values()) / runs,
                    walls[len(walls) // 2], runs, _platform(next(iter(lines))[0]), unjoined,
                    {k: v / runs for k, v in per_instruction.items()}, charged)


def _platform(plane: str) -> str:
    """'GPU' for '/device:GPU:0', 'CPU' for '/host:CPU'."""
    parts = plane.strip("/").split(":")
    return parts[1] if len(parts) > 1 else plane


def cost_rows(traced: Traced, graph: Any, profile: bool, budget: float = 3.0):
    """(rows, Measured or None, why the profiler could not run or None).

    With `profile`, rows carry measured seconds; when the profiler is unavailable or the
    tagged program fails to compile or run, they carry estimates only, with the reason.
    """
    estimates = estimate(traced.jaxpr)
    if not profile:
        return rows(graph, estimates), None, None
    try:
        m = measure(traced, estimates, budget)
    except ProfilerUnavailable as e:
        return rows(graph, estimates), None, str(e)
    except Exception as e:        # a program the copy cannot lower or run: estimate only
        return rows(graph, estimates), None, f"profiling failed: {type(e).__name__}: {e}"
    return rows(graph, estimates, m.seconds, m.split), m, None
