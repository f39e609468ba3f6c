"""Where a compiled call's memory goes: live bytes over XLA's schedule, the peak, and the
buffers alive at it, joined back to the equations and inputs they hold.

Read from the analysis compile (`analysis.analyze`): XLA's buffer assignment gives every
value's allocation, offset and size; its live ranges give the schedule and one
[start, end] per value. Live bytes at step t are the values with start ≤ t ≤ end, a slot
(allocation, offset) counted once however many values share it (a while loop's carried
values, a fusion writing in place); XLA's constant allocations are embedded in the
program, outside its temp + arguments + outputs, so they are a total of their own, not
part of the curve. XLA's own "(peak)" line is not the maximum of its own
ranges, and `memory_analysis().peak_memory_in_bytes` on CPU is arguments + outputs, so
neither is used.

A value joins to the equation of its defining instruction: its own tag, a fusion's root,
an operand's, the enclosing while's; an entry parameter to the input it is.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from ... import _compat
from ..cost import CostRow, estimate, rows, sub_jaxpr, sub_jaxprs, walk
from ..trace import Traced
from .analysis import Analysis
from .profile import Instructions

# kinds of buffers live at the peak
ARGUMENT, OUTPUT, SAVED, RECOMPUTED, GRADIENT, TEMPORARY, CONSTANT, UNATTRIBUTED = (
    "argument", "output", "saved activation", "recomputed", "gradient", "temporary",
    "constant", "unattributed")
_FLOATING = re.compile(r"^(f\d+|bf16|f8\w*|c64|c128)\[")    # what a cotangent can be

_VALUE = re.compile(r"^\s*value: <\d+ ([^\s{>]+)(\{[\d,]*\})?(?: \(phi\))?[^>]*> "
                    r"\(size=(\d+),offset=(\d+)\): (.*)$")
_LAYOUT = re.compile(r"\{[^{}]*\}")          # `{1,0}` after a shape
_STEP = re.compile(r"^\s*(\d+):(\S+)\s*$")
_RANGE = re.compile(r"^\s*(\S+?)(\{[\d,]*\}):(\d+)-(\d+)\s*$")


class MemoryUnavailable(RuntimeError):
    """XLA's dump of the program held no buffer assignment or live ranges to read."""


@dataclass
class Buffer:
    """One value XLA keeps in memory, with what it holds for the user."""

    value: str                 # XLA's value, `wrapped_tanh{}` or `while.3{2}`
    instruction: str           # the instruction that defines it
    bytes: int
    shape: str                 # `f32[64,128]`
    kind: str                  # argument | output | saved activation | temporary | constant
    start: int                 # first and last schedule step it is live
    end: int
    slot: tuple[int, int]      # (allocation, offset): values in one slot share memory
    allocation: str = ""       # XLA's kind of allocation: parameter N, output, constant, temp
    equation: int | None = None    # walk index of the equation it holds (graph numbering)
    input: str = ""            # the input it is (`params['w1']`), for arguments
    argument: str = ""         # the argument that input is a leaf of (`params`)
    where: str = ""            # the user's line, `layer:12`
    group: str = ""            # the call tree around it, as drawn (`layer ×16 › mlp`)
    primitive: str = ""
    backward: bool = False     # produced by the backward pass
    recompute: bool = False    # a forward value jax.checkpoint computes again for it
    gradient: bool = False     # depends on the cotangent: a gradient being computed


