"""The kernels XLA made of the user's program (`--kernels`): every fusion, library call,
copy and collective the compiled program runs, with the equations it holds, the bytes it
reads and writes in memory and the flops it does, and why a value between two
elementwise kernels was left in memory.

A kernel is an instruction of the entry computation that does work: anything but
parameters, constants, tuples, bitcasts and other free bookkeeping. A while loop or a
conditional is no kernel; the kernels of its body and branches are (a body's run once
per iteration where XLA knows the trip count). XLA:CPU compiles a small loop behind a
`call` as one kernel (`xla_cpu_small_call`), so that call is one here.

Bytes are the sizes of a kernel's operands and results as the HLO writes them (what a
kernel reads and writes in memory; a value inside a fusion never leaves registers or
cache). Flops follow `core.cost`'s rules (XLA's HloCostAnalysis): 2·M·N·K for a dot, 2
per multiply-add of a convolution's window, one per element of an elementwise op or of a
reduction's input, none for data movement; a fusion's are those of what it fused.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from . import hlo

FREE = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast",
                  "after-all", "add-dependency", "opt-barrier", "domain", "partition-id",
                  "replica-id"})
CONTROL = frozenset({"while", "conditional", "call"})
COLLECTIVES = frozenset({"all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                         "collective-permute", "collective-broadcast", "ragged-all-to-all"})
ELEMENTWISE = frozenset({
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "remainder",
    "negate", "abs", "exponential", "exponential-minus-one", "log", "log-plus-one", "tanh",
    "logistic", "sqrt", "rsqrt", "cbrt", "sine", "cosine", "tan", "atan2", "erf", "compare",
    "select", "clamp", "and", "or", "xor", "not", "floor", "ceil", "round-nearest-afz",
    "round-nearest-even", "sign", "is-finite", "shift-left", "shift-right-logical",
    "shift-right-arithmetic", "popcnt", "count-leading-zeros", "real", "imag", "complex",
    "atan", "acos", "asin", "acosh", "asinh", "atanh", "cosh", "sinh", "erfc",
    "lgamma", "digamma"})
REDUCES = frozenset({"reduce", "reduce-window"})
_TRIP = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')
_TARGET = re.compile(r'custom_call_target="([^"]*)"')


@dataclass
class Kernel:
    """One kernel of the compiled program: what it holds, moves and computes per run."""

    kernel: str                  # the HLO instruction's name (`multiply_add_fusion.2`)
    kind: str                    # "loop fusion", "dot fusion", "dot", "copy", "all-reduce"…
    equations: tuple[int, ...]   # the jaxpr equations it holds (walk order)
    flops: float                 # per run
    bytes_read: int              # its operands, per run
    bytes_written: int           # its results, per run
    order: int                   # its place in XLA's schedule (1 = first)
    times: int | None = 1        # runs per call (a loop's trip count; None: not known)
    loop: str = ""               # the loops around it, outermost first ("while ×10")
    lines: tuple[str, ...] = ()  # the user's lines of its equations (`mlp:4`)
    breaks: str = ""             # why its result leaves it for memory, where that is read
    readers: tuple[str, ...] = ()   # the kernels that read its results
    seconds: float | None = None    # measured device time per call (`--profile`)
    elementwise: bool = False    # a loop fusion or a lone elementwise instruction
    own: int | None = None       # the equation of its last instruction (a fusion's root)
    ends: str = ""               # that equation's primitive (`tanh`)

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float:
        """Flops per byte moved (0 for a kernel that moves nothing)."""
        return self.flops / self.bytes if self.bytes else 0.0


@dataclass
class Program:
    """The kernels in schedule order, and which kernels hold each equation."""

    kernels: list[Kernel]
    holders: dict[int, list[int]] = field(default_factory=dict)  # equation → kernel index
    hlo: str = ""                  # the compiled program's text they were read from


def kernels(text: str) -> Program:
    """Every kernel of the compiled HLO `text`, in XLA's schedule order."""
    module = hlo.read(text)
    program = module.instructions
    members: dict[str, list[hlo.Instruction]] = {}
    for ins in program.values():
        members.setdefault(ins.computation, []).append(ins)
    out: list[Kernel] = []

    def visit(comp: str, times: int | None, loop: str, seen: tuple[str, ...]) -> None:
        for ins in members.get(comp, ()):
            op = ins.opcode
            if op in FREE or op.endswith("-done"):
                continue
            if op == "while":
                trip = _TRIP.search(ins.attrs)
                n = int(trip.group(1)) if trip else None
                inner = times * n if times is not None and n is not None else None
                where = f"{loop} › " if loop else ""
                for callee in ins.callees:
                    if callee not in seen:
                        visit(callee, inner, where + (f"while ×{n}" if n else "while"),
                              seen + (callee,))
                continue
            if op in CONTROL and "xla_cpu_small_call" not in ins.attrs:
                kind = "branch" if op == "conditional" else ""
                for callee in ins.callees:
                    if callee not in seen:
                        visit(callee, times, loop + (f" › {kind}" if kind and loop else
                                                     kind), seen + (callee,))
                continue
            out.append(_kernel(ins, program, members, len(out) + 1, times, loop))

    visit(module.entry, 1, "", (module.entry,))
    _join_readers(out, program)
    holders: dict[int, list[int]] = {}
    for k, kernel in enumerate(out):
        for e in kernel.equations:
            holders.setdefault(e, []).append(k)
    return Program(out, holders, text)


