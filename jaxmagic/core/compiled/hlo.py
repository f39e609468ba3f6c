"""The one reader of XLA's HLO text: instructions with their shapes, operands, attributes,
callees and the equation tags in their `op_name`, computations and the entry.

Formats differ by release (replica groups `[2,4]<=[8]` or `{{0,1,2,3},{4,5,6,7}}`,
shardings `{devices=[2,4]<=[8]}` or `{mesh['x'=2], [{'x'}, {}]}`); the parsers accept all
of them, so nothing here depends on which JAX made the text.
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field

import numpy as np

# Every equation of the tagged copy of a jaxpr has its name stack end in TAG + its index;
# lowering writes name stacks into each instruction's `op_name`.
TAG = "jaxmagic#"
TAG_RE = re.compile(re.escape(TAG) + r"(\d+)")

_INSTRUCTION = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_ARRAY = re.compile(r"\b(pred|[subf]\d+|bf16|f8\w*|c64|c128|token)\[([\d,]*)\]")
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_CALLEE = re.compile(r"\b(?:calls|to_apply|body|condition|true_computation|"
                     r"false_computation)=%?([\w.\-]+)")
_BRANCHES = re.compile(r"\bbranch_computations=\{([^}]*)\}")
_OPCODE = re.compile(r"([a-z][\w\-]*)\(")
_ITEMSIZE = {"pred": 1, "bf16": 2, "c64": 8, "c128": 16, "token": 0}


@dataclass
class Instruction:
    """One HLO instruction: `%name = SHAPE opcode(operands), attributes`."""

    name: str
    opcode: str
    shape: str                     # the result shape text, `f32[128,512]{1,0}` or a tuple
    operands: list[str]
    operand_text: str              # the operand list as written (`parameter(2)`: "2")
    attrs: str                     # everything after the operand list
    computation: str
    tags: list[int] = field(default_factory=list)   # `jaxmagic#N` in op_name, outer first
    users: list[str] = field(default_factory=list)
    root: bool = False             # its computation's ROOT

    @property
    def callees(self) -> list[str]:
        """The computations it calls: a fusion's, a while's body and condition, branches."""
        return _CALLEE.findall(self.attrs) + [
            c.strip().lstrip("%") for b in _BRANCHES.findall(self.attrs) for c in b.split(",")]

    @property
    def result_bytes(self) -> list[int]:
        return array_bytes(self.shape)

    def attr(self, key: str) -> str | None:
        """The text of attribute `key=`, braces balanced (`replica_groups={{0,1},{2,3}}`)."""
        m = re.search(r"(?:^|[\s,])" + re.escape(key) + "=", self.attrs)
        if m is None:
            return None
        text, depth = self.attrs[m.end():], 0
        for i, ch in enumerate(text):
            if ch in "{[(":
                depth += 1
            elif ch in "}])":
                depth -= 1
            elif ch in ", " and depth == 0:
                return text[:i]
        return text


_ALIAS = re.compile(r"\{[\d,\s]*\}:\s*\((\d+),\s*\{([\d,\s]*)\}")


def aliased_parameters(text: str) -> set[int] | None:
    """The entry parameters XLA writes outputs into (the module's `input_output_alias`;
    a tupled parameter's elements by their index), or None where the text has no module
    line. A donated parameter not among them was not used in place."""
    head = text.lstrip().split("\n", 1)[0]
    if not head.startswith("HloModule"):
        return None
    m = re.search(r"input_output_alias=\{(.*?)\}\s*(?:,\s*\w+=|$)", head)
    return {int(idx.split(",")[0]) if idx.strip() else int(n)
            for n, idx in _ALIAS.findall(m.group(1))} if m else set()


def array_bytes(shape: str) -> list[int]:
    """Bytes of each array in a shape text (one for an array, one per tuple element)."""
    out = []
    for dtype, dims in _ARRAY.findall(shape):
        size = math.prod(int(d) for d in dims.split(",") if d)
        item = _ITEMSIZE.get(dtype, None)
        if item is None:
            bits = re.sub(r"\D", "", dtype)[:3] or "8"
            item = max(1, int(bits) // 8)
        out.append(size * item)
    return out


def _split_call(rest: str) -> tuple[str, str, str, str] | None:
    """(shape, opcode, operand text, attributes) of an instruction's right-hand side."""
    i = rest.find(" ") if not rest.startswith("(") else _closing(rest, 0)
    i = len(rest) if i < 0 else i      # the shape ends at the first space outside brackets
    shape, tail = rest[:i], rest[i:].lstrip()
    m = _OPCODE.match(tail)
    if m is None:
        return None
    j = tail.find(")", m.end())        # operands hold no parentheses, as a rule
    if j < 0 or "(" in tail[m.end():j]:
        j = _closing(tail, m.end() - 1) - 1
    return shape, m.group(1), tail[m.end():j], tail[j + 1:].lstrip(", ")


def _closing(text: str, start: int) -> int:
    """The index just past the bracket closing the one at `start` (or past the text)."""
    depth = 0
    for k in range(start, len(text)):
        ch = text[k]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return k + 1
    return len(text)


@dataclass
class Module:
    """An HLO module: its instructions by name (users filled in), in text order."""

    name: str
    entry: str                              # the ENTRY computation
    instructions: dict[str, Instruction]


@functools.lru_cache(maxsize=2)
def read(text: str) -> Module:
    """Every instruction of an HLO module text, and the module's name and entry (read
    once for the overlays of one call that all ask: the result is not to be changed)."""
    out: dict[str, Instruction] = {}
    name = entry = computation = ""
    for line in text.splitlines():
        if line.startswith("HloModule "):
            name = line.split()[1].rstrip(",")
            continue
        m = _INSTRUCTION.match(line)
        if m is None:
            c = _COMPUTATION.match(line)
            if c:
                computation = c.group(1)
                entry = computation if line.startswith("ENTRY") else entry
            continue
        parts = _split_call(m.group(3))
        if parts is None:
            continue
        shape, opcode, operands, attrs = parts
        names = re.findall(r"%([\w.\-]+)", operands)
        op_name = _OP_NAME.search(attrs)
        tags = [int(t) for t in TAG_RE.findall(op_name.group(1))] if op_name else []
        out[m.group(2)] = Instruction(m.group(2), opcode, shape, names, operands, attrs,
                                      computation, tags, root=bool(m.group(1)))
    for ins in out.values():
        for o in ins.operands:
            if o in out:
                out[o].users.append(ins.name)
    return Module(name, entry, out)


def parse(text: str) -> dict[str, Instruction]:
    """Every instruction of an HLO module text, by name, with its users filled in."""
    return read(text).instructions


def op_name_tags(ins: Instruction) -> list[list[int]]:
    """The tags of each name XLA merged into one `op_name` (`a;b`, `(a:b)`), in order: a
    combined collective stands for several equations."""
    m = _OP_NAME.search(ins.attrs)
    if m is None:
        return []
    text = m.group(1)
    inner = re.search(r"\((.*)\)\s*$", text)
    parts = re.split(r"[;:]", inner.group(1) if inner and ":" in inner.group(1) else text)
    return [tags for tags in ([int(t) for t in TAG_RE.findall(p)] for p in parts) if tags]


# ---- device groups and tile assignments -----------------------------------------------

def iota_devices(text: str) -> np.ndarray | None:
    """The device array of an iota form `[2,4]<=[8]` or `[4,2]<=[2,4]T(1,0)`."""
    m = re.fullmatch(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text.strip())
    if m is None:
        return None
    shape = [int(d) for d in m.group(1).split(",")]
    base = [int(d) for d in m.group(2).split(",")]
    arr = np.arange(math.prod(base)).reshape(base)
    if m.group(3):
        arr = arr.transpose([int(d) for d in m.group(3).split(",")])
    return arr.reshape(shape)


def device_groups(text: str | None) -> list[list[int]] | None:
    """Replica groups or source-target pairs as lists of device ids (None: all devices)."""
    if text is None or text.strip() in ("{}", ""):
        return None
    arr = iota_devices(text)
    if arr is not None:
        return arr.reshape(arr.shape[0], -1).tolist()
    groups = re.findall(r"\{([\d,\s]+)\}", text)
    return [[int(d) for d in g.split(",") if d.strip()] for g in groups] or None


_MESH_GROUPS = re.compile(r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}")


def mesh_groups(attrs: str) -> list[list[int]] | None:
    """The device groups of replica groups written against a mesh of XLA's own,
    `mesh['axis_0'=2,'axis_1'=4] {'axis_1'}` (seen on 0.10.2: its axes named by position,
    its shape not always the program's, `['axis_0'=8,'axis_1'=1]` for two axes), else
    None. Devices are numbered row-major over that mesh."""
    m = _MESH_GROUPS.search(attrs)
    if m is None:
        return None
    axes = re.findall(r"'([^']*)'=(\d+)", m.group(1))
    names = [a for a, _ in axes]
    shape = [int(n) for _, n in axes]
    picked = [names.index(a) for a in re.findall(r"'([^']*)'", m.group(2)) if a in names]
    rest = [k for k in range(len(shape)) if k not in picked]
    devices = np.arange(math.prod(shape)).reshape(shape).transpose(rest + picked)
    return devices.reshape(-1, math.prod(shape[k] for k in picked)).tolist()


def axes_of_groups(groups: list[list[int]] | None, names: tuple[str, ...],
                   shape: tuple[int, ...]) -> tuple[str, ...]:
    """The mesh axes along which the devices of each group differ (device id = position
    in the mesh, row-major, as XLA numbers an SPMD program's partitions)."""
    total = math.prod(shape)
    if not names or total == 0:
        return ()
    if groups is None:
        return tuple(n for n, s in zip(names, shape) if s > 1)
    varying = set()
    for g in groups:
        coords = [np.unravel_index(d, shape) for d in g if 0 <= d < total]
        for k in range(len(shape)):
            if len({c[k] for c in coords}) > 1:
                varying.add(k)
    return tuple(names[k] for k in sorted(varying))
