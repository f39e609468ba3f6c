"""Every collective the compiled program runs, joined to the equation and line that caused
it: the user's own (`psum`, `all_gather`, `ppermute` in a shard_map) and those the SPMD
partitioner inserted (an all-reduce after a matmul over a sharded contraction, an
all-gather of an argument sharded the wrong way).

The join reads the analysis compile's HLO (`core/analysis.py`): an instruction's `op_name`
ends in its equation's tag; one without a tag (the partitioner names an argument's
all-gather after the argument) is charged to the first tagged instruction that uses it.
Sizes are per device, as the partitioned program holds them.
"""
from __future__ import annotations

import math
from collections import defaultdict, deque
from dataclasses import dataclass, replace
from typing import Any

from ... import _compat
from ..cost import CostRow, estimate, line_of, rows
from ..jaxprs import COLLECTIVES
from . import hlo, propagation
from .analysis import Analysis, analyze
from .profile import flat_args

KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
         "ragged-all-to-all", "collective-broadcast")


@dataclass
class Collective:
    """One collective instruction of the compiled program (one element of a combined one)."""

    kind: str                  # all-reduce, all-gather, reduce-scatter, all-to-all, ...
    axes: tuple[str, ...]      # the mesh axes its device groups span
    bytes: int                 # per device: the larger of its input and its output
    written: bool              # the user's own collective, not one the partitioner added
    primitive: str             # the equation it was joined to, as the user called it
    equation: int | None       # that equation's walk index (`Node.eqns`), None: unjoined
    where: str                 # the user's line, "mlp:12"
    group: str                 # the call-tree groups around it, "layer #2 › attention"
    instruction: str           # the HLO instruction's name
    group_size: int            # devices in each of its groups
    argument: int | None = None   # the flat input it gathers, for an argument's all-gather
    series: str = ""           # `group` with a repeated call named for its series
    clusters: tuple[int, ...] = ()
    seconds: float | None = None   # measured per call (`--profile`), its share of a
    #                                combined instruction's time by bytes
    processes: int = 1         # processes its largest group spans (multi-host: > 1)

    @property
    def origin(self) -> str:
        return "written" if self.written else "inserted"


@dataclass(frozen=True)
class MeshAxes:
    """The mesh a program runs on: axis names and sizes, and each position's process."""

    names: tuple[str, ...] = ()
    sizes: tuple[int, ...] = ()
    processes: tuple[int, ...] = ()     # process index per mesh position, row-major


def mesh_axes(traced: Any, args: list) -> MeshAxes:
    """The mesh the program runs on: the arguments' meshes, else a shard_map's, else an
    Explicit type's; the one with the most devices."""
    meshes = [getattr(getattr(a, "sharding", None), "mesh", None) for a in args]
    meshes += _compat.jaxpr_meshes(traced.jaxpr)
    best = MeshAxes()
    for m in meshes:
        shape = dict(getattr(m, "shape", {}) or {})
        if shape and math.prod(shape.values()) > math.prod(best.sizes or (0,)):
            devices = getattr(m, "devices", None)      # an abstract mesh has none
            procs = tuple(int(getattr(d, "process_index", 0)) for d in devices.flat) \
                if hasattr(devices, "flat") else ()
            best = MeshAxes(tuple(shape), tuple(shape.values()), procs)
    return best


def prepare(traced: Any) -> tuple[Analysis | None, dict, dict, MeshAxes, str | None]:
    """(analysis or None, value types by variable, value specs by variable, mesh axes, why
    the compile failed or None): what `--sharding` needs before the graph is built."""
    if traced.pmap and not _compat.PMAP_IS_SHARD_MAP:
        return None, {}, {}, MeshAxes(), ("this JAX compiles jax.pmap apart from jit; the "
                                        "analysis compile would not be the program pmap "
                                        "runs")
    try:
        args = flat_args(traced)
        result = analyze(traced)
    except Exception as e:     # a program the tagged copy cannot compile: types only
        return None, {}, {}, MeshAxes(), f"{type(e).__name__}: {e}"
    mesh = mesh_axes(traced, args)
    types = propagation.input_types(traced, args)
    types.update(propagation.value_types(result, traced, mesh.names, mesh.sizes))
    specs = propagation.input_specs(traced, args)
    specs.update(propagation.value_specs(result, traced, mesh.names, mesh.sizes))
    return result, types, specs, mesh, None


def find(analysis: Analysis, traced: Any, graph: Any, mesh: MeshAxes) -> list[Collective]:
    """The collectives of `analysis.compiled_text`, costliest first."""
    program = analysis.program
    estimates = estimate(traced.jaxpr)
    places = {r.index: r for r in rows(graph, estimates)}
    prims = {e.index: e.primitive for e in estimates}
    out = []
    for ins in program.values():
        kind = ins.opcode.removesuffix("-start")
        if kind not in KINDS or ins.opcode.endswith("-done"):
            continue
        groups = hlo.mesh_groups(ins.attrs) or hlo.device_groups(
            ins.attr("replica_groups") or ins.attr("source_target_pairs"))
        axes = hlo.axes_of_groups(groups, mesh.names, mesh.sizes)
        size = len(groups[0]) if groups and kind != "collective-permute" else \
            math.prod(mesh.sizes or (1,))
        spmd = ins.attr("frontend_attributes") or ""
        for eqn, nbytes in _elements(ins, program, analysis):
            prim = prims.get(eqn, "") if eqn is not None else ""
            place = places.get(eqn)
            written = prim in COLLECTIVES and 'is_spmd_generated="true"' not in spmd
            gathers = not written and kind in _MOVES
            out.append(Collective(
                kind, axes, nbytes, written, _compat.user_primitive_name(prim), eqn,
                line_of(place, graph), place.group if place else "", ins.name,
                size, _argument(ins, program, analysis.instructions) if gathers else None,
                place.series if place else "", place.clusters if place else (),
                processes=_processes(groups, mesh)))
    return sorted(out, key=lambda c: -c.bytes)


