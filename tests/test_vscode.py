"""VS Code's own notebook renderers (code-server 4.99.4, VS Code 1.99, in Chromium) show
jaxmagic's static outputs, light and dark: a %jaxpr output that carries the explorer (as
JupyterLab's kernels make it) and one without. VS Code's Jupyter extension, and so
widgets, cannot be installed here: this is VS Code without widgets.

Needs `bash scripts/code-server.sh` (minutes, once; cached): without it the test skips.
"""
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from notebook_support import launch, need_chromium

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BIN = Path(os.environ.get("JAXMAGIC_CODE_SERVER_DIR",
                          Path.home() / ".cache/jaxmagic/code-server"),
           "node_modules/.bin/code-server")
THEMES = {"light": "Default Light Modern", "dark": "Default Dark Modern"}
WIDGET = "application/vnd.jupyter.widget-view+json"
CELLS = ["%load_ext jaxmagic\nimport jax.numpy as jnp\n"
         "def f(x):\n    return jnp.tanh(x @ x.T).sum()",
         "%jaxpr f(jnp.ones((4, 3)))",
         "%config JaxMagic.explorer = False\n%jaxpr f(jnp.ones((4, 3)))"]

# every <img> of every frame (VS Code draws outputs in a webview's nested iframes)
IMAGES_JS = """() => [...document.querySelectorAll('img')].map(i => ({
    src: i.src.slice(0, 26), nw: i.naturalWidth, w: i.getBoundingClientRect().width,
    h: i.getBoundingClientRect().height}))"""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    """The cells run in a kernel a notebook server started: the explorer's cell has the
    static picture, then the widget's view (no text of its own)."""
    import nbformat
    from nbclient import NotebookClient

    ws = tmp_path_factory.mktemp("vscode-ws")
    env = dict(os.environ, JPY_SESSION_NAME=str(ws / "jaxpr.ipynb"),
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parents[1]),
                                           os.environ.get("PYTHONPATH", "")]))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   store_widget_state=False).execute(env=env)
    picture, widget = nb.cells[1].outputs
    assert WIDGET not in picture["data"] and WIDGET in widget["data"]
    nbformat.write(nb, ws / "jaxpr.ipynb")
    return ws


@pytest.mark.parametrize("theme", list(THEMES))
def test_static_outputs_in_vscode(notebook, theme, tmp_path):
    need_chromium()
    if not BIN.exists():
        pytest.skip(f"code-server is not installed at {BIN} (bash scripts/code-server.sh)")
    user = tmp_path / "user"
    (user / "User").mkdir(parents=True)
    (user / "User/settings.json").write_text(json.dumps({
        "workbench.colorTheme": THEMES[theme], "workbench.startupEditor": "none",
        "security.workspace.trust.enabled": False, "telemetry.telemetryLevel": "off"}))
    port = _port()
    log = open(tmp_path / "code-server.log", "wb")
    proc = subprocess.Popen(
        [str(BIN), "--auth", "none", "--bind-addr", f"127.0.0.1:{port}",
         "--user-data-dir", str(user), "--extensions-dir", str(tmp_path / "ext"),
         "--disable-telemetry", "--disable-update-check", str(notebook)],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/healthz", timeout=5)
                break
            except (urllib.error.URLError, OSError):
                assert proc.poll() is None and time.monotonic() < deadline, \
                    (tmp_path / "code-server.log").read_text()[-2000:]
                time.sleep(0.5)
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = launch(p, shutil.which("chromium"))
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/?folder={notebook}", wait_until="domcontentloaded")
            _open_notebook(page, "jaxpr.ipynb")
            pictures = []
            deadline = time.monotonic() + 60
            while len(pictures) < 2 and time.monotonic() < deadline:
                page.wait_for_timeout(1000)
                pictures = [im for f in page.frames for im in _images(f)
                            if im["src"].startswith("data:image/svg+xml")]
            if os.environ.get("JAXMAGIC_LAB_SCREENSHOTS"):
                page.screenshot(path=os.path.join(os.environ["JAXMAGIC_LAB_SCREENSHOTS"],
                                                  f"vscode.{theme}.png"))
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()
    assert len(pictures) == 2, pictures      # the explorer's output and the plain one
    for im in pictures:
        assert im["nw"] > 0 and im["w"] > 100 and im["h"] > 50, im


def _images(frame) -> list[dict]:
    try:
        return frame.evaluate(IMAGES_JS)
    except Exception:   # noqa: BLE001 - a frame navigating or gone
        return []


def _open_notebook(page, name: str) -> None:
    """Open `name` from the Explorer in VS Code's notebook editor. A fresh profile opens
    it as JSON text (its built-in .ipynb support is not the default editor yet): then
    "Reopen Editor With…" → "Jupyter Notebook", as a person would."""
    rows = page.locator(".quick-input-list .monaco-list-row")
    page.get_by_text(name).first.click(timeout=60_000)
    for _ in range(3):
        try:
            page.wait_for_selector(".notebook-editor", state="attached", timeout=5_000)
            return
        except Exception:   # noqa: BLE001 - playwright's TimeoutError
            pass
        page.keyboard.press("F1")
        page.keyboard.type("Reopen Editor With")
        rows.filter(has_text="Reopen Editor With...").first.click(timeout=10_000)
        rows.filter(has_text="Jupyter Notebook").first.click(timeout=10_000)
    raise AssertionError(f"VS Code did not open {name} as a notebook")
