"""The %jaxpr explorer's kernel side, in a real InteractiveShell on real JAX: a click on a
group lays out a view with more nodes, a search opens the groups holding its matches, and
"copy as magic" is a `%jaxpr` line that draws the explored view statically.

(The page side runs in the real JupyterLab: tests/test_jupyterlab_explorer.py.)
"""
import re
from collections import Counter

import jax
import pytest

pytest.importorskip("anywidget")

from jaxmagic.explorer import JaxprExplorer  # noqa: E402
from jaxmagic.frontend import widget_frontend  # noqa: E402

WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def grad_view(ip, transformer):
    params, x = transformer.make(4, d=16, t=8)
    ip.push({"params": params, "x": x, "model": transformer.model})
    return ip.run_line_magic("jaxpr", "-o jax.grad(model)(params, x)")


def click(w, key):
    w._on_message(w, {"type": "toggle", "key": key}, [])


def closed_key(w, title):
    """The key of the closed group `title`, closed first where the view opened it."""
    def key(state):
        return next(k for k, r in w.table.items() if r["click"] == state
                    and r["title"] == title)
    if any(r["click"] == "close" and r["title"] == title for r in w.table.values()):
        click(w, key("close"))
    return key("open")


def search(w, query):
    w._on_message(w, {"type": "search", "query": query}, [])


def titles(graph) -> Counter:
    return Counter((n.kind, n.title) for n in graph.nodes.values())


def test_clicking_a_folded_series_draws_its_inside(grad_view):
    w = JaxprExplorer(grad_view, "%jaxpr {options} jax.grad(model)(params, x)")
    closed = [k for k, row in w.table.items() if row["click"] == "open"]
    assert closed, f"no group to open in {sorted(r['title'] for r in w.table.values())}"
    series = next((k for k in closed if "×" in w.table[k]["title"]), closed[0])
    name = w.table[series]["title"]
    before = len(w.table)
    click(w, series)
    assert len(w.table) > before, w.status
    assert w.status == f"opened {name}"
    assert w.magic.startswith("%jaxpr --depth ")
    opened = [r for r in w.table.values() if r["click"] == "close" and r["title"] == name]
    assert opened, f"{name!r} is not drawn open"
    assert "<svg" in w.svg and name.split(" ")[0] in w.svg


def test_a_click_on_a_replaced_picture_is_ignored(grad_view):
    w = JaxprExplorer(grad_view)
    closed = [k for k, row in w.table.items() if row["click"] == "open"]
    seen = w.answered
    w._on_message(w, {"type": "toggle", "key": closed[0], "seen": seen}, [])
    table = dict(w.table)
    w._on_message(w, {"type": "toggle", "key": closed[-1], "seen": seen}, [])
    assert w.table == table and w.answered == seen + 1


def test_clicking_an_open_group_closes_it(grad_view):
    w = JaxprExplorer(grad_view)
    open_ = [k for k, row in w.table.items() if row["click"] == "close"]
    assert open_
    inner = max(open_, key=lambda k: w.exploration.folded.clusters[int(k[8:])].level)
    name = w.table[inner]["title"]
    before = len(w.table)
    click(w, inner)
    assert w.status == f"closed {name}"
    assert len(w.table) < before
    assert any(r["click"] == "open" and r["title"] == name for r in w.table.values())


def test_search_opens_the_group_holding_a_match(grad_view):
    w = JaxprExplorer(grad_view.configure(depth=0))     # groups closed, on any JAX
    x = w.exploration
    drawn = {n.cluster for n in x.graph.nodes.values()} | set(x.opened)
    # an equation inside a group the picture shows closed, named by its line
    # (of a line with few matches: a search opens the groups of its first 20 matches)
    lines = Counter(n.where for n in x.folded.nodes.values() if n.kind == "op")
    hidden = min((n for n in x.folded.nodes.values()
                  if n.kind == "op" and n.where and n.cluster not in drawn),
                 key=lambda n: (lines[n.where], n.eqns[:1]))
    search(w, hidden.where)
    assert hidden.cluster in x.opened, w.status
    assert re.match(r"\d+ match", w.status), w.status
    assert w.highlight
    for key in w.highlight:
        assert w.table[key]["where"].split(" (")[0] == hidden.where or \
            w.table[key]["equations"] > 1


