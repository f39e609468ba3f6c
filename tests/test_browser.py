"""The executed examples as nbconvert HTML (light and dark theme) in Debian's headless
Chromium, with JavaScript on and off: every jaxmagic output visible, sized, inside its
cell, readable (contrast of computed colours for text, of rendered pixels for pictures),
and the page free of console errors and network requests the template itself doesn't make.

Runs wherever `chromium` is on PATH; with CI set, a missing browser fails instead of skipping.
"""
from pathlib import Path

import nbformat
import pytest
from notebook_support import (
    MEASURE_JS,
    block_network,
    example_notebooks,
    jaxmagic_outputs,
    launch,
    need_chromium,
    picture_ink,
    to_html,
)

NOTEBOOKS = example_notebooks()
IDS = [p.stem for p in NOTEBOOKS]
VIEWPORT = {"width": 1000, "height": 800}
MIN_CONTRAST, MIN_CONTRAST_LARGE = 4.5, 3.0   # WCAG AA
# Pixels of a picture that must stand out (>= 4.5:1) from its background: a share, and a
# count (a big sparse graph has little ink; black on a dark page has none at all).
MIN_INK, MIN_INK_PIXELS = 0.0005, 100

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def browser():
    path = need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch(p, path)
        yield b
        b.close()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("html")
    cache = {}

    def page_file(nb, name, theme):
        if (name, theme) not in cache:
            f = root / f"{name}.{theme}.html"
            f.write_text(to_html(nb, theme), encoding="utf-8")
            cache[name, theme] = f
        return cache[name, theme]
    return page_file


def open_page(browser, path: Path, js: bool):
    """(context, page, console errors, external requests) for a local HTML file."""
    ctx = browser.new_context(java_script_enabled=js, viewport=VIEWPORT)
    requests, console = [], []
    block_network(ctx, requests)
    page = ctx.new_page()
    page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    page.goto(path.as_uri(), wait_until="load")
    page.wait_for_timeout(200)
    return ctx, page, console, requests


@pytest.fixture(scope="module")
def baseline(browser, pages):
    """Console errors and requests of nbconvert's own template (an empty notebook)."""
    got = {}

    def of(theme, js):
        if (theme, js) not in got:
            nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])
            ctx, _, console, requests = open_page(browser, pages(nb, "_empty", theme), js)
            ctx.close()
            got[theme, js] = (set(console), set(requests))
        return got[theme, js]
    return of


def check_output(page, out, measured, theme) -> list[str]:
    where = out.label
    m = measured
    if not m["found"]:
        return [f"{where}: {m['why']}"]
    bad = []
    if not m["visible"] or m["width"] < 1 or m["height"] < 1:
        bad.append(f"{where}: not visible ({m['width']:.0f}x{m['height']:.0f})")
    if m["maxRight"] > m["cellRight"] + 1:
        bad.append(f"{where}: {m['maxRight'] - m['cellRight']:.0f}px wider than its cell")
    for c in m["clipped"]:
        bad.append(f"{where}: clipped, wider than its cell: {c}")
    for k, im in enumerate(m["imgs"]):
        if not im["complete"] or im["nw"] == 0:
            bad.append(f"{where}: picture {k} ({im['src']}…) did not load")
        elif im["w"] < 20 or im["h"] < 20:
            bad.append(f"{where}: picture {k} drawn {im['w']:.0f}x{im['h']:.0f}px")
        elif im["right"] > m["cellRight"] + 1:
            bad.append(f"{where}: picture {k} sticks out of the cell")
        else:
            shot = (page.locator(f'[id="cell-id={out.cell_id}"] .jp-OutputArea-child')
                    .nth(out.output_index).locator("img").nth(k).screenshot())
            ink = picture_ink(shot)
            if ink["strong_fraction"] < MIN_INK or ink["strong"] < MIN_INK_PIXELS:
                bad.append(f"{where}: picture {k} unreadable on {theme}: only "
                           f"{ink['strong_fraction']:.2%} of it contrasts >= 4.5:1 with its "
                           f"background rgb{ink['background']}")
    if out.is_picture and not any(im["w"] >= 20 and im["nw"] for im in m["imgs"]):
        bad.append(f"{where}: a graph output shows no picture ({len(m['imgs'])} img, "
                   f"{m['svgs']} svg); shown: {m['textContent'][:80]!r}")
    for t in m["text"]:
        need = MIN_CONTRAST_LARGE if t["large"] else MIN_CONTRAST
        if t["ratio"] < need:
            bad.append(f"{where}: text {t['text']!r} contrast {t['ratio']:.2f} < {need} on "
                       f"{theme} ({t['fg']} on {t['bg']})")
    return bad


