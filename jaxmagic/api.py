"""The public Python API: each function returns a view (`_repr_mimebundle_`, `.text()`).

The magics are one way to call these; scripts and tests call them directly. This is a
facade: how a `%jaxpr` view is made (trace, the overlays, the graph) is `pipeline.py`,
the analyses drawn over it `overlays/`.
"""
from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .core.errors import is_jax_error, user_frame
from .core.target import BoundCall
from .pipeline import costliest_groups as _costliest_groups
from .pipeline import trace_call
from .render.errors import ErrorCard
from .render.jaxpr import JaxprView

if TYPE_CHECKING:   # for annotations: each function imports its renderer when called
    from .render.cards import Findings, FindingView
    from .render.devices import DevicesView
    from .render.jit import JitComparison
    from .render.sharding import ShardingView


def _arg_names(f: Callable, nargs: int) -> list[str]:
    """What to call each of `nargs` positional arguments of `f`: its parameter's name, as
    `inspect.signature` sees it through partials, jit, grad and bound methods (`rest[0]`
    for `*rest`), `arg{i}` where the signature names none (a builtin, too many)."""
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        params = []
    named = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), None)
    return [named[i] if i < len(named) else f"{star}[{i - len(named)}]" if star
            else f"arg{i}" for i in range(nargs)]


def _bound(f: Callable, args: tuple, kwargs: dict, listed: bool = False) -> BoundCall:
    """The call `f(*args, **kwargs)`, its inputs named by `f`'s parameters (a magic names
    them by their source text instead)."""
    names = _arg_names(f, len(args))
    shown = ", ".join(names + list(kwargs)) if listed else "..."
    return BoundCall(f, args, kwargs, names, {k: k for k in kwargs},
                     f"{getattr(f, '__name__', 'f')}({shown})")


def trace(f: Callable, *args: Any, static_argnums: Sequence[int] | int | None = None,
          static_argnames: Sequence[str] | str | None = None, sharding: bool = False,
          **kwargs: Any) -> JaxprView:
    """Trace `f(*args, **kwargs)` and return its jaxpr as a drawable view (`%jaxpr`).

    `sharding=True` (`--sharding`): values carry their shardings and `view.collectives`
    lists what the compiled program sends between devices (one extra compile)."""
    call = _bound(f, args, kwargs)
    return trace_call(call, static_argnums=static_argnums, static_argnames=static_argnames,
                      overlays=["sharding"] if sharding else [])


def profile(f: Callable, *args: Any, static_argnums: Sequence[int] | int | None = None,
            static_argnames: Sequence[str] | str | None = None, measure: bool = True,
            budget: float = 3.0, **kwargs: Any) -> JaxprView:
    """Where the time of `f(*args, **kwargs)` goes, on its graph (`%jaxpr --profile`).

    Runs the compiled call under JAX's profiler (within `budget` seconds) and joins each
    executed instruction to its equations; `measure=False` (`--cost`) only estimates
    flops and bytes from shapes. The view's `.costs` holds one row per equation."""
    call = _bound(f, args, kwargs)
    return trace_call(call, static_argnums=static_argnums, static_argnames=static_argnames,
                      overlays=["profile" if measure else "cost"], budget=budget)


def memory(f: Callable, *args: Any, static_argnums: Sequence[int] | int | None = None,
           static_argnames: Sequence[str] | str | None = None, **kwargs: Any) -> JaxprView:
    """Where the memory of compiled `f(*args, **kwargs)` goes, on its graph
    (`%jaxpr --memory`).

    Compiles the call once more with XLA's buffer dump (nothing runs) and reads the live
    bytes over its schedule, the peak, and the buffers alive at it, joined to equations
    and inputs. The view's `.memory` holds the curve and the rows."""
    call = _bound(f, args, kwargs)
    return trace_call(call, static_argnums=static_argnums, static_argnames=static_argnames,
                      overlays=["memory"])


def values(f: Callable, *args: Any, static_argnums: Sequence[int] | int | None = None,
           static_argnames: Sequence[str] | str | None = None, budget: int = 20000,
           **kwargs: Any) -> JaxprView:
    """What flowed along every edge of `f(*args, **kwargs)`, and where the first NaN or
    Inf was born (`%jaxpr --values`).

    Runs the traced call once more on its arguments (nothing donated), equation by
    equation, summarising each value (count, NaN/±Inf, zeros, mean, spread, range);
    `budget` values in full, the rest by their NaN/Inf counts. The view's `.values`
    holds the summaries, `.values.card` the origin, its cause and fix."""
    call = _bound(f, args, kwargs)
    return trace_call(call, static_argnums=static_argnums, static_argnames=static_argnames,
                      overlays=["values"], values_budget=budget)


def error_card(exc: BaseException, src: str | None = None, label=None):
    """A card naming the user's failing line for an error raised by JAX, else None.

    Known sharp bits get jaxcheck's card (rule, line, fix: see `explain`); other JAX
    errors get a plain card naming the line."""
    finding = explain(exc, src, label=label)
    if finding is not None:
        return finding
    if not is_jax_error(exc):
        return None
    frame = user_frame(exc)
    return ErrorCard.from_exception(exc, frame) if frame else None


