"""Where every shard of a `jax.Array` lives, read from metadata only.

A layout is computed from an array's shape, dtype and `.sharding` alone
(`sharding.devices_indices_map(shape)`): no element is copied to the host and no
pending computation is waited for, so it works under `jax.transfer_guard("disallow")`,
on arrays still being computed, and on arrays whose buffers were deleted (donated).

The model is plain data (dataclasses of ints and strings) for render/sharding.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import jax

from .. import _compat
from . import libraries
from .arguments import (
    ArgCall,
    Partition,
    norm_argnames,
    norm_argnums,
    param_names,
    static_positions,
)
from .paths import key_text

PMAP_AXIS_LABEL = "pmap axis"


class PlanError(ValueError):
    """`--plan` cannot be made for this call; the message says why and what to do."""


@dataclass(frozen=True)
class MeshAxis:
    name: str            # as shown: pmap's internal axis name becomes "pmap axis"
    size: int
    type: str | None     # "Explicit", "Auto", "Manual"; None where JAX has no axis types


@dataclass(frozen=True)
class Tile:
    """One block of the array and every device holding a copy of it."""

    index: tuple[tuple[int, int], ...]   # (start, stop) per dimension
    devices: tuple[int, ...]             # device ids, in global device order

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(b - a for a, b in self.index)

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class DeviceMark:
    """How a device is drawn: its id, owning process and colour slot (global order)."""

    id: int
    process: int
    colour: int
    platform: str = ""


@dataclass
class ArrayLayout:
    path: str                        # pytree path ("" for a bare array)
    shape: tuple[int, ...]
    dtype: str
    kind: str                        # "NamedSharding", "PmapSharding", "SingleDeviceSharding", ...
    tiles: list[Tile]
    mesh: tuple[MeshAxis, ...] = ()
    spec: str | None = None          # "P('x', None)"; pmap's axis shown as pmap axis
    dim_axes: tuple[tuple[str, ...], ...] = ()   # mesh axes splitting each dimension
    shard_shape: tuple[int, ...] | None = None   # the buffer each device holds
    itemsize: int | None = None
    state: str = "ready"             # ready | pending | deleted | planned | abstract
    memory_kind: str | None = None
    typed: str | None = None         # jax.typeof(x) where it carries sharding (Explicit axes)
    detail: str | None = None        # the sharding's own text where it has no mesh (GSPMD)
    unreduced: tuple[str, ...] = ()  # axes over which the blocks are partial sums
    notes: list[str] = field(default_factory=list)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def device_ids(self) -> tuple[int, ...]:
        return tuple(sorted({d for t in self.tiles for d in t.devices}))

    @property
    def shard_shapes(self) -> list[tuple[int, ...]]:
        """The distinct block shapes, largest first (more than one: uneven shards)."""
        shapes = {t.shape for t in self.tiles}
        return sorted(shapes, key=lambda s: (-math.prod(s), s))

    @property
    def uneven(self) -> bool:
        return len(self.shard_shapes) > 1

    @property
    def total_bytes(self) -> int | None:
        return None if self.itemsize is None else self.size * self.itemsize

    @property
    def bytes_per_device(self) -> int | None:
        """The most bytes any one device holds of this array."""
        if self.itemsize is None:
            return None
        per: dict[int, int] = {}
        for t in self.tiles:
            for d in t.devices:
                per[d] = per.get(d, 0) + t.size * self.itemsize
        return max(per.values(), default=0)

    @property
    def replicas(self) -> tuple[int, int]:
        """(fewest, most) devices holding a copy of one block."""
        counts = [len(t.devices) for t in self.tiles] or [0]
        return min(counts), max(counts)

    @property
    def fully_replicated(self) -> bool:
        return len(self.tiles) == 1 and len(self.tiles[0].devices) > 1


@dataclass
class Skipped:
    """A leaf of the value that is not a JAX array, and what it is."""

    path: str
    what: str


@dataclass
class Section:
    title: str | None
    layouts: list[ArrayLayout] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def placements(self) -> list[list[ArrayLayout]]:
        """The layouts in order, each whole array copied to every device of the same
        sharding gathered where the first such one stands: a model's replicated parameters
        and their optimiser state are one placement, whatever their shapes."""
        groups: dict[Any, list[ArrayLayout]] = {}
        for i, lay in enumerate(self.layouts):
            key = ((lay.kind, lay.mesh, lay.spec, lay.tiles[0].devices, lay.state,
                    lay.memory_kind, lay.detail, lay.unreduced, tuple(lay.notes))
                   if lay.fully_replicated else i)
            groups.setdefault(key, []).append(lay)
        return list(groups.values())


@dataclass
class ShardingModel:
    sections: list[Section]
    devices: dict[int, DeviceMark]
    process_index: int = 0
    process_count: int = 1
    source: str | None = None        # what was drawn: "f(x, w)" for a plan, names, ...
    message: str | None = None       # why nothing could be drawn

    @property
    def layouts(self) -> list[ArrayLayout]:
        return [lay for s in self.sections for lay in s.layouts]

    @property
    def multi_process(self) -> bool:
        return self.process_count > 1 or len({d.process for d in self.devices.values()}) > 1


# ---- reading one array ------------------------------------------------------------------


def axis_label(name: Any) -> str:
    """A mesh axis name as shown: pmap's internal default name becomes 'pmap axis'."""
    return PMAP_AXIS_LABEL if _compat.is_pmap_axis(name) else str(name)


