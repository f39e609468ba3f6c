"""A `JaxprView` as a person explores it: which groups are open, what a search found, and
the `%jaxpr` options that redraw the same picture statically.

This is the model behind the explorer widget; it holds no picture of its own: every frame
is the view's own `view_of` its folded graph, laid out by `view.layout_of` as the static
picture is. A frame is the SVG plus a side table of what hovering each node or group
shows (plain strings: the page puts them into the DOM as text).
"""
from __future__ import annotations

import os
import re
import shlex
import time
from dataclasses import dataclass, field
from typing import Callable

from ..core.errors import is_cell
from ..graph import model as G
from ..graph.collapse import opened_at
from . import jaxpr as J
from .size import MIN_TEXT_PX

SEARCH_OPENS = 20      # matches whose groups a search opens; the rest are only counted

Place = Callable[[str], "str | None"]     # a file or cell's name for people ("In [3]")


def file_name(file: str) -> str | None:
    """A user's file by its name; a cell has none without the shell that ran it."""
    return None if not file or is_cell(file) or file.startswith("<") else \
        os.path.basename(file)


def location(where: str, file: str, place: Place = file_name) -> str:
    """`Attention.__call__:9 (In [3])`: the function and line the picture's boxes say,
    and the cell (or file) that holds them, which the boxes leave off to stay short."""
    named = place(file) if where and file else None
    return f"{where} ({named})" if named else where


@dataclass
class Frame:
    svg: str
    table: dict            # SVG title ("n12", "cluster_3") → what hovering it shows
    options: str           # "--depth 1 --expand 'layer #3'": redraws this view statically
    caveat: str            # how a redraw with those options differs ("" where it doesn't)
    status: str            # what the last action did, or why it did nothing
    highlight: list[str] = field(default_factory=list)
    seconds: float = 0.0   # the layout's time
    focus: str = ""        # the SVG title of the group a click just opened


