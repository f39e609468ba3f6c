"""How a magic's errors reach the user: as their own code's would, their frames and JAX's
and never ours (`users_frames`); how the magic was called, as a UsageError that says
what to change (`argument_usage`)."""
from __future__ import annotations

import functools

from IPython.core.error import UsageError

from .core.errors import user_frame, without_our_frames


def users_frames(magic):
    """The magic's errors as the user's own code would show them: their frames and
    JAX's, never ours (`without_our_frames`), after the card at their failing line
    (`CellHooks.located`); one line where none is theirs (a call of an undefined name,
    a Ctrl-C between two of our steps), since IPython always shows a traceback's last
    frame, hidden or not."""
    @functools.wraps(magic)
    def run(self, *args, **kwargs):
        __tracebackhide__ = True
        try:
            return magic(self, *args, **kwargs)
        except UsageError:
            raise
        except BaseException as e:
            theirs = without_our_frames(e)
            if isinstance(e, Exception):
                self.hooks.located(e, theirs)
            if not theirs:
                e._render_traceback_ = functools.partial(_one_line, self.shell, e)
            raise
    return run


def _one_line(shell, exc: BaseException) -> list[str]:
    """An error with no frame of the user's, as IPython writes its last line, after the
    line of the cell it came from (the magic's, as typed), read when it is shown: only
    then does the traceback reach the cell."""
    frame = user_frame(exc) if isinstance(exc, Exception) else None
    where = [f"{frame.where}: {frame.line}"] if frame else []
    return where + shell.InteractiveTB.get_exception_only(type(exc), exc)


def argument_usage(e, magic: str, line: str, usage: str = "", card: bool = False) \
        -> UsageError:
    """An argument jit cannot take (`JitArgumentError`), as the UsageError that says how
    to mark it static: for a `StaticArgumentError`, the `magic` line that does, also as a
    card where `card`; else the `usage` line."""
    from IPython.display import display

    from .core.arguments import StaticArgumentError
    from .render.jit import StaticArgumentCard, static_fix_command

    if not isinstance(e, StaticArgumentError):
        return UsageError(f"{e.problem}.\n{e.option_hint()}" + (f"\n{usage}" if usage else ""))
    command = static_fix_command(magic, line, e.index, e.param)
    if card:
        display(StaticArgumentCard(e.problem, e.option_hint(), command))
    return UsageError(f"{e.problem}.\n{e.option_hint()}, e.g. {command}")