def _spec_entry(entry: Any) -> str:
    """One PartitionSpec entry as text: None, a name, or a tuple of names."""
    if entry is None:
        return "None"
    if isinstance(entry, (tuple, list)):
        inner = ", ".join(_spec_entry(e) for e in entry)
        return f"({inner}{',' if len(entry) == 1 else ''})"
    label = axis_label(entry)
    return label if label == PMAP_AXIS_LABEL else repr(label)


def spec_text(spec: Any) -> str:
    """PartitionSpec as `P('x', None)` in every JAX version, pmap's axis as pmap axis."""
    parts = [_spec_entry(e) for e in _compat.spec_partitions(spec)]
    for extra in ("unreduced", "reduced"):
        names = getattr(spec, extra, None)
        if names:
            parts.append(f"{extra}={{{', '.join(sorted(repr(axis_label(n)) for n in names))}}}")
    return f"P({', '.join(parts)})"


def _dim_axes(spec: Any, ndim: int) -> tuple[tuple[str, ...], ...]:
    out = []
    entries = _compat.spec_partitions(spec)
    for i in range(ndim):
        e = entries[i] if i < len(entries) else None
        if e is None:
            out.append(())
        elif isinstance(e, (tuple, list)):
            out.append(tuple(axis_label(n) for n in e))
        else:
            out.append((axis_label(e),))
    return tuple(out)


def _bounds(idx: Any, dim: int) -> tuple[int, int]:
    if isinstance(idx, slice):
        start, stop, _ = idx.indices(dim)
        return start, stop
    i = int(idx)          # 0.7 PmapSharding: an Unstacked dimension indexes one element
    return i, i + 1


def device_order() -> dict[int, int]:
    """Each global device's position in `jax.devices()`: its colour slot."""
    return {d.id: i for i, d in enumerate(jax.devices())}


def _indices(sharding: Any, shape: tuple[int, ...]) -> dict:
    """Device → index of its block. JAX has no indices map for an unreduced sharding
    (NotImplementedError): its blocks are those of the same spec without `unreduced`,
    each holding a partial sum (the layout's note says so)."""
    try:
        return sharding.devices_indices_map(tuple(shape))
    except NotImplementedError:
        spec = getattr(sharding, "spec", None)
        if spec is None or not getattr(spec, "unreduced", None):
            raise
        plain = jax.sharding.PartitionSpec(*_compat.spec_partitions(spec))
        return jax.sharding.NamedSharding(sharding.mesh, plain).devices_indices_map(
            tuple(shape))


