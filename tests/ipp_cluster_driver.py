"""Run docs/cluster.md's notebook cells, in order, in a real InteractiveShell driving two
ipyparallel engines; print one JSON line (prefixed RESULT) with what each cell showed.

    python tests/ipp_cluster_driver.py PORT

The only change to the cells: the coordinator port becomes PORT (a free one).
Used by tests/test_multihost.py, so the document cannot drift from what works.
"""
import json
import re
import sys
from pathlib import Path

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from traitlets.config import Config

DOC = Path(__file__).resolve().parents[1] / "docs" / "cluster.md"


def cells(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def main() -> None:
    port = sys.argv[1]
    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    report = []
    for src in cells(DOC.read_text()):
        src = src.replace("127.0.0.1:12355", f"127.0.0.1:{port}")
        with capture_output() as cap:
            res = shell.run_cell(src)
        report.append({
            "source": src,
            "success": bool(res.success),
            "error": repr(res.error_in_exec or res.error_before_exec or ""),
            "stdout": cap.stdout[-4000:],
            "stderr": cap.stderr[-4000:],
            "outputs": [{"plain": o.data.get("text/plain", ""),
                         "has_html": "text/html" in o.data,
                         "html": o.data.get("text/html", "")}
                        for o in cap.outputs],
        })
        if not res.success:
            break
    cluster = shell.user_ns.get("cluster")
    if cluster is not None and report and not report[-1]["success"]:
        cluster.stop_cluster_sync()
    print("RESULT " + json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
