"""Runtime: a JAX exception mapped to a rule and to the user's failing line.

JAX names the `def` line of the traced function; the line that failed is the last frame
of the user's own code in the traceback. The static rules are then run over that frame's
source: when one of them flags the failing line with a compatible rule, its message and
rewritten line are used (they are specific); otherwise a generic finding for the rule
is built from the exception. Exceptions that are not recognisably JAX's give None.
"""
from __future__ import annotations

import functools
import linecache
import re
import types
from typing import Callable

from ... import _compat
from ..errors import as_typed, is_cell, is_user_file
from .jaxapi import _LAX_BINARY
from .model import RULES, Finding
from .static import analyze

_AUG = re.compile(r"\]\s*(\*\*|//|>>|<<|[-+*/%@&|^])=")


def _chain(exc: BaseException):
    seen = set()
    e = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


def _user_tb_frame(exc: BaseException) -> tuple[types.FrameType, int] | None:
    """(frame, line) of the innermost user frame, following chained causes."""
    for e in _chain(exc):
        found = None
        tb = e.__traceback__
        while tb is not None:
            if is_user_file(tb.tb_frame.f_code.co_filename):
                found = (tb.tb_frame, tb.tb_lineno)
            tb = tb.tb_next
        if found:
            return found
    return None


def _cls_names(exc: BaseException) -> set[str]:
    return {c.__name__ for c in type(exc).__mro__}


def _from_jax(exc: BaseException) -> bool:
    for e in _chain(exc):
        if (type(e).__module__ or "").startswith(("jax", "jaxlib")):
            return True
        tb = e.__traceback__
        while tb is not None:
            fn = tb.tb_frame.f_code.co_filename
            if "/jax/" in fn or "/jaxlib/" in fn or "\\jax\\" in fn:
                return True
            tb = tb.tb_next
    return False


def _is_jax_array(v) -> bool:
    t = type(v)
    return (t.__module__ or "").startswith(("jax", "jaxlib")) and hasattr(v, "at")


