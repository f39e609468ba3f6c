"""Escaping, fuzzed: hostile names through every sink of every magic.

Each payload of tests/hardening/payloads.py becomes a function name (`__name__`,
`__qualname__`, the code object's name), a `jax.named_scope`, an inner jitted function's
name, pytree dict keys (inputs and outputs), a registered pytree dataclass field, a custom
call target, a mesh axis name, argument source text, and an exception message; then
%jaxpr (collapsed and fully expanded), %jit_compare (timed, static-argument card, error
card), %%shardviz and jaxcheck's cards (static and runtime) draw them.

Every text/html output is parsed with html.parser, every SVG picture in it with expat:
no element or attribute jaxmagic does not write itself (so no <script>, no on*=), no
script URL, well-formed SVG with exactly the nodes of the graph (a quote cannot add a
node), both `dot` and the WebAssembly Graphviz still draw the DOT, and the name shows
up in the output as written (escaped once, not dropped or decoded twice). Finally all
outputs together are loaded in headless Chromium (one session), scripts enabled: no
dialog, no script element, no handler, every picture decodes, nothing wider than its cell.
"""
from __future__ import annotations

import re

import pytest
from conftest import run
from hardening import targets
from hardening.payloads import PAYLOADS, ids
from hardening.safety import audit_html, audit_svg, needle, node_count, squeeze

from jaxmagic.render import layout
from jaxmagic.render.text import visible

IDS = ids()
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
CASES = list(zip(PAYLOADS, IDS))
SINKS = ("jaxpr", "jaxpr_expanded", "jaxpr_lowered", "jaxpr_memory", "jaxpr_sharding",
         "jit_compare", "jit_static", "jit_error",
         "jaxpr_error", "runtime_card", "static_card", "shardviz", "shardviz_plan")


def html_outputs(cap) -> list[str]:
    return [o.data["text/html"] for o in cap.outputs if "text/html" in o.data]


def assert_safe(html: str, *expect: str, where: str = "") -> list[bytes]:
    """Audit one text/html output; every `expect` text must be visible in it."""
    problems, text, svgs = audit_html(html)
    assert not problems, f"{where}: {problems}"
    for e in expect:
        assert needle(e) in squeeze(text), f"{where}: {needle(e)!r} not shown"
    return svgs


def assert_safe_svg(svg: bytes, *expect: str, where: str = "") -> object:
    problems, text, root = audit_svg(svg)
    assert not problems, f"{where}: {problems}"
    for e in expect:
        assert needle(e) in squeeze(text), f"{where}: {needle(e)!r} not in the SVG text"
    return root


