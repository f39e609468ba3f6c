"""A newcomer's first hour with the explorer (issue 42), in the real JupyterLab and
Chromium with its kernel, in a narrow window: the line "copy as magic" gives is shown
whole, copied by its button and, pasted into a cell, draws the same view; a group opened
that would draw tiny text is drawn legibly and scrolled to; and once the kernel restarts
the explorer says so at once, not after 15 s of "laying out…".

Screenshots of each step go to $JAXMAGIC_LAB_SCREENSHOTS when it is set.
"""
from pathlib import Path

import nbformat
import pytest
from test_jupyterlab import lab, lab_browser  # noqa: F401 - the server and browser fixtures
from test_jupyterlab_explorer import run_all, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

pytest.importorskip("anywidget")

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"
SETUP = f"""\
%load_ext jaxmagic
import sys
sys.path.insert(0, {str(BENCHMARKS)!r})
import jax, transformer
params, x = transformer.make(4, d=16, t=8)"""
CELL = "%jaxpr jax.grad(transformer.model)(params, x)"
OPENED = "block #0 · backward"      # its equations one by one: text 5.9 px at 940 px
# the smallest text of explorer `n` on screen, in CSS pixels
SMALLEST = """n => {
  const svg = document.querySelectorAll('.jaxmagic-explorer')[n].querySelector('svg');
  const k = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  return Math.min(...[...svg.querySelectorAll('text')].map(
    t => parseFloat(t.getAttribute('font-size')))) * k;
}"""
TITLES = """n => [...document.querySelectorAll('.jaxmagic-explorer')[n]
  .querySelectorAll('g.node')].map(g => g.textContent).sort()"""


@pytest.fixture(scope="module")
def page(lab, lab_browser):  # noqa: F811
    """The notebook run by a person in an 820 px wide window, its explorer drawn."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in (SETUP, CELL, "")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, lab.root / "newcomer.ipynb")
    lab_browser.grant_permissions(["clipboard-read", "clipboard-write"], origin=lab.base)
    page = lab_browser.new_page()
    page.set_viewport_size({"width": 820, "height": 900})
    page.goto(f"{lab.base}/lab/tree/newcomer.ipynb?reset", wait_until="domcontentloaded")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                           state="attached", timeout=60_000)
    run_all(page)
    page.wait_for_function("document.querySelectorAll('.jaxmagic-explorer svg').length"
                           " >= 1", timeout=120_000)
    try:
        yield page
    finally:
        shot(page, "newcomer")
        page.close()
        lab.stop_kernels()


def explorer(page, n=0):
    return page.locator(".jaxmagic-explorer").nth(n)


def test_an_opened_group_is_drawn_legibly_and_scrolled_to(page):
    ex = explorer(page)
    status = ex.locator(".jaxmagic-status")
    ex.locator(".jaxmagic-view g.node[data-click=open]", has_text=OPENED).click()
    status.filter(has_text=f"opened {OPENED}").wait_for(timeout=30_000)
    page.wait_for_timeout(300)      # the drawing of the new picture
    assert page.evaluate(f"({SMALLEST})(0)") >= 8.0 - 1 / 64   # the page's pixel grid
    group = ex.locator(".jaxmagic-view g.cluster", has_text=OPENED).first.bounding_box()
    view = ex.locator(".jaxmagic-view").bounding_box()
    assert view["x"] <= group["x"] < view["x"] + view["width"], (group, view)
    assert view["y"] <= group["y"] < view["y"] + view["height"], (group, view)
    shot(page, "newcomer.opened")


def test_the_copied_line_reads_whole_and_redraws_the_view(page):
    ex = explorer(page)
    magic = ex.locator(".jaxmagic-magic")
    line = magic.get_attribute("title").split("\n")[0]
    assert magic.inner_text() == line and line.isascii(), line
    assert magic.evaluate("e => e.scrollWidth <= e.clientWidth && e.getBoundingClientRect()"
                          ".right <= e.closest('.jaxmagic-explorer').getBoundingClientRect()"
                          ".right")
    ex.locator("button.jaxmagic-copy").click()
    ex.locator(".jaxmagic-status", has_text="copied").wait_for(timeout=5_000)
    assert page.evaluate("navigator.clipboard.readText()") == line
    cell = page.locator(".jp-Notebook .jp-Cell").last
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+v")
    page.keyboard.press("Shift+Enter")
    page.wait_for_function("document.querySelectorAll('.jaxmagic-explorer svg').length == 2",
                           timeout=120_000)
    page.wait_for_timeout(500)
    assert page.evaluate(f"({TITLES})(0)") == page.evaluate(f"({TITLES})(1)"), line


def test_a_restarted_kernel_is_said_at_once(page):
    ex = explorer(page)
    status = ex.locator(".jaxmagic-status")
    page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputPrompt").click()
    page.keyboard.press("Escape")
    page.keyboard.press("0")
    page.keyboard.press("0")
    page.locator(".jp-Dialog button.jp-mod-accept").click()
    said = "the kernel restarted: run the cell again to explore"
    status.filter(has_text=said).wait_for(timeout=30_000)
    ex.locator(".jaxmagic-view g.node[data-click]").first.click()
    assert status.inner_text() == said       # at once, not "laying out…"
    shot(page, "newcomer.restarted")
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                           state="attached", timeout=60_000)
