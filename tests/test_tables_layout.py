"""Where `--memory`'s tables stand, measured in Chromium at a notebook cell's width: under
a tall picture at the cell's full width (beside it they were squeezed into a third of the
width, wrapped row by row), beside a short one."""
import pytest
from conftest import run
from notebook_support import launch, need_chromium

pytestmark = pytest.mark.browser

CELL_PX = 900
MEASURE = """() => {
  const img = document.querySelector('img');
  const table = [...document.querySelectorAll('table')].pop();     // live at the peak
  const panel = img.closest('div[style*="border-radius:6px"]');
  const r = (e) => e.getBoundingClientRect();
  return {img: r(img).toJSON(), table: r(table.parentElement).toJSON(),
          panel: r(panel).toJSON()};
}"""


def _measured(html):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch(p, need_chromium())
        page = browser.new_page(viewport={"width": CELL_PX, "height": 900})
        page.set_content(f'<body style="margin:0;width:{CELL_PX}px">{html}</body>')
        got = page.evaluate(MEASURE)
        browser.close()
    return got


def _memory_html(ip, call):
    r, cap = run(ip, f"%jaxpr --memory {call}")
    assert r.success, r.error_in_exec
    return next(o.data["text/html"] for o in cap.outputs if "text/html" in o.data)


def test_tables_stand_under_a_tall_picture_at_full_width(ip):
    ip.run_cell("def deep(ws, x):\n    for w in ws:\n        x = jnp.tanh(x @ w) + x\n"
                "    return (x ** 2).mean()\n"
                "ws = [jnp.ones((64, 64)) * 0.01 for _ in range(6)]")
    m = _measured(_memory_html(ip, "jax.grad(deep)(ws, jnp.ones((64, 64)))"))
    img, table, panel = m["img"], m["table"], m["panel"]
    assert img["height"] > 480, img
    assert table["top"] >= img["bottom"], m
    assert table["width"] >= 0.9 * (panel["width"] - 24), m


def test_tables_stand_beside_a_short_picture(ip):
    ip.run_cell("def short(x):\n    return jnp.sin(x).sum()")
    m = _measured(_memory_html(ip, "short(jnp.ones((64, 64)))"))
    img, table = m["img"], m["table"]
    assert img["height"] < 480, img
    assert table["left"] >= img["right"], m
