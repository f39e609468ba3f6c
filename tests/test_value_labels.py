"""`--values`' edge labels, measured in Chromium on the drawn SVG: each value summarised
once (a node's value on each of its edges, one label over the other), and no label over
another, over a box, or across a group's border (a NaN's label stood across a scan's)."""
import pytest
from notebook_support import launch, need_chromium

import jaxmagic

pytestmark = pytest.mark.browser

# per edge label: its box (the union of its lines); per node and group: its shape's box
MEASURE = """() => {
  const box = (r) => ({l: r.left, t: r.top, r: r.right, b: r.bottom});
  const union = (rs) => rs.reduce((a, r) => ({l: Math.min(a.l, r.l), t: Math.min(a.t, r.t),
      r: Math.max(a.r, r.r), b: Math.max(a.b, r.b)}));
  const labels = [...document.querySelectorAll('g.edge')].map(g =>
      [g, [...g.querySelectorAll('text')]]).filter(([, ts]) => ts.length).map(([g, ts]) => ({
        src: g.querySelector('title').textContent.split('->')[0],
        text: ts.map(t => t.textContent).join(' / '),
        box: union(ts.map(t => box(t.getBoundingClientRect())))}));
  const shapes = (cls) => [...document.querySelectorAll('g.' + cls)].map(g => ({
      text: [...g.querySelectorAll('text')].map(t => t.textContent).join(' / '),
      box: box(g.querySelector('polygon, ellipse, path').getBoundingClientRect())}));
  return {labels, nodes: shapes('node'), clusters: shapes('cluster')};
}"""


def _measured(svg):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch(p, need_chromium())
        page = browser.new_page()
        page.set_content(f"<body style='margin:0'>{svg}</body>")
        got = page.evaluate(MEASURE)
        browser.close()
    return got


def _overlap(a, b, slack=1.0):
    return (min(a["r"], b["r"]) - max(a["l"], b["l"]) > slack
            and min(a["b"], b["b"]) - max(a["t"], b["t"]) > slack)


def _inside(a, b):
    return a["l"] >= b["l"] and a["r"] <= b["r"] and a["t"] >= b["t"] and a["b"] <= b["b"]


def _problems(svg):
    m = _measured(svg)
    labels, out = m["labels"], []
    for i, a in enumerate(labels):
        out += [f"{a['text']!r} over {b['text']!r}" for b in labels[i + 1:]
                if _overlap(a["box"], b["box"])]
        out += [f"{a['text']!r} over box {n['text']!r}" for n in m["nodes"]
                if _overlap(a["box"], n["box"])]
        # (a label of an edge inside a group: Graphviz 2.43 lets it overflow the group's
        # side, Graphviz 16 keeps it inside)
        out += [f"{a['text']!r} across group {c['text']!r}" for c in m["clusters"]
                if "NaN" in a["text"] and _overlap(a["box"], c["box"])
                and not _inside(a["box"], c["box"])]
    said = [(a["src"], a["text"].split(" / ")[-1]) for a in labels if "μ" in a["text"]]
    out += [f"{s!r} of {src} said {said.count((src, s))} times" for src, s in set(said)
            if said.count((src, s)) > 1]
    return out


def test_a_where_gradients_labels_stand_apart():
    import jax
    import jax.numpy as jnp

    def loss(x):
        y = jnp.where(x > 0, jnp.sqrt(x), 0.)
        return y.sum()

    svg = jaxmagic.values(jax.grad(loss), jnp.array([0., 1., 4.])).svg()
    assert "NaN" in svg
    assert not _problems(svg), _problems(svg)


def test_a_scans_nan_label_stands_outside_its_border():
    import jax
    import jax.numpy as jnp

    def countdown(c0, xs):
        def body(c, x):
            c = c - x
            return c, jnp.sqrt(c)
        return jax.lax.scan(body, c0, xs)

    svg = jaxmagic.values(countdown, jnp.float32(37.5), jnp.ones(60)).svg()
    assert "NaN 23" in svg
    assert not _problems(svg), _problems(svg)