class Outputs:
    """Each (sink, payload) run once per session, shared by the checks and Chromium."""

    def __init__(self, shell):
        self.ip = shell
        self.cache: dict = {}

    def get(self, sink: str, i: int):
        if (sink, i) not in self.cache:
            self.cache[sink, i] = getattr(self, "_" + sink)(PAYLOADS[i])
        return self.cache[sink, i]

    def _run(self, cell: str, **ns):
        self.ip.user_ns.update(ns)
        return run(self.ip, cell)

    def _jaxpr(self, p, extra="--depth 0 "):    # collapsed: each call one node
        f, d, box = targets.jaxpr_target(p)
        # the callee's source text holds the name too: the title shows it or __name__
        r, cap = self._run(f"%jaxpr {extra}-o fs[{p!r}](d[{p!r}], box)", fs={p: f}, d=d,
                           box=box)
        assert r.success, r.error_in_exec
        view = r.result
        bundle = view._repr_mimebundle_()
        return view, bundle

    def _jaxpr_expanded(self, p):
        return self._jaxpr(p, "--depth all ")

    def _jaxpr_lowered(self, p):          # StableHLO: names in locations and the custom call
        return self._jaxpr(p, "--stage lowered ")

    def _jaxpr_memory(self, p):          # the buffers live at the peak, by input and group
        f, d = targets.memory_target(p)
        r, cap = self._run(f"%jaxpr --memory -o fm[{p!r}](dm[{p!r}])", fm={p: f}, dm=d)
        assert r.success, r.error_in_exec
        return r.result, r.result._repr_mimebundle_()

    def _jaxpr_sharding(self, p):        # collectives: the gathered input, line, group
        f, d = targets.sharding_target(p)
        r, cap = self._run(f"%jaxpr --sharding -o fs[{p!r}](ds[{p!r}])", fs={p: f}, ds=d)
        assert r.success, r.error_in_exec
        return r.result, r.result._repr_mimebundle_()

    def _jit_compare(self, p):
        g, d = targets.impure_target(p)
        r, cap = self._run(f"%jit_compare -n 1 -r 1 g(d[{p!r}])", g=g, d=d)
        assert r.success, r.error_in_exec
        return html_outputs(cap), cap

    def _jit_static(self, p):
        h, d, s = targets.needs_static(p)
        r, cap = self._run(f"%jit_compare h(d[{p!r}], s[{p!r}])", h=h, d=d, s=s)
        assert not r.success
        return html_outputs(cap), cap

    def _jit_error(self, p):
        r, cap = self._run("%jit_compare --no-eager -n 1 -r 1 b(x)", b=targets.boom(p),
                           x=targets.jnp.ones(3))
        assert isinstance(r.error_in_exec, ValueError)
        return html_outputs(cap), cap

    def _jaxpr_error(self, p):
        r, cap = self._run("%jaxpr b(x)", b=targets.boom(p), x=targets.jnp.ones(3))
        assert isinstance(r.error_in_exec, ValueError)
        return html_outputs(cap), cap

    def _runtime_card(self, p):
        r, cap = self._run("jax.jit(b)(x)", b=targets.boom(p), x=targets.jnp.ones(3))
        assert isinstance(r.error_in_exec, ValueError)
        return html_outputs(cap), cap

    def _static_card(self, p):
        r, cap = self._run(f"z = jnp.zeros(3)\nz[0] = len({p!r})\n")
        assert isinstance(r.error_in_exec, TypeError)
        return html_outputs(cap), cap

    def _shardviz_plan(self, p):
        import jax

        key = p

        def step(x):
            return {key: x * 2}

        targets.rename(step, p)
        # (a mesh axis named with a quote or backslash breaks JAX's own compile, so the
        # axis here is plain; %%shardviz and shard_map carry the hostile axis names)
        array = targets.sharded("i")["i"]
        r, cap = self._run(f"%shardviz --plan jf(S[{p!r}])", jf=jax.jit(step),
                           S={p: array})
        assert r.success, r.error_in_exec
        return html_outputs(cap), cap

    def _shardviz(self, p):
        r, cap = self._run("%%shardviz\nS\n", S=targets.sharded(p))
        assert r.success, r.error_in_exec
        return html_outputs(cap), cap


@pytest.fixture(scope="module")
def outputs(shell):
    shell.run_line_magic("jaxcheck", "on")
    mode = shell.InteractiveTB.mode
    shell.run_line_magic("xmode", "Plain")    # tracebacks without source context: 5x faster
    yield Outputs(shell)
    shell.run_line_magic("xmode", mode)


# ---- %jaxpr: every graph sink at once, collapsed and expanded -----------------------------

def graph_needles(p: str) -> list[str]:
    """What the drawn graph must show of `p`: the scope (JAX splits scopes on '/'), the
    inner jit's name, the dict key and dataclass field of the inputs, the output key, the
    custom call target and the mesh axis."""
    return [p.split("/")[0], f"jit: {p}" if p else "jit", f"d[{p!r}][{p!r}]", f"box.{p}",
            f"out[{p!r}]", f"target {p}", f"mesh {p}=8"]


