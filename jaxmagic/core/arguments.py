"""What jit accepts as arguments: arrays traced, hashable values static.

Shared by %jit_compare and %jaxpr, so both name the argument to mark static (with the
user's source text) instead of JAX's error about an internal wrapper.
"""
from __future__ import annotations

import ast
import functools
import inspect
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import jax
import numpy as np

from . import libraries as _libraries
from .paths import key_text


class JitArgumentError(TypeError):
    """The call's arguments do not fit jit (the options, not the function, need fixing).

    `problem` says which argument and why, `fix` what to pass instead (API spelling);
    `option_hint()` the magic's spelling.
    """

    def __init__(self, problem: str, fix: str = ""):
        self.problem, self.fix = problem, fix
        super().__init__(f"{problem}; {fix}" if fix else problem)

    def option_hint(self) -> str:
        return self.fix


class StaticArgumentError(JitArgumentError):
    """An argument jit cannot trace (not an array, or used as a Python value).

    `argname` is its source text; `index` / `param` how to name it in
    `static_argnums` / `static_argnames`.
    """

    def __init__(self, problem: str, argname: str, index: int | None, param: str | None):
        self.argname, self.index, self.param = argname, index, param
        fixes = []
        if index is not None:
            fixes.append(f"static_argnums=({index},)")
        if param is not None:
            fixes.append(f"static_argnames=({param!r},)")
        super().__init__(problem, f"mark it static: {' or '.join(fixes)}")

    def option_hint(self) -> str:
        fixes = []
        if self.index is not None:
            fixes.append(f"--static-argnums {self.index}")
        if self.param is not None:
            fixes.append(f"--static-argnames {self.param}")
        return f"mark it static: {' or '.join(fixes)}"


def is_arraylike(x: Any) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, np.generic, bool, int, float, complex)) \
        or hasattr(x, "__jax_array__") or (hasattr(x, "shape") and hasattr(x, "dtype"))


@dataclass
class ArgCall:
    fun: Callable
    args: tuple
    kwargs: dict
    arg_names: list
    kwarg_names: dict
    name: str
    params: list          # positional parameter names of fun, when known


def param_names(fun: Callable) -> list:
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def norm_argnums(nums, n: int) -> tuple:
    if nums is None:
        return ()
    nums = (nums,) if isinstance(nums, int) else tuple(nums)
    return tuple(sorted({i + n if i < 0 else i for i in nums}))


def norm_argnames(names) -> tuple:
    if names is None:
        return ()
    return (names,) if isinstance(names, str) else tuple(names)


def static_positions(call: ArgCall, argnums: tuple, argnames: tuple) -> set:
    pos = set(argnums)
    for nm in argnames:
        if nm in call.params:
            pos.add(call.params.index(nm))
    return pos


def _label(call: ArgCall, index: int | None, key: str | None, value: Any) -> str:
    """`neg=True (a bool)`: the parameter, the caller's source text, the value's type."""
    if key is not None:
        param, src = key, call.kwarg_names.get(key, key)
    else:
        param = call.params[index] if index < len(call.params) else None
        src = call.arg_names[index]
    if src.startswith(f"{param}["):
        param = None                     # *args / **kwargs entries carry their own path
    head = f"{param}={src}" if param and src != param else src
    r = repr(value)
    try:
        literal = ast.literal_eval(src) == value
    except Exception:
        literal = False
    shown = "" if literal or r == src or len(r) > 40 else f"{r}, "
    kind = type(value).__name__
    return f"{head} ({shown}{'an' if kind[0] in 'aeiou' else 'a'} {kind})"


def _static_error(call: ArgCall, problem: str, index: int | None, key: str | None):
    if key is not None:
        return StaticArgumentError(problem, call.kwarg_names.get(key, key), None, key)
    param = call.params[index] if index is not None and index < len(call.params) else None
    return StaticArgumentError(problem, call.arg_names[index], index, param)


def check_arguments(call: ArgCall, static_pos: set, static_names: tuple) -> None:
    """Every argument the user marked static must be hashable (jit keys its cache on it).

    Other arguments need no check: `partition` traces their array leaves and holds the
    rest fixed."""
    __tracebackhide__ = True
    items = [(i, None, a) for i, a in enumerate(call.args) if i in static_pos] + \
            [(None, k, v) for k, v in call.kwargs.items() if k in static_names]
    for i, k, value in items:
        try:
            hash(value)
        except TypeError:
            raise JitArgumentError(
                f"static argument {_label(call, i, k, value)} is not hashable, and jit "
                "keys its cache on static values",
                "pass a tuple instead of a list, or leave an array argument traced"
            ) from None


