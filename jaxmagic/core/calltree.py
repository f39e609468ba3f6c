"""Which call of which function or module each equation came from.

While a function is traced, `recording()` watches Python calls (`sys.setprofile`) and
opens one JAX name-stack scope per call instance of
  * a function defined in the user's code (a notebook cell or the user's own files, not
    an installed library wherever it is installed (`installed`), the standard library,
    JAX or jaxmagic), and
  * the `__call__` of a Flax NNX / Linen, Equinox or Haiku module (matched by the
    libraries' public base classes, and only when the user has imported the library), and
  * a call the user's code makes into a library other than JAX and NumPy
    (`optimizer.update(...)`, `optax.apply_updates(...)`, `einops.rearrange(...)`), so
    the step it takes is one group named `Optimizer.update`, not loose equations. A
    library call that calls back into the user's code (`nnx.value_and_grad(loss_fn)(...)`,
    Linen's `model.apply`, Haiku's `apply`) is a wrapper: `wrappers` names it, and the
    graph draws its inside in its place.
Scopes are named `label #k` (the k-th call of `label` in its parent call), so every call
instance is its own group; JAX adds `jvp`/`transpose`/`vmap` around them by itself.
"""
from __future__ import annotations

import functools
import inspect
import linecache
import os
import re
import site
import sys
import sysconfig
from collections import defaultdict
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from .. import _compat
from .errors import is_cell
from .libraries import stax

_MODULE_BASES = (("flax.nnx", "Module"), ("flax.linen", "Module"),
                 ("equinox", "Module"), ("haiku", "Module"))
_INSTANCE = re.compile(r"^(.*) #(\d+)$")


def scope_name(label: str, k: int) -> str:
    return f"{label} #{k}"


def parse(name: str) -> tuple[str, int] | None:
    """(label, instance) of a scope this module opened, else None (a user's named_scope)."""
    m = _INSTANCE.match(name)
    return (m.group(1), int(m.group(2))) if m else None


_CORE = ("jax", "jaxlib", "numpy")                  # their calls are the equations
_LIBRARIES = _CORE + ("flax", "equinox", "haiku", "optax")


def library_dirs() -> tuple[str, ...]:
    """Where installed code lives (site-packages, the standard library, jaxmagic, and the
    model libraries wherever they are): calls from there are not the user's."""
    return _dirs(_site() + _stdlib() + _packages(_loaded(_LIBRARIES)))


def installed(path: str) -> bool:
    """Whether a file outside the usual places (site-packages, the standard library)
    belongs to an installed library all the same: a file is known by the module it is
    imported as, so its top-level package is the first name of its path below the
    `sys.path` entry it was found on (as `import` finds it), and that package is a
    library when the standard library has it or an installed distribution provides it
    (`importlib.metadata`), whatever folder holds it (a `.pth` entry, `PYTHONPATH`, an
    editable install, conda, `dist-packages`), unless that distribution keeps a copy of
    its own elsewhere: dm-haiku's wheel installs a package named `examples`, and a clone
    of Haiku's examples, run as `examples.transformer.train`, is the user's code, not the
    wheel's. The user's own files stay theirs: a script's folder, the working directory's
    files, and a package nobody installed."""
    path = os.path.realpath(path)
    found = _top_level(path)
    if found is None:
        return False
    top, here = found
    cwd = _cwd()
    if cwd != "/" and path.startswith(cwd):
        return False
    if top in getattr(sys, "stdlib_module_names", ()):
        return True
    return any(copy is None or copy == here for copy in _distributions().get(top, ()))


def library_test() -> Callable[[str], bool]:
    """Whether a file is not the user's (installed code, see `installed`, wherever it
    lives; generated code, `<string>`, and cells are not library files), for the
    libraries loaded now, one answer per file: a graph asks it of every frame on the way
    to the user's line (111,000 on a ResNet50 step)."""
    dirs = library_dirs()
    return functools.cache(lambda file: _is_library_file(file, dirs))


