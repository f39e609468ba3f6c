"""Example notebooks as readers see them: executed by a real kernel, converted by nbconvert,
opened in Debian's Chromium.  Shared by tests/test_notebooks.py, test_browser.py,
test_jupyterlab.py and scripts/gallery.py.

Which outputs are jaxmagic's is decided generically, so new notebooks and new views are
checked without editing this file:
  * an output whose metadata has a "jaxmagic" key, or
  * an output whose text/html carries jaxmagic's panel colour or an SVG/PNG data URI, or
  * a display output of a cell that calls one of jaxmagic's magics.
"""
from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
RAISES = "raises-exception"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-dev-shm-usage"]
# Magic names known even if the package fails to import (then the tests still say so).
KNOWN_MAGICS = {"jaxpr", "jit_compare", "devices", "shardviz", "jaxcheck"}


def example_notebooks() -> list[Path]:
    return sorted(EXAMPLES.glob("*.ipynb"))


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def magic_names() -> set[str]:
    names = set(KNOWN_MAGICS)
    try:
        from jaxmagic.magics import JaxMagic
        names |= set(JaxMagic.magics["line"]) | set(JaxMagic.magics["cell"])
    except Exception:  # noqa: BLE001 - the notebook tests report a broken package
        pass
    return names


def _panel_mark() -> str:
    try:
        from jaxmagic.render import html
        return f"background:{html.PANEL}"
    except Exception:  # noqa: BLE001
        return "background:#f7f9fb"


def cell_magics(source: str, names: set[str]) -> list[str]:
    """The jaxmagic magics a cell calls (`%jaxpr …`, `%%shardviz`, `x = %jaxpr -o …`)."""
    found = re.findall(r"(?m)(?:^|=)\s*%{1,2}([A-Za-z_]\w*)", source)
    return [m for m in found if m in names]


def tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


@dataclass
class Output:
    """One jaxmagic output of an executed notebook, and where it sits."""

    notebook: str
    cell_index: int
    cell_id: str
    output_index: int
    magic: str           # the magic its cell calls ("" for e.g. %jaxcheck findings)
    data: dict
    metadata: dict = field(default_factory=dict)
    source: str = ""

    @property
    def html(self) -> str:
        return self.data.get("text/html", "")

    @property
    def is_picture(self) -> bool:
        """A graph or other picture (as opposed to a table or card)."""
        return (any(k.startswith("image/") for k in self.data)
                or "data:image/svg+xml" in self.html or "data:image/png" in self.html)

    @property
    def rich(self) -> bool:
        """Shown as a picture or HTML; False for text asked for as text (`--format text`)."""
        return any(k != "text/plain" for k in self.data)

    @property
    def label(self) -> str:
        return f"{self.notebook} cell {self.cell_index} output {self.output_index}" + (
            f" (%{self.magic})" if self.magic else "")


def jaxmagic_outputs(nb, name: str = "") -> list[Output]:
    names, mark = magic_names(), _panel_mark()
    found = []
    for ci, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        magics = cell_magics(cell.source, names)
        for oi, out in enumerate(cell.get("outputs", [])):
            if out.get("output_type") not in ("display_data", "execute_result"):
                continue
            data, md = dict(out.get("data", {})), dict(out.get("metadata", {}))
            html = data.get("text/html", "")
            if isinstance(html, list):
                html = "".join(html)
                data["text/html"] = html
            ours = ("jaxmagic" in md or mark in html or "data:image/svg+xml" in html
                    or bool(magics))
            if ours:
                found.append(Output(name, ci, cell.get("id", ""), oi,
                                    magics[0] if magics else "", data, md, cell.source))
    return found


def errors(nb) -> list[tuple[int, bool, str]]:
    """(cell index, tagged raises-exception, "Name: message") for each error output."""
    out = []
    for ci, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                out.append((ci, RAISES in tags(cell), f"{o.ename}: {o.evalue}"[:300]))
            elif o.get("output_type") == "stream" and "UsageError:" in o.get("text", ""):
                # IPython prints a magic's UsageError (unknown magic, bad option) to stderr
                # and the cell does not count as failed: we count it.
                line = next(t for t in o.text.splitlines() if "UsageError:" in t)
                out.append((ci, RAISES in tags(cell), line[:300]))
    return out


