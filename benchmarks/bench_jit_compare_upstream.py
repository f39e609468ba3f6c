"""`%jit_compare` on train steps nobody here wrote: the verdict, and nothing of the user's lost.

The rows of `bench_upstream.py` (Flax's gemma and lm1b as their `train_and_evaluate` builds
them, and the held-out steps of `upstream_heldout.py`), each built in a real IPython shell,
then measured by `%jit_compare` at a small budget. Per row: the verdict (match / DIFFER),
the leaves rounding decides, the largest relative difference left, the hint shown when the
results differ, and whether every array the user holds (NNX state, train states, keys) is
alive and unchanged afterwards. Each step donates its state, so the last column is the
data-loss check on real code.

Targets: "match" (rounding leaves named) wherever eager and jit agree to float rounding,
"DIFFER" only with a cause backed by evidence; every user array alive and unchanged.

    PYTHONPATH=$PWD python benchmarks/bench_jit_compare_upstream.py [--mirrors /work/.mirror]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from bench_upstream import (
    MODELS,
    Failed,
    extract,
    forget,
    io_stand_ins,
    run_cells,
    shell,
    standing_in,
    time_limit,
)
from upstream_heldout import HELD_OUT

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")


def user_arrays(ns: dict) -> dict[str, np.ndarray]:
    """Every array reachable from the user's names (NNX objects through their state), as
    host values; raises if one was deleted."""
    import jax

    nnx = sys.modules.get("flax.nnx")
    out = {}
    for name, value in list(ns.items()):
        if name.startswith("_") or isinstance(value, type) or callable(value) and not (
                nnx and isinstance(value, nnx.Module)):
            continue
        try:
            tree = nnx.state(value) if nnx and isinstance(value, (nnx.Module, nnx.Object)) \
                else value
            leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
        except Exception:  # noqa: BLE001 - not a pytree we can read: not an array holder
            continue
        for path, leaf in leaves:
            if isinstance(leaf, jax.Array):
                key = name + jax.tree_util.keystr(path)
                if leaf.is_deleted():
                    raise Failed(f"{key} was deleted")
                if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
                    leaf = jax.random.key_data(leaf)
                out[key] = np.asarray(leaf)
    return out


def compare(ip, cells: list[str], call: str, stand_ins: dict,
            magic: str = "jit_compare -o --budget 0.3") -> dict:
    """`magic` (by default `%jit_compare`) run on a row's call: its result, seconds, and
    the user's arrays it deleted or changed."""
    from IPython.utils.capture import capture_output

    with standing_in(stand_ins):
        run_cells(ip, cells)
    before = user_arrays(ip.user_ns)
    t0 = time.perf_counter()
    name, _, options = magic.partition(" ")
    with time_limit(300), capture_output():
        r = ip.run_line_magic(name, f"{options} {call}")
    seconds = time.perf_counter() - t0
    after = user_arrays(ip.user_ns)
    changed = [k for k in before if k not in after or not np.array_equal(
        before[k], after[k], equal_nan=before[k].dtype.kind in "fc")]
    return {"r": r, "s": seconds, "arrays": len(before), "changed": changed}


def measured(ip, rows: list, examples: str, mirrors: Path, stand_ins: dict,
             magic: str = "jit_compare -o --budget 0.3"):
    """(title, `compare`'s dict) for each row built as its example builds it, `magic` run
    on its call; a row that fails prints why and yields nothing, the next one runs."""
    for title, setup, call, _blocks, notebook in rows:
        forget(examples)
        cells = (notebook.sources(mirrors) if notebook else []) + [setup]
        try:
            yield title, compare(ip, cells, call, stand_ins, magic)
        except Exception as e:  # noqa: BLE001 - the row shows it, the next one runs
            print(f"{title:<26} failed: {type(e).__name__}: {str(e)[:140]}")
            yield title, None


def table(ip, rows: list, examples: str, mirrors: Path, stand_ins: dict) -> bool:
    print(f"{'train step':<26} {'verdict':<8} {'rounding':>8} {'rel diff':>9} {'arrays':>6}"
          f" {'lost':>4} {'s':>5}  hint")
    ok = True
    for title, got in measured(ip, rows, examples, mirrors, stand_ins):
        if got is None:
            ok = False
            continue
        r = got["r"]
        verdict = {True: "match", False: "DIFFER", None: "-"}[r.results_match]
        lost = len(got["changed"])
        hint = (r.hints[0][:70] if r.hints else "")
        ok &= lost == 0 and r.results_match is not False or bool(r.eager_varies)
        print(f"{title:<26} {verdict:<8} {len(r.rounding_leaves):>8} "
              f"{r.max_rel_diff or 0:>9.1e} {got['arrays']:>6} {lost:>4} {got['s']:>5.1f}  {hint}")
        for d in r.rounding_leaves[:3]:
            print(f"{'':<26} rounding decides {d.path} (rel {d.max_rel:.2g})")
        for d in [d for d in r.leaves if not d.ok][:4]:
            print(f"{'':<26} differs: {d.path} (abs {d.max_abs:.2g}, rel {d.max_rel:.2g})")
        for k in got["changed"][:3]:
            print(f"{'':<26} CHANGED: {k}")
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