def _kernel(ins: hlo.Instruction, program: dict, members: dict, order: int,
            times: int | None, loop: str) -> Kernel:
    inside = _inside(ins, members)
    read = sum(sum(program[o].result_bytes) for o in dict.fromkeys(ins.operands)
               if o in program)
    equations = sorted({t for i in [ins] + inside for t in i.tags[-1:]})
    return Kernel(ins.name, _kind(ins, inside), tuple(equations),
                  sum(_flops(i, program) for i in (inside or [ins])), read,
                  sum(ins.result_bytes), order, times, loop,
                  elementwise=_elementwise(ins, inside),
                  own=ins.tags[-1] if ins.tags else None)


def _inside(ins: hlo.Instruction, members: dict) -> list[hlo.Instruction]:
    """The instructions a fusion (or a small call) runs, nested ones included."""
    if ins.opcode not in ("fusion", "call"):
        return []
    out, todo, seen = [], list(ins.callees), set()
    while todo:
        comp = todo.pop()
        if comp in seen:
            continue
        seen.add(comp)
        for i in members.get(comp, ()):
            out.append(i)
            todo.extend(i.callees)
    return out


def _kind(ins: hlo.Instruction, inside: list[hlo.Instruction]) -> str:
    op = ins.opcode.removesuffix("-start")
    if op == "custom-call":
        target = _TARGET.search(ins.attrs)
        return f"custom-call {target.group(1)}" if target else "custom-call"
    if op == "call":
        return "loop (one kernel)"
    if op != "fusion":
        return op
    ops = {i.opcode for i in inside}
    for named in ("convolution", "dot", "scatter", "reduce", "reduce-window", "sort"):
        if named in ops:
            return ("reduction" if named == "reduce" else named) + " fusion"
    return "loop fusion"


def _elementwise(ins: hlo.Instruction, inside: list[hlo.Instruction]) -> bool:
    """A kernel that maps elements to elements: fusing its neighbours into it was open."""
    if ins.opcode == "fusion":
        return all(i.opcode in ELEMENTWISE or i.opcode in FREE or i.opcode in
                   ("broadcast", "convert", "reshape") for i in inside)
    return ins.opcode in ELEMENTWISE


def _elements(shape: str) -> int:
    dims = re.search(r"\[([\d,]*)\]", shape)
    return math.prod(int(d) for d in dims.group(1).split(",") if d) if dims else 1


