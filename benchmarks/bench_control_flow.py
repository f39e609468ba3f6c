"""Every magic on public programs whose structure is control flow, in a real shell.

The rows of `control_flow_corpus.py` (rollouts, tree searches, samplers, solvers, ODE
solves, graph networks, a sharded LM; upstream code at pinned commits), each built in a
real IPython `InteractiveShell` with jaxmagic loaded, as a user runs the example, then:

- `%jaxpr` at default: whether the user's own classes and functions are groups of the
  picture (the titles found that name user code), the folded series (`×N`), the smallest
  text on screen (px, as `bench_upstream` computes it), nodes, and its seconds against
  `jax.make_jaxpr` of the same call (both after `jax.clear_caches()`, array arguments
  traced, the others closed over);
- whether `%jaxpr --values`, `%jaxpr --memory`, `%jaxpr --kernels` and `%jit_compare` ran
  without a failure note of ours, and whether `%jit_compare` said DIFFER.

Held-out projects (see the corpus docstring) are reported in their own table. Needs the
libraries of pyproject's `bench-cf` extra and the mirrors the corpus names.
CPU is scarce: draw a few rows at a time with `--only` (a substring of class, project or
title), and `--skip` magics to measure only the picture.

    python3 -m venv .venv-cf && .venv-cf/bin/pip install -e '.[bench-cf]' jax==0.10.2
    PYTHONPATH=$PWD:benchmarks .venv-cf/bin/python \\
        benchmarks/bench_control_flow.py --only mctx [--skip values,memory,jit]
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import control_flow_corpus as corpus  # noqa: E402
from bench_upstream import (  # noqa: E402
    Failed,
    draw,
    run_cells,
    shell,
    standing_in,
    time_limit,
)

LIMIT_S = 300
MAGICS = ("values", "memory", "kernels", "jit")    # each run on every row (`--skip`)
SEEN: dict = {}     # each %jaxpr overlay's last view (its picture is measured too)


def make_jaxpr_seconds(ns: dict, call: str) -> float:
    """`jax.make_jaxpr` of the row's call, cold: array leaves of its arguments traced,
    the others (configs, functions, Python numbers) closed over as %jaxpr holds them."""
    import jax
    import numpy as np

    expr = ast.parse(call, mode="eval").body
    func = eval(compile(ast.Expression(expr.func), "<call>", "eval"), ns)
    args = [eval(compile(ast.Expression(a), "<call>", "eval"), ns) for a in expr.args]
    kwargs = {k.arg: eval(compile(ast.Expression(k.value), "<call>", "eval"), ns)
              for k in expr.keywords}
    leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
    dynamic = [i for i, x in enumerate(leaves) if isinstance(x, (jax.Array, np.ndarray))]

    def run(*arrays):
        full = list(leaves)
        for i, a in zip(dynamic, arrays):
            full[i] = a
        a, k = jax.tree_util.tree_unflatten(tree, full)
        out = jax.tree_util.tree_leaves(func(*a, **k))   # an Equinox model returned: arrays
        return [x for x in out if isinstance(x, jax.Array)]   # tracers are jax.Arrays
    jax.clear_caches()
    t0 = time.perf_counter()
    jax.make_jaxpr(run)(*[leaves[i] for i in dynamic])
    return time.perf_counter() - t0


def magic(ip, line: str):
    """A magic's `-o` result and what it printed; an exception is a failure of ours."""
    from IPython.utils.capture import capture_output

    name, _, rest = line.partition(" ")
    with time_limit(LIMIT_S), capture_output() as printed:
        r = ip.run_line_magic(name, rest)
    return r, printed.stdout + printed.stderr


def failure(kind: str, ip, call: str) -> str:
    """'' when the magic ran without a failure note; else the note (or exception)."""
    try:
        if kind == "jit":
            r, out = magic(ip, f"jit_compare -o --budget 0.3 {call}")
            if r is None:
                return "no result: " + " ".join(out.split())[:140]
            if r.verdict:
                return f"verdict: {r.verdict}"[:160]
            if r.results_match is not False:
                return ""
            bad = [f"{d.path} (abs {d.max_abs:.2g}, rel {d.max_rel:.2g}"
                   + (f", {d.problem})" if d.problem else ")") for d in r.leaves if not d.ok]
            return (f"DIFFER: {len(bad)} leaves, e.g. {'; '.join(bad[:2])}"
                    + (f"; likely cause: {r.hints[0]}" if r.hints else ""))[:300]
        r, out = magic(ip, f"jaxpr --{kind} -o {call}")
        SEEN[kind] = r
        if r is None:
            return "no result: " + " ".join(out.split())[:140]
        notes = [n for n in r.notes if n.startswith(f"--{kind}")]
        if getattr(r, kind) is None or notes:
            return (notes or [f"no {kind} result"])[0][:160]
        return ""
    except Exception as e:  # noqa: BLE001 - a finding: the row shows it
        return f"{type(e).__name__}: {str(e)[:140]}"


