"""`%jaxpr --kernels`: every kernel of the compiled program, read back from the HLO text by
this file's own reader (not jaxmagic's): the same kernels, once each, their bytes the
sizes of their operands and results, their user lines those of the HLO's own metadata;
on the graph, each kernel's colour and the bytes between kernels; in a real shell."""
import inspect
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import jaxmagic

FREE = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all",
        "add-dependency", "opt-barrier", "domain", "partition-id", "replica-id"}
ITEM = {"pred": 1, "bf16": 2, "f16": 2, "f32": 4, "f64": 8, "s8": 1, "s32": 4, "s64": 8,
        "u8": 1, "u32": 4, "u64": 8, "c64": 8}


def hlo_kernels(text, primitives=None):
    """{name: (bytes read + written, {(function, line)})} of every instruction that does
    work, with the HLO's stack frames resolved to their innermost function and line.
    With `primitives` (equation index → primitive), only an instruction that is its
    equation's own lowering (`jaxmagic#N/<that primitive>`) gives a frame: the parts of a
    lowering JAX caches (`integer_pow` as `mul`s and a `div`) keep the frames of the
    equation first lowered so, another line's."""
    comps, entry, current = {}, None, None
    for line in text.splitlines():
        head = re.match(r"^(ENTRY )?%([\w.\-]+) .*\{$", line)
        if head:
            current = head.group(2)
            comps[current] = []
            entry = current if head.group(1) else entry
        elif current and (m := re.match(r"\s*(?:ROOT )?%([\w.\-]+) = (\S+|\(.*?\)) "
                                        r"([\w\-]+)\((.*?)\)(.*)$", line)):
            comps[current].append(m.groups())
    shapes = {name: shape for body in comps.values() for name, shape, *_ in body}
    frames = stack_frames(text)

    def size(shape):
        return sum(ITEM[t] * math.prod(int(d) for d in dims.split(",") if d)
                   for t, dims in re.findall(r"\b(pred|bf16|[fsuc]\d+)\[([\d,]*)\]", shape))

    def framed(attrs):
        f = re.search(r"stack_frame_id=(\d+)", attrs)
        name = re.search(r'op_name="[^"]*jaxmagic#(\d+)/([^"/]*)"', attrs)
        if not f or "op_name" not in attrs or (primitives is not None and not (
                name and primitives.get(int(name.group(1))) == name.group(2))):
            return set()
        return {frames[int(f.group(1))]}

    def lines_in(comp, seen=()):
        out = set()
        for name, shape, op, operands, attrs in comps.get(comp, ()):
            out |= framed(attrs)
            for callee in re.findall(r"calls=%([\w.\-]+)", attrs):
                out |= lines_in(callee)
        return out

    found = {}

    def visit(comp):
        for name, shape, op, operands, attrs in comps[comp]:
            if op in FREE or op.endswith("-done"):
                continue
            if op in ("while", "conditional") or (op == "call" and
                                                  "xla_cpu_small_call" not in attrs):
                for callee in re.findall(r"(?:body|condition|to_apply|true_computation|"
                                         r"false_computation)=%([\w.\-]+)", attrs):
                    visit(callee)
                continue
            names = dict.fromkeys(re.findall(r"%([\w.\-]+)", operands))
            moved = size(shape) + sum(size(shapes[n]) for n in names)
            own = framed(attrs)
            for callee in re.findall(r"calls=%([\w.\-]+)", attrs):
                own |= lines_in(callee)
            found[name] = (moved, own)

    visit(entry)
    return found


def stack_frames(text):
    """stack frame id → (function, line) of its own location (the innermost frame)."""
    names = dict(re.findall(r'^(\d+) "([^"]*)"', text.split("FileLocations")[0]
                            .split("FunctionNames")[-1], re.M))
    locations = {int(i): (names[f], int(n)) for i, f, n in re.findall(
        r"^(\d+) \{file_name_id=\d+ function_name_id=(\d+) line=(\d+)", text, re.M)}
    return {int(i): locations[int(loc)] for i, loc in re.findall(
        r"^(\d+) \{file_location_id=(\d+)", text, re.M)}


def check_against_hlo(view, *functions):
    """The view's kernels are the HLO's, each once, with its bytes; each line the HLO's
    metadata names for a kernel is named, and every line named is one of `functions`'
    (more than the metadata's only where XLA merged several equations' names into one
    instruction's, `mul;broadcast_in_dim`, and kept one stack frame)."""
    kernels = view.kernels
    primitives = {e: n.primitive for n in view.full.nodes.values() if n.kind == "op"
                  for e in n.eqns}
    truth = hlo_kernels(kernels.hlo, primitives)
    names = [r["kernel"] for r in kernels.records()]
    assert len(names) == len(set(names)) and set(names) == set(truth), \
        (sorted(set(names) ^ set(truth)))
    written = {f.__code__.co_firstlineno + k for f in functions
               for k in range(len(inspect.getsourcelines(f)[0]))}
    # a frame outside `functions` is not this program's: a lowering JAX cached (relu's
    # `max`) keeps the frames of the program that first lowered it, another test's
    ours = {f.__name__ for f in functions}
    truth = {k: (moved, {(f, n) for f, n in lines if f.split(".")[-1] in ours and
                         n in written}) for k, (moved, lines) in truth.items()}
    # XLA's SPMD partitioner of JAX 0.8-0.9 gives every instruction of a sharded program
    # one stack frame (the forward `x @ w` at the `return` line): no truth to check against
    framed = len(set().union(*(lines for _, lines in truth.values()))) > 1
    for r in kernels.records():
        moved, lines = truth[r["kernel"]]
        assert r["bytes"] == moved, r
        given = {(w.split(":")[0].split(".")[-1], int(w.split(":")[1])) for w in r["lines"]}
        assert not framed or {(f.split(".")[-1], n) for f, n in lines} <= given, (r, lines)
        assert {n for _, n in given} <= written, (r, written)
    return kernels