def _classify(exc: BaseException, line: str, frame) -> tuple[str, set[str], dict] | None:
    """(rule, static rules that may refine it, facts from the message)."""
    names = _cls_names(exc)
    msg = str(exc)
    facts: dict = {}
    m = re.search(r"depends on the value of the argument[s]? (\w+)", msg)
    if m:
        facts["arg"] = m.group(1)
    if "UnexpectedTracerError" in names:
        m = re.search(r"value leaked was (\S+) at (.+?):(\d+)", msg)
        if m:
            facts["leak_fn"], facts["leak_file"], facts["leak_line"] = \
                m.group(1), m.group(2), int(m.group(3))
        m = re.search(r"was created on line (.+?):(\d+)", msg)
        if m:
            facts["created_file"], facts["created_line"] = m.group(1), int(m.group(2))
        return "JX305", {"JX305"}, facts
    if "NonConcreteBooleanIndexError" in names:
        return "JX201", {"JX201"}, facts
    if "TracerBoolConversionError" in names:
        return "JX202", {"JX202"}, facts
    if "TracerIntegerConversionError" in names:
        return "JX203", {"JX203", "JX204", "JX206"}, facts
    if "TracerArrayConversionError" in names:
        return "JX207", {"JX207"}, facts
    if "ConcretizationTypeError" in names:
        if re.search(r"size argument|jnp\.unique|size=|nonzero|jnp\.where|argwhere", msg):
            return "JX205", {"JX205"}, facts
        if re.search(r"arose with the `(int|float|complex)` function|item\(\) method|"
                     r"tolist", msg):
            return "JX207", {"JX207"}, facts
        if re.search(r"jnp\.arange argument|shape|size|index", msg):
            return "JX203", {"JX203", "JX204"}, facts
        return "JX207", {"JX207", "JX203", "JX205"}, facts
    if "JaxRuntimeError" in names and "out-of-bounds indexing" in msg:
        m = re.search(r"index (-?\d+) is out of bounds for axis (\d+) with size (\d+)", msg)
        if m:
            facts["index"], facts["axis"], facts["size"] = map(int, m.groups())
        upd = re.search(r"\.at\[.*\]\.(set|add|subtract|multiply|mul|divide|power|min|max|"
                        r"apply)\(", line)
        return ("JX402" if upd else "JX401"), {"JX401", "JX402"}, facts
    if isinstance(exc, TypeError):
        if "JAX arrays are immutable" in msg or ("does not support item assignment" in msg
                                                 and ".at[" in msg):
            return ("JX102" if _AUG.search(line) else "JX101"), {"JX101", "JX102", "JX201"}, \
                facts
        if "Shapes must be 1D sequences of concrete values" in msg:
            if "became a tracer due to JAX operations" in msg:
                return "JX204", {"JX204", "JX203"}, facts
            return "JX203", {"JX203", "JX204"}, facts
        m = re.search(r"lax\.(\w+) requires arguments to have the same dtypes, got "
                      r"(\w+), (\w+)", msg)
        if m:
            facts["lax"], facts["dtypes"] = m.group(1), (m.group(2), m.group(3))
            return "JX501", {"JX501"}, facts
        m = re.search(r"Error interpreting argument to (.+?) as an abstract array\. The "
                      r"problematic value is of type (<class '[^']+'>) and was passed to "
                      r"the function at path (\w+)", msg)
        if m:
            facts["fn"], facts["type"], facts["arg"] = m.group(1), m.group(2), m.group(3)
            if m.group(3) == "self":
                return "JX603", {"JX603"}, facts
            return "JX601", {"JX601"}, facts
        m = re.search(r"Argument '(.+?)' of type (<class '[^']+'>) is not a valid JAX type",
                      msg)
        if m:
            facts["type"] = m.group(2)
            return "JX601", {"JX601"}, facts
        if "first operand must be array" in msg and re.search(r"\.at\(", line):
            if _line_has_jax_array(line, frame, r"\.at\(\s*(\w+)"):
                return "JX104", {"JX104"}, facts
            return None
    if isinstance(exc, ValueError) and "Non-hashable static arguments" in msg:
        m = re.search(r"object of type (<class '[^']+'>)", msg)
        if m:
            facts["type"] = m.group(1)
        return "JX602", {"JX602"}, facts
    if _compat.is_traced_slice_error(exc):
        return "JX206", {"JX206"}, facts
    if isinstance(exc, AttributeError) and msg.strip("'\" ") == "__delitem__":
        if re.match(r"\s*del\s", line) and _line_has_jax_array(line, frame,
                                                              r"del\s+([\w.]+)\["):
            return "JX103", {"JX103"}, facts
    return None


def _line_has_jax_array(line: str, frame, pattern: str) -> bool:
    m = re.search(pattern, line)
    if not m or frame is None:
        return False
    name = m.group(1).split(".")[0]
    v = frame.f_locals.get(name, frame.f_globals.get(name))
    if "." in m.group(1):
        for part in m.group(1).split(".")[1:]:
            v = getattr(v, part, None)
    return _is_jax_array(v)


