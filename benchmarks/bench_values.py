"""`%jaxpr --values` on the 16-layer transformer gradient (benchmarks/transformer.py):
the two designs of issue 29, measured in one run.

  (a) op by op: the jaxpr evaluated equation by equation, each summary computed on the
      host from the value (no compile), loops compiled once with their body's summaries
      inside (what `--values` runs: `summarise`);
  (b) one compile: the same walk inside one `jax.jit`, every summary one variadic
      reduction in the program, returned as one small array (`summarise(..., jit=True)`).

Beside them: a plain `jax.jit` compile + run of the same gradient, the program's peak
memory (XLA's memory_analysis) and the one with the summaries, and a budgeted run.
Targets: (b) ≤ 3 s on this CPU and ≤ 2× the plain compile + run; extra memory ≤ the
program's own peak.

Then loops (`loops`): training steps in a `lax.fori_loop`, where `--values` compiles the
loop once with every summary of its body inside, against a plain `jax.jit` compile + run of
the same program, first call included (target of issue 44: ≤ 2×).
"""
import os
import sys
import time

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=8").strip()
sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import jax  # noqa: E402
from transformer import make, model  # noqa: E402

from jaxmagic.core import trace as T  # noqa: E402
from jaxmagic.core import values as V  # noqa: E402
from jaxmagic.core.compiled.profile import flat_args  # noqa: E402
from jaxmagic.core.target import BoundCall  # noqa: E402

MIB = 2 ** 20


def timed(f):
    start = time.perf_counter()
    out = f()
    jax.block_until_ready(out)
    return out, time.perf_counter() - start


def peak(lowered_fn, *args) -> float:
    m = lowered_fn.lower(*args).compile().memory_analysis()
    return (m.temp_size_in_bytes + m.argument_size_in_bytes + m.output_size_in_bytes) / MIB


def main(layers: int = 16) -> None:
    params, x = make(layers)
    grad = jax.grad(model)
    traced = T.trace(BoundCall(grad, (params, x), {}, ["params", "x"], {}, "grad(params, x)"))
    args = flat_args(traced)
    print(f"{layers}-layer transformer gradient: {V.jaxpr_size(traced.jaxpr)} equations, "
          f"JAX {jax.__version__}, {jax.devices()[0].platform}")

    _, plain = timed(lambda: jax.jit(grad)(params, x))
    print(f"  plain jax.jit compile + run:     {plain:6.2f} s")
    flow, a = timed(lambda: V.summarise(traced, args))
    print(f"  (a) op by op (--values), cold:   {a:6.2f} s  ({a / plain:.1f}× plain), "
          f"{len(flow.summaries)} values")
    _, again = timed(lambda: V.summarise(traced, args))
    print(f"  (a) again, warm:                 {again:6.2f} s")
    b = design_b(2)
    small, s = timed(lambda: V.summarise(traced, args, budget=500))
    print(f"  (a) budget 500 values:           {s:6.2f} s  ({small.budget_left_out} values "
          "with NaN/Inf counts only)")
    own = peak(jax.jit(grad), params, x)
    held = op_by_op_peak(traced, args)
    print(f"  memory: the program's peak {own:.1f} MiB; (a) op by op holds at most "
          f"{held:.1f} MiB of values at once")
    print(f"  kept: (a), (b) is {b:.0f}× slower; targets ≤ 3 s: {'met' if a <= 3 else 'MISSED'}"
          f", ≤ 2× plain: {'met' if a <= 2 * plain else 'MISSED'}, extra memory ≤ peak: "
          f"{'met' if held - own <= own else 'MISSED'}")


def loops() -> None:
    """`--values` of training loops, first call, against jax.jit's compile + run."""
    import jax.numpy as jnp

    def mlp(p, x):
        for w in p:
            x = jnp.tanh(x @ w)
        return jnp.mean(x ** 2)

    def sgd(loss):
        def train(p, x):
            def step(i, p):
                return jax.tree.map(lambda w, g: w - 0.1 * g, p, jax.grad(loss)(p, x))
            return jax.lax.fori_loop(0, 10, step, p)
        return train

    cases = {"8-layer MLP, 10 SGD steps in fori_loop": (
                 sgd(mlp), ([jnp.ones((32, 32)) * 0.1 for _ in range(8)],
                            jnp.ones((16, 32)))),
             "4-layer transformer, 10 SGD steps in fori_loop": (sgd(model), make(4))}
    for name, (f, args) in cases.items():
        traced = T.trace(BoundCall(f, args, {}, ["params", "x"], {}, "train(params, x)"))
        flat = flat_args(traced)
        _, plain = timed(lambda: jax.jit(f)(*args))
        flow, took = timed(lambda: V.summarise(traced, flat))
        print(f"  {name} ({V.jaxpr_size(traced.jaxpr)} equations, "
              f"{len(flow.summaries)} values): plain compile + run {plain:5.2f} s, --values "
              f"{took:5.2f} s ({took / plain:.1f}×; target ≤ 2×: "
              f"{'met' if took <= 2 * plain else 'MISSED'})")


def design_b(layers: int) -> float:
    """(b) against (a) on a smaller gradient: (b)'s compile grows with every summary's
    reduction kernel (and XLA constant-folds some), past minutes at 16 layers."""
    params, x = make(layers)
    traced = T.trace(BoundCall(jax.grad(model), (params, x), {}, ["params", "x"], {}, "g"))
    args = flat_args(traced)
    _, b = timed(lambda: V.summarise(traced, args, jit=True))
    _, a = timed(lambda: V.summarise(traced, args))
    print(f"  at {layers} layers: (b) one compile {b:6.2f} s, (a) {a:5.2f} s")
    return b / a


def op_by_op_peak(traced, args) -> float:
    """The most bytes of device arrays alive at once during an op-by-op run (read by
    `jax.live_arrays` after each equation), less the arguments."""
    import numpy as np

    base = sum(a.nbytes for a in jax.live_arrays())
    most = [0]
    bind = V._compat.bind_equation

    def counting(eqn, values):
        out = bind(eqn, values)
        most[0] = max(most[0], sum(a.nbytes for a in jax.live_arrays()) - base)
        return out

    V._compat.bind_equation = counting
    try:
        V.summarise(traced, args)
    finally:
        V._compat.bind_equation = bind
    return float(np.float64(most[0]) / MIB)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 16)
    print("loops:")
    loops()
