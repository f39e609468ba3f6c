"""One process of tests/test_multihost.py: a real two-process JAX cluster on 127.0.0.1.

    python tests/multihost_worker.py PROCESS_ID NUM_PROCESSES PORT

Four CPU devices per process, gloo for cross-process collectives. Builds a globally
sharded array, runs one collective, then runs `%devices -o`, `%jaxpr --sharding -o` and
`%%shardviz -o` in a real
InteractiveShell and prints one JSON line (prefixed RESULT) describing what they show.
"""
import json
import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402

pid, nproc, port = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
# The option exists under this name in jax 0.7.2 and 0.12 (0.7 also kept the older
# boolean jax_cpu_enable_gloo_collectives).
jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=nproc,
                           process_id=pid, initialization_timeout=120)

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from traitlets.config import Config  # noqa: E402

config = Config()
config.HistoryManager.enabled = False
shell = InteractiveShell.instance(config=config)
shell.run_line_magic("load_ext", "jaxmagic")

setup = shell.run_cell("""
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
host = np.arange(8 * 4, dtype=np.float32).reshape(8, 4)
blocks = jax.make_array_from_callback(host.shape, NamedSharding(mesh, P("x", "y")),
                                      lambda idx: host[idx])
rows = jax.make_array_from_callback(host.shape, NamedSharding(mesh, P("x", None)),
                                    lambda idx: host[idx])
# a collective across both processes (gloo): the sum is replicated on all 8 devices
total = jax.jit(lambda a: a.sum(), out_shardings=NamedSharding(mesh, P()))(blocks)
total_local = float(total.addressable_shards[0].data)
""")
setup.raise_error()

devices = shell.run_line_magic("devices", "-o")
shell.user_ns["sums"] = lambda a: (a.sum(0), a.sum(1))
sharded = shell.run_line_magic("jaxpr", "--sharding -o sums(blocks)")
view = shell.run_cell_magic("shardviz", "-o", "{'blocks': blocks, 'rows': rows, 'total': total}")
named = shell.run_cell_magic("shardviz", "-o rows", "rows_again = rows")
html = view.html()

dev_proc = {m.id: m.process for m in view.model.devices.values()}
layouts = {}
for lay in view.layouts:
    layouts[lay.path] = {
        "tiles": [{"index": t.index, "devices": list(t.devices),
                   "processes": sorted({dev_proc[d] for d in t.devices})} for t in lay.tiles],
        "spec": lay.spec,
    }
print("RESULT " + json.dumps({
    "process_index": jax.process_index(),
    "process_count": jax.process_count(),
    "global": [[d.id, d.process_index] for d in jax.devices()],
    "local": [d.id for d in jax.local_devices()],
    "devices_text": devices.text(),
    "devices_rows": [[d.id, d.process, d.local] for d in devices.model.devices],
    "devices_html": devices.html(),
    "shardviz_text": view.text(),
    "shardviz_html_has_process_labels": all(f"p{p}" in html for p in range(nproc)),
    "multi_process": view.model.multi_process,
    "layouts": layouts,
    "named_paths": [lay.path for lay in named.layouts],
    "total": shell.user_ns["total_local"],
    "collectives": [[c.kind, list(c.axes), c.processes] for c in sharded.collectives],
    "collectives_text": sharded.collectives.text(),
}), flush=True)
jax.distributed.shutdown()