def test_search_by_primitive_and_no_match(grad_view):
    w = JaxprExplorer(grad_view)
    search(w, "tanh")
    rows = [w.table[k] for k in w.highlight]
    assert any(r["kind"] == "tanh" for r in rows)
    assert all("tanh" in r["kind"] + r["title"] + r["source"] or r["equations"] > 1
               for r in rows)
    search(w, "no_such_primitive_here")
    assert w.highlight == [] and w.status == "no match for 'no_such_primitive_here'"


def test_an_empty_search_closes_the_groups_it_opened(grad_view):
    w = JaxprExplorer(grad_view.configure(depth=0))     # groups closed, on any JAX
    x = w.exploration
    first, magic, opened = set(w.table), w.magic, set(x.opened)
    # of a line with few matches: a search opens the groups of its first 20 matches
    lines = Counter(n.where for n in x.folded.nodes.values() if n.kind == "op")
    hidden = min((n for n in x.folded.nodes.values()
                  if n.kind == "op" and n.where and n.cluster not in x.opened),
                 key=lambda n: (lines[n.where], n.eqns[:1]))
    search(w, hidden.where)
    assert hidden.cluster in x.opened and len(w.table) > len(first), w.status
    search(w, "")
    assert x.opened == opened and set(w.table) == first and w.magic == magic, w.status
    assert w.highlight == [] and "closed" in w.status


def test_reset_goes_back_to_the_first_view(grad_view):
    w = JaxprExplorer(grad_view)
    first, magic = set(w.table), w.magic
    click(w, next(k for k, row in w.table.items() if row["click"] == "open"))
    search(w, "tanh")
    assert set(w.table) != first
    w._on_message(w, {"type": "reset"}, [])
    assert set(w.table) == first and w.magic == magic and w.highlight == []
    assert w.status == "back to the first view"


def test_copied_magic_draws_the_explored_view(ip, grad_view):
    # from `--depth 0`: the automatic depth may already open every group of a name its own
    w = JaxprExplorer(grad_view.configure(depth=0), "%jaxpr {options} jax.grad(model)(params, x)")
    while lines := [k for k, row in w.table.items() if row["click"] == "lines"]:
        click(w, lines[0])      # a line group: its equations, one node each
    everything = [c.title.lower() for c in w.exploration.folded.clusters.values()]
    unique = next(k for k, row in w.table.items() if row["click"] == "open" and sum(
        row["title"].lower() in t for t in everything) == 1)   # `--expand` names it alone
    click(w, unique)
    assert w.caveat == "", w.caveat
    line = w.magic
    assert line.startswith("%jaxpr --depth ") and line.endswith(" jax.grad(model)(params, x)")
    static = ip.run_line_magic("jaxpr", "-o " + line[len("%jaxpr "):])
    assert titles(static.graph) == titles(w.exploration.graph), line


def test_copied_magic_opens_only_the_group_of_a_shared_name(ip, grad_view):
    """`--expand NAME` opens every group whose name holds NAME: where the explored view
    opened one of several groups of that name, the line names it by its exact title or
    path."""
    from jaxmagic.render.jaxpr import typed

    w = JaxprExplorer(grad_view, "%jaxpr {options} jax.grad(model)(params, x)")
    x = w.exploration
    x.by_line.clear()
    w._on_message(w, {"type": "search", "query": ""}, [])     # redraw without line groups
    everything = [c.title.lower() for c in x.folded.clusters.values()]
    key, twin = next((k, row["title"]) for k, row in w.table.items() if row["click"] ==
                     "open" and sum(row["title"].lower() in t for t in everything) > 1)
    click(w, key)
    named = re.escape(typed(twin))      # by its exact title or path
    assert w.caveat == "" and re.search(f"'=(.*/)?{named}'", w.magic), (w.magic, w.caveat)
    static = ip.run_line_magic("jaxpr", "-o " + w.magic[len("%jaxpr "):])
    assert titles(static.graph) == titles(x.graph), w.magic
    # typed by a person, the name still opens every group that holds it
    typed = ip.run_line_magic("jaxpr", f"-o --depth 0 --expand '{twin}' "
                              "jax.grad(model)(params, x)")
    holding = lambda v: sum(twin.lower() in c.title.lower()  # noqa: E731
                            for c in v.graph.clusters.values())
    assert holding(typed) > holding(static)


