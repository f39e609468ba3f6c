"""The automatic depth: which groups a drawing opens so that its text stays legible at
the cell's width and its height within what a reader follows.

`choose` opens one group at a time from the collapsed call tree, the user's model
first, each only while the drawing fits. Whether a trial fits is told by an estimate of
its size, handed in (`render.size.estimate`: this package draws nothing), so every
expansion is tried without running Graphviz (a layout costs 50-100 ms, and a search may
try thirty), laying out only the one or two closest calls; the caller lays out the
chosen view and, when it came out too wide, chooses again with a budget scaled by the
measured ratio.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ..core import calltree, interrupt
from . import through
from .collapse import opened_at
from .model import NO_LINE, Cluster, Graph, ancestors, users_code

MAX_RANKS = 70        # taller than this and the reader loses the thread; coarsen instead


def fits(width_pt: float, ranks: int, budget_pt: float) -> bool:
    """Whether a drawing this wide and tall stays legible within `budget_pt`."""
    return width_pt <= budget_pt and ranks <= MAX_RANKS


def _within(g: Graph, c: int, children: dict) -> list[int]:
    """`c` and every cluster inside it."""
    out = [c]
    for child in children[c]:
        out += _within(g, child, children)
    return out


def _mostly_calls(c: Cluster, ops: int, lines: int) -> bool:
    """A train step whose own lines (a mask, a learning-rate schedule: a dozen equations
    beside thousands in its calls) would take the picture's width from the model: drawn a
    box per line."""
    return ops >= 8 and lines > 1 and c.num_equations >= 20 * ops


def choose(folded: Graph, draw, width_pt: float, estimate, measure=None, layouts: int = 3,
           first: set[int] = frozenset()) -> tuple[set[int], frozenset[int], frozenset[int]]:
    """(clusters to open, those of them whose own equations are grouped by source line,
    those whose own equations are one box beside their calls):
    one at a time from the collapsed call tree, the user's model first (`_order`: the
    path to its repeated block, each open group's backward twin, the model's other
    calls, then library steps, only once a repeated block of the model is drawn; a
    backward group never before its forward twin, JAX's own functions never), each
    opened only while the drawing of `draw(opened, by_line, whole)` stays within
    `width_pt` and the rank budget. A call too big to open opens a coarser way rather
    than stay one box (`_ways_to_open`: a repeated transformer layer shows its five
    lines; a loss too wide for its lines shows the model it calls).

    `estimate(graph)`, a size (`.width_pt`, `.ranks`: `render.size.estimate`), decides
    clear cases; `measure(graph)`, a size or None (a real layout), decides at most
    `layouts` close ones, where the estimate's error (measured: ±15%, up to 35%; twice
    the real width where a train step's lines and stubs share a rank) could turn the
    answer: up to twice the budget for the first, then within 25% of it once scaled by
    the last measurement's ratio to its estimate.

    `first` (clusters with their ancestors: those holding a collective) open before any
    other, where they fit.
    """
    tree = _tree(folded)
    opened = opened_at(folded, 0)
    by_line = frozenset(c for c in opened if _mostly_calls(folded.clusters[c], tree.own[c],
                                                            len(tree.lines[c])))
    trials = _Trials(draw, width_pt, estimate, measure, layouts)
    view = (opened, by_line, frozenset())
    if first and trials.fits(opened | first, by_line, frozenset()):
        view = (opened | first, by_line, frozenset())
    view = _searched(tree, view, trials)
    if not tree.draws_users_code(view[0]):
        # a library's function (a sampler's step, a tree search) drawn open or closed,
        # the user's code deep in its loops: its own work boxes, and the way to the
        # user's code opened in the room that leaves
        way = _searched(tree, _ways_in(tree, view, trials), trials)
        if tree.draws_users_code(way[0]):
            return way
    return view


def _ways_in(tree: "_Tree", view: tuple, trials: "_Trials") -> tuple:
    """`view` with the library's ways to the user's code it draws (open, or closed at its
    edge, where that fits) opened as the way, and the traced function's own lines one box
    beside them (they make room, as `_rooms`)."""
    opened, by_line, whole = view
    edge = {None, *opened}
    ways = {c for c in [None, *tree.g.clusters] if tree.library_way(c)
            and (c is None or c in opened or tree.g.clusters[c].parent in edge)}
    # one already opened as the way goes on down the levels below it (`levels_down`)
    down = {k for c in ways & whole - {None} for k in tree.levels_down(c)[1:]} - opened
    ways = ways - whole | {k for k in down if tree.library_way(k)}
    closed = ways - opened - {None} | down
    if closed:
        ways |= {c for c in opened if tree.g.clusters[c].level == 0 and tree.own[c] >= 2}
    start = (opened | closed, by_line - ways, whole | ways)
    if closed and not trials.fits(*start):
        start = (opened, by_line - ways, whole | (ways - closed))
    return start


def _searched(tree: "_Tree", view: tuple, trials: "_Trials") -> tuple:
    for _ in range(_SEARCHES):
        view, kept = _search(tree, view, trials)
        if kept:
            break
    return view


_SEARCHES = 3     # a search that backed off goes on from where it landed, this many times


def _tree(folded: Graph) -> "_Tree":
    """What `choose` knows of `folded`'s call tree (`_Tree`)."""
    children: dict[int | None, list[int]] = defaultdict(list)
    for c in folded.clusters.values():
        children[c.parent].append(c.id)
    lines: dict[int, set[str]] = defaultdict(set)     # a call's own equations' lines:
    own: dict[int | None, int] = defaultdict(int)     # one line (a library call's, all
    for n in folded.nodes.values():                   # at the user's line) says nothing
        lines[n.cluster].add(n.where)
        own[n.cluster] += n.kind == "op"
    spread = {c: len(set().union(*(lines[d] for d in _within(folded, c, children)))
                     - {"", NO_LINE}) for c in folded.clusters}
    model = users_code(folded)
    repeated = _repeated(folded, model)
    return _Tree(folded, children, lines, own, model, _path(folded, model, repeated, children),
                 _twins(folded), spread, [c.id for c in repeated])


