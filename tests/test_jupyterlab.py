"""A real JupyterLab on 127.0.0.1 showing the executed examples as someone else opens them:
untrusted (nothing signed them), on the light and the dark theme, then trusted.

Untrusted JupyterLab drops image/svg+xml and sanitises text/html (no <svg>, <style>,
<script>, CSS variables).  Every jaxmagic graph must still show as a picture and every
table or card as styled HTML, never as its text/plain fallback, and stay readable.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from notebook_support import (
    MEASURE_JS,
    block_network,
    example_notebooks,
    jaxmagic_outputs,
    launch,
    need_chromium,
)

NOTEBOOKS = example_notebooks()
IDS = [p.stem for p in NOTEBOOKS]
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _settings(root, plugin: str, values: dict):
    pkg, name = plugin.split(":")
    d = root / pkg
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.jupyterlab-settings").write_text(json.dumps(values))


class Lab:
    def __init__(self, base: str, root, env):
        self.base, self.root, self.env = base, root, env

    def api(self, method: str, path: str, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read()
        return json.loads(text) if text else None

    def theme(self, name: str):
        self.api("PUT", "/lab/api/settings/@jupyterlab/apputils-extension:themes",
                 {"raw": json.dumps({"theme": THEMES[name]})})

    def trust(self, name: str):
        subprocess.run([sys.executable, "-m", "nbformat.sign", str(self.root / name)],
                       env=self.env, check=True, capture_output=True)

    def stop_kernels(self):
        for s in self.api("GET", "/api/sessions"):
            self.api("DELETE", f"/api/sessions/{s['id']}")


def serve(tmp, app: str, *extra: str):
    """Run `python -m APP` (jupyterlab, notebook) on a free local port with its own
    settings, config, runtime and data folders (a fresh trust database: nothing signed),
    one page per notebook with every cell in the DOM, no news or update checks, the light
    theme; yield it as a `Lab` once it answers, stop it after."""
    need_chromium()
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
    log = open(tmp / f"{app}.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", app, "--no-browser", "--ip=127.0.0.1",
         f"--port={port}", "--port-retries=0", "--allow-root", "--ServerApp.token=",
         "--ServerApp.password=", f"--ServerApp.root_dir={root}",
         "--ServerApp.disable_check_xsrf=True", *extra],
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
                pytest.fail(f"{app} did not start:\n"
                            + (tmp / f"{app}.log").read_text()[-3000:])
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


def browser():
    """A headless Chromium page context, 1200×900, with the network blocked."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch(p, shutil.which("chromium"))
        ctx = b.new_context(viewport={"width": 1200, "height": 900})
        block_network(ctx, [])
        yield ctx
        ctx.close()
        b.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    yield from serve(tmp_path_factory.mktemp("lab"), "jupyterlab", "--LabApp.news_url=None")


@pytest.fixture(scope="module")
def lab_browser(lab):
    yield from browser()


def _shown_outputs(outputs) -> list[int]:
    """For each output, its position among the outputs JupyterLab shows: JupyterLab merges
    consecutive stream outputs of the same stream into one."""
    pos, last = [], None
    for o in outputs:
        stream = o.get("name") if o.get("output_type") == "stream" else None
        pos.append(pos[-1] if stream and stream == last else (pos[-1] + 1 if pos else 0))
        last = stream
    return pos


def _cells_with_outputs_ready(page, nb, timeout_s=60):
    """Wait until JupyterLab has rendered every output of every cell."""
    want = [len(set(_shown_outputs(c.get("outputs", [])))) for c in nb.cells]
    deadline = time.monotonic() + timeout_s
    got = None
    while time.monotonic() < deadline:
        got = page.evaluate("""() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')]
            .map(c => c.querySelectorAll('.jp-OutputArea-child').length)""")
        if got == want:
            return
        page.wait_for_timeout(250)
    raise AssertionError(f"JupyterLab rendered outputs per cell {got}, the notebook has {want}")


def look(lab_ctx, lab, nb, name, outs, theme):
    """Open `name` in JupyterLab and describe each jaxmagic output as shown there."""
    # (JupyterLab's own page errors, from other extensions, are not the outputs' business;
    # the nbconvert browser tests check console errors.)
    page = lab_ctx.new_page()
    try:
        page.goto(f"{lab.base}/lab/tree/{name}?reset", wait_until="domcontentloaded")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        _cells_with_outputs_ready(page, nb)
        page.wait_for_timeout(300)
        measured = page.evaluate(MEASURE_JS, [[
            ".jp-Notebook .jp-Cell", o.cell_index,
            _shown_outputs(nb.cells[o.cell_index].outputs)[o.output_index]] for o in outs])
        if os.environ.get("JAXMAGIC_LAB_SCREENSHOTS"):
            page.screenshot(path=os.path.join(os.environ["JAXMAGIC_LAB_SCREENSHOTS"],
                                              f"{name}.{theme}.png"), full_page=True)
        return measured
    finally:
        page.close()
        lab.stop_kernels()