def _tiles(sharding: Any, shape: tuple[int, ...], order: dict[int, int],
           marks: dict[int, DeviceMark]) -> list[Tile]:
    groups: dict[tuple, list] = {}
    for dev, idx in _indices(sharding, shape).items():
        key = tuple(_bounds(i, n) for i, n in zip(idx, shape))
        if len(key) < len(shape):        # trailing dims not mentioned: whole
            key += tuple((0, n) for n in shape[len(key):])
        groups.setdefault(key, []).append(dev)
        if dev.id not in marks:
            slot = order.get(dev.id, len(order) + dev.id)
            marks[dev.id] = DeviceMark(dev.id, int(getattr(dev, "process_index", 0)), slot,
                                       str(getattr(dev, "platform", "")))
    tiles = []
    for key in sorted(groups):
        devs = sorted(groups[key], key=lambda d: (order.get(d.id, len(order) + d.id)))
        tiles.append(Tile(key, tuple(d.id for d in devs)))
    return tiles


def _itemsize(dtype: Any, x: Any = None, shape: tuple[int, ...] = ()) -> int | None:
    try:
        return int(dtype.itemsize)
    except Exception:  # noqa: BLE001 - extended dtypes (PRNG keys) may not say
        pass
    try:
        n = math.prod(shape)
        return int(x.nbytes) // n if x is not None and n else None
    except Exception:  # noqa: BLE001
        return None


def _state(x: Any) -> str:
    try:
        if x.is_deleted():
            return "deleted"
    except Exception:  # noqa: BLE001 - not every Array kind answers
        return "ready"
    try:
        return "ready" if x.is_ready() else "pending"
    except Exception:  # noqa: BLE001
        return "ready"


def layout_from(shape: tuple[int, ...], dtype: Any, sharding: Any, *, path: str = "",
                state: str = "ready", order: dict[int, int] | None = None,
                marks: dict[int, DeviceMark] | None = None, value: Any = None) -> ArrayLayout:
    """The layout of an array of `shape`/`dtype` placed by `sharding` (metadata only)."""
    shape = tuple(int(n) for n in shape)
    order = device_order() if order is None else order
    marks = {} if marks is None else marks
    tiles = _tiles(sharding, shape, order, marks)
    kind = type(sharding).__name__
    lay = ArrayLayout(path=path, shape=shape, dtype=str(dtype), kind=kind, tiles=tiles,
                      itemsize=_itemsize(dtype, value, shape), state=state,
                      memory_kind=getattr(sharding, "memory_kind", None))
    try:
        lay.shard_shape = tuple(sharding.shard_shape(shape))
    except Exception:  # noqa: BLE001 - uneven shards have no single shard shape
        lay.shard_shape = None
    pmap = _compat.pmap_sharding_dims(sharding)
    mesh = getattr(sharding, "mesh", None)
    spec = getattr(sharding, "spec", None)
    if pmap is not None:
        count, dims = pmap
        lay.kind = "PmapSharding"
        lay.mesh = (MeshAxis(PMAP_AXIS_LABEL, count, None),)
        lay.dim_axes = tuple((PMAP_AXIS_LABEL,) if i in dims else () for i in range(len(shape)))
        lay.spec = "P(" + ", ".join(PMAP_AXIS_LABEL if i in dims else "None"
                                    for i in range(len(shape))) + ")"
        lay.notes.append("made by jax.pmap: dimension "
                         + ", ".join(str(i) for i in dims) + " is the mapped axis")
    elif mesh is not None and spec is not None:
        types = tuple(getattr(mesh, "axis_types", ()) or ())
        names = tuple(mesh.axis_names)
        sizes = dict(mesh.shape)
        lay.mesh = tuple(
            MeshAxis(axis_label(n), int(sizes[n]),
                     getattr(types[i], "name", str(types[i])) if i < len(types) else None)
            for i, n in enumerate(names))
        lay.spec = spec_text(spec)
        lay.dim_axes = _dim_axes(spec, len(shape))
        if any(_compat.is_pmap_axis(n) for n in names):
            lay.notes.append("made by jax.pmap (a NamedSharding over pmap's mesh axis)")
        lay.notes += _reduction_notes(spec)
        lay.unreduced = tuple(sorted(axis_label(n) for n in getattr(spec, "unreduced", None)
                                     or ()))
        if value is not None and (any(a.type == "Explicit" for a in lay.mesh)
                                  or _reduction_notes(spec)):
            try:
                lay.typed = str(jax.typeof(value))
            except Exception:  # noqa: BLE001
                pass
    elif kind != "SingleDeviceSharding":
        lay.detail = sharding_detail(sharding)
    if lay.uneven:
        lay.notes.append("uneven shards: " + ", ".join(str(s) for s in lay.shard_shapes))
    if state == "pending":
        lay.notes.append("still being computed: drawn from its metadata without waiting")
    elif state == "deleted":
        lay.notes.append("its buffers were deleted (donated or .delete()): layout only")
    return lay


