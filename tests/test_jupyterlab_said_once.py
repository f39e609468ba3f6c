"""In the real JupyterLab with its kernel, a %jaxpr output whose explorer took its
picture's place says each thing once: the title (in the picture), the note (under it)."""
import nbformat
import pytest
from test_jupyterlab import lab, lab_browser  # noqa: F401 - the server and browser fixtures
from test_jupyterlab_explorer import run_all

pytestmark = [pytest.mark.browser, pytest.mark.slow]

pytest.importorskip("anywidget")

CELLS = ["%load_ext jaxmagic\nimport jax.numpy as jnp\n%config JaxMagic.max_nodes = 20\n"
         "def deep(v):\n    for _ in range(30):\n"        # each step one longer: no fold
         "        v = jnp.concatenate([jnp.tanh(v), v[:1] * 2])\n    return v",
         "%jaxpr deep(jnp.ones(2))"]


def test_the_explorers_output_says_each_thing_once(lab, lab_browser):  # noqa: F811
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, lab.root / "once.ipynb")
    page = lab_browser.new_page()
    try:
        page.goto(f"{lab.base}/lab/tree/once.ipynb?reset", wait_until="domcontentloaded")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                               state="attached", timeout=60_000)
        run_all(page)
        page.wait_for_function("document.querySelectorAll('.jaxmagic-explorer svg').length"
                               " == 1", timeout=120_000)
        out = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea")
        page.wait_for_function("!document.querySelector('.jp-Notebook .jp-Cell:nth-child(2)"
                               " img[src^=\"data:image/svg+xml\"]')?.checkVisibility()",
                               timeout=30_000)
        text = out.inner_text()
        assert text.count("exceed max_nodes=20") == 1, text
        assert text.count("deep — 120 equations") == 1, text
    finally:
        page.close()
