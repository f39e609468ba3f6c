"""%%shardviz and jaxmagic.sharding_view on 8 virtual CPU devices: real arrays placed by
pmap, vmap-in-pmap, shard_map and NamedSharding; every rank; pytrees; --plan; metadata only
(transfer guard, pending and deleted arrays); the message for values holding no array."""
import re
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import run
from IPython.core.error import UsageError
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import jaxmagic
from jaxmagic import _compat
from jaxmagic.core.sharding import PlanError, layout_from
from jaxmagic.render.html import DEVICE_COLOURS, esc
from jaxmagic.render.sharding import ShardingView, grid_dims

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# Rows of the mesh are devices 0-3 and 4-7: an explicit Mesh keeps the order fixed.
MESH = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))


def put(shape, spec, mesh=MESH):
    return jax.device_put(jnp.arange(np.prod(shape), dtype=jnp.float32).reshape(shape),
                          NamedSharding(mesh, spec))


def tiles(lay):
    """{index: devices} of a layout, indices as ((start, stop), ...)."""
    return {t.index: t.devices for t in lay.tiles}


def html_of(view):
    bundle = view._repr_mimebundle_()
    assert set(bundle) >= {"text/plain", "text/html"}
    h = bundle["text/html"]
    for bad in ("<svg", "<style", "<script", "var(--"):
        assert bad not in h.lower()
    return h


# ---- NamedSharding on a 2 x 4 mesh -------------------------------------------------------

def test_rows_split_over_x_are_replicated_over_y():
    lay = jaxmagic.sharding_view(put((8, 4), P("x", None))).layouts[0]
    assert tiles(lay) == {((0, 4), (0, 4)): (0, 1, 2, 3), ((4, 8), (0, 4)): (4, 5, 6, 7)}
    assert lay.spec == "P('x', None)"
    assert [(a.name, a.size) for a in lay.mesh] == [("x", 2), ("y", 4)]
    assert lay.shard_shape == (4, 4)
    assert lay.replicas == (4, 4)
    assert lay.bytes_per_device == 4 * 4 * 4 and lay.total_bytes == 8 * 4 * 4
    assert lay.dim_axes == (("x",), ())


def test_columns_split_over_y():
    lay = jaxmagic.sharding_view(put((8, 8), P(None, "y"))).layouts[0]
    assert tiles(lay) == {((0, 8), (2 * j, 2 * j + 2)): (j, j + 4) for j in range(4)}
    assert lay.replicas == (2, 2) and lay.shard_shape == (8, 2)


def test_blocks_split_over_both_axes():
    view = jaxmagic.sharding_view(put((8, 8), P("x", "y")))
    lay = view.layouts[0]
    assert tiles(lay) == {((4 * i, 4 * i + 4), (2 * j, 2 * j + 2)): (4 * i + j,)
                          for i in range(2) for j in range(4)}
    assert lay.replicas == (1, 1) and lay.bytes_per_device == 4 * 2 * 4
    text = view.text()
    assert "P('x', 'y')" in text and "x=2" in text and "y=4" in text
    assert "shard shape  (4, 2)" in text and "32 B of 256 B" in text
    grid_rows = [ln for ln in text.splitlines() if ln.strip().startswith("│")]
    assert [re.findall(r"\d+", r) for r in grid_rows] == [["0", "1", "2", "3"],
                                                          ["4", "5", "6", "7"]]


def test_replicated_tile_lists_every_device():
    view = jaxmagic.sharding_view(put((4, 4), P()))
    lay = view.layouts[0]
    assert tiles(lay) == {((0, 4), (0, 4)): tuple(range(8))}
    assert lay.fully_replicated and lay.replicas == (8, 8)
    assert "0,1,2,3,4,5,6,7" in view.text()
    h = html_of(view)
    tile = re.search(r"<td title=\"\[:, :\] on devices ([^\"]*)\"(.*?)</td>", h, re.S)
    assert tile and tile.group(1) == "0, 1, 2, 3, 4, 5, 6, 7"
    chips = re.findall(r"background:(#[0-9a-f]{6});[^>]*>(\d+)</span>", tile.group(2))
    assert [int(d) for _, d in chips] == list(range(8))
    assert [c for c, _ in chips] == list(DEVICE_COLOURS[:8])