class Exploration:
    """Open and closed groups of one view, starting from the picture it drew."""

    def __init__(self, view, place: Place = file_name) -> None:
        self.view = view
        self.place = place          # how hover and search name a line's cell or file
        self.folded: G.Graph = view.folded
        drawn = view.graph
        # the traced function's own call is open, as the picture draws it: as no box
        self.opened = opened_at(self.folded, 0)
        if drawn.grouping in ("equation", "line") or not drawn.clusters:
            self.opened |= {c for c in [*drawn.clusters, *drawn.merged]
                            if c in self.folded.clusters}
        # else the static picture coarsened past its budgets: start from the top
        # the groups drawn with their lines grouped: as the picture chose them, else as
        # its group boxes show them
        # (and those a box stands for: the top's own, where the traced function is a
        # library's, and a library's loops drawn as one group, `graph.through`)
        self.by_line = set(drawn.by_line) | {n.cluster for n in drawn.nodes.values()
                                             if n.kind == "group" and n.cluster in self.opened} \
            | {c for c in drawn.whole if c is None or c in self.opened}
        if view.group == "line":
            self.by_line = set()      # `--group line` groups every cluster by line
        # of those, the ones whose own equations are one box: a click shows them one by one
        self.whole = set(drawn.whole)
        self.highlight: set[int] = set()          # equation indices a search matched
        self.found: set[str] = set()              # titles of matched inputs and outputs
        self.first = (set(self.opened), set(self.by_line))     # what "reset" goes back to
        # what the last search opened (groups, line groups shown as equations): the next
        # search, an empty one included, closes them again
        self.searched: tuple[set[int], set[int]] = (set(), set())
        # a closed group → what was open and grouped by line inside it: opening it again
        # gives that back, not its first level
        self.shut: dict[int, tuple[set[int], set[int]]] = {}
        # the group the last click opened: the page draws it legibly and scrolls to it
        self.focus: int | None = None
        self.graph = self._graph()

    # ---- what a click or a search changes --------------------------------------------

    def toggle(self, key: str) -> str:
        """Open the call a node stands for, show a line group's equations, or close an
        open group (`key` is the node's or cluster's title in the SVG)."""
        self.focus = None
        m = re.fullmatch(r"(n|cluster_)(\d+)", key or "")
        if not m:
            return f"nothing to open at {key!r}"
        i = int(m.group(2))
        if m.group(1) == "cluster_":
            if i not in self.opened:
                return "that group is not open"
            inside = {i} | self._inside(i)
            self.shut[i] = (self.opened & inside, self.by_line & inside)
            self.opened -= inside
            self.by_line -= inside
            self.graph = self._graph()
            return f"closed {self.folded.clusters[i].title}"
        node = self.graph.nodes.get(i)
        if node is None:
            return "that node is not in the picture"
        if node.kind == "call" and node.group is not None:
            group = node.group
            opened, grouped = self.shut.get(group, ({group}, set()))
            said = self._open(opened, node.title, grouped=grouped,
                              legible=group not in self.shut)
        elif node.kind == "group" and node.cluster in self.by_line:
            group = node.cluster      # with the loop levels its box was made over
            levels = {m for m in self.graph.merged if group in G.ancestors(self.folded, m)}
            said = self._open(set(), node.title, lines_of={group} | levels)
        else:
            return f"{node.title} has nothing inside to open"
        self.focus = group if group in self.graph.clusters else None
        return said

    def reset(self) -> str:
        """Back to the first view: its open groups, nothing searched."""
        self.opened, self.by_line = set(self.first[0]), set(self.first[1])
        self.focus = None
        self.highlight, self.found = set(), set()
        self.searched = (set(), set())
        self.graph = self._graph()
        return "back to the first view"

    def search(self, query: str) -> str:
        """Highlight what matches `query` (a name, a primitive, a line `:12` or `loss:12`)
        and open the groups holding the first matches, closing those the previous search
        opened (an empty query only closes them)."""
        query = (query or "").strip()
        self.focus = None
        self.highlight, self.found = set(), set()
        opened, lines = self.searched
        self.searched = (set(), set())
        closing = {c for c in opened if c in self.opened}
        for c in list(closing):
            closing |= self._inside(c)
        self.opened -= closing
        self.by_line -= closing
        self.by_line |= {c for c in lines if c in self.opened}
        if not query:
            self.graph = self._graph()
            return f"search cleared; closed {len(closing)} group{'s' * (len(closing) != 1)}" \
                " it opened" if closing else ""
        nodes, clusters = _matches(self.folded, query, self.place)
        self.highlight = {e for n in nodes for e in n.eqns} | {
            e for c in clusters for e in self._eqns_in(c)}
        self.found = {n.title for n in nodes if not n.eqns}
        if not nodes and not clusters:
            self.graph = self._graph()
            return f"no match for {query!r}"
        walk = sorted(nodes, key=lambda n: n.eqns[:1] or (-1,))
        first = [n.cluster for n in walk[:SEARCH_OPENS] if n.cluster is not None] + [
            c.parent for c in clusters[:SEARCH_OPENS] if c.parent is not None]
        wanted = {a for c in first for a in G.ancestors(self.folded, c)}
        lines = {c for c in first if c in self.by_line}
        found = len(nodes) + len(clusters)
        shown = min(found, SEARCH_OPENS)
        said = f"{found} match{'es' if found != 1 else ''} for {query!r}" + (
            f"; groups of the first {shown} opened" if found > shown else "")
        before = (set(self.opened), set(self.by_line))
        said = self._open(wanted - self.opened, said, lines_of=lines, quiet=True)
        self.searched = (self.opened - before[0], before[1] - self.by_line)
        return said

    def _open(self, clusters: set[int], what: str, lines_of: set[int] = frozenset(),
              quiet: bool = False, grouped: set[int] = frozenset(),
              legible: bool = False) -> str:
        """Open `clusters` (those in `grouped` with their equations grouped by line, and
        the equations of the line groups in `lines_of` shown). A cluster too big to draw,
        or (`legible`) whose equations one by one would shrink the text below 8 px at
        cell width, opens one level: its equations grouped by line, each line opened by a
        click. A change past the node budget is refused with a note."""
        before = (set(self.opened), set(self.by_line))
        self.opened |= clusters
        self.by_line = (self.by_line | grouped) - set(lines_of)
        g = self._graph()
        if clusters and (len(g.nodes) > self.view.max_nodes or legible and
                         self._text_px(g) < MIN_TEXT_PX):
            self.by_line |= clusters
            lined = self._graph()
            if len(lined.nodes) < len(g.nodes):
                g = lined
            else:
                self.by_line -= clusters - before[1]
        if len(g.nodes) > self.view.max_nodes:
            self.opened, self.by_line = before
            self.graph = self._graph()
            return (f"{what}: {len(g.nodes)} nodes exceed max_nodes={self.view.max_nodes}; "
                    "close a group first")
        self.graph = g
        return what if quiet else f"opened {what}"

    def _text_px(self, g: G.Graph) -> float:
        """`g`'s smallest text at cell width, laid out (the layout `frame` reuses)."""
        return J._text_px(self.view.layout_of(self.view.dot(g)).svg)

    def _inside(self, cluster: int) -> set[int]:
        return {c for c in self.folded.clusters
                if cluster in G.ancestors(self.folded, c)[:-1]}

    def _eqns_in(self, cluster: G.Cluster) -> set[int]:
        inside = self._inside(cluster.id) | {cluster.id}
        return {e for n in self.folded.nodes.values() if n.cluster in inside for e in n.eqns}

    @property
    def boxed(self) -> frozenset[int]:
        """The groups drawn with their own equations one box (a click on the box shows
        them: it leaves `by_line`)."""
        return frozenset(self.whole & self.by_line)

    def _graph(self) -> G.Graph:
        return self.view.view_of(self.opened, frozenset(self.by_line) - self.boxed,
                                 self.boxed)

    def snapshot(self) -> tuple:
        """What an action may change, to `restore` when its layout fails."""
        return (set(self.opened), set(self.by_line), set(self.highlight), set(self.found),
                self.graph, (set(self.searched[0]), set(self.searched[1])))

    def restore(self, snapshot: tuple) -> None:
        """Back to a `snapshot`: the groups open, what was searched, the graph."""
        opened, by_line, highlight, found, self.graph, searched = snapshot
        self.opened, self.by_line = set(opened), set(by_line)
        self.highlight, self.found = set(highlight), set(found)
        self.searched = (set(searched[0]), set(searched[1]))

    # ---- the static options that redraw this view ----------------------------------

    def options(self) -> tuple[str, str]:
        """(`--depth N --expand '=PATH' --lines '=PATH' --box '=PATH' …`, how its redraw
        differs from this view): the deepest level opened whole, then the other open
        groups by their exact paths (the deepest ones: those around them open with them),
        those whose equations are grouped by line, and those whose own equations are one
        box."""
        clusters = self.folded.clusters
        levels = sorted({c.level for c in clusters.values()})
        depth = 0
        for lv in levels:
            if all(c.id in self.opened for c in clusters.values() if c.level <= lv):
                depth = lv
            else:
                break
        boxes = sorted((c for c in self.boxed if c is None or c in self.opened),
                       key=lambda c: -1 if c is None else c)
        lines = sorted(c for c in self.by_line if c in self.opened and c not in boxes)
        if levels and depth == levels[-1]:
            expand, depth_text = [], "all"
        else:
            rest = {c for c in self.opened if clusters[c].level > depth}
            expand = [c for c in sorted(rest) if c not in self.by_line and not any(
                clusters[o].parent == c for o in rest)]
            depth_text = str(depth)
        name = {c: self._name(c) for c in expand + lines + boxes}
        parts = [f"--depth {depth_text}"] + [
            f"--{flag} {shlex.quote(name[c])}" for flag, cs in
            (("expand", expand), ("lines", lines), ("box", boxes)) for c in cs]
        redrawn = J.opened_at(self.folded, None if depth_text == "all" else depth,
                              [name[c] for c in expand + lines + boxes])
        grouped = J.named_groups(self.folded, [name[c] for c in lines + boxes])
        caveats = []
        if redrawn != self.opened:
            caveats.append("opens other groups: " + ", ".join(sorted(
                {clusters[c].title for c in redrawn ^ self.opened})))
        drawn = self.by_line & (self.opened | {None})
        if grouped != drawn:
            caveats.append("groups other equations by line: " + ", ".join(sorted(
                {clusters[c].title if c is not None else "the top"
                 for c in grouped ^ drawn})))
        return " ".join(parts), "; ".join(caveats)

    def _name(self, c: int) -> str:
        """The shortest name a person can type that names group `c` alone: its title
        (`layer*15`), `=` its title, or `=` its path (`=model/layer*15/attention`); `=`
        the top (None)."""
        if c is None:
            return "="
        title = J.typed(self.folded.clusters[c].title)
        path = "=" + J.typed(J.group_path(self.folded, c))
        return next((n for n in (title, "=" + title) if J.named_groups(self.folded, [n])
                     == {c}), path)

    # ---- a frame for the page --------------------------------------------------------

    def frame(self, status: str = "") -> Frame:
        """The current view laid out, with its hover table and highlighted titles."""
        g = self.graph
        dot = self.view.dot(g)
        start = time.perf_counter()
        svg = self.view.layout_of(dot).svg     # the view's cache: closing again is instant
        seconds = time.perf_counter() - start
        magic, caveat = self.options()
        hl = [f"n{n.id}" for n in g.nodes.values()
              if self.highlight.intersection(n.eqns) or n.title in self.found]
        table = hover_table(g, self.folded, self.by_line, self.view.marks(g),
                            self.view.hover_lines(g), self.place)
        focus = f"cluster_{self.focus}" if self.focus is not None else ""
        return Frame(svg.decode(), table, magic, caveat, status, hl, seconds, focus)


