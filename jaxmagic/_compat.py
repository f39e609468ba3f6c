"""Every private or version-dependent JAX name jaxmagic uses, in one place.

Supported: JAX 0.7.2 (mid-2025) and newer, as pyproject.toml says; CI runs every minor to
0.12. `ClosedJaxpr` merged into `Jaxpr` in 0.12; scan's `num_consts`/`num_carry` became a
flat-tree `ft_in`; source info lives in `jax._src`.
"""
from __future__ import annotations

import os
import re
from typing import Any, Callable, Collection, Iterator

import jax
from jax.extend import core as _core

Jaxpr = _core.Jaxpr
ClosedJaxpr = getattr(_core, "ClosedJaxpr", _core.Jaxpr)
Literal = _core.Literal
JAXPR_TYPES = (Jaxpr, ClosedJaxpr)

JAX_VERSION = tuple(int(p) for p in jax.__version__.split(".")[:3] if p.isdigit())


def open_jaxpr(j: Any):
    """The equations-and-variables jaxpr of a (closed) jaxpr, in any version."""
    return j.jaxpr if isinstance(j, ClosedJaxpr) else j


def consts_of(j: Any) -> list:
    return list(getattr(j, "consts", ()) or ())


def is_literal(atom: Any) -> bool:
    return isinstance(atom, Literal)


def is_dropvar(atom: Any) -> bool:
    return type(atom).__name__ == "DropVar"


def literal_value(atom: Any):
    return atom.val


def has_effects(eqn: Any) -> bool:
    """The equation does something besides computing its results (prints, writes a
    state, calls back): it runs even where nothing reads them."""
    return bool(getattr(eqn, "effects", ()))


_OWN_DIR = __file__.rsplit("/", 1)[0] + "/"


def _library_dirs() -> tuple[str, ...]:
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple({paths[k].rstrip("/") + "/" for k in ("stdlib", "platstdlib", "purelib",
                                                       "platlib") if paths.get(k)})


_LIBRARY_DIRS = _library_dirs()


def is_user_file(path: str) -> bool:
    """A notebook cell or the user's own file: not jaxmagic, an installed package or the
    standard library."""
    return not (path.startswith(_OWN_DIR) or path.startswith(_LIBRARY_DIRS)
                or "/site-packages/" in path or "/dist-packages/" in path)


def name_stack(eqn: Any) -> str:
    """The eqn's name stack as text, e.g. 'blk' or 'transpose(jvp(blk))'."""
    return str(eqn.source_info.name_stack)


def scope_names(eqn: Any) -> tuple[str, ...]:
    """The `jax.named_scope` names around `eqn`, outermost first (transforms left out)."""
    stack = getattr(eqn.source_info.name_stack, "stack", ())
    return tuple(s.name for s in stack if type(s).__name__ == "Scope")


def is_unfiltered_trace(exc: BaseException) -> bool:
    """JAX's `UnfilteredStackTrace`: the whole stack as text, chained to an error whose
    traceback JAX filtered (jax._src.traceback_util)."""
    return type(exc).__name__ == "UnfilteredStackTrace"


def name_scope(name: str) -> Any:
    """A context manager that extends JAX's name stack by `name` (as `jax.named_scope`,
    without its checks: the call tree opens one per traced call)."""
    try:
        from jax._src.source_info_util import extend_name_stack
    except ImportError:
        return jax.named_scope(name)
    return extend_name_stack(name)


# A jitted function the notebook already ran (`predict`, called once before the step)
# comes back from JAX's trace cache inside a new trace, its Python body not run again, so
# no call of the user's code in it is recorded (the model inside is one closed `jit:` box).
# The caches are keyed by the options in `config.trace_context()`; the HLO source-file
# canonicalisation is one of them (0.4.x to 0.12) and changes no jaxpr (it is read only
# when lowering; this regex never matches). One constant value keeps the recording's traces
# apart from the user's, one cache entry per function.
_FRESH_TRACE_REGEX = r"(?!)jaxmagic"


def fresh_traces() -> Any:
    """A context in which jitted functions are traced again, not taken from JAX's cache."""
    from contextlib import nullcontext

    try:
        from jax._src import config as _config
        state = _config.hlo_source_file_canonicalization_regex
    except (ImportError, AttributeError):
        return nullcontext()
    return state(_FRESH_TRACE_REGEX)


