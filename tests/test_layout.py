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
