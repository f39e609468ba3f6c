"""The explorer widget: a `JaxprView` whose groups open and close on a click, with hover
details, search, zoom and pan, in frontends that run widgets (anywidget: JupyterLab,
Notebook 7, VS Code, Colab, marimo).

It is a renderer of the view, not a second model: every frame comes from
`render.explore.Exploration`, laid out as the static picture is. The static picture is an
output of its own, just before the widget's (`show`): where the explorer draws in
JupyterLab it moves into the picture's output (hiding the picture in the page only) and
asks the kernel to blank the widget's output, so the notebook saved then holds the picture
and a widget output every frontend hides (`model_id` "") instead of one that reopens,
without its kernel, as "Error displaying widget: model not found". The picture carries
the explorer's token (`picture`): a page reloaded while the kernel runs makes the model
again from the kernel, finds the picture by it and draws the explorer there again.
"""
from __future__ import annotations

import uuid
from pathlib import Path

import anywidget
import traitlets as t
from IPython import get_ipython
from IPython.display import display

from .cellhooks import cell_name
from .render import layout
from .render.explore import Exploration, file_name

_ESM = (Path(__file__).parent / "static" / "explorer.js").read_text(encoding="utf-8")
WIDGET = "application/vnd.jupyter.widget-view+json"
# what jupyterlab_widgets (and ipywidgets' other frontends) draw as nothing at all
BLANK = {WIDGET: {"version_major": 2, "version_minor": 1, "model_id": ""}, "text/plain": ""}


def show(explorer: "JaxprExplorer") -> None:
    """The static picture (the view's own output, its picture marked), then the widget's."""
    display(_Marked(explorer.view, explorer.picture))
    explorer.handle = display(explorer, display_id=True)


class _Marked:
    """A view's output whose picture (its first `<img>`) carries an explorer's token: the
    page finds the picture again after a reload, when the widget's output is blank."""

    def __init__(self, view, token: str) -> None:
        self.view, self.token = view, token

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = dict(self.view._repr_mimebundle_(include, exclude))
        html = bundle.get("text/html", "")
        bundle["text/html"] = html.replace(
            "<img ", f'<img data-jaxmagic-picture="{self.token}" ', 1)
        return bundle


def _place(shell):
    """How hover and search name where a line is: the cell as IPython numbers it
    (`In [3]`), else the user's file."""
    return lambda file: cell_name(shell, file) or file_name(file)


class JaxprExplorer(anywidget.AnyWidget):
    """`%jaxpr`'s picture, explorable. `command` is the magic that drew it, without its
    `--depth`/`--expand` ("%jaxpr {options} f(x)"): "copy as magic" fills them in."""

    _esm = _ESM
    svg = t.Unicode("").tag(sync=True)
    table = t.Dict().tag(sync=True)
    highlight = t.List(t.Unicode()).tag(sync=True)
    magic = t.Unicode("").tag(sync=True)
    caveat = t.Unicode("").tag(sync=True)
    status = t.Unicode("").tag(sync=True)
    seconds = t.Float(0.0).tag(sync=True)
    answered = t.Int(0).tag(sync=True)     # messages answered: the page stops waiting
    picture = t.Unicode("").tag(sync=True)  # the token its static picture carries (`show`)
    moved = t.Bool(False).tag(sync=True)   # drawn in the picture's place, its output blank
    focus = t.Unicode("").tag(sync=True)   # a group a click opened: drawn legibly, in view

    def __init__(self, view, command: str = "%jaxpr {options}", **kwargs) -> None:
        super().__init__(picture=uuid.uuid4().hex, **kwargs)
        self.view = view
        self.command = command
        self.exploration = Exploration(view, _place(get_ipython()))
        self._show(self.exploration.frame())     # the notes are under the picture
        self.handle = None
        self.on_msg(self._on_message)

    def _on_message(self, _widget, content: dict, _buffers) -> None:
        """A click (`{"type": "toggle", "key": "n12"}`), a search (`{"type": "search",
        "query": "dot_general"}`) or a reset (`{"type": "reset"}`) from the page: lay out
        the new view and send it."""
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        if kind == "moved":     # drawn inside the picture's output: blank its own
            if self.handle is not None:
                self.handle.update(BLANK, raw=True)
            self.moved = True   # a page reloaded draws it there again (explorer.js `again`)
            return
        if content.get("seen", self.answered) != self.answered:
            return      # sent from a picture since replaced (a quick second click)
        x = self.exploration
        before = x.snapshot()
        try:
            if kind == "toggle":
                said = x.toggle(str(content.get("key", "")))
            elif kind == "search":
                said = x.search(str(content.get("query", ""))[:200])
            elif kind == "reset":
                said = x.reset()
            else:
                return
            self._show(x.frame(said))
        except (layout.LayoutTimeout, layout.NoRenderer, RuntimeError) as e:
            x.restore(before)
            self.status = f"{e}; the picture is unchanged"
        self.answered += 1

    def _show(self, frame) -> None:
        with self.hold_sync():
            self.svg, self.table, self.highlight = frame.svg, frame.table, frame.highlight
            self.focus = frame.focus
            self.magic = self.command.replace("{options}", frame.options, 1)
            self.caveat, self.status, self.seconds = frame.caveat, frame.status, frame.seconds

    def _repr_mimebundle_(self, **kwargs):
        """The widget's view and no text: the picture is the output before it (`show`)."""
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data["text/plain"] = ""
        return bundle