@dataclass
class MemoryProfile:
    """Live bytes over a compiled call's schedule, and what is alive at its peak."""

    curve: list[int]           # live bytes at each schedule step
    schedule: list[str]        # the instruction at each step
    peak_step: int
    live: list[Buffer]         # alive at the peak, one per slot, largest first
    backward_from: int | None  # the first step of the backward pass (None: no gradient)
    argument_bytes: int | None   # from compiled.memory_analysis(), where it reports
    output_bytes: int | None
    temp_bytes: int | None
    alias_bytes: int | None
    platform: str
    num_devices: int           # sizes are per device when > 1
    buffers: list[Buffer] = field(default_factory=list)   # every value with a live range
    peak_equation: int | None = None   # the equation the peak's instruction computes
    constant_bytes: int = 0    # XLA's constants: in the program, not in the curve
    peak_what: str = ""        # that equation, `dot_general at layer:12` ('' unknown)

    @property
    def peak_bytes(self) -> int:
        return self.curve[self.peak_step] if self.curve else 0

    @property
    def xla_total(self) -> int | None:
        """memory_analysis()'s temp + arguments + outputs − aliased: what XLA reserves."""
        parts = (self.temp_bytes, self.argument_bytes, self.output_bytes)
        return None if None in parts else sum(parts) - (self.alias_bytes or 0)

    def donatable_bytes(self) -> int:
        """Bytes of outputs live at the peak beside an argument of the same shape, also
        live: what donating those arguments (`donate_argnums`) lets XLA write in place,
        as a train step's new parameters could take the old ones' memory."""
        args = Counter(b.shape for b in self.live if b.kind == ARGUMENT)
        total = 0
        for b in self.live:
            if b.kind == OUTPUT and args[b.shape] > 0:
                args[b.shape] -= 1
                total += b.bytes
        return total

    def by_kind(self) -> dict[str, int]:
        """Bytes live at the peak per kind, largest first."""
        acc: Counter = Counter()
        for b in self.live:
            acc[b.kind] += b.bytes
        return dict(acc.most_common())


# ---- parsing XLA's dumps -------------------------------------------------------------------

def parse_buffers(text: str) -> dict[str, tuple[tuple[int, int], int, str, str]]:
    """{value: ((allocation, offset), size, shape, allocation kind)} from the buffer
    assignment. Allocation kinds: parameter N, output, constant, temp."""
    out = {}
    alloc, kind = -1, ""
    for line in text.splitlines():
        head = _compat.ALLOCATION.match(line)
        if head:
            alloc, kind = int(head.group(1)), _allocation_kind(head.group(2))
            continue
        m = _VALUE.match(line)
        if m and alloc >= 0:
            name, index, size, offset, shape = m.groups()
            out[name + (index or "{}")] = ((alloc, int(offset)), int(size),
                                          _LAYOUT.sub("", shape).strip(), kind)
    return out


def _allocation_kind(attrs: str) -> str:
    p = re.search(r"\bparameter (\d+)", attrs)
    if p:
        return f"parameter {p.group(1)}"
    if "maybe-live-out" in attrs:
        return "output"
    return "constant" if re.search(r"\bconstant\b", attrs) else "temp"


def parse_live_ranges(text: str) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """(the schedule, {value: (start, end)}) from XLA's HloLiveRange dump."""
    schedule: list[str] = []
    ranges: dict[str, tuple[int, int]] = {}
    section = ""
    for line in text.splitlines():
        s = line.strip()
        if s.endswith(":") and not _RANGE.match(line):
            section = s
            continue
        if section == "InstructionSequence:":
            m = _STEP.match(line)
            if m:
                schedule.append(m.group(2))
        elif section == "BufferLiveRange:":
            m = _RANGE.match(line)
            if m:
                ranges[m.group(1) + m.group(2)] = (int(m.group(3)), int(m.group(4)))
    return schedule, ranges


# ---- the curve ----------------------------------------------------------------------------

def live_curve(steps: int, spans: list[tuple[int, int, tuple[int, int], int]]) -> list[int]:
    """Live bytes at each step from (start, end, slot, size), a slot counted once (its
    largest live value)."""
    starts, ends = defaultdict(list), defaultdict(list)
    for start, end, slot, size in spans:
        starts[start].append((slot, size))
        ends[end].append((slot, size))
    live: dict[tuple[int, int], Counter] = defaultdict(Counter)
    total, curve = 0, []

    def change(slot, size, by):
        nonlocal total
        before = max(live[slot], default=0)
        live[slot][size] += by
        if live[slot][size] <= 0:
            del live[slot][size]
        total += max(live[slot], default=0) - before

    for t in range(steps):
        for slot, size in starts.get(t, ()):
            change(slot, size, 1)
        curve.append(total)
        for slot, size in ends.get(t, ()):
            change(slot, size, -1)
    return curve