def _reduction_notes(spec: Any) -> list[str]:
    """What `unreduced`/`reduced` axes of a spec mean for the blocks drawn."""
    notes = []
    for extra, meaning in (
            ("unreduced", "each device holds a partial sum: the value is the sum of the "
                          "blocks over {axes}"),
            ("reduced", "replicated over {axes}, and marked reduced: its gradient there "
                        "is a partial sum (unreduced)")):
        names = sorted(repr(axis_label(n)) for n in getattr(spec, extra, None) or ())
        if names:
            notes.append(f"{extra} over {', '.join(names)}: "
                         + meaning.format(axes=", ".join(names)))
    return notes


def layout_of(x: Any, path: str = "", *, order: dict[int, int] | None = None,
              marks: dict[int, DeviceMark] | None = None) -> ArrayLayout:
    """The layout of a `jax.Array` (or a ShapeDtypeStruct carrying a sharding)."""
    if isinstance(x, jax.ShapeDtypeStruct):
        if getattr(x, "sharding", None) is None:
            raise TypeError("a ShapeDtypeStruct without a sharding has no layout")
        return layout_from(x.shape, x.dtype, x.sharding, path=path, state="abstract",
                           order=order, marks=marks)
    return layout_from(x.shape, x.dtype, x.sharding, path=path, state=_state(x),
                       order=order, marks=marks, value=x)


# ---- what a value holds -----------------------------------------------------------------


def is_array(x: Any) -> bool:
    """A concrete jax.Array (tracers are abstract: they have no devices yet)."""
    return isinstance(x, jax.Array) and not _compat.is_tracer(x)


def _drawable(x: Any) -> bool:
    return is_array(x) or (isinstance(x, jax.ShapeDtypeStruct)
                           and getattr(x, "sharding", None) is not None)


def describe(x: Any) -> str:
    """A short, data-free description of a value: what was found instead of an array."""
    if x is None:
        return "None"
    if _compat.is_tracer(x):
        return (f"a tracer {getattr(x, 'aval', '')} (an abstract value inside jit/vmap/grad: "
                "it is on no device yet)").replace("  ", " ")
    mod = type(x).__module__
    name = type(x).__name__
    if mod == "numpy" and hasattr(x, "shape"):
        return (f"a NumPy array {x.dtype}{list(x.shape)} (host memory; "
                "jax.device_put puts it on devices)")
    if isinstance(x, jax.ShapeDtypeStruct):
        return f"a ShapeDtypeStruct {x.dtype}{list(x.shape)} without a sharding"
    if isinstance(x, (bool, int, float, complex)):
        return f"a Python {name} ({x!r})"
    if isinstance(x, str):
        short = x if len(x) <= 40 else x[:37] + "..."
        return f"a str ({short!r})"
    if isinstance(x, (list, tuple, dict)):
        return f"an empty {name}" if not x else f"a {name} of {len(x)} item{'s' * (len(x) != 1)}"
    qual = name if mod in ("builtins", "__main__") else f"{mod}.{name}"
    return f"a {qual}"