def concretization_argument(exc: BaseException, call: ArgCall, static_pos: set,
                             static_names: tuple) -> StaticArgumentError | None:
    """A tracer-to-Python error caused by a non-array argument that should be static."""
    if not isinstance(exc, (jax.errors.ConcretizationTypeError, TypeError)):
        return None
    m = re.search(r"depends on the value of the argument[s]? [`']?([A-Za-z_][\w]*)", str(exc))
    param = m.group(1) if m else _lone_int_traced(exc, call, static_pos, static_names)
    if param is None:
        return None
    if param in call.kwargs and param not in static_names:
        value, index, key = call.kwargs[param], None, param
    elif param in call.params and call.params.index(param) < len(call.args):
        index = call.params.index(param)
        if index in static_pos:
            return None
        value, key = call.args[index], None
    else:
        return None
    if isinstance(value, (jax.Array, np.ndarray)):
        return None     # an array used in Python control flow: static would not help
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return _static_error(call, f"argument {_label(call, index, key, value)} is used as a "
                         f"Python value while tracing ({type(exc).__name__}: {first})",
                         index, key)


# a traced Python int as JAX prints it (`JitTracer(~int32[])`, on 0.7-0.8 `JitTracer<~int32[]>`,
# before `Traced<ShapedArray(int32[], weak_type=True)>`): weakly typed, as only a Python
# number traced is
_WEAK_INT = re.compile(r"Tracer[(<]~int(?:32|64)\[\][)>]"
                       r"|ShapedArray\(int(?:32|64)\[\], weak_type=True\)")


def _lone_int_traced(exc: BaseException, call: ArgCall, static_pos: set,
                     static_names: tuple) -> str | None:
    """The parameter of the one Python int argument traced, where JAX's error names no
    argument but holds a traced Python int where it needed a value (a shape given to
    `jax.random.split`); None where it is not the only one, and so cannot be told."""
    if not isinstance(exc, TypeError) or not _WEAK_INT.search(str(exc)):
        return None
    ints = [call.params[i] for i, a in enumerate(call.args) if i not in static_pos
            and i < len(call.params) and type(a) is int] + \
        [k for k, v in call.kwargs.items() if k not in static_names and type(v) is int]
    return ints[0] if len(ints) == 1 else None


# ---- partition: what is traced, what is held fixed -------------------------------------
#
# The rule (Equinox's `filter_jit`, applied by %jaxpr, %jit_compare and %%shardviz --plan):
# - a top-level argument that is an array or a Python int, float or complex is traced, as
#   `jax.jit` traces it (so a number used as a size still needs --static-argnums); a
#   top-level bool is held fixed (a flag such as `train=True`, `inference=True`, which
#   library code tests in Python);
# - inside a container or a module, array leaves are traced and every other leaf
#   (functions, activation callables, strings, Python numbers in a config) is held fixed;
# - a top-level argument that is neither (a string, a function, an object) is held fixed;
# - Flax NNX objects are split into graph and state, as `nnx.jit` splits them: the state's
#   arrays are traced, the objects rebuilt inside, and the state they change returned;
# - `static_argnums` / `static_argnames` mark whole arguments static, as under `jax.jit`.
# Every call rebuilds its own containers and NNX objects, so nothing the user holds is
# changed by tracing or timing: not a dict, not a model's weights, not an RNG counter.


def is_array(x: Any) -> bool:
    """An array leaf (what Equinox's `is_array` accepts): traced inside containers."""
    return isinstance(x, (jax.Array, np.ndarray, np.generic)) or hasattr(x, "__jax_array__")


def _short(x: Any) -> str:
    if callable(x) and hasattr(x, "__name__"):
        return x.__name__
    r = repr(x)
    return r if len(r) <= 24 else r[:21] + "..."