def test_copied_magic_is_typed_as_people_type_it(ip, grad_view):
    """The copied line names groups as a person types them (`block*4`, `backward`: no
    `×`, no `·`), by the shortest name that names each alone, and redraws the view;
    those names, and the drawn ones, are what `--expand` and `--lines` take."""
    w = JaxprExplorer(grad_view, "%jaxpr {options} jax.grad(model)(params, x)")
    for title in ("block #0 · backward", "jit: _std"):
        click(w, closed_key(w, title))
        assert w.status == f"opened {title}"
    line = w.magic
    # a fold as typed (`block*4`; on JAX 0.12.1, whose softmax is a call of its own,
    # `block*3 backward`)
    assert w.caveat == "" and re.search(r"--lines 'block\*\d( backward)?'", line) \
        and "block #0 backward" in line, line
    assert line.isascii(), line
    static = ip.run_line_magic("jaxpr", "-o " + line[len("%jaxpr "):])
    assert titles(static.graph) == titles(w.exploration.graph), line
    closed = titles(grad_view.configure(depth=0).graph)
    for typed, drawn in [("'block*4'", "'block ×4'"),
                         ("'=model backward/block*3 backward'",
                          "'=model · backward/block ×3 · backward'")]:
        views = [ip.run_line_magic("jaxpr", f"-o --depth 0 --expand {name} jax.grad(model)"
                                   "(params, x)") for name in (typed, drawn)]
        assert titles(views[0].graph) == titles(views[1].graph) != closed, typed


def test_copied_magic_draws_the_first_view(ip, grad_view):
    """Nothing clicked, groups shown by line and all: the copied line draws it again."""
    w = JaxprExplorer(grad_view, "%jaxpr {options} jax.grad(model)(params, x)")
    assert w.caveat == "", w.caveat
    static = ip.run_line_magic("jaxpr", "-o " + w.magic[len("%jaxpr "):])
    assert titles(static.graph) == titles(w.exploration.graph), w.magic
    assert titles(static.graph) == titles(grad_view.graph)


@pytest.mark.parametrize("flag, unit", [("--memory", " at peak"), ("--cost", "flop")])
def test_hover_repeats_the_figures_on_the_box(ip, grad_view, flag, unit):
    """What an overlay writes on a box (bytes at the peak, flops) is in its hover too."""
    import xml.etree.ElementTree as ET

    view = ip.run_line_magic("jaxpr", f"-o {flag} jax.grad(model)(params, x)")
    w = JaxprExplorer(view)
    ns = {"s": "http://www.w3.org/2000/svg"}
    said = 0
    for g in ET.fromstring(w.svg).iterfind(".//s:g", ns):
        title = g.find("s:title", ns)
        if g.get("class") not in ("node", "cluster") or title is None:
            continue
        for text in g.iterfind(".//s:text", ns):
            if unit in (text.text or ""):
                assert text.text in w.table[title.text]["figures"], (title.text, text.text)
                said += 1
    assert said, w.svg


def test_the_picture_is_its_own_output_before_the_widget(ip, grad_view):
    """Two outputs: exactly the static picture (its `<img>` carrying the explorer's token,
    by which a reloaded page finds it), then the widget with no text of its own."""
    from IPython.utils.capture import capture_output

    from jaxmagic.explorer import show

    w = JaxprExplorer(grad_view)
    with capture_output() as cap:
        show(w)
    picture, widget = cap.outputs
    own = grad_view._repr_mimebundle_()
    assert re.fullmatch("[0-9a-f]{32}", w.picture)
    assert picture.data == {**own, "text/html": own["text/html"].replace(
        "<img ", f'<img data-jaxmagic-picture="{w.picture}" ', 1)}
    assert own["text/html"].count("<img ") == 1
    assert "data:image/svg+xml;base64," in picture.data["text/html"]
    assert widget.data == {WIDGET: widget.data[WIDGET], "text/plain": ""}
    assert widget.data[WIDGET]["model_id"] == w.model_id