# ---- joining values to equations -----------------------------------------------------------

# Instructions that hold their operand's data as it is (a view, a copy, a tuple of them):
# their value may be named after the operand, an input included. Any other instruction
# computes something new, never to be named after what it reads.
_VIEWS = ("bitcast", "copy", "copy-start", "copy-done", "reshape", "transpose", "tuple",
          "get-tuple-element", "bitcast-convert", "optimization-barrier")
# an instruction XLA made without an op_name, and the primitives it may be the work of
_MADE_BY = {"dot": ("dot_general",), "convolution": ("conv_general_dilated",)}


class _Join:
    """The equation (or entry parameter) an instruction's value holds."""

    def __init__(self, hlo: Instructions, readers: dict | None = None):
        self.hlo = hlo
        self.readers = readers or {}     # (what it reads) → [(walk index, primitive)]
        self.users: dict[str, list[str]] = defaultdict(list)
        for name, operands in hlo.operands.items():
            for o in operands:
                self.users[o].append(name)
        self.reads: dict[int, set] = defaultdict(set)     # walk index → what it reads
        for key, found in self.readers.items():
            for i, _ in found:
                self.reads[i] |= key
        self.callees: dict[str, list[str]] = defaultdict(list)
        for comp, caller in hlo.callers.items():
            self.callees[caller].append(comp)
        self.cache: dict[str, tuple[str, int] | None] = {}

    def __call__(self, name: str, depth: int = 0) -> tuple[str, int] | None:
        """("eqn", walk index) or ("input", parameter number), or None."""
        if name not in self.cache:
            self.cache[name] = None                     # cycles end here
            self.cache[name] = self._find(name, depth)
        return self.cache[name]

    def _find(self, name: str, depth: int) -> tuple[str, int] | None:
        hlo = self.hlo
        if name in hlo.own:
            return "eqn", hlo.own[name]
        comp = hlo.computation.get(name)
        if name in hlo.parameters and comp == hlo.entry:
            return "input", hlo.parameters[name]
        if depth > 8:
            return None
        if name not in hlo.parameters:          # a fusion's root, then the operands
            roots = [hlo.roots[c] for c in self.callees.get(name, ()) if c in hlo.roots]
            for other in roots:
                found = self(other, depth + 1)
                if found is not None:
                    return found
            operands = hlo.operands.get(name, [])
            if hlo.opcode.get(name) in _VIEWS:
                for other in operands:
                    found = self(other, depth + 1)
                    if found is not None:
                        return found
            elif operands:                      # computed: by the equation that reads
                return self._reader(name, operands, depth) or \
                    self._made_for(name, depth)   # what it reads, or for its users
        caller = hlo.callers.get(comp)           # the enclosing while, call or fusion
        if caller is not None and name in hlo.parameters and \
                hlo.opcode.get(caller) == "fusion":   # a fusion's parameter: its operand
            operands = hlo.operands.get(caller, [])
            n = hlo.parameters[name]
            return self(operands[n], depth + 1) if n < len(operands) else None
        return self(caller, depth + 1) if caller else None

    def _reader(self, name: str, operands: list[str], depth: int) -> tuple[str, int] | None:
        """The one equation that reads what instruction `name` reads (XLA:CPU's `dot`
        carries no op_name: the `dot_general` of the same two values), else None."""
        reads = frozenset(f for f in (self(o, depth + 1) for o in operands) if f is not None)
        if not reads:
            return None
        found = self.readers.get(reads, [])
        made_by = _MADE_BY.get(self.hlo.opcode.get(name, ""))
        if made_by is not None:
            found = [(i, p) for i, p in found if p in made_by]
        if len(found) > 1:                              # a forward value and its
            joined = [self(u, depth + 1) for u in self.users[name]]  # recomputation:
            roots = {u[1] for u in joined if u is not None and u[0] == "eqn"}
            fused = roots.union(*(self.hlo.tags.get(u, set())      # the one its users
                                  for u in self.users[name]))      # read, else the
            for users in (roots, fused):                       # one what they fused reads
                these = [(i, p) for i, p in found
                         if any(("eqn", i) in self.reads.get(u, ()) for u in users)]
                if len(these) == 1:
                    return "eqn", these[0][0]
            return None
        return ("eqn", found[0][0]) if len(found) == 1 else None

    def _made_for(self, name: str, depth: int) -> tuple[str, int] | None:
        """The one equation all users of `name` are, where XLA's rewrite dropped its
        op_name and what it reads tells none (XLA:CPU's `ynn_fusion` of a convolution's
        weight gradient, read only by its transpose, which keeps the op_name); else None."""
        made = {self(u, depth + 1) for u in self.users.get(name, ())}
        if len(made) == 1:
            (found,) = made
            if found is not None and found[0] == "eqn":
                return found
        return None