def from_fresh_traces(miss: str) -> bool:
    """Whether JAX's explanation of a trace-cache miss names no difference but the one
    `fresh_traces` makes: the first trace in the user's own context after `%jaxpr` traced
    the function in ours (Adam's bias correction under `tx.update`), not a retrace."""
    diffs = [line for line in miss.splitlines() if line.lstrip().startswith("* ")]
    return bool(diffs) and all(_FRESH_TRACE_REGEX in line for line in diffs)


def _user_raw_frames(eqn: Any, skip: Callable[[str], bool] | None) -> Iterator[tuple]:
    """(code, last instruction) of each frame outside JAX and jaxmagic (and `skip`)."""
    from jax._src import source_info_util

    tb = eqn.source_info.traceback
    codes, lastis = tb.raw_frames() if tb else ([], [])
    for code, lasti in zip(codes, lastis):
        file = code.co_filename
        # outside JAX, as JAX tells (its answer is cached per file, and forgotten when a
        # library registers its files as JAX's: Flax's module machinery), and outside us
        if source_info_util.is_user_filename(file) and not file.startswith(_OWN_DIR) \
                and not (skip and skip(file)):
            yield code, lasti


def source_frames(eqn: Any, skip: Callable[[str], bool] | None = None) \
        -> Iterator[tuple[str, int, str]]:
    """(file, line, function) of each frame outside JAX and jaxmagic that emitted `eqn`
    (and, given `skip`, outside the files it names), innermost first, lazily: callers
    want the first of a kind, and a frame's line is worked out only for those asked for
    (a Haiku ResNet50 step's 6,924 equations pass 128,000 frames of its module machinery
    on the way to the user's line)."""
    from jax._src import source_info_util

    for code, lasti in _user_raw_frames(eqn, skip):
        f = source_info_util.raw_frame_to_frame(code, lasti)
        yield f.file_name, f.start_line, f.function_name


def source_instruction(eqn: Any, skip: Callable[[str], bool] | None = None) -> tuple | None:
    """The instruction of the first frame `source_frames` gives, (code, offset): two
    equations of one line are made by one call or operator of it, or by two."""
    return next(_user_raw_frames(eqn, skip), None)


def callee_entry(sub: Any) -> tuple[str, int] | None:
    """(file, first line) of the function a call's jaxpr traced, from its debug info
    (`_where at …/jax/_src/numpy/util.py:300`)."""
    info = getattr(open_jaxpr(sub), "debug_info", None)
    m = re.fullmatch(r".* at (.+):(\d+)", getattr(info, "func_src_info", None) or "")
    return (m[1], int(m[2])) if m else None


def beyond_callee(eqn: Any, entries: Collection[tuple[str, int]],
                  skip: Callable[[str], bool] = lambda file: False) -> bool:
    """Whether `eqn`, inside calls of the functions at `entries` (the calls around it),
    reaches one of those functions, not the user's, before any user frame (none outside
    JAX and `skip`): made inside a library's call with none of the user's code between,
    its user line is the caller's. JAX 0.7-0.8 keep a call's frames past the function it
    traced; where the trace is reused (`jnp.where` called again with the same types) they
    are the first caller's, and a loop's test rebound by a `custom_vjp` inside diffrax's
    solve keeps the frames of that rebinding, outside the innermost call."""
    from jax._src import source_info_util

    def users(file: str) -> bool:
        return source_info_util.is_user_filename(file) and not file.startswith(_OWN_DIR) \
            and not skip(file)

    tb = eqn.source_info.traceback
    for code in (tb.raw_frames()[0] if tb else ()):
        if users(code.co_filename):
            return False
        if (code.co_filename, code.co_firstlineno) in entries:
            return True
    return False


def is_backward(eqn: Any) -> bool:
    """Emitted by reverse-mode differentiation (a transpose in its name stack)."""
    return "transpose(" in name_stack(eqn)


REMAT_PRIMITIVES = ("remat", "remat2", "checkpoint")


