"""core/compiled/analysis.py: the one analysis compile `--sharding` and `--memory` read from."""
import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxmagic.core.compiled.analysis import analyze
from jaxmagic.core.compiled.profile import TAG
from jaxmagic.core.target import BoundCall
from jaxmagic.core.trace import trace


def traced(f, *args):
    names = [f"a{i}" for i in range(len(args))]
    return trace(BoundCall(f, args, {}, names, {}, "f(...)"))


def mlp(x, w):
    for _ in range(3):
        x = jnp.tanh(x @ w)
    return x.sum()


def test_one_device_gradient_gives_buffers_live_ranges_and_tags():
    t = traced(jax.grad(mlp, argnums=1), jnp.ones((64, 128)), jnp.ones((128, 128)))
    a = analyze(t)
    assert a.platform == "cpu" and a.num_devices == 1
    assert a.module.startswith("jit_jaxmagic_analysis_") and a.module in a.compiled_text
    assert a.before_partitioning == ""          # nothing to partition on one device
    assert a.buffer_assignment.startswith("BufferAssignment:")
    assert "preallocated-temp" in a.buffer_assignment
    assert "HloLiveRange" not in a.buffer_assignment
    assert a.live_ranges.startswith("HloLiveRange") and "BufferLiveRange:" in a.live_ranges
    # the tagged copy's temp size is plain jit's
    plain = jax.jit(jax.grad(mlp, argnums=1)).lower(*t.call.args).compile()
    assert a.memory_analysis.temp_size_in_bytes == plain.memory_analysis().temp_size_in_bytes
    tags = set().union(*a.instructions.tags.values())
    n_eqns = len(str(jax.make_jaxpr(jax.grad(mlp, argnums=1))(*t.call.args)).splitlines())
    assert tags and max(tags) < n_eqns and TAG in a.compiled_text


def test_each_analysis_compiles_afresh():
    """A second compile of the same program writes a dump again (a unique module name)."""
    t = traced(mlp, jnp.ones((8, 16)), jnp.ones((16, 16)))
    first, second = analyze(t), analyze(t)
    assert first.module != second.module
    assert second.buffer_assignment and second.live_ranges


@pytest.mark.parametrize("shardy", [True, False], ids=["shardy", "gspmd"])
def test_sharded_program_gives_propagated_shardings_per_device(shardy):
    mesh = jax.make_mesh((8,), ("d",))
    x = jax.device_put(jnp.ones((64, 128)), NamedSharding(mesh, P("d")))
    before = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", shardy)
    try:
        a = analyze(traced(mlp, x, jnp.ones((128, 128))))
    finally:
        jax.config.update("jax_use_shardy_partitioner", before)
    assert a.num_devices == 8 and a.platform == "cpu"
    assert a.before_partitioning.startswith(f"HloModule {a.module}")
    param = next(line for line in a.before_partitioning.splitlines()
                 if "%args_0_" in line and "parameter(0)" in line)
    assert "sharding=" in param      # its form differs by release and partitioner
    # buffers are per device: x's 64 rows are 8 per device
    assert "f32[8,128]" in a.buffer_assignment
