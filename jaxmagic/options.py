"""A magic's options as typed: parsed with the expression after them kept verbatim, a
typo named with the option it is likely meant as, and help that reads as `%timeit?`."""
from __future__ import annotations

import difflib
import re
import shlex

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicHelpFormatter


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
