"""An analysis drawn over `%jaxpr`'s graph is one registered overlay (jaxmagic.overlays):
the smallest one, defined and registered here, is a `%jaxpr --tally` option with its help,
survives `configure`, is kept by the explorer's "copy as magic" and shows its hover line,
in a real InteractiveShell on real JAX; unregistered, it is gone again."""
import pytest
from IPython.core.error import UsageError

import jaxmagic
from jaxmagic import overlays
from jaxmagic.overlays import Flag, Overlay, Result


class Tally(Result):
    """The result: what it adds to the picture (all optional): hover lines, text."""

    def __init__(self, graph):
        self.equations = graph.num_equations

    def hover(self, g):
        return {f"n{n.id}": [f"tally: {len(n.eqns)} of {self.equations} equations"]
                for n in g.nodes.values() if n.eqns}

    def text(self):
        return f"tally: {self.equations} equations"


TALLY = Overlay("tally", (Flag("tally", "count the equations (a test's overlay)"),),
                compute=lambda context, flag: Tally(context.graph))


@pytest.fixture
def tally():
    overlays.register(TALLY)
    yield TALLY
    overlays.unregister(TALLY)


def help_text(ip) -> str:
    return ip.object_inspect_text("%jaxpr")


def test_an_overlay_is_one_registration(ip, tally, monkeypatch):
    pytest.importorskip("anywidget")
    import jaxmagic.explorer as E
    import jaxmagic.frontend as F

    ip.run_cell("def f(x):\n    y = jnp.sin(x)\n    return y * 2\nx = jnp.ones(3)")
    assert "--tally" in help_text(ip) and "count the equations" in help_text(ip)
    magic = ip.magics_manager.registry["JaxMagic"]
    assert "count the equations" in magic.jaxpr.parser.format_help()

    view = ip.run_line_magic("jaxpr", "--tally -o f(x)")
    assert isinstance(view.tally, Tally) and view.costs is None
    assert view.tally.equations == 2 and "tally: 2 equations" in view.text()
    assert view.configure(depth=0, rankdir="LR").tally is view.tally

    shown = []     # the explorer the magic shows, in a frontend that runs widgets
    monkeypatch.setattr(F, "widget_frontend", lambda shell: "jupyter")
    monkeypatch.setattr(E, "show", shown.append)
    ip.run_line_magic("jaxpr", "--tally --cost f(x)")
    (explorer,) = shown
    assert explorer.magic.endswith("--cost --tally f(x)"), explorer.magic
    figures = [line for row in explorer.table.values() for line in row["figures"]]
    assert any(line.startswith("tally: ") for line in figures), figures
    assert any("flop" in line for line in figures), figures    # the cost overlay's too


def test_an_unregistered_overlay_is_gone(ip):
    overlays.register(TALLY)
    overlays.unregister(TALLY)
    assert "--tally" not in help_text(ip)
    assert all(f.name != "tally" for f in overlays.flags())
    ip.push({"g": lambda x: x + 1})
    with pytest.raises(UsageError, match="unknown option --tally"):
        ip.run_line_magic("jaxpr", "--tally -o g(1.0)")
    assert "tally" not in ip.run_line_magic("jaxpr", "-o g(1.0)").overlays


def test_a_result_the_picture_cannot_ask_is_refused_by_name(ip):
    loose = Overlay("loose", (Flag("loose", "a result of no protocol"),),
                    compute=lambda context, flag: "a string")
    overlays.register(loose)
    try:
        ip.push({"g": lambda x: x + 1})
        with pytest.raises(TypeError, match="overlay 'loose' returned a str, not a "
                                            "jaxmagic.overlays.Result"):
            jaxmagic.trace(ip.user_ns["g"], 1.0, overlays=("loose",))
    finally:
        overlays.unregister(loose)


def test_trace_draws_any_overlays_with_their_own_settings():
    import jax.numpy as jnp

    def f(x):
        return jnp.log(jnp.sin(x) - 2.0)
    view = jaxmagic.trace(f, jnp.ones(64), overlays=("memory", "values"),
                          settings={"values": {"budget": 1}})
    assert view.memory is not None and view.values is not None and view.costs is None
    assert view.values.card is not None                  # log of a negative number
    assert any("values_budget" in n for n in view.values.notes())   # the budget of 1 held
    with pytest.raises(TypeError, match="overlay 'values' has no setting seconds"):
        jaxmagic.trace(f, jnp.ones(3), overlays=("values",),
                       settings={"values": {"seconds": 1}})


def test_a_flag_the_magic_has_already_is_refused(ip):
    clash = Overlay("depth2", (Flag("depth", "again"),), compute=lambda context, flag: None)
    with pytest.raises(Exception, match="--depth"):
        overlays.register(clash)
    assert all(o.attr != "depth2" for o in overlays.REGISTRY)
    assert ip.run_line_magic("jaxpr", "--depth 0 -o jnp.sin(jnp.ones(2))").depth == 0


def test_the_flag_list_is_the_registry(ip):
    """Every overlay's flag is a `%jaxpr` option, and nothing else adds one."""
    magic = ip.magics_manager.registry["JaxMagic"]
    options = magic.jaxpr.parser._option_string_actions
    assert [f.option for f in overlays.flags()] == ["--cost", "--profile", "--sharding",
                                                     "--memory", "--values", "--kernels"]
    assert all(f.option in options for f in overlays.flags())
    view = ip.run_line_magic("jaxpr", "-o jnp.sin(jnp.ones(2))")
    assert list(view.overlays) == [o.attr for o in overlays.REGISTRY]
    assert (view.costs, view.collectives, view.memory, view.values, view.kernels) == \
        (None,) * 5
