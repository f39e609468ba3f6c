"""Graphs of real models at default settings, as a reader sees them.

Executes benchmarks/legibility.ipynb (Flax NNX and Linen, Optax, Equinox, plain JAX
models) in a real kernel, converts it with nbconvert and opens it in Debian's Chromium at
1100 px wide. Per `%jaxpr` graph it prints the smallest text height on screen (font size
in the SVG times the scale the page draws it at), the node count, the cell's time
(tracing and layout included) and the SVG size.

Targets: text ≥ 8 px everywhere, ≤ 2 s per graph, SVG ≤ 1 MB.

    PYTHONPATH=$PWD python benchmarks/bench_legibility.py
"""
import base64
import re
import shutil
import sys
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbconvert import HTMLExporter

HERE = Path(__file__).resolve().parent
WIDTH = 1100
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-dev-shm-usage"]
_IMG = re.compile(r'src="data:image/svg\+xml;base64,([^"]+)"')


def seconds(cell) -> float:
    t = cell.metadata.get("execution", {})
    start, end = t.get("iopub.execute_input"), t.get("shell.execute_reply")
    if not (start and end):
        return float("nan")
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def graphs(nb):
    """(cell index, title, svg bytes or None, error) per %jaxpr cell."""
    title = ""
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            title = cell.source[3:].splitlines()[0]
        if cell.cell_type != "code" or not cell.source.startswith("%jaxpr"):
            continue
        svg, error = None, ""
        for out in cell.outputs:
            html = out.get("data", {}).get("text/html", "")
            m = _IMG.search(html if isinstance(html, str) else "".join(html))
            if m:
                svg = base64.b64decode(m.group(1))
            if out.get("output_type") == "error":
                error = f"{out['ename']}: {out['evalue']}"[:100]
        yield i, title, svg, error, seconds(cell)


def drawn_widths(html: str, count: int) -> list[float]:
    """The on-screen width of each jaxpr picture's content box, in page order."""
    from playwright.sync_api import sync_playwright

    page_file = HERE / "_legibility.html"
    page_file.write_text(html, encoding="utf-8")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
        page = browser.new_page(viewport={"width": WIDTH, "height": 900})
        page.goto(page_file.as_uri(), wait_until="load")
        widths = page.eval_on_selector_all(
            "img[alt^='jaxpr of']",
            "els => els.map(e => { const s = getComputedStyle(e);"
            " return e.getBoundingClientRect().width - parseFloat(s.paddingLeft)"
            " - parseFloat(s.paddingRight); })")
        browser.close()
    page_file.unlink()
    return widths


def main() -> int:
    nb = nbformat.read(HERE / "legibility.ipynb", as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(HERE)}}).execute()
    found = list(graphs(nb))
    html, _ = HTMLExporter(theme="light").from_notebook_node(nb)
    widths = iter(drawn_widths(html, len(found)))
    print(f"{'graph':<36} {'text px':>7} {'nodes':>5} {'time s':>6} {'svg KB':>7} svg→drawn")
    ok = True
    for _, title, svg, error, secs in found:
        if svg is None:
            print(f"{title:<36} {'-':>7} {'-':>5} {secs:>6.2f} {'-':>7}  {error or 'no picture'}")
            ok = False
            continue
        text = svg.decode()
        svg_pt = float(re.search(r'<svg[^>]*\swidth="([\d.]+)pt"', text).group(1))
        fonts = [float(f) for f in re.findall(r'font-size="([\d.]+)"', text)]
        drawn = next(widths)
        px = min(fonts) * drawn / svg_pt
        nodes = text.count('class="node"')
        good = px >= 8 and secs <= 2 and len(svg) <= 1 << 20
        ok &= good
        print(f"{title:<36} {px:>7.1f} {nodes:>5} {secs:>6.2f} {len(svg) / 1024:>7.0f}"
              f" {svg_pt * 4 / 3:>6.0f}→{drawn:.0f}px"
              + ("" if good else "  (misses a target)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