def _model(sections: list[Section], marks: dict[int, DeviceMark], **kw: Any) -> ShardingModel:
    return ShardingModel(sections, marks, process_index=jax.process_index(),
                         process_count=jax.process_count(), **kw)


def collect(roots: list[tuple[str, Any]], *, source: str | None = None) -> ShardingModel:
    """The layout of every JAX array in each (label, value): one per pytree leaf.

    Leaves that are not arrays are listed as skipped; when nothing at all is an array,
    `message` says what was found.
    """
    order, marks = device_order(), {}
    section = Section(None)
    found: list[str] = []
    for label, value in roots:
        leaves = jax.tree_util.tree_flatten_with_path(value)[0]
        drawn = 0
        for kp, leaf in leaves:
            path = label + key_text(kp)
            if _drawable(leaf):
                section.layouts.append(layout_of(leaf, path, order=order, marks=marks))
                drawn += 1
            else:
                section.skipped.append(Skipped(path, describe(leaf)))
        if drawn:
            continue
        head = f"{label} is " if label else "found "
        if len(leaves) == 1 and not leaves[0][0]:
            found.append(head + describe(value))
        elif not leaves:
            found.append(head + describe(value) + " (a pytree with no leaves)")
        else:
            some = "; ".join(f"{key_text(kp) or '(root)'}: {describe(v)}"
                             for kp, v in leaves[:4])
            more = f"; and {len(leaves) - 4} more" if len(leaves) > 4 else ""
            n = len(leaves)
            found.append(head + f"{describe(value)}; "
                         + ("its one leaf is not" if n == 1 else f"none of its {n} leaves is")
                         + f" a jax.Array ({some}{more})")
    message = None
    if not section.layouts:
        message = "no JAX array to draw: " + (" — ".join(found) if found else "nothing found")
        section.skipped = []
    return _model([section], marks, source=source, message=message)


def sharding_detail(sharding: Any) -> str | None:
    """A mesh-less sharding's own description, e.g. GSPMD's `{devices=[2,1,4]<=[8] ...}`."""
    text = str(sharding)
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        return text[start:end + 1]
    return None if " object at 0x" in text else text


# ---- --plan: what the compiler chose, without running -----------------------------------


def plan(f: Any, args: tuple, kwargs: dict, *, arg_names: list[str] | None = None,
         source: str | None = None, kwarg_names: dict | None = None,
         callee_name: str = "") -> ShardingModel:
    """Input and output shardings XLA chose for `f(*args, **kwargs)`; nothing runs.

    `f` must be jitted (`jax.jit`, `nnx.jit`, `eqx.filter_jit`): `lower(...).compile()`
    gives the compiled executable's `input_shardings` and `output_shardings`. Arguments
    follow %jaxpr's rule (array leaves traced, the rest held static, NNX objects split).
    """
    __tracebackhide__ = True       # the user's error shows their frames, not ours
    name = getattr(f, "__name__", None) or type(f).__name__
    found = libraries.unwrap_jit(f)
    if found is None and not callable(getattr(f, "lower", None)):
        raise PlanError(f"--plan needs a call of a jitted function; {name} is not jitted "
                        f"(use jax.jit({name})(...) as the final expression)")
    names = list(arg_names or [f"args[{i}]" for i in range(len(args))])
    if found is not None:
        fun, opts, kind = found
        call = ArgCall(fun, tuple(args), dict(kwargs), names,
                       dict(kwarg_names or {k: k for k in kwargs}), name, param_names(fun))
        nums = norm_argnums(opts.get("static_argnums"), len(args))
        snames = norm_argnames(opts.get("static_argnames"))
        part = Partition(call, static_positions(call, nums, snames), snames, callee_name,
                         jit_kind=kind)
        if kind != "jax.jit" or part.needs_wrapper:
            return _plan_partition(part, nums, snames, source)
    try:
        lowered = f.lower(*args, **kwargs)
        compiled = lowered.compile()
        in_sh, in_info = compiled.input_shardings, compiled.args_info
        out_sh = compiled.output_shardings
        out_info = lowered.out_info
    except AttributeError as e:
        raise PlanError(f"--plan cannot read the compiled shardings of {name}: {e}") from None
    order, marks = device_order(), {}
    jitted = _compat.jit_options(f)
    static = set(jitted[1].get("static_argnums", ())) if jitted else set()
    positional = [i for i in range(len(args)) if i not in static]
    in_section = Section("inputs")
    arg_sh, kw_sh = in_sh
    arg_info, kw_info = in_info
    for j, (sh, info) in enumerate(zip(arg_sh, arg_info)):
        i = positional[j] if j < len(positional) else j
        label = names[i] if i < len(names) else f"args[{i}]"
        _plan_leaves(in_section, label, sh, info, order, marks)
    for k in kw_info:
        _plan_leaves(in_section, k, kw_sh[k], kw_info[k], order, marks)
    out_section = Section("outputs")
    _plan_leaves(out_section, "out", out_sh, out_info, order, marks)
    return _model([in_section, out_section], marks, source=source)


