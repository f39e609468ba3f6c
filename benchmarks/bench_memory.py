"""%jaxpr --memory: does the peak it reads agree with XLA, does it see what jax.checkpoint
changes, and what does it cost?

1. A 16-layer MLP gradient (f32[512,512] activations) with and without jax.checkpoint per
   layer: the peak, the buffers live at it, the saved activations per layer, and the peak
   against compiled.memory_analysis()'s temp + arguments + outputs (target: within 25%).
2. A Flax NNX and an Equinox train step: the peak and its three largest rows.
3. The time `--memory` adds over a plain `%jaxpr` (trace and graph) of the same call, and
   of the 16-layer transformer gradient.

    python benchmarks/bench_memory.py
"""
import os
import statistics
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from transformer import make, model  # noqa: E402

LAYERS, WIDTH = 16, 512
MIB = 2 ** 20


def layer(w, x):
    h = x @ w
    return x + jnp.tanh(h) * jax.nn.sigmoid(h)


def mlp(remat):
    step = jax.checkpoint(layer) if remat else layer

    def loss(params, x):
        for w in params:
            x = step(w, x)
        return (x ** 2).mean()
    return loss


def median_time(f, n=3) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def report(name, m):
    p = m.profile
    ratio = p.peak_bytes / p.xla_total if p.xla_total else float("nan")
    print(f"{name}: peak {p.peak_bytes / MIB:.1f} MiB, {len(p.live)} buffers live; "
          f"memory_analysis temp + arguments + outputs {p.xla_total / MIB:.1f} MiB "
          f"(peak/XLA {ratio:.2f}, target 0.75-1.25)")
    for r in m.rows()[:3]:
        print(f"    {r.bytes / MIB:7.2f} MiB  {r.kind:16s} {r.shape} ×{r.count}  {r.what}  "
              f"{r.group or '—'}")


def library_steps():
    import equinox as eqx
    import optax
    from flax import nnx

    import jaxmagic

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.l1 = nnx.Linear(256, 1024, rngs=rngs)
            self.l2 = nnx.Linear(1024, 10, rngs=rngs)

        def __call__(self, x):
            return self.l2(nnx.relu(self.l1(x)))

    model_ = MLP(nnx.Rngs(0))
    try:
        opt = nnx.Optimizer(model_, optax.adam(1e-3), wrt=nnx.Param)
    except TypeError:
        opt = nnx.Optimizer(model_, optax.adam(1e-3))

    def nnx_step(model, optimizer, x, y):
        def loss_fn(model):
            return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()
        loss, grads = nnx.value_and_grad(loss_fn)(model)
        try:
            optimizer.update(model, grads)
        except TypeError:
            optimizer.update(grads)
        return loss

    x, y = jnp.ones((2048, 256)), jnp.zeros((2048,), jnp.int32)
    report("Flax NNX train step", jaxmagic.memory(nnx_step, model_, opt, x, y).memory)

    emodel = eqx.nn.MLP(256, 10, 1024, 1, key=jax.random.key(0))
    adam = optax.adam(1e-3)
    state = adam.init(eqx.filter(emodel, eqx.is_array))

    def eqx_step(model, state, x, y):
        def loss_fn(model):
            return optax.softmax_cross_entropy_with_integer_labels(jax.vmap(model)(x),
                                                                   y).mean()
        loss, grads = eqx.filter_value_and_grad(loss_fn)(model)
        updates, state = adam.update(grads, state, eqx.filter(model, eqx.is_array))
        return eqx.apply_updates(model, updates), state, loss

    report("Equinox train step", jaxmagic.memory(eqx_step, emodel, state, x, y).memory)


def main():
    import jaxmagic

    print(f"jax {jax.__version__}, {jax.devices()[0].platform}")
    key = jax.random.PRNGKey(0)
    params = [jax.random.normal(jax.random.fold_in(key, i), (WIDTH, WIDTH)) * 0.05
              for i in range(LAYERS)]
    x = jnp.ones((WIDTH, WIDTH))
    views = {}
    for remat in (False, True):
        m = jaxmagic.memory(jax.grad(mlp(remat)), params, x).memory
        views[remat] = m
        report(f"16-layer MLP gradient, {'jax.checkpoint per layer' if remat else 'plain'}",
               m)
    print("  " + views[False].diff(views[True]).replace("\n", "\n  "))

    library_steps()

    for name, f, args in (("16-layer MLP gradient", jax.grad(mlp(False)), (params, x)),
                          ("16-layer transformer gradient", jax.grad(model), make(16))):
        plain = median_time(lambda: jaxmagic.trace(f, *args).graph)
        memory = median_time(lambda: jaxmagic.memory(f, *args).graph)
        print(f"{name}: %jaxpr {plain:.2f} s, %jaxpr --memory {memory:.2f} s "
              f"(adds {memory - plain:.2f} s, ×{memory / plain:.1f})")


if __name__ == "__main__":
    main()