def test_drawn_in_the_picture_the_widget_output_is_blanked(ip, grad_view):
    """The page says it moved into the picture's output: the kernel replaces the widget's
    output by one frontends draw as nothing, so a saved notebook reopens on the picture."""
    from IPython.utils.capture import capture_output

    from jaxmagic.explorer import show

    w = JaxprExplorer(grad_view)
    with capture_output() as cap:
        show(w)
        w._on_message(w, {"type": "moved"}, [])
    picture, widget, blank = cap.outputs
    assert not picture.transient and not picture.update and not widget.update
    assert blank.update and blank.transient == widget.transient == {
        "display_id": w.handle.display_id}
    assert blank.data == {WIDGET: {"version_major": 2, "version_minor": 1, "model_id": ""},
                          "text/plain": ""}
    assert w.moved                       # a reloaded page draws it in the picture again
    assert w.svg and w.answered == 0     # nothing else changed


def test_user_strings_reach_the_table_as_text(ip):
    ip.run_cell("evil = {'<img src=x onerror=alert(1)>': jnp.ones(3)}\n"
                "def f(d):\n    return jnp.sin(d['<img src=x onerror=alert(1)>'])")
    w = JaxprExplorer(ip.run_line_magic("jaxpr", "-o f(evil)"))
    assert any("<img src=x onerror=alert(1)>" in r["title"] for r in w.table.values())
    assert "<img src=x" not in w.svg and "&lt;img src=x onerror=alert(1)&gt;" in w.svg


def test_the_shell_keeps_the_static_picture(ip, grad_view):
    """No kernel (a plain or terminal shell): no widget, whatever the setting."""
    from conftest import run

    assert widget_frontend(ip) is None
    _, cap = run(ip, "%jaxpr jax.grad(model)(params, x)")
    assert [sorted(o.data) for o in cap.outputs] == [["image/png", "text/html", "text/plain"]]


def test_help_names_the_explorer_setting(ip):
    from jaxmagic.magics import JaxMagic

    assert "widgets" in JaxMagic.class_traits()["explorer"].help


def test_copy_keeps_the_other_options(ip, grad_view):
    """The line keeps what else the user asked for; a quoted name is one value."""
    from jaxmagic.options import parse_options, static_command

    magic = ip.magics_manager.registry["JaxMagic"]
    args, expr = parse_options(magic.jaxpr, "--rankdir LR --expand 'block ×4' "
                                            "--cost jax.grad(model)(params, x)")
    assert args.expand == ["block ×4"] and expr == "jax.grad(model)(params, x)"
    assert static_command(args, expr, None) == \
        "%jaxpr {options} --rankdir LR --cost jax.grad(model)(params, x)"
    # a cell's: the line form of its final call, which the cell has defined once run
    assert static_command(args, expr, "y = x\n" + expr) == \
        "%jaxpr {options} --rankdir LR --cost jax.grad(model)(params, x)"
    assert static_command(args, "f(\n  x)", "y = x\nf(\n  x)") == \
        "%%jaxpr {options} --rankdir LR --cost\ny = x\nf(\n  x)"
    view = ip.run_line_magic("jaxpr", "-o --expand 'block ×4' jax.grad(model)(params, x)")
    assert any(c.title == "block ×4" for c in view.graph.clusters.values())
    args, expr = parse_options(magic.jaxpr, "--sharding --memory f(x)")
    assert static_command(args, expr, None) == "%jaxpr {options} --sharding --memory f(x)"


def test_group_by_line_has_nothing_to_click_open(ip, grad_view):
    view = ip.run_line_magic("jaxpr", "-o --group line jax.grad(model)(params, x)")
    w = JaxprExplorer(view)
    assert not any(r["click"] == "lines" for r in w.table.values())