def execute(src: Path, workdir: Path, timeout: int = 600, allow_errors: bool = True):
    """Run `src` top to bottom in a fresh ipykernel (cwd `workdir`); return (nb, seconds).

    nbclient itself lets cells tagged raises-exception raise; with allow_errors=False any
    other error stops the run with CellExecutionError.
    """
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(src, as_version=4)
    workdir.mkdir(parents=True, exist_ok=True)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            allow_errors=allow_errors,
                            resources={"metadata": {"path": str(workdir)}})
    t0 = time.perf_counter()
    client.execute()
    return nb, time.perf_counter() - t0


class ExecutedNotebooks:
    """Each example executed at most once per session, on first request."""

    def __init__(self, root: Path):
        self.root = root
        self._cache: dict[str, tuple] = {}

    def get(self, src: Path):
        """(executed notebook, path of the executed copy, seconds)."""
        import nbformat

        key = src.name
        if key not in self._cache:
            try:
                nb, secs = execute(src, self.root / "work" / src.stem)
            except Exception as e:  # noqa: BLE001 - kernel died, timeout: same for all tests
                self._cache[key] = e
            else:
                path = self.root / src.name
                nbformat.write(nb, path)
                self._cache[key] = (nb, path, secs)
        got = self._cache[key]
        if isinstance(got, Exception):
            raise RuntimeError(f"{src.name} did not run: {type(got).__name__}: {got}") from got
        return got


def to_html(nb, theme: str) -> str:
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter(theme=theme).from_notebook_node(nb)
    return body


# ---------------------------------------------------------------- Chromium ------------

def chromium_path() -> str | None:
    return shutil.which("chromium")


def need_chromium():
    """Chromium's path; outside CI a missing browser skips, in CI it fails."""
    import pytest

    path = chromium_path()
    if path is None:
        msg = "Debian's chromium is not installed (bash scripts/system-packages.sh)"
        if in_ci():
            pytest.fail(msg + " and CI is set: the browser tests must run in CI")
        pytest.skip(msg)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        if in_ci():
            pytest.fail("playwright is not installed")
        pytest.skip("playwright is not installed")
    return path


def launch(playwright, path: str):
    return playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)


def block_network(context, log: list[str]):
    """No page may reach the network: external requests are answered empty and logged.

    (nbconvert's template asks a CDN for require.js, MathJax and mermaid; jaxmagic's
    outputs must ask for nothing.)
    """
    def handle(route):
        url = route.request.url
        if url.startswith(("file:", "data:", "about:", "blob:", "http://127.0.0.1")):
            route.continue_()
        else:
            log.append(url)
            route.fulfill(status=200, body="", content_type="text/javascript")

    context.route("**/*", handle)


# JS (tests/measure_outputs.js): measure each output given as [cellSelector, outputIndex] or
# [cellSelector, nth match, outputIndex].  Returns a dict per output.
MEASURE_JS = (Path(__file__).parent / "measure_outputs.js").read_text()


def contrast(a, b) -> float:
    def lum(c):
        def f(v):
            v /= 255
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
        return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2])
    x, y = lum(a), lum(b)
    return (max(x, y) + 0.05) / (min(x, y) + 0.05)


def picture_ink(png: bytes) -> dict:
    """How a rendered picture reads: its background (most common colour) and how much of
    it is ink of contrast >= 4.5 against that background (black-on-dark has none)."""
    import io

    from PIL import Image

    im = Image.open(io.BytesIO(png)).convert("RGB")
    colours = im.getcolors(maxcolors=1 << 24)
    total = sum(n for n, _ in colours)
    bg = max(colours)[1]
    strong = sum(n for n, c in colours if contrast(c, bg) >= 4.5)
    drawn = sum(n for n, c in colours if contrast(c, bg) >= 1.05)
    return {"background": bg, "strong": strong, "strong_fraction": strong / total,
            "drawn_fraction": drawn / total, "pixels": total}