def is_remat(eqn: Any) -> bool:
    """A `jax.checkpoint` equation: `remat2` (`checkpoint` before), or under `jax_remat3`
    (0.10+) a `call_hi_primitive` whose `_prim` is a `RematTraced`."""
    name = eqn.primitive.name
    if name in REMAT_PRIMITIVES:
        return True
    return name == "call_hi_primitive" and \
        type(eqn.params.get("_prim")).__name__ == "RematTraced"


def remat_label(eqn: Any) -> str | None:
    """"checkpoint" for a `jax_remat3` checkpoint, whose primitive is the generic
    `call_hi_primitive`; None for any other equation."""
    if eqn.primitive.name == "call_hi_primitive" and is_remat(eqn):
        return "checkpoint"
    return None


def is_recomputation(eqn: Any) -> bool:
    """A forward equation `jax.checkpoint` runs again for the backward pass: JAX names
    the recomputation `rematted_computation` (with and without `jax_remat3`, where the
    recomputation is inlined in the backward pass rather than in a `remat2` body;
    measured on 0.7.2 and 0.10.2)."""
    return "rematted_computation" in name_stack(eqn)


def scan_counts(params: dict) -> tuple[int, int]:
    """(num_consts, num_carry) of a scan equation."""
    if "num_consts" in params:
        return params["num_consts"], params["num_carry"]
    consts, carry, _ = params["ft_in"].unpack()
    return len(consts), len(carry)


def shard_map_specs(params: dict) -> tuple[Any, Any, Any]:
    """(mesh, in_specs, out_specs) of a shard_map equation."""
    return params.get("mesh"), params.get("in_specs", params.get("in_names")), \
        params.get("out_specs", params.get("out_names"))


def kept_inputs(lowered: Any) -> list[int] | None:
    """The flat inputs a jit keeps as its program's parameters, in order (it drops those
    nothing uses: parameter 2 may be input 3), from the private `compile_args` of a
    `Lowered` (0.7 to 0.12); None where it cannot tell."""
    try:
        kept = lowered._lowering.compile_args["kept_var_idx"]
    except (AttributeError, KeyError, TypeError):
        return None
    return sorted(kept) if kept is not None else None


def cost_analysis(compiled: Any) -> dict:
    """The compiled executable's cost analysis as one dict (older JAX returned a list)."""
    try:
        cost = compiled.cost_analysis()
    except Exception:  # backends may not implement it
        return {}
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else {}
    return dict(cost or {})


# ---- error texts (core/checks/runtime.py) ------------------------------------------------
# Where JAX raises a plain Python exception, its text is all there is to recognise it by.
# Each entry: (first release, last release or None for "to the newest"), text.

# IndexError for a NumPy-style slice with traced bounds, `x[i:i + 2]` under jit.
TRACED_SLICE_TEXTS = (
    ((0, 7, 0), (0, 8, 1), "Array slice indices must have static start/stop/step"),
    ((0, 8, 2), (0, 11, 0), "Slice entries must be static integers"),
    ((0, 11, 1), None, "Array slice indices must have static start/stop/step"),
)


def is_traced_slice_error(exc: BaseException) -> bool:
    """`x[i:j]` with traced i or j. Any release's text is accepted, not only this one's."""
    return isinstance(exc, IndexError) and any(t in str(exc) for _, _, t in TRACED_SLICE_TEXTS)



# ---- %jit_compare (core/timing.py) ------------------------------------------------------

# Loggers that emit "TRACING CACHE MISS" explanations (jax_explain_cache_misses):
# jax._src.pjit up to 0.7, jax._src.interpreters.partial_eval in newer releases.
CACHE_MISS_LOGGERS = ("jax._src.pjit", "jax._src.interpreters.partial_eval")

# jaxlib 0.9's weakref_lru_cache, asked to explain a miss, walks its map while allocating
# Python objects; a garbage collection in that walk can free entries under it and crash the
# process (jax-ml/jax 5608120, "Possible fix for a crash seen in CI", in 0.10.0). While
# explanations are on, the collector stays off on those releases.
EXPLAINER_NEEDS_GC_OFF = (0, 9) <= JAX_VERSION[:2] < (0, 10)


