"""The %jaxpr explorer in the real JupyterLab (tests/test_jupyterlab.py's server), with
its kernel, as a person uses it in Chromium: hovering a node shows its details, clicking
a folded series draws its inside, a search finds a line, "copy as magic" shows the
line, and the static picture is not shown twice; then, the kernel gone, the notebook
reopened by the person who saved it (trusted) and by someone else: the static picture,
no "Error displaying widget".

Screenshots of each step go to $JAXMAGIC_LAB_SCREENSHOTS when it is set.
"""
import os
import re

import nbformat
import pytest
from nbformat.sign import NotebookNotary
from test_jupyterlab import lab, lab_browser  # noqa: F401 - the server and browser fixtures

pytestmark = [pytest.mark.browser, pytest.mark.slow]

pytest.importorskip("anywidget")

SETUP = """\
%load_ext jaxmagic
import jax, jax.numpy as jnp

def block(p, x):
    x = x + jnp.tanh(x @ p['w1']) @ p['w2']
    return (x - x.mean(-1, keepdims=True)) / (x.std(-1, keepdims=True) + 1e-5)

def model(params, x):
    for p in params:
        x = block(p, x)
    return jnp.sum(x ** 2)

params = [{'w1': jnp.ones((16, 16)) * 0.1, 'w2': jnp.ones((16, 16)) * 0.1}] * 6
x = jnp.ones((8, 16))"""
CELL = "%jaxpr jax.grad(model)(params, x)"
EVIL = """\
evil = {'<img src=x onerror=alert(1)>': jnp.ones(3)}
def f(d):
    return jnp.sin(d['<img src=x onerror=alert(1)>'])"""


def shot(page, name):
    where = os.environ.get("JAXMAGIC_LAB_SCREENSHOTS")
    if where:
        page.screenshot(path=os.path.join(where, f"explorer.{name}.png"))


def nodes(explorer) -> int:
    return explorer.locator(".jaxmagic-view g.node").count()


def run_all(page):
    """Shift+Enter on each cell, as a person runs a notebook (again on the first while
    the kernel is still connecting and the keypress is lost)."""
    cells = page.locator(".jp-Notebook .jp-Cell")
    for attempt in range(6):
        try:
            cells.first.locator(".jp-InputArea-editor").click(timeout=10_000,
                                                               force=attempt > 0)
        except Exception:   # noqa: BLE001 - the page still settling: try again
            continue
        page.keyboard.press("Shift+Enter")
        try:
            cells.first.locator(".jp-InputPrompt", has_text="[").filter(
                has_not_text="[ ]").wait_for(timeout=10_000)
            break
        except Exception:   # noqa: BLE001 - playwright's TimeoutError: press again
            continue
    for _ in range(cells.count() - 1):
        page.keyboard.press("Shift+Enter")