_GENERIC = {
    "JX101": ("JAX arrays are immutable: item assignment raises TypeError.",
              "use the functional update: x = x.at[idx].set(value)"),
    "JX102": ("JAX arrays are immutable: augmented item assignment raises TypeError.",
              "use the functional update: x = x.at[idx].add(value) (or .subtract, "
              ".multiply, .divide, .power, .min, .max)"),
    "JX103": ("JAX arrays are immutable: `del x[i]` is not supported.",
              "make a new array: x = jnp.delete(x, i)"),
    "JX104": ("NumPy's ufunc.at updates in place, but JAX arrays are immutable.",
              "use x = x.at[idx].add(v) / .apply(ufunc)"),
    "JX201": ("a boolean mask computed from traced values cannot index an array under a "
              "transform: the result's size would depend on the values.",
              "keep the shape with jnp.where(mask, x, 0) (or where= in reductions), or use "
              "jnp.nonzero(mask, size=N)"),
    "JX202": ("Python control flow (if/while/and/or/not) needs a concrete bool, but the "
              "value is traced.",
              "use lax.cond / lax.while_loop / jnp.where, or mark the argument static "
              "(static_argnames)"),
    "JX203": ("a traced value is used where a concrete Python int is needed (a size, a "
              "shape, range() or an index into a Python sequence).",
              "mark the argument static (static_argnames), compute sizes from shapes with "
              "NumPy, or use lax.fori_loop for traced loop bounds"),
    "JX204": ("a shape was computed with jax.numpy, which makes a tracer even from static "
              "shapes.",
              "compute shapes with NumPy or Python (np.prod(x.shape), math.prod) so they "
              "stay static"),
    "JX205": ("this function's output size depends on the values, which a transform "
              "cannot know.",
              "pass a static upper bound: size=N (and fill_value=...)"),
    "JX206": ("slice bounds are traced, so the slice's shape is not static.",
              "use lax.dynamic_slice(x, start, sizes) with a static size"),
    "JX207": ("a traced value is converted to a concrete Python/NumPy value.",
              "stay in jax.numpy (x.astype(int), jnp.asarray, jnp.* functions); keep "
              "NumPy for static values"),
    "JX305": ("a tracer escaped its transform: a traced function stored an intermediate "
              "value outside (a global, a list, an attribute) and it was used later.",
              "return the value from the function instead of storing it"),
    "JX401": ("an index was out of bounds: JAX clamps reads instead of raising.",
              "use an index in range, or x.at[idx].get(mode='fill') for a fill value"),
    "JX402": ("an index was out of bounds: JAX drops such updates instead of raising.",
              "use an index in range"),
    "JX501": ("lax functions do not promote types: both operands need the same dtype.",
              "use the jax.numpy function (which promotes) or convert explicitly with "
              ".astype"),
    "JX601": ("a non-array argument was passed to a jitted function without marking it "
              "static.",
              "mark it static: static_argnames=('name',)"),
    "JX602": ("static arguments must be hashable.",
              "pass a tuple instead of a list (frozenset for a set)"),
    "JX603": ("@jit on a method passes `self` as an array argument.",
              "use @partial(jax.jit, static_argnums=0) (with __hash__/__eq__ on the class), "
              "or register the class as a pytree"),
}


def _first_line(exc: BaseException) -> str:
    for ln in str(exc).splitlines():
        if ln.strip():
            return ln.strip()
    return type(exc).__name__


def _source_of(filename: str, src: str | None) -> str:
    lines = linecache.getlines(filename)
    if lines:
        return "".join(lines)
    return src or ""


def explain(exc: BaseException, src: str | None = None, *, label: Callable[[str], str | None]
            | None = None) -> Finding | None:
    """The finding for a JAX exception: rule, the user's failing line, message and fix.

    `src` is the cell's source when the failing frame's file is not in `linecache`.
    `label(filename)` may name the cell a frame is in ("In [3]"). None when `exc` is not
    an error this catalogue knows.
    """
    where = _user_tb_frame(exc)
    frame, lineno = where if where else (None, 0)
    # checkify re-raises from its own machinery: the failing line is in the cause
    if "JaxRuntimeError" in _cls_names(exc) and exc.__cause__ is not None:
        inner = _user_tb_frame(exc.__cause__)
        if inner is not None:
            frame, lineno = inner
    filename = frame.f_code.co_filename if frame is not None else ""
    text = _source_of(filename, src) if filename else (src or "")
    lines = text.split("\n")
    line = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
    if not line and src and frame is not None and is_cell(filename):
        line = linecache.getline(filename, lineno).rstrip("\n")
    cls = _classify(exc, line, frame)
    if cls is None:
        return None
    rule, compatible, facts = cls
    static = None
    if text and lineno:
        found = _analyze_in(text, frame)
        same = [f for f in found if f.line == lineno and f.rule in compatible]
        if not same and frame is not None and frame.f_code.co_name != "<module>":
            # the function's body, with its arguments' actual values known
            same = [f for f in _body_findings(text, lineno, frame) if f.line == lineno and
                    f.rule in compatible]
        # prefer the rule the exception names
        same.sort(key=lambda f: (f.rule != rule, f.col or 0))
        static = same[0] if same else None
        if rule == "JX305":
            static = None
            facts["stored"] = _leak_store(found, facts, text)
            if facts["stored"]:
                facts["stored_where"] = _where(facts.get("leak_file") or filename,
                                               facts["stored"][0], label)
    message, fix = _GENERIC[rule]
    err_name = type(exc).__name__
    rewrite = fix_line = None
    col = end_col = None
    detail = dict(facts)
    if static is not None:
        rule, message, fix = static.rule, static.message, static.fix
        rewrite, fix_line = static.rewrite, static.fix_line
        col, end_col = static.col, static.end_col
    else:
        message, fix, rewrite = _specific(rule, facts, message, fix, line, exc)
    where_txt = _where(filename, lineno, label)
    return Finding(rule=rule, severity=RULES[rule].severity, line=lineno, message=message,
                   fix=fix, col=col, end_col=end_col, source=as_typed(line), rewrite=rewrite,
                   fix_line=fix_line, origin="runtime", filename=filename or None,
                   where=where_txt, error=err_name,
                   detail={**detail, "exception": _first_line(exc)})