class _Cotangent:
    """Whether an instruction's value (or one element of a tuple) depends on the
    cotangent. An instruction tagged with an equation that computes no nested jaxpr has
    that equation's answer (`cotangent_equations`); any other (a loop's slicing and
    counters, XLA's copies, an untagged `dot`) is answered by XLA's own data flow: its
    operands, a tuple's element, a loop's carry from its initial value and its body."""

    def __init__(self, hlo: Instructions, gradient: set[int], leaves: set[int],
                 inputs: set[int]):
        self.hlo = hlo
        self.gradient, self.leaves, self.inputs = gradient, leaves, inputs
        self.cache: dict[tuple[str, int | None], bool] = {}
        self.before: dict[tuple[str, int | None], bool] = {}

    def settle(self, keys: list[tuple[str, int | None]]) -> dict:
        """{key: depends on the cotangent} for `keys`, a loop's carries settled: each round
        starts a cycle from the previous round's answer until none changes."""
        for _ in range(6):
            self.cache = {}
            found = {k: self(*k) for k in keys}
            if self.cache == self.before:
                break
            self.before = dict(self.cache)
        return found

    def __call__(self, name: str, index: int | None = None) -> bool:
        key = (name, index)
        if key not in self.cache:
            self.cache[key] = self.before.get(key, False)    # a cycle (a loop's carry)
            self.cache[key] = self._find(name, index)
        return self.cache[key]

    def _find(self, name: str, index: int | None) -> bool:
        hlo = self.hlo
        op = hlo.opcode.get(name)
        if op is None:
            return False
        operands = hlo.operands.get(name, [])
        if op in _SAME_DATA and len(operands) == 1:
            return self(operands[0], index)   # what it holds, whatever its tag (one
            #                                   output of a many-output equation)
        own = hlo.own.get(name)
        if own is not None and own in self.leaves:
            return own in self.gradient
        if own in self.gradient and all(hlo.opcode.get(o) == "constant" for o in operands):
            return True      # built from constants for a loop that carries cotangents
            #                  (the zeros a backward scan accumulates a gradient in)
        if op == "parameter":
            comp = hlo.computation.get(name)
            caller = hlo.callers.get(comp)
            if caller is None:                             # the entry's: a cotangent input?
                return hlo.parameters.get(name) in self.inputs
            return self._argument(caller, hlo.parameters.get(name, 0), index)
        if op == "get-tuple-element" and operands:
            return self(operands[0], hlo.index.get(name))
        if op == "tuple" and index is not None and index < len(operands):
            return self(operands[index])
        if op in ("opt-barrier", "optimization-barrier") and operands:
            return self(operands[0], index)     # its tuple, element by element
        if op == "while" and operands:
            root = hlo.roots.get(hlo.bodies.get(name, ""))
            return self(operands[0], index) or (root is not None and self(root, index))
        return any(self(o) for o in operands)

    def _argument(self, caller: str, n: int, index: int | None) -> bool:
        """Whether parameter `n` of a computation `caller` calls is a cotangent."""
        op = self.hlo.opcode.get(caller)
        operands = self.hlo.operands.get(caller, [])
        if op == "while":
            return self(caller, index)       # a loop's body and condition see its carry
        if op == "conditional":
            return any(self(o, index) for o in operands[1:])
        if n < len(operands):
            return self(operands[n], index)
        return False


