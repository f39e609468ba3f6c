"""Repeats: the structure two groups share, the loops found among siblings, and the fold
that draws a series of them once.

At build time `signatures` names each group's structure (the same calls of the same
operations on the same shapes), `periods` wraps each repetition of a loop's body in a
group of its own (a Linen `Dense → BatchNorm → relu` twelve times) and `series_of` finds
the runs of siblings with one signature. At display time `fold` draws each run as its
first, marked ×N. One module, so the rules that decide what is a repeat and how it is
drawn are read together.
"""
from __future__ import annotations

import ast
import hashlib
import linecache
import re
from collections import defaultdict
from dataclasses import replace
from typing import Any, Callable

from .. import _compat
from .merge import contract
from .model import Cluster, Draft, Graph, Node, Site, ancestors, base_label, short
from .sites import call_frame, first_equation


def signatures(b: Draft) -> None:
    """Equal for sub-graphs of the same structure: the same calls of the same operations
    on the same shapes, in the same order."""
    for c in sorted(b.clusters.values(), key=lambda c: -c.id):   # children first
        parts = [c.kind, base_label(c.label), str(c.backward), *c.detail]
        for kind, i in b.order[c.id]:
            parts.append(b.clusters[i].signature if kind == "c" else
                         b.nodes[i].signature or f"{b.nodes[i].kind}:{b.nodes[i].title}")
        c.signature = hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()


# Per occurrence of a call, the later occurrences of the same call whose distance is a
# candidate period: a layer body holds the rarest of its calls at most this many times.
_OCCURRENCES = 16


def periods(b: Draft) -> None:
    """Wrap each repetition of a run of sibling items repeated in the same order (a Linen
    `@nn.compact` loop of `Dense`, `BatchNorm`, `relu`, twelve times; a Haiku transformer
    layer of forty) in a group of its own, `Dense → BatchNorm → relu`, so the series fold
    draws it once, ×12.

    Any period and any phase. The fold chosen first is the one that covers the most items
    (fewer, longer repetitions only where they cover more); the rest of the group, before
    and after it, is searched the same way. Its phase, where each repetition begins, is
    where the loop begins: the run reaches back over items that differ from the later
    ones in their shapes or constants but not in what they call nor the line that calls
    it (the first layer of a gradient, whose input needs no derivative; a first iteration
    that adds its loss to the Python float `0.0`), and a repetition begins there. Such a
    first (or last) iteration is a group of its own beside the fold, never split across
    two repetitions; a step before the loop on another line (a `relu` after an
    embedding) is no iteration and does not move the phase.

    A repetition of operations alone, no call among them (`for w in ws: x =
    jnp.tanh(x @ w)`), is an iteration of a loop: the same operations made by the same
    code, each feeding the next (the per-leaf copies of a tree map are no loop: `lanes`
    draws them). Each is named after what one iteration computes (`_period_name`)."""
    succ: dict[int, set[int]] = defaultdict(set)
    for e in b.edges:
        succ[e.src].add(e.dst)
    for parent in list(b.order):
        items = b.order[parent]
        if len(items) < 4:
            continue
        keys = [_item_key(b, kind, i) for kind, i in items]
        loose = _Lazy(lambda j: _loose_key(b, *items[j]))     # only where a run ends
        made = _Lazy(lambda j: _compat.source_instruction(b.eqn_of[items[j][1]],
                                                          b.is_library_file))
        runs = sorted(_runs(items, keys, loose, 0, len(items),
                            lambda start, p, k: _looped(succ, items, made, start, p, k)))
        if not runs:
            continue
        out, i = [], 0
        for start, p, k in runs:
            out.extend(items[i:start])
            out.extend(("c", _wrap(b, parent, items[start + r * p: start + (r + 1) * p]))
                       for r in range(k))
            i = start + p * k
        b.order[parent] = out + items[i:]


