"""Two real JAX processes on 127.0.0.1 (`jax.distributed.initialize`, 4 CPU devices each,
gloo collectives): each one's `%devices` shows 8 global / 4 local devices over 2 processes,
its `%%shardviz` labels every shard with the process that owns it, and its
`%jaxpr --sharding` says which collectives cross processes."""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("multihost_worker.py")
NPROC = 2

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def results():
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    procs = [subprocess.Popen([sys.executable, str(WORKER), str(i), str(NPROC), str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env)
             for i in range(NPROC)]
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=240)
            outs.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    got = []
    for i, (code, out, err) in enumerate(outs):
        lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
        assert code == 0 and lines, f"process {i} failed ({code}):\n{out[-2000:]}\n{err[-4000:]}"
        got.append(json.loads(lines[-1][len("RESULT "):]))
    return got


def test_each_process_knows_its_place(results):
    assert [r["process_index"] for r in results] == [0, 1]
    assert all(r["process_count"] == 2 for r in results)
    assert results[0]["global"] == results[1]["global"]
    assert not set(results[0]["local"]) & set(results[1]["local"])


def test_gloo_collective_ran_across_processes(results):
    assert all(r["total"] == sum(range(32)) for r in results)


def test_devices_shows_8_global_4_local_over_2_processes(results):
    for r in results:
        text = r["devices_text"]
        assert text.startswith("devices: 8 global devices, 4 local")
        assert f"process {r['process_index']} of 2" in text
        assert f"process {r['process_index']} (this process): 4 devices" in text
        other = 1 - r["process_index"]
        assert f"process {other}: 4 devices" in text
        rows = r["devices_rows"]
        assert len(rows) == 8
        assert sorted(i for i, _, local in rows if local) == sorted(r["local"])
        assert {p for _, p, _ in rows} == {0, 1}
        assert all((p == r["process_index"]) == local for _, p, local in rows)
        assert "remote" in r["devices_html"]


def test_shardviz_labels_every_shard_with_its_owning_process(results):
    for r in results:
        owner = {d: p for d, p in r["global"]}
        assert r["multi_process"]
        lays = r["layouts"]
        assert set(lays) == {"['blocks']", "['rows']", "['total']"}
        blocks = lays["['blocks']"]["tiles"]
        assert len(blocks) == 8
        assert {tuple(t["devices"]) for t in blocks} == {(d,) for d in owner}
        for lay in lays.values():
            for t in lay["tiles"]:
                assert t["processes"] == sorted({owner[d] for d in t["devices"]})
        rows = lays["['rows']"]["tiles"]             # P('x', None): one process per row
        assert [t["processes"] for t in rows] == [[0], [1]]
        (total,) = lays["['total']"]["tiles"]        # replicated over both processes
        assert total["processes"] == [0, 1] and len(total["devices"]) == 8
        text = r["shardviz_text"]
        for d, p in owner.items():                   # every tile label carries p<owner>
            assert f"p{p}:{d}" in text
        assert "2 processes" in text and "(this one)" in text
        assert r["shardviz_html_has_process_labels"]
        assert r["named_paths"] == ["rows"]


# ---- docs/cluster.md: one notebook driving two ipyparallel engines ----------------------

DRIVER = Path(__file__).with_name("ipp_cluster_driver.py")


@pytest.fixture(scope="module")
def px_cells():
    pytest.importorskip("ipyparallel")
    out = subprocess.run([sys.executable, str(DRIVER), str(_free_port())],
                         capture_output=True, text=True, timeout=600,
                         env={k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"})
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, f"driver failed ({out.returncode}):\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}"
    cells = json.loads(lines[-1][len("RESULT "):])
    failed = [c for c in cells if not c["success"]]
    assert not failed, f"docs/cluster.md cell failed: {failed[0]['source']}\n{failed[0]['error']}"
    return cells


def _cell(cells, start):
    (c,) = [c for c in cells if c["source"].startswith(start)]
    return c


def _views(cell):
    return [o for o in cell["outputs"] if o["has_html"]]


def test_docs_cluster_cells_all_run(px_cells):
    assert len(px_cells) >= 8
    assert "0 8 4" in px_cells[1]["stdout"] and "1 8 4" in px_cells[1]["stdout"]


def test_docs_cluster_devices_from_engine_0(px_cells):
    (view,) = _views(_cell(px_cells, "%%px --targets 0\n%devices"))
    assert view["plain"].startswith("devices: 8 global devices, 4 local")
    assert "process 0 of 2" in view["plain"] and "remote" in view["plain"]


def test_docs_cluster_shardviz_on_every_engine_labels_processes(px_cells):
    views = _views(_cell(px_cells, "%%px\n%%shardviz"))
    assert len(views) == 2                      # one picture per engine
    # %%px gathers outputs in the order the engines answer, not by process index
    assert {i for v in views for i in (0, 1) if f"process {i} (this one)" in v["plain"]} == {0, 1}
    for v in views:
        assert "p0:" in v["plain"] and "p1:" in v["plain"]
        assert ">p0<" in v["html"] and ">p1<" in v["html"]


def test_docs_cluster_line_form_draws_from_one_engine(px_cells):
    (view,) = _views(_cell(px_cells, "%%px --targets 0\n%shardviz"))
    plain = view["plain"]
    assert plain.startswith("shardviz x total y")
    assert "x  float32[8, 8]" in plain and "y  float32[8, 8]" in plain
    assert "p0:0,1,2,3" in plain                  # y = P('x', None): a row per process


def test_jaxpr_sharding_says_which_collectives_cross_processes(results):
    """Rows of the 2×4 mesh are the two processes: a sum over `x` crosses them, a sum
    over `y` stays inside each."""
    for r in results:
        found = {(kind, tuple(axes)): procs for kind, axes, procs in r["collectives"]}
        assert found.get(("all-reduce", ("x",))) == 2, r["collectives"]
        assert found.get(("all-reduce", ("y",))) == 1, r["collectives"]
        assert "across 2 processes" in r["collectives_text"]
