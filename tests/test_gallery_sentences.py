"""What the example notebooks' sentences say about an output, checked against that output
as a real kernel made it (each notebook executed once per session, tests/conftest.py).

Each test quotes the sentence it checks, so a sentence reworded without its test fails
here, and reads the claim from the output: the call tree from the text view (the same
graph as the picture: one line per node, `┌ NAME` an open group, `vN call NAME [...]` a
closed one), numbers from the tables and prints."""
import base64
import html
import re
from dataclasses import dataclass, field

import jax
import pytest
from notebook_support import EXAMPLES, ROOT, execute, jaxmagic_outputs

from jaxmagic.render.dot import BACKWARD_OP

pytestmark = pytest.mark.slow
# The gallery is written of what JAX 0.8 and newer do; 0.7 retraces a mutated static
# config and keeps other activations for the backward pass, so two sentences are not its.
since_0_8 = pytest.mark.skipif(tuple(map(int, jax.__version__.split(".")[:2])) < (0, 8),
                               reason="the sentence describes JAX 0.8 and newer")


@dataclass
class Group:
    name: str
    open: bool
    children: list["Group"] = field(default_factory=list)

    def __getitem__(self, name: str) -> "Group":
        found = [c for c in self.children if c.name == name]
        assert found, f"no group {name!r} in {self.name or 'the view'}: " \
                      f"{[c.name for c in self.children]}"
        return found[0]

    def groups(self, path=()):
        """Every group under this one, with its path of names."""
        for c in self.children:
            yield path + (c.name,), c
            yield from c.groups(path + (c.name,))


def call_tree(text: str) -> Group:
    """The groups of a text view, open and closed, nested as drawn (outputs and the stubs
    after them are left out)."""
    root = Group("", True)
    stack = [(-1, root)]
    for line in text.splitlines()[1:]:
        if re.match(r"v\d+ output", line):
            break
        m = re.match(r"( *)(?:┌ (.+)|v\d+ (?:call|group) +(.+?) \[.*)$", line)
        if not m:
            continue
        depth, name = len(m[1]) // 2, (m[2] or m[3]).split("  @ ")[0]
        while stack[-1][0] >= depth:
            stack.pop()
        group = Group(name, m[2] is not None)
        stack[-1][1].children.append(group)
        if group.open:
            stack.append((depth, group))
    return root


def backward_of(name: str) -> str:
    return f"{name} · backward"


def named(group: Group) -> list[str]:
    return [c.name for c in group.children]


class Notebook:
    """An executed example: its sentences and the outputs of the cells they speak of."""

    def __init__(self, executed_notebooks, stem: str):
        self.nb, _, _ = executed_notebooks.get(EXAMPLES / f"{stem}.ipynb")

    def says(self, sentence: str):
        prose = " ".join(" ".join(c.source.split()) for c in self.nb.cells
                         if c.cell_type == "markdown")
        assert " ".join(sentence.split()) in prose, f"no longer says: {sentence}"

    def cell(self, code: str):
        found = [c for c in self.nb.cells if c.cell_type == "code" and code in c.source]
        assert len(found) == 1, f"{len(found)} code cells hold {code!r}"
        return found[0]

    def view(self, code: str, mime: str = "text/plain") -> str:
        """The last rich output of the cell holding `code` (its view)."""
        outs = [o for o in self.cell(code).outputs
                if o.output_type in ("display_data", "execute_result")]
        assert outs, f"the cell holding {code!r} shows nothing"
        return outs[-1].data[mime]

    def printed(self, code: str) -> str:
        return "".join(o.text for o in self.cell(code).outputs if o.output_type == "stream")


def notes(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("note:")]


def equations(text: str) -> int:
    return int(re.search(r"— (\d+) equations", text.splitlines()[0])[1])


def number(s: str) -> float:
    return float(s.replace("−", "-"))


@pytest.fixture(scope="module")
def graphs(executed_notebooks):
    return Notebook(executed_notebooks, "09_model_graphs")


@pytest.fixture(scope="module")
def values(executed_notebooks):
    return Notebook(executed_notebooks, "13_values")


