"""Ctrl-C noted for a block of work, so that one whose KeyboardInterrupt was dropped still
stops it. Python raises KeyboardInterrupt at the main thread's next bytecode, which may be
a weakref callback, a `__del__` or a callback of the garbage collector; there it is
dropped (and printed as "Exception ignored in ...", with a frame of ours: not while a note
is open) and the work would go on (seen in CI: a layout ran to its budget; tracing a train
step and building a hundred trial views make garbage all the time). The note survives
that: the work asks `stop_if_interrupted` at its steps (after the trace, at each trial
view, in each wait for a layout)."""
from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager


class _Note:
    seen = False


_notes: list[_Note] = []     # the Ctrl-C note open on the main thread, if any


@contextmanager
def ctrl_c_noted():
    """Note a Ctrl-C for `stop_if_interrupted` while the block runs (on the main thread,
    where Python handles signals). Nested blocks share the outermost's note."""
    if _notes or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):          # SIG_IGN, or SIG_DFL: Ctrl-C does not reach Python
        yield
        return
    note, unraisable = _Note(), sys.unraisablehook

    def noted(signum, frame):
        note.seen = True    # no call: the call tree's profile hook sees each
        previous(signum, frame)

    def dropped(what):      # the work stops at its next step: no "Exception ignored"
        if not issubclass(what.exc_type, KeyboardInterrupt):
            unraisable(what)

    signal.signal(signal.SIGINT, noted)
    sys.unraisablehook = dropped
    _notes.append(note)
    try:
        yield
    finally:
        _notes.remove(note)
        signal.signal(signal.SIGINT, previous)
        if sys.unraisablehook is dropped:
            sys.unraisablehook = unraisable


def stop_if_interrupted() -> None:
    """KeyboardInterrupt if a Ctrl-C came inside `ctrl_c_noted` (its own exception may
    have been dropped where it was raised)."""
    if _notes and _notes[0].seen:
        raise KeyboardInterrupt