def mlp(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w)
    return jnp.mean(x ** 2)


def cnn(params, x):
    w1, w2 = params
    y = jax.lax.conv_general_dilated(x, w1, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = jax.nn.relu(y)
    y = jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return jnp.mean((y.reshape(y.shape[0], -1) @ w2) ** 2)


def test_the_transformers_kernels_are_the_hlos_once_each_with_their_bytes_and_lines(
        transformer):
    params, x = transformer.make(16, d=32, t=16)
    view = jaxmagic.trace(jax.grad(transformer.model), params, x, overlays=("kernels",))
    kernels = check_against_hlo(view, transformer.block, transformer.model)
    assert len(kernels) > 16 * 5
    assert {r["kind"] for r in kernels.records()} >= {"loop fusion", "dot"} or \
        any("dot" in r["kind"] for r in kernels.records())
    assert all(r["lines"] for r in kernels.records() if r["equations"]), \
        [r for r in kernels.records() if not r["lines"]][:3]
    assert f"{len(kernels)} kernels" in view.text().splitlines()[0]


def test_a_cnns_convolution_is_a_kernel_with_its_window_flops():
    k = jax.random.split(jax.random.PRNGKey(0), 2)
    params = (jax.random.normal(k[0], (3, 3, 4, 8)), jax.random.normal(k[1], (8 * 4 * 4, 2)))
    x = jnp.ones((2, 8, 8, 4))
    view = jaxmagic.trace(jax.grad(cnn), params, x, overlays=("kernels",))
    kernels = check_against_hlo(view, cnn)
    convs = [r for r in kernels.records() if "convolution" in r["kind"]]
    assert convs
    forward = max(convs, key=lambda r: r["flops"])
    assert forward["flops"] >= 2 * (2 * 8 * 8 * 8) * (3 * 3 * 4)   # 2 per multiply-add


def test_a_sharded_mlps_collectives_are_kernels_of_their_own():
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
    ws = [jax.device_put(jnp.ones((16, 16)) * 0.1, NamedSharding(mesh, P(None, "model")))
          for _ in range(2)]
    x = jax.device_put(jnp.ones((8, 16)), NamedSharding(mesh, P("data", None)))
    view = jaxmagic.trace(jax.jit(jax.grad(mlp)), ws, x, overlays=("kernels",))
    kernels = check_against_hlo(view, mlp)
    matmul = f"mlp:{mlp.__code__.co_firstlineno + 2}"
    assert all(r["lines"] == (matmul,) for r in kernels.records() if r["kind"] == "dot")
    kinds = {r["kind"] for r in kernels.records()}
    assert kinds & {"all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                    "collective-permute"}, kinds


def test_a_dots_flops_are_2mnk_and_a_value_read_by_the_backward_pass_is_said_why():
    ws = [jnp.ones((16, 16)) * 0.1 for _ in range(3)]
    x = jnp.ones((8, 16))
    view = jaxmagic.trace(jax.grad(mlp), ws, x, overlays=("kernels",))
    kernels = check_against_hlo(view, mlp)
    dots = [r for r in kernels.records() if "dot" in r["kind"]]
    assert len(dots) == 8 and all(r["flops"] == 2 * 8 * 16 * 16 for r in dots)
    line = mlp.__code__.co_firstlineno + 2
    said = [b for b in kernels.breaks() if b.startswith(f"tanh at mlp:{line} ends a kernel")]
    assert said and all("also read by the backward pass" in b for b in said), kernels.breaks()
    assert all(r["bound"] in ("compute", "memory") for r in kernels.records())
    assert kernels.balance.ridge > 0


def test_on_the_graph_a_kernels_equations_share_its_colour_and_its_edges_say_bytes():
    from jaxmagic.render.kernels import colour

    def f(x, w):
        y = jnp.sin(x) * 2 + 1          # one loop fusion
        return jnp.tanh(y @ w)          # a dot, then its own fusion

    view = jaxmagic.trace(f, jnp.ones((8, 16)), jnp.ones((16, 4)), overlays=("kernels",))
    kernels = check_against_hlo(view, f)
    g = view.graph
    marks = kernels.overlay(g)["overlay"]
    by_title = {n.title.split()[0]: marks[n.id] for n in g.nodes.values() if n.id in marks}
    assert by_title["sin"][0] == by_title["mul"][0] == by_title["add"][0]
    assert by_title["sin"][1] == by_title["add"][1]      # "K1 loop fusion"
    assert by_title["dot_general"][0] != by_title["sin"][0]
    assert by_title["dot_general"][0] in {colour(k) for k in range(len(kernels))}
    edges = kernels.edge_lines(g)
    titles = {(g.nodes[s].title.split()[0], g.nodes[d].title.split()[0]): v
              for (s, d), v in edges.items()}
    assert titles[("sin", "mul")][2] is True                       # inside one kernel
    assert titles[("add", "dot_general")][0] == "512 B via memory"  # 8×16 f32
    dot = view.dot()
    assert "#cbd5e1" in dot and "512 B via memory" in dot
    assert "kernels" in dot.split("label=")[1].split('"')[1]        # the title says


def test_a_loops_kernels_run_once_per_iteration():
    def step(w, x):
        def body(i, w):
            return w - 0.1 * jax.grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w)
        return jax.lax.fori_loop(0, 10, body, w)

    view = jaxmagic.trace(step, jnp.ones((16, 16)) * 0.1, jnp.ones((8, 16)),
                          overlays=("kernels",))
    kernels = check_against_hlo(view, step)
    inside = [r for r in kernels.records() if r["loop"]]
    assert inside and all(r["times"] == 10 and r["loop"] == "while ×10" for r in inside)
    assert "×10" in kernels.text()


def test_with_profile_each_kernel_has_its_time_and_its_share_of_the_roofline():
    ws = [jnp.ones((64, 64)) * 0.1 for _ in range(3)]
    view = jaxmagic.trace(jax.grad(mlp), ws, jnp.ones((32, 64)),
                          overlays=("kernels", "profile"))
    records = view.kernels.records()
    if view.costs.mode != "profile":
        pytest.skip("the profiler is unavailable here")
    assert sum(1 for r in records if r["seconds"]) >= len(records) // 2
    assert all(r["roofline"] > 0 for r in records if r["seconds"])
    best = {r["kernel"]: view.kernels.balance.best_s(k) for r, k in zip(records, view.kernels)}
    assert all(abs(r["roofline"] - best[r["kernel"]] * r["times"] / r["seconds"]) < 1e-9
               for r in records if r["seconds"])
    assert "of best" in view.kernels.text()


def test_the_magic_takes_kernels_and_says_what_it_does(ip):
    ip.run_cell("def f(x):\n    return jnp.tanh(x * 2) @ x.T\nx = jnp.ones((4, 4))")
    assert "--kernels" in ip.object_inspect_text("%jaxpr")
    view = ip.run_line_magic("jaxpr", "--kernels -o f(x)")
    assert len(view.kernels) >= 2
    assert view.kernels.records()[0]["lines"] and "f:2" in view.kernels.text()
    html = view._repr_mimebundle_()["text/html"]
    assert "flops/byte" in html and "kernels" in html


def test_inside_a_fold_a_group_counts_one_calls_kernels_and_alike_kernels_share_a_row(
        transformer):
    params, x = transformer.make(16, d=32, t=16)
    view = jaxmagic.trace(jax.grad(transformer.model), params, x, overlays=("kernels",))
    g, kernels = view.graph, view.kernels
    folded = [c for c in g.clusters.values() if c.repeat == 16]
    assert folded, [c.title for c in g.clusters.values()]
    lines = [line for _, line, _ in kernels.overlay(g)["overlay"].values()]
    assert any(line.endswith(", each of ×16") for line in lines), lines
    each = next(line for line in lines if line.endswith(", each of ×16"))
    n = int(each.split()[0])
    whole = [k for node in g.nodes.values() if node.cluster in {c.id for c in folded}
             for k in [kernels._kernels_of(node.eqns)] if len(k) == 16 * n]
    assert whole                      # that node stands for 16 calls' kernels, n each
    header, rows = kernels._table()
    assert sum(1 + int(re.search(r"\(\+(\d+) alike\)", r[0]).group(1))
               if "alike" in r[0] else 1 for r in rows) == len(kernels)
    assert any("(+15 alike)" in r[0] for r in rows)
    breaks = kernels.breaks()
    assert len(breaks) == len(set(b.split(" (K")[0] for b in breaks))   # each said once


def test_a_host_callback_and_a_reduction_end_kernels_and_say_so():
    def f(x):
        y = jnp.sin(x) * 2
        jax.debug.print("y {}", y)
        z = y + 1
        return (z - z.mean()).T @ z

    view = jaxmagic.trace(f, jnp.ones((8, 4)), overlays=("kernels",))
    kernels = check_against_hlo(view, f)
    first = f.__code__.co_firstlineno
    breaks = kernels.breaks()
    assert any(b.startswith(f"mul at f:{first + 1} ends a kernel") and
               "host callback (debug_print)" in b for b in breaks), breaks
    assert any(b.startswith("reduce_sum at f:") and "a reduction followed by a broadcast"
               in b for b in breaks), breaks
