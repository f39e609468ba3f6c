"""`ShardingView`: which device holds which block of each array, as HTML tiles and text.

Drawn from core.sharding's plain model. Every rank: a grid of tiles for 1-D and 2-D
arrays, a faceted grid for more dimensions (the two sharded or largest dimensions form the
grid, one facet per block of the others), a single tile for scalars. A tile held by one
device is filled with that device's colour (the same colour everywhere in the output);
a replicated tile lists every device holding it. Static HTML tables with inline styles
(no script, no `<style>`), so it survives untrusted notebooks; `text()` for terminals.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .html import BORDER, DEVICE_COLOURS, INK, MONO, MUTED, PANEL, WARNING, code, esc, panel
from .text import visible
from .units import fmt_bytes

if TYPE_CHECKING:  # the model is plain data; render never needs jax at runtime
    from ..core.sharding import ArrayLayout, DeviceMark, ShardingModel, Tile

MAX_FACETS = 12          # facets drawn per array (the text view lists every shard)
MAX_TILES = 1024         # beyond this a grid is not drawn, only summarised
MAX_CHIPS = 64           # device chips listed in one replicated tile
MAX_PANELS = 48          # arrays drawn in the HTML of one view (a model's parameters...)
GRID_WIDTH = 400         # px: a 2-D grid's width; facets are drawn smaller
GRID_HEIGHT = 240        # px: the most a 2-D grid's rows take together (more if labels need)
FACET_WIDTH = 240
TILE_EDGE = "#ffffff"
REPLICA_FILL = "#e4e7eb"  # a block on several devices: neutral, its chips carry the colours
# Notebook CSS stripes table rows (dark stripes on dark themes): every cell sets its own.
CELL = f"background:{PANEL};color:{INK};text-align:left;border:none"


# ---- words ------------------------------------------------------------------

def shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def typed_name(lay: "ArrayLayout") -> str:
    return f"{lay.dtype}[{', '.join(str(n) for n in lay.shape)}]"


def _span(a: int, b: int, n: int) -> str:
    return ":" if (a, b) == (0, n) else f"{a}:{b}"


def index_text(index: tuple[tuple[int, int], ...], shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(_span(a, b, n) for (a, b), n in zip(index, shape)) + "]"


def _ids(ids: list[int]) -> str:
    return ",".join(str(i) for i in ids)


def tile_label(tile: "Tile", marks: dict[int, "DeviceMark"], multi: bool) -> str:
    """Device ids holding a tile: `0,1,2,3`; with several processes `p0:0,1 p1:4,5`."""
    if not multi:
        return _ids(list(tile.devices))
    groups: dict[int, list[int]] = {}
    for d in tile.devices:
        groups.setdefault(marks[d].process if d in marks else 0, []).append(d)
    return " ".join(f"p{p}:{_ids(ids)}" for p, ids in sorted(groups.items()))


def _dims_text(lay: "ArrayLayout") -> str:
    parts = []
    for i, axes in enumerate(lay.dim_axes):
        blocks = len({t.index[i] for t in lay.tiles}) if lay.tiles else 1
        if axes:
            parts.append(f"dim {i} split over {'×'.join(axes)} ({blocks} blocks)")
        else:
            parts.append(f"dim {i} whole")
    return ", ".join(parts)


def header_rows(lay: "ArrayLayout", model: "ShardingModel") -> list[tuple[str, str]]:
    """(label, plain text) rows describing one array's placement."""
    rows = [("shape", f"{shape_text(lay.shape)} {lay.dtype}")]
    kind = lay.kind + ("" if lay.state in ("ready",) else f" ({lay.state})")
    rows.append(("sharding", kind))
    if lay.mesh:
        rows.append(("mesh", " × ".join(
            f"{a.name}={a.size}" + (f" ({a.type})" if a.type else "") for a in lay.mesh)))
    if lay.spec:
        rows.append(("spec", lay.spec))
    if lay.dim_axes and any(lay.dim_axes):
        rows.append(("dims", _dims_text(lay)))
    if lay.detail:
        rows.append(("hlo sharding", lay.detail))
    if lay.typed:
        rows.append(("type", lay.typed))
    if lay.uneven:
        rows.append(("shard shape", "uneven: " + ", ".join(shape_text(s)
                                                         for s in lay.shard_shapes)))
    elif lay.shard_shape is not None:
        rows.append(("shard shape", shape_text(lay.shard_shape)))
    elif lay.shard_shapes:
        rows.append(("shard shape", shape_text(lay.shard_shapes[0])))
    per, total = lay.bytes_per_device, lay.total_bytes
    if per is not None:
        rows.append(("per device", f"{fmt_bytes(per)} of {fmt_bytes(total)}"))
    lo, hi = lay.replicas
    copies = str(lo) if lo == hi else f"{lo}–{hi}"
    if lay.unreduced:
        rep = (f"none: the {copies} copies of each block are partial sums over "
               + ", ".join(lay.unreduced))
    elif hi <= 1:
        rep = "1 (each block on one device)"
    else:
        rep = f"{copies} (each block on {copies} devices)"
    rows.append(("replicas", rep))
    devs = lay.device_ids
    procs = sorted({model.devices[d].process for d in devs if d in model.devices})
    dev_text = f"{len(devs)}: {_ids(list(devs))}"
    if model.multi_process:
        dev_text += f" over process{'es' if len(procs) != 1 else ''} {_ids(procs)}"
    rows.append(("devices", dev_text))
    if lay.memory_kind and lay.memory_kind != "device":
        rows.append(("memory", lay.memory_kind))
    return rows