@pytest.mark.slow
def test_offered_in_a_kernel_a_notebook_server_started(tmp_path):
    """A real kernel: started for a Jupyter server session (JupyterLab, Notebook 7) it
    shows the static picture and the explorer after it, and `%config JaxMagic.explorer
    = False` the static picture alone; started by nbclient (papermill, CI), the static
    picture alone, as nbconvert must draw it."""
    import os
    from pathlib import Path

    import nbformat
    from nbclient import NotebookClient

    root = Path(__file__).parents[1]
    cells = ["%load_ext jaxmagic\nimport jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x)",
             "%jaxpr f(jnp.ones(3))",
             "%config JaxMagic.explorer = False\n%jaxpr f(jnp.ones(3))"]
    shown = {}
    for name, extra in [("session", {"JPY_SESSION_NAME": str(tmp_path / "x.ipynb")}),
                        ("nbclient", {})]:
        env = {k: v for k, v in os.environ.items() if k != "JPY_SESSION_NAME"}
        env.update(extra, PYTHONPATH=os.pathsep.join([str(root), env.get("PYTHONPATH", "")]))
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
        NotebookClient(nb, timeout=120, kernel_name="python3").execute(env=env)
        shown[name] = [sorted(o["data"]) for c in nb.cells[1:] for o in c.outputs
                       if o["output_type"] == "display_data"]
    static = ["image/png", "text/html", "text/plain"]
    assert shown["session"] == [static, sorted(["text/plain", WIDGET]), static]
    assert shown["nbclient"] == [static, static]


def test_hover_names_a_location_the_boxes_leave_off(ip):
    """Every box of a level on one line drops its location from the picture; hovering
    one still says where it is."""
    ip.run_cell("def loss(x):\n    return jnp.sum(jnp.sin(x) * jnp.cos(x) + 1.0)")
    view = ip.run_line_magic("jaxpr", "-o loss(jnp.ones(4))")
    w = JaxprExplorer(view)
    ops = [r for r in w.table.values() if r["kind"] in ("sin", "cos", "mul", "add")]
    assert ops and all(re.fullmatch(r"loss:2 \(In \[\d+\]\)", r["where"]) for r in ops), ops
    assert not any(n.where for n in view.graph.nodes.values() if n.kind == "op")


LAYERS = '''class LayerNorm:
    def __call__(self, x):
        return x - x.mean(-1, keepdims=True)

class Attention:
    def __call__(self, x):
        s = x @ x.T
        return jnp.exp(s - s.max(-1, keepdims=True)) @ x

class Block:
    def __init__(self):
        self.ln, self.att = LayerNorm(), Attention()
    def __call__(self, x):
        h = self.ln(x)
        return x + self.att(h)
'''


def test_hover_and_search_name_the_cell_a_line_is_in(ip):
    """`loss:2` could be any cell's: hover says which, as IPython numbers cells, and a
    search for the cell finds its lines; the picture's boxes stay short."""
    ip.run_cell("def loss(x):\n    return jnp.sum(jnp.sin(x))", store_history=True)
    defined = ip.execution_count - 1
    ip.run_cell("def loss2(x):\n    return loss(x) * 2", store_history=True)
    view = ip.run_line_magic("jaxpr", "-o loss2(jnp.ones(4))")
    w = JaxprExplorer(view)
    rows = {r["kind"]: r["where"] for r in w.table.values()}
    assert rows["sin"] == f"loss:2 (In [{defined}])", rows
    assert rows["mul"] == f"loss2:2 (In [{defined + 1}])", rows
    assert f"In [{defined}]" not in w.svg
    search(w, f"In [{defined}]")
    assert {w.table[k]["kind"] for k in w.highlight} == {"sin", "reduce_sum"}, w.status