def test_a_replicated_array_says_what_its_chips_and_rows_share_once():
    """The chips of a replicated tile carry their own colour; their ink, size, weight and
    font are said once around them, the header rows' size on their table: a plan of 34
    replicated arrays (Flax's NNX train step and its Adam state) was 222 KB, a third of it
    eight chips' and eight rows' same styles."""
    x = put((4, 4), P()).block_until_ready()     # no "still being computed" note
    h = html_of(jaxmagic.sharding_view(x))
    chips = re.findall(r'<span style="([^"]*)">\d</span>', h)
    assert len(chips) == 8 and all("font-family" not in c and "color:" not in c
                                   for c in chips)
    around = re.search(r'<span style="([^"]*)"><span style="display:inline-block', h)[1]
    assert "font-weight:700" in around and "font-family" in around and "color:#" in around
    assert h.count("font-size:12px") <= 3
    assert len(h) < 6000


def test_one_colour_per_device_across_the_whole_output():
    view = jaxmagic.sharding_view({"a": put((8, 8), P("x", "y")), "b": put((8,), P(("x", "y"))),
                                   "c": put((8, 8), P(None, "y"))})
    h = html_of(view)
    seen = {}
    for colour, dev in re.findall(r"background:(#[0-9a-f]{6});[^>]*>(?:<div[^>]*>)?(\d+)<", h):
        seen.setdefault(int(dev), set()).add(colour)
    assert set(seen) == set(range(8))
    assert all(len(c) == 1 for c in seen.values()), seen
    assert len({next(iter(c)) for c in seen.values()}) == 8


def test_explicit_and_auto_axis_types_in_the_header():
    auto = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"),
                axis_types=(AxisType.Auto, AxisType.Auto))
    expl = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"),
                axis_types=(AxisType.Explicit, AxisType.Explicit))
    a = jaxmagic.sharding_view(put((8, 4), P("x", None), auto))
    e = jaxmagic.sharding_view(put((8, 4), P("x", None), expl))
    assert [m.type for m in a.layouts[0].mesh] == ["Auto", "Auto"]
    assert [m.type for m in e.layouts[0].mesh] == ["Explicit", "Explicit"]
    assert "x=2 (Explicit) × y=4 (Explicit)" in e.text()
    assert e.layouts[0].typed == "float32[8@x,4]"        # the sharding is in the type
    assert a.layouts[0].typed is None


def test_make_mesh_default_axis_types_are_shown():
    mesh = jax.make_mesh((2, 4), ("x", "y"))
    lay = jaxmagic.sharding_view(put((8, 4), P("x", "y"), mesh)).layouts[0]
    want = [getattr(t, "name", str(t)) for t in mesh.axis_types]
    assert [m.type for m in lay.mesh] == want


# ---- pmap ----------------------------------------------------------------------------

def test_pmap_output_shows_the_pmap_axis(ip):
    res, cap = run(ip, "%%shardviz\nxs = jnp.arange(8 * 3.0).reshape(8, 3)\n"
                       "jax.pmap(lambda x: x * 2)(xs)")
    assert res.success
    (out,) = [o for o in cap.outputs if "text/html" in o.data]
    h, text = out.data["text/html"], out.data["text/plain"]
    assert _compat.PMAP_INTERNAL_AXIS not in h + text
    assert "pmap axis" in text and "pmap axis" in h
    view = ip.run_cell_magic("shardviz", "-o", "jax.pmap(lambda x: x * 2)(xs)")
    lay = view.layouts[0]
    assert lay.mesh[0].name == "pmap axis" and lay.mesh[0].size == 8
    assert tiles(lay) == {((i, i + 1), (0, 3)): (i,) for i in range(8)}
    assert lay.dim_axes[0] == ("pmap axis",)
    assert "Array(" not in cap.stdout          # the value is drawn, not printed


