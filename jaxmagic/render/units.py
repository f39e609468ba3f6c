"""One way to write a number with its unit, everywhere a view writes one.

Bytes in binary units, as XLA and JAX count them (`memory_analysis()`, buffer dumps, array
sizes: 2 MiB is a 512×1024 f32); seconds as `%timeit` shows them; flops and other counts
with SI prefixes.
"""
from __future__ import annotations

import math


def fmt_time(s: float | None) -> str:
    """Seconds as %timeit shows them: 3 significant digits, ns / µs / ms / s."""
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return "—"
    if s == 0:
        return "0 s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(s) >= scale or unit == "ns":
            v = s / scale
            return f"{v:.3g} {unit}" if v < 1000 else f"{v:.0f} {unit}"
    return f"{s:.3g} s"


def fmt_si(x: float | None, unit: str = "") -> str:
    """A count with an SI prefix: `274 k` flops, `1.2 G`."""
    if x is None:
        return "—"
    x = float(x)
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}".rstrip()


def fmt_bytes(n: float | None) -> str:
    """Bytes in binary units: `512 B`, `13.7 KiB`, `2 MiB`, `1.5 GiB`."""
    if n is None:
        return "—"
    n = float(n)
    for unit, scale in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def fmt_diff(x: float | None) -> str:
    """A difference between results: two significant digits, `∞`, `0`."""
    if x is None:
        return "—"
    if math.isinf(x):
        return "∞"
    return "0" if x == 0 else f"{x:.2g}"