def jit_options(f: Any) -> tuple[Any, dict] | None:
    """(python function, static/donate options) of a `jax.jit`-wrapped function, else None.

    Uses the private `_fun` / `_jit_info` of jaxlib's PjitFunction (0.7 to 0.12).
    """
    info = getattr(f, "_jit_info", None)
    fun = getattr(f, "_fun", None)
    if info is None or fun is None or not callable(fun):
        return None
    opts = {}
    for name in ("static_argnums", "static_argnames", "donate_argnums", "donate_argnames"):
        val = getattr(info, name, None)
        if val:
            opts[name] = tuple(val)
    return fun, opts


def config_flag(name: str) -> Any:
    """The current value of a boolean jax.config option such as jax_explain_cache_misses."""
    return getattr(jax.config, name)


def x64_enabled() -> bool:
    """Whether `jax_enable_x64` is on right now (jaxcheck's 64-bit dtype rule)."""
    return bool(jax.config.read("jax_enable_x64"))


def jit_cache_size(f: Any) -> int:
    """How many compiled versions a `jax.jit` function holds (0: never called), else 0."""
    size = getattr(f, "_cache_size", None)
    try:
        return int(size()) if callable(size) else 0
    except Exception:
        return 0


# ---- %devices / %%shardviz (core/devices.py, core/sharding.py) ----------------------------

# pmap's own mesh axis when the user names none. Up to 0.7 pmap returns a PmapSharding;
# from 0.8 it is built on shard_map and returns a NamedSharding over a one-axis mesh named
# `repr(core._TempAxisName(fun))`, '<axis 0x7f…>', in 0.8.0–0.10.1, and this from 0.10.2:
PMAP_INTERNAL_AXIS = "_internal_pmap_axis_name"
_PMAP_TEMP_AXIS = re.compile(r"<axis 0x[0-9a-f]+>")


def is_pmap_axis(name: Any) -> bool:
    """Whether a mesh axis name is the one jax.pmap made up for its own mesh."""
    return name == PMAP_INTERNAL_AXIS or (
        isinstance(name, str) and _PMAP_TEMP_AXIS.fullmatch(name) is not None)


def pmap_sharding_dims(sharding: Any) -> tuple[int, tuple[int, ...]] | None:
    """(device count, array dimensions mapped over them) of a PmapSharding, else None.

    `jax.sharding.PmapSharding` exists up to 0.7.x (gone by 0.12); the mapped dimensions
    are read from its private `sharding_spec` (Chunked / Unstacked entries)."""
    cls = getattr(jax.sharding, "PmapSharding", None)
    if cls is None or not isinstance(sharding, cls):
        return None
    spec = sharding.sharding_spec
    dims = tuple(i for i, s in enumerate(spec.sharding)
                 if type(s).__name__ in ("Chunked", "Unstacked"))
    return int(sharding.devices.size), dims


def is_pmap(f: Any) -> bool:
    """Whether `f` is what `jax.pmap` returned: a C++ PmapFunction on older releases, a
    Python wrapper from jax/_src/pmap.py (pmap over shard_map) on newer ones."""
    if type(f).__name__ == "PmapFunction":
        return True
    code = getattr(f, "__code__", None)
    return code is not None and hasattr(f, "lower") and \
        code.co_filename.endswith(os.path.join("jax", "_src", "pmap.py"))


# Sub-jaxprs that run op by op when their equation runs eagerly (a custom_jvp/vjp's primal
# function), so a jit called inside them is called at top level and its donation applies.
_EAGER_BODIES = ("call_jaxpr", "fun_jaxpr")


def donated_inputs(j: Any) -> set[int]:
    """Indices of `j`'s inputs that a call inside it donates when `j` runs op by op: an
    equation with `donated_invars` (a nested `jax.jit`, a `jax.pmap`: a jit of shard_map
    from 0.8, `xla_pmap` before) that is handed an input itself. Under an outer jit that
    donation is ignored; run eagerly (as the user's function runs outside jit) the input's
    buffer is deleted."""
    jaxpr = open_jaxpr(j)
    index = {id(v): i for i, v in enumerate(jaxpr.invars)}
    out: set[int] = set()
    for eqn in jaxpr.eqns:
        ins = [index.get(id(v)) for v in eqn.invars]
        donated = eqn.params.get("donated_invars")
        if donated is not None:
            out |= {i for i, d in zip(ins, donated) if d and i is not None}
            continue
        for key in _EAGER_BODIES:
            body = eqn.params.get(key)
            if isinstance(body, JAXPR_TYPES) and len(open_jaxpr(body).invars) == len(ins):
                out |= {ins[k] for k in donated_inputs(body) if ins[k] is not None}
    return out