def test_pmap_over_vmap_is_a_faceted_3d_view(ip):
    view = ip.run_cell_magic("shardviz", "-o",
                             "batch = jnp.ones((8, 5, 3))\n"
                             "jax.pmap(jax.vmap(lambda v: jnp.tanh(v) * 2))(batch)")
    lay = view.layouts[0]
    assert lay.shape == (8, 5, 3) and len(lay.tiles) == 8
    assert lay.mesh[0].name == "pmap axis"
    assert all(t.shape == (1, 5, 3) for t in lay.tiles)
    assert grid_dims(lay) == (0, 1)             # the mapped dim and the largest other
    text = view.text()
    assert "3-D: dims 0 × 1 drawn as the grid; dim 2 whole" in text
    sums = ip.run_cell_magic("shardviz", "-o", "jax.pmap(jax.vmap(jnp.sum))(batch)").layouts[0]
    assert sums.shape == (8, 5) and tiles(sums) == {((i, i + 1), (0, 5)): (i,) for i in range(8)}


# ---- shard_map -------------------------------------------------------------------------

def test_shard_map_outputs_on_a_2x4_mesh(ip):
    ip.user_ns["MESH"] = MESH
    view = ip.run_cell_magic("shardviz", "-o", """
from functools import partial
from jax.sharding import NamedSharding, PartitionSpec as P
@jax.jit
@partial(jax.shard_map, mesh=MESH, in_specs=P("x", "y"), out_specs=(P("x", "y"), P("x", None)))
def step(block):
    return block * 2, jax.lax.psum(block, "y")
data = jax.device_put(jnp.arange(64.0).reshape(8, 8), NamedSharding(MESH, P("x", "y")))
step(data)
""")
    doubled, summed = view.layouts
    assert (doubled.path, summed.path) == ("[0]", "[1]")
    assert doubled.spec == "P('x', 'y')" and len(doubled.tiles) == 8
    assert doubled.shard_shape == (4, 2)
    assert summed.spec in ("P('x', None)", "P('x')") and summed.shape == (8, 2)
    assert summed.dim_axes == (("x",), ())
    assert tiles(summed) == {((0, 4), (0, 2)): (0, 1, 2, 3), ((4, 8), (0, 2)): (4, 5, 6, 7)}
    assert summed.replicas == (4, 4)


# ---- every rank ------------------------------------------------------------------------

def test_3d_with_two_sharded_dims_picks_them_as_the_grid():
    x = put((4, 8, 6), P(None, "y", "x"))
    view = jaxmagic.sharding_view(x)
    lay = view.layouts[0]
    assert grid_dims(lay) == (1, 2)
    assert len(lay.tiles) == 8 and lay.shard_shape == (4, 2, 3)
    assert "dim 0 whole in every block" in view.text()


def test_3d_with_three_sharded_dims_has_one_facet_per_block():
    cube = Mesh(np.array(jax.devices()).reshape(2, 2, 2), ("a", "b", "c"))
    lay_view = jaxmagic.sharding_view(put((4, 6, 8), P("a", "b", "c"), cube))
    lay = lay_view.layouts[0]
    assert len(lay.tiles) == 8
    h = html_of(lay_view)
    text = lay_view.text()
    gd = grid_dims(lay)
    facet_dim = ({0, 1, 2} - set(gd)).pop()
    assert f"dim {facet_dim} [0:" in text and f"dim {facet_dim} [" in h
    assert text.count(f"dim {facet_dim} [") == 2       # two blocks of the faceted dim


