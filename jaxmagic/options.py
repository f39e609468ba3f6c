"""Each magic's options and usage, written once: declared with their help (`%jaxpr?` reads
as `%timeit?`), parsed with the expression after them kept verbatim, a typo named with the
option it is likely meant as, and `%jaxpr`'s written back for the explorer's "copy as
magic"."""
from __future__ import annotations

import difflib
import re
import shlex

from IPython.core.error import UsageError
from IPython.core.magic_arguments import (
    ArgDecorator,
    MagicHelpFormatter,
    argument,
    construct_parser,
    kwds,
    magic_arguments,
)

from . import overlays

_USAGE = {
    "line": "%{magic} [options] F(ARGS...)",
    "cell": "%%{magic} [options]\n<cell ending in F(ARGS...)>",
    "jaxcheck": "%jaxcheck on|off|status   (or %%jaxcheck to check a cell without running it)",
    "jaxcheck cell": "%%jaxcheck [-o]\n<cell to check without running>",
    "shardviz": "%shardviz NAME ...  or  %%shardviz [NAME ...] with a cell",
    "shardviz --plan": "%%shardviz --plan\n<cell ending in F(ARGS...)>",
}


def usage(form: str, magic: str = "") -> str:
    """The usage line a magic's error ends with: `form` is a key of `_USAGE`."""
    return "usage: " + _USAGE[form].format(magic=magic)


def options_usage(magic) -> str:
    """A magic's usage line: its options, as `%magic?` lists them, and its call."""
    parser = magic.parser
    formatter = PlainHelp(parser.prog, width=10**6)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip() + " F(ARGS...)"


def timing_checked(magic, args) -> str:
    """`%jit_compare`'s -n, -r and --budget, each positive (a UsageError if not); its
    usage line."""
    line = options_usage(magic)
    for opt in ("number", "repeat"):
        if getattr(args, opt) is not None and getattr(args, opt) < 1:
            raise UsageError(f"-{opt[0]} takes a positive number\n{line}")
    if args.budget is not None and args.budget <= 0:
        raise UsageError(f"--budget takes a positive number of seconds\n{line}")
    return line


def parse_options(magic, line: str):
    """Split `line` into the magic's options and the raw expression after them.

    The expression is kept verbatim (quotes, `-1`, spaces), which shlex-based
    `parse_argstring` would not do.
    """
    parser = magic.parser
    tokens, rest = [], line.strip()
    while rest.startswith("-"):
        tok, _, after = rest.partition(" ")
        action = parser._option_string_actions.get(tok.split("=", 1)[0])
        if action is None:
            raise UsageError(_unknown(parser, tok))
        tokens.append(tok)
        rest = after.lstrip()
        if action.nargs != 0 and "=" not in tok:
            val, rest = _option_value(rest)
            tokens.append(val)
    return parser.parse_args(tokens), rest


def _unknown(parser, tok: str) -> str:
    """An unknown option, the one it is likely a typo of, and the usage line."""
    near = difflib.get_close_matches(tok.split("=", 1)[0], parser._option_string_actions, 1)
    hint = f": did you mean {near[0]}?" if near else ""
    return f"unknown option {tok}{hint}\n{parser.format_usage().strip()}"


def argnums(text: str | None) -> tuple[int, ...] | None:
    """`--static-argnums 0,2` as jit takes it."""
    if not text:
        return None
    try:
        return tuple(int(t) for t in text.replace(",", " ").split())
    except ValueError:
        raise UsageError(f"expected integers such as 0,2; got {text!r}") from None


def argnames(text: str | None) -> tuple[str, ...] | None:
    return tuple(t for t in text.replace(",", " ").split()) if text else None


class PlainHelp(MagicHelpFormatter):
    """`%magic?` as `%timeit?` reads: what the magic does, then its usage line and its
    options; not IPython's reST code block (`::`) first."""

    def add_usage(self, usage, actions, groups, prefix="usage: %"):
        super().add_usage(usage, actions, groups, prefix)

    def format_help(self):
        items = self._root_section.items     # usage first, as argparse adds it: move it
        if len(items) > 1 and items[0][0] == self._format_usage:
            items.insert(1, items.pop(0))
        return super().format_help()


_QUOTED = re.compile(r"""(?:'[^']*'|"[^"]*"|[^\s'"]+)+""")


def _option_value(rest: str) -> tuple[str, str]:
    """An option's value and what follows it: one word, or shell-quoted words
    (`--expand 'layer #3'`, as the explorer's "copy as magic" writes names)."""
    m = _QUOTED.match(rest)
    if not m or not rest.startswith(("'", '"')):
        val, _, after = rest.partition(" ")
        return val, after.lstrip()
    return shlex.split(m.group(0))[0], rest[m.end():].lstrip()