def _is_library_file(file: str, dirs: tuple[str, ...]) -> bool:
    if file.startswith("<"):
        return False
    path = os.path.realpath(file)
    return path.startswith(dirs) or installed(path)


def _cwd() -> str:
    try:
        return os.path.realpath(os.getcwd()) + "/"
    except OSError:
        return "/"


def _top_level(path: str) -> tuple[str, str] | None:
    """(the first name of `path` below the longest `sys.path` entry holding it, the real
    path of that package's folder or module file)."""
    roots = _roots(tuple(sys.path))
    root = next((r for r in roots if path.startswith(r)), None)
    if root is None:
        return None
    first = path[len(root):].split("/", 1)[0]
    name = first[:-3] if first.endswith(".py") else first.split(".", 1)[0]
    return (name, root + first) if name else None


@functools.lru_cache(maxsize=8)
def _roots(entries: tuple[str, ...]) -> tuple[str, ...]:
    out = set()
    for e in entries:
        if isinstance(e, str) and os.path.isdir(e or "."):
            out.add(os.path.realpath(e or ".").rstrip("/") + "/")
    return tuple(sorted(out, key=len, reverse=True))     # the longest first


@functools.cache
def _distributions() -> dict[str, tuple[str | None, ...]]:
    """Top-level import name → where each installed distribution that provides it keeps
    its copy (real path; None where it keeps none beside its metadata: an editable
    install's code lives elsewhere). Names from `top_level.txt`, else the first names in
    `RECORD`, as `importlib.metadata.packages_distributions` finds them, read as text (it
    makes a path object of every file a distribution installed: 0.7 s on the first
    `%jaxpr` of a session, against 0.02 s)."""
    out: dict[str, list[str | None]] = defaultdict(list)
    try:
        from importlib.metadata import distributions
        for dist in distributions():
            for name in _top_names(dist):
                out[name].append(_copy(dist, name))
    except Exception:  # noqa: BLE001 - broken metadata: none known
        return {}
    return {name: tuple(copies) for name, copies in out.items()}


def _copy(dist, name: str) -> str | None:
    """The real path of `dist`'s own copy of the top-level `name`, None if it has none."""
    base = str(dist.locate_file(name))
    for candidate in (base, base + ".py"):
        if os.path.exists(candidate):
            return os.path.realpath(candidate)
    return None


def _top_names(dist) -> set[str]:
    declared = dist.read_text("top_level.txt")
    if declared:
        return set(declared.split())
    names = set()
    for row in (dist.read_text("RECORD") or dist.read_text("SOURCES.txt") or "").splitlines():
        path = row.split(",", 1)[0].strip('"')
        first, nested, _ = path.partition("/")
        name = first if nested else inspect.getmodulename(first) or first
        if name and "." not in name and name != "__pycache__":
            names.add(name)
    return names


def core_dirs() -> tuple[str, ...]:
    """JAX, NumPy and jaxmagic: a call into them is no step of its own (`jnp.sum` is its
    equations), and neither is one into the standard library (`stdlib_dirs`)."""
    return _dirs(_packages(_loaded(_CORE)))


def stdlib_dirs() -> tuple[str, ...]:
    return _dirs(_stdlib())


@functools.cache
def _site() -> tuple[str, ...]:
    return (*site.getsitepackages(), site.getusersitepackages(),
            sysconfig.get_path("purelib"), sysconfig.get_path("platlib"))


@functools.cache
def _stdlib() -> tuple[str, ...]:
    return sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")


