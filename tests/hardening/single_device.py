"""Run magics in a fresh shell that sees one CPU device; print one JSON line of results.

Input on stdin: {"setup": code, "cells": {name: cell}}. XLA_FLAGS comes from the parent
(device count 1), set before JAX is imported.
"""
import json
import re
import sys

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from traitlets.config import Config

sys.path.insert(0, __file__.rsplit("/", 2)[0])      # tests/, for hardening.state

from hardening.state import GlobalState  # noqa: E402


def main() -> None:
    job = json.loads(sys.stdin.read())
    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    shell.run_line_magic("load_ext", "jaxmagic")
    assert shell.run_cell(job["setup"]).success
    import jax

    results = {}
    for name, cell in job["cells"].items():
        before = GlobalState.take(shell)
        with capture_output() as cap:
            r = shell.run_cell(cell)
        rich = [o.data for o in cap.outputs]
        results[name] = {
            "devices": jax.device_count(),
            "success": r.success,
            "outputs": len(rich),
            "plain": "\n".join(d.get("text/plain", "") for d in rich),
            "text": re.sub(r"\x1b\[[0-9;]*m", "", cap.stdout + cap.stderr),
            "state_diff": before.diff(GlobalState.take(shell)),
        }
    print(json.dumps(results))


if __name__ == "__main__":
    main()