# ---- grid geometry ----------------------------------------------------------------------

def grid_dims(lay: "ArrayLayout") -> tuple[int, ...]:
    """The dimensions drawn as the grid: all of them up to 2-D, else the two sharded (or
    largest) ones, in order."""
    nd = lay.ndim
    if nd <= 2:
        return tuple(range(nd))
    parts = [len({t.index[d] for t in lay.tiles}) for d in range(nd)]
    ranked = sorted(range(nd), key=lambda d: (-min(parts[d] - 1, 1), -parts[d],
                                              -lay.shape[d], d))
    return tuple(sorted(ranked[:2]))


def facets(lay: "ArrayLayout") -> list[tuple[str, list["Tile"]]]:
    """(label, tiles) for each block of the non-grid dimensions (one facet up to 2-D)."""
    gd = grid_dims(lay)
    other = [d for d in range(lay.ndim) if d not in gd]
    if not other:
        return [("", list(lay.tiles))]
    groups: dict[tuple, list] = {}
    for t in lay.tiles:
        groups.setdefault(tuple(t.index[d] for d in other), []).append(t)
    if len(groups) == 1:
        return [("", list(lay.tiles))]
    out = []
    for key in sorted(groups):
        label = ", ".join(f"dim {d} [{_span(a, b, lay.shape[d])}]"
                          for d, (a, b) in zip(other, key))
        out.append((label, groups[key]))
    return out


def _intervals(tiles: list["Tile"], dim: int | None) -> list[tuple[int, int]]:
    if dim is None:
        return [(0, 1)]
    return sorted({t.index[dim] for t in tiles})


def grid(tiles: list["Tile"], rdim: int | None, cdim: int | None):
    """(row intervals, col intervals, {(r, c): tile}) or None if tiles overlap oddly."""
    rows, cols = _intervals(tiles, rdim), _intervals(tiles, cdim)
    cells: dict[tuple[int, int], Tile] = {}
    rpos = {iv: i for i, iv in enumerate(rows)}
    cpos = {iv: i for i, iv in enumerate(cols)}
    for t in tiles:
        r = rpos[t.index[rdim]] if rdim is not None else 0
        c = cpos[t.index[cdim]] if cdim is not None else 0
        if (r, c) in cells:
            return None
        cells[(r, c)] = t
    # a product grid never has a block overlapping two intervals of one dimension
    for ivs in (rows, cols):
        for (a, b), (c, d) in zip(ivs, ivs[1:]):
            if c < b:
                return None
    return rows, cols, cells