def compare_jit(f: Callable, *args: Any, static_argnums: Sequence[int] | int | None = None,
                static_argnames: Sequence[str] | str | None = None,
                donate_argnums: Sequence[int] | int | None = None,
                donate_argnames: Sequence[str] | str | None = None,
                number: int | None = None, repeat: int | None = None,
                budget: float | None = None, eager: bool = True,
                **kwargs: Any) -> "JitComparison":
    """Eager vs `jax.jit` for `f(*args, **kwargs)` (`%jit_compare`): a JitComparison.

    Times eager (op by op) and steady jit per call (`number` loops × `repeat` runs, chosen
    from `budget` seconds when not given), splits the first jit call into trace, lower and
    compile, compares every output leaf, counts traces, and reports donation and the
    compiled cost. Donated inputs are copied before each call, so `args` stay usable.
    Raises `StaticArgumentError` (a TypeError) for an argument jit cannot trace.
    """
    __tracebackhide__ = True
    call = _bound(f, args, kwargs, listed=True)
    return compare_call(call, static_argnums=static_argnums, static_argnames=static_argnames,
                        donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                        number=number, repeat=repeat, budget=budget, eager=eager)


def compare_call(call: BoundCall, **options: Any) -> "JitComparison":
    """`compare_jit` for a call whose arguments carry their source text (from a magic)."""
    __tracebackhide__ = True
    from .core.timing import measure
    from .render.jit import JitComparison

    result = JitComparison.of(measure(call.func, call.args, call.kwargs,
                                      arg_names=call.arg_names, kwarg_names=call.kwarg_names,
                                      name=call.source, callee_name=call.func_src, **options))
    # where the time is: in the work, unless the measured calls retraced (the table says so)
    if result.speedup is not None and result.speedup < 1 and result.traces <= 1:
        result.costliest = _costliest_groups(call, result)
    return result


# ---- %jaxcheck: JAX's sharp bits ---------------------------------------------------------

def check_source(src: str, *, namespace: dict | None = None, x64: bool | None = None,
                 filename: str | None = None) -> "Findings":
    """Static jaxcheck findings for a cell or file (`%%jaxcheck`, `python -m jaxmagic check`).

    A list of Finding (rule, severity, line, message, fix, ...) that displays as cards.
    `namespace` (a notebook's) tells which names already hold JAX arrays; `x64` is the
    current `jax_enable_x64`."""
    from .core.checks import check_source as _check
    from .render.cards import Findings

    return Findings(_check(src, namespace=namespace, x64=x64, filename=filename))


def explain(exc: BaseException, src: str | None = None, *, label=None) -> "FindingView | None":
    """The jaxcheck finding for an exception raised by JAX: its rule, the user's failing
    line (the last frame of their code, not the `def` JAX names), message and fix. None
    when the exception is not one the catalogue knows."""
    from .core.checks import explain as _explain
    from .render.cards import FindingView

    try:
        finding = _explain(exc, src, label=label)
    except Exception:     # the explainer must never hide the user's own error
        return None
    return FindingView.of(finding) if finding is not None else None


# ---- %devices / %%shardviz: where every shard lives --------------------------------------


def devices_info() -> "DevicesView":
    """Local and global devices, grouped by process, with memory where the platform
    reports it (`%devices`): a DevicesView."""
    from .core.devices import collect
    from .render.devices import DevicesView

    return DevicesView(collect())


def sharding_view(tree: Any, *, names: bool = False, source: str | None = None) -> "ShardingView":
    """Which device holds which block of every JAX array in `tree` (`%%shardviz`).

    `tree` is a jax.Array or any pytree of them (one panel per leaf, labelled by its
    path); with `names=True` it is a dict of variable name -> value, labelled by name.
    Reads metadata only: no data reaches the host and pending computations are not waited
    for (works under `jax.transfer_guard("disallow")`). A value holding no JAX array gets
    a view whose message says what was found."""
    from .core.sharding import collect
    from .render.sharding import ShardingView

    roots = list(tree.items()) if names else [("", tree)]
    return ShardingView(collect(roots, source=source))


def sharding_plan(f: Callable, *args: Any, **kwargs: Any) -> "ShardingView":
    """The input and output shardings XLA chose for jitted `f(*args, **kwargs)`, from
    `f.lower(...).compile()`, without running it (`%%shardviz --plan`).

    Raises `jaxmagic.core.sharding.PlanError` (a ValueError) when `f` is not jitted."""
    call = _bound(f, args, kwargs)
    return plan_call(call)


def plan_call(call: BoundCall) -> "ShardingView":
    """`sharding_plan` for a call whose arguments carry their source text (from a magic)."""
    __tracebackhide__ = True
    from .core.sharding import plan
    from .render.sharding import ShardingView

    model = plan(call.func, call.args, call.kwargs, arg_names=call.arg_names,
                 source=call.source, kwarg_names=call.kwarg_names, callee_name=call.func_src)
    return ShardingView(model, title="shardviz --plan")