def test_nnx_step_opens_the_model_first_and_each_backward_after_its_twin(graphs):
    graphs.says("The arguments are one record, the model's and optimizer's updated leaves "
                "one record each.")
    graphs.says("The picture opens the path to the model first (`loss_fn`, then `MLP`, then "
                "its `Linear`s) while the text stays at least 8 px at cell width.")
    graphs.says("A backward group opens only where its forward twin is open, and holds its "
                "calls in the mirror order (`MLP · backward`: `Linear #1 · backward`, then "
                "`Linear #0 · backward`); an open forward call's backward may stay closed "
                "(`Linear #1 · backward` here). The optimizer's update stays one closed group")
    text = graphs.view("%jaxpr train_step(model, optimizer, x, y)")
    inputs = [line for line in text.splitlines() if re.match(r"v\d+ input", line)]
    assert len(inputs) == 1 and inputs[0].split()[2] == "arguments", inputs
    for obj in ("model", "optimizer"):
        out = next(line for line in text.splitlines()
                   if re.match(rf"v\d+ output +{obj} · \d+ leaves", line))
        assert "(updated)" in out and "; " in out, out
    assert not [n for n in notes(text) if " px at " in n], notes(text)

    tree = call_tree(text)
    mlp = tree["loss_fn"]["MLP"]
    forward = [c.name for c in mlp.children if c.name.startswith("Linear")]
    assert forward == ["Linear #0", "Linear #1"] and all(mlp[n].open for n in forward)
    for path, group in tree.groups():
        if group.open and path[0].endswith(" · backward"):
            twin = tree
            for name in path:
                twin = twin[name.removesuffix(" · backward")]
            assert twin.open, f"{' › '.join(path)} is open, its forward twin closed"
    back = tree[backward_of("loss_fn")][backward_of("MLP")]
    assert named(back) == [backward_of(n) for n in reversed(forward)]
    assert not back[backward_of("Linear #1")].open and back[backward_of("Linear #0")].open
    assert not tree["optimizer.update"].open


def test_the_optimizer_opened_draws_each_update_once_for_the_4_parameters(graphs):
    graphs.says("`--depth 0` closes every call and `--expand optimizer.update` opens that "
                "one: Adam's update of each of the model's 4 parameters is the same "
                "equations, so each is drawn once and marked `×4 leaves`.")
    text = graphs.view("--expand optimizer.update train_step(")
    assert re.search(r"model · 4 leaves", text)
    tree = call_tree(text)
    assert tree["optimizer.update"].open
    assert all(not c.open for c in tree.children if c.name != "optimizer.update")
    inside = text.split("┌ optimizer.update", 1)[1].split("\nv", 1)[0]
    ops = [line for line in inside.splitlines() if re.match(r" +v\d+ op ", line)]
    per_leaf = [line for line in ops if "×4 leaves" in line]
    assert len(per_leaf) >= 10 and not [line for line in ops if "leaves" in line
                                        and "×4 leaves" not in line], ops


def test_the_transformer_gradient_folds_its_layers_and_mirrors_the_backward(graphs):
    graphs.says("About 3,000 equations: the 16 layers fold into `layer ×16`, opened to show "
                "what one layer calls; the backward pass folds as its mirror (the first "
                "layer's backward, whose input needs no gradient, is a group of its own "
                "beside the fold).")
    text = graphs.view("%jaxpr jax.grad(model_fn)(params, tokens)")
    assert 2600 < equations(text) < 3400      # 2,783 on JAX 0.12.1, over 3,000 on 0.10
    tree = call_tree(text)
    layer = tree["layer ×16"]
    calls = named(layer)
    assert layer.open and len(calls) >= 4, calls
    mirror = [backward_of(n) for n in reversed(calls)]
    assert named(tree[backward_of("layer ×15")]) == mirror
    assert named(tree[backward_of("layer #0")]) == mirror