def problems_in(outs, measured, theme) -> list[str]:
    bad = []
    for o, m in zip(outs, measured):
        where = o.label
        if not m["found"]:
            bad.append(f"{where}: {m['why']}")
            continue
        shown = m["mime"] or "?"
        pictures = [im for im in m["imgs"] if im["nw"] and im["w"] >= 20 and im["h"] >= 20]
        if shown == "text/plain":
            bad.append(f"{where}: shown as its text/plain fallback (bundle {sorted(o.data)})")
        elif o.is_picture and not pictures:
            bad.append(f"{where}: graph shown as {shown} without a picture "
                       f"({len(m['imgs'])} img): {m['textContent'][:80]!r}")
        elif not o.is_picture and shown == "text/html" and m["panelBg"] in (
                "", "rgba(0, 0, 0, 0)", "transparent"):
            bad.append(f"{where}: HTML lost its inline styles (no background on its first "
                       f"styled element)")
        if not m["visible"]:
            bad.append(f"{where}: not visible")
        low = [t for t in m["text"] if t["ratio"] < (3.0 if t["large"] else 4.5)]
        if low:
            t = low[0]
            bad.append(f"{where}: {len(low)} text runs unreadable on {theme}, e.g. "
                       f"{t['text']!r} {t['ratio']:.2f}:1 ({t['fg']} on {t['bg']})")
    return bad


@pytest.mark.parametrize("src", NOTEBOOKS, ids=IDS)
def test_untrusted_and_trusted(src, executed_notebooks, lab, lab_browser):
    nb, path, _ = executed_notebooks.get(src)
    outs = [o for o in jaxmagic_outputs(nb, src.stem) if o.rich]
    if not outs:
        pytest.skip("no jaxmagic output in this notebook")
    name = src.name
    shutil.copy(path, lab.root / name)
    model = lab.api("GET", f"/api/contents/{name}?content=1")
    trusted = [c["metadata"].get("trusted") for c in model["content"]["cells"]
               if c["cell_type"] == "code"]
    assert not any(trusted), "the executed notebook should open untrusted"
    problems = []
    for theme, trust in [("light", False), ("dark", False), ("light", True)]:
        lab.theme(theme)
        if trust:
            lab.trust(name)
        measured = look(lab_browser, lab, nb, name, outs, theme)
        label = f"[{'trusted' if trust else 'untrusted'}, {theme}] "
        problems += [label + p for p in problems_in(outs, measured, theme)]
    lab.theme("light")
    assert not problems, "\n".join(problems)


def test_checks_catch_untrusted_losses(lab, lab_browser):
    """The checks above, failing on bundles built to break untrusted: an SVG-only graph
    (dropped, text/plain shown) and a card styled by a <style> block (stripped)."""
    import nbformat

    v4 = nbformat.v4
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="200" height="80"><rect width="200" '
           'height="80" fill="#fff"/><text x="20" y="40">node</text></svg>')
    bundles = [
        {"text/plain": "svg only", "image/svg+xml": svg},
        {"text/plain": "style block", "text/html": "<style>.jm{background:#fff;color:#000}"
                                                   "</style><div class='jm'>card</div>"},
        {"text/plain": "good", "text/html": '<div style="background:#f7f9fb;color:#1f2933;'
                                            'padding:4px">card</div>'},
    ]
    cells = []
    for i, data in enumerate(bundles):
        c = v4.new_code_cell("show()", id=f"t{i}", execution_count=i + 1)
        c.outputs = [v4.new_output("display_data", data=data, metadata={"jaxmagic": {}})]
        cells.append(c)
    nb = v4.new_notebook(cells=cells, metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, lab.root / "selftest.ipynb")
    outs = jaxmagic_outputs(nb, "selftest")
    measured = look(lab_browser, lab, nb, "selftest.ipynb", outs, "light")
    found = {o.data["text/plain"]: " | ".join(problems_in([o], [m], "light"))
             for o, m in zip(outs, measured)}
    assert "text/plain fallback" in found["svg only"], found
    assert "lost its inline styles" in found["style block"], found
    assert found["good"] == "", found