def _sizes(intervals: list[tuple[int, int]], total: float, minimum: int) -> list[int]:
    extent = sum(b - a for a, b in intervals) or 1
    return [max(minimum, round(total * (b - a) / extent)) for a, b in intervals]


# ---- HTML -------------------------------------------------------------------------------

def colour(mark: "DeviceMark | None") -> str:
    return DEVICE_COLOURS[(mark.colour if mark else 0) % len(DEVICE_COLOURS)]


# what the chips of a tile share is said once, on the span around them: 8 chips of a
# replicated array were 2 KB of the same style (34 of them a third of a plan's 222 KB)
CHIPS = f"color:{INK};font-size:12px;line-height:16px;font-weight:700;{MONO};white-space:nowrap"


def _chip(d: int, marks: dict) -> str:
    return (f'<span style="display:inline-block;background:{colour(marks.get(d))};'
            f'border:1px solid rgba(0,0,0,0.25);border-radius:3px;padding:0 4px;margin:1px">'
            f'{d}</span>')


def _fits(t: "Tile", shape: tuple[int, ...], width: int, height: int) -> bool:
    """Whether a tile has room for its index range under its device label."""
    return bool(shape) and width >= 7 * len(index_text(t.index, shape)) + 6 and height >= 34


def _tile_html(t: "Tile", marks: dict, multi: bool, shape: tuple[int, ...],
               width: int, height: int, ranges: bool = True) -> str:
    small = f"font-size:10px;color:{INK};opacity:0.8;{MONO};white-space:nowrap"
    rng = index_text(t.index, shape)
    procs = sorted({marks[d].process for d in t.devices if d in marks})
    where = ", ".join(str(d) for d in t.devices)
    title = (f"{rng} on device{'s' if len(t.devices) > 1 else ''} {where}"
             + (f" (process {', '.join(map(str, procs))})" if multi else ""))
    if len(t.devices) == 1:
        d = t.devices[0]
        fill = colour(marks.get(d))
        body = f'<div style="font-weight:700;font-size:13px;{MONO}">{d}</div>'
        if multi:
            body += f'<div style="{small}">p{procs[0] if procs else 0}</div>'
    else:
        fill = REPLICA_FILL
        groups: dict[int, list[int]] = {}
        for d in t.devices:
            groups.setdefault(marks[d].process if d in marks else 0, []).append(d)
        parts = []
        shown = 0
        for p, ids in sorted(groups.items()):
            chips = "".join(_chip(d, marks) for d in ids[:max(0, MAX_CHIPS - shown)])
            shown += len(ids)
            lead = (f'<span style="{small};font-weight:400;margin-right:2px">p{p}</span>'
                    if multi else "")
            parts.append(f'<span style="{CHIPS}">{lead}{chips}</span>')
        extra = (f'<span style="{small}"> +{len(t.devices) - MAX_CHIPS} more</span>'
                 if len(t.devices) > MAX_CHIPS else "")
        body = f'<div style="line-height:17px">{" ".join(parts)}{extra}</div>'
    if ranges and shape:
        body += f'<div style="{small}">{esc(rng)}</div>'
    return (f'<td title="{esc(title)}" style="background:{fill};color:{INK};'
            f'border:2px solid {TILE_EDGE};width:{width}px;height:{height}px;'
            f'min-width:{width}px;padding:2px;text-align:center;vertical-align:middle;'
            f'overflow:hidden;box-sizing:border-box">{body}</td>')


def _axis_caption(lay: "ArrayLayout", dim: int | None) -> str:
    if dim is None:
        return ""
    axes = lay.dim_axes[dim] if dim < len(lay.dim_axes) else ()
    blocks = len({t.index[dim] for t in lay.tiles})
    how = (f"split over {'×'.join(axes)}" if axes else
           f"split into {blocks} blocks" if blocks > 1 else "whole")
    return f"dim {dim} (size {lay.shape[dim]}, {how})"