def test_too_small_weights_shrink_sigma_every_layer_and_the_usual_scale_slowly(values):
    values.says("every layer shrinks its input (the σ column of the layer table falls from "
                "row to row).")
    values.says("With the usual scale (σ = 1/√fan-in) the activations still shrink, but "
                "slowly: the σ printed below, of layers 0, 8, 16 and 24, falls about "
                "six-fold, where the weights of σ 0.05 above shrank it more than a "
                "trillion-fold (the layer table's `σ shrinks ×…`).")
    page = values.view("jax.grad(mlp)(ws, xs)", "text/html")
    head, table = page.split("layer by layer · σ shrinks ×", 1)[1].split("</table>")[0] \
        .split("</div>", 1)
    assert number(head.split()[0]) > 1e12, head
    cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>([^<]*)</td>", table)]
    sigma = [number(s) for s in cells[2::4]]
    assert len(sigma) > 3 and all(a > b for a, b in zip(sigma, sigma[1:])), sigma

    printed = values.printed("jax.grad(mlp)(ws_ok, xs)")
    usual = [float(s) for s in re.findall(r"'([\d.e+-]+)'", printed)]
    assert len(usual) == 4 and all(a > b for a, b in zip(usual, usual[1:])), printed
    assert 4 <= usual[0] / usual[-1] <= 9, usual


def test_the_nan_cards_name_where_it_was_born_and_where_debug_nans_stops(values):
    values.says("`jax_debug_nans` would stop at that backward `mul`; the card goes back to "
                "the Inf the `sqrt` line made.")
    code = values.cell("jax.grad(loss)(x)").source
    sqrt_line = next(i for i, line in enumerate(code.splitlines(), 1) if "jnp.sqrt" in line)
    card = values.view("jax.grad(loss)(x)")
    assert re.search(rf"^first \+Inf: \w+ at loss:{sqrt_line} ", card, re.M), card
    assert re.search(r"^the first NaN: mul at \S+ \(backward pass\).*jax_debug_nans stops",
                     card, re.M), card

    values.says("`exp` of anything past 88.7 is `inf` in float32; dividing two of them is "
                "NaN. Subtracting the maximum first (as `jax.nn.softmax` does) keeps every "
                "value finite.")
    assert re.search(r"^first \+Inf: exp at", values.view("my_softmax(z)"), re.M)
    assert re.search(r"^the first NaN: div at", values.view("my_softmax(z)"), re.M)
    stable = values.view("stable_softmax(z)")
    assert "first" not in stable and not re.search(r"NaN \d|Inf \d", stable), stable


def test_the_loop_card_names_the_iteration_the_nan_was_born_in(values):
    values.says("the card says at which iteration the first NaN was born.")
    card = values.view("countdown(jnp.float32(37.5), jnp.ones(60))")
    # c = 37.5 - (i + 1) first goes negative, and sqrt(c) NaN, at iteration 37
    first = next(i for i in range(60) if 37.5 - (i + 1) < 0)
    assert re.search(rf"^first NaN: sqrt at body:\d+ .*iteration {first} of scan ×60",
                     card, re.M), card


def test_a_loop_in_one_function_folds_around_the_jitted_call_it_makes(executed_notebooks):
    nb = Notebook(executed_notebooks, "01_jaxpr")
    nb.says("A 64-layer model's gradient has about two thousand equations.")
    nb.says("every iteration makes the same equations from the same two lines, so the 64 "
            "iterations still fold into one series, named by the steps one iteration takes "
            "(`dot_general → tanh → … ×64`, and its backward `… ×63 · backward`).")
    code = "v = %jaxpr -o jax.grad(deep)"
    n, drawn = map(int, re.search(r"(\d+) equations drawn as (\d+) nodes", nb.printed(code))
                   .groups())
    assert 1700 < n < 2400 and drawn < 50      # 1,796 on JAX 0.12.1, over 2,000 on 0.10
    tree = call_tree(nb.view(code))
    forward = next(name for name in named(tree) if name.endswith(" ×64"))
    backward = next(name for name in named(tree) if name.endswith(" ×63 · backward"))
    assert forward.startswith("dot_general → tanh → … → ") and tree[forward].open
    assert tree[backward].open
    assert not [n for n in notes(nb.view(code)) if "coarser" in n]


@since_0_8
def test_a_mutated_static_config_is_flagged_before_it_retraces(executed_notebooks):
    nb = Notebook(executed_notebooks, "02_jit")
    nb.says("the line under the table says that the static argument's hash changed while it "
            "was traced")
    nb.says("some still find the measured calls (`traces 1`), others miss every one; then the "
            "`traces` row counts the retraces, the verdict blames them and JAX's explanation "
            "follows")
    text = nb.view("step(X, Config())")
    assert "changed while the function was traced (its hash changed)" in text
    retraces = re.search(r"^ +traces +(\d+)", text, re.M)
    if int(retraces[1]) > 1:         # JAX 0.12.0.1 keys its cache by the hash on each call
        assert "during the measurement" in text and "TRACING CACHE MISS" in text, text
        assert "because the measured calls traced and compiled again" in text, text
        assert "costliest groups" not in text, text
    else:
        assert re.search(r"^ +traces +1 \(no retrace\)", text, re.M), text


