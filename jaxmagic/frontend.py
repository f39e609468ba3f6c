"""Which frontend runs this kernel's widgets, and so what `%jaxpr` shows: its explorer
there, the static picture elsewhere (the terminal, plain shells, headless runs)."""
from __future__ import annotations

import os
import sys
from importlib.util import find_spec

from IPython.display import display

from .options import static_command


def widget_frontend(shell) -> str | None:
    """The frontend that runs this kernel's widgets, if one is known to: a kernel started
    for a Jupyter server's notebook session (JupyterLab, Notebook 7), VS Code's, Colab's.

    A kernel that nbclient or papermill runs is none of these: it records widget state
    in the notebook, and nbconvert would then draw the widget (fetching its JavaScript)
    instead of the static picture.
    """
    if getattr(shell, "kernel", None) is None:
        return None
    if os.environ.get("JPY_SESSION_NAME"):
        return "jupyter"
    if "__vsc_ipynb_file__" in shell.user_ns:
        return "vscode"
    if "google.colab" in sys.modules:
        return "colab"
    return None


def show_jaxpr(shell, view, args, call: str, cell: str | None, explorer: bool) -> None:
    """`%jaxpr`'s view: the explorer where `explorer` (`JaxMagic.explorer`) is on, the
    view a drawn jaxpr, anywidget installed and the frontend one that runs widgets; else
    the format asked for. `call` is the traced call's source, which "copy as magic"
    writes (`options.static_command`)."""
    __tracebackhide__ = True
    if args.format == "svg" and explorer and view.stage == "jaxpr" and \
            view.drawing is not None and widget_frontend(shell) and find_spec("anywidget"):
        from .explorer import JaxprExplorer, show

        try:
            widget = JaxprExplorer(view, static_command(args, call, cell))
        except KeyboardInterrupt:    # in its first layout: the picture, drawn already
            display(view)
            return
        show(widget)
        return
    display(view.formatted(args.format))