@dataclass
class _Tree:
    """What `choose` knows of the call tree: each cluster's children, own lines and own
    equations' count, the model's clusters, the path to its repeated block, each
    backward group's twins, the model's repeated blocks."""
    g: Graph
    children: dict
    lines: dict
    own: dict
    model: set[int]
    path: set[int]
    twins: dict
    spread: dict
    repeated: list[int]

    def order(self, c: int) -> tuple:
        return _order(self.g.clusters[c], self.model, self.path, self.twins, self.spread[c])

    def ready(self, c: int, opened: set[int]) -> bool:
        """A forward group, or a backward one whose forward twin is open."""
        twins = self.twins.get(c)
        return not self.g.clusters[c].backward or not twins or bool(twins & opened)

    def waits(self, c: int, opened: set[int]) -> bool:
        """Whether `c` stays closed: JAX's own functions always (`_jax_own`); a library
        step off the path (an optimizer, a loss's helper) until a repeated block of the
        model, where it repeats one, is drawn: all the groups around it open."""
        if _jax_own(self.g.clusters[c], self.model):
            return True
        return c not in self.model and c not in self.path and bool(self.repeated) and \
            not any(set(ancestors(self.g, b)[:-1]) <= opened for b in self.repeated)

    def library_way(self, c: int | None) -> bool:
        """Whether `c` is a library's way to the user's code: its own equations the
        library's (`through.libraries_own`: a sampler's `while` body; None, the top,
        where the traced function is a library's, `kernel.sample`), beside calls that
        hold the user's code and more to box (equations, calls that do not): opened so,
        it draws the first as they are and the rest as one box (`through`)."""
        mine = [k for k in self.children[c] if k in self.model]
        rest = len(self.children[c]) - len(mine) + self.own[c]
        library = c is not None and self.g.clusters[c].library
        return through.libraries_own(self.lines[c], library) and bool(mine) and rest > 1

    def levels_down(self, c: int) -> list[int]:
        """`c` and the levels of a library's loops below it that hold the user's code in
        one group each (`through.level`: diffrax's `outer-loop › checkpointed-fwd ›
        while › body`), down to the first that is more."""
        chain = [c]
        while len(mine := [k for k in self.children[chain[-1]] if k in self.model]) == 1 \
                and through.level(self.g.clusters[mine[0]], self.lines[mine[0]],
                                  self.own[mine[0]]):
            chain.append(mine[0])
        return chain

    def draws_users_code(self, opened: set[int]) -> bool:
        """Whether a call of the user's code (a function or module of theirs, not the
        traced function's own) is drawn, open or as one box, with `opened` open."""
        return any(x.kind == "scope" and not x.period and not x.library and x.level > 0
                   and set(ancestors(self.g, x.id)[:-1]) <= opened
                   for x in self.g.clusters.values())

    def within_block(self, c: int) -> bool:
        """Whether `c` is a part of a repeated block of the model (a module's call, not a
        period of several calls such as a GAN's `Discriminator → loss ×2`)."""
        return any(a in self.repeated and not self.g.clusters[a].period
                   for a in ancestors(self.g, c)[:-1])