def test_4d_array_is_drawn():
    x = put((2, 4, 2, 3), P("x", "y"))
    view = jaxmagic.sharding_view(x)
    lay = view.layouts[0]
    assert grid_dims(lay) == (0, 1) and len(lay.tiles) == 8
    assert "4-D" in view.text() and "4-D" in html_of(view)


def test_scalars_single_device_and_replicated():
    view = jaxmagic.sharding_view({"one": jnp.float32(3.0),
                                   "everywhere": jax.device_put(jnp.float32(2.0),
                                                                NamedSharding(MESH, P()))})
    everywhere, one = view.layouts               # sorted pytree keys
    assert one.shape == () and tiles(one) == {(): (jax.devices()[0].id,)}
    assert one.kind == "SingleDeviceSharding" and one.bytes_per_device == 4
    assert tiles(everywhere) == {(): tuple(range(8))}
    text = view.text()
    assert "float32[]" in text and "0,1,2,3,4,5,6,7" in text
    html_of(view)


def test_uneven_shards_are_drawn_with_their_sizes():
    # JAX refuses uneven NamedShardings for jax.Arrays (0.7 and 0.12); a user-defined
    # Sharding placing ceil(n/k)-sized blocks, as XLA pads tiles, exercises the layout.
    class Uneven(jax.sharding.Sharding):
        def __init__(self, devices):
            self._devs = tuple(devices)

        device_set = property(lambda self: set(self._devs))
        is_fully_addressable = property(lambda self: True)
        is_fully_replicated = property(lambda self: False)
        memory_kind = property(lambda self: "device")
        num_devices = property(lambda self: len(self._devs))
        _device_assignment = property(lambda self: self._devs)

        def with_memory_kind(self, kind):
            return self

        def check_compatible_aval(self, aval_shape):
            pass

        def devices_indices_map(self, shape):
            n, k = shape[0], len(self._devs)
            step = -(-n // k)
            return {d: (slice(min(i * step, n), min((i + 1) * step, n)),)
                    for i, d in enumerate(self._devs)}

    sds = jax.ShapeDtypeStruct((10,), jnp.float32, sharding=Uneven(jax.devices()[:4]))
    view = jaxmagic.sharding_view(sds)
    lay = view.layouts[0]
    assert lay.uneven and lay.shard_shapes == [(3,), (1,)]
    assert lay.bytes_per_device == 12
    assert "uneven: (3,), (1,)" in view.text()
    widths = [int(w) for w in re.findall(r"<td title=[^>]*width:(\d+)px", html_of(view))]
    assert len(widths) == 4 and widths[0] > widths[3]    # drawn to scale


def test_pytree_of_arrays_one_panel_per_leaf_by_path():
    tree = {"params": [put((8, 4), P("x", None)), {"b": put((8,), P("y"))}], "step": 3}
    view = jaxmagic.sharding_view(tree)
    assert [lay.path for lay in view.layouts] == ["['params'][0]", "['params'][1]['b']"]
    text = view.text()
    assert "not JAX arrays: ['step']: a Python int (3)" in text
    h = html_of(view)
    assert "[&#x27;params&#x27;][1][&#x27;b&#x27;]" in h
    assert view["['params'][1]['b']"].shape == (8,)


# ---- the magic ---------------------------------------------------------------------------

def test_magic_draws_the_final_expression_without_printing_it(ip):
    res, cap = run(ip, "%%shardviz\nprint('ran')\nsv_x = jax.device_put(jnp.ones((8, 4)), "
                       "NamedSharding(jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 4), "
                       "('x', 'y')), jax.sharding.PartitionSpec('x', 'y')))\nsv_x")
    assert res.success, res.error_in_exec
    assert "ran" in cap.stdout and "Array(" not in cap.stdout
    (out,) = [o for o in cap.outputs if "text/html" in o.data]
    assert "P(&#x27;x&#x27;, &#x27;y&#x27;)" in out.data["text/html"]
    assert "P('x', 'y')" in out.data["text/plain"]
    assert "sv_x" in ip.user_ns                 # the cell ran as an ordinary cell


def test_magic_names_variables(ip):
    view = ip.run_cell_magic("shardviz", "-o a_ b_", "a_ = jnp.ones(8)\nb_ = {'w': jnp.ones(2)}")
    assert isinstance(view, ShardingView)
    assert [lay.path for lay in view.layouts] == ["a_", "b_['w']"]
    with pytest.raises(UsageError, match="'nope_' is not defined"):
        ip.run_cell_magic("shardviz", "nope_", "a_ = 1")


def test_line_form_draws_existing_variables(ip):
    ip.run_cell("lf_a = jnp.ones(8)\nlf_b = {'w': jnp.ones(2)}")
    res, cap = run(ip, "%shardviz lf_a lf_b")
    assert res.success
    (out,) = [o for o in cap.outputs if "text/html" in o.data]
    assert out.data["text/plain"].startswith("shardviz lf_a lf_b")
    view = ip.run_line_magic("shardviz", "-o lf_b['w']")
    assert [lay.path for lay in view.layouts] == ["lf_b['w']"]
    with pytest.raises(UsageError, match="draws variables that exist"):
        ip.run_line_magic("shardviz", "")


def test_magic_stops_when_the_cell_fails(ip):
    res, cap = run(ip, "%%shardviz\nsv_before = 1\n1 / 0\njnp.ones(3)")
    text = re.sub(r"\x1b\[[0-9;]*m", "", cap.stdout + cap.stderr)
    assert text.count("ZeroDivisionError") == 2 and "1 / 0" in text   # shown once, as usual
    assert isinstance(res.error_in_exec, ZeroDivisionError)           # and the cell failed
    assert ip.user_ns["sv_before"] == 1
    assert not [o for o in cap.outputs if "text/html" in o.data]


def test_magic_cell_with_a_syntax_error_runs_nothing(ip):
    ip.user_ns.pop("sv_syn", None)
    res, cap = run(ip, "%%shardviz\nsv_syn = 1\ny = (\nsv_syn\n")
    assert isinstance(res.error_in_exec, SyntaxError)
    assert "was never closed" in cap.stdout + cap.stderr
    assert "sv_syn" not in ip.user_ns


def test_magic_without_final_expression_says_so(ip):
    with pytest.raises(UsageError, match="does not end with an expression"):
        ip.run_cell_magic("shardviz", "", "sv_y = jnp.ones(3)")


def test_magic_o_returns_the_view_instead_of_displaying_it(ip):
    view = ip.run_cell_magic("shardviz", "-o", "jnp.ones(3)")
    assert isinstance(view, ShardingView) and view.layouts[0].shape == (3,)
    res, cap = run(ip, "%%shardviz -o\njnp.ones(3)")
    assert res.success and isinstance(res.result, ShardingView)
    assert not [o for o in cap.outputs if "text/html" in o.data]   # no display() call


@pytest.mark.parametrize("value, found", [
    ("np.ones((2, 3))", "a NumPy array float64[2, 3]"),
    ("3", "a Python int (3)"),
    ("None", "found None"),
    ("{'a': 1, 'b': np.zeros(2)}", "none of its 2 leaves is a jax.Array"),
    ("jax.ShapeDtypeStruct((2,), jnp.float32)", "without a sharding"),
])
def test_no_array_message_says_what_was_found(ip, value, found):
    res, cap = run(ip, f"%%shardviz\n{value}")
    assert res.success
    (out,) = [o for o in cap.outputs if "text/html" in o.data]
    assert "no JAX array to draw" in out.data["text/plain"]
    assert found in out.data["text/plain"]
    assert "<td title" not in out.data["text/html"]


def test_tracer_is_named_as_such():
    seen = {}

    @jax.jit
    def f(x):
        seen["view"] = jaxmagic.sharding_view(x)
        return x

    f(jnp.ones(3))
    assert "tracer" in seen["view"].model.message


# ---- --plan ----------------------------------------------------------------------------

def test_plan_shows_compiled_shardings_without_running(ip):
    ip.user_ns.update(MESH=MESH, calls=[])
    view = ip.run_cell_magic("shardviz", "--plan -o", """
from jax.sharding import NamedSharding, PartitionSpec as P
def body(x, w):
    jax.debug.callback(lambda: calls.append(1))
    return jnp.tanh(x @ w), x.sum()
layer = jax.jit(body, out_shardings=(NamedSharding(MESH, P("x", "y")), NamedSharding(MESH, P())))
xp = jax.device_put(jnp.ones((8, 8)), NamedSharding(MESH, P("x", None)))
wp = jax.device_put(jnp.ones((8, 8)), NamedSharding(MESH, P(None, "y")))
layer(xp, w=wp)
""")
    assert ip.user_ns["calls"] == []              # compiled, never executed
    ins, outs = view.model.sections
    assert (ins.title, outs.title) == ("inputs", "outputs")
    assert [lay.path for lay in ins.layouts] == ["xp", "w"]
    assert all(lay.state == "planned" for lay in view.layouts)
    assert [lay.path for lay in outs.layouts] == ["out[0]", "out[1]"]
    o0, o1 = outs.layouts
    assert tiles(o0) == {((4 * i, 4 * i + 4), (2 * j, 2 * j + 2)): (4 * i + j,)
                         for i in range(2) for j in range(4)}
    assert o1.shape == () and tiles(o1) == {(): tuple(range(8))}
    assert {len(lay.tiles) for lay in ins.layouts} <= {1, 2, 4, 8}
    text = view.text()
    assert text.startswith("shardviz --plan layer(xp, w=wp)")
    assert "inputs:" in text and "outputs:" in text
    html_of(view)


def test_plan_line_form(ip):
    ip.user_ns.update(lp_f=jax.jit(lambda a: a * 2), lp_x=put((8, 4), P("x", None)))
    view = ip.run_line_magic("shardviz", "--plan -o lp_f(lp_x)")
    ins, outs = view.model.sections
    assert [lay.path for lay in ins.layouts] == ["lp_x"]
    assert tiles(outs.layouts[0]) == tiles(ins.layouts[0])


def test_plan_static_args_keep_their_names():
    from functools import partial

    @partial(jax.jit, static_argnums=1)
    def scale(x, n):
        return x * n

    view = jaxmagic.sharding_plan(scale, put((8, 4), P("x", None)), 3)
    assert [lay.path for lay in view.model.sections[0].layouts] == ["x"]    # named by its parameter


def test_plan_needs_a_jitted_function(ip):
    with pytest.raises(UsageError, match=r"not jitted .*jax\.jit\(plain\)"):
        ip.run_cell_magic("shardviz", "--plan", "def plain(x):\n    return x\nplain(jnp.ones(3))")
    with pytest.raises(PlanError):
        jaxmagic.sharding_plan(lambda x: x, jnp.ones(3))


# ---- metadata only -------------------------------------------------------------------------

def test_works_under_transfer_guard_disallow(ip):
    x = put((8, 8), P("x", "y"))
    y = jax.pmap(lambda v: v + 1)(jnp.ones((8, 2)))
    s = jnp.float32(1)
    ip.user_ns.update(tg_x=x, tg_y=y)
    with jax.transfer_guard("disallow"):
        view = jaxmagic.sharding_view({"x": x, "y": y, "s": s})
        view.text(), html_of(view)
        res, cap = run(ip, "%%shardviz\n{'x': tg_x, 'y': tg_y}")
        with pytest.raises(Exception, match="[Dd]isallowed"):
            jnp.asarray(np.ones(3)) + 1           # the guard is really on
    assert res.success, res.error_in_exec
    assert [o for o in cap.outputs if "text/html" in o.data]
    assert x._npy_value is None                   # no host copy was made


def test_deleted_array_still_has_a_layout():
    x = put((8, 8), P("x", "y"))
    x.delete()
    view = jaxmagic.sharding_view(x)
    lay = view.layouts[0]
    assert lay.state == "deleted" and len(lay.tiles) == 8
    assert "deleted" in view.text()


def test_never_waits_for_a_pending_computation():
    @jax.jit
    def slow(a):
        return jax.lax.fori_loop(0, 60, lambda i, m: jnp.tanh(m @ m), a)

    a = jnp.full((600, 600), 1e-3)
    slow(a).block_until_ready()                  # compiled, so the next call only runs
    t0 = time.perf_counter()
    out = slow(a)
    view = jaxmagic.sharding_view(out)
    view.text(), view.html()
    pending_after = not out.is_ready()
    took = time.perf_counter() - t0
    out.block_until_ready()
    total = time.perf_counter() - t0
    if not pending_after:
        pytest.skip(f"the computation finished before the view ({total:.3f}s): too fast to tell")
    assert view.layouts[0].state == "pending"
    assert took < total
    assert "still being computed" in view.text()


def test_layout_from_pmap_sharding_is_the_same_on_every_version():
    y = jax.pmap(lambda v: v)(jnp.ones((8, 2, 3)))
    lay = layout_from(y.shape, y.dtype, y.sharding)
    assert lay.mesh[0].name == "pmap axis" and lay.spec.startswith("P(pmap axis")
    assert [t.index[0] for t in lay.tiles] == [(i, i + 1) for i in range(8)]


def test_many_leaves_draw_a_bounded_page():
    from jaxmagic.render.sharding import MAX_PANELS

    tree = {f"w{i:03d}": jnp.ones(4) for i in range(MAX_PANELS + 20)}
    view = jaxmagic.sharding_view(tree)
    h = html_of(view)
    assert h.count("<table style=\"border-collapse:collapse;table-layout:fixed") == MAX_PANELS
    assert "20 more arrays, not drawn" in h and "w067" in h
    assert view.text().count("float32[4]") == MAX_PANELS + 20


def test_arrays_whole_on_the_same_devices_are_drawn_once_and_named():
    """A model's parameters and optimiser state, each copied whole to every device, are
    one drawing with every array named under it (a plan of 34 such arrays drew 34 same
    grids, 171 KB); a split array and one whole on other devices keep their own."""
    half = Mesh(np.array(jax.devices()[:4]), ("z",))
    tree = {"b": put((16,), P()), "s": put((), P()), "w": put((4, 16), P()),
            "x": put((8, 4), P("x", None)), "z": put((4,), P(), half)}
    view = jaxmagic.sharding_view(tree)
    h = html_of(view)
    assert "3 arrays, each whole on every one of 8 devices" in h
    assert esc("['b'] float32[16]; ['s'] float32[]; ['w'] float32[4, 16]") in h
    # the three drawn once, x's two blocks on four devices each, z on its four
    assert len(re.findall(r'<span style="[^"]*">\d</span>', h)) == 8 + 2 * 4 + 4
    assert h.count(esc("['z']")) == h.count(esc("['x']")) == 1   # each its own panel
    assert "324 B: all 3 whole" in h           # (16 + 1 + 64) float32
    text = view.text()
    assert text.count("float32[") == 5 and "3 arrays, each whole on every one of 8" in text
    assert text.count("│ 0,1,2,3,4,5,6,7 │") == 1 and "per device  324 B: all 3 whole" in text
    one = len(html_of(jaxmagic.sharding_view({"b": put((16,), P())})))
    many = len(html_of(jaxmagic.sharding_view({f"p{i}": put((16,), P()) for i in range(24)})))
    assert many < 2 * one
