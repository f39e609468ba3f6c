"""`python -m jaxmagic check`: .py and .ipynb, human and JSON output, exit status."""
from __future__ import annotations

import json
import subprocess
import sys

import nbformat
import pytest

from jaxmagic.__main__ import main


@pytest.fixture
def files(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1\n")
    warn = tmp_path / "warn.py"
    warn.write_text("import jax.numpy as jnp\nx = jnp.zeros(3)\nx.at[0].set(1)\n")
    clean = tmp_path / "clean.py"
    clean.write_text("import jax.numpy as jnp\nx = jnp.zeros(3)\nx = x.at[0].set(1)\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# title"),
                nbformat.v4.new_code_cell("import jax\nimport jax.numpy as jnp\n"
                                          "%load_ext jaxmagic"),
                nbformat.v4.new_code_cell("def neg(x):\n    return x[x < 0]"),
                nbformat.v4.new_code_cell("!ls\njax.jit(neg)(jnp.arange(3.0))\n"
                                          "y = jnp.ones(2)\ny[0] = 5")]
    ipynb = tmp_path / "nb.ipynb"
    nbformat.write(nb, ipynb)
    return {"bad": bad, "warn": warn, "clean": clean, "nb": ipynb, "dir": tmp_path}


def test_exit_status(files, capsys):
    assert main(["check", str(files["clean"])]) == 0
    assert main(["check", str(files["warn"])]) == 0        # warnings do not fail
    assert main(["check", str(files["bad"])]) == 1
    out = capsys.readouterr().out
    assert f"{files['bad']}:3:1: JX101 [error]" in out and "x = x.at[0].set(1)" in out
    assert main(["check", str(files["bad"]), "--ignore", "JX1"]) == 0


def test_notebook_cells_in_order(files, capsys):
    assert main(["check", str(files["nb"])]) == 1
    out = capsys.readouterr().out
    assert f"{files['nb']}:cell 2:2:12: JX201" in out       # neg's own cell and line
    assert f"{files['nb']}:cell 3:4:1: JX101" in out


def test_json_format(files, capsys):
    assert main(["check", "--format", "json", str(files["dir"])]) == 1
    doc = json.loads(capsys.readouterr().out)
    rules = sorted((d["rule"], d["path"].rsplit("/", 1)[-1], d["cell"], d["line"])
                   for d in doc["findings"])
    assert rules == [("JX101", "bad.py", None, 3), ("JX101", "nb.ipynb", 3, 4),
                     ("JX105", "warn.py", None, 3), ("JX201", "nb.ipynb", 2, 2)]
    assert doc["errors"] == 3
    f = next(d for d in doc["findings"] if d["path"].endswith("bad.py"))
    assert f["severity"] == "error" and f["rewrite"] == "x = x.at[0].set(1)"
    assert f["col"] == 1 and f["end_col"] == 8 and f["family"] == "mutation"


def test_rules_listing_and_usage(capsys):
    assert main(["check", "--rules"]) == 0
    out = capsys.readouterr().out
    assert "JX101" in out and "JX603" in out
    assert main(["check"]) == 2
    assert main(["check", "/nonexistent/file.py"]) == 2


def test_module_entry_point(files):
    p = subprocess.run([sys.executable, "-m", "jaxmagic", "check", str(files["bad"])],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "JX101" in p.stdout


def test_pre_commit_hook_manifest():
    import pathlib

    import yaml
    root = pathlib.Path(__file__).parent.parent
    hooks = yaml.safe_load((root / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "jaxcheck")
    assert hook["entry"].split()[:2] == ["jaxmagic", "check"]
    assert set(hook["types_or"]) == {"python", "jupyter"}