def _search(tree: _Tree, view: tuple, trials: "_Trials") -> tuple[tuple, bool]:
    """(the last legible view opening one group at a time from `view`, whether it is the
    last one opened): see `choose`. Where the last, laid out, does not fit (an opening
    judged on a scaled estimate), the last view that does, found by `trials`."""
    opened, by_line, whole = view
    frontier = [c for p in [None, *opened] for c in tree.children[p] if c not in opened
                and not (p in whole and c not in tree.model and tree.library_way(p))]
    views = [view]            # the last sure view, then those opened since
    while frontier:
        ready = [c for c in frontier if tree.ready(c, opened)]
        if not ready:
            break
        c = min(ready, key=tree.order)
        frontier.remove(c)
        if tree.waits(c, opened):
            continue
        for *trial, after, sure in _ways_to_open(tree, c, opened, by_line, whole):
            if trials.fits(*trial, sure=sure):
                (opened, by_line, whole), frontier = trial, frontier + after
                break
        if not trials.unsure:
            views = [(opened, by_line, whole)]
        elif views[-1] != (opened, by_line, whole):
            views.append((opened, by_line, whole))
    return trials.last_fitting(views)


def _ways_to_open(tree: "_Tree", c: int, opened: set[int], by_line: frozenset[int],
                  whole: frozenset[int]):
    """The ways to open `c`, finest first, each as (opened, by_line, whole, the calls that
    may open next, whether a close call is laid out past the budget): as it is; with the
    call that holds nearly all its work (`_core`), its helpers beside it; with its own
    equations grouped by line, where there are lines to tell apart or none at all (a
    pmap's own equations, JAX's), its calls drawn; where it has calls, its own equations
    as one box beside them (a PPO loss's dozen parallel lines are wider than the cell,
    the model it calls is not); a library's way to the user's code, its own work and
    its other calls as boxes (`_Tree.library_way`: a sampler's `while` body around the
    model's log-density), laid out where close; and last, on the path as far as the
    model's block, with the calls around it drawing their own equations as one box
    (`_rooms`: lm1b's `TransformerLM` and its mask's `gt`s around `decoder`), laid out
    where close: boxing lines changes the estimate's error (a GAN step's eight loose
    lines took 1,286 pt beside its loss, boxed 667), so no layout of a view before
    speaks for it. Never one closed box where its calls fit."""
    children, lines = tree.children[c], tree.lines[c]
    yield opened | {c}, by_line, whole, children, False
    core = _core(tree.g, c, children)
    if core is not None:
        yield opened | {c, core}, by_line, whole, \
            [k for k in children if k != core] + tree.children[core], False
    if len(lines) > 1 or (lines <= {"", NO_LINE} and children):
        yield opened | {c}, by_line | {c}, whole, children, False
    if len(lines) > 1 and children:
        yield opened | {c}, by_line, whole | {c}, children, False
    # a library's ways, laid out where close as `_rooms` (boxes change the estimate's
    # error); down its levels first, with room where needed, before `c` alone (a level
    # that only passes the way on draws none of the user's code: diffrax's
    # `checkpointed-fwd` opened alone left no room for its `while`s to reach `Func`)
    *deep, alone = list(_library_ways(tree, c)) or [None]
    # the path's own equations make room (a mask's two `gt`s) as far as the model's
    # block: inside it, a block's own parts open as they are
    rooms = list(_rooms(tree, c, opened, by_line, whole)) \
        if c in tree.path and not tree.within_block(c) else []
    for room in [frozenset(), *rooms]:
        for way, boxed, after in deep:
            yield opened | way, by_line, whole | boxed | room, after, True
    for room in [frozenset(), *rooms]:
        if alone is not None:
            way, boxed, after = alone
            yield opened | way, by_line, whole | boxed | room, after, True
        if room:
            yield opened | {c}, by_line, whole | room, children, True