def grid_html(lay: "ArrayLayout", tiles: list["Tile"], marks: dict, multi: bool,
              total_width: int) -> str:
    gd = grid_dims(lay)
    rdim = gd[0] if len(gd) == 2 else None
    cdim = gd[-1] if gd else None
    g = grid(tiles, rdim, cdim)
    if g is None:       # not a product grid: list the blocks instead
        return "".join(f'<div style="{MONO};font-size:12px">{esc(index_text(t.index, lay.shape))}'
                       f" → {esc(tile_label(t, marks, multi))}</div>" for t in tiles)
    rows, cols, cells = g
    widest = max((len(t.devices) for t in tiles), default=1)
    if len(rows) == 1 and len(cols) == 1:        # one block (replicated): a small tile
        total_width = min(total_width, max(160, 28 + 26 * min(widest, 16)))
    min_w = 34 if widest == 1 else min(200, 28 + 22 * min(widest, 8))
    widths = _sizes(cols, total_width if cdim is not None else min_w * 2, min_w)
    if rdim is None:
        heights = [44 if widest <= 8 else 60]
    else:
        aspect = lay.shape[rdim] / max(1, lay.shape[cdim])
        limit = GRID_HEIGHT if total_width >= GRID_WIDTH else GRID_HEIGHT * 3 // 4
        if len(rows) == 1 and len(cols) == 1:
            limit = 72
        total_h = min(max(total_width * aspect, 30 * len(rows)), max(limit, 30 * len(rows)))
        heights = _sizes(rows, total_h, 30 if widest == 1 else 40)
    ranges = all(_fits(t, lay.shape, widths[c], heights[r]) for (r, c), t in cells.items())
    out = ['<table style="border-collapse:collapse;table-layout:fixed;margin:0">']
    for r, h in enumerate(heights):
        out.append(f'<tr style="background:{PANEL}">')
        for c, w in enumerate(widths):
            t = cells.get((r, c))
            out.append(_tile_html(t, marks, multi, lay.shape, w, h, ranges) if t else
                       f'<td style="{CELL};width:{w}px;height:{h}px"></td>')
        out.append("</tr>")
    out.append("</table>")
    cap_style = f"font-size:11px;color:{MUTED};margin-bottom:1px"
    caps = []
    if rdim is not None:
        caps.append(f"rows: {_axis_caption(lay, rdim)}")
    if cdim is not None:
        caps.append(f"{'columns' if rdim is not None else 'left to right'}: "
                    f"{_axis_caption(lay, cdim)}")
    cap = "".join(f'<div style="{cap_style}">{esc(c)}</div>' for c in caps)
    return cap + "".join(out)


def _head_html(rows: list[tuple[str, str]]) -> str:
    # the row carries the panel colour and the ink its cells inherit, the table the size
    cell = "text-align:left;border:none;padding:1px 10px 1px 0;vertical-align:top"
    head = "".join(
        f'<tr style="background:{PANEL};color:{INK}">'
        f'<td style="{cell};color:{MUTED};white-space:nowrap">{esc(k)}</td>'
        f'<td style="{cell}{";" + MONO if k in ("spec", "type", "hlo sharding") else ""}">'
        f'{esc(v)}</td></tr>' for k, v in rows)
    return f'<table style="border-collapse:collapse;margin:0;font-size:12px">{head}</table>'


