"""Never break a working cell: notebooks replayed with and without jaxmagic.

Every notebook under tests/replay/ (realistic ones of ours: a training loop with
optax-style updates written by hand, pytrees of parameters, random keys, lax.scan / cond /
while_loop, sharded arrays, NumPy code mutating NumPy arrays; drop a public tutorial in to
replay it too) is executed by a real kernel twice: as it is, and with `%load_ext jaxmagic`
+ `%jaxcheck on` inserted after its first cell. Every cell's outputs (streams joined, rich
outputs by their text/plain, errors by name and value; execution counts ignored) and the
final user namespace (a digest of every name's value) must be identical: no card, no
warning, no changed value.
"""
from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell

REPLAY = sorted((Path(__file__).parent / "replay").glob("*.ipynb"))

LOAD = "%load_ext jaxmagic\n%jaxcheck on"

# Printed by a last cell in both runs: a digest of the namespace (arrays by dtype, shape
# and bytes; functions and modules by name; the rest by repr, addresses dropped).
DIGEST = r'''
def __digest():
    import hashlib, json, re, types
    import numpy as _np
    skip = {"In", "Out", "exit", "quit", "get_ipython", "_", "__", "___", "_dh", "_ih",
            "_oh", "_exit_code"}
    out = {}
    for name, value in sorted(globals().items()):
        if name in skip or re.fullmatch(r"_(i+|i?\d+)", name) or name == "__digest" \
                or name.startswith("__") and name.endswith("__"):
            continue
        if isinstance(value, types.ModuleType):
            out[name] = "module " + value.__name__
        elif callable(value) and hasattr(value, "__qualname__"):
            out[name] = "callable " + value.__qualname__
        else:
            def leaf(v):
                if hasattr(v, "shape") and hasattr(v, "dtype"):
                    import jax
                    if jax.dtypes.issubdtype(v.dtype, jax.dtypes.prng_key):
                        v = jax.random.key_data(v)          # a typed random key
                    a = _np.asarray(v)
                    return f"{a.dtype}{a.shape}:" + hashlib.sha1(a.tobytes()).hexdigest()
                return re.sub(r"(?i) at 0x[0-9a-f]+", "", repr(v))
            try:
                import jax
                leaves, tree = jax.tree_util.tree_flatten(value)
                out[name] = str(tree) + "|" + "|".join(map(leaf, leaves))
            except Exception:
                out[name] = leaf(value)
    print(json.dumps(out, sort_keys=True))
__digest()
'''


def execute(nb, workdir: Path):
    from nbclient import NotebookClient

    client = NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=False,
                            resources={"metadata": {"path": str(workdir)}})
    client.execute()
    return nb


def outputs(cell) -> list:
    """A cell's outputs as comparable data: consecutive streams joined."""
    got = []
    for out in cell.get("outputs", []):
        kind = out["output_type"]
        if kind == "stream":
            if got and got[-1][0] == "stream" and got[-1][1] == out["name"]:
                got[-1] = ("stream", out["name"], got[-1][2] + out["text"])
            else:
                got.append(("stream", out["name"], out["text"]))
        elif kind in ("execute_result", "display_data"):
            got.append((kind, out["data"].get("text/plain", ""), sorted(out["data"])))
        elif kind == "error":
            got.append((kind, out["ename"], out["evalue"]))
    return got


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("replay")


@pytest.mark.slow
@pytest.mark.parametrize("path", REPLAY, ids=[p.stem for p in REPLAY])
def test_notebook_runs_identically_with_jaxmagic(path, workdir):
    plain = nbformat.read(path, as_version=4)
    plain.cells.append(new_code_cell(DIGEST))
    loaded = copy.deepcopy(plain)
    loaded.cells.insert(2 if plain.cells[0].cell_type == "markdown" else 1,
                        new_code_cell(LOAD))
    with ThreadPoolExecutor(2) as pool:         # two kernels at once: half the wall time
        for run in [pool.submit(execute, nb, workdir) for nb in (plain, loaded)]:
            run.result()
    load_cell = next(c for c in loaded.cells if c.source == LOAD)
    assert [o.get("name") for o in load_cell.outputs] in ([], ["stdout"]), load_cell.outputs
    loaded.cells.remove(load_cell)

    code = [(a, b) for a, b in zip(plain.cells, loaded.cells) if a.cell_type == "code"]
    assert code and all(a.source == b.source for a, b in code)
    for i, (a, b) in enumerate(code[:-1]):
        assert outputs(b) == outputs(a), f"cell {i} of {path.name} changed:\n{a.source}"
    digest_plain, digest_loaded = outputs(code[-1][0]), outputs(code[-1][1])
    assert digest_plain and digest_loaded == digest_plain, "the namespace differs"