_SAME_DATA = ("bitcast", "copy", "copy-start", "copy-done", "reshape", "transpose",
              "bitcast-convert")


def equation_reads(jaxpr: Any) -> dict[frozenset, list[tuple[int, str]]]:
    """{what an equation reads: [(walk index, primitive)]}, where what it reads is the set
    of ("input", n) and ("eqn", walk index) its operands are, as `_Join` finds them (an
    equation inside a jit reads the values outside it; inside a loop, the loop), also
    seen through layout equations (transpose, reshape, convert) that XLA folds away."""
    out: dict[frozenset, list[tuple[int, str]]] = defaultdict(list)
    layout: dict[tuple[str, int], tuple] = {}
    counter = [0]

    def go(j: Any, env: dict) -> dict:
        j = _compat.open_jaxpr(j)
        for eqn in j.eqns:
            i = counter[0]
            counter[0] += 1
            reads = [env[v] for v in eqn.invars if not _compat.is_literal(v) and v in env]
            name = eqn.primitive.name
            raw = frozenset(reads)
            seen = frozenset(x for r in reads for x in layout.get(r, (r,)))
            for key in {raw, seen}:
                if key:
                    out[key].append((i, name))
            mine = {v: ("eqn", i) for v in eqn.outvars}
            if name in _LAYOUT_PRIMITIVES and len(reads) == 1:
                layout[("eqn", i)] = layout.get(reads[0], (reads[0],))
            subs = [(k, pos) for k, pos in sub_jaxprs(eqn)
                    if not isinstance(sub_jaxpr(eqn, k, pos), tuple)]
            for k, pos in subs:
                sub = _compat.open_jaxpr(sub_jaxpr(eqn, k, pos))
                if name in ("scan", "while", "cond") or len(sub.invars) != len(eqn.invars):
                    inner = {v: ("eqn", i) for v in sub.invars}     # the loop's own
                else:
                    inner = {v: env.get(o, ("eqn", i)) if not _compat.is_literal(o)
                             else ("eqn", i) for v, o in zip(sub.invars, eqn.invars)}
                made = go(sub, inner)
                if name not in ("scan", "while", "cond") and \
                        len(sub.outvars) == len(eqn.outvars):
                    for v, o in zip(eqn.outvars, sub.outvars):
                        if not _compat.is_literal(o) and o in made:
                            mine[v] = made[o]
            env.update(mine)
        return env

    top = _compat.open_jaxpr(jaxpr)
    go(top, {v: ("input", k) for k, v in enumerate(top.invars)})
    return out


_LAYOUT_PRIMITIVES = ("transpose", "reshape", "convert_element_type", "squeeze",
                      "expand_dims", "broadcast_in_dim", "copy", "copy_p",
                      "name")     # checkpoint_name: no instruction of its own