def layout_html(lay: "ArrayLayout", model: "ShardingModel") -> str:
    marks, multi = model.devices, model.multi_process
    name = (f'<span style="{MONO};font-weight:700">{esc(lay.path)}</span> ' if lay.path
            else "")
    title = (f'<div style="margin-bottom:4px;color:{INK}">{name}'
             f'<span style="{MONO}">{esc(typed_name(lay))}</span>'
             f'<span style="color:{MUTED}"> · {esc(lay.kind)}</span></div>')
    head = _head_html(header_rows(lay, model))
    if len(lay.tiles) > MAX_TILES:
        picture = (f'<div style="color:{MUTED}">{len(lay.tiles)} blocks: too many to draw '
                   "(the text view lists them)</div>")
    else:
        fs = facets(lay)
        if len(fs) == 1 and not fs[0][0]:
            picture = _facet_intro(lay, 1) + grid_html(lay, fs[0][1], marks, multi, GRID_WIDTH)
        else:
            boxes = []
            for label, tiles in fs[:MAX_FACETS]:
                boxes.append(
                    f'<div style="display:inline-block;vertical-align:top;margin:0 12px 8px 0">'
                    f'<div style="{MONO};font-size:11px;color:{INK}">{esc(label)}</div>'
                    f'{grid_html(lay, tiles, marks, multi, FACET_WIDTH)}</div>')
            more = (f'<div style="color:{MUTED};font-size:12px">… and {len(fs) - MAX_FACETS}'
                    " more facets (the text view lists every block)</div>"
                    if len(fs) > MAX_FACETS else "")
            picture = _facet_intro(lay, len(fs)) + "".join(boxes) + more
    warn = ("uneven", "its buffers", "still")
    notes = "".join(f'<div style="color:{WARNING if n.startswith(warn) else MUTED};'
                    f'font-size:12px">{esc(n)}</div>' for n in lay.notes)
    return (f'<div style="margin:6px 0 10px 0">{title}'
            f'<div style="display:flex;flex-wrap:wrap;align-items:flex-start">'
            f'<div style="margin:0 18px 6px 0;max-width:100%;overflow-x:auto">{picture}</div>'
            f'<div style="margin:0 0 6px 0">{head}</div></div>{notes}</div>')


SHARED_ROWS = ("sharding", "mesh", "spec", "replicas", "devices", "memory")


def shared_title(group: list["ArrayLayout"]) -> str:
    return (f"{len(group)} arrays, each whole on every one of "
            f"{len(group[0].tiles[0].devices)} devices")


def shared_rows(group: list["ArrayLayout"], model: "ShardingModel") -> list[tuple[str, str]]:
    """The header rows the arrays of one placement share, and the bytes all of them take."""
    rows = [(k, v) for k, v in header_rows(group[0], model) if k in SHARED_ROWS]
    sizes = [lay.total_bytes for lay in group]
    if None not in sizes:
        rows.insert(-1, ("per device", f"{fmt_bytes(sum(sizes))}: all {len(group)} whole"))
    return rows


def shared_names(group: list["ArrayLayout"]) -> str:
    return "; ".join(f"{lay.path} {typed_name(lay)}" if lay.path else typed_name(lay)
                     for lay in group)


def shared_html(group: list["ArrayLayout"], model: "ShardingModel") -> str:
    """Arrays each whole on the same devices, drawn once and named under the drawing."""
    first = group[0]
    title = (f'<div style="margin-bottom:4px;color:{INK}">{shared_title(group)}'
             f'<span style="color:{MUTED}"> · {esc(first.kind)}</span></div>')
    whole = replace(first.tiles[0], index=())
    tile = _tile_html(whole, model.devices, model.multi_process, (), GRID_WIDTH, 30)
    picture = f'<table style="border-collapse:collapse;margin:0"><tr>{tile}</tr></table>'
    head = _head_html(shared_rows(group, model))
    names = shared_names(group)
    return (f'<div style="margin:6px 0 10px 0">{title}'
            f'<div style="display:flex;flex-wrap:wrap;align-items:flex-start">'
            f'<div style="margin:0 18px 6px 0;max-width:100%">{picture}</div>'
            f'<div style="margin:0 0 6px 0">{head}</div></div>'
            f'<div style="{MONO};font-size:12px;color:{INK}">{esc(names)}</div></div>')


