"""The IPython binding: parse arguments, find the target, call the API, display the result.

Everything about JAX lives in `core/`, everything about looks in `render/`; a magic here is
its options (declared in `options`), the call it acts on (`core/target`, a cell's run by
`cells`), one API call, and the display. A magic's errors reach the user without a frame
of jaxmagic's (`magic_errors`), so tracebacks look as they would without the magic.
"""
from __future__ import annotations

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import parse_argstring
from IPython.display import display
from traitlets import Bool, Enum, Float, Int

from . import api, cells, options, overlays
from .cellhooks import CellHooks, x64
from .core import interrupt
from .core.target import BoundCall, TargetError, bind, parse_call
from .frontend import show_jaxpr
from .magic_errors import argument_usage, users_frames
from .options import argnames, argnums, parse_options, usage
from .render.jaxpr import depth_of


@magics_class
class JaxMagic(Magics):
    """jaxmagic's magics; every option below is settable with `%config JaxMagic.<name>`."""

    layout_timeout = Float(10.0, help="Seconds a graph layout may take before a coarser "
                           "view is drawn instead.").tag(config=True)
    max_nodes = Int(400, help="Most nodes a graph draws; past it, a coarser view (the "
                    "automatic depth, then grouped by function, then by pass).").tag(config=True)
    renderer = Enum(["auto", "dot", "wasm", "none"], "auto",
                    help="Graph layout: the system `dot`, in-process WebAssembly Graphviz, "
                    "or none (text and DOT source).").tag(config=True)
    png = Bool(True, help="Add a PNG beside the SVG when `dot` can make one (GitHub shows "
               "PNG outputs).").tag(config=True)
    check = Bool(True, help="Flag JAX sharp bits in every cell (%jaxcheck on|off).").tag(
        config=True)
    profile_budget = Float(3.0, help="Seconds %jaxpr --profile spends running the call "
                           "under the profiler.").tag(config=True)
    values_budget = Int(20000, help="Values %jaxpr --values summarises in full; past it, "
                        "only their NaN/Inf counts (the first NaN is still found).").tag(
        config=True)
    explorer = Bool(True, help="In a kernel whose frontend can run widgets, show %jaxpr "
                    "as an explorer (hover, open groups, search) with the static picture "
                    "kept in the same output; False: the static picture only.").tag(config=True)
    jit_compare_budget = Float(1.5, help="Seconds %jit_compare spends in its timing loops "
                               "(eager and steady jit) when -n is not given.").tag(config=True)

    def _call(self, magic: str, line: str, cell: str | None) -> BoundCall:
        """The call a magic acts on: `line` itself, or the cell's final expression, the
        cell's other statements run first (once); only the final call is left for the
        magic to trace, time or compile."""
        __tracebackhide__ = True
        try:
            if cell is None:
                return bind(parse_call(line), self.shell.user_ns)
            target, filename = cells.final_call(self.shell, cell)
            return bind(target, self.shell.user_ns, filename)
        except TargetError as e:
            raise UsageError(f"{e}\n{usage('line' if cell is None else 'cell', magic)}") \
                from None

    def _checkify_run(self, call: BoundCall, args) -> None:
        """--checkify: run the call once under checkify's index checks (raises on OOB)."""
        __tracebackhide__ = True
        from .core.checks import run_checkified

        run_checkified(call.func, call.args, call.kwargs,
                       static_argnums=argnums(args.static_argnums),
                       static_argnames=argnames(args.static_argnames))

    # ---- %jaxpr ----------------------------------------------------------------------

    @options.JAXPR
    @no_var_expand
    @line_cell_magic
    @users_frames
    def jaxpr(self, line: str, cell: str | None = None):
        """Draw the jaxpr of a call: `%jaxpr f(x)`, or a cell whose final expression is a call.

        The cell runs as usual; its final call is traced (not executed) and drawn as a
        graph: one node per equation, grouped by the call it came from (functions, modules,
        nested jaxprs, each call's backward pass), repeated calls folded (`layer ×16`),
        opened as deep as the text stays legible at cell width (--depth auto).
        """
        __tracebackhide__ = True
        from .core.arguments import JitArgumentError

        args, expr = parse_options(self.jaxpr, line)
        call = self._call("jaxpr", expr, cell)
        try:
            depth = depth_of(args.depth)
        except ValueError as e:
            raise UsageError(f"--{e}") from None
        with interrupt.ctrl_c_noted():     # one Python drops (in a callback) stops the
            try:                           # next step too
                if args.checkify:
                    self._checkify_run(call, args)
                view = api.trace_call(
                    call, static_argnums=argnums(args.static_argnums),
                    static_argnames=argnames(args.static_argnames), stage=args.stage,
                    depth=depth, expand=args.expand, lines=args.lines, boxes=args.box,
                    rankdir=args.rankdir, group=args.group,
                    max_nodes=self.max_nodes, layout_timeout=self.layout_timeout,
                    renderer=self.renderer, png=self.png,
                    overlays=overlays.chosen(lambda flag: getattr(args, flag.dest, False)),
                    settings={"costs": {"budget": self.profile_budget},
                              "values": {"budget": self.values_budget}})
            except JitArgumentError as e:     # mark an argument static: say which, and how
                raise argument_usage(e, "%%jaxpr" if cell is not None else "%jaxpr", line) \
                    from None
            if args.save:
                try:
                    view.save(args.save)
                except (ValueError, OSError) as e:    # a bad suffix or an unwritable path
                    raise UsageError(str(e) if "--save" in str(e) else f"--save: {e}") \
                        from None
            if args.output:
                return view
            show_jaxpr(self.shell, view, args, expr if cell is None else call.source, cell,
                       explorer=self.explorer)

    # ---- %jit_compare ----------------------------------------------------------------

    @options.JIT_COMPARE
    @no_var_expand
    @line_cell_magic
    @users_frames
    def jit_compare(self, line: str, cell: str | None = None):
        """Eager vs jit for a call: `%jit_compare f(x)`, or a cell ending in a call.

        Times the call op by op and under `jax.jit` (first call split into trace, lower
        and compile; steady time per call, median of several runs), compares every output
        leaf, counts retraces (with JAX's explanation), and shows donation and the
        compiled cost. The cell's other statements run as usual, once.
        """
        __tracebackhide__ = True
        from .core.arguments import JitArgumentError

        args, expr = parse_options(self.jit_compare, line)
        usage_line = options.timing_checked(self.jit_compare, args)
        call = self._call("jit_compare", expr, cell)
        try:
            if args.checkify:
                self._checkify_run(call, args)
            view = api.compare_call(
                call, static_argnums=argnums(args.static_argnums),
                static_argnames=argnames(args.static_argnames),
                donate_argnums=argnums(args.donate_argnums), number=args.number,
                repeat=args.repeat, budget=args.budget or self.jit_compare_budget,
                eager=not args.no_eager)
        except JitArgumentError as e:      # how the magic was called must change
            magic = "%%jit_compare" if cell is not None else "%jit_compare"
            raise argument_usage(e, magic, line, usage_line, card=True) from None
        if args.output:
            return view
        display(view)

    # ---- %jaxcheck -------------------------------------------------------------------

    @no_var_expand
    @line_cell_magic
    @users_frames
    def jaxcheck(self, line: str = "", cell: str | None = None):
        """Flag JAX sharp bits: `%jaxcheck on|off|status`, or `%%jaxcheck` to check a cell.

        While on (the default after `%load_ext jaxmagic`; also `%config JaxMagic.check`):
        every cell is checked by static rules before it runs, findings shown above its
        output (the cell still runs); and an exception raised by JAX in any cell is shown
        as a card at your failing line with the fix, JAX's traceback kept below.
        `%%jaxcheck [-o]` checks the cell without running it (`-o` returns the findings).
        Rules and ids: docs/jaxcheck.md, or `python -m jaxmagic check --rules`.
        """
        from .render.cards import Findings

        arg = line.strip()
        if cell is not None:
            if arg not in ("", "-o"):
                raise UsageError(usage("jaxcheck cell"))
            found = Findings(self.hooks.checker().check(
                cell, namespace=self.shell.user_ns, x64=x64(), commit=False))
            if arg == "-o":
                return found
            display(found)
            return None
        if arg in ("on", "off"):
            self.check = arg == "on"
        elif arg not in ("", "status"):
            raise UsageError(usage("jaxcheck"))
        print(f"jaxcheck is {'on' if self.check else 'off'}" + (
            ": cells are checked before they run; JAX errors are explained at the failing "
            "line" if self.check else ""))
        return None

    @property
    def hooks(self) -> CellHooks:
        """%jaxcheck's checks before each cell and error cards (`cellhooks`)."""
        if getattr(self, "_hooks", None) is None:
            self._hooks = CellHooks(self)
        return self._hooks

    def _install_hooks(self) -> None:
        self.hooks.install()

    def _remove_hooks(self) -> None:
        self.hooks.remove()

    # ---- %devices / %%shardviz -------------------------------------------------------

    @options.DEVICES
    @line_magic
    @users_frames
    def devices(self, line: str = ""):
        """Local and global devices JAX sees, grouped by process (`jaxmagic.devices_info()`).

        Id, platform, kind, process, coordinates and memory in use where the platform
        reports them; the default backend; `jax.process_index()` / `jax.process_count()`.
        Each device keeps the colour %%shardviz gives it.
        """
        __tracebackhide__ = True
        args = parse_argstring(self.devices, line)
        view = api.devices_info()
        if args.output:
            return view
        display(view)

    @options.SHARDVIZ
    @no_var_expand
    @line_cell_magic
    @users_frames
    def shardviz(self, line: str, cell: str | None = None):
        """Run the cell as usual, then draw which device holds which block of its result.

        `%%shardviz` draws the value of the cell's final expression (a jax.Array or any
        pytree of them; it is drawn instead of printed); `%%shardviz x y` the variables
        named; the line form `%shardviz x y` variables that already exist. Reads metadata
        only: nothing is copied to the host or waited for. With --plan the final call
        (`%shardviz --plan f(x)`, or a cell ending in one) of a jitted function is
        compiled, not run, and its input and output shardings are drawn
        (`jaxmagic.sharding_view`, `jaxmagic.sharding_plan`).
        """
        __tracebackhide__ = True
        from .core.sharding import PlanError

        args, rest = parse_options(self.shardviz, line)
        names = rest.split()
        if args.plan:
            if cell is not None and names:
                raise UsageError("%%shardviz --plan draws the cell's final call; it takes no "
                                 f"NAME\n{usage('shardviz --plan')}")
            call = self._call("shardviz", rest, cell)
            try:
                view = api.plan_call(call)
            except PlanError as e:
                raise UsageError(str(e)) from None
        elif cell is None:
            if not names:
                raise UsageError("%shardviz draws variables that exist: %shardviz x y\n"
                                 "or run a cell and draw its result: %%shardviz [NAME ...]")
            view = api.sharding_view(cells.values_named(self.shell, names), names=True,
                                     source=rest)
        else:
            ran, found, value = cells.run_keeping_value(self.shell, cell)
            if not ran:
                return None          # the cell failed; its traceback is already shown
            if names:
                view = api.sharding_view(cells.values_named(self.shell, names), names=True,
                                         source=" ".join(names))
            elif not found:
                raise UsageError("%%shardviz: the cell ran, but it does not end with an "
                                 "expression to draw; end it with the array (or pytree of "
                                 "arrays), or name variables: %%shardviz x y")
            else:
                view = api.sharding_view(value)
        if args.output:
            return view
        display(view)


options.follow_overlays(JaxMagic.jaxpr)