def _matches(g: G.Graph, query: str, place: Place = file_name) \
        -> tuple[list[G.Node], list[G.Cluster]]:
    """Nodes and groups of the folded graph that `query` names: `:12` or `loss:12`
    (`__call__:12` of any class) a line exactly, else any part of a name, primitive,
    location (its cell too: `In [3]`) or source line, or of an argument's or result's
    pytree keys (`[i].w1`, `model.l1.kernel`: a record's rows)."""
    q = query.lower()
    line = re.fullmatch(r"([\w.<>]*):(\d+)", q)

    def hit(title: str, prim: str, where: str, file: str, source: str, *keys: str) -> bool:
        if line:
            func, num = line.groups()
            w = where.lower()
            return w.endswith(f":{num}") and (
                not func or w == f"{func}:{num}" or w.endswith(f".{func}:{num}"))
        return any(q in s.lower() for s in (title, prim, location(where, file, place),
                                            source, *keys) if s)

    nodes = [n for n in g.nodes.values() if n.kind in ("op", "input", "output", "const")
             and hit(n.title, n.primitive, n.where, n.file, n.source,
                     *(n.detail if n.kind != "op" else ()))]
    clusters = [c for c in g.clusters.values() if not line
                and hit(c.title, c.kind, c.where, c.site.file, c.source)]
    return nodes, clusters


