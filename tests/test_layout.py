"""Layout engines and their time budgets, on real Graphviz (system `dot` and WebAssembly)."""
import time

import pytest

from jaxmagic.render import layout

SMALL = 'digraph { a -> b; b -> c; "q\\"x" -> a }'
BIG = "digraph {" + ";".join(f"n{i} -> n{(i * 7) % 3000}; n{i} -> n{(i * 13 + 1) % 3000}"
                             for i in range(3000)) + "}"


@pytest.mark.parametrize("renderer", ["dot", "wasm"])
def test_renders_svg(renderer):
    d = layout.render(SMALL, 30, renderer, png=True)
    assert d.renderer == renderer and d.svg.lstrip().startswith(b"<?xml") and b"<svg" in d.svg
    assert (d.png is not None) == (renderer == "dot")   # the wasm build makes no PNG


@pytest.mark.parametrize("renderer", ["dot", "wasm"])
def test_layout_past_budget_is_stopped_and_engine_recovers(renderer):
    start = time.perf_counter()
    with pytest.raises(layout.LayoutTimeout):
        layout.render(BIG, 0.5, renderer)
    assert time.perf_counter() - start < 5          # stopped near its budget, not minutes
    assert b"<svg" in layout.render(SMALL, 30, renderer).svg


def test_no_renderer_says_how_to_get_one():
    with pytest.raises(layout.NoRenderer, match="install Graphviz"):
        layout.render(SMALL, 5, "none")


def test_png_beside_svg_leaves_the_svg_unscaled():
    """Graphviz applies -Gdpi to every output; the PNG's must not rescale the SVG."""
    assert layout.render(SMALL, 30, "dot", png=True).svg == \
        layout.render(SMALL, 30, "dot", png=False).svg


@pytest.mark.parametrize("renderer", ["dot", "wasm"])
def test_width_is_the_drawings_own(renderer):
    """The kept `dot` measures each graph as a `dot` of its own draws it, one graph after
    another in the same process, past a timeout and a broken graph alike."""
    graphs = [SMALL, 'digraph { rankdir=LR; a -> b -> c -> d }',
              'digraph { subgraph cluster_0 { label="wide title of a box"; x -> y } y -> z }']
    widths = [layout.svg_width_pt(layout.render(g, 30, renderer).svg) for g in graphs]
    assert len(set(widths)) == 3 and all(w > 0 for w in widths)
    assert [layout.width_pt(g, 30, renderer) for g in graphs * 2] == widths * 2
    with pytest.raises(layout.LayoutTimeout):
        layout.width_pt(BIG, 0.5, renderer)
    assert layout.width_pt(graphs[2], 30, renderer) == widths[2]
    if renderer == "dot":
        with pytest.raises(RuntimeError, match="syntax error"):
            layout.width_pt("digraph { a -> ; }", 30, renderer)
    assert layout.width_pt(graphs[1], 30, renderer) == widths[1]