def _plan_partition(part: Partition, nums: tuple, snames: tuple,
                    source: str | None) -> ShardingModel:
    """The plan of a call jit cannot take as it is (a module, NNX objects, strings):
    compile the partitioned call, each input leaf named by its path."""
    __tracebackhide__ = True
    _, args, kwargs = part.inputs(bind_static=False)
    nums, snames = part.jit_static(nums, snames)
    jitted = jax.jit(part.function(bind_static=False), static_argnums=nums or None,
                     static_argnames=snames or None)
    lowered = jitted.lower(*args, **kwargs)
    compiled = lowered.compile()
    is_info = lambda v: hasattr(v, "shape") and hasattr(v, "dtype")  # noqa: E731
    is_sh = lambda v: isinstance(v, jax.sharding.Sharding)  # noqa: E731
    positional = [i for i in range(len(args)) if i not in nums]
    keys = [k for k in kwargs if k not in snames]
    order, marks = device_order(), {}
    in_section = Section("inputs")
    for nm, sh, info in zip(part.in_names(positional, keys),
                            jax.tree_util.tree_leaves(compiled.input_shardings, is_leaf=is_sh),
                            jax.tree_util.tree_leaves(compiled.args_info, is_leaf=is_info)):
        in_section.layouts.append(layout_from(info.shape, info.dtype, sh, path=nm,
                                              state="planned", order=order, marks=marks))
    out_section = Section("outputs")
    out_info = lowered.out_info
    if part.returned:
        out_names = ["out" + key_text(p) for p, _ in
                     jax.tree_util.tree_flatten_with_path(out_info[0], is_leaf=is_info)[0]]
        out_names += [f"{n} (updated)" for n in part.returned]
    else:
        out_names = ["out" + key_text(p) for p, _ in
                     jax.tree_util.tree_flatten_with_path(out_info, is_leaf=is_info)[0]]
    for nm, sh, info in zip(out_names,
                            jax.tree_util.tree_leaves(compiled.output_shardings, is_leaf=is_sh),
                            jax.tree_util.tree_leaves(out_info, is_leaf=is_info)):
        out_section.layouts.append(layout_from(info.shape, info.dtype, sh, path=nm,
                                               state="planned", order=order, marks=marks))
    return _model([in_section, out_section], marks, source=source)


def _plan_leaves(section: Section, label: str, shardings: Any, infos: Any,
                 order: dict, marks: dict) -> None:
    info_leaves = jax.tree_util.tree_flatten_with_path(
        infos, is_leaf=lambda v: hasattr(v, "shape") and hasattr(v, "dtype"))[0]
    sh_leaves = jax.tree_util.tree_leaves(
        shardings, is_leaf=lambda v: isinstance(v, jax.sharding.Sharding))
    for (kp, info), sh in zip(info_leaves, sh_leaves):
        path = label + key_text(kp)
        section.layouts.append(layout_from(info.shape, info.dtype, sh, path=path,
                                           state="planned", order=order, marks=marks))
