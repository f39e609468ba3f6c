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


def test_many_state_arguments_stand_in_rows_not_one_wide_row(ip):
    """A train step's model, optimizer, RNG streams, metrics and batch: five records that,
    side by side, decided the picture's width (gemma's step fell back to passes)."""
    from jaxmagic.render.dot import ENDS_ROW_PT, end_rows, node_width, to_dot

    ip.run_cell("def step(a, b, c, d, e):\n"
                "    return jax.tree.map(lambda x: x * 2, (a, b, c, d, e))\n"
                "state = {f'layer_{i}': {'kernel_weights': jnp.ones((4, 4)), "
                "'bias_term': jnp.ones(4)} for i in range(8)}\n"
                "model, optimizer, rngs, metrics, batch = (dict(state) for _ in range(5))")
    view = ip.run_line_magic("jaxpr", "-o step(model, optimizer, rngs, metrics, batch)")
    records = [n for n in view.graph.nodes.values() if n.kind == "input"]
    assert len(records) == 5
    rows = end_rows(records)
    assert len(rows) >= 2 and all(
        sum(node_width(n) + 18 for n in row) <= ENDS_ROW_PT or len(row) == 1 for row in rows)
    dot = to_dot(view.graph)
    assert dot.count("rank=source") == 1 and "rank=same" in dot