# ---- the options of each magic ---------------------------------------------------------

def declared(*options: ArgDecorator):
    """A magic's options, listed in the order `%magic?` shows them: IPython's
    `magic_arguments` decorators, applied as if stacked over the magic."""
    def declare(magic):
        for option in reversed(options):
            magic = option(magic)
        return magic_arguments()(kwds(formatter_class=PlainHelp)(magic))
    return declare


class overlay_arguments(ArgDecorator):
    """`%jaxpr`'s switches for the registered overlays (`jaxmagic.overlays`), each with
    its help; `follow_overlays` adds those registered later."""

    def add_to_parser(self, parser, group):
        for flag in overlays.flags():
            (group or parser).add_argument(flag.option, action="store_true", dest=flag.dest,
                                           help=flag.help)


def follow_overlays(magic) -> None:
    """`magic`'s parser and help (`%jaxpr?`) made again whenever the overlays change;
    its docstring now ends in its options, so its own part is kept to write them anew."""
    magic.argcmd_kwds = {"description": magic.parser.description, "formatter_class": PlainHelp}

    def rebuild() -> None:
        magic.parser = construct_parser(magic)
    overlays.on_change(rebuild)


_STATIC = (argument("--static-argnums", default=None, metavar="I,J", help="static positional args"),
           argument("--static-argnames", default=None, metavar="A,B", help="static keyword args"))
_CHECKIFY = argument("--checkify", action="store_true", help="first run the call once with "
                     "checkify's index checks: an out-of-bounds index raises instead of clamping")


def _returns(view: str) -> argument:
    return argument("-o", dest="output", action="store_true", help=f"return the {view}")


JAXPR = declared(
    argument("--depth", default="auto", help="call-tree levels to expand: N, 'all', or "
             "'auto' (default: as deep as stays legible at cell width)"),
    argument("--expand", action="append", default=[], metavar="NAME",
             help="expand nested jaxprs whose name contains NAME, or exactly the one "
             "=PATH names, e.g. '=model/block*6' (× typed as *, · as a space; repeatable)"),
    argument("--lines", action="append", default=[], metavar="NAME",
             help="expand the nested jaxprs NAME names as --expand does, their equations "
             "grouped by source line (repeatable; 'copy as magic' writes it)"),
    argument("--box", action="append", default=[], metavar="NAME",
             help="expand the nested jaxprs NAME names as --expand does, their own "
             "equations one box beside their calls ('=' alone: the traced function's own; "
             "repeatable; 'copy as magic' writes it)"),
    argument("--format", choices=["svg", "text", "dot"], default="svg",
             help="what to show (default: the graph)"),
    argument("--rankdir", choices=["TB", "LR"], default="TB", help="graph direction"),
    argument("--group", choices=["call", "line"], default="call",
             help="group equations by call (default) or by source line"),
    argument("--stage", choices=["jaxpr", "lowered", "compiled"], default="jaxpr",
             help="jaxpr graph, lowered StableHLO, or compiled HLO with its costs"),
    *_STATIC,
    argument("--save", default=None, metavar="PATH", help="also write .svg, .dot or .txt"),
    _CHECKIFY,
    overlay_arguments(),
    _returns("JaxprView"))

JIT_COMPARE = declared(
    argument("-n", dest="number", type=int, default=None, metavar="N",
             help="loops per run (default: chosen from --budget, as %%timeit does)"),
    argument("-r", dest="repeat", type=int, default=None, metavar="R",
             help="runs; the median and spread are over these (default 7)"),
    argument("--budget", type=float, default=None, metavar="SECONDS",
             help="time for the timing loops (default JaxMagic.jit_compare_budget, 1.5)"),
    argument("--no-eager", action="store_true",
             help="skip the eager (op-by-op) run, for functions too slow to run that way"),
    *_STATIC,
    argument("--donate-argnums", default=None, metavar="I,J",
             help="donate these inputs (each call gets fresh copies; yours stay usable)"),
    _CHECKIFY,
    _returns("JitComparison"))

DEVICES = declared(_returns("DevicesView"))

SHARDVIZ = declared(
    argument("names", nargs="*", metavar="NAME",
             help="variables to draw (default: the value of the cell's final expression)"),
    argument("--plan", action="store_true",
             help="do not run the final call (of a jitted function): show the input and "
             "output shardings the compiler chose for it"),
    _returns("ShardingView"))


def static_command(args, call: str, cell: str | None) -> str:
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