def _analyze_in(src: str, frame) -> list[Finding]:
    """Static findings for `src` with the failing frame's names holding their values.

    Never raises: the explainer must not hide the user's real error.
    """
    ns = None
    if frame is not None:
        ns = dict(frame.f_globals)
        try:
            ns.update(frame.f_locals)
        except Exception:   # pragma: no cover
            pass
    try:
        return analyze(src, namespace=ns)
    except Exception:
        return []


def _body_findings(text: str, lineno: int, frame) -> list[Finding]:
    """Static findings for the body of the function that failed, analysed as if it were
    top-level code whose names hold the frame's actual values (`buf` is a JAX array)."""
    import ast
    import textwrap

    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    best = None
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.body and \
                n.name == frame.f_code.co_name and n.body[0].lineno <= lineno <= n.end_lineno:
            if best is None or n.lineno > best.lineno:
                best = n
    if best is None:
        return []
    lines = text.split("\n")
    first, last = best.body[0].lineno, best.end_lineno
    body = lines[first - 1:last]
    src = textwrap.dedent("\n".join(body))
    shift = len(body[0]) - len(src.split("\n", 1)[0])
    found = _analyze_in(src, frame)
    out = []
    for f in found:
        line = f.line + first - 1
        out.append(f.with_(line=line, source=lines[line - 1],
                           col=f.col + shift if f.col else None,
                           end_col=f.end_col + shift if f.end_col else None,
                           fix_line=f.fix_line + first - 1 if f.fix_line else None))
    return out


def _where(filename: str, lineno: int, label) -> str:
    if not filename:
        return f"line {lineno}"
    name = label(filename) if label else None
    if name:
        return f"{name}, line {lineno}" if name != "this cell" else f"line {lineno}"
    if is_cell(filename):
        m = re.match(r"<ipython-input-(\d+)-", filename)
        return f"In [{m.group(1)}], line {lineno}" if m else f"line {lineno}"
    import os
    return f"{os.path.basename(filename)}:{lineno}"


def _specific(rule, facts, message, fix, line, exc):
    """Sharpen the generic text with what the exception message says."""
    rewrite = None
    arg = facts.get("arg")
    if rule == "JX601" and arg:
        t = facts.get("type", "")
        kind = re.sub(r"<class '([^']+)'>", r"\1", t)
        message = (f"argument `{arg}` of a jitted function got a {kind}, which jit cannot "
                   "trace; it is not marked static.")
        fix = f"mark it static: static_argnames=({arg!r},)"
    elif rule == "JX602" and facts.get("type"):
        kind = re.sub(r"<class '([^']+)'>", r"\1", facts["type"])
        message = f"a static argument got a {kind}, which is unhashable."
        fix = "pass a tuple (or frozenset) instead"
    elif rule == "JX501" and facts.get("lax"):
        a, b = facts["dtypes"]
        name = facts["lax"]
        message = f"lax.{name} does not promote types: got {a} and {b}."
        fix = f"use jnp.{_jnp_name(name)} (it promotes), or convert one operand with .astype"
    elif rule in ("JX202", "JX203", "JX205", "JX207") and arg:
        fix = fix + f"; the value comes from argument `{arg}`: if it is a Python value, " \
            f"mark it static: static_argnames=({arg!r},)"
    elif rule == "JX305":
        stored = facts.get("stored")
        fn = facts.get("leak_fn", "a traced function")
        if stored:
            where = facts.get("stored_where") or f"line {stored[0]}"
            message = (f"a tracer leaked out of {fn}: {where} (`{stored[1]}`) "
                       "stored it outside the function, and this line used it after "
                       "tracing ended.")
        elif facts.get("created_line"):
            message = (f"a tracer leaked out of {fn} (created at line "
                       f"{facts['created_line']}): it was stored outside the function and "
                       "used here after tracing ended.")
        fix = f"return the value from {fn} instead of storing it outside"
    elif rule in ("JX401", "JX402") and "index" in facts:
        i, ax, n = facts["index"], facts["axis"], facts["size"]
        what = "read would be clamped" if rule == "JX401" else "update would be dropped"
        message = (f"checkify: index {i} is out of bounds for axis {ax} of size {n} (without "
                   f"checkify the {what} silently).")
        fix = f"use an index in range({n})"
    return message, fix, rewrite