def test_the_static_scalar_call_is_said_to_equal_jits_result(executed_notebooks):
    nb = Notebook(executed_notebooks, "02_jit")
    nb.says("On the Python number `1.`, `f` is Python arithmetic, no JAX operation: the line "
            "says so, once it has checked that Python's `-1.0` equals what `jax.jit` returns")
    text = nb.view("%jit_compare --budget 0.3 --static-argnums 1 f(1., 1)")
    assert "f runs no JAX operation op by op" in text and "equal to what jax.jit returns" \
        in text, text
    assert "DIFFER" not in text and "speedup" not in text, text


def test_convolve_opened_shows_the_flip_and_the_convolution(executed_notebooks):
    nb = Notebook(executed_notebooks, "07_convolution")
    nb.says("`--depth all` also opens what it calls: the flip of the kernel (`rev`) and the "
            "`conv_general_dilated` with its stride and padding.")
    text = nb.view("%jaxpr --depth all jnp.convolve(x, y)")
    assert re.search(r"v\d+ op +rev ", text)
    assert re.search(r"v\d+ op +conv_general_dilated \[stride \(1\); pad ", text)


@since_0_8
def test_saved_activations_fold_across_the_layers(executed_notebooks):
    nb = Notebook(executed_notebooks, "12_memory")
    nb.says("the saved activations of `block ×8` are folded across its layers: alike values "
            "the 8 layers save are one row (`f32[256,128] ×8 · tanh`).")
    text = nb.view("%jaxpr --memory train_step(params, x)")
    rows = [line.split()[4:8] for line in text.split("live at the peak:", 1)[1].splitlines()
            if "saved activation" in line and line.rstrip().endswith("› block ×8")]
    assert ["f32[256,128]", "×8", "tanh", "block:5"] in rows, rows
    alike = [(shape, what, where) for shape, _, what, where in rows]
    assert len(set(alike)) == len(alike), rows


README = ROOT / "README.md"


def section(text: str, heading: str) -> str:
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_leads_with_what_it_is_a_picture_install_a_first_cell_the_magics():
    text = README.read_text()
    order = [text.index(mark) for mark in ("![", "\n## Install\n", "\n## A first cell\n",
                                           "\n## The magics\n", "\n## In detail\n")]
    assert order == sorted(order), order
    picture = ROOT / re.search(r"!\[[^\]]*\]\(([^)]+\.png)\)", text)[1]
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    install = section(text, "Install")
    assert re.search(r"^pip install /path/to/jaxmagic ", install, re.M)
    assert "pip install -e /path/to/jaxmagic" in install
    for command in ("demo", "test"):
        assert re.search(rf"^make {command} +# \S", text, re.M), f"make {command}"


def test_the_readmes_first_cell_draws_what_it_says(tmp_path):
    import nbformat

    first = section(README.read_text(), "A first cell")
    code = first.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.splitlines()) <= 5, code
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    path = tmp_path / "first.ipynb"
    nbformat.write(nb, path)
    ran, _ = execute(path, tmp_path, allow_errors=False)
    [out] = jaxmagic_outputs(ran)
    assert out.is_picture
    assert "a box per equation, the backward pass's shaded, edges labelled with shapes, " \
        "inputs named by their source text (`jnp.ones((4, 3))`)" in " ".join(first.split())
    text = out.data["text/plain"]
    assert re.search(r"^v\d+ input +jnp\.ones\(\(4, 3\)\) \[f32\[4,3\]\]", text, re.M), text
    uri = re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', out.html)[1]
    svg = base64.b64decode(uri).decode()
    fills = re.findall(r'<polygon fill="([^"]+)"', svg)
    shaded, boxes = fills.count(BACKWARD_OP[0]), len(re.findall(r"(?m)^v\d+ op ", text))
    assert 0 < shaded < boxes, (shaded, boxes)


