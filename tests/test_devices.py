"""%devices and jaxmagic.devices_info(): the devices JAX sees on 8 virtual CPU devices, the
single-device hint (in a fresh process), and how memory and remote devices are drawn."""
import os
import subprocess
import sys

import jax
from conftest import run

import jaxmagic
from jaxmagic.core.devices import CPU_HINT, DeviceRow, DevicesModel
from jaxmagic.render.devices import DevicesView
from jaxmagic.render.html import DEVICE_COLOURS


def test_devices_info_lists_every_device():
    view = jaxmagic.devices_info()
    m = view.model
    assert [d.id for d in m.devices] == [d.id for d in jax.devices()]
    assert len(m.devices) == 8 and len(m.local) == 8
    assert (m.process_index, m.process_count) == (0, 1)
    assert m.default_backend == jax.default_backend() == "cpu"
    assert all(d.platform == "cpu" and d.process == 0 and d.local for d in m.devices)
    assert [d.colour for d in m.devices] == list(range(8))
    assert m.notes == []                      # 8 devices: no single-device hint
    text = view.text()
    assert text.startswith("devices: 8 global devices, 8 local")
    assert "process 0 of 1" in text and "process 0 (this process): 8 devices" in text
    assert jax.__version__ in text


def test_html_gives_each_device_its_shardviz_colour():
    h = jaxmagic.devices_info()._repr_mimebundle_()["text/html"]
    for bad in ("<svg", "<style", "<script", "var(--"):
        assert bad not in h
    for i in range(8):
        assert f"background:{DEVICE_COLOURS[i]};" in h and f">{i}</span>" in h


def test_magic_displays_and_o_returns_the_view(ip):
    res, cap = run(ip, "%devices")
    assert res.success
    (out,) = [o for o in cap.outputs if "text/html" in o.data]
    assert "8 global devices" in out.data["text/plain"]
    view = ip.run_line_magic("devices", "-o")
    assert isinstance(view, DevicesView) and len(view.model.devices) == 8


def _row(i, proc, local, **kw):
    return DeviceRow(id=i, platform="tpu", kind="TPU v5 lite", process=proc, local=local,
                     colour=i, text=f"TPU_{i}", **kw)


def test_memory_coords_and_remote_devices_are_drawn():
    rows = [_row(0, 0, True, coords=(0, 0, 0), core_on_chip=0, bytes_in_use=3 << 30,
                 bytes_limit=16 << 30),
            _row(1, 1, False, coords=(1, 0, 0), core_on_chip=0)]
    view = DevicesView(DevicesModel(rows, "tpu", 1, 2, "0.0"))
    text = view.text()
    assert text.splitlines()[1] == "process 1 (this process): 1 device"   # this one first
    assert "3 GiB of 16 GiB" in text and "(0, 0, 0) core 0" in text and "remote" in text
    h = view.html()
    assert "memory in use" in h and "coords" in h and "3 GiB of 16 GiB" in h


def test_memory_column_absent_where_no_platform_reports_it():
    h = jaxmagic.devices_info().html()
    assert "memory in use" not in h and "coords" not in h


def test_single_device_suggests_virtual_cpu_devices():
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["JAX_PLATFORMS"] = "cpu"
    out = subprocess.run(
        [sys.executable, "-c", "import jaxmagic; print(jaxmagic.devices_info().text())"],
        env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "1 global device, 1 local" in out.stdout
    assert CPU_HINT in out.stdout
    assert "--xla_force_host_platform_device_count=8" in CPU_HINT
