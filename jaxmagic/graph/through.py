"""A library's way to the user's code: the groups of a sampler's, a solver's or a tree
search's loops, opened only as far as the user's function they call back, drawn as boxes
of the library's own work around the user's calls.

A group whose own equations are the library's (at no line of the user's: a `while` body
inside `NUTS.sample`, the top where the traced function is the library's; or a call into
a library, at the one line that called it) and that holds the user's code beside more is
opened "as the way" (`auto_depth`): its equations and the calls holding none of the
user's code are boxes (one per pass, split where a box would close a cycle: `coarsen`),
the user's calls stay what they are. Where such groups nest (`while › body › while ›
body`), the levels that hold nothing but the way on are one group named by its loops
(`while › while`).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from .model import NO_LINE, Cluster, Graph, Node

_LEVELS = ("while_body", "while_cond", "branch")    # parts of a loop, named by the loop
_LOOPS = ("while", "scan", "cond", *_LEVELS)        # the levels a chain is made of


def libraries_own(lines: set[str], library: bool) -> bool:
    """Whether equations at `lines` are a library's own work: at no line of the user's,
    or (in a call into a library, `library`) all at the one line that called it."""
    users = lines - {"", NO_LINE}
    return not users or library and len(users) == 1


def ways(g: Graph, whole: set, mine: set[int]) -> dict[int, str]:
    """The nodes of each group in `whole` opened as the way (its own equations the
    library's, `libraries_own`, beside closed calls) that join its box: its equations
    and every closed call holding none of the user's code (`mine`: `model.users_code`).
    Node id → the box's name, `NO_LINE`."""
    own: dict[int | None, list[Node]] = defaultdict(list)
    for n in g.nodes.values():
        if n.cluster in whole and (n.kind in ("op", "const") or
                                   n.kind == "call" and n.group not in mine):
            own[n.cluster].append(n)
    out: dict[int, str] = {}
    for c, members in own.items():
        lines = {n.where for n in members if n.kind == "op"}
        library = c is not None and g.clusters[c].library
        if libraries_own(lines, library):
            out.update((n.id, NO_LINE) for n in members)
    return out


def flatten(g: Graph, joins: dict[int, str], mine: set[int]) -> tuple[Graph, dict[int, str]]:
    """`g` with each chain of a loop's nested levels that hold only the way on (one
    opened as the way, or a loop whose own parts are its test and its body) drawn as its
    outermost group, named by the loops (`while › while`); and `joins` with the calls
    those levels held (a `while`'s test) in the box too."""
    children: dict[int | None, list[int]] = defaultdict(list)
    for c in g.clusters.values():
        children[c.parent].append(c.id)
    own: dict[int | None, list[Node]] = defaultdict(list)
    for n in g.nodes.values():
        own[n.cluster].append(n)

    def passes_on(c: int) -> bool:
        """A loop's level holding only the way on: as the way (its equations and other
        calls in `joins`), or nothing of its own but ports, calls of no user code and
        one group inside."""
        ops = [n for n in own[c] if n.kind == "op"]
        if not level(g.clusters[c], {n.where for n in ops}, len(ops)):
            return False
        inner = [n for n in own[c] if n.kind not in ("port", "stub")]
        if inner and all(n.id in joins or n.kind == "call" and n.group not in mine
                         for n in inner):
            return len(children[c]) <= 1 or any(n.id in joins for n in inner)
        return not inner and len(children[c]) == 1

    top: dict[int, int] = {}        # a level merged → the outermost group of its chain
    for c in _outermost_first(g, children):
        p = g.clusters[c].parent
        if p is not None and passes_on(c) and passes_on(p):
            top[c] = top.get(p, p)
    if not top:
        return g, joins
    nodes = {i: replace(n, cluster=top.get(n.cluster, n.cluster)) for i, n in g.nodes.items()}
    loops = defaultdict(list)
    for c, t in top.items():
        if g.clusters[c].kind in _LOOPS and g.clusters[c].kind not in _LEVELS:
            loops[t].append(g.clusters[c].title)
    clusters = {}
    for i, c in g.clusters.items():
        if i in top:
            continue
        title = " › ".join([c.title, *loops[i]]) if loops[i] else c.title
        clusters[i] = replace(c, parent=top.get(c.parent, c.parent), title=title)
    out = replace(g, nodes=nodes, clusters=clusters, merged=frozenset(top))
    joins = dict(joins)
    joins.update((i, NO_LINE) for i, n in nodes.items() if n.cluster in top.values()
                 and n.kind == "call" and n.group not in mine)     # a loop's test
    return out, joins


def level(c: Cluster, lines: set[str], ops: int) -> bool:
    """Whether `c`, its own equations at `lines` (`ops` of them), is a level of a
    library's loops rather than a call of its own: a loop or its part, a named scope of
    the library's (Equinox's `outer-loop`, `checkpointed-fwd`: at no line of the
    user's), or a transform of nothing but what it holds (a `custom_vjp` around a
    loop). Only the loops name a chain of levels."""
    if c.kind in _LOOPS:
        return True
    if c.kind == "scope":
        return c.detail == ("named scope",) and libraries_own(lines, False)
    return ops == 0 and not c.own_call and not c.library


def _outermost_first(g: Graph, children: dict) -> list[int]:
    out, todo = [], list(children[None])
    while todo:
        c = todo.pop(0)
        out.append(c)
        todo += children[c]
    return out