def memory_profile(traced: Traced, graph: Any, analysis: Analysis) -> MemoryProfile:
    """The live-bytes curve of `analysis`'s program and the buffers alive at its peak,
    joined to `graph`'s equations (`graph.build(traced)`) and `traced`'s inputs."""
    values = parse_buffers(analysis.buffer_assignment)
    schedule, ranges = parse_live_ranges(analysis.live_ranges)
    if not values or not schedule:
        raise MemoryUnavailable(f"XLA's dump of {analysis.module or 'the program'} on "
                                f"{analysis.platform} held no "
                                + ("buffer assignment" if not values else "live ranges"))
    join = _Join(analysis.instructions, equation_reads(traced.jaxpr))
    info, recomputed, (gradient, cotangents, leaves), after = _equation_info(traced, graph)
    # per equation: True backward, False forward, None after the backward pass
    phase = {i: None if i in after else info[i].backward for i in info}
    buffers = []
    for value, (start, end) in ranges.items():
        found = values.get(value) or _carried(value, values, analysis.instructions)
        if found is None:
            continue
        slot, size, shape, alloc = found
        instruction = value.split("{")[0]
        buffers.append(_buffer(value, instruction, size, shape, alloc, start, end, slot,
                               join(instruction), traced, info, recomputed))
    flow = _Cotangent(analysis.instructions, gradient, leaves, cotangents)
    keys = {}
    for b in buffers:
        index = b.value[len(b.instruction):].strip("{}").split(",")[0]
        keys[b.value] = (b.instruction, int(index) if index.isdigit() else None)
    found = flow.settle(list(keys.values()))
    for b in buffers:
        # a cotangent is floating (an integer's is float0, no bytes): a loop's counter or
        # condition in the backward pass is no gradient
        b.gradient = bool(_FLOATING.match(b.shape)) and found[keys[b.value]]
    steps = len(schedule)
    bwd = backward_boundary([phase.get(analysis.instructions.own.get(name, -1))
                             for name in schedule])
    for b in buffers:
        b.kind = _kind(b, steps, bwd)
    # XLA's constants live in the program, outside temp + arguments + outputs: a line of
    # their own, not part of the curve
    held = [b for b in buffers if b.kind != CONSTANT]
    curve = live_curve(steps, [(b.start, b.end, b.slot, b.bytes) for b in held])
    peak = max(range(steps), key=curve.__getitem__)
    constant_bytes = sum({b.slot: b.bytes for b in buffers if b.kind == CONSTANT}.values())
    m = analysis.memory_analysis
    get = lambda key: getattr(m, key, None) if m is not None else None  # noqa: E731
    at = _equation(join(schedule[peak]))
    row = info.get(at) if at is not None else None
    what = (f"{row.primitive} at {row.where}" if row.where else row.primitive) \
        if row is not None else ""
    return MemoryProfile(curve, schedule, peak, _at(held, peak), bwd,
                         get("argument_size_in_bytes"), get("output_size_in_bytes"),
                         get("temp_size_in_bytes"), get("alias_size_in_bytes"),
                         analysis.platform, analysis.num_devices, buffers, at,
                         constant_bytes, what)


def _equation(found: tuple[str, int] | None) -> int | None:
    return found[1] if found is not None and found[0] == "eqn" else None


def _carried(value: str, values: dict, hlo: Instructions):
    """A while loop's carried value that has no slot of its own: the slot of the loop's
    initial value (the tuple element it starts from)."""
    name, _, index = value.partition("{")
    if hlo.opcode.get(name) != "while" or not index.rstrip("}"):
        return None
    init = (hlo.operands.get(name) or [""])[0]
    elements = hlo.operands.get(init, [])
    i = int(index.rstrip("}").split(",")[0])
    if hlo.opcode.get(init) == "tuple" and i < len(elements):
        return values.get(elements[i] + "{}")
    return values.get(f"{init}{{{index}")


def _buffer(value, instruction, size, shape, alloc, start, end, slot, found, traced,
            info, recomputed) -> Buffer:
    b = Buffer(value, instruction, size, shape, TEMPORARY, start, end, slot, alloc)
    if found is None:
        return b
    what, k = found
    if what == "input":
        b.input = traced.in_names[k] if k < len(traced.in_names) else f"args[{k}]"
        b.argument = traced.in_args[k] if k < len(traced.in_args) else b.input
        return b
    b.equation = k
    row = info.get(k)
    if row is not None:
        b.where, b.group, b.primitive, b.backward = (row.where, row.series, row.primitive,
                                                     row.backward)
        b.recompute = k in recomputed
    return b


def backward_boundary(steps: list[bool | None]) -> int | None:
    """The step where the backward pass begins: the split that leaves the fewest forward
    steps after it and backward steps before it (XLA moves work across the line: a remat's
    recomputation merged with the forward pass, a forward value computed where it is used).
    `steps` says per step: backward, forward, or None (no equation); forward steps after
    the last backward one (an optimizer's update) do not count. None: no backward pass."""
    if not any(steps):
        return None
    steps = steps[:max(t for t, s in enumerate(steps) if s) + 1]
    wrong = best = sum(1 for s in steps if s is False)     # split at 0: all forward wrong
    at = 0
    for t, s in enumerate(steps, 1):
        wrong += 1 if s else -1 if s is False else 0
        if wrong < best:
            best, at = wrong, t
    return at