def _library_ways(tree: "_Tree", c: int):
    """(groups opened, those drawn as the way, the calls that may open next) for each way
    to open `c` as a library's way to the user's code (`_Tree.library_way`): first down
    the levels of its loops that only pass the way on (`_Tree.levels_down`), drawn as
    one group (`through.flatten`), then `c` alone."""
    if not tree.library_way(c):
        return
    chain = tree.levels_down(c)
    if len(chain) > 1:
        yield set(chain), {k for k in chain if tree.library_way(k)}, \
            [k for k in tree.children[chain[-1]] if k in tree.model]
    yield {c}, {c}, [k for k in tree.children[c] if k in tree.model]


def _rooms(tree: "_Tree", c: int, opened: set[int], by_line: frozenset[int],
           whole: frozenset[int]):
    """The open calls of the user's code or model around `c` (not a fold) whose own
    equations (at least two) are drawn one by one: as one box beside their calls they
    leave the path's next group room to open. Those inside the traced function first
    (lm1b's `TransformerLM` and its mask's `gt`s), then with the traced function's own
    lines too, which say most of the step (an Equinox GAN step's labels and zeros
    beside the loss that calls its `Discriminator`)."""
    top, *inner = ancestors(tree.g, c)[:-1] or [None]
    room = frozenset(a for a in inner if _loose(tree, a, opened, by_line, whole))
    if room:
        yield room
    if top is not None and _loose(tree, top, opened, by_line, whole):
        yield room | {top}


def _loose(tree: "_Tree", a: int, opened: set[int], by_line: frozenset[int],
           whole: frozenset[int]) -> bool:
    """An open call of the user's (not a fold) drawing its own equations one by one."""
    x = tree.g.clusters[a]
    return a in opened and x.kind == "scope" and not x.period and a not in by_line \
        and a not in whole and tree.own[a] >= 2