def test_the_readmes_picture_is_the_nnx_step_its_caption_describes(graphs):
    first = re.search(r"!\[[^\]]*\]\(([^)]+)\)", README.read_text())[1]
    assert first == "docs/gallery/09_model_graphs-04-jaxpr-light.png", first
    assert graphs.cell("%jaxpr train_step(model, optimizer, x, y)").execution_count == 3
    tree = call_tree(graphs.view("%jaxpr train_step(model, optimizer, x, y)"))
    assert tree["loss_fn"]["MLP"]["Linear #0"].open
    assert tree[backward_of("loss_fn")].open and not tree["optimizer.update"].open


def test_the_readme_counts_jaxchecks_rules_and_families_as_the_catalogue_holds_them():
    from jaxmagic.core.checks.model import FAMILIES, RULES

    words = {6: "six", 7: "seven", 8: "eight", 9: "nine"}
    claim = f"{len(RULES)} rules with stable ids in {words[len(FAMILIES)]} families"
    assert claim in README.read_text()


@pytest.fixture(scope="module")
def models(executed_notebooks):
    return Notebook(executed_notebooks, "08_real_models")


def test_the_real_nnx_step_opens_its_model_and_leaves_adam_closed(models):
    models.says("A whole train step is about 130 equations (forward, backward, Adam), drawn "
                "at the default settings, grouped by call: the path to the model opens "
                "(`loss_fn` › `MLP` › `Linear #0`, with `Dropout` one box), the backward "
                "pass mirrors it, and Adam's update stays one closed box "
                "(`optimizer.update`). The arguments go in as one record; the model and the "
                "optimizer come out as one record each, their leaves marked *updated*.")
    text = models.view("%jaxpr train_step(model, optimizer, x, y)")
    assert 120 <= equations(text) <= 140, text.splitlines()[0]
    tree = call_tree(text)
    mlp = tree["loss_fn"]["MLP"]
    assert mlp["Linear #0"].open and not mlp["Dropout"].open
    assert not tree["optimizer.update"].open
    # relu's derivative is a select_n in MLP · backward, not a group of its own
    forward = [n for n in named(mlp) if n != "custom_jvp: relu"]
    back = named(tree[backward_of("loss_fn")][backward_of("MLP")])
    assert back == [backward_of(n) for n in reversed(forward)], (forward, back)
    lines = text.splitlines()
    assert [line.split()[2] for line in lines if re.match(r"v\d+ input", line)] == ["arguments"]
    for obj in ("model", "optimizer"):
        out = next(line for line in lines if re.match(rf"v\d+ output +{obj} · ", line))
        leaves = out.split(" [", 1)[1].split("; ")
        assert all("(update" in leaf for leaf in leaves if not leaf.startswith("+")), out


def test_an_optax_update_names_its_inputs_and_results_and_folds_the_leaves(models):
    models.says("The inputs are named by their arguments (`grads`, `opt_state`, `params`) and "
                "the results by where they sit in what `update` returns (`[1][0].mu.w`, the "
                "new first moment of `w`); Adam's update of the two parameters is drawn once, "
                "marked `×2 leaves`.")
    text = models.view("%jaxpr tx.update(grads, opt_state, params)")
    args = next(line for line in text.splitlines() if re.match(r"v\d+ input", line))
    assert re.findall(r"(\w+) · \d+ leaves", args) == ["grads", "opt_state", "params"], args
    out = next(line for line in text.splitlines() if re.match(r"v\d+ output", line))
    assert "[1][0].mu.w f32[4,1]" in out, out
    ops = [line for line in text.splitlines() if re.match(r" *v\d+ op ", line)]
    assert sum("×2 leaves" in line for line in ops) >= 5, ops


def test_an_indexed_update_is_one_scatter(executed_notebooks):
    nb = Notebook(executed_notebooks, "06_how_to_think")
    nb.says("The graph shows what it is: one `scatter` equation, beside the two that make its "
            "index and its value.")
    text = nb.view("%jaxpr x.at[0].set(10)")
    prims = [line.split()[2] for line in text.splitlines() if re.match(r"v\d+ op ", line)]
    assert prims.count("scatter") == 1 and len(prims) == 3, prims