def _kind(b: Buffer, steps: int, backward_from: int | None) -> str:
    alloc = b.allocation
    if alloc.startswith("parameter"):
        return ARGUMENT
    if alloc == "constant":
        return CONSTANT
    if alloc == "output" and b.end >= steps - 1:
        return OUTPUT
    if b.gradient:
        return GRADIENT       # depends on the cotangent, wherever XLA scheduled it
    if b.equation is None and not b.input:
        return UNATTRIBUTED   # no equation made it (a copy of XLA's constant): no claim
    if backward_from is not None and b.start < backward_from <= b.end:
        return SAVED          # made before the backward pass, still held in it
    return RECOMPUTED if b.recompute else TEMPORARY


def _at(buffers: list[Buffer], step: int) -> list[Buffer]:
    """The buffers live at `step`, one per slot (the value written last), largest first."""
    slots: dict[tuple[int, int], Buffer] = {}
    for b in buffers:
        if b.start <= step <= b.end:
            held = slots.get(b.slot)
            if held is None or (b.bytes, b.start) > (held.bytes, held.start):
                slots[b.slot] = b
    return sorted(slots.values(), key=lambda b: (-b.bytes, b.start))


def _equation_info(traced: Traced, graph: Any):
    """(each equation's row: line, drawn group, primitive, pass; the equations that
    compute a forward value again in the backward pass; those whose result depends on the
    cotangent; those after the backward pass). A nested-jaxpr equation (a scan, a remat)
    gets its first inner row's group and line, and its own pass."""
    estimates = estimate(traced.jaxpr)
    out = {r.index: r for r in rows(graph, estimates)}
    gradient, cotangents = cotangent_flow(traced.jaxpr)
    backward, remat, recomputed, after, leaves = {}, set(), set(), set(), set()
    for i, eqn, _, parents, sources in walk(traced.jaxpr):
        if not any(not isinstance(sub_jaxpr(eqn, k, pos), tuple) for k, pos in sub_jaxprs(eqn)):
            leaves.add(i)
        backward[i] = _compat.is_backward(eqn) or any(backward.get(p) for p in parents)
        if not backward[i] and (after.intersection(parents) or any(
                backward[j] or j in after for j in sources)):
            after.add(i)       # reads the backward pass's results: an optimizer's update
        if _compat.is_remat(eqn) and backward[i]:
            remat.add(i)
        if _compat.remat_label(eqn) and i in out:
            out[i] = replace(out[i], primitive=_compat.remat_label(eqn))
        if backward[i] and i not in gradient and (
                _compat.is_recomputation(eqn) or remat.intersection(parents)):
            recomputed.add(i)
    first_inside: dict[int, CostRow] = {}
    for r in list(out.values()):
        for p in r.parents:
            first_inside.setdefault(p, r)
    for e in estimates:
        if e.index in out:
            out[e.index].backward = out[e.index].backward or backward[e.index]
        elif e.index in first_inside:
            inner = first_inside[e.index]
            out[e.index] = CostRow(e.index, e.primitive, 0, 0, None, 0, inner.where,
                                   inner.group, inner.clusters, e.parents, is_op=False,
                                   backward=backward[e.index], series=inner.series)
    return out, recomputed, (gradient, cotangents, leaves), after


# ---- what depends on the cotangent ---------------------------------------------------------

def cotangent_equations(jaxpr: Any) -> set[int]:
    """The walk indices (`cost.walk`) of the backward-pass equations whose result depends
    on the cotangent: the gradients being computed, as opposed to forward values computed
    again (jax.checkpoint's recomputation) or index arithmetic.

    Data flow from the cotangent: an input read by the backward pass alone (a vjp
    function's `ct`), or a constant a backward equation that is not a recomputation reads
    (`jax.grad`'s seed `1.0`, an instantiated zero), through every equation, into nested
    jaxprs (remat, jit, custom rules, cond) and around loop carries (scan, while)."""
    return cotangent_flow(jaxpr)[0]


def cotangent_flow(jaxpr: Any) -> tuple[set[int], set[int]]:
    """(`cotangent_equations`, the positions of the inputs that are cotangents)."""
    marks: dict[int, bool] = {}
    inputs: set[int] = set()
    _flow(jaxpr, None, False, 0, marks, inputs)
    return {i for i, m in marks.items() if m}, inputs