def test_explorer_in_jupyterlab(lab, lab_browser, tmp_path):  # noqa: F811
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in (SETUP, CELL, EVIL, "%jaxpr f(evil)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, lab.root / "explore.ipynb")
    page = lab_browser.new_page()
    console = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        page.goto(f"{lab.base}/lab/tree/explore.ipynb?reset", wait_until="domcontentloaded")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                               state="attached", timeout=60_000)
        run_all(page)
        page.wait_for_function("document.querySelectorAll('.jaxmagic-explorer svg').length"
                               " == 2", timeout=120_000)
        ex = page.locator(".jaxmagic-explorer").first
        assert "%jaxpr --depth " in ex.locator(".jaxmagic-magic").inner_text()
        # the explorer took the static picture's place: the picture is not shown twice
        cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
        assert cell.locator(".jp-OutputArea-output .jaxmagic-explorer").count() == 1
        pictures = cell.locator("img[src^='data:image/svg+xml']")
        assert pictures.count() == 1 and not pictures.first.is_visible()

        # hover: the details of an equation, as text
        op = ex.locator(".jaxmagic-view g.node", has_text="broadcast_in_dim").first
        op.hover()
        details = ex.locator(".jaxmagic-details")
        details.wait_for(state="visible", timeout=5_000)
        text = details.inner_text()
        assert "broadcast_in_dim" in text and "out: f32[8,16]" in text, text
        assert "model:11" in text and "return jnp.sum(x ** 2)" in text, text
        shot(page, "hover")

        # click a folded series (a closed group where this release draws none): the
        # kernel lays out its inside
        before = nodes(ex)
        closed = ex.locator(".jaxmagic-view g.node[data-click=open]")
        series = closed.filter(has_text=re.compile(r"×\d+"))
        series = series.first if series.count() else closed.first
        name = series.locator("text").first.text_content()
        series.click()
        page.wait_for_function("document.querySelector('.jaxmagic-explorer')"
                               f".querySelectorAll('g.node').length > {before}",
                               timeout=30_000)
        assert ex.locator(".jaxmagic-view g.cluster", has_text=name).count() >= 1
        assert "opened" in ex.locator(".jaxmagic-status").inner_text()
        shot(page, "open")

        # search a line: its nodes marked, their groups opened
        ex.locator(".jaxmagic-search").fill("block:5")
        ex.locator(".jaxmagic-search").press("Enter")
        ex.locator(".jaxmagic-view .jaxmagic-match").first.wait_for(timeout=30_000)
        status = ex.locator(".jaxmagic-status").inner_text()
        assert "match" in status and "block:5" in status, status
        marked = ex.locator(".jaxmagic-view .jaxmagic-match")
        marked.first.hover()
        assert "block:5" in details.inner_text()
        shot(page, "search")

        # a name from user code reaches the page as text, never as markup
        evil = page.locator(".jaxmagic-explorer").nth(1).locator("g.node",
                                                                 has_text="onerror").first
        evil.hover()
        details = page.locator(".jaxmagic-details").nth(1)
        details.wait_for(state="visible", timeout=5_000)
        assert "evil['<img src=x onerror=alert(1)>']" in details.inner_text()
        assert page.locator(".jaxmagic-explorer img").count() == 0 and not dialogs

        page.keyboard.press("Control+s")
        page.wait_for_timeout(1500)
    finally:
        shot(page, "last")
        print("\n".join(console[-20:]))
        page.close()
        lab.stop_kernels()

    # saved: the static picture, then a widget output every frontend draws as nothing
    saved = nbformat.read(lab.root / "explore.ipynb", as_version=4)
    picture, widget = saved.cells[1].outputs
    assert sorted(picture.data) == ["image/png", "text/html", "text/plain"]
    assert widget.data["application/vnd.jupyter.widget-view+json"]["model_id"] == ""
    assert widget.data["text/plain"] == ""

    # the person who saved it reopens it (trusted), a new kernel without the widget
    page = lab_browser.new_page()
    try:
        page.goto(f"{lab.base}/lab/tree/explore.ipynb?reset", wait_until="domcontentloaded")
        img = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(
            ".jp-OutputArea-output img").first
        img.wait_for(state="visible", timeout=60_000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                               state="attached", timeout=60_000)
        page.wait_for_timeout(3000)     # the widget manager restored from the kernel
        assert img.bounding_box()["width"] > 100
        assert page.get_by_text("Error displaying widget").count() == 0
        assert page.get_by_text("Loading widget").filter(visible=True).count() == 0
        shot(page, "reopened")
    finally:
        page.close()
        lab.stop_kernels()

    # someone else opens the saved notebook, no kernel has the widget: the static picture
    # nbconvert: no widget state saved, so the static picture
    from notebook_support import to_html

    html = to_html(saved, "light")
    assert 'src="data:image/svg+xml;base64,' in html
    assert '<script type="application/vnd.jupyter.widget-view+json">' not in html

    # as someone else opens it: their trust database never signed it
    NotebookNotary(data_dir=lab.env["JUPYTER_DATA_DIR"]).unsign(saved)
    nbformat.write(saved, lab.root / "explore-shared.ipynb")
    page = lab_browser.new_page()
    try:
        page.goto(f"{lab.base}/lab/tree/explore-shared.ipynb?reset",
                  wait_until="domcontentloaded")
        img = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(
            ".jp-OutputArea-output img").first
        img.wait_for(state="visible", timeout=60_000)
        box = img.bounding_box()
        assert box["width"] > 100 and box["height"] > 50, box
        assert page.locator(".jaxmagic-explorer").count() == 0
        shot(page, "reloaded")
    finally:
        page.close()
        lab.stop_kernels()