@pytest.mark.parametrize("p", [c[0] for c in CASES], ids=IDS)
@pytest.mark.parametrize("sink", ["jaxpr", "jaxpr_expanded"])
def test_jaxpr_graph(outputs, sink, p):
    view, bundle = outputs.get(sink, PAYLOADS.index(p))
    html = bundle["text/html"]
    (svg,) = assert_safe(html, where=f"{sink} html")
    assert titled(audit_html(html)[1], p), "the title does not name the function"
    assert "image/png" in bundle
    g = view.graph
    expect = graph_needles(p)
    assert_safe_svg(svg, *expect, where=f"{sink} svg")
    assert titled(audit_svg(svg)[1], p), "the graph's title does not name the function"
    # the image keeps no node's group: count them in the drawing it was made from
    drawn = assert_safe_svg(view.svg().encode(), *expect, where=f"{sink} drawing")
    assert node_count(drawn) == (len(g.nodes), len(g.clusters)), "DOT injection added nodes"
    # the same DOT through the other engine (the WebAssembly Graphviz)
    other = "wasm" if view._drawn.renderer == "dot" else "dot"
    if layout.available(other) and sink == "jaxpr_expanded":
        drawing = layout.render(view.dot(), 20, other)
        root = assert_safe_svg(drawing.svg, *expect, where=f"{sink} {other} svg")
        assert node_count(root) == (len(g.nodes), len(g.clusters))
    # the plain-text form keeps the names too (a terminal shows nothing else)
    for e in expect:      # (control characters shown escaped: see the terminal test)
        shown = needle(visible(e))
        assert shown in squeeze(bundle["text/plain"]), f"{shown!r} not in text"
    assert titled(bundle["text/plain"], visible(p), visible(repr(p)))


def titled(text: str, p: str, p_repr: str | None = None) -> bool:
    """The view's title names the function: by its __name__ or by the callee as written
    (`fs['<name>']`)."""
    return needle(p) in squeeze(text) or needle(f"fs[{p_repr or repr(p)}]") in squeeze(text)


@pytest.mark.parametrize("p", [c[0] for c in CASES], ids=IDS)
def test_jaxpr_lowered_text(outputs, p):
    """--stage lowered shows StableHLO, where names sit in locations and the custom call."""
    _, bundle = outputs.get("jaxpr_lowered", PAYLOADS.index(p))
    assert_safe(bundle["text/html"], where="lowered html")
    assert "stablehlo.custom_call" in bundle["text/plain"]


# ---- the other magics ------------------------------------------------------------------

@pytest.mark.parametrize("p", [c[0] for c in CASES], ids=IDS)
def test_memory_view_names(outputs, p):
    """--memory's table names the input live at the peak, and its chart is clean SVG."""
    view, bundle = outputs.get("jaxpr_memory", PAYLOADS.index(p))
    assert view.memory is not None, view.notes
    svgs = assert_safe(bundle["text/html"], f"dm[{p!r}][{p!r}]", where="--memory html")
    assert len(svgs) == 2          # the graph and the curve
    for svg in svgs:
        assert_safe_svg(svg, where="--memory svg")
    assert needle(visible(f"dm[{p!r}][{p!r}]")) in squeeze(view.memory.text())


@pytest.mark.parametrize("p", [c[0] for c in CASES], ids=IDS)
def test_sharding_collectives_names(outputs, p):
    """--sharding's table and graph name the gathered input, escaped for each."""
    view, bundle = outputs.get("jaxpr_sharding", PAYLOADS.index(p))
    gathers = [c for c in view.collectives if c.argument is not None]
    assert gathers, view.collectives.text()
    name = f"ds[{p!r}][{p!r}]"
    svgs = assert_safe(bundle["text/html"], name, where="--sharding html")
    for svg in svgs:
        assert_safe_svg(svg, where="--sharding svg")
    assert needle(visible(name)) in squeeze(view.collectives.text())


@pytest.mark.parametrize("p", [c[0] for c in CASES], ids=IDS)
def test_jit_compare_names(outputs, p):
    i = PAYLOADS.index(p)
    (html,), _ = outputs.get("jit_compare", i)
    assert_safe(html, f"g(d[{p!r}])", f"[{p!r}]", where="jit_compare")

    cards, cap = outputs.get("jit_static", i)
    assert len(cards) == 1
    assert_safe(cards[0], f"h(d[{p!r}], s[{p!r}])", where="static-argument card")
    assert "Traceback" not in cap.stdout + cap.stderr


@pytest.mark.parametrize("p", [c[0] for c in CASES], ids=IDS)
@pytest.mark.parametrize("sink", ["jit_error", "jaxpr_error", "runtime_card"])
def test_exception_message_and_function_name(outputs, sink, p):
    """A JAX-traced function named p raising ValueError(p): its card names both."""
    cards, cap = outputs.get(sink, PAYLOADS.index(p))
    assert len(cards) == 1, f"{len(cards)} cards"
    assert_safe(cards[0], p, where=sink)
    assert "ValueError" in cap.stdout       # the user's own traceback is kept