def _flops(ins: hlo.Instruction, program: dict) -> float:
    """One instruction's flops (the module doc's rules)."""
    op = ins.opcode
    if op in ELEMENTWISE:
        return float(_elements(ins.shape))
    if op == "dot" and ins.operands and ins.operands[0] in program:
        lhs = _dims(program[ins.operands[0]].shape)
        contracting = [int(d) for d in (ins.attr("lhs_contracting_dims") or "{}").strip(
            "{}").split(",") if d]
        k = math.prod(lhs[d] for d in contracting if d < len(lhs))
        return 2.0 * _elements(ins.shape) * k
    if op == "convolution" and len(ins.operands) > 1 and ins.operands[1] in program:
        rhs = _dims(program[ins.operands[1]].shape)
        labels = (ins.attr("dim_labels") or "").split("_")
        out_dim = labels[1].find("o") if len(labels) > 1 else -1
        per_output = math.prod(rhs) // max(1, rhs[out_dim] if 0 <= out_dim < len(rhs)
                                           else 1)
        return 2.0 * _elements(ins.shape) * per_output
    if op in REDUCES and ins.operands and ins.operands[0] in program:
        return float(_elements(program[ins.operands[0]].shape))
    return 0.0


def _dims(shape: str) -> list[int]:
    dims = re.search(r"\[([\d,]*)\]", shape)
    return [int(d) for d in dims.group(1).split(",") if d] if dims else []


# ---- between kernels: who reads a result, and why it left the kernel ----------------------

def _join_readers(found: list[Kernel], program: dict) -> None:
    """Each kernel's readers (through tuples and get-tuple-elements), and, for an
    elementwise kernel whose result an elementwise kernel reads, why XLA kept the value
    in memory where that can be read from the program."""
    by_name = {k.kernel: k for k in found}

    def readers(name: str, seen: set) -> list[str]:
        out = []
        for user in program[name].users:
            if user in seen:
                continue
            seen.add(user)
            if user in by_name:
                out.append(user)
            elif program[user].opcode in FREE or program[user].opcode in CONTROL:
                out.extend(readers(user, seen))
        return out

    for k in found:
        k.readers = tuple(dict.fromkeys(readers(k.kernel, set())))
        k.breaks = _why_apart(k, [by_name[r] for r in k.readers], program)


def _why_apart(k: Kernel, readers: list[Kernel], program: dict) -> str:
    if not readers:
        return ""
    if any(r.kind.startswith("custom-call") for r in readers):
        target = next(r.kind for r in readers if r.kind.startswith("custom-call"))
        what = "a host callback" if "callback" in target else f"a {target}"
        return f"its result is read by {what}, and XLA fuses nothing into a custom call"
    if not k.elementwise:
        if k.kind == "reduction fusion" and any(r.elementwise for r in readers):
            return "a reduction followed by a broadcast: the whole reduction must end " \
                   "before an element of its result can be read"
        return ""
    if not any(r.elementwise for r in readers):
        return ""
    if len(readers) > 1:
        return f"its result is read by {len(readers)} kernels, so it is kept in memory " \
               "rather than recomputed in each"
    (r,) = readers
    if r.kind in ("copy", "transpose"):
        return "its reader changes the layout (a transpose or copy)"
    return ""


# ---- joined to the user's program ------------------------------------------------------