def _jnp_name(lax_name: str) -> str:
    return _LAX_BINARY.get(lax_name, lax_name)


def _leak_store(found, facts, text) -> tuple[int, str] | None:
    """The line of the traced function that stored the leaked tracer outside it."""
    fn_line = facts.get("leak_line")
    leak_file = facts.get("leak_file")
    cands = list(found)
    if leak_file:
        other = "".join(linecache.getlines(leak_file))
        if other and other != text:
            try:
                cands = analyze(other)
            except Exception:
                cands = []
            text = other
    lines = text.split("\n")
    stores = [f for f in cands if f.rule in ("JX302", "JX303")]
    if fn_line:
        after = [f for f in stores if f.line > fn_line]
        stores = after or stores
    leaks = [f for f in stores if f.detail.get("leak")] or stores
    if not leaks:
        return None
    f = leaks[0]
    return f.line, lines[f.line - 1].strip() if f.line - 1 < len(lines) else ""


# ---------------------------------------------------------------------------------------
# checkify: out-of-bounds indexing that raises instead of clamping


def checkify_function(f: Callable, errors=None) -> Callable:
    """`f` under `jax.experimental.checkify` (index checks by default): returns (err, out).

    Traceable and jittable; this is what `%jaxpr --checkify` draws."""
    from jax.experimental import checkify

    return checkify.checkify(f, errors=checkify.index_checks if errors is None else errors)


def checkified(f: Callable, errors=None, *, jit: bool = False) -> Callable:
    """A function that runs `f` with checkify's index checks and raises on a failed check.

    Out-of-bounds indexing, which JAX silently clamps or drops, raises
    `checkify.JaxRuntimeError` naming the index, axis and size. With `jit=True` the
    checked function is compiled (the check is thrown after the compiled call).
    """
    import jax

    checked = checkify_function(f, errors)
    run = jax.jit(checked) if jit else checked

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        __tracebackhide__ = True
        err, out = run(*args, **kwargs)
        err.throw()
        return out

    wrapper.checked = checked
    return wrapper


def run_checkified(f: Callable, args: tuple = (), kwargs: dict | None = None, *,
                   static_argnums=None, static_argnames=None, errors=None):
    """Run `f(*args, **kwargs)` once under checkify's index checks; raise
    `checkify.JaxRuntimeError` on an out-of-bounds index, else return the result.

    Static arguments (as jit takes them) are bound first, so only arrays are traced.
    This is what `%jaxpr --checkify` and `%jit_compare --checkify` run before their work.
    """
    __tracebackhide__ = True      # the error is the user's index, not our frame
    kwargs = dict(kwargs or {})
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums or ())
    names = (static_argnames,) if isinstance(static_argnames, str) else \
        tuple(static_argnames or ())
    n = len(args)
    nums = {i % n for i in nums if -n <= i < n}
    static_pos = {i: args[i] for i in nums}
    static_kw = {k: kwargs.pop(k) for k in names if k in kwargs}
    dyn = [a for i, a in enumerate(args) if i not in static_pos]

    def bound(*dyn_args, **dyn_kwargs):
        __tracebackhide__ = True
        it = iter(dyn_args)
        full = [static_pos[i] if i in static_pos else next(it) for i in range(n)]
        return f(*full, **dyn_kwargs, **static_kw)

    functools.update_wrapper(bound, f)
    return checkified(bound, errors, jit=True)(*dyn, **kwargs)
