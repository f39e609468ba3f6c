"""Issue 17: the default picture of a real model shows the model, whatever library made its
layers, and its size follows the model's structure, not its depth."""
import pytest

SETUP = """
import flax.linen as nn

class Net(nn.Module):
    depth: int = 12

    @nn.compact
    def __call__(self, x):
        for i in range(self.depth):
            x = nn.relu(nn.BatchNorm(use_running_average=True)(nn.Dense(8)(x)))
        return x
"""


def _series(view):
    return [c.title for c in view.graph.clusters.values() if "×" in c.title]


@pytest.fixture
def linen(ip):
    ip.run_cell(SETUP)
    return ip


def test_a_linen_compact_loop_folds_into_one_series(linen):
    """Dense, BatchNorm, relu twelve times: no call repeats back to back, the triple does."""
    sizes = {}
    for depth in (12, 40):
        linen.run_cell(f"v = Net(depth={depth}).init(jax.random.key(0), jnp.ones((2, 8)))")
        view = linen.run_line_magic("jaxpr", f"-o Net(depth={depth}).apply(v, jnp.ones((2, 8)))")
        assert _series(view) == [f"Dense → BatchNorm → relu ×{depth}"], _series(view)
        assert view.graph.grouping == "equation", view.notes     # no fall back to passes
        sizes[depth] = len(view.graph.nodes)
    assert sizes[12] == sizes[40]          # the picture does not grow with the depth


def test_captured_arrays_are_one_record_named_as_captured(linen):
    """ResNet's `jax.vmap(lambda xb: model.apply(variables, xb, ...))`: the closure's
    arrays were one `const` oval each, in one row."""
    linen.run_cell("variables = Net(depth=3).init(jax.random.key(0), jnp.ones((2, 8)))")
    view = linen.run_line_magic(
        "jaxpr", "-o jax.vmap(lambda xb: Net(depth=3).apply(variables, xb))(jnp.ones((4, 2, 8)))")
    consts = [n for n in view.graph.nodes.values() if n.kind == "const"]
    assert [n.title for n in consts] == ["variables · 18 leaves"], [n.title for n in consts]
    assert consts[0].detail[0].startswith("params.Dense_0.kernel f32[8,8]")
    assert view.graph.grouping == "equation"
