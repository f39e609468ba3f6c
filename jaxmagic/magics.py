"""The IPython binding: parse arguments, find the target, call the API, display the result.

Everything about JAX lives in `core/`, everything about looks in `render/`; a magic here is
argument parsing plus one API call. A magic's errors reach the user without a frame of
jaxmagic's (`users_frames`), so tracebacks look as they would without the magic.
"""
from __future__ import annotations

import functools
import shlex

from IPython.core.error import UsageError
from IPython.core.magic import (
    Magics,
    line_cell_magic,
    line_magic,
    magics_class,
    no_var_expand,
)
from IPython.core.magic_arguments import (
    ArgDecorator,
    argument,
    construct_parser,
    kwds,
    magic_arguments,
    parse_argstring,
)
from IPython.display import display
from traitlets import Bool, Enum, Float, Int

from . import api, overlays
from .cellhooks import CellHooks, x64
from .core import interrupt
from .core.errors import TARGET_FILE, user_frame, without_our_frames
from .core.target import BoundCall, TargetError, bind, parse_call, split_cell
from .options import PlainHelp, parse_options
from .render.errors import ErrorCard
from .render.jaxpr import depth_of


def users_frames(magic):
    """The magic's errors as the user's own code would show them: their frames and
    JAX's, never ours (`without_our_frames`); one line where none is theirs (a call of
    an undefined name, a Ctrl-C between two of our steps), since IPython always shows
    a traceback's last frame, hidden or not."""
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
                self._located(e, theirs)
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