class _Trials:
    """Whether a trial view fits: the estimate in clear cases, a real layout (`measure`,
    at most `layouts`) in close ones, and after a layout the estimate scaled by that
    layout's ratio to it (an Equinox MLP's gradient is estimated at twice its real width).
    A layout speaks for the views that hold it: a trial is scaled by the ratio of the
    largest view laid out that it opens (the error differs between a graph's forward and
    backward views: 0.4 and 0.9 in a PPO step), and one that holds a view laid out too
    wide is too wide (opening only widens). An estimate (±15%, scaled or not) is unsure
    until a layout confirms it: where the final view, laid out, does not fit, the search
    ends on the last view in its opening order that does (never coarser than one it
    measured legible), and goes on from there (`choose`)."""

    def __init__(self, draw, width_pt: float, estimate, measure, layouts: int):
        self.draw, self.width_pt, self.measure, self.layouts = draw, width_pt, measure, layouts
        self.estimate = estimate
        self.laid: list[tuple[tuple, float, bool]] = []     # (view, ratio, fits)
        self.unsure = False
        self._drawn: dict[tuple, tuple[Graph, Any]] = {}

    def _drawing(self, view: tuple) -> tuple[Graph, Any]:
        """(the graph `view` draws, its estimated size), each view made once: a search
        that backed off re-tries the groups it tried (a third of a ResNet50 step's 110
        trial views were repeats, each 10 ms of its 6,924 equations)."""
        key = (frozenset(view[0]), view[1], view[2])
        if key not in self._drawn:
            g = self.draw(*view)
            self._drawn[key] = g, self.estimate(g)
        return self._drawn[key]

    def _ratio(self, view: tuple) -> float | None:
        """The ratio of the largest view laid out that `view` opens, else the last."""
        held = [(len(v[0]), i) for i, (v, _, _) in enumerate(self.laid) if v[0] <= view[0]]
        if held:
            return self.laid[max(held)[1]][1]
        return self.laid[-1][1] if self.laid else None

    def _too_wide(self, view: tuple) -> bool:
        """Whether `view` opens, no coarser, a view laid out too wide."""
        return any(not ok and v[0] <= view[0] and view[1] <= v[1] and view[2] <= v[2]
                   for v, _, ok in self.laid)

    def _close(self, size: Any, ratio: float | None) -> bool:
        """Whether the estimate's error could turn the answer (see `choose`)."""
        w = self.width_pt
        if ratio is None:
            return w * 0.75 < size.width_pt < w * 2
        return w * 0.75 < size.width_pt * ratio < w * 1.25

    def _lay_out(self, view: tuple, g: Graph, size: Any) -> bool | None:
        """Whether `view` (drawn `g`, estimated `size`) fits laid out; None: no layout."""
        real = self.measure(g)
        if real is None:
            return None
        ok = fits(real.width_pt, real.ranks, self.width_pt)
        self.laid.append((view, real.width_pt / (size.width_pt or 1), ok))
        return ok

    def fits(self, trial: set[int], lined: frozenset[int], whole: frozenset[int],
             sure: bool = False) -> bool:
        """Whether the trial fits; `sure`: a close one is laid out past the budget."""
        interrupt.stop_if_interrupted()
        view = (trial, lined, whole)
        if self._too_wide(view):
            return False
        g, size = self._drawing(view)
        ratio = self._ratio(view)
        if self.measure is not None and (self.layouts > 0 or sure) \
                and self._close(size, ratio) and size.ranks <= MAX_RANKS:
            self.layouts -= not sure
            ok = self._lay_out(view, g, size)
            if ok is not None:
                if ok:          # laid out as a whole: what it holds is confirmed
                    self.unsure = False
                return ok
        ok = fits(size.width_pt * (ratio or 1.0), size.ranks, self.width_pt)
        self.unsure = self.unsure or ok
        return ok

    def _laid_out_fits(self, view: tuple) -> bool:
        return self._lay_out(view, *self._drawing(view)) is not False

    def last_fitting(self, views: list) -> tuple[tuple, bool]:
        """(the last of `views` (a sure view, then each opened since, each holding the
        one before) that fits laid out, whether it is the last): the last if no opening
        is unsure, else found by bisection (a few layouts: each opening only widens the
        drawing)."""
        if not self.unsure or self.measure is None or self._laid_out_fits(views[-1]):
            return views[-1], True
        lo, hi = 0, len(views) - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if self._laid_out_fits(views[mid]) else (lo, mid)
        self.unsure = False
        return views[lo], False


def _order(c: Cluster, model: set[int], path: set[int], twins: dict,
           spread: int) -> tuple:
    """The user's model first, by tiers, each biggest first:
    0. the forward calls on the path to the model's repeated block (`_path`);
    1. a backward group whose forward twin is open (it mirrors it);
    2. the model's other calls (their functions, their modules, a model library's
       modules, and the jit, scan or pmap around them), a backward at half weight;
    3. the rest: an optimizer's update, a loss's library helper, JAX's own
       `jit: _where` (a library call whose equations all come from the one line that
       called it at a quarter weight).
    A backward group is ready only once its forward twin is open, a library step once the
    model's block is drawn (`_Tree.waits`)."""
    if c.id in path and not c.backward:
        tier = 0
    elif c.id in model:
        tier = 1 if c.backward and twins.get(c.id) else 2
    else:
        tier = 3
    weight = c.num_equations * (0.5 if c.backward else 1) * \
        (0.25 if spread < 2 and tier == 3 else 1)
    return tier, -weight, c.id


_JAX_CALLS = ("jit", "custom_jvp", "custom_vjp", "custom_lin", "remat")


