"""Which devices JAX sees: local and global, grouped by process, with memory where known.

Plain data for render/devices.py. Only public JAX calls: `jax.devices()`,
`jax.local_devices()`, `jax.process_index()`, `jax.process_count()`,
`jax.default_backend()`, and per local device `memory_stats()` (None on CPU).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax

CPU_HINT = ("Only one device. To try sharding on a CPU, set "
            "XLA_FLAGS=--xla_force_host_platform_device_count=8 before jax is imported "
            "(restart the kernel, set it in the first cell, then import jax).")


@dataclass
class DeviceRow:
    id: int
    platform: str
    kind: str
    process: int
    local: bool
    colour: int                          # position in jax.devices(): %%shardviz's colour
    coords: tuple[int, ...] | None = None
    core_on_chip: int | None = None
    bytes_in_use: int | None = None
    bytes_limit: int | None = None
    peak_bytes_in_use: int | None = None
    text: str = ""                       # str(device), e.g. "TFRT_CPU_0" or "cpu:0"


@dataclass
class DevicesModel:
    devices: list[DeviceRow]
    default_backend: str
    process_index: int
    process_count: int
    jax_version: str
    notes: list[str] = field(default_factory=list)

    @property
    def local(self) -> list[DeviceRow]:
        return [d for d in self.devices if d.local]

    def by_process(self) -> dict[int, list[DeviceRow]]:
        out: dict[int, list[DeviceRow]] = {}
        for d in sorted(self.devices, key=lambda d: (d.process, d.colour)):
            out.setdefault(d.process, []).append(d)
        return out

    @property
    def platforms(self) -> list[str]:
        return sorted({d.platform for d in self.devices})


def _memory(dev: Any) -> dict:
    try:
        stats = dev.memory_stats()
    except Exception:  # noqa: BLE001 - platforms without memory stats raise or return None
        return {}
    return dict(stats or {})


def _int_tuple(v: Any) -> tuple[int, ...] | None:
    try:
        return tuple(int(c) for c in v) if v is not None else None
    except TypeError:
        return None


def collect() -> DevicesModel:
    """Every global device (local ones with memory statistics), in `jax.devices()` order."""
    globals_ = jax.devices()
    local_ids = {d.id for d in jax.local_devices()}
    rows = []
    for slot, d in enumerate(globals_):
        local = d.id in local_ids
        mem = _memory(d) if local else {}
        core = getattr(d, "core_on_chip", None)
        rows.append(DeviceRow(
            id=int(d.id), platform=str(d.platform), kind=str(getattr(d, "device_kind", "")),
            process=int(getattr(d, "process_index", 0)), local=local, colour=slot,
            coords=_int_tuple(getattr(d, "coords", None)),
            core_on_chip=int(core) if isinstance(core, int) else None,
            bytes_in_use=mem.get("bytes_in_use"), bytes_limit=mem.get("bytes_limit"),
            peak_bytes_in_use=mem.get("peak_bytes_in_use"), text=str(d)))
    model = DevicesModel(rows, jax.default_backend(), jax.process_index(),
                         jax.process_count(), jax.__version__)
    if len(rows) == 1:
        model.notes.append(CPU_HINT)
    return model