def _loaded(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(m for m in names if m in sys.modules)


@functools.lru_cache(maxsize=16)
def _packages(loaded: tuple[str, ...]) -> tuple[str, ...]:
    files = [os.path.abspath(_compat.__file__)] + \
        [getattr(sys.modules[m], "__file__", None) or "" for m in loaded]
    return tuple(os.path.dirname(f) for f in files if f)


@functools.lru_cache(maxsize=16)
def _dirs(dirs: tuple[str, ...]) -> tuple[str, ...]:
    paths = {os.path.abspath(d) for d in dirs if d} | {os.path.realpath(d) for d in dirs if d}
    return tuple(sorted(d + "/" for d in paths))


def _module_bases() -> tuple[type, ...]:
    bases = []
    for mod, name in _MODULE_BASES:
        m = sys.modules.get(mod)
        base = getattr(m, name, None) if m is not None else None
        if isinstance(base, type):
            bases.append(base)
    return tuple(bases)


_SKIP_FLAGS = 0x20 | 0x80 | 0x100 | 0x200    # generators and coroutines: no call/return pairs


_USER, _LIBRARY, _CORE_CODE = 0, 1, 2
# Code "from a file" named <...> is the user's only in a cell or at a prompt; the rest is
# generated (dataclasses' "<string>", Equinox's "<generated_flatten_CNN>", "<frozen ...>").
_PROMPTS = ("<stdin>", "<console>")


def _forwards(obj: Any) -> bool:
    """A library's callable that only calls the function it holds: a bound method made
    an object (Equinox's `BoundMethod`, passed to `eqx.filter_vmap`), a partial
    (`functools.partial`'s kind, Equinox's `eqx.Partial`: `func`, `args`, `keywords`)."""
    return isinstance(obj, functools.partial) or (
        callable(getattr(obj, "__func__", None)) and hasattr(obj, "__self__")) or (
        callable(getattr(obj, "func", None)) and hasattr(obj, "args")
        and hasattr(obj, "keywords"))


class _Recorder:
    def __init__(self) -> None:
        self.library = library_dirs()
        self.core = core_dirs()
        self.site = _dirs(_site())
        self.stdlib = stdlib_dirs()
        self.bases = _module_bases()
        self.kinds: dict[int, tuple[int, Any]] = {}   # id(code) → (_USER, _LIBRARY or
        self.files: dict[str, int] = {}               # _CORE_CODE, code); file → its kind
        self.callee_only: set[int] = set()    # ids of library functions (see `passes_by`)
        self.open: dict[Any, tuple[Any, str]] = {}   # frame → (scope, label)
        self.stack: list[str] = []
        self.from_library: list[bool] = []    # per open scope: a library call's
        self.modules: list[int | None] = []   # per open scope: id of the module called
        self.counts: dict[tuple, int] = {}
        self.wrappers: set[str] = set()       # library calls that called the user's code
        self.library_calls: set[str] = set()  # labels of calls into a library's functions

    def _kind(self, code) -> int:
        entry = self.kinds.get(id(code))     # by id: hashing a code object hashes its body
        if entry is None:
            entry = self.kinds[id(code)] = (self._classify(code), code)   # held: its id
            if entry[0] == _LIBRARY and not code.co_name.startswith("__") and \
                    not stax.is_layer(code):                             # stays its own
                self.callee_only.add(id(code))
        return entry[0]

    def passes_by(self, frame) -> bool:
        """A call of a library's function that a library made, not the user's code: it
        starts no scope. Most calls a model library makes while traced are its own
        (Linen's module machinery: 30,000 in a Transformer's step); told apart by two
        lookups, before the hook pays for `enter`."""
        if id(frame.f_code) not in self.callee_only or frame.f_back is None:
            return False
        caller = self.kinds.get(id(frame.f_back.f_code))
        return caller is not None and caller[0] != _USER

    def _classify(self, code) -> int:
        file = code.co_filename
        if code.co_name.startswith("<") or code.co_flags & _SKIP_FLAGS:
            return _CORE_CODE
        if file.startswith("<"):      # a cell or a prompt; not generated code
            return _USER if is_cell(file) or file in _PROMPTS else _CORE_CODE
        kind = self.files.get(file)
        if kind is None:
            kind = self.files[file] = self._file_kind(os.path.realpath(file))
        return kind

    def _file_kind(self, path: str) -> int:
        if not path.startswith(self.library):
            return _LIBRARY if installed(path) else _USER
        if path.startswith(self.core):
            return _CORE_CODE
        if path.startswith(self.site):    # a venv's site-packages is in its lib/
            return _LIBRARY
        return _CORE_CODE if path.startswith(self.stdlib) else _LIBRARY

    def _is_user(self, code) -> bool:
        return self._kind(code) == _USER

    def may_scope(self, code) -> bool:
        """False for code that never starts a scope, whoever calls it."""
        return code.co_name == "__call__" and self._kind(code) != _CORE_CODE or \
            self._kind(code) == _USER or \
            self._kind(code) == _LIBRARY and not code.co_name.startswith("__") or \
            stax.is_layer(code)

    def _label(self, frame) -> tuple[str, bool] | None:
        """(label, whether it is a library call) of a call we record, else None."""
        code = frame.f_code
        if code.co_name == "__call__":
            this = frame.f_locals.get("self") if code.co_argcount else None
            if this is None or self.modules and self.modules[-1] in (
                    id(this), id(getattr(this, "__self__", None))):
                return None       # super().__call__, or a bound method of the same module
            library = self._kind(code) == _LIBRARY
            if library and (type(this).__name__.startswith("_") or _forwards(this)):
                return None       # a library's private helper (Equinox's _VmapWrapper),
                # or a wrapper that calls a function it holds: that function is the group
            if self.bases and isinstance(this, self.bases) or self._is_user(code):
                # a library's own module (Flax's or Haiku's) may be a wrapper
                return type(this).__name__, library
            return None
        if stax.is_layer(code):     # a stax layer: a model's module, named as the user's
            caller = frame.f_back   # line calls it (`predict`), else by its layer
            written = _written(caller) if caller and self._is_user(caller.f_code) else None
            return written or stax.layer_name(code, frame.f_locals), False
        kind = self._kind(code)
        if kind == _USER:
            return code.co_name, False
        if kind == _LIBRARY and not code.co_name.startswith("__") and \
                frame.f_back is not None and self._is_user(frame.f_back.f_code) and \
                not (self.bases and isinstance(_receiver(frame), self.bases)):
            label = _library_label(frame)           # (a module's call is its own scope)
            self.library_calls.add(label)
            return label, True
        return None

    def enter(self, frame) -> bool:
        """Open a scope if `frame` starts a call we record; False if this one does not."""
        found = self._label(frame)
        if found is None:
            return False
        label, library = found
        if not library:       # the user's code, called back by the library calls around it
            self.wrappers.update(parse(n)[0] for n, lib in zip(self.stack, self.from_library)
                                 if lib)
        key = (tuple(self.stack), label)
        k = self.counts.get(key, 0)
        self.counts[key] = k + 1
        scope = _compat.name_scope(scope_name(label, k))
        scope.__enter__()
        self.open[frame] = (scope, label)
        self.modules.append(id(frame.f_locals["self"]) if frame.f_code.co_name == "__call__"
                            else None)
        self.stack.append(scope_name(label, k))
        self.from_library.append(library)
        return True

    def leave(self, frame) -> None:
        entry = self.open.pop(frame, None)
        if entry is not None:
            entry[0].__exit__(None, None, None)
            self.stack.pop()
            self.from_library.pop()
            self.modules.pop()

    def close(self) -> None:
        while self.open:      # a call still open when recording stops (an exception)
            _, (scope, _) = self.open.popitem()
            scope.__exit__(None, None, None)

    def profiler(self):
        """The `sys.setprofile` hook (Python < 3.12). It sees every call and return of a
        trace (a train step makes over a million), so a call of code that never starts a
        scope (nearly all of them are JAX's own) costs one dict lookup after its first."""
        quiet: dict[int, Any] = {}       # id(code) → code, as in `kinds`
        open_, enter, leave, may_scope = self.open, self.enter, self.leave, self.may_scope
        passes_by = self.passes_by

        def profile(frame, what: str, arg: Any) -> None:
            if what == "call":
                code = frame.f_code
                if id(code) not in quiet and not passes_by(frame) and not enter(frame) \
                        and not may_scope(code):
                    quiet[id(code)] = code
            elif what == "return" and frame in open_:
                leave(frame)
        return profile


_CALLEE = re.compile(r"[A-Za-z_][\w.]*")


def _receiver(frame) -> Any:
    """The object a method was called on: its `self`, or the first of its `*args` (Linen
    wraps module methods in `wrapped_module_method(*args, **kwargs)`)."""
    code, local = frame.f_code, frame.f_locals
    if code.co_argcount:
        return local.get("self") if code.co_varnames[0] == "self" else None
    if code.co_flags & 0x04:      # CO_VARARGS
        args = local.get(code.co_varnames[code.co_kwonlyargcount])
        return args[0] if isinstance(args, tuple) and args else None
    return None


def _library_label(frame) -> str:
    """The callee as the user's line writes it (`optimizer.update`, `optax.apply_updates`;
    a library often wraps its methods, so the function's own name can be a decorator's);
    failing that, `Optimizer.update` for a method, else the function's qualified name."""
    written = _written(frame.f_back)
    if written:
        return written
    code = frame.f_code
    this = frame.f_locals.get("self") if code.co_argcount else None
    if this is not None:
        return f"{type(this).__name__}.{code.co_name}"
    qualname = getattr(code, "co_qualname", code.co_name)
    return qualname.replace(".<locals>", "")


@functools.lru_cache(maxsize=4096)
def _written_at(code, lasti: int) -> str | None:
    try:
        line, end, col, end_col = list(code.co_positions())[lasti // 2]
    except (IndexError, ValueError):
        return None
    if line is None or col is None:
        return None
    text = linecache.getline(code.co_filename, line)
    return _callee(text[col:end_col] if end == line and end_col else text[col:])


def _callee(text: str) -> str | None:
    """The callee of the call `text` (the call's own source, or its first line): a dotted
    name (`optax.apply_updates`), through the calls it chains (`optimiser().update`, a
    Haiku example's optimizer: its arguments left out); None where the call is not of
    one (`f(x)(y)` calls `f`'s result)."""
    m = _CALLEE.match(text)
    if not m:
        return None
    name, rest = m.group(0), text[m.end():].lstrip()
    while rest.startswith("("):
        after = _closed(rest)
        chained = _CALLEE.match(after[1:]) if after is not None and after[:1] == "." else None
        if chained is None:
            break
        name += "()." + chained.group(0)
        rest = after[1 + chained.end():].lstrip()
    if not rest.startswith("("):
        return None
    return name[len("self."):] if name.startswith("self.") else name


def _closed(text: str) -> str | None:
    """What follows the parenthesis `text` opens, once closed on this line; else None."""
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch in "([{") - (ch in ")]}")
        if depth == 0:
            return text[i + 1:]
    return None


def _written(caller) -> str | None:
    """The callee's text at the caller's current call (Python 3.11+ keeps each
    instruction's source columns)."""
    return _written_at(caller.f_code, caller.f_lasti) if caller is not None else None


@contextmanager
def _monitoring(rec: _Recorder) -> Iterator[None]:
    """`sys.monitoring` (3.12+): code objects that never start a scope are switched off
    after their first call, so tracing runs at nearly full speed."""
    mon = sys.monitoring
    tool = next((t for t in (mon.PROFILER_ID, 3, 4, 5) if mon.get_tool(t) is None), None)
    if tool is None:        # every tool slot taken (profilers, debuggers): no call tree
        yield
        return
    ev = mon.events
    user_calls: dict[int, Any] = {}    # id(code) → code: those that may start a scope

    def start(code, offset):
        frame = sys._getframe(1)
        if rec.passes_by(frame):
            return None
        if rec.enter(frame) or rec.may_scope(code):
            user_calls[id(code)] = code
            return None
        return mon.DISABLE

    def done(code, offset, value=None):
        if id(code) not in user_calls:
            return mon.DISABLE
        rec.leave(sys._getframe(1))
        return None

    def unwind(code, offset, exc):    # PY_UNWIND cannot be switched off per code object
        if id(code) in user_calls:
            rec.leave(sys._getframe(1))

    mon.use_tool_id(tool, "jaxmagic call tree")
    try:
        mon.restart_events()
        mon.register_callback(tool, ev.PY_START, start)
        mon.register_callback(tool, ev.PY_RETURN, done)
        mon.register_callback(tool, ev.PY_UNWIND, unwind)
        mon.set_events(tool, ev.PY_START | ev.PY_RETURN | ev.PY_UNWIND)
        yield
    finally:
        mon.set_events(tool, 0)
        mon.free_tool_id(tool)


# What recordings learned of the labels they opened. A jitted function an earlier
# recording traced comes back from JAX's trace cache with its scopes, its Python body not
# run again: this recording never sees the calls inside it.
_learned_wrappers: set[str] = set()
_learned_library_calls: set[str] = set()


def learned(rec: "_Recorder") -> tuple[frozenset[str], frozenset[str]]:
    """(wrappers, library calls) of a finished recording, with what earlier recordings
    learned of the labels it did not open itself (a second `%jaxpr` of Haiku's pmapped
    ResNet50 step drew `forward.apply` as a box, and its optimizer as the user's code)."""
    _learned_wrappers.update(rec.wrappers)
    _learned_library_calls.update(rec.library_calls)
    opened = {label for _, label in rec.counts}
    return (frozenset(rec.wrappers | (_learned_wrappers - opened)),
            frozenset(rec.library_calls | (_learned_library_calls - opened)))


@contextmanager
def recording() -> Iterator["_Recorder"]:
    """Name every call traced inside the block (see the module doc); yields the recorder,
    whose `wrappers` at the end holds the labels of the library calls that called the
    user's code back, and `library_calls` those of every call into a library's
    functions."""
    rec = _Recorder()
    try:
        if hasattr(sys, "monitoring"):
            with _monitoring(rec):
                yield rec
        elif sys.gettrace() is None:
            with _tracing(rec):
                yield rec
        else:               # a debugger or coverage holds the trace hook: leave it
            previous = sys.getprofile()
            sys.setprofile(rec.profiler())
            try:
                yield rec
            finally:
                _restore_profile(previous)
    finally:
        rec.close()


@contextmanager
def _tracing(rec: _Recorder) -> Iterator[None]:
    """`sys.settrace` (Python < 3.12): called at Python calls only, not at calls of C
    functions nor at returns, but at the return of a call that opened a scope (its
    lines not traced): a recorded trace of a ResNet step cost 2.5 times the plain
    trace through `sys.setprofile`, which sees them all."""
    quiet: dict[int, Any] = {}       # id(code) → code, as in `kinds`

    def local(frame, what: str, arg: Any):
        if what == "return":
            rec.leave(frame)
        return local

    def call(frame, what: str, arg: Any):
        code = frame.f_code
        if id(code) in quiet or rec.passes_by(frame):
            return None
        if rec.enter(frame):
            frame.f_trace_lines = False
            return local
        if not rec.may_scope(code):
            quiet[id(code)] = code
        return None

    sys.settrace(call)
    try:
        yield
    finally:
        if sys.gettrace() is call:      # not a debugger's, started inside (`breakpoint()`)
            sys.settrace(None)


def _restore_profile(previous) -> None:
    """The profiler that was running before the recording, again: a Python function, or
    a C profiler (`cProfile.Profile`, whose `sys.getprofile()` is the profiler object,
    not a function: it installs itself again with `enable()`)."""
    if previous is None or callable(previous):
        sys.setprofile(previous)
    elif hasattr(previous, "enable"):
        previous.enable()
    else:
        sys.setprofile(None)