def _flow(j: Any, grad_in: list[bool] | None, backward: bool, i: int,
          marks: dict[int, bool], inputs: set[int] | None = None) -> tuple[list[bool], int]:
    """Mark the equations of `j` (numbered from `i`) that depend on the cotangent, given
    which of its inputs do (None: the top level). (flags of its outputs, next index)"""
    j = _compat.open_jaxpr(j)
    grad: set = set()
    if grad_in is not None:
        grad = {v for v, g in zip(j.invars, grad_in) if g}
    if not backward:                 # a cotangent input: read by the backward pass only
        readers: dict = defaultdict(set)
        for eqn in j.eqns:
            for v in eqn.invars:
                if not _compat.is_literal(v):
                    readers[v].add(_compat.is_backward(eqn))
        grad |= {v for v in j.invars if readers.get(v) == {True}}
        if grad_in is None and inputs is not None:
            inputs.update(k for k, v in enumerate(j.invars) if v in grad)
    for eqn in j.eqns:
        me, i = i, i + 1
        bwd = backward or _compat.is_backward(eqn)
        seed = bwd and not _compat.is_recomputation(eqn)
        flags = [(seed if _compat.is_literal(v) else v in grad) for v in eqn.invars]
        subs = [(k, pos) for k, pos in sub_jaxprs(eqn)
                if not isinstance(sub_jaxpr(eqn, k, pos), tuple)]
        if subs:
            outs, i = _flow_nested(eqn, subs, flags, bwd, i, marks)
        elif eqn.primitive.name == "optimization_barrier":   # each output is its input
            outs = [bwd and f for f in flags]            # (remat3 holds cts with residuals)
        else:
            outs = [bwd and any(flags)] * len(eqn.outvars)
        marks[me] = bwd and any(outs)
        grad |= {v for v, g in zip(eqn.outvars, outs) if g and not _compat.is_dropvar(v)}
    return [not _compat.is_literal(v) and v in grad for v in j.outvars], i


def _flow_nested(eqn: Any, subs: list, flags: list[bool], bwd: bool, start: int,
                 marks: dict[int, bool]) -> tuple[list[bool], int]:
    """`_flow` through an equation's nested jaxprs: its inputs' flags mapped to each
    jaxpr's inputs, its outputs' from theirs; a loop's carries until they settle."""
    prim, p = eqn.primitive.name, eqn.params
    n_out = len(eqn.outvars)
    if prim == "while":
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        carry = flags[cn + bn:]
        for _ in range(4):
            i = start
            _, i = _flow(p["cond_jaxpr"], flags[:cn] + carry, bwd, i, marks)
            body, i = _flow(p["body_jaxpr"], flags[cn:cn + bn] + carry, bwd, i, marks)
            settled = [a or b for a, b in zip(carry, body)]
            if settled == carry:
                break
            carry = settled
        return carry, i
    if prim == "scan":
        nc, nk = _compat.scan_counts(p)
        ins = list(flags)
        for _ in range(4):
            outs, i = _flow(p["jaxpr"], ins, bwd, start, marks)
            carry = [a or b for a, b in zip(ins[nc:nc + nk], outs[:nk])]
            if carry == ins[nc:nc + nk]:
                break
            ins[nc:nc + nk] = carry
        return [a or b for a, b in zip(carry, outs[:nk])] + outs[nk:], i
    outs = [False] * n_out
    i = start
    for key, pos in subs:
        sub = sub_jaxpr(eqn, key, pos)
        invars = _compat.open_jaxpr(sub).invars
        if prim == "cond":
            mapped = flags[1:]
        elif len(invars) == len(flags):
            mapped = flags
        elif len(invars) < len(flags):
            mapped = flags[len(flags) - len(invars):]
        else:
            mapped = [any(flags)] * len(invars)
        got, i = _flow(sub, mapped, bwd, i, marks)
        if len(got) != n_out:
            got = [any(got) or any(flags)] * n_out
        outs = [a or b for a, b in zip(outs, got)]
    return outs, i
