"""Every examples/*.ipynb, run top to bottom in a fresh ipykernel (nbclient), as a reader
would run it; then every jaxmagic output in it checked against the output contract
(DESIGN.md): text/plain plus a static rich form that survives untrusted front ends."""
import re
import shutil

import nbformat
import pytest
from notebook_support import (
    RAISES,
    cell_magics,
    errors,
    example_notebooks,
    jaxmagic_outputs,
    magic_names,
    tags,
)

NOTEBOOKS = example_notebooks()
IDS = [p.stem for p in NOTEBOOKS]
# Magics that show a view unless told otherwise (-o returns it; %jaxcheck on|off may be silent).
SHOWING = {"jaxpr", "jit_compare", "devices", "shardviz"}

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("src", NOTEBOOKS, ids=IDS)
def test_saved_clean_and_sets_devices_first(src):
    nb = nbformat.read(src, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "no code cells"
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"
             and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, f"cells {dirty} were saved with outputs (save notebooks clean)"
    first = code[0].source
    assert "xla_force_host_platform_device_count=8" in first, \
        "the first code cell must ask for 8 CPU devices"
    flag = first.index("XLA_FLAGS")
    imp = re.search(r"(?m)^\s*(import jax|from jax)", first)
    assert imp is None or imp.start() > flag, "XLA_FLAGS must be set before jax is imported"
    assert any("%load_ext jaxmagic" in c.source for c in code), "never loads jaxmagic"


@pytest.mark.parametrize("src", NOTEBOOKS, ids=IDS)
def test_runs_top_to_bottom(src, executed_notebooks):
    nb, _, secs = executed_notebooks.get(src)
    errs = errors(nb)
    untagged = [f"cell {i}: {msg}" for i, tagged, msg in errs if not tagged]
    assert not untagged, f"errors outside cells tagged {RAISES}:\n" + "\n".join(untagged)
    raised = {i for i, _, _ in errs}
    silent = [i for i, c in enumerate(nb.cells) if RAISES in tags(c) and i not in raised]
    assert not silent, f"cells {silent} are tagged {RAISES} but did not raise"


@pytest.mark.parametrize("src", NOTEBOOKS, ids=IDS)
def test_jaxmagic_outputs_keep_the_contract(src, executed_notebooks):
    nb, _, _ = executed_notebooks.get(src)
    names = magic_names()
    outs = jaxmagic_outputs(nb, src.stem)
    if any(cell_magics(c.source, names) for c in nb.cells if c.cell_type == "code"):
        assert outs, "the notebook calls jaxmagic's magics but shows no jaxmagic output"
    problems = []
    for o in outs:
        if not o.rich and re.search(r"--format[= ]?(text|dot)\b", o.source):
            continue    # text asked for as text
        missing = {"text/plain", "text/html"} - set(o.data)
        if missing:
            problems.append(f"{o.label}: no {sorted(missing)} (has {sorted(o.data)})")
            continue
        plain = o.data["text/plain"]
        plain = "".join(plain) if isinstance(plain, list) else plain
        if not plain.strip() or re.fullmatch(r"<[\w.]+ object at 0x[0-9a-f]+>", plain.strip()):
            problems.append(f"{o.label}: text/plain is {plain[:60]!r}, not a text view")
        html = o.html
        for bad, why in [("<svg", "inline <svg> (stripped untrusted; hides the SVG)"),
                         ("<style", "<style> block (stripped untrusted)"),
                         ("<script", "<script>"), ("var(--", "CSS variable (stripped untrusted)"),
                         ('src="http', "external resource"), ("url(http", "external resource")]:
            if bad in html.lower():
                problems.append(f"{o.label}: text/html has {why}")
        if "image/svg+xml" in o.data and "<img" not in html and "image/png" not in o.data:
            problems.append(f"{o.label}: the picture is only image/svg+xml, which untrusted "
                            "JupyterLab drops; put it in the HTML as an <img> data URI")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("src", NOTEBOOKS, ids=IDS)
def test_every_magic_cell_shows_something(src, executed_notebooks):
    nb, _, _ = executed_notebooks.get(src)
    names = magic_names()
    shown = {o.cell_index for o in jaxmagic_outputs(nb, src.stem)}
    silent = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or RAISES in tags(cell):
            continue
        showing = [m for m in cell_magics(cell.source, names) if m in SHOWING]
        returns = re.search(r"(?m)^\s*\w[\w.]*\s*=\s*%|\s-o\b", cell.source)
        if showing and not returns and i not in shown:
            silent.append(f"cell {i} (%{showing[0]})")
    assert not silent, "magic cells with no jaxmagic output: " + ", ".join(silent)


@pytest.mark.parametrize("src", NOTEBOOKS, ids=IDS)
def test_graphs_carry_png_for_github(src, executed_notebooks):
    """GitHub shows image/png outputs reliably; graphs carry one where `dot` can make it."""
    if shutil.which("dot") is None:
        pytest.skip("no system `dot`: the WebAssembly renderer makes SVG only")
    nb, _, _ = executed_notebooks.get(src)
    graphs = [o for o in jaxmagic_outputs(nb, src.stem) if o.is_picture]
    no_png = [o.label for o in graphs if "image/png" not in o.data]
    assert not no_png, "graph outputs without image/png: " + ", ".join(no_png)


# Executed, a notebook is what a reader downloads and what a repository stores.
STORED_LIMIT = 200_000
# Still past it (issue 42, item 17), each held to the larger of its sizes on JAX 0.10 and
# 0.12, and 5% more: a ratchet, lowered as they shrink. 08 draws seven graphs; 12's remat
# step draws twice the graph on 0.12; 01's and 09's pictures grew once, with the folds of
# inline loops and 09's new optimizer cell (01: 264 KB, 09: 216 KB on 0.10, 279 on 0.7).
# On 0.12.1, whose softmax is a call of its own, the transformer gradients of 09 and 10
# open further, one equation a node (09: 338 KB, 10: 253 KB).
STILL_OVER = {"01_jaxpr": 278_000, "08_real_models": 402_000, "09_model_graphs": 355_000,
              "10_profile": 266_000, "12_memory": 340_000}


@pytest.mark.parametrize("src", NOTEBOOKS, ids=IDS)
def test_executed_notebook_is_stored_small(src, executed_notebooks):
    """Executed and saved, a notebook stays under 200 KB: each picture stored as the SVG
    every frontend shows and a PNG for GitHub, no more."""
    if shutil.which("dot") is None:
        pytest.skip("no system `dot`: the WebAssembly renderer makes no PNG")
    _, path, _ = executed_notebooks.get(src)
    size = path.stat().st_size
    assert size < STILL_OVER.get(src.stem, STORED_LIMIT), f"{src.stem}: {size} bytes"