def _argnums(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        return tuple(int(t) for t in text.replace(",", " ").split())
    except ValueError:
        raise UsageError(f"expected integers such as 0,2; got {text!r}") from None


def widget_frontend(shell) -> str | None:
    """The frontend that runs this kernel's widgets, if one is known to: a kernel started
    for a Jupyter server's notebook session (JupyterLab, Notebook 7), VS Code's, Colab's.

    A kernel that nbclient or papermill runs is none of these: it records widget state
    in the notebook, and nbconvert would then draw the widget (fetching its JavaScript)
    instead of the static picture.
    """
    import os
    import sys

    if getattr(shell, "kernel", None) is None:
        return None
    if os.environ.get("JPY_SESSION_NAME"):
        return "jupyter"
    if "__vsc_ipynb_file__" in shell.user_ns:
        return "vscode"
    if "google.colab" in sys.modules:
        return "colab"
    return None


def _static_command(args, call: str, cell: str | None) -> str:
    """The `%jaxpr` line with the user's options but `--depth`/`--expand`/`--lines`/`--box`,
    whose place `{options}` the explorer fills with the view it shows. A cell's is the
    line form of its final `call`, which the cell, once run, has defined everything for
    (a call over several lines keeps the cell)."""
    given = [("--rankdir", args.rankdir if args.rankdir != "TB" else None),
             ("--group", args.group if args.group != "call" else None),
             ("--static-argnums", args.static_argnums),
             ("--static-argnames", args.static_argnames)]
    keep = [f"{opt} {shlex.quote(value)}" for opt, value in given if value]
    keep += [flag.option for flag in overlays.flags() if getattr(args, flag.dest, False)]
    options = " ".join(["{options}"] + keep)
    call = call.strip()
    return f"%%jaxpr {options}\n{cell}" if "\n" in call else f"%jaxpr {options} {call}"


class overlay_arguments(ArgDecorator):
    """`%jaxpr`'s switches for the registered overlays (`jaxmagic.overlays`), each with
    its help; `_rebuild_jaxpr_options` adds those registered later."""

    def add_to_parser(self, parser, group):
        for flag in overlays.flags():
            (group or parser).add_argument(flag.option, action="store_true", dest=flag.dest,
                                           help=flag.help)


def _rebuild_jaxpr_options() -> None:
    """The overlays changed: `%jaxpr`'s parser and its help (`%jaxpr?`) again."""
    magic = JaxMagic.jaxpr
    magic.parser = construct_parser(magic)


def _argnames(text: str | None) -> tuple[str, ...] | None:
    return tuple(t for t in text.replace(",", " ").split()) if text else None


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

    # ---- shared plumbing -------------------------------------------------------------

    def _run_prefix(self, code: str, prefix: str) -> str:
        """Run the cell's statements before its final call, as an ordinary cell would;
        return the name the cell's code runs under (its tracebacks show its lines)."""
        __tracebackhide__ = True
        filename = self.shell.compile.cache(code, self.shell.execution_count)
        if prefix:
            exec(compile(prefix, filename, "exec", dont_inherit=True), self.shell.user_ns)  # noqa: S102
        return filename

    def _call(self, magic: str, line: str, cell: str | None) -> BoundCall:
        """The call a magic acts on: `line` itself, or the cell's final expression.

        In cell form the other statements run first (once); only the final call is left
        for the magic to trace, time or compile.
        """
        __tracebackhide__ = True
        try:
            filename = TARGET_FILE
            if cell is None:
                target = parse_call(line)
            else:
                code = self.shell.transform_cell(cell)
                prefix, target, problem = split_cell(code)
                if target is None:
                    if problem == "syntax":      # the user's SyntaxError, shown as a cell's
                        try:
                            compile(code, self.shell.compile.cache(
                                code, self.shell.execution_count), "exec")
                        except SyntaxError as e:
                            e._jaxmagic_parse_error = True
                            raise
                    raise TargetError(problem)
                filename = self._run_prefix(code, prefix)
            return bind(target, self.shell.user_ns, filename)
        except TargetError as e:
            form = f"%%{magic} [options]\n<cell ending in F(ARGS...)>" if cell is not None \
                else f"%{magic} [options] F(ARGS...)"
            raise UsageError(f"{e}\nusage: {form}") from None

    def _located(self, exc: Exception, theirs: bool) -> None:
        """Show where in the user's code a JAX error happened, before its traceback: the
        rule it breaks, or the line, where there is one of theirs (else the error's one
        line names the magic's, and a card would say the same again)."""
        if getattr(exc, "_jaxmagic_shown", False):
            return
        card = api.error_card(exc, label=self.hooks.cell_label)
        if card is not None and (theirs or not isinstance(card, ErrorCard)):
            display(card)
        try:
            exc._jaxmagic_shown = True      # nor by the shell's handler (`cellhooks`)
        except AttributeError:
            pass

    # ---- %jaxpr ----------------------------------------------------------------------

    @magic_arguments()
    @kwds(formatter_class=PlainHelp)
    @argument("--depth", default="auto", help="call-tree levels to expand: N, 'all', or "
              "'auto' (default: as deep as stays legible at cell width)")
    @argument("--expand", action="append", default=[], metavar="NAME",
              help="expand nested jaxprs whose name contains NAME, or exactly the one "
              "=PATH names, e.g. '=model/block*6' (× typed as *, · as a space; repeatable)")
    @argument("--lines", action="append", default=[], metavar="NAME",
              help="expand the nested jaxprs NAME names as --expand does, their equations "
              "grouped by source line (repeatable; 'copy as magic' writes it)")
    @argument("--box", action="append", default=[], metavar="NAME",
              help="expand the nested jaxprs NAME names as --expand does, their own "
              "equations one box beside their calls (repeatable; 'copy as magic' writes it)")
    @argument("--format", choices=["svg", "text", "dot"], default="svg",
              help="what to show (default: the graph)")
    @argument("--rankdir", choices=["TB", "LR"], default="TB", help="graph direction")
    @argument("--group", choices=["call", "line"], default="call",
              help="group equations by call (default) or by source line")
    @argument("--stage", choices=["jaxpr", "lowered", "compiled"], default="jaxpr",
              help="jaxpr graph, lowered StableHLO, or compiled HLO with its costs")
    @argument("--static-argnums", default=None, metavar="I,J", help="static positional args")
    @argument("--static-argnames", default=None, metavar="A,B", help="static keyword args")
    @argument("--save", default=None, metavar="PATH", help="also write .svg, .dot or .txt")
    @argument("--checkify", action="store_true", help="first run the call once with "
              "checkify's index checks: an out-of-bounds index raises instead of clamping")
    @overlay_arguments()
    @argument("-o", dest="output", action="store_true", help="return the JaxprView")
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
        args, expr = parse_options(self.jaxpr, line)
        call = self._call("jaxpr", expr, cell)
        try:
            depth = depth_of(args.depth)
        except ValueError as e:
            raise UsageError(f"--{e}") from None
        with interrupt.ctrl_c_noted():     # one Python drops (in a callback) stops the
            view = self._jaxpr_view(args, call, depth, line, cell)     # next step too
            if args.save:
                try:
                    view.save(args.save)
                except (ValueError, OSError) as e:    # a bad suffix or an unwritable path
                    raise UsageError(str(e) if "--save" in str(e) else f"--save: {e}") \
                        from None
            if args.output:
                return view
            self._show_jaxpr(view, args, expr if cell is None else call.source, cell)

    def _jaxpr_view(self, args, call: BoundCall, depth, line: str, cell: str | None):
        """The call's view; an argument jit cannot trace is a UsageError that says how to
        mark it static."""
        __tracebackhide__ = True
        from .core.arguments import JitArgumentError, StaticArgumentError

        try:
            if args.checkify:
                self._checkify_run(call, args)
            return api.trace_call(
                call, static_argnums=_argnums(args.static_argnums),
                static_argnames=_argnames(args.static_argnames), stage=args.stage,
                depth=depth, expand=args.expand, lines=args.lines, boxes=args.box,
                rankdir=args.rankdir,
                group=args.group,
                max_nodes=self.max_nodes, layout_timeout=self.layout_timeout,
                renderer=self.renderer, png=self.png,
                overlays=overlays.chosen(lambda flag: getattr(args, flag.dest, False)),
                settings={"costs": {"budget": self.profile_budget},
                          "values": {"budget": self.values_budget}})
        except JitArgumentError as e:     # mark an argument static: say which, and how
            from .render.jit import static_fix_command

            fix = e.option_hint()
            if isinstance(e, StaticArgumentError):
                fix += ", e.g. " + static_fix_command("%%jaxpr" if cell is not None
                                                      else "%jaxpr", line, e.index, e.param)
            raise UsageError(f"{e.problem}.\n{fix}") from None

    def _show_jaxpr(self, view, args, call: str, cell: str | None) -> None:
        """The explorer where the frontend runs widgets, else the format asked for; `call`
        is the traced call's source, which "copy as magic" writes."""
        __tracebackhide__ = True
        if args.format == "svg" and self._explorable(view):
            from .explorer import JaxprExplorer, show

            try:
                explorer = JaxprExplorer(view, _static_command(args, call, cell))
            except KeyboardInterrupt:    # in its first layout: the picture, drawn already
                display(view)
                return
            show(explorer)
            return
        display(view.formatted(args.format))

    def _explorable(self, view) -> bool:
        """A drawn jaxpr, anywidget installed, and a kernel whose frontend runs widgets:
        the terminal, plain shells and headless runs keep the static picture."""
        from importlib.util import find_spec

        return bool(self.explorer and view.stage == "jaxpr" and view.drawing is not None
                    and widget_frontend(self.shell) and find_spec("anywidget"))

    # ---- %jit_compare ----------------------------------------------------------------

    jit_compare_budget = Float(1.5, help="Seconds %jit_compare spends in its timing loops "
                               "(eager and steady jit) when -n is not given.").tag(config=True)

    @magic_arguments()
    @kwds(formatter_class=PlainHelp)
    @argument("-n", dest="number", type=int, default=None, metavar="N",
              help="loops per run (default: chosen from --budget, as %%timeit does)")
    @argument("-r", dest="repeat", type=int, default=None, metavar="R",
              help="runs; the median and spread are over these (default 7)")
    @argument("--budget", type=float, default=None, metavar="SECONDS",
              help="time for the timing loops (default JaxMagic.jit_compare_budget, 1.5)")
    @argument("--no-eager", action="store_true",
              help="skip the eager (op-by-op) run, for functions too slow to run that way")
    @argument("--static-argnums", default=None, metavar="I,J", help="static positional args")
    @argument("--static-argnames", default=None, metavar="A,B", help="static keyword args")
    @argument("--donate-argnums", default=None, metavar="I,J",
              help="donate these inputs (each call gets fresh copies; yours stay usable)")
    @argument("--checkify", action="store_true", help="first run the call once with "
              "checkify's index checks: an out-of-bounds index raises instead of clamping")
    @argument("-o", dest="output", action="store_true", help="return the JitComparison")
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
        from .core.arguments import JitArgumentError, StaticArgumentError
        from .render.jit import StaticArgumentCard, static_fix_command

        args, expr = parse_options(self.jit_compare, line)
        usage = ("usage: %jit_compare [-n N] [-r R] [--budget SECONDS] [--no-eager] "
                 "[--static-argnums I,J] [--static-argnames A,B] [--donate-argnums I,J] "
                 "[--checkify] [-o] F(ARGS...)")
        for opt in ("number", "repeat"):
            if getattr(args, opt) is not None and getattr(args, opt) < 1:
                raise UsageError(f"-{opt[0]} takes a positive number\n{usage}")
        if args.budget is not None and args.budget <= 0:
            raise UsageError(f"--budget takes a positive number of seconds\n{usage}")
        call = self._call("jit_compare", expr, cell)
        try:
            if args.checkify:
                self._checkify_run(call, args)
            view = api.compare_call(
                call, static_argnums=_argnums(args.static_argnums),
                static_argnames=_argnames(args.static_argnames),
                donate_argnums=_argnums(args.donate_argnums), number=args.number,
                repeat=args.repeat, budget=args.budget or self.jit_compare_budget,
                eager=not args.no_eager)
        except StaticArgumentError as e:      # how the magic was called must change
            magic = "%%jit_compare" if cell is not None else "%jit_compare"
            command = static_fix_command(magic, line, e.index, e.param)
            display(StaticArgumentCard(e.problem, e.option_hint(), command))
            raise UsageError(f"{e.problem}.\n{e.option_hint()}, e.g. {command}") from None
        except JitArgumentError as e:
            raise UsageError(f"{e.problem}.\n{e.option_hint()}\n{usage}") from None
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
                raise UsageError("usage: %%jaxcheck [-o]\n<cell to check without running>")
            found = Findings(self.hooks.checker().check(
                cell, namespace=self.shell.user_ns, x64=x64(), commit=False))
            if arg == "-o":
                return found
            display(found)
            return None
        if arg in ("on", "off"):
            self.check = arg == "on"
        elif arg not in ("", "status"):
            raise UsageError("usage: %jaxcheck on|off|status   (or %%jaxcheck to check a "
                             "cell without running it)")
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

    @magic_arguments()
    @kwds(formatter_class=PlainHelp)
    @argument("-o", dest="output", action="store_true", help="return the DevicesView")
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

    @magic_arguments()
    @kwds(formatter_class=PlainHelp)
    @argument("names", nargs="*", metavar="NAME",
              help="variables to draw (default: the value of the cell's final expression)")
    @argument("--plan", action="store_true",
              help="do not run the final call (of a jitted function): show the input and "
              "output shardings the compiler chose for it")
    @argument("-o", dest="output", action="store_true", help="return the ShardingView")
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
                                 "NAME\nusage: %%shardviz --plan\n<cell ending in F(ARGS...)>")
            call = self._call("shardviz", rest, cell)
            try:
                view = api.plan_call(call)
            except PlanError as e:
                raise UsageError(str(e)) from None
        elif cell is None:
            if not names:
                raise UsageError("%shardviz draws variables that exist: %shardviz x y\n"
                                 "or run a cell and draw its result: %%shardviz [NAME ...]")
            view = api.sharding_view(self._shardviz_names(names), names=True, source=rest)
        else:
            ran, found, value = self._shardviz_run(cell)
            if not ran:
                return None          # the cell failed; its traceback is already shown
            if names:
                view = api.sharding_view(self._shardviz_names(names), names=True,
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

    def _shardviz_names(self, names: list[str]) -> dict:
        """Each NAME's value after the cell ran (a name, or an expression such as p.w)."""
        __tracebackhide__ = True
        ns, out = self.shell.user_ns, {}
        for name in names:
            if name in ns:
                out[name] = ns[name]
                continue
            usage = "usage: %shardviz NAME ...  or  %%shardviz [NAME ...] with a cell"
            try:
                out[name] = self.shell.ev(name)
            except NameError:
                raise UsageError(f"shardviz: {name!r} is not defined\n{usage}") from None
            except SyntaxError as e:     # not the user's code: a NAME we were given
                raise UsageError(f"shardviz: {name!r} is not a variable or expression "
                                 f"({e.msg})\n{usage}") from None
        return out

    def _shardviz_run(self, cell: str) -> tuple[bool, bool, object]:
        """Run `cell` with `shell.run_cell` (display, tracebacks and hooks as usual), but
        keep its final expression's value instead of displaying it: an array's repr would
        copy it to the host and wait for it. Returns (succeeded, had a final expression,
        value)."""
        __tracebackhide__ = True
        import ast

        sink = "__jaxmagic_shardviz_keep__"
        kept: dict = {}

        class KeepLast(ast.NodeTransformer):
            def visit_Module(self, node):
                if node.body and isinstance(node.body[-1], ast.Expr):
                    last = node.body[-1]
                    keep = ast.Call(ast.Name(sink, ast.Load()), [last.value], [])
                    node.body[-1] = ast.copy_location(ast.Expr(keep), last)
                    ast.fix_missing_locations(node)
                return node

        def keep(value):
            kept["value"] = value

        shell = self.shell
        outer = shell.displayhook.exec_result     # the nested run_cell clears it
        code = shell.transform_cell(cell)
        try:          # a cell that cannot be parsed: Python's own message, nothing runs
            compile(code, shell.compile.cache(code, shell.execution_count), "exec",
                    dont_inherit=True)
        except SyntaxError as e:
            shell.showsyntaxerror()
            if outer is not None and outer.error_in_exec is None:
                outer.error_in_exec = e
            return False, False, None
        transformer = KeepLast()
        shell.user_ns[sink] = keep
        shell.ast_transformers.append(transformer)
        try:
            result = shell.run_cell(cell)
        finally:
            if transformer in shell.ast_transformers:
                shell.ast_transformers.remove(transformer)
            shell.user_ns.pop(sink, None)
            shell.displayhook.exec_result = outer
        error = result.error_before_exec or result.error_in_exec
        if error is not None and outer is not None and outer.error_in_exec is None:
            # the traceback is shown once (by the nested run); the cell still fails, so a
            # kernel replies "error" and a notebook run stops here, as for any cell
            outer.error_in_exec = error
        return result.success, "value" in kept, kept.get("value")

    def _checkify_run(self, call: BoundCall, args) -> None:
        """--checkify: run the call once under checkify's index checks (raises on OOB)."""
        __tracebackhide__ = True
        from .core.checks import run_checkified

        run_checkified(call.func, call.args, call.kwargs,
                       static_argnums=_argnums(args.static_argnums),
                       static_argnames=_argnames(args.static_argnames))


# the docstring `%jaxpr?` shows ends in its options: keep its own part to write them anew
JaxMagic.jaxpr.argcmd_kwds = {"description": JaxMagic.jaxpr.parser.description,
                              "formatter_class": PlainHelp}
overlays.on_change(_rebuild_jaxpr_options)
