"""The %jaxpr explorer in Notebook 7 (`pip install notebook`), as in JupyterLab
(tests/test_jupyterlab_explorer_views.py): it draws in the picture's place, the tables
beside the picture stay visible, hover repeats a box's figures, zoom in widens the
drawing. Notebook 7's output area is JupyterLab's, its page and URLs are its own.
"""
import os
import shutil
import subprocess
import sys
import time
import urllib.error

import pytest
from notebook_support import block_network, launch, need_chromium
from test_jupyterlab import THEMES, Lab, _free_port, _settings
from test_jupyterlab_explorer_views import SETUP, explore, tables_and_zoom

pytestmark = [pytest.mark.browser, pytest.mark.slow]

pytest.importorskip("anywidget")
pytest.importorskip("notebook", minversion="7")


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory):
    need_chromium()
    tmp = tmp_path_factory.mktemp("nb7")
    root, settings = tmp / "root", tmp / "settings"
    root.mkdir()
    _settings(settings, "@jupyterlab/notebook-extension:tracker", {"windowingMode": "none"})
    _settings(settings, "@jupyterlab/apputils-extension:notification",
              {"fetchNews": "false", "checkForUpdates": False})
    _settings(settings, "@jupyterlab/apputils-extension:themes", {"theme": THEMES["light"]})
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(settings),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
               JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               JUPYTER_DATA_DIR=str(tmp / "data"))
    port = _free_port()
    log = open(tmp / "notebook.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "notebook", "--no-browser", "--ip=127.0.0.1",
         f"--port={port}", "--port-retries=0", "--allow-root", "--ServerApp.token=",
         "--ServerApp.password=", f"--ServerApp.root_dir={root}",
         "--ServerApp.disable_check_xsrf=True"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    server = Lab(f"http://127.0.0.1:{port}", root, env)
    deadline = time.monotonic() + 90
    while True:
        try:
            server.api("GET", "/api/status")
            break
        except (urllib.error.URLError, ConnectionError, OSError):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("Notebook 7 did not start:\n"
                            + (tmp / "notebook.log").read_text()[-3000:])
            time.sleep(0.3)
    try:
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def nb7_browser(notebook7):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch(p, shutil.which("chromium"))
        ctx = b.new_context(viewport={"width": 1200, "height": 900})
        block_network(ctx, [])
        yield ctx
        ctx.close()
        b.close()


def test_explorer_in_notebook7(notebook7, nb7_browser):
    page = explore(notebook7, nb7_browser, "tables.ipynb",
                   [SETUP, "%jaxpr --cost jax.grad(model)(params, x)"], url="/notebooks/{}")
    tables_and_zoom(page, notebook7)