@pytest.mark.parametrize("p", [c[0] for c in CASES], ids=IDS)
def test_checker_cards_quote_the_line(outputs, p):
    cards, _ = outputs.get("static_card", PAYLOADS.index(p))
    assert len(cards) == 1, "the static card and the runtime card are one"
    assert_safe(cards[0], repr(p), where="jaxcheck card")


@pytest.mark.parametrize("p", [c[0] for c in CASES], ids=IDS)
def test_shardviz_axis_and_key(outputs, p):
    (html,), _ = outputs.get("shardviz", PAYLOADS.index(p))
    assert_safe(html, f"[{p!r}]", f"split over {p}", where="shardviz")
    (html,), _ = outputs.get("shardviz_plan", PAYLOADS.index(p))     # source text, out key
    assert_safe(html, f"S[{p!r}]", f"[{p!r}]", where="shardviz --plan")


@pytest.mark.parametrize("p", [c[0] for c in CASES], ids=IDS)
def test_text_plain_cannot_drive_a_terminal(outputs, p):
    """text/plain is what terminal IPython prints: a name holding ESC, BEL or CR must not
    recolour, beep or overwrite the user's terminal; it is shown escaped (\\x1b)."""
    i = PAYLOADS.index(p)
    for sink in SINKS:
        got = outputs.get(sink, i)
        if sink in ("jaxpr", "jaxpr_expanded", "jaxpr_lowered", "jaxpr_memory",
                    "jaxpr_sharding"):
            texts = [got[1]["text/plain"]]
        else:
            texts = [o.data.get("text/plain", "") for o in got[1].outputs]
        for text in texts:
            bad = sorted({f"{ord(c):#04x}" for c in text if CONTROL.match(c)})
            assert not bad, f"{sink}: control characters {bad} in text/plain"


# ---- all of it, in a browser -------------------------------------------------------------

PAGE_WIDTH = 900

CHECK_JS = r"""
() => {
  const bad = [];
  const forbidden = 'script,iframe,object,embed,base,meta,link,style,form,svg,math,a[href]';
  for (const el of document.querySelectorAll(forbidden)) bad.push('element ' + el.tagName);
  for (const el of document.querySelectorAll('*'))
    for (const a of el.attributes)
      if (a.name.startsWith('on')) bad.push(el.tagName + ' ' + a.name);
  for (const img of document.images)
    if (!img.complete || img.naturalWidth === 0) bad.push('picture did not decode: ' +
        img.closest('[data-case]').dataset.case);
  for (const box of document.querySelectorAll('[data-case]'))
    if (box.scrollWidth > box.clientWidth + 1)
      bad.push('wider than its cell: ' + box.dataset.case + ' ' + box.scrollWidth);
  return {bad, outputs: document.querySelectorAll('[data-case]').length,
          images: document.images.length};
}
"""


@pytest.mark.browser
def test_all_outputs_in_chromium(outputs):
    from notebook_support import launch, need_chromium

    path = need_chromium()
    parts = []
    for i, tag in enumerate(IDS):
        for sink in SINKS:
            got = outputs.get(sink, i)
            htmls = [got[1]["text/html"]] if sink.startswith("jaxpr") and \
                not sink.endswith("error") else got[0]
            for k, h in enumerate(htmls):
                parts.append(f'<div data-case="{sink}/{tag}/{k}" style="width:{PAGE_WIDTH}px;'
                             f'overflow:hidden;margin:4px 0">{h}</div>')
    page_html = ("<!doctype html><html><body>"
                 + "".join(parts) + "</body></html>")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = launch(pw, path)
        try:
            ctx = browser.new_context(java_script_enabled=True,
                                      viewport={"width": PAGE_WIDTH + 40, "height": 800})
            requests, dialogs, errors = [], [], []
            ctx.route("**/*", lambda route: (requests.append(route.request.url),
                                             route.abort()))
            page = ctx.new_page()
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.set_content(page_html, wait_until="load")
            result = page.evaluate(CHECK_JS)
        finally:
            browser.close()
    assert result["outputs"] == len(parts)
    assert result["images"] >= 2 * len(IDS)
    assert not result["bad"], result["bad"][:20]
    assert not dialogs, dialogs          # alert() from any payload opens one
    assert not requests, requests[:5]
    assert not errors, errors[:5]