def spec_partitions(spec: Any) -> tuple:
    """A PartitionSpec's per-dimension entries. From 0.8 a spec with `reduced`/`unreduced`
    axes refuses `tuple(spec)`; `spec.partitions` says the same on every release."""
    parts = getattr(spec, "partitions", None)
    return tuple(parts) if parts is not None else tuple(spec)


def is_tracer(x: Any) -> bool:
    """An abstract value being traced (inside jit/vmap/grad); it lives on no device."""
    return isinstance(x, jax.core.Tracer)


# ---- hardening: jaxmagic's own frames out of JAX's filtered tracebacks ---------------------

def exclude_own_frames() -> None:
    """Register jaxmagic's package with JAX's traceback filter (as JAX does for itself and
    Flax for its modules): errors JAX raises through our wrappers (the traced call, the
    checkify run) show the user's frames and JAX's message, not ours. Like JAX's own
    filtering, JAX_TRACEBACK_FILTERING=off shows everything again. Registered with the
    source-location filter too, so the stack-frame tables of lowered and compiled programs
    (`--stage compiled`) name the user's frames, not the magic's that traced them."""
    try:
        from jax._src import source_info_util, traceback_util
    except ImportError:      # a JAX without it: tracebacks keep our frames, nothing else
        return
    for registry in (traceback_util, source_info_util):
        if _OWN_DIR not in getattr(registry, "_exclude_paths", ()):
            registry.register_exclusion(_OWN_DIR)


exclude_own_frames()


# ---- %jaxpr --profile (core/compiled/profile.py) ---------------------------------------------

def with_scope(eqn: Any, name: str, params: dict) -> Any:
    """A copy of `eqn` with `params` and `name` appended to its name stack: lowering writes
    the name stack into each HLO instruction's `op_name` metadata, fusions included."""
    info = eqn.source_info
    return eqn.replace(params=params,
                       source_info=info.replace(name_stack=info.name_stack.extend(name)))


def with_eqns(j: Any, eqns: list) -> Any:
    """A copy of (closed) jaxpr `j` with other equations (`ClosedJaxpr` up to 0.11)."""
    if ClosedJaxpr is not Jaxpr and isinstance(j, ClosedJaxpr):
        return j.replace(jaxpr=j.jaxpr.replace(eqns=eqns))
    return j.replace(eqns=eqns)


def jaxpr_as_fun(closed: Any):
    """A Python function that evaluates a closed jaxpr, for `jax.jit` to lower again."""
    from jax._src import core as _src_core

    return _src_core.jaxpr_as_fun(closed)     # curried: a function of the arguments


# ---- the analysis compile (core/compiled/analysis.py): XLA's dump files ----------------------

def sharding_passes() -> tuple[str, str]:
    """The XLA passes that may propagate shardings, the one JAX asks for first: Shardy's
    (the default from 0.7) or GSPMD's when `jax_use_shardy_partitioner` is off, which
    XLA ignores from 0.12.1 (it runs Shardy's)."""
    passes = ("shardy-xla", "sharding-propagation")
    return passes if jax.config.jax_use_shardy_partitioner else passes[::-1]


# An allocation's header in the buffer assignment, `allocation 3: size 196608, <attrs>:`;
# from 0.12 the attributes begin with `page 0, `.
ALLOCATION = re.compile(r"^allocation (\d+): size \d+, (?:page \d+, )?(.*):\s*$")


def buffer_dumps(buffer_assignment: str, live_range: str) -> tuple[str, str]:
    """(buffer assignment, live ranges) from the text of XLA's `*-buffer-assignment.txt`
    and `*-live-range.txt` dumps. Up to 0.7 there is no live-range file: the live ranges
    (from `HloLiveRange`) and the used values close the buffer-assignment file."""
    if live_range:
        return buffer_assignment, live_range
    head, sep, tail = buffer_assignment.partition("\nHloLiveRange")
    return head.split("\nTotal bytes used:")[0].rstrip() + "\n", (sep + tail).lstrip("\n")