def measure(ip, row, mirrors: Path, stand_ins: dict, skip: set[str]) -> dict:
    from jaxmagic.render.jaxpr import _text_px

    try:
        with standing_in(stand_ins):
            run_cells(ip, row.sources(mirrors))
        import jax
        jax.clear_caches()
        view, svg, seconds = draw(ip, row.call)
    except Failed as e:
        return {"error": str(e)}
    titles = sorted({c.title for c in view.graph.clusters.values()} |
                    {n.title for n in view.graph.nodes.values() if n.kind in ("call", "group")})
    names = {u.lstrip("_") for u in row.user}

    def words(title):
        """A title's names: less a transform's `jit: `, the class and method of
        `LatentODE._sample` both, a Linen scope's index (`Mlp_0`)."""
        head = title.split(": ", 1)[-1].split(" ")[0]
        return {re.sub(r"_\d+$", "", w).lstrip("_") for w in [head, *head.split(".")]}
    user = [t for t in titles if words(t) & names]   # `fn_wrapper` is no `fn`
    try:
        mj = make_jaxpr_seconds(ip.user_ns, row.call)
    except Exception as e:  # noqa: BLE001 - the row still has its picture
        mj = float("nan")
        print(f"   make_jaxpr failed: {type(e).__name__}: {str(e)[:100]}")
    r = {"px": _text_px(svg), "nodes": len(view.graph.nodes), "s": seconds, "mj": mj,
         "grouping": view.graph.grouping, "eqns": view.num_equations, "titles": titles,
         "user": user, "folds": [t for t in titles if "×" in t], "notes": view.notes}
    SEEN.clear()
    for kind in MAGICS:
        r[kind] = "skipped" if kind in skip else failure(kind, ip, row.call)
    r["pictures"] = {k: (_text_px(v.svg().encode()), len(v.graph.nodes))
                     for k, v in SEEN.items() if v is not None and v.svg()}
    return r


def table(ip, rows: list, mirrors: Path, stand_ins: dict, skip: set[str]) -> None:
    print(f"{'class':<7} {'project@commit':<22} {'program':<34} {'user':>4} {'px':>5} "
          f"{'nodes':>5} {'%jaxpr s':>8} {'mk_jxpr':>7}  values memory kernel jit")
    for row in rows:
        r = measure(ip, row, mirrors, stand_ins, skip)
        head = f"{row.cls:<7} {row.project:<22} {row.title[:34]:<34}"
        if "error" in r:
            print(f"{head} failed: {r['error']}")
            continue
        mark = {"": "ok", "skipped": "-"}   # else FAIL (DIFFER: %jit_compare's verdict)
        print(f"{head} {'yes' if r['user'] else 'NO':>4} {r['px']:>5.1f} {r['nodes']:>5} "
              f"{r['s']:>8.2f} {r['mj']:>7.2f}  "
              + " ".join(f"{mark.get(r[k], 'DIFFER' if r[k].startswith('DIFFER') else 'FAIL'):<6}"
                         for k in MAGICS))
        print(f"{'':<8}grouping {r['grouping']}, {r['eqns']} equations; user groups: "
              f"{', '.join(r['user'])[:120] or 'none'}; "
              f"folds: {', '.join(r['folds'])[:80] or 'none'}")
        print(f"{'':<8}groups: {', '.join(r['titles'])[:200]}")
        for n in r["notes"][:3]:
            print(f"{'':<8}note: {n[:200]}")
        if r["pictures"]:
            print(f"{'':<8}pictures: " + ", ".join(f"--{k} {px:.1f} px, {n} nodes"
                                                   for k, (px, n) in r["pictures"].items()))
        for k in MAGICS:
            if r[k] not in mark:
                print(f"{'':<8}{k}: {r[k]}")
        sys.stdout.flush()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirrors", default=os.environ.get("JAXMAGIC_MIRRORS") or "/work/.mirror")
    ap.add_argument("--only", default="",
                    help="rows whose class, project or title has one of these (a,b)")
    ap.add_argument("--skip", default="", help="magics not run: values,memory,kernels,jit")
    ap.add_argument("--limit", type=int, default=LIMIT_S, help="seconds a magic may take")
    args = ap.parse_args()
    globals()["LIMIT_S"] = args.limit
    mirrors = Path(args.mirrors)
    missing = {r.repo[0] for r in corpus.TUNED + corpus.HELD_OUT
               if not (mirrors / r.repo[0] / "repo").exists()}
    if missing:
        print("missing mirrors (search tool `fetch`):", ", ".join(sorted(missing)))
        return 1
    os.chdir(tempfile.mkdtemp(prefix="control-flow-"))   # what examples write (.results)

    def only(rows):
        keys = args.only.lower().split(",")
        return [r for r in rows if any(k in f"{r.cls} {r.project} {r.title}".lower()
                                       for k in keys)]
    # no `bench_upstream.IO_ONLY` stand-ins: an empty `torch` in sys.modules makes
    # jaxtyping's (equinox's, diffrax's) isinstance checks fail; rows name their own
    stand_ins: dict = {}
    ip = shell("")
    skip = set(filter(None, args.skip.split(",")))
    magic(ip, "jaxpr -o __import__('jax').numpy.sin(1.0)")   # imports: not the first row's
    print("tuned")
    table(ip, only(corpus.TUNED), mirrors, stand_ins, skip)
    print("\nheld out: whole projects chosen before measuring (reported, not tuned on)")
    table(ip, only(corpus.HELD_OUT), mirrors, stand_ins, skip)
    return 0


if __name__ == "__main__":
    sys.exit(main())