def _looped(succ: dict, items: list, made: _Lazy, start: int, p: int, k: int) -> bool:
    """Whether the `k` repetitions of `p` operations at items[start] are a loop's: made
    by the same instructions of the user's code (`made`), each feeding the next and no
    later one (what a fold draws of them: an iteration, fed by the one before). One line
    nesting the same calls, `sin(cos(sin(cos(x))))`, repeats no code; a loop reading
    values of many iterations back draws as no one iteration."""
    if any(made[j] is None or made[j] != made[j + p] for j in range(start, start + (k - 1) * p)):
        return False
    rep = {items[j][1]: (j - start) // p for j in range(start, start + k * p)}
    fed = set()
    for i, r in rep.items():
        for t in succ[i]:
            if rep.get(t, r) not in (r, r + 1):
                return False
            if rep.get(t) == r + 1:
                fed.add(r)
    return len(fed) == k - 1


class _Lazy(dict):
    """`f(j)` at `[j]`, computed once."""

    def __init__(self, f: Callable[[int], Any]) -> None:
        super().__init__()
        self.f = f

    def __missing__(self, j: int) -> Any:
        self[j] = value = self.f(j)
        return value


def _item_key(b: Draft, kind: str, i: int) -> str | None:
    if kind == "c":
        return "c" + b.clusters[i].signature
    n = b.nodes[i]
    return "n" + (n.signature or n.title) if n.kind == "op" else None


def _loose_key(b: Draft, kind: str, i: int) -> str | None:
    """An item's kind of step, whatever its shapes and constants: the call's name, the
    operation's primitive, and the line that makes it (the same line of a loop in every
    iteration; a `relu` before the loop is another step than the loop's `relu`)."""
    if kind == "c":
        c = b.clusters[i]
        return f"c{c.kind}:{base_label(c.label)}:{c.backward}:{_call_site(b, c)}"
    n = b.nodes[i]
    return f"n{n.primitive}:{n.where}" if n.kind == "op" else None


def _call_site(b: Draft, c: Cluster) -> str:
    """The user's line that makes call `c`: outside the function called, where it is the
    user's own (its equations stand at its own lines, whoever calls it)."""
    if c.kind != "scope":
        return c.where
    f = call_frame(b, c)
    return f"{f[0]}:{f[1]}" if f else ""


def _runs(items: list, keys: list, loose: _Lazy, lo: int, hi: int, looped: Callable) \
        -> list[tuple[int, int, int]]:
    """(start, period, repetitions) of the groups to wrap in items[lo:hi], as `periods`
    chooses them: a fold's repetitions, and the loose ones beside it, each apart."""
    best = _best_run(items, keys, loose, lo, hi, looped)
    if best is None:
        return []
    start, p, k, before, after, part = best
    begin, end = start - before * p, start + (k + after) * p + part
    loose_runs = [(begin + r * p, p, 1) for r in range(before)] + \
        [(start + (k + r) * p, p, 1) for r in range(after)] + \
        [(end - part, part, 1)] * (part > 0)
    return [*_runs(items, keys, loose, lo, begin, looped), *loose_runs, (start, p, k),
            *_runs(items, keys, loose, end, hi, looped)]


def _best_run(items: list, keys: list, loose: _Lazy, lo: int, hi: int, looped: Callable) \
        -> tuple[int, int, int, int, int, int] | None:
    """(start, period, repetitions, loose repetitions before, after, a part of one) of
    the fold in items[lo:hi] that covers the most items, or None; one of operations alone
    where `looped` (start, period, repetitions) says they are a loop's."""
    where: dict[str, list[int]] = defaultdict(list)
    for j in range(lo, hi):
        if keys[j] is not None:
            where[keys[j]].append(j)
    periods: set[int] = set()
    for key, at in where.items():
        # a call's later occurrences; an operation's next (operations are many, and a
        # loop's body holds one that occurs once in it)
        ahead = _OCCURRENCES if key[0] == "c" else 1
        for a, x in enumerate(at):
            for y in at[a + 1: a + 1 + ahead]:
                if y - x > (hi - lo) // 2:
                    break
                periods.add(y - x)
    best, score = None, (0, 0)
    for p in sorted(periods):
        # each stretch where keys[j] == keys[j + p] is repeated with period p, from its
        # first j to its last j + p
        j = lo
        while j + p < hi:
            if keys[j] is None or keys[j] != keys[j + p]:
                j += 1
                continue
            s = j
            while j + p < hi and keys[j] is not None and keys[j] == keys[j + p]:
                j += 1
            if (j - s + p) // p < 2 or len(set(keys[s:s + p])) < 2:
                continue
            run = _phase(loose, lo, hi, s, j + p, p)
            # the most items in groups, then the shorter pattern
            covered = sum(run[2:5]) * p + run[5]
            if (covered, -p) > score and (
                    any(items[x][0] == "c" for x in range(s, s + p)) or looped(*run[:3])):
                best, score = run, (covered, -p)
    return best


def _phase(loose: _Lazy, lo: int, hi: int, s: int, e: int, p: int) \
        -> tuple[int, int, int, int, int, int]:
    """The fold of items[s:e], which repeat with period `p`: (start, p, repetitions,
    loose repetitions before, after, items of a part of one after those), its
    repetitions beginning where the loose run (items alike in what they call) begins, if
    that leaves two. The part is a last iteration that makes less (a gradient's for the
    first layer, whose input needs no derivative), two items or more of one."""
    back, fwd = s, e
    while back > lo and loose[back - 1] is not None and loose[back - 1] == loose[back - 1 + p]:
        back -= 1
    while fwd < hi and loose[fwd] is not None and loose[fwd] == loose[fwd - p]:
        fwd += 1
    start = s + (back - s) % p
    if (e - start) // p < 2:
        start = s
    k = (e - start) // p
    after, part = divmod(fwd - start - k * p, p)
    return start, p, k, (start - back) // p, after, part if part > 1 else 0


def _wrap(b: Draft, parent: int | None, members: list[tuple[str, int]]) -> int:
    calls = [b.clusters[i] for kind, i in members if kind == "c"]
    steps = calls or [b.nodes[i] for _, i in members]
    label = _period_name(b, members)
    level = calls[0].level if calls else b.level_of(parent, 0) + 1
    c = b.cluster("scope", label, parent, level, backward=all(x.backward for x in steps),
                  label=label)
    # a series is called where its first is
    b.clusters[c].site = calls[0].site if calls else \
        Site(steps[0].where, steps[0].source, steps[0].file)
    b.clusters[c].period = True
    b.order[parent].pop()                       # `cluster` appended it: placed by caller
    b.order[c] = list(members)
    for kind, i in members:
        if kind == "c":
            b.clusters[i].parent = c
        else:
            b.nodes[i].cluster = c
    below = [i for kind, i in members if kind == "c"]
    while below:                                # one level deeper: what the wrap holds
        i = below.pop()
        b.clusters[i].level += 1
        below.extend(j for kind, j in b.order.get(i, ()) if kind == "c")
    return c


def _period_name(b: Draft, members: list[tuple[str, int]]) -> str:
    """What one repetition computes, named as the user wrote it: the calls in it, where
    one is the user's (`Dense → BatchNorm → relu`); else the one line of the user's that
    makes it, where more than one of that line's calls and operators do
    (`tanh(x @ w)`); else its steps in order (`tanh → sin → cos → relu → exp`: a line
    calling another function each time round, `fs[i % 5](x)`, says nothing of them)."""
    calls = [b.clusters[i] for kind, i in members if kind == "c"]
    if any(c.kind == "scope" for c in calls):
        mixed = not all(c.backward for c in calls)   # a backward call named as it is drawn
        return _chain_name([base_label(c.label).split(": ")[-1] + (
            " · backward" if mixed and c.backward else "") for c in calls])
    line = _one_line(b, members)
    if line:
        return line
    return _chain_name([base_label(b.clusters[i].label).split(": ")[-1] if kind == "c"
                        else b.nodes[i].title.split(" · ")[0] for kind, i in members])


def _chain_name(names: list[str]) -> str:
    label = " → ".join(names)
    if len(names) > 4 and len(label) > 48:      # a transformer layer's ten calls
        label = " → ".join([*names[:2], "…", names[-1]])
    return label


def _one_line(b: Draft, members: list[tuple[str, int]]) -> str:
    """The expression of the one line that makes every member, where two or more of its
    instructions (calls, operators) do; else ""."""
    wheres = {(b.clusters[i].where if kind == "c" else b.nodes[i].where)
              for kind, i in members}
    if len(wheres) != 1 or not next(iter(wheres)):
        return ""
    skip = b.is_library_file
    eqns = [b.eqn_of[i] if kind == "n" else first_equation(b, b.clusters[i])
            for kind, i in members]
    made = {_compat.source_instruction(e, skip) for e in eqns if e is not None}
    made.discard(None)
    if len(made) < 2:
        return ""
    code = next(iter(made))[0]
    line = int(next(iter(wheres)).rsplit(":", 1)[1])
    return _expression(linecache.getline(code.co_filename, line))


_MODULES = re.compile(r"\b(?:jax\.(?:numpy|nn|lax|scipy\.\w+)|jnp|np|numpy|lax)\.")


def _expression(line: str, limit: int = 40) -> str:
    """The value a line of one statement computes, without the modules it names:
    `tanh(x @ w)` for `x = jnp.tanh(x @ w)`; "" for a line that is no whole statement."""
    try:
        body = ast.parse(line.strip()).body
    except SyntaxError:      # a statement continued on the next line
        return ""
    value = getattr(body[0], "value", None) if len(body) == 1 else None
    if not isinstance(value, ast.expr):
        return ""
    if isinstance(body[0], ast.AugAssign):
        value = ast.BinOp(body[0].target, body[0].op, value)
    return short(_MODULES.sub("", ast.unparse(value)), limit)


def series_of(b: Draft) -> dict[int, tuple[int, int]]:
    """Runs of consecutive sibling clusters with one signature: member → (first, index)."""
    series: dict[int, tuple[int, int]] = {}
    for items in b.order.values():
        run: list[int] = []
        for kind, i in [*items, ("end", -1)]:
            if kind == "c" and run and b.clusters[run[0]].signature == b.clusters[i].signature:
                run.append(i)
                continue
            if len(run) > 1:
                b.clusters[run[0]].repeat = len(run)
                series.update({m: (run[0], k) for k, m in enumerate(run)})
            run = [i] if kind == "c" else []
    return series


def fold(g: Graph) -> Graph:
    """Draw each series of repeated calls once, as its first call marked ×N.

    The later calls' nodes merge into the first's (matched in walk order: the calls have
    the same structure); edges from one call of a series to the next vanish, so the
    picture stays acyclic. Applied once: the result has no series left.

    What a fold draws is one repetition, and its ×N says how many it stands for: inside
    it every box counts one repetition's equations (an `add` is 1 equation, not 16) and
    a constant that changes from one repetition to the next reads first…last, not the
    first's; the fold's own box, closed, counts all N. The nodes keep every repetition's
    equations (`eqns`): a search, a profile and the values find them all there.
    """
    if not g.series:
        return g
    chain = {c: ancestors(g, c) for c in g.clusters}
    subtree: dict[int, list[int]] = defaultdict(list)
    for n in g.nodes.values():
        for c in chain.get(n.cluster, ()):
            if c in g.series:
                subtree[c].append(n.id)
    alias: dict[int, int] = {}
    for m, (first, k) in g.series.items():
        if k:
            alias.update(zip(subtree[m], subtree[first]))

    def root(i: int) -> int:
        while i in alias:
            i = alias[i]
        return i

    def tags(n: Node) -> dict[int, int]:
        return {g.series[c][0]: g.series[c][1] for c in chain.get(n.cluster, ())
                if c in g.series}

    node_tags = {n.id: tags(n) for n in g.nodes.values()}
    edges = [e for e in g.edges if not any(
        node_tags[e.dst].get(f, k) != k for f, k in node_tags[e.src].items())]
    merged = set(alias) | set(alias.values())

    def make(key: int, members: list[Node]) -> Node:
        return replace(g.nodes[key], title=_repeated_title([m.title for m in members]))

    out = contract(replace(g, edges=edges), lambda n: root(n.id) if n.id in merged else None,
                   make)
    out.clusters = {}
    for i, c in g.clusters.items():
        first, k = g.series.get(i, (i, 0))
        if k == 0 and first == i and c.repeat > 1:
            c = replace(c, title=series_title(c),
                        num_equations=sum(g.clusters[m].num_equations
                                          for m, (f, _) in g.series.items() if f == i))
        if not any(g.series.get(a, (0, 0))[1] for a in chain[i]):   # not inside a later call
            out.clusters[i] = c
    out.series = {}
    return out


def _repeated_title(titles: list[str]) -> str:
    """An operation's title for all its repetitions, in order (`primitive · constant,
    constant`): `mul · 1…16` where a loop multiplies by its counter; the primitive alone
    where some repetitions have no such constant."""
    if len(set(titles)) == 1:
        return titles[0]
    op = titles[0].partition(" · ")[0]
    rows = [t.partition(" · ")[2].split(", ") for t in titles]
    if any(" · " not in t for t in titles) or len({len(r) for r in rows}) > 1:
        return op
    parts = [col[0] if len(set(col)) == 1 else f"{col[0]}…{col[-1]}" for col in zip(*rows)]
    return f"{op} · {', '.join(parts)}"


def series_title(c: Cluster) -> str:
    """"block ×16 · backward": the first call of a series, titled for all of it."""
    if c.repeat <= 1:
        return c.title
    base = c.label if c.kind == "scope" else c.title
    return f"{base} ×{c.repeat}" + (" · backward" if c.backward and c.kind == "scope" else "")
