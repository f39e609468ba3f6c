"""Where an exception happened in the user's code: the last frame that is theirs.

JAX names the `def` line of a traced function; the user needs the line that failed.
"""
from __future__ import annotations

import ast
import linecache
import os
import sysconfig
import types
from dataclasses import dataclass

from .. import _compat

_PACKAGE = os.path.normcase(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))) + os.sep
TARGET_FILE = "<jaxmagic-target>"      # the name a line magic's call is evaluated under
_LIBRARY_DIRS = tuple(
    os.path.normcase(os.path.realpath(p)) + os.sep
    for p in {sysconfig.get_path("stdlib"), sysconfig.get_path("purelib"),
              sysconfig.get_path("platlib"), os.path.dirname(os.path.dirname(__file__))}
    if p
)


@dataclass(frozen=True)
class UserFrame:
    """One frame of user code: a notebook cell or a file of theirs."""

    filename: str
    lineno: int
    function: str
    line: str          # the source line, stripped ("" when unknown)

    @property
    def where(self) -> str:
        return f"line {self.lineno}" if is_cell(self.filename) else \
            f"{os.path.basename(self.filename)}:{self.lineno}"


def is_cell(filename: str) -> bool:
    """IPython names cells `<ipython-input-…>`; ipykernel uses /tmp/ipykernel_*/N.py."""
    return filename.startswith("<ipython-input") or "ipykernel_" in filename or \
        filename.startswith("<cell")


def is_user_file(filename: str) -> bool:
    if is_cell(filename):
        return True
    if filename.startswith("<"):
        return False
    path = os.path.normcase(os.path.realpath(filename))
    return not path.startswith(_LIBRARY_DIRS)


def _frames(tb: types.TracebackType | None):
    while tb is not None:
        yield tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_code.co_name
        tb = tb.tb_next


def user_frame(exc: BaseException) -> UserFrame | None:
    """The innermost user frame of `exc`'s traceback (following JAX's chained causes)."""
    found = None
    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        for filename, lineno, func in _frames(e.__traceback__):
            if is_user_file(filename):
                found = (filename, lineno, func)
        if found:
            break
        e = e.__cause__ or e.__context__
    if not found:
        return None
    filename, lineno, func = found
    return UserFrame(filename, lineno, func, as_typed(linecache.getline(filename, lineno)).strip())


_MAGIC_CALLS = {"run_line_magic": "%", "run_cell_magic": "%%"}


def as_typed(line: str) -> str:
    """A cell line as the user typed it: IPython runs `r = %jaxpr -o f(x)` as
    `r = get_ipython().run_line_magic('jaxpr', '-o f(x)')`, and that is what a traceback's
    line reads. Other lines are returned unchanged."""
    if "get_ipython()." not in line:
        return line
    indent = line[:len(line) - len(line.lstrip())]
    try:
        stmt = ast.parse(line.strip()).body[0]
    except (SyntaxError, IndexError):
        return line
    call = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr in _MAGIC_CALLS and len(call.args) >= 2
            and all(isinstance(a, ast.Constant) and isinstance(a.value, str)
                    for a in call.args[:2])):
        return line
    name, rest = call.args[0].value, call.args[1].value
    typed = f"{_MAGIC_CALLS[call.func.attr]}{name} {rest}".rstrip()
    if isinstance(stmt, ast.Assign):
        typed = " = ".join(ast.unparse(t) for t in stmt.targets) + " = " + typed
    return indent + typed + ("\n" if line.endswith("\n") else "")


def user_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """Drop the leading frames that are not the user's (the magic's own machinery)."""
    while tb is not None and not is_user_file(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return tb


def is_ours(filename: str) -> bool:
    """A file of jaxmagic's, or the call a line magic evaluated (it has no source)."""
    return filename == TARGET_FILE or \
        os.path.normcase(os.path.realpath(filename)).startswith(_PACKAGE)


def without_our_frames(exc: BaseException) -> bool:
    """Drop jaxmagic's frames from `exc`'s traceback and from those of the exceptions it
    chains, so a user sees their frames and JAX's, as without the magic. False when none
    of them holds a frame of the user's: the error came from how the magic was called
    (an undefined name, a wrong number of arguments) or a Ctrl-C between our steps."""
    seen: set[int] = set()
    theirs = False
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        e.__traceback__ = _theirs(e.__traceback__)
        theirs = theirs or any(is_user_file(name) for name, _, _ in _frames(e.__traceback__))
        after = e.__cause__ or (None if e.__suppress_context__ else e.__context__)
        if after is not None and _compat.is_unfiltered_trace(after):
            # JAX's whole stack written out as text (ours in it), beside the filtered
            # traceback it leaves the user: dropped, as JAX's own remove_frames mode does
            e.__cause__, e.__suppress_context__, after = None, True, None
        e = after
    return theirs


def _theirs(tb: types.TracebackType | None) -> types.TracebackType | None:
    """`tb` without our frames, nor a library's frame between two of ours (contextlib's
    wrapper of a function it decorates)."""
    tbs = []
    while tb is not None:
        tbs.append(tb)
        tb = tb.tb_next
    ours = [is_ours(t.tb_frame.f_code.co_filename) for t in tbs] + [False]
    for i in range(1, len(tbs)):
        ours[i] = ours[i] or ours[i - 1] and ours[i + 1] and \
            not is_user_file(tbs[i].tb_frame.f_code.co_filename)
    kept = None
    for t, mine in reversed(list(zip(tbs, ours))):
        if not mine:
            kept = types.TracebackType(kept, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return kept


def is_jax_error(exc: BaseException) -> bool:
    """Raised by JAX (or by JAX's tracers inside user code)."""
    mod = type(exc).__module__ or ""
    if mod.split(".")[0] in ("jax", "jaxlib"):
        return True
    for filename, _, _ in _frames(exc.__traceback__):
        if f"{os.sep}jax{os.sep}" in filename or f"{os.sep}jaxlib{os.sep}" in filename:
            return True
    return False


__all__ = ["TARGET_FILE", "UserFrame", "as_typed", "user_frame", "user_traceback", "is_cell",
           "is_user_file", "is_ours", "without_our_frames", "is_jax_error"]