# ---- %jaxpr --sharding (graph/build.py, core/compiled/collectives.py) -------------------------

def typed_aval_str(aval: Any) -> str:
    """A value's type as `jax.make_jaxpr` prints it: `f32[256@data,512]` on an Explicit
    mesh, `f32[8,4]{V:i}` varying over a manual axis (`{i}` up to 0.7), reduced and
    unreduced axes (`{U:X}`, `{R:X}`) where the release has them."""
    short = getattr(aval, "str_short", None)
    if short is None:
        return type(aval).__name__
    try:
        return short(short_dtypes=True)
    except TypeError:        # an aval whose str_short takes no options (tokens, refs)
        return short()


# The primitive each user-facing function binds, by the name the user called: `psum`
# binds `psum_invariant` (`psum2` in some releases), `psum_scatter` binds
# `reduce_scatter`; `jax.lax.pcast(x, 'i', to='varying')` (from 0.8; `pvary` before)
# binds `pvary`.
_USER_NAMES = {"psum_invariant": "psum", "psum2": "psum", "reduce_scatter": "psum_scatter",
               "all_gather_invariant": "all_gather",
               "pvary": "pcast" if hasattr(jax.lax, "pcast") else "pvary"}


def user_primitive_name(prim: str) -> str:
    """The name the user called for primitive `prim` (itself where they are the same)."""
    return _USER_NAMES.get(prim, prim)


def jaxpr_meshes(jaxpr: Any) -> list:
    """The meshes a jaxpr names: its shard_maps' (`mesh` param) and its values' types on
    an Explicit mesh (`aval.sharding.mesh`), outermost first."""
    found = []

    def go(j):
        j = open_jaxpr(j)
        for v in j.invars:
            mesh = getattr(getattr(v.aval, "sharding", None), "mesh", None)
            if mesh is not None and not getattr(mesh, "empty", False):
                found.append(mesh)
        for eqn in j.eqns:
            if eqn.params.get("mesh") is not None:
                found.append(eqn.params["mesh"])
            for v in eqn.params.values():
                for sub in (v if isinstance(v, tuple) else (v,)):
                    if isinstance(sub, JAXPR_TYPES):
                        go(sub)

    go(jaxpr)
    return found


# From 0.8 jax.pmap is a jit of a shard_map: the analysis compile of its jaxpr is the
# program it runs. Up to 0.7 it is `xla_pmap`, compiled apart (a jit of it gathers).
PMAP_IS_SHARD_MAP = JAX_VERSION >= (0, 8)


# Newer compiled HLO text names source locations through tables printed between the
# module line and the program (`stack_frame_id=N` in each instruction's metadata; seen on
# 0.10.2 and 0.12); on 0.7 each instruction carries `source_file=… source_line=…` itself.
HLO_FRAME_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


# ---- %jaxpr --values (core/values.py) ------------------------------------------------------

def bind_equation(eqn: Any, values: list) -> list:
    """Run one equation on `values` as `jax.core.eval_jaxpr` does: a list of outputs.
    Nothing is donated: run on its own, outside the user's jit, an equation that donates
    (a `jax.pmap`'s `xla_pmap` on JAX 0.7, a nested jit) would delete the user's arrays."""
    params = eqn.params
    if any(params.get("donated_invars", ())):
        params = {**params, "donated_invars": (False,) * len(params["donated_invars"])}
    found = eqn.primitive.get_bind_params(params)
    subfuns, params = found if isinstance(found, tuple) else ((), found)   # 0.7–0.9
    out = eqn.primitive.bind(*subfuns, *values, **params)
    return list(out) if eqn.primitive.multiple_results else [out]


# JAX's files of public functions, by the name a user calls them with (`norm` in
# jax/_src/numpy/linalg.py is `jnp.linalg.norm`); the longest prefix first
_PUBLIC_FILES = (("numpy/linalg.py", "jnp.linalg."), ("numpy/fft.py", "jnp.fft."),
                 ("numpy/array_methods.py", ""), ("numpy/", "jnp."),
                 ("nn/", "jax.nn."), ("ops/special.py", "jax.nn."),
                 ("scipy/special.py", "jax.scipy.special."), ("scipy/", "jax.scipy."),
                 ("lax/", "lax."))


