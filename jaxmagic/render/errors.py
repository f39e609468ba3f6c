"""A card naming the user's failing line, shown above JAX's own traceback."""
from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import UserFrame
from .html import ERROR, MONO, code, esc, panel
from .text import visible


@dataclass
class ErrorCard:
    error: str        # exception type name
    message: str      # its first line
    frame: UserFrame

    @classmethod
    def from_exception(cls, exc: BaseException, frame: UserFrame) -> "ErrorCard":
        first = next((ln for ln in str(exc).splitlines() if ln.strip()), "")
        return cls(type(exc).__name__, first, frame)

    def text(self) -> str:
        return (f"{self.error} at {self.frame.where} (in {self.frame.function}):\n"
                f"    {self.frame.line}\n{self.message}")

    def _repr_mimebundle_(self, include=None, exclude=None):
        body = (f'<div style="{MONO};font-size:12px;margin:4px 0">{code(self.frame.line)}</div>'
                f"<div>{esc(self.message)}</div>")
        title = (f'<span style="color:{ERROR}">{esc(self.error)}</span> at '
                 f"{esc(self.frame.where)} (in {code(self.frame.function)})")
        return {"text/plain": visible(self.text()), "text/html": panel(body, title=title)}
