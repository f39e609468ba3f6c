"""%timeit-style steady timing of one callable: the loop count grown until a batch takes
a fair part of the time share, then several repeats (median and spread), each call
blocking on its outputs and, where it donates, given fresh copies made before the clock
starts. Apart from `timing`, which decides what is timed and in which order.
"""
from __future__ import annotations

import math
import statistics
import time
from typing import Any, Callable

import jax

from . import collector, interrupt

DEFAULT_REPEAT = 7       # as %timeit
MAX_DONATION_COPIES_BYTES = 256 * 2**20


def blocker(out: Any) -> Callable:
    """How to wait for results like `out`: an array's own method (no pytree walk), else
    `jax.block_until_ready`."""
    if isinstance(out, jax.Array):
        return type(out).block_until_ready
    return jax.block_until_ready


def _loop(fn: Callable, args: tuple, kwargs: dict, n: int, block: Callable) -> float:
    __tracebackhide__ = True
    timer = time.perf_counter
    if kwargs:
        t0 = timer()
        for _ in range(n):
            block(fn(*args, **kwargs))
        return timer() - t0
    t0 = timer()
    for _ in range(n):
        block(fn(*args))
    return timer() - t0


def _loop_fresh(fn: Callable, prepared: list, block: Callable) -> float:
    """Each call gets its own copies of the donated arguments (made before timing)."""
    __tracebackhide__ = True
    timer = time.perf_counter
    t0 = timer()
    for args, kwargs in prepared:
        block(fn(*args, **kwargs))
    return timer() - t0


def _round_loops(n: float) -> int:
    """Largest 1-2-5 number <= n (as %timeit's loop counts), at least 1."""
    if n < 1:
        return 1
    k = 10 ** int(math.floor(math.log10(n)))
    for m in (5, 2, 1):
        if m * k <= n:
            return m * k
    return 1


class Timer:
    """%timeit-style steady timing of one callable within a time share."""

    def __init__(self, fn, args, kwargs, block, fresh: Callable | None, copy_bytes: int):
        self.fn, self.args, self.kwargs, self.block = fn, args, kwargs, block
        self.fresh = fresh            # () -> (args, kwargs) with new donated copies
        self.copy_bytes = copy_bytes

    def timed(self, n: int) -> float:
        __tracebackhide__ = True
        interrupt.stop_if_interrupted()      # one Python dropped: before the next batch
        if self.fresh is None:
            return _loop(self.fn, self.args, self.kwargs, n, self.block)
        prepared = [self.fresh() for _ in range(n)]
        jax.block_until_ready(prepared)
        return _loop_fresh(self.fn, prepared, self.block)

    def run(self, share: float, number: int | None, repeat: int | None,
            runs: list) -> tuple[int, int]:
        """Fill `runs` with per-call seconds of each repeat; return (loops, repeats).

        Like %timeit: the loop count grows until a batch takes a fair part of a repeat's
        share of the budget; a call slower than that is timed once per repeat, with as
        many repeats as the budget holds (unless `repeat` was given).
        """
        __tracebackhide__ = True
        start = time.perf_counter()
        reps = repeat or DEFAULT_REPEAT
        with collector.paused():
            if number is None:
                per_repeat = share / reps
                t = self.timed(1)
                if per_repeat / 5 <= t < per_repeat:
                    t = min(t, self.timed(1))     # one slow first sample is often noise
                if t >= per_repeat / 5:
                    number = max(1, int(per_repeat / t)) if t < per_repeat else 1
                    if number == 1:
                        if repeat is None:
                            reps = max(1, min(reps, int(share / max(t, 1e-9))))
                        runs.append(t)          # the calibration call is the first repeat
                else:
                    n = 1
                    while t < min(0.02, per_repeat / 5) and n < 10**7:
                        n *= 4 if t < 0.002 else 2
                        t = self.timed(n)
                    left = max(share - (time.perf_counter() - start), share / 2)
                    number = _round_loops(left / reps / max(t / n, 1e-9))
            if self.fresh is not None and self.copy_bytes:
                number = max(1, min(number, MAX_DONATION_COPIES_BYTES // self.copy_bytes))
            while len(runs) < reps:
                runs.append(self.timed(number) / number)
        return number, reps


def median_spread(runs: list) -> tuple[float | None, float | None]:
    """The median and spread of per-call times, as %timeit reports them."""
    if not runs:
        return None, None
    return statistics.median(runs), (statistics.pstdev(runs) if len(runs) > 1 else 0.0)
