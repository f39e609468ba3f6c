"""The %jaxpr explorer in Notebook 7 (`pip install notebook`), as in JupyterLab
(tests/test_jupyterlab_explorer_views.py): it draws in the picture's place, the tables
beside the picture stay visible, hover repeats a box's figures, zoom in widens the
drawing, and a page reloaded while the kernel runs draws the explorer again. Notebook 7's
output area is JupyterLab's, its page and URLs are its own.
"""

import pytest
from test_jupyterlab import browser, serve
from test_jupyterlab_explorer import CELL
from test_jupyterlab_explorer_views import SETUP, back_after_reload, explore, tables_and_zoom

pytestmark = [pytest.mark.browser, pytest.mark.slow]

pytest.importorskip("anywidget")
pytest.importorskip("notebook", minversion="7")


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory):
    yield from serve(tmp_path_factory.mktemp("nb7"), "notebook")


@pytest.fixture(scope="module")
def nb7_browser(notebook7):
    yield from browser()


def test_explorer_in_notebook7(notebook7, nb7_browser):
    page = explore(notebook7, nb7_browser, "tables.ipynb",
                   [SETUP, "%jaxpr --cost jax.grad(model)(params, x)"], url="/notebooks/{}")
    tables_and_zoom(page, notebook7)


def test_explorer_back_after_a_reload_in_notebook7(notebook7, nb7_browser):
    page = explore(notebook7, nb7_browser, "reload.ipynb", [SETUP, CELL],
                   url="/notebooks/{}")
    back_after_reload(page, notebook7)