def library_function(eqn: Any, body_of: str = "") -> str:
    """The JAX function the user's line called to emit `eqn` (`jnp.linalg.norm`), read
    from its frames: the outermost public one inside the user's frame; "" for an
    operator or a method (`x ** 2`), or an equation of the user's own. Inside the body
    of a call named `body_of` the walk ends at that function's frame: JAX reuses a
    jitted function's traced body, whose frames beyond it are those of the program
    that first traced it (`norm` first traced under `jax.scipy.optimize.minimize`)."""
    tb = eqn.source_info.traceback
    found = ""
    for code in (tb.raw_frames()[0] if tb else ()):
        file = code.co_filename
        if not file.startswith(_JAX_SRC):
            if is_user_file(file):
                break
            continue
        prefix = next((p for f, p in _PUBLIC_FILES if file[len(_JAX_SRC):].startswith(f)),
                      None)
        name = code.co_name
        if file.endswith("/custom_derivatives.py") and name == "__call__":
            # a rule of the user's (a custom_vjp's backward) is inlined at its call
            found = "jax." + getattr(code, "co_qualname", "").split(".")[0]
        elif prefix == "":        # an operator or a method: what the user wrote is the line
            found = ""
        elif prefix is not None and not name.startswith(("_", "<")):
            found = prefix + name
        if name == body_of:
            break
    return found


_JAX_SRC = jax.__file__.rsplit("/", 1)[0] + "/_src/"


def values_config():
    """The configuration a `--values` run needs, for its own duration only: NaN and Inf
    checks off (the run looks for them itself) and jit on, whatever the user has set.
    Leaving `jax.debug_nans(False)` sets the thread's NaN-check hook of jit's C++ path to
    None instead of unsetting it, which on 0.10 (not 0.12) turns the checks off for every
    jitted function called before (`jnp.clip`'s) even once the user turns them on: the
    hook is put back as it was."""
    import contextlib

    from jax._src import api

    stack = contextlib.ExitStack()
    hook = getattr(api, "_post_hook_state", None)    # older: a None there is unset
    if hook is not None:
        stack.callback(hook.set_local, hook.get_local())
    stack.enter_context(jax.debug_nans(False))
    stack.enter_context(jax.debug_infs(False))
    stack.enter_context(jax.disable_jit(False))
    return stack


def aval_of(x: Any) -> Any:
    """The abstract value of an array or tracer (`jax.typeof`; `jax.core.get_aval`
    before it)."""
    typeof = getattr(jax, "typeof", None)
    return typeof(x) if typeof is not None else jax.core.get_aval(x)


def shard_map_axes(params: dict) -> tuple:
    """The mesh axes a shard_map equation's body is manual over, in the mesh's order
    (`newly_manual_axes` from 0.8, `manual_axes` before)."""
    mesh = params.get("mesh")
    names = params.get("newly_manual_axes", params.get("manual_axes")) or \
        frozenset(mesh.axis_names)
    return tuple(a for a in mesh.axis_names if a in names)


def shard_map(f: Any, params: dict, in_specs: tuple, out_specs: tuple) -> Any:
    """`f` mapped as a shard_map equation's body is (its mesh, manual axes and check of
    what varies over them: its collectives were traced under it), with other specs."""
    check = params.get("check_vma", params.get("check_rep", True))
    return jax.shard_map(f, mesh=params["mesh"], in_specs=in_specs, out_specs=out_specs,
                         axis_names=set(shard_map_axes(params)), check_vma=bool(check))


def vary(x: Any, axes: tuple) -> Any:
    """`x` inside a shard_map body, typed as varying over `axes` (`pcast` from 0.8,
    `pvary` before): a value returned split over them must vary over them."""
    aval = aval_of(x)
    have = getattr(aval, "vma", None)
    if have is None:
        have = getattr(getattr(aval, "mat", None), "varying", frozenset())
    missing = tuple(a for a in axes if a not in have)
    if not missing:
        return x
    if hasattr(jax.lax, "pcast"):
        return jax.lax.pcast(x, missing, to="varying")
    return jax.lax.pvary(x, missing)