def charge_time(found: list[Collective], per_instruction: dict[str, float]) -> None:
    """Give each collective its measured time per call (`--profile`): the profiled
    program is the same tagged program, so its instructions have the same names."""
    parts: dict[str, int] = {}
    for c in found:
        parts[c.instruction] = parts.get(c.instruction, 0) + c.bytes
    for c in found:
        s = per_instruction.get(c.instruction)
        if s is not None:
            c.seconds = s * c.bytes / parts[c.instruction] if parts[c.instruction] else s


def apart(cost_rows: list[CostRow], found: list[Collective],
          charged: dict[str, dict[int, float]]) -> list[CostRow]:
    """The cost rows with each timed collective's time on a row of its own (kind, bytes,
    line, group), taken from the equations the profiler joined its instruction to: a
    matmul's row keeps its arithmetic, the all-reduce after it gets the wait."""
    parts: dict[str, list[Collective]] = defaultdict(list)
    for c in found:
        parts[c.instruction].append(c)
    moved = [c for name, cs in parts.items() if all(
        c.seconds is not None and c.equation is not None for c in cs) for c in cs]
    taken: dict[int, float] = defaultdict(float)
    for name in {c.instruction for c in moved}:
        for e, s in charged.get(name, {}).items():
            taken[e] += s
    hosts = {r.index: r for r in cost_rows}
    out = [replace(r, seconds=max(0.0, r.seconds - taken[r.index]))
           if r.index in taken and r.seconds is not None else r for r in cost_rows]
    for c in moved:
        host = hosts.get(c.equation)
        out.append(CostRow(c.equation, c.kind, 0.0, c.bytes, c.seconds, 0.0, c.where,
                           c.group, c.clusters, host.parents if host else (),
                           backward=bool(host and host.backward), series=c.series,
                           collective=True))
    total = sum(r.seconds or 0.0 for r in out)
    return [replace(r, share=(r.seconds or 0.0) / total if total else 0.0) for r in out]


def _processes(groups: list[list[int]] | None, mesh: MeshAxes) -> int:
    """How many processes the largest of a collective's device groups spans."""
    procs = mesh.processes
    if not procs:
        return 1
    groups = groups or [list(range(len(procs)))]
    return max(len({procs[d] for d in g if 0 <= d < len(procs)}) for g in groups)


def _elements(ins: hlo.Instruction, program: dict,
              analysis: Analysis) -> list[tuple[int | None, int]]:
    """(equation, bytes per device) of each part of a collective: XLA combines several
    of one kind into one instruction whose `op_name` merges their names."""
    result = ins.result_bytes
    if ins.opcode.endswith("-start"):       # async: the result is the matching -done's
        done = [program[u] for u in ins.users if program[u].opcode.endswith("-done")]
        result = done[0].result_bytes if done else result
    operands = [sum(program[o].result_bytes) if o in program else 0 for o in ins.operands]
    merged = hlo.op_name_tags(ins)
    if len(result) > 1 and len(result) == len(operands):
        if len(merged) != len(result):     # 0.7 keeps one name: each part's own operand
            merged = [[_tag_of(program.get(o), analysis)] for o in ins.operands]
        parts: dict = {}         # a combined collective: its parts by equation
        for tags, r, o in zip(merged, result, operands):
            eqn = tags[-1] if tags[-1] is not None else \
                _first_tagged_user(ins, program, analysis)
            parts[eqn] = parts.get(eqn, 0) + max(r, o)
        return list(parts.items())
    eqn = ins.tags[-1] if ins.tags else _first_tagged_user(ins, program, analysis)
    return [(eqn, max(sum(result), sum(operands)))]


def _tag_of(ins: hlo.Instruction | None, analysis: Analysis) -> int | None:
    """The equation an instruction stands for: its own tag, or a fusion's first one."""
    if ins is None:
        return None
    if ins.tags:
        return ins.tags[-1]
    fused = analysis.instructions.tags.get(ins.name)
    return min(fused) if fused else None


def _first_tagged_user(ins: hlo.Instruction, program: dict, analysis: Analysis) -> int | None:
    """The equation of the nearest instruction downstream that carries a tag (its own, or
    for a fusion the first equation it fused)."""
    seen, queue = {ins.name}, deque(ins.users)
    while queue:
        name = queue.popleft()
        if name in seen or name not in program:
            continue
        seen.add(name)
        tag = _tag_of(program[name], analysis)
        if tag is not None:
            return tag
        queue.extend(program[name].users)
    return None


_MOVES = ("all-gather", "all-to-all", "collective-permute")   # what reshards an argument
_PASS_THROUGH = ("bitcast", "copy", "reshape", "transpose", "fusion", "convert", "slice",
                 "dynamic-slice")


def _argument(ins: hlo.Instruction, program: dict, info: Any, steps: int = 4) -> int | None:
    """The flat input a collective moves (an entry parameter, `info.parameters`), through
    a few layout changes, if all of its operands come from one."""
    found = set()
    for name in ins.operands:
        current = program.get(name)
        for _ in range(steps):
            if current is None or current.opcode == "parameter" or \
                    current.opcode not in _PASS_THROUGH or len(current.operands) != 1:
                break
            current = program.get(current.operands[0])
        found.add(info.parameters.get(current.name) if current is not None and
                  current.opcode == "parameter" and current.computation == ins.computation
                  else None)
    return found.pop() if len(found) == 1 else None