def _jax_own(c: Cluster, model: set[int]) -> bool:
    """JAX's own functions (`jit: _where`, `custom_jvp: relu`, `jit: log_softmax`): no
    call of the user's code or a model inside, no library call: they stay one box at the
    automatic depth (a click or `--expand` opens them)."""
    return c.kind in _JAX_CALLS and c.id not in model and not c.library


def _path(g: Graph, model: set[int], repeated: list[Cluster], children: dict) -> set[int]:
    """The model's repeated blocks (`_repeated`; in a scan, the model's calls it repeats)
    and every call around them: the path from the traced function to the model's
    structure. A model that repeats nothing (a U-Net's blocks all differ in width) is
    reached through the calls that hold the step's work (`_workhorse`)."""
    out: set[int] = set()
    for c in repeated:
        out.update(ancestors(g, c.id))
        if c.kind == "scan":
            out.update(k for k in children[c.id] if k in model)
    if not repeated:
        for top in children[None]:
            c = top if top in model and not g.clusters[top].backward else None
            while c is not None:
                out.add(c)
                c = _workhorse(g, c, [k for k in children[c] if k in model])
    return out


def _workhorse(g: Graph, c: int, calls: list[int]) -> int | None:
    """Of the user's calls in `c` (its model's, its own functions'), the one that holds
    most of their work, if it holds most of it: a train step's loss, the loss's model."""
    return _holding(g, calls, sum(g.clusters[k].num_equations for k in calls), 0.5)


def _repeated(g: Graph, model: set[int]) -> list[Cluster]:
    """The model's repeated blocks (`_blocks`) and scans over its calls (an RNN's cell
    under `hk.dynamic_unroll`)."""
    return _blocks(g, model) + [c for c in g.clusters.values() if c.kind == "scan"
                                and c.id in model and not c.backward]


def _blocks(g: Graph, model: set[int]) -> list[Cluster]:
    """The model's repeated blocks: its forward series, folded (`Block ×4`)."""
    return [c for c in g.clusters.values() if c.repeat > 1 and c.id in model
            and not c.backward]


def model_blocks(g: Graph) -> list[str]:
    """The titles of a folded graph's model blocks (`_blocks`): what the default picture
    should reach (a benchmark's check)."""
    return sorted({c.title for c in _blocks(g, users_code(g))})


def _twins(g: Graph) -> dict[int, set[int]]:
    """Each backward cluster → the forward clusters it mirrors: the same calls from the
    top, by instance where a call has one (NNX's `Linear #1 · backward` mirrors `Linear
    #1`, not `Linear #0`), else by label (without Linen's `_3` suffix: a folded series
    starts at its other end; a period of several calls left out: `loss_fn →
    apply_gradients ×4` folds a loop whose backward holds only `loss_fn ×4`, and is no
    call of its own)."""
    def key(c: int, exact: bool) -> tuple:
        out = []
        for a in ancestors(g, c):
            x = g.clusters[a]
            if x.period:
                continue
            title = x.title.removesuffix(" · backward")
            out.append(title if exact and calltree.parse(title) else
                       re.sub(r"_\d+$", "", x.label))
        return tuple(out)

    forward: dict[tuple, set[int]] = defaultdict(set)
    for c in g.clusters.values():
        if not c.backward:
            forward[key(c.id, True)].add(c.id)
            forward[key(c.id, False)].add(c.id)
    return {c.id: forward.get(key(c.id, True)) or forward.get(key(c.id, False), set())
            for c in g.clusters.values() if c.backward}


def _core(g: Graph, c: int, children: list[int]) -> int | None:
    """The call that holds nearly all of `c`'s work (Linen's `TransformerLM` around its
    `decoder`, beside a few mask helpers), if one does."""
    return _holding(g, children, g.clusters[c].num_equations, 0.8)


def _holding(g: Graph, calls: list[int], work: int, share: float) -> int | None:
    """The biggest of `calls` if it holds more than `share` of `work`, else None."""
    big = max(calls, key=lambda k: g.clusters[k].num_equations, default=None)
    return big if big is not None and g.clusters[big].num_equations > share * work else None