def test_a_group_hovers_as_its_call_site_and_a_method_by_its_class(ip):
    """Three classes share `__call__`: a line names its class (`Attention.__call__:8`),
    and a group, open or closed, is where the user's code calls it, never a line inside
    it; `__call__:8` still finds the line."""
    ip.run_cell(LAYERS, store_history=True)
    cell = f"In [{ip.execution_count - 1}]"
    line = {text.strip(): k + 1 for k, text in enumerate(LAYERS.splitlines())}
    ip.push({"model": ip.ev("Block()")})
    w = JaxprExplorer(ip.run_line_magic("jaxpr", "-o model(jnp.ones((4, 8)))"))
    where = {}
    for r in w.table.values():
        where.setdefault(r["kind"], set()).add(r["where"])
    softmax = line["return jnp.exp(s - s.max(-1, keepdims=True)) @ x"]
    assert where["exp"] == {f"Attention.__call__:{softmax} ({cell})"}, where
    assert where["sub"] == {f"LayerNorm.__call__:3 ({cell})",
                            f"Attention.__call__:{softmax} ({cell})"}, where
    groups = {r["title"]: (r["where"], r["source"]) for r in w.table.values()
              if r["kind"] == "scope"}
    called = {"LayerNorm": "h = self.ln(x)", "Attention": "return x + self.att(h)"}
    assert groups == {t: (f"Block.__call__:{line[s]} ({cell})", s)
                      for t, s in called.items()}, groups
    for key in [k for k, r in w.table.items() if r["kind"] == "scope"]:
        click(w, key)                # closed: a box, called from the same line
    closed = {r["title"]: r["where"] for r in w.table.values() if r["click"] == "open"}
    assert closed == {t: wh for t, (wh, _) in groups.items()}, closed
    search(w, f"__call__:{softmax}")
    assert w.highlight and all(w.table[k]["where"].startswith(f"Attention.__call__:{softmax}")
                               for k in w.highlight), w.status


def test_a_group_drawn_as_one_box_beside_its_calls_starts_so_and_opens_on_a_click(ip):
    """A call whose own equations the picture draws as one box beside its calls (the PPO
    loss, too wide for its lines) starts so in the explorer, as the picture draws it, and
    a click on that box shows its equations."""
    from test_model_pictures import PPO

    ip.run_cell(PPO)
    view = ip.run_line_magic("jaxpr", "-o train_step(state, trajectories, 4, clip_param=0.1,"
                                      " vf_coeff=0.5, entropy_coeff=0.01)")
    assert view.graph.whole, view.text()
    w = JaxprExplorer(view)
    assert titles(w.exploration.graph) == titles(view.graph)
    c = min(view.graph.whole)        # the loss (and, where it fits, its backward)
    box = next(f"n{n.id}" for n in w.exploration.graph.nodes.values()
               if n.kind == "group" and n.cluster == c)
    before = len(w.exploration.graph.nodes)
    click(w, box)
    assert len(w.exploration.graph.nodes) > before, w.status


def test_copied_magic_draws_a_group_drawn_as_one_box_as_one_box(ip):
    """The PPO loss, its own equations one box beside its calls: the copied line named it
    `--lines`, which redraws those equations a box per line (a wider picture than the
    one copied). `--box` draws it as the explorer shows it."""
    from test_model_pictures import PPO

    ip.run_cell(PPO)
    call = "train_step(state, trajectories, 4, clip_param=0.1, vf_coeff=0.5, entropy_coeff=0.01)"
    view = ip.run_line_magic("jaxpr", "-o " + call)
    assert view.graph.whole, view.text()
    w = JaxprExplorer(view, "%jaxpr {options} " + call)
    assert "--box " in w.magic and w.caveat == "", (w.magic, w.caveat)
    static = ip.run_line_magic("jaxpr", "-o " + w.magic[len("%jaxpr "):])
    assert static.graph.whole == view.graph.whole
    assert titles(static.graph) == titles(view.graph), w.magic


def test_opening_a_group_just_closed_gives_back_what_was_inside(grad_view):
    """Closing an open series and opening it again draws it as it was (its equations
    grouped by line, the groups inside it open), not as its first level."""
    w = JaxprExplorer(grad_view)
    x = w.exploration
    inner = next(k for k, r in w.table.items() if r["click"] == "open" and "_std" in r["title"])
    click(w, inner)                         # a group inside the series, opened by a click
    shown = titles(x.graph)
    series = next(c for c in x.opened if "×" in x.folded.clusters[c].title
                  and x.folded.clusters[c].level == 1 and c in x.by_line)
    name = x.folded.clusters[series].title
    click(w, f"cluster_{series}")
    assert titles(x.graph) != shown and w.status == f"closed {name}"
    click(w, next(k for k, r in w.table.items() if r["click"] == "open" and r["title"] == name))
    assert w.status == f"opened {name}"
    assert titles(x.graph) == shown


