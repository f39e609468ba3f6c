"""`%jaxpr --values` on train steps nobody here wrote: no false alarm, nothing lost.

The rows of `bench_upstream.py` (Flax's gemma and lm1b as `train_and_evaluate` builds
them) and its held-out steps (`upstream_heldout.py`: Haiku, Equinox, Optax, NNX, Linen,
pmap), each built in a real IPython shell and run once by `%jaxpr --values`. A train step
on its own example data is finite: any NaN/Inf card is a false alarm unless the step's
own eager run (jax_debug_nans) agrees. Per row: the values summarised, the origin found
(none, or one made and discarded before the results), the largest |x| and its group, the
layers read, seconds, and the user's arrays deleted or changed (each step donates its
state: must be 0).

    PYTHONPATH=$PWD python benchmarks/bench_values_upstream.py [--mirrors /work/.mirror]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bench_jit_compare_upstream import measured
from bench_upstream import MODELS, extract, io_stand_ins, shell
from upstream_heldout import HELD_OUT

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")


def table(ip, rows: list, examples: str, mirrors: Path, stand_ins: dict) -> bool:
    print(f"{'train step':<26} {'values':>6} {'origin':<18} {'max |x| (group)':<34} "
          f"{'layers':>6} {'lost':>4} {'s':>5}")
    ok = True
    for title, got in measured(ip, rows, examples, mirrors, stand_ins, "jaxpr --values -o"):
        if got is None:
            ok = False
            continue
        values = got["r"].values
        if values is None:
            print(f"{title:<26} no values: {got['r'].notes[-1][:120]}")
            ok = False
            continue
        card = values.card
        origin = "none" if card is None else f"{card.primitive} {card.where}"[:18]
        top = values.groups(1)
        group = f"{top[0][1]:.3g} ({top[0][0][:24]})" if top else "-"
        layers = sum(len(rows) for _, rows in values.layers())
        lost = len(got["changed"])
        ok &= lost == 0 and (card is None or not card.reached)
        print(f"{title:<26} {len(values.flow.summaries):>6} {origin:<18} {group:<34} "
              f"{layers:>6} {lost:>4} {got['s']:>5.1f}")
        if card is not None:
            print(f"{'':<26} {' / '.join(card.lines()[:3])[:160]}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirrors", default=os.environ.get("JAXMAGIC_MIRRORS", "/work/.mirror"))
    mirrors = Path(ap.parse_args().mirrors)
    examples = extract(mirrors)
    if examples is None:
        return 1
    stand_ins = io_stand_ins()
    ip = shell(examples)
    ok = table(ip, MODELS, examples, mirrors, stand_ins)
    print("\nheld out")
    ok &= table(ip, HELD_OUT, examples, mirrors, stand_ins)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
