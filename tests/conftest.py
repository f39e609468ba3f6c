"""Real JAX on 8 virtual CPU devices, and a real IPython shell with the extension loaded."""
import os
import signal

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import pytest  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.utils.capture import capture_output  # noqa: E402
from traitlets.config import Config  # noqa: E402


@pytest.fixture(scope="session")
def shell():
    config = Config()
    config.HistoryManager.enabled = False
    sh = InteractiveShell.instance(config=config)
    sh.run_cell("import jax, jax.numpy as jnp, numpy as np")
    sh.run_line_magic("load_ext", "jaxmagic")
    return sh


@pytest.fixture
def ip(shell):
    """The shared shell, with the extension loaded and the magics' config reset."""
    yield shell
    shell.run_line_magic("load_ext", "jaxmagic")


@pytest.fixture
def default_sigint():
    """Python's own Ctrl-C handler during a test that sends SIGINT: a suite a script
    starts in the background (`cmd &`) inherits SIGINT ignored, and then neither a real
    SIGINT nor `_thread.interrupt_main` raises KeyboardInterrupt."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def run(ip, cell):
    """Run a cell; return (result, captured) with rich outputs in captured.outputs."""
    with capture_output() as cap:
        result = ip.run_cell(cell)
    return result, cap


@pytest.fixture(scope="session")
def executed_notebooks(tmp_path_factory):
    """Each examples/*.ipynb executed once per session (tests/notebook_support.py), shared by
    the notebook, browser and JupyterLab tests."""
    from notebook_support import ExecutedNotebooks

    return ExecutedNotebooks(tmp_path_factory.mktemp("executed"))


@pytest.fixture(scope="session")
def transformer():
    """benchmarks/transformer.py: the benchmarks' layered model (`make`, `model`, `block`)."""
    import importlib
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    return importlib.import_module("transformer")
