"""Cards: static HTML that survives untrusted front ends, escaped user code, plain text."""
from __future__ import annotations

import re

import jaxmagic
from jaxmagic.core.checks import Finding
from jaxmagic.render.cards import Findings, FindingView, card_html


def test_card_parts():
    (f,) = jaxmagic.check_source("import jax.numpy as jnp\nx = jnp.zeros(3)\nx[1] += 2\n")
    bundle = f._repr_mimebundle_()
    html, text = bundle["text/html"], bundle["text/plain"]
    for part in ("JX102", "error", "line 3", "Fix:", "x = x.at[1].add(2)",
                 '<mark style="', ">x[1] += 2</mark>"):
        assert part in html, part
    assert text.splitlines()[0].startswith("JX102 error line 3:")
    assert "^^^^^^^^^" in text and "x = x.at[1].add(2)" in text


def test_html_is_static_and_self_coloured():
    found = jaxmagic.check_source(
        "import jax\n@jax.jit\ndef f(x):\n    print(x)\n    return x[x > 0]\n")
    html = found._repr_mimebundle_()["text/html"]
    assert not re.search(r"<(script|style|svg)\b|var\(--|javascript:|url\(", html, re.I)
    assert html.count('style="') > 10 and "background:#ffffff" in html
    assert "#d97706" in html and "#dc2626" in html      # warning and error stripes


def test_user_code_is_escaped():
    src = ("import jax.numpy as jnp\nx = jnp.zeros(3)\n"
           "x['<script>alert(1)</script>' and 0] = \"&\"\n")
    (f,) = jaxmagic.check_source(src)
    html = card_html(f)
    assert "<script>" not in html and "&lt;script&gt;" in html and "&amp;" in html


def test_finding_view_is_a_finding():
    f = Finding("JX101", "error", 2, "msg `x[0] = 1`", "use `x.at[0].set(1)`", col=1,
                end_col=8, source="x[0] = 1")
    v = FindingView.of(f)
    assert isinstance(v, Finding) and v.to_dict() == f.to_dict()
    assert "<code" in card_html(v)           # backticks become code
    assert v._repr_mimebundle_()["text/plain"].startswith("JX101 error line 2")


def test_runtime_card_says_traceback_follows():
    f = Finding("JX202", "error", 4, "m", "fix", origin="runtime",
                error="TracerBoolConversionError", where="In [3], line 4", source="  if x:")
    html = card_html(f)
    assert "In [3], line 4" in html and "traceback follows" in html
    assert "TracerBoolConversionError" in FindingView.of(f)._repr_mimebundle_()["text/plain"]


def test_empty_findings():
    b = Findings([])._repr_mimebundle_()
    assert "no findings" in b["text/plain"] and "no findings" in b["text/html"]