@dataclass
class Slot:
    """One top-level value of a call: the callee's object, a positional or keyword argument.

    kind: traced (arrays, or a pytree of them) | split (array leaves traced, the rest held)
    | fixed (held whole) | static (marked static by the user) | nnx (NNX graph state).
    """

    name: str
    value: Any
    kind: str
    dyn: Any = None                       # what the traced function receives for it
    names: list = field(default_factory=list)    # one per traced leaf, in flat order
    held: list = field(default_factory=list)     # "name=value" of leaves held fixed
    treedef: Any = None
    mask: list = field(default_factory=list)     # split: True where a leaf is traced
    fixed_leaves: list = field(default_factory=list)


_PYTHON_SCALARS = (bool, int, float, complex, np.bool_, np.number)
TRACES_EVERY_LEAF = ("jax.jit", "nnx.jit", "jax.pmap")   # kinds that trace a pytree's scalars
# kinds that return the NNX state the call changes: nnx.jit, and Python itself; a jax.jit,
# pmap or filter_jit takes a module as a pytree and leaves the caller's as it was
RETURNS_NNX_STATE = ("", "nnx.jit")


def _slot(name: str, value: Any, static: bool, param: str | None = None,
          every_leaf: bool = False) -> Slot:
    """How one value is held. The filter rule (Equinox's, for undecorated callees and
    `eqx.filter_jit`): array leaves traced, the rest held. `every_leaf` (a callee under
    `jax.jit`/`nnx.jit`): a container's Python numbers are traced too, as jit traces
    them (a `TrainState.step = 0` is a traced int, not a constant)."""
    if static:
        return Slot(name, value, "static")
    libs = _libraries.nnx()
    if libs is not None and libs.holds_objects(value):
        return Slot(name, value, "nnx")
    pairs, treedef = jax.tree_util.tree_flatten_with_path(value)
    if len(pairs) == 1 and not pairs[0][0]:            # the value is itself one leaf
        if is_arraylike(value) and not isinstance(value, (bool, np.bool_)):
            return Slot(name, value, "traced", value, [name], treedef=treedef)
        if param and param != name:
            shown = f"{param}={name}"                 # mode='double', act=jax.nn.relu
        else:
            shown = name if _short(value) == name else f"{name}={_short(value)}"
        return Slot(name, value, "fixed", None, held=[shown])
    paths = [name + key_text(p) for p, _ in pairs]
    mask = [is_array(leaf) or every_leaf and isinstance(leaf, _PYTHON_SCALARS)
            for _, leaf in pairs]
    if all(mask):
        return Slot(name, value, "traced", value, paths, treedef=treedef, mask=mask)
    held = [f"{p}={_short(leaf)}" for (p, (_, leaf), m) in zip(paths, pairs, mask) if not m]
    if not any(mask):
        return Slot(name, value, "fixed", None, held=held)
    leaves = [leaf for _, leaf in pairs]
    return Slot(name, value, "split", [x for x, m in zip(leaves, mask) if m],
                [p for p, m in zip(paths, mask) if m], held, treedef, mask,
                [None if m else x for x, m in zip(leaves, mask)])


def _rebuild(slot: Slot, dyn: Any) -> Any:
    """The slot's value for one call, in containers of its own."""
    if slot.kind == "split":
        it = iter(dyn)
        return jax.tree_util.tree_unflatten(
            slot.treedef, [next(it) if m else x for x, m in zip(slot.fixed_leaves, slot.mask)])
    if slot.kind == "traced" and slot.mask:         # a container: a fresh copy of it
        return jax.tree_util.tree_unflatten(slot.treedef, jax.tree_util.tree_leaves(dyn))
    if slot.kind == "fixed":
        return slot.value
    return dyn


def _identifier(text: str, taken: set) -> str:
    name = re.sub(r"\W", "_", text).strip("_") or "callee"
    name = name if name.isidentifier() else "callee"
    while name in taken:
        name += "_"
    return name