def of_call(analysis, traced, graph, measured=None, site=None) -> Program:
    """The kernels of the analysis compile of `traced`, each with the user's lines of its
    equations, the time `measured` (a `profile.Measured`) gives it, and, where a result
    the backward pass also reads is why a kernel ended, that said. An equation the graph
    draws no node for (a loop's own counter, under the `while` that holds it) has the
    line `site(equation)` gives."""
    from ..cost import estimate, line_of, rows, walk

    found = kernels(analysis.compiled_text)
    estimates = estimate(traced.jaxpr)
    places = {r.index: r for r in rows(graph, estimates)}
    primitives = {e.index: e.primitive for e in estimates}
    equations = {i: eqn for i, eqn, *_ in walk(traced.jaxpr)} if site else {}

    def line(e: int) -> str:
        if e in places or e not in equations:
            return line_of(places.get(e), graph)
        return site(equations[e])

    by_name = {k.kernel: k for k in found.kernels}
    for k in found.kernels:
        k.ends = primitives.get(k.own, "") if k.own is not None else ""
        k.lines = tuple(dict.fromkeys(w for e in k.equations if (w := line(e))))
        if measured is not None:
            k.seconds = measured.instructions.get(k.kernel, 0.0)
    backward = {i for i, r in places.items() if r.backward}
    for k in found.kernels:
        readers = [by_name[r] for r in k.readers]
        called = [r.ends for r in readers if "callback" in r.kind and r.ends]
        if called and "a host callback" in k.breaks:
            k.breaks = k.breaks.replace("a host callback", f"a host callback ({called[0]})")
        forward = not set(k.equations) & backward
        if k.breaks.startswith("its result is read by") and forward and any(
                set(r.equations) & backward for r in readers):
            k.breaks = f"its result is also read by the backward pass ({len(readers)} " \
                       "kernels read it)"
    return found


def value_bytes(jaxpr) -> dict[tuple[int, int], int]:
    """The bytes of every value of `jaxpr` by (equation, output) in walk order, and of
    each input by (-1, position): what an edge between two kernels carries."""
    from ... import _compat
    from ..cost import walk

    def size(aval) -> int:
        shape = getattr(aval, "shape", ())
        itemsize = getattr(getattr(aval, "dtype", None), "itemsize", 0) or 0
        return math.prod(shape) * itemsize

    out = {(-1, k): size(v.aval) for k, v in enumerate(_compat.open_jaxpr(jaxpr).invars)}
    for i, eqn, *_ in walk(jaxpr):
        out.update(((i, k), size(v.aval)) for k, v in enumerate(eqn.outvars))
    return out


# ---- the machine's balance: where memory-bound turns compute-bound ----------------------

@dataclass(frozen=True)
class Balance:
    """The device's measured peak: flops per second of a large matmul and bytes per second
    of a large elementwise map; their ratio is the roofline's ridge point."""

    flops_per_s: float
    bytes_per_s: float
    platform: str
    device: str

    @property
    def ridge(self) -> float:
        """Flops per byte above which a kernel is bound by compute, not by memory."""
        return self.flops_per_s / self.bytes_per_s

    def bound(self, k: Kernel) -> str:
        if not k.flops and not k.bytes:
            return "—"
        return "compute" if k.intensity >= self.ridge else "memory"

    def best_s(self, k: Kernel) -> float:
        """The roofline's least time for one run of `k`."""
        return max(k.flops / self.flops_per_s, k.bytes / self.bytes_per_s)


_BALANCES: dict[str, Balance] = {}


def balance(device=None) -> Balance:
    """The balance of `device` (the default device), measured once per process: the best
    of five runs of a 1024² matmul and of a 32 MiB elementwise map."""
    import time

    import jax
    import jax.numpy as jnp

    device = device or jax.devices()[0]
    key = f"{device.platform}:{device.device_kind}"
    if key in _BALANCES:
        return _BALANCES[key]

    def best(f, *args) -> float:
        jax.block_until_ready(f(*args))
        times = []
        for _ in range(5):
            start = time.perf_counter()
            jax.block_until_ready(f(*args))
            times.append(time.perf_counter() - start)
        return min(times)

    a = jax.device_put(jnp.ones((1024, 1024), jnp.float32), device)
    v = jax.device_put(jnp.ones((8 * 2**20,), jnp.float32), device)
    matmul = best(jax.jit(lambda a: a @ a), a)
    stream = best(jax.jit(lambda v: v * 2.0), v)
    found = Balance(2.0 * 1024**3 / matmul, 2.0 * v.nbytes / stream, device.platform,
                    device.device_kind)
    _BALANCES[key] = found
    return found
