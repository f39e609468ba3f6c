"""One analysis compile of the tagged program, and the texts XLA writes about it.

`--profile`'s tagged copy of the jaxpr (every equation's name stack ends in its index) is
compiled once more with XLA's dump switched on. The dump gives what no public API does:
the program after sharding propagation and before partitioning (`--sharding`), and the
buffer assignment with its live ranges over the schedule (`--memory`). Both join back to
equations through `profile.instruction_tags`.

The program gets a name no other compile had: a persistent-cache hit, or a second compile
of the same `Lowered`, writes no dump.
"""
from __future__ import annotations

import functools
import glob
import os
import tempfile
import uuid
from dataclasses import dataclass
from typing import Any

import jax

from ... import _compat
from ..trace import Traced
from .profile import Instructions, compile_tagged, donated_leaves, instruction_tags


@dataclass
class Analysis:
    """What the analysis compile of a traced call says, as text and plain data."""

    compiled_text: str           # compiled.as_text(): the optimized, scheduled HLO
    before_partitioning: str     # HLO after sharding propagation ('' on one device)
    buffer_assignment: str       # XLA's BufferAssignment: allocations and their values
    live_ranges: str             # XLA's HloLiveRange: the schedule, one range per buffer
    memory_analysis: Any         # compiled.memory_analysis(), or None where unsupported
    instructions: Instructions   # the equations each instruction stands for
    platform: str                # 'cpu', 'gpu', 'tpu'
    num_devices: int             # devices the program runs on (sizes are per device)
    module: str = ""             # the HLO module's name

    @functools.cached_property
    def program(self) -> dict:
        """`hlo.parse(compiled_text)`, parsed once for `--sharding` and `--memory`."""
        from . import hlo
        return hlo.parse(self.compiled_text)


def analyze(traced: Traced) -> Analysis:
    """Compile the tagged copy of `traced` once with XLA's dump on, and read the dump."""
    prefix = f"jaxmagic_analysis_{uuid.uuid4().hex[:8]}_"
    with tempfile.TemporaryDirectory(prefix="jaxmagic-analysis-") as d:
        options = {"xla_dump_to": d, "xla_dump_hlo_as_text": True,
                   "xla_dump_hlo_pass_re": "|".join(_compat.sharding_passes())}
        compiled, text, kept = compile_tagged(traced, prefix, options, donated_leaves(traced))
        info = instruction_tags(text, kept)
        before = next(filter(None, (_read(d, info.module, f"after_{p}.before_spmd-partitioning"
                                          ".txt") for p in _compat.sharding_passes())), "")
        buffers, live = _compat.buffer_dumps(
            _read(d, info.module, "after_optimizations-buffer-assignment.txt"),
            _read(d, info.module, "after_optimizations-live-range.txt"))
    platform, count = _devices(compiled)
    return Analysis(text, before, buffers, live, _memory_analysis(compiled), info,
                    platform, count, info.module)


def _read(directory: str, module: str, suffix: str) -> str:
    """The text of the module's dump file ending in `suffix` ('' when XLA wrote none)."""
    paths = sorted(glob.glob(os.path.join(directory, f"*.{glob.escape(module)}.*{suffix}")))
    if not paths:
        return ""
    with open(paths[-1], encoding="utf-8", errors="replace") as f:
        return f.read()


def _memory_analysis(compiled: Any) -> Any:
    try:
        return compiled.memory_analysis()
    except Exception:      # backends may not implement it
        return None


def _devices(compiled: Any) -> tuple[str, int]:
    """(platform, number of devices) the compiled program runs on."""
    devices: set = set()
    for s in jax.tree_util.tree_leaves((compiled.input_shardings, compiled.output_shardings)):
        devices |= set(getattr(s, "device_set", ()))
    if not devices:
        devices = {jax.devices()[0]}
    return next(iter(devices)).platform, len(devices)
