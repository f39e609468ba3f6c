"""%jaxpr --memory: is every buffer's kind as true as the totals?

Checks the kinds `--memory` gives (argument, output, saved activation, recomputed,
gradient, temporary, constant, unattributed) against a reference of its own that reads
nothing of jaxmagic's joins: XLA's compiled HLO, with the cotangent passed in as the
program's first parameter (`lambda ct, *a: jax.vjp(f, *a)[1](ct)`), so that "does this
buffer depend on the cotangent?" is "does parameter 0 reach its instruction?".

The programs are modelled on JAX's remat and gradient-checkpointing pages (two nested
checkpoints, the three-layer `g`, checkpoint policies, a checkpointed scan, a custom_vjp),
written out here rather than read from a mirror of the docs; each runs with `jax_remat3`
off and, where the release has it, on.

Per program and in all: buffers at the entry level the reference can judge; among them
(targets all 0) cotangent-dependent ones called recomputed or saved activation, gradients
the cotangent does not reach (zeros built from constants aside), computed buffers named
after an input; the peak against memory_analysis()'s temp + arguments + outputs (target
≤ 1); the buffers called recomputed, and unattributed (no equation found), in all.

    PYTHONPATH=$PWD python benchmarks/bench_memory_truth.py
"""
import os
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.ad_checkpoint import checkpoint_name  # noqa: E402

_VIEWS = ("parameter", "bitcast", "copy", "reshape", "transpose", "tuple",
          "get-tuple-element", "while")


def g(W, x):
    return jnp.sin(jnp.dot(W, x))


def three(W1, W2, W3, x):
    return g(W3, g(W2, g(W1, x)))


def nested(W1, W2, X):
    return jnp.sum(jax.checkpoint(g)(W2, jax.checkpoint(g)(W1, X)))


def policy(p):
    def f(W1, W2, W3, x):
        c = jax.checkpoint(lambda W, x: checkpoint_name(g(W, x), "h"), policy=p)
        return c(W3, c(W2, c(W1, x)))
    return f


def mlp(ws, x):
    for w in ws:
        x = jax.checkpoint(lambda w, x: x + jnp.tanh(x @ w))(w, x)
    return x


def scanned(ws, x):
    def body(x, w):
        return jnp.tanh(x @ w), None
    return jax.lax.scan(jax.checkpoint(body), x, ws)[0]


@jax.custom_vjp
def clip_sin(x):
    return jnp.sin(x)


clip_sin.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)),
                lambda r, ct: (jnp.clip(ct * r, -1, 1),))


def custom(w, x):
    return clip_sin(jnp.tanh(x @ w)) @ w


def programs():
    W, X = jnp.ones((64, 64)) * 0.01, jnp.ones((64, 32))
    Ws = (jnp.ones((5, 4)), jnp.ones((6, 5)), jnp.ones((7, 6)), jnp.ones(4))
    cp = jax.checkpoint_policies
    yield "two nested checkpoints", nested, (W, W, X)
    yield "three g, no checkpoint", three, Ws
    yield "three g, checkpoint_dots", policy(cp.checkpoint_dots), Ws
    yield "three g, save_only_these_names('h')", policy(cp.save_only_these_names("h")), Ws
    yield "three g, nothing_saveable", policy(cp.nothing_saveable), Ws
    yield "8-layer MLP, checkpoint per layer", mlp, ([W * (i + 1) for i in range(8)],
                                                     jnp.ones((32, 64)))
    yield "checkpointed scan", scanned, (jnp.ones((4, 64, 64)) * 0.01, jnp.ones((32, 64)))
    yield "custom_vjp", custom, (W, jnp.ones((32, 64)))


def judge(name, f, args):
    from jaxmagic.core.compiled import memory as M
    from jaxmagic.core.compiled.analysis import analyze
    from jaxmagic.core.target import BoundCall
    from jaxmagic.core.trace import trace
    from jaxmagic.graph.build import build

    out = jax.eval_shape(f, *args)

    def call(ct, *a):
        return jax.vjp(f, *a)[1](ct)
    ct = jnp.ones(out.shape, out.dtype)
    t = trace(BoundCall(call, (ct, *args), {}, [f"a{i}" for i in range(len(args) + 1)],
                        {}, "f(...)"))
    start = time.perf_counter()
    a = analyze(t)
    p = M.memory_profile(t, build(t), a)
    seconds = time.perf_counter() - start
    program = a.program
    entry = next(i.computation for i in program.values() if i.opcode == "parameter"
                 and i.name.startswith("args_0"))
    reached = {i.name for i in program.values() if i.computation == entry and
               i.opcode == "parameter" and i.operand_text.strip() == "0"}
    for ins in program.values():            # HLO text lists operands before their users
        if ins.computation == entry and reached.intersection(ins.operands):
            reached.add(ins.name)
    judged = wrong_kind = false_gradient = named = 0
    for b in p.buffers:
        ins = program.get(b.instruction)
        if ins is None:
            continue
        if b.input and ins.opcode not in _VIEWS:
            named += 1
        if ins.computation != entry or ins.opcode in _VIEWS or \
                b.kind in (M.ARGUMENT, M.OUTPUT, M.CONSTANT):
            continue
        judged += 1
        depends = b.instruction in reached
        if depends and b.kind in (M.RECOMPUTED, M.SAVED):
            wrong_kind += 1
        from_constants = all(program[o].opcode == "constant" for o in ins.operands
                             if o in program)
        if b.kind == M.GRADIENT and not depends and not from_constants:
            false_gradient += 1
    recomputed = sum(1 for b in p.buffers if b.kind == M.RECOMPUTED)
    unattributed = sum(1 for b in p.buffers if b.kind == M.UNATTRIBUTED)
    ratio = p.peak_bytes / p.xla_total if p.xla_total else float("nan")
    print(f"  {name:42s} {len(p.buffers):4d} {judged:6d} {wrong_kind:9d} {false_gradient:8d} "
          f"{named:6d} {recomputed:10d} {unattributed:6d}  {ratio:5.2f}  {seconds:5.2f} s")
    return wrong_kind + false_gradient + named + (ratio > 1), judged, recomputed


def main() -> int:
    print(f"jax {jax.__version__}, {jax.devices()[0].platform}")
    modes = [False] + ([True] if "jax_remat3" in jax.config.values else [])
    bad = judged = 0
    for remat3 in modes:
        before = jax.config.values.get("jax_remat3")
        if remat3:
            jax.config.update("jax_remat3", True)
        try:
            print(f"jax_remat3 {'on' if remat3 else 'off'}")
            print(f"  {'program':42s} bufs judged ct→saved/ ct-free  named  recomputed "
                  "unattr.  peak/XLA  time")
            print(f"  {'':42s} {'':4s} {'':6s} recomputed gradient  input")
            for name, f, args in programs():
                b, j, _ = judge(name, f, args)
                bad += b
                judged += j
        finally:
            if remat3:
                jax.config.update("jax_remat3", before)
    print(f"in all: {judged} buffers judged against XLA's data flow, {bad} wrong "
          "(target 0)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