@pytest.mark.xfail(jax.__version_info__ >= (0, 12, 1), strict=False,
                   reason="JAX 0.12.1's softmax is a call of its own: block #0's backward "
                   "grouped by line still reads at 7.1 px (issue 42, item 10)")
def test_an_opened_group_keeps_its_text_legible(grad_view):
    """A group whose equations one by one would draw text under 8 px at cell width (a
    block's backward pass) opens one level: its equations grouped by line, each line
    opened by a click."""
    from jaxmagic.render import size as S
    from jaxmagic.render.jaxpr import _text_px

    w = JaxprExplorer(grad_view)
    x = w.exploration
    if any(r["click"] == "close" and r["title"] == "block #0 · backward"
           for r in w.table.values()):
        pytest.skip("this JAX's first view opens block #0 · backward itself, legibly")
    key = next(k for k, r in w.table.items() if r["click"] == "open"
               and re.fullmatch(r"block #0 · backward", r["title"]))
    group = x.graph.nodes[int(key[1:])].group
    whole = x.view.view_of(x.opened | {group}, frozenset(x.by_line) - x.boxed, x.boxed)
    assert _text_px(x.view.layout_of(x.view.dot(whole)).svg) < S.MIN_TEXT_PX
    click(w, key)
    assert w.status == "opened block #0 · backward" and group in x.by_line
    assert w.focus == f"cluster_{group}"      # the page zooms to it and scrolls to it
    assert _text_px(w.svg.encode()) >= S.MIN_TEXT_PX
    lines = [k for k, r in w.table.items() if r["click"] == "lines"
             and x.graph.nodes[int(k[1:])].cluster == group]
    assert lines
    click(w, lines[0])
    assert w.status.startswith("opened ")


@pytest.mark.slow
def test_copied_magic_of_a_cell_redraws_its_view_in_a_kernel(tmp_path):
    """A real kernel of a notebook session: a `%%jaxpr` cell's explorer, a group opened,
    copies a `%jaxpr` line of the cell's final call; pasted into a cell of its own it
    draws the same view."""
    import os
    from pathlib import Path

    import nbformat
    from nbclient import NotebookClient

    root = Path(__file__).parents[1]
    env = dict(os.environ, JPY_SESSION_NAME=str(tmp_path / "x.ipynb"),
               PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    setup = ("%load_ext jaxmagic\nimport sys\nsys.path.insert(0, " + repr(str(root / "benchmarks"))
             + ")\nimport jax, transformer\nparams, x = transformer.make(4, d=16, t=8)\n"
             "from collections import Counter\nfrom ipywidgets.widgets.widget import _instances\n"
             "drawn = lambda i: Counter((n.kind, n.title) for n in "
             "_instances[i].exploration.graph.nodes.values())")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in (
        setup, "%%jaxpr\nstep = jax.grad(transformer.model)\nstep(params, x)")])
    client = NotebookClient(nb, timeout=120, kernel_name="python3")

    def run(source):
        nb.cells.append(nbformat.v4.new_code_cell(source))
        client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
        return nb.cells[-1].outputs

    def explorer(outputs):
        return next(o["data"][WIDGET]["model_id"] for o in outputs if WIDGET in o.get("data", {}))

    with client.setup_kernel(env=env):
        for i, cell in enumerate(nb.cells):
            client.execute_cell(cell, i)
        first = explorer(nb.cells[1].outputs)
        [out] = run(f"w = _instances[{first!r}]\nkey = next(k for k, r in w.table.items() "
                    "if r['title'] == 'block #0 · backward')\n"
                    "w._on_message(w, {'type': 'toggle', 'key': key}, [])\nprint(w.magic)")
        line = out["text"].strip()
        assert line.startswith("%jaxpr --depth ") and line.endswith(" step(params, x)"), line
        again = explorer(run(line))
        [same] = run(f"print(drawn({first!r}) == drawn({again!r}), len(drawn({first!r})))")
    assert same["text"].split()[0] == "True", (line, same["text"])
