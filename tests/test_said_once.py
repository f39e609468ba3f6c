"""What a %jaxpr output says, it says once: its title (in the picture, not again in the
header above it), each note (two levels that fail alike), and the notes under the picture
(not again above the explorer drawn in the picture's place)."""
import base64
import re

import jax
import jax.numpy as jnp
import pytest
from conftest import run

DEEP = ("def deep(v):\n    for _ in range(30):\n"          # each step one longer: no fold
        "        v = jnp.concatenate([jnp.tanh(v), v[:1] * 2])\n    return v")


def _equations(ip):
    return len(jax.make_jaxpr(ip.user_ns["deep"])(jnp.ones(2)).eqns)


def _html(cap):
    return next(o.data["text/html"] for o in cap.outputs if "text/html" in o.data)


def _outside_pictures(html):
    return re.sub(r'<img [^>]*>', "", html)


def _picture(html):
    b64 = html.split("data:image/svg+xml;base64,")[1].split('"')[0]
    return base64.b64decode(b64).decode()


def test_the_title_is_in_the_picture_not_again_above_it(ip):
    ip.run_cell(DEEP)
    _, cap = run(ip, "%jaxpr deep(jnp.ones(2))")
    html = _html(cap)
    title = f"deep — {_equations(ip)} equations"
    assert title in _picture(html)
    assert title.split(" — ")[1] not in _outside_pictures(html)
    assert "nodes" in _outside_pictures(html)          # the summary stays in the header


def test_without_a_picture_the_header_carries_the_title(ip):
    ip.run_cell(DEEP)
    ip.run_line_magic("config", "JaxMagic.renderer = 'none'")
    try:
        _, cap = run(ip, "%jaxpr deep(jnp.ones(2))")
    finally:
        ip.run_line_magic("config", "JaxMagic.renderer = 'auto'")
    assert f"deep — {_equations(ip)} equations" in _html(cap)


def test_two_levels_past_the_node_budget_are_noted_once(ip):
    ip.run_cell(DEEP)
    ip.run_line_magic("config", "JaxMagic.max_nodes = 20")
    try:
        v = ip.run_line_magic("jaxpr", "-o --depth all deep(jnp.ones(2))")
        _, cap = run(ip, "%jaxpr --depth all deep(jnp.ones(2))")
    finally:
        ip.run_line_magic("config", "JaxMagic.max_nodes = 400")
    budget = [n for n in v.notes if "exceed max_nodes=20" in n]
    assert budget and len(v.notes) == len(set(v.notes)), v.notes
    html = _outside_pictures(_html(cap))
    for note in budget:
        assert html.count(note) == 1, note


def test_the_explorer_does_not_repeat_the_notes_under_the_picture(ip):
    pytest.importorskip("anywidget")
    from jaxmagic.explorer import JaxprExplorer

    ip.run_cell(DEEP)
    ip.run_line_magic("config", "JaxMagic.max_nodes = 20")
    try:
        v = ip.run_line_magic("jaxpr", "-o deep(jnp.ones(2))")
    finally:
        ip.run_line_magic("config", "JaxMagic.max_nodes = 400")
    note = next(n for n in v.notes if "exceed max_nodes=20" in n)
    assert note in v._repr_mimebundle_()["text/html"]
    assert note not in JaxprExplorer(v).status
