"""What the picture asks of an overlay's result (`view.costs`, `view.memory`, …).

An overlay's `compute` returns a `Result`; the view, its text, its tables and the
explorer's hover ask every result the same questions and never probe for an attribute.
Each answer defaults to adding nothing, so a result says only what it draws.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from ..graph.model import Graph


class Result:
    """The base of every overlay's result; override what it adds to the picture."""

    draws: ClassVar[str | None] = None   # "fill": the picture's fill (the last asked for
    # wins); "lines": its own fill and a line on its own nodes, over the fill
    marks_inputs: ClassVar[bool] = False  # each argument gets its own edge

    def overlay(self, g: Graph) -> dict:
        """Per node id: (fill, its figures line, emphasised)."""
        return {}

    def cluster_overlay(self, g: Graph) -> dict:
        """Per group id: (fill, its figures line, emphasised)."""
        return {}

    def edge_lines(self, g: Graph) -> dict[tuple[int, int], tuple]:
        """Per edge (source, target): (its label, emphasised), or (its label, emphasised,
        faint): a faint edge is drawn light (a value that never left a kernel)."""
        return {}

    def title(self) -> str:
        """Words the picture's title ends with ("14 kernels"; "" for none)."""
        return ""

    def hover(self, g: Graph) -> dict[str, list[str]]:
        """The explorer's hover lines beyond the marks, by SVG title ("n12", "cluster_3")."""
        return {}

    def focus(self) -> list[int]:
        """The equations whose groups open first."""
        return []

    def text(self) -> str:
        """Its part of the text view ("" for none)."""
        return ""

    def side_html(self, g: Graph | None = None) -> str:
        """Its tables beside the picture ("" for none)."""
        return ""
