"""`%jaxcheck`'s part of the shell: static checks before each cell runs, and a card at the
user's failing line for JAX's errors before IPython's own traceback.

`%load_ext jaxmagic` installs them, `%unload_ext` removes them and leaves the shell as it
was (the previous custom exception handler back). A second load replaces a stale
instance's hooks instead of stacking on them.
"""
from __future__ import annotations

import sys
from typing import Any

from IPython.display import display

from . import api
from .render.errors import ErrorCard


def x64() -> bool | None:
    """Whether JAX has 64-bit types on (None before the user imported jax)."""
    if "jax" not in sys.modules:
        return None
    from ._compat import x64_enabled

    return x64_enabled()


def cell_name(shell: Any, filename: str) -> str | None:
    """IPython's name for the cell whose code `filename` holds (`In [3]`, as its prompt
    and tracebacks say), None for a file or a cell it did not compile."""
    number = getattr(getattr(shell, "compile", None), "_filename_map", {}).get(filename)
    return None if number is None else f"In [{number}]"


class CellHooks:
    """The hooks of one `JaxMagic` instance; `magics.check` turns them on and off."""

    def __init__(self, magics: Any):
        self.magics = magics
        self.shell = magics.shell
        self.depth = 0          # cells run by a magic inside a cell are checked with it
        self.shown: set = set()  # (rule, where) shown before the cell ran
        self.running: int | None = None     # the number of the top-level cell running
        self.installed = False
        self._checker = None

    def checker(self):
        if self._checker is None:
            from .core.checks import Checker

            self._checker = Checker()
        return self._checker

    def cell_label(self, filename: str) -> str | None:
        """'this cell' for the running cell, 'In [n]' for an earlier one, None otherwise.

        By number, not by which cell was compiled last: ipykernel names a cell by its
        text, so a cell run again keeps its first place among the names."""
        names = getattr(self.shell.compile, "_filename_map", {})
        if filename not in names:
            return None
        return "this cell" if names[filename] == self.running else \
            cell_name(self.shell, filename)

    # ---- before and after each cell --------------------------------------------------

    def pre_run_cell(self, info=None):
        """Static checks on each top-level cell before it runs; shown, never blocking."""
        self.depth += 1
        if self.depth > 1:
            return
        self.running = self.shell.execution_count - (
            1 if getattr(info, "store_history", False) else 0)
        self.shown = set()
        if not self.magics.check:
            return
        raw = getattr(info, "raw_cell", None) or ""
        if raw.lstrip().startswith("%%jaxcheck") or not raw.strip():
            return
        # IPython drops a cell's leading blank lines before it runs: number lines as its
        # tracebacks (and the runtime cards) do, or one finding shows twice
        lines = raw.splitlines(keepends=True)
        raw = "".join(lines[next(i for i, ln in enumerate(lines) if ln.strip()):])
        try:
            found = self.checker().check(raw, namespace=self.shell.user_ns, x64=x64(),
                                         cell=f"In [{self.running}]")
        except Exception:     # a checker bug must never disturb the user's cell
            return
        self.shown = {(f.rule, f.where or f"line {f.line}") for f in found}
        if found:
            from .render.cards import Findings

            display(Findings(found))

    def post_run_cell(self, result=None):
        self.depth = max(0, self.depth - 1)

    # ---- exceptions ------------------------------------------------------------------

    def on_exception(self, shell, etype, value, tb, tb_offset=None):
        """IPython's custom exception handler: a card for JAX's errors, then the usual
        traceback. Everything else is shown exactly as IPython would."""
        try:
            if self.magics.check and not getattr(value, "_jaxmagic_shown", False):
                self._card(value)
        except Exception:     # never let the card hide the user's own error
            pass
        prev_types, prev_handler = self._prev_exc
        if prev_types and prev_handler is not None and issubclass(etype, prev_types):
            return prev_handler(etype, value, tb, tb_offset=tb_offset)
        # IPython calls this from run_code (the cell ran) and from parsing the cell; show
        # each exactly as IPython's own handlers there would
        ran = tb is not None and tb.tb_frame.f_code.co_name == "run_code" and \
            not getattr(value, "_jaxmagic_parse_error", False)   # a magic's cell: as parsed
        if not ran and issubclass(etype, IndentationError):
            shell.showindentationerror()
        elif not ran:
            shell.showsyntaxerror()
        else:
            shell.showtraceback((etype, value, tb), tb_offset=tb_offset,
                                running_compiled_code=True)
        return None

    def _card(self, value: BaseException) -> None:
        card = api.error_card(value, label=self.cell_label)
        if card is None or (getattr(card, "rule", None),
                            getattr(card, "where", None)) in self.shown:
            return                          # none, or already shown before the cell ran
        display(card)
        try:
            value._jaxmagic_shown = True
        except AttributeError:
            pass

    def located(self, exc: Exception, theirs: bool) -> None:
        """A magic's error (`magic_errors.users_frames`): where in the user's code JAX's
        error happened, before its traceback; the rule it breaks, or the line, where there
        is one of theirs (else the error's one line names the magic's, and a card would
        say the same again)."""
        if getattr(exc, "_jaxmagic_shown", False):
            return
        card = api.error_card(exc, label=self.cell_label)
        if card is not None and (theirs or not isinstance(card, ErrorCard)):
            display(card)
        try:
            exc._jaxmagic_shown = True      # nor by the shell's handler (`on_exception`)
        except AttributeError:
            pass

    # ---- install / remove ------------------------------------------------------------

    def _events(self):
        return (("pre_run_cell", self.pre_run_cell), ("post_run_cell", self.post_run_cell))

    def install(self) -> None:
        """Static checks before each cell and JAX error cards (idempotent)."""
        shell = self.shell
        if shell is None or self.installed:
            return
        for event, cb in self._events():
            for old in list(shell.events.callbacks.get(event, [])):   # a stale instance's
                if getattr(old, "__qualname__", "") == cb.__qualname__:
                    shell.events.unregister(event, old)
            shell.events.register(event, cb)
        prev = (shell.custom_exceptions, shell.CustomTB)
        if getattr(prev[1], "_jaxmagic_handler", False):     # a stale instance's handler
            prev = getattr(prev[1], "_jaxmagic_prev", ((), None))
        self._prev_exc = (prev[0], prev[1] if prev[0] else None)
        shell.set_custom_exc((Exception,), self.on_exception)
        try:
            shell.CustomTB.__func__._jaxmagic_handler = True
            shell.CustomTB.__func__._jaxmagic_prev = prev
        except AttributeError:
            pass
        self._saved_exc = prev
        self._tb = shell.CustomTB
        self.installed = True

    def remove(self) -> None:
        """Undo `install`: callbacks off, the previous exception handler back."""
        shell = self.shell
        if shell is None or not self.installed:
            return
        for event, cb in self._events():
            try:
                shell.events.unregister(event, cb)
            except ValueError:
                pass
        if shell.CustomTB == self._tb:       # nobody replaced ours since
            shell.custom_exceptions, shell.CustomTB = self._saved_exc
        self.installed = False