def test_the_profiled_layers_fold_and_the_first_backward_is_drawn_apart(executed_notebooks):
    nb = Notebook(executed_notebooks, "10_profile")
    nb.says("`block ×16` is the 16 forward calls drawn once and carries the time of all 16, "
            "the backward pass is a group of its own (`block ×15 · backward`: the first "
            "layer's backward computes no gradient for its input, so it differs and is "
            "drawn apart).")
    tree = call_tree(nb.view("%jaxpr --profile jax.grad(model)(params, x)"))
    assert tree["block ×16"].open and tree[backward_of("block ×15")].open
    assert backward_of("block #0") in named(tree)
    groups = nb.printed("view = %jaxpr --profile -o").split("costliest groups:")[1]
    rows = {m[1]: int(m[2]) for m in re.finditer(r"^ +\S+ +[\d.]+ \S+ +(.+?) +(\d+)$",
                                                 groups.split("\n\n")[0], re.M)}
    assert rows["block ×16"] % 16 == 0 and rows[backward_of("block ×15")] % 15 == 0, rows


def line_of(code: str, snippet: str) -> int:
    return next(i for i, line in enumerate(code.splitlines(), 1) if snippet in line)


def test_each_collective_sits_at_the_line_that_causes_it(executed_notebooks):
    nb = Notebook(executed_notebooks, "11_sharding")
    code = nb.cell("def mlp(x, w1, w2):").source
    first, second = line_of(code, "x @ w1"), line_of(code, "h @ w2")

    nb.says("The second matmul contracts over the `model`-sharded hidden layer, so each "
            "device holds a partial sum: the all-reduce over `model` sits at that line.")
    rows = re.findall(r"^  (all-\S+(?: of \w+)?) +(\S+) +([\d.]+ \w+) +mlp:(\d+) ",
                      nb.view("%jaxpr --sharding mlp(x, w1, w2)"), re.M)
    assert rows == [("all-reduce", "model", "256 KiB", str(second))], rows

    nb.says("each weight's gradient is summed over `data`. XLA combines the two all-reduces "
            "into one instruction; the table splits it back into one row per weight, each "
            "at its own matmul.")
    grad = nb.view("jax.grad(loss, argnums=(1, 2))(x, w1, w2)")
    rows = re.findall(r"^  (all-\S+) +(\S+) +[\d.]+ \w+ +mlp:(\d+) ", grad, re.M)
    assert sorted(rows) == [("all-reduce", "data", str(first)),
                            ("all-reduce", "data", str(second))], rows
    assert "combines 2 operands into one collective" in grad

    nb.says("so the partitioner gathers all 2 MiB of it at its first use, on every call")
    bad = nb.view("%jaxpr --sharding mlp(x, w1_bad, w2)")
    assert re.search(rf"^  all-gather of w1_bad +data,model +2 MiB +mlp:{first} ", bad, re.M)


def test_a_transpose_moves_nothing_and_a_constraint_reshards_at_sin(executed_notebooks):
    nb = Notebook(executed_notebooks, "11_sharding")
    nb.says("`jnp.sin(x).T` needs no communication: the transpose swaps the axes' places.")
    assert "no collectives" in nb.view("(lambda x: jnp.sin(x).T)(xe)")

    nb.says("the reshard of the argument (an all-gather and an all-to-all) happens there, at "
            "`sin`'s line: the edge from `xa` into `sin` is red and dashed, "
            "`P('X', 'Y') → P('Y', None)`.")
    sin = line_of(nb.cell("def constrained(x):").source, "jnp.sin(x)")
    text = nb.view("%jaxpr --sharding constrained(xa)")
    kinds = re.findall(rf"^  (all-gather of xa|all-to-all) .* constrained:{sin} ", text, re.M)
    assert sorted(kinds) == ["all-gather of xa", "all-to-all"], text
    assert re.search(rf"v\d+ op +sin .*\(P\('X', 'Y'\) → P\('Y', None\)\) +@ constrained:{sin}$",
                     text, re.M), text


def test_the_readmes_sharding_table_is_what_the_notebook_prints(executed_notebooks):
    nb = Notebook(executed_notebooks, "11_sharding")
    block = README.read_text().split("```\ncollectives of mlp:", 1)[1].split("```", 1)[0]
    shown = nb.view("%jaxpr --sharding mlp(x, w1, w2)").splitlines()
    for line in ("collectives of mlp:" + block).strip().splitlines():
        assert line in shown, line