def facet_intro_text(lay: "ArrayLayout", n: int) -> str:
    if lay.ndim <= 2:
        return ""
    gd = grid_dims(lay)
    other = [d for d in range(lay.ndim) if d not in gd]
    names = ", ".join(f"dim {d}" for d in other)
    if n == 1:
        return (f"{lay.ndim}-D: dims {gd[0]} × {gd[1]} drawn as the grid; {names} "
                "whole in every block")
    return f"{lay.ndim}-D: dims {gd[0]} × {gd[1]} drawn as a grid for each block of {names}"


def _facet_intro(lay: "ArrayLayout", n: int) -> str:
    text = facet_intro_text(lay, n)
    return (f'<div style="color:{MUTED};font-size:11px;margin-bottom:3px">{esc(text)}</div>'
            if text else "")


def _process_legend(model: "ShardingModel") -> str:
    groups: dict[int, list[int]] = {}
    for d in sorted(model.devices.values(), key=lambda m: m.colour):
        groups.setdefault(d.process, []).append(d.id)
    parts = [f"process {p}{' (this one)' if p == model.process_index else ''}: devices "
             f"{_ids(ids)}" for p, ids in sorted(groups.items())]
    return f"{model.process_count} processes · " + " · ".join(parts)


class ShardingView:
    """Where every block of each array lives (`%%shardviz`, `jaxmagic.sharding_view`).

    `model` is core.sharding.ShardingModel (plain data); `layouts` one ArrayLayout per
    array drawn. Displays as HTML tiles (`_repr_mimebundle_`); `text()` for terminals.
    """

    def __init__(self, model: "ShardingModel", title: str = "shardviz"):
        self.model = model
        self.title = title

    @property
    def layouts(self) -> list["ArrayLayout"]:
        return self.model.layouts

    def __len__(self) -> int:
        return len(self.layouts)

    def __getitem__(self, path: str) -> "ArrayLayout":
        for lay in self.layouts:
            if lay.path == path:
                return lay
        raise KeyError(path)

    def __repr__(self) -> str:
        if self.model.message:
            return f"<ShardingView: {self.model.message}>"
        return f"<ShardingView: {len(self.layouts)} array{'s' * (len(self.layouts) != 1)}>"

    # ---- text ----

    def text(self) -> str:
        m = self.model
        head = self.title + (f" {m.source}" if m.source else "")
        lines = [head]
        if m.message:
            lines.append("  " + m.message)
            return "\n".join(lines)
        if m.multi_process:
            lines.append("  " + _process_legend(m))
        for sec in m.sections:
            if sec.title:
                lines.append(f"{sec.title}:")
            for group in sec.placements:
                lines.extend(self._layout_text(group[0]) if len(group) == 1 else
                             self._shared_text(group))
            if sec.skipped:
                lines.append("  not JAX arrays: " + "; ".join(
                    f"{s.path or '(value)'}: {s.what}" for s in sec.skipped))
        return "\n".join(lines)

    def _shared_text(self, group: list["ArrayLayout"]) -> list[str]:
        m = self.model
        rows = shared_rows(group, m)[1:]
        w = max(len(k) for k, _ in rows)
        label = tile_label(group[0].tiles[0], m.devices, m.multi_process)
        return ([f"{shared_title(group)}  {header_rows(group[0], m)[1][1]}"]
                + [f"  {k.ljust(w)}  {v}" for k, v in rows] + ["  " + s for s in box([[label]])]
                + [f"  {(lay.path + '  ') if lay.path else ''}{typed_name(lay)}"
                   for lay in group])

    def _layout_text(self, lay: "ArrayLayout") -> list[str]:
        m = self.model
        state = "" if lay.state == "ready" else f" ({lay.state})"
        out = [f"{(lay.path + '  ') if lay.path else ''}{typed_name(lay)}  {lay.kind}{state}"]
        rows = header_rows(lay, m)[2:]
        w = max(len(k) for k, _ in rows)
        out += [f"  {k.ljust(w)}  {v}" for k, v in rows]
        out += [f"  {n}" for n in lay.notes]
        if len(lay.tiles) > MAX_TILES:
            out.append(f"  {len(lay.tiles)} blocks (not drawn)")
            return out
        gd = grid_dims(lay)
        rdim = gd[0] if len(gd) == 2 else None
        cdim = gd[-1] if gd else None
        fs = facets(lay)
        intro = facet_intro_text(lay, len(fs))
        if intro:
            out.append("  " + intro)
        for label, tiles in fs:
            g = grid(tiles, rdim, cdim)
            if label:
                out.append(f"  {label}")
            if g is None:
                out += [f"    {index_text(t.index, lay.shape)} → "
                        f"{tile_label(t, m.devices, m.multi_process)}" for t in tiles]
                continue
            rows_, cols, cells = g
            table = [[tile_label(cells[(r, c)], m.devices, m.multi_process)
                      if (r, c) in cells else "" for c in range(len(cols))]
                     for r in range(len(rows_))]
            out += ["  " + s for s in box(table)]
        return out

    # ---- html ----

    def html(self) -> str:
        m = self.model
        title = esc(self.title) + (f" {code(m.source)}" if m.source else "")
        if m.message:
            body = (f'<div style="color:{WARNING}">{esc(m.message)}</div>'
                    f'<div style="color:{MUTED};font-size:12px;margin-top:4px">%%shardviz draws '
                    "the jax.Array (or pytree of them) the cell ends with, or the variables "
                    "named after it: %%shardviz x y</div>")
            return panel(body, title=title)
        parts = []
        if m.multi_process:
            parts.append(f'<div style="color:{INK};font-size:12px;margin-bottom:4px">'
                         f"{esc(_process_legend(m))}</div>")
        for sec in m.sections:
            if sec.title:
                parts.append(f'<div style="font-weight:600;color:{INK};margin-top:6px;'
                             f'border-bottom:1px solid {BORDER}">{esc(sec.title)}</div>')
            groups = sec.placements
            for i, group in enumerate(groups[:MAX_PANELS]):
                sep = f"border-top:1px solid {BORDER};" if i else ""
                drawn = layout_html(group[0], m) if len(group) == 1 else shared_html(group, m)
                parts.append(f'<div style="{sep}">{drawn}</div>')
            if len(groups) > MAX_PANELS:
                rest = [lay for group in groups[MAX_PANELS:] for lay in group]
                parts.append(f'<div style="color:{MUTED};font-size:12px;border-top:1px solid '
                             f'{BORDER};padding-top:4px">{len(rest)} more arrays, not drawn '
                             "(the text view lists them all): "
                             + esc(", ".join(f"{lay.path} {typed_name(lay)} {lay.spec or lay.kind}"
                                             for lay in rest[:50]))
                             + (" …" if len(rest) > 50 else "") + "</div>")
            if sec.skipped:
                parts.append(f'<div style="color:{MUTED};font-size:12px">not JAX arrays: '
                             + esc("; ".join(f"{s.path or '(value)'}: {s.what}"
                                             for s in sec.skipped)) + "</div>")
        note = ("Numbers are device ids; one colour per device throughout; a grey tile "
                "lists every device holding a copy of that block"
                + ("; pN is the owning process." if m.multi_process else "."))
        return panel("".join(parts), title=title, note=esc(note))

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": visible(self.text()), "text/html": self.html()}

    def _repr_pretty_(self, p, cycle):
        p.text(self.text())


def box(cells: list[list[str]]) -> list[str]:
    """A box-drawing grid of one-line cells."""
    if not cells or not cells[0]:
        return []
    ncol = len(cells[0])
    widths = [max(len(row[c]) for row in cells) + 2 for c in range(ncol)]

    def rule(left: str, mid: str, right: str) -> str:
        return left + mid.join("─" * w for w in widths) + right

    out = [rule("┌", "┬", "┐")]
    for i, row in enumerate(cells):
        out.append("│" + "│".join(row[c].center(widths[c]) for c in range(ncol)) + "│")
        out.append(rule("├", "┼", "┤") if i < len(cells) - 1 else rule("└", "┴", "┘"))
    return out


__all__ = ["ShardingView", "box"]
