"""The labelled corpus: precision and recall per family, silence on idiomatic JAX, and
every runtime case mapped to the right rule and line."""
from __future__ import annotations

import linecache
import pathlib
import re
from collections import defaultdict

import pytest

from jaxmagic.core.checks import FAMILIES, RULES, check_source, explain

CORPUS = pathlib.Path(__file__).parent / "corpus"
_HEAD = re.compile(r"^# %% (\S+)(.*)$")


def _labels(text: str) -> set[tuple[str, int]]:
    text = text.strip()
    if text in ("", "-"):
        return set()
    out = set()
    for tok in text.split():
        rule, line = tok.split("@")
        assert rule in RULES, rule
        out.add((rule, int(line)))
    return out


def load_corpus():
    cells = []
    for path in sorted(CORPUS.glob("*.py")):
        cur = None
        for raw in path.read_text().splitlines():
            m = _HEAD.match(raw)
            if m:
                fields = dict(part.strip().split(":", 1) for part in m.group(2).split("|")
                              if ":" in part)
                cur = {"name": f"{path.stem}/{m.group(1)}", "family": path.stem,
                       "static": _labels(fields.get("static", "-")),
                       "runtime": _labels(fields["runtime"]) if "runtime" in fields
                       else None, "lines": []}
                cells.append(cur)
            elif cur is not None:
                cur["lines"].append(raw)
    for c in cells:
        c["src"] = "\n".join(c["lines"]) + "\n"
    return cells


CELLS = load_corpus()
RUNTIME = [c for c in CELLS if c["runtime"]]


def test_corpus_size_and_coverage():
    assert len(CELLS) >= 80
    positives = {r for c in CELLS for r, _ in c["static"] | (c["runtime"] or set())}
    assert positives == set(RULES), f"rules without a positive: {set(RULES) - positives}"
    negatives = [c for c in CELLS if not c["static"] and not c["runtime"]]
    assert {c["family"] for c in negatives} >= {"mutation", "tracing", "purity", "indexing",
                                               "types", "jit_args"}


def _family(rule: str) -> str:
    return RULES[rule].family


def test_precision_recall_per_family(capsys):
    tp, fp, fn = defaultdict(int), defaultdict(int), defaultdict(int)
    problems = []
    for c in CELLS:
        found = {(f.rule, f.line) for f in check_source(c["src"])}
        for r in found & c["static"]:
            tp[_family(r[0])] += 1
        for r in found - c["static"]:
            fp[_family(r[0])] += 1
            problems.append(f"{c['name']}: unexpected {r}")
        for r in c["static"] - found:
            fn[_family(r[0])] += 1
            problems.append(f"{c['name']}: missed {r}")
    lines = [f"{'family':10} {'tp':>4} {'fp':>4} {'fn':>4} {'precision':>10} {'recall':>7}"]
    for fam in FAMILIES:
        p = tp[fam] / (tp[fam] + fp[fam]) if tp[fam] + fp[fam] else 1.0
        r = tp[fam] / (tp[fam] + fn[fam]) if tp[fam] + fn[fam] else 1.0
        lines.append(f"{fam:10} {tp[fam]:4} {fp[fam]:4} {fn[fam]:4} {p:10.2f} {r:7.2f}")
    T, F, N = sum(tp.values()), sum(fp.values()), sum(fn.values())
    precision, recall = T / (T + F), T / (T + N)
    lines.append(f"{'overall':10} {T:4} {F:4} {N:4} {precision:10.2f} {recall:7.2f}")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
        for p in problems:
            print("  " + p)
    assert precision >= 0.95, problems


@pytest.mark.parametrize("cell", [c for c in CELLS if not c["static"] and not c["runtime"]],
                         ids=lambda c: c["name"])
def test_negatives_are_silent(cell):
    assert [f.text() for f in check_source(cell["src"])] == []


def _namespace():
    import functools

    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax
    from jax.experimental import checkify

    from jaxmagic.core.checks import checkified
    return {"jax": jax, "jnp": jnp, "np": np, "lax": lax, "partial": functools.partial,
            "checkify": checkify, "checkified": checkified, "__name__": "__main__"}


@pytest.mark.parametrize("cell", RUNTIME, ids=lambda c: c["name"])
def test_runtime_maps_to_rule_and_line(cell):
    filename = f"<cell-corpus-{cell['name']}>"
    src = cell["src"]
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    with pytest.raises(Exception) as info:
        exec(compile(src, filename, "exec"), _namespace())   # noqa: S102
    finding = explain(info.value, src)
    assert finding is not None, f"{type(info.value).__name__}: {info.value}"
    assert {(finding.rule, finding.line)} == cell["runtime"], finding.text()
    assert finding.origin == "runtime" and finding.fix
    assert finding.source.strip() == src.splitlines()[finding.line - 1].strip()