def hover_table(g: G.Graph, folded: G.Graph, by_line: set[int],
                marks: dict | None = None, lines: dict | None = None,
                place: Place = file_name) -> dict:
    """What hovering shows, by SVG title: a node's title, kind, details, the figures the
    view's overlays write on it (flops, time, bytes at the peak, collectives: `marks`,
    `to_dot`'s overlay arguments), location (`location`: with its cell), source line
    (with the library frame), input and output shapes, and what a click does. A location
    the picture leaves off its boxes (one shared by a whole group) is still here; a
    group's is the line that calls it. `lines`: the overlays' hover lines beyond their
    marks, by SVG title (`JaxprView.hover_lines`), after the figures."""
    marks, lines = marks or {}, lines or {}

    def figures(kind: str, i: int) -> list[str]:
        line = (marks.get(kind) or {}).get(i, ("", "", False))[1]
        key = f"n{i}" if kind == "overlay" else f"cluster_{i}"
        return [x for x in line.split("\n") if x.strip()] + list(lines.get(key, ()))

    located = {e: G.Site(n.where, n.source, n.file) for n in folded.nodes.values()
               if n.where for e in n.eqns}

    def site(n: G.Node) -> G.Site:
        if n.group is not None and n.group in folded.clusters:
            return folded.clusters[n.group].site
        return G.Site(n.where, n.source, n.file) if n.where else next(
            (located[e] for e in n.eqns if e in located), G.Site("", n.source))

    ins: dict[int, list[str]] = {}
    outs: dict[int, list[str]] = {}
    for e in g.edges:
        if e.label:
            ins.setdefault(e.dst, []).append(e.label)
            outs.setdefault(e.src, []).append(e.label)
    table = {}
    for n in g.nodes.values():
        click = "open" if n.kind == "call" and n.group is not None else \
            "lines" if n.kind == "group" and n.cluster in by_line else ""
        at = site(n)
        table[f"n{n.id}"] = {
            "title": n.title, "kind": n.primitive or n.kind, "detail": list(n.detail),
            "where": location(at.where, at.file, place),
            "source": at.source, "inputs": _distinct(ins.get(n.id, [])),
            "outputs": _distinct(outs.get(n.id, [])),
            "equations": n.count if n.eqns else 0,       # a fold's: one repetition's
            "figures": figures("overlay", n.id), "click": click}
    for c in g.clusters.values():
        table[f"cluster_{c.id}"] = {
            "title": c.title, "kind": c.kind, "detail": list(c.detail),
            "where": location(c.site.where, c.site.file, place),
            "source": c.site.source, "inputs": [], "outputs": [],
            "equations": folded.clusters[c.id].num_equations if c.id in folded.clusters
            else c.num_equations, "figures": figures("cluster_overlay", c.id),
            "click": "close"}
    return table


def _distinct(labels: list[str], most: int = 8) -> list[str]:
    seen = list(dict.fromkeys(labels))
    return seen[:most] + ([f"+{len(seen) - most} more"] if len(seen) > most else [])