class Partition:
    """A call split the way jit holds it; `function()` is what JAX traces.

    `in_names` names each traced input leaf; `held` what was held fixed; after a trace,
    `updated` names the NNX state the call changed (returned as extra outputs where the
    jit returns it, `RETURNS_NNX_STATE`) and
    `mutated` the containers it changed in place.
    """

    def __init__(self, call: ArgCall, static_pos: set, static_names: tuple,
                 callee_name: str = "", jit_kind: str = ""):
        self.call = call
        self.func, self.method = call.fun, None
        owner = getattr(call.fun, "__self__", None)
        callee = call.fun
        if owner is not None and not isinstance(owner, type) and _has_state(owner):
            callee, self.method = owner, call.fun.__name__
            callee_name = callee_name.rsplit(".", 1)[0] if callee_name.endswith(
                "." + self.method) else callee_name
        self.callee = None
        if _has_state(callee):
            taken = set(call.params) | set(call.kwargs)
            self.callee_key = _identifier(callee_name or "self", taken)
            self.callee = _slot(callee_name or self.callee_key, callee, False)
        params, every = call.params, jit_kind in TRACES_EVERY_LEAF
        self.every_leaf = every
        self.args = [_slot(call.arg_names[i], a, i in static_pos,
                           params[i] if i < len(params) else None, every)
                     for i, a in enumerate(call.args)]
        self.kwargs = {k: _slot(call.kwarg_names.get(k, k), v, k in static_names, k, every)
                       for k, v in call.kwargs.items()}
        self._split_nnx()
        self.jit_kind = jit_kind
        self._updated: list[str] | None = None   # fixed by the first run
        self.mutated: list[str] = []
        # output leaves jit cannot return (left out): (type name, a JAX type?) each
        self.dropped: list[tuple[str, bool]] = []
        self.kept_outputs = True       # any output leaf is an array
        self._kept: tuple | None = None    # (output treedef, kept per leaf): the first run's

    # ---- NNX ----
    def _slots(self) -> list[Slot]:
        return ([self.callee] if self.callee else []) + self.args + list(self.kwargs.values())

    def _split_nnx(self) -> None:
        self.nnx = [s for s in self._slots() if s.kind == "nnx"]
        self.graphdef = None
        if not self.nnx:
            return
        libs = _libraries.nnx()
        self.graphdef, parts = libs.split(tuple(s.value for s in self.nnx))
        for s, part in zip(self.nnx, parts):
            s.dyn, s.names = part, libs.leaf_names(s.name, part)

    # ---- what the user sees ----
    @property
    def held(self) -> list[str]:
        return [h for s in self._slots() for h in s.held]

    @property
    def needs_wrapper(self) -> bool:
        """jit cannot take the call as it is: a module callee, NNX objects, held leaves."""
        return self.callee is not None or any(
            s.kind in ("split", "fixed", "nnx") for s in self._slots())

    def held_note(self, limit: int = 6) -> str:
        held = self.held
        if not held:
            return ""
        more = f", and {len(held) - limit} more" if len(held) > limit else ""
        return "held static (not traced): " + ", ".join(held[:limit]) + more

    def notes(self, title: str, kind: str = "") -> list[str]:
        """One line each: what was held static, what state the call changes, what jit
        leaves out."""
        out = []
        if kind and kind != "jax.pmap":     # a pmap is traced as given: its group says so
            out.append(f"traced through {kind}: the body of {title}")
        if self.held_note():
            out.append(self.held_note())
        if self.updated:
            counts = {s.name: sum(n == s.name or n.startswith((s.name + ".", s.name + "["))
                                  for n in self.updated) for s in self.nnx}
            shown = " and ".join(f"{k} ({v} array{'s' if v != 1 else ''})"
                                 for k, v in counts.items() if v)
            if self.returns_changes:
                out.append(f"{title} changes {shown}: returned as outputs (updated), as "
                           "nnx.jit does; your objects were not changed")
            else:
                out.append(f"{title} changes {shown} inside {self.jit_kind}, which returns no "
                           "such change: the caller's objects keep their old values (nnx.jit "
                           "returns it)")
        if self.mutated:
            out.append(f"{title} changes its input {', '.join(self.mutated)} in place: under "
                       "jit that change is lost (the caller's object stays as it was)")
        if self.dropped and self.kept_outputs:    # else nothing is left: the trace says
            out.append(f"{len(self.dropped)} output leaves are not arrays (left out)")
        return out

    def _traced_slots(self, positional: list[int], keys: list[str]) -> list[Slot]:
        """The slots `function()` receives with those positions and keys, in flat order."""
        slots = dict(self.kwargs)
        if self.callee is not None:
            slots[self.callee_key] = self.callee
        return [self.args[i] for i in positional] + [slots[k] for k in sorted(keys)]

    def _labelled(self, positional: list[int], keys: list[str]) -> list[tuple[Slot, str]]:
        """Each traced slot with its argument as written, told apart where two are written
        alike (`f(x, x)`: `x` and `x #2`, two inputs as jit traces them)."""
        seen: dict[str, int] = {}
        out = []
        for s in self._traced_slots(positional, keys):
            seen[s.name] = seen.get(s.name, 0) + 1
            out.append((s, s.name if seen[s.name] == 1 else f"{s.name} #{seen[s.name]}"))
        return out

    def in_names(self, positional: list[int], keys: list[str]) -> list[str]:
        """Names of the flat inputs of `function()` called with those positions and keys."""
        return [label + n[len(s.name):] if n.startswith(s.name) else n
                for s, label in self._labelled(positional, keys) for n in s.names]

    def in_args(self, positional: list[int], keys: list[str]) -> list[str]:
        """For each flat input (as `in_names`), the argument it is a leaf of, as written:
        `{'params': state.params}`, not the name cut at its first `.` or `[`."""
        return [label for s, label in self._labelled(positional, keys) for _ in s.names]

    # ---- what JAX traces ----
    def inputs(self, bind_static: bool) -> tuple[list[int], tuple, dict]:
        """(traced positions, args, kwargs) for `function(bind_static)`: each slot's traced
        part; static ones too unless they are bound inside."""
        pos = [i for i, s in enumerate(self.args) if not (bind_static and s.kind == "static")]
        args = tuple(s.value if s.kind == "static" else s.dyn for s in
                     (self.args[i] for i in pos))
        kwargs = {k: (s.value if s.kind == "static" else s.dyn)
                  for k, s in self.kwargs.items() if not (bind_static and s.kind == "static")}
        if self.callee is not None:
            kwargs[self.callee_key] = self.callee.dyn
        return pos, args, kwargs

    def jit_static(self, nums, names) -> tuple[tuple, tuple]:
        """The static options jit accepts for `function(False)`: only arguments given (a
        jitted callee's own options may name parameters this call leaves at defaults)."""
        n, params = len(self.args), self.call.params
        return (tuple(i for i in nums if i < n),
                tuple(k for k in names if k in self.kwargs
                      or (k in params and params.index(k) < n)))

    def function(self, bind_static: bool, every_output: bool = False) -> Callable:
        """The call as a function of `inputs(bind_static)`: rebuilds every container and
        NNX object, calls, and returns the output's arrays (plus changed NNX state);
        `every_output`: its whole output, as jax.jit would be handed it."""
        pos, _, _ = self.inputs(bind_static)
        fun = self.func

        def traced(*args, **kwargs):
            __tracebackhide__ = True
            values = {i: a for i, a in zip(pos, args)}
            full = [values[i] if i in values else s.value for i, s in enumerate(self.args)]
            kw = {k: kwargs.get(k, s.value) for k, s in self.kwargs.items()}
            callee_dyn = kwargs.get(self.callee_key) if self.callee is not None else None
            return self._run(fun, full, kw, callee_dyn, every_output)

        traced.__name__ = traced.__qualname__ = _libraries.func_name(fun)
        source = _def_of(fun)      # JAX's messages name the user's def line, or no line
        traced.__wrapped__ = fun if source is None else source    # (never this one)
        traced.__signature__ = self._signature(pos, bind_static)
        return traced

    def _run(self, fun, args: list, kwargs: dict, callee_dyn, every_output: bool) -> Any:
        __tracebackhide__ = True
        built = {id(s): _rebuild(s, d) for s, d in
                 [(s, a) for s, a in zip(self.args, args)] +
                 [(self.kwargs[k], v) for k, v in kwargs.items()] +
                 ([(self.callee, callee_dyn)] if self.callee is not None else [])
                 if s.kind != "nnx"}
        objs, parts_in = (), []
        if self.nnx:
            libs = _libraries.nnx()
            dyn = {id(s): d for s, d in
                   [(s, a) for s, a in zip(self.args, args)] +
                   [(self.kwargs[k], v) for k, v in kwargs.items()] +
                   ([(self.callee, callee_dyn)] if self.callee is not None else [])}
            parts_in = [dyn[id(s)] for s in self.nnx]
            objs = libs.merge(self.graphdef, parts_in)
            built.update({id(s): o for s, o in zip(self.nnx, objs)})
        call_args = [built[id(s)] for s in self.args]
        call_kwargs = {k: built[id(s)] for k, s in self.kwargs.items()}
        if self.callee is not None:
            owner = built[id(self.callee)]
            fun = getattr(owner, self.method) if self.method else owner
        before = [(s, jax.tree_util.tree_leaves(built[id(s)])) for s in self._slots()
                  if s.kind in ("traced", "split") and s.mask]
        parts_in = [jax.tree_util.tree_leaves(p) for p in parts_in]   # before the call
        out = fun(*call_args, **call_kwargs)
        self.mutated = [s.name for s, leaves in before
                        if not _same_leaves(leaves, jax.tree_util.tree_leaves(built[id(s)]))]
        out = out if every_output else self._arrays(out)
        if not self.nnx:
            return out
        found, leaves = [], {}
        for s, old, p_out in zip(self.nnx, parts_in, _libraries.nnx().state_of(objs)):
            names = _libraries.nnx().leaf_names(s.name, p_out)
            for nm, leaf, prev in zip(names, jax.tree_util.tree_leaves(p_out),
                                      old + [None] * len(names)):
                leaves[nm] = leaf
                if leaf is not prev:
                    found.append(nm)
        # the first run (eager or traced) fixes which state is returned, so every run
        # returns the same structure: an eager nnx.scan writes back equal, new arrays
        # where its trace passes the same tracers through
        if self._updated is None:
            self._updated = found
        if not self.returns_changes:
            return out
        updates = [leaves[nm] for nm in self._updated if nm in leaves]
        return (out, updates) if updates else out

    @property
    def updated(self) -> list[str]:
        """The NNX state the call changed (named by module path)."""
        return list(self._updated or [])

    @property
    def returns_changes(self) -> bool:
        """Whether the callee hands back the NNX state it changes (`RETURNS_NNX_STATE`)."""
        return self.jit_kind in RETURNS_NNX_STATE

    @property
    def returned(self) -> list[str]:
        """The changed NNX state `function()` returns after its output: `(out, [state])`."""
        return self.updated if self.returns_changes else []

    def _arrays(self, out: Any) -> Any:
        """The output with leaves that are not arrays left out (jit could not return them;
        under the filter rule a Python number is no array either: `eqx.filter_jit` returns
        a model's `Dropout.p` as the Python value it was). The first run (jit's trace)
        fixes which leaves: where it returned a traced Python number, an eager run keeps
        the number, so eager and jit are compared on the same leaves."""
        leaves, tree = jax.tree_util.tree_flatten(out)
        if self._kept is None or self._kept[0] != tree:
            keep = is_arraylike if self.every_leaf else is_array
            self._kept = tree, [keep(x) for x in leaves]
            self.dropped = [(type(x).__name__, is_arraylike(x))
                            for x, k in zip(leaves, self._kept[1]) if not k]
            self.kept_outputs = len(self.dropped) < len(leaves)
        if all(self._kept[1]):
            return out
        return tree.unflatten([x if k else None for x, k in zip(leaves, self._kept[1])])

    def _signature(self, pos: list[int], bind_static: bool):
        """The user's parameter names, so JAX's errors say "argument n"."""
        P = inspect.Parameter
        keys = [k for k, s in self.kwargs.items() if not (bind_static and s.kind == "static")]
        if self.callee is not None:
            keys.append(self.callee_key)
        params = self.call.params
        try:
            if pos and max(pos) >= len(params):
                raise ValueError("*args")
            return inspect.Signature([P(params[i], P.POSITIONAL_OR_KEYWORD) for i in pos]
                                     + [P(k, P.KEYWORD_ONLY) for k in keys])
        except ValueError:    # *args, or keywords that are not identifiers
            return inspect.Signature([P("args", P.VAR_POSITIONAL), P("kwargs", P.VAR_KEYWORD)])


def _def_of(fun: Any) -> Callable | None:
    """The Python function whose `def` JAX should name for `fun`: through partials, and a
    callable object's class `__call__` (JAX formats anything without code with `str()`,
    and an Equinox model's repr can take a second)."""
    while isinstance(fun, functools.partial):
        fun = fun.func
    if hasattr(fun, "__code__"):
        return fun
    call = getattr(type(fun), "__call__", None)
    return call if hasattr(call, "__code__") else None


def _has_state(x: Any) -> bool:
    """Holds arrays or NNX state to trace (a module as callee: its weights are inputs)."""
    libs = _libraries.nnx()
    if libs is not None and libs.holds_objects(x):
        return True
    return any(is_array(leaf) for leaf in jax.tree_util.tree_leaves(x))


def _same_leaves(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))