@pytest.mark.parametrize("js", [True, False], ids=["js", "nojs"])
@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("src", NOTEBOOKS, ids=IDS)
def test_outputs_render(src, theme, js, executed_notebooks, browser, pages, baseline, tmp_path):
    nb, _, _ = executed_notebooks.get(src)
    outs = [o for o in jaxmagic_outputs(nb, src.stem) if o.rich]
    if not outs:
        pytest.skip("no jaxmagic output in this notebook")
    ctx, page, console, requests = open_page(browser, pages(nb, src.stem, theme), js)
    try:
        measured = page.evaluate(MEASURE_JS, [[f'[id="cell-id={o.cell_id}"]', o.output_index]
                                              for o in outs])
        problems = []
        for out, m in zip(outs, measured):
            problems += check_output(page, out, m, theme)
        base_console, base_requests = baseline(theme, js)
        problems += [f"console error: {e}" for e in console if e not in base_console]
        problems += [f"network request: {u}" for u in requests if u not in base_requests]
        if problems:
            shot = tmp_path / f"{src.stem}.{theme}.{'js' if js else 'nojs'}.png"
            page.screenshot(path=str(shot), full_page=True)
            problems.append(f"(page screenshot: {shot})")
        assert not problems, "\n".join(problems)
    finally:
        ctx.close()


def _svg_uri(svg: str) -> str:
    import base64
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()


def test_checks_catch_what_they_claim(browser, pages):
    """The page checks above, shown failing on outputs built to be wrong (dark theme, no JS):
    dark ink on the theme's dark background, a transparent black-on-nothing graph, a picture
    wider than the cell, a broken picture, and a graph shown as text."""
    v4 = nbformat.v4
    black_graph = ('<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100">'
                   '<ellipse cx="100" cy="50" rx="80" ry="30" fill="none" stroke="#000" '
                   'stroke-width="3"/><text x="70" y="55" font-size="16">node</text></svg>')
    white_graph = black_graph.replace('height="100">', 'height="100"><rect width="200" '
                                      'height="100" fill="#fff"/>')
    bundles = {
        "dark ink": {"text/html": '<div style="color:#222">dark ink on the theme</div>'},
        "black graph": {"text/html": f'<img src="{_svg_uri(black_graph)}">'},
        "wide": {"text/html": '<div style="width:3000px;background:#fff;color:#000">wide</div>'},
        "broken": {"text/html": '<img src="data:image/png;base64,AAAA" style="width:50px">'},
        "as text": {"text/plain": "a graph", "image/svg+xml": white_graph},
        "good": {"text/html": f'<div style="background:#fff;color:#111;padding:4px">fine'
                              f'<img src="{_svg_uri(white_graph)}" style="max-width:100%">'
                              '</div>'},
    }
    cells = []
    for i, (name, data) in enumerate(bundles.items()):
        data = {"text/plain": name, **data}
        if name == "as text":
            data = {"text/plain": "a graph", "image/png": "AAAA"}
        c = v4.new_code_cell(f"show({name!r})", id=f"t{i}", execution_count=i + 1)
        c.outputs = [v4.new_output("display_data", data=data, metadata={"jaxmagic": {}})]
        cells.append(c)
    nb = v4.new_notebook(cells=cells)
    outs = {o.data["text/plain"]: o for o in jaxmagic_outputs(nb, "selftest")}
    ctx, page, _, _ = open_page(browser, pages(nb, "selftest", "dark"), js=False)
    try:
        ordered = list(outs.values())
        measured = page.evaluate(MEASURE_JS, [[f'[id="cell-id={o.cell_id}"]', o.output_index]
                                              for o in ordered])
        found = {o.data["text/plain"]: " | ".join(check_output(page, o, m, "dark"))
                 for o, m in zip(ordered, measured)}
    finally:
        ctx.close()
    assert "contrast" in found["dark ink"], found
    assert "unreadable on dark" in found["black graph"], found
    assert "wider than its cell" in found["wide"] or "sticks out" in found["wide"], found
    assert "did not load" in found["broken"], found
    assert "shows no picture" in found["a graph"], found
    assert found["good"] == "", found
