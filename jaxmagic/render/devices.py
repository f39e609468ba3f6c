"""`DevicesView`: the devices JAX sees (`%devices`, `jaxmagic.devices_info()`).

One table per process (this process first), local devices marked; each device carries the
colour `%%shardviz` gives it, so the two outputs read together.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .html import BORDER, DEVICE_COLOURS, INK, MONO, MUTED, PANEL, WARNING, esc, panel
from .units import fmt_bytes

if TYPE_CHECKING:
    from ..core.devices import DeviceRow, DevicesModel


def _memory(d: "DeviceRow") -> str:
    if d.bytes_in_use is None and d.bytes_limit is None:
        return "—" if d.local else "(remote)"
    use = fmt_bytes(d.bytes_in_use) if d.bytes_in_use is not None else "?"
    lim = fmt_bytes(d.bytes_limit) if d.bytes_limit is not None else "?"
    return f"{use} of {lim}"


def _coords(d: "DeviceRow") -> str:
    if d.coords is None:
        return ""
    text = "(" + ", ".join(str(c) for c in d.coords) + ")"
    return text + (f" core {d.core_on_chip}" if d.core_on_chip is not None else "")


def summary(m: "DevicesModel") -> str:
    n, local = len(m.devices), len(m.local)
    plats = ", ".join(m.platforms)
    return (f"{n} global device{'s' * (n != 1)}, {local} local · {plats} · "
            f"process {m.process_index} of {m.process_count} "
            f"(jax.process_index() / jax.process_count()) · default backend "
            f"{m.default_backend} · jax {m.jax_version}")


class DevicesView:
    """Local and global devices, grouped by process. `model` is core.devices.DevicesModel."""

    def __init__(self, model: "DevicesModel"):
        self.model = model

    def __repr__(self) -> str:
        m = self.model
        return (f"<DevicesView: {len(m.devices)} global / {len(m.local)} local devices, "
                f"{m.process_count} process{'es' * (m.process_count != 1)}>")

    def _columns(self) -> tuple[bool, bool]:
        rows = self.model.devices
        return (any(d.coords is not None for d in rows),
                any(d.bytes_in_use is not None or d.bytes_limit is not None for d in rows))

    def text(self) -> str:
        m = self.model
        has_coords, has_mem = self._columns()
        lines = ["devices: " + summary(m)]
        for proc, rows in self._groups():
            mine = " (this process)" if proc == m.process_index else ""
            lines.append(f"process {proc}{mine}: {len(rows)} device{'s' * (len(rows) != 1)}")
            for d in rows:
                parts = [f"  {d.id:>3}", d.platform, d.kind or "—",
                         "local" if d.local else "remote"]
                if has_coords:
                    parts.append(_coords(d) or "—")
                if has_mem:
                    parts.append(_memory(d))
                parts.append(d.text)
                lines.append("  ".join(parts))
        lines += m.notes
        return "\n".join(lines)

    def _groups(self):
        groups = self.model.by_process()
        me = self.model.process_index
        return sorted(groups.items(), key=lambda kv: (kv[0] != me, kv[0]))

    def html(self) -> str:
        m = self.model
        has_coords, has_mem = self._columns()
        # notebook CSS stripes rows (dark on dark themes): each cell sets its background
        cell = (f"padding:2px 12px 2px 0;text-align:left;vertical-align:middle;color:{INK};"
                f"background:{PANEL};border:none")
        head = ["id", "platform", "kind", "where"] + (["coords"] if has_coords else []) \
            + (["memory in use"] if has_mem else []) + ["device"]
        blocks = []
        for proc, rows in self._groups():
            mine = " (this process)" if proc == m.process_index else ""
            trs = [f'<tr style="background:{PANEL}">' + "".join(
                f'<th style="{cell};border-bottom:1px solid {BORDER};font-weight:600">'
                f"{h}</th>" for h in head) + "</tr>"]
            for d in rows:
                chip = (f'<span style="display:inline-block;min-width:18px;text-align:center;'
                        f"background:{DEVICE_COLOURS[d.colour % len(DEVICE_COLOURS)]};"
                        f'color:{INK};border:1px solid rgba(0,0,0,0.25);border-radius:3px;'
                        f'padding:0 4px;font-weight:700;{MONO}">{d.id}</span>')
                cells = [chip, esc(d.platform), esc(d.kind or "—"),
                         "local" if d.local else f'<span style="color:{MUTED}">remote</span>']
                if has_coords:
                    cells.append(esc(_coords(d) or "—"))
                if has_mem:
                    cells.append(esc(_memory(d)))
                cells.append(f'<span style="{MONO};font-size:12px;color:{MUTED}">'
                             f"{esc(d.text)}</span>")
                trs.append(f'<tr style="background:{PANEL}">'
                           + "".join(f'<td style="{cell}">{c}</td>' for c in cells) + "</tr>")
            blocks.append(
                f'<div style="margin:6px 0 2px 0;font-weight:600;color:{INK}">process {proc}'
                f"{mine} · {len(rows)} device{'s' * (len(rows) != 1)}</div>"
                f'<table style="border-collapse:collapse;margin:0">{"".join(trs)}</table>')
        notes = "".join(f'<div style="color:{WARNING};margin-top:6px">{esc(n)}</div>'
                        for n in m.notes)
        body = (f'<div style="color:{INK}">{esc(summary(m))}</div>' + "".join(blocks) + notes)
        return panel(body, title="devices")

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": self.text(), "text/html": self.html()}

    def _repr_pretty_(self, p, cycle):
        p.text(self.text())


__all__ = ["DevicesView"]
