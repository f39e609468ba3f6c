"""`JaxprView`: a traced jaxpr, grouped by its call tree, drawn at the finest level that
fits the budgets.

The default depth is chosen for legibility (`graph.auto_depth.choose`): calls open while
the drawing's smallest text stays ≥ 8 px at cell width (a call too big to open shows its
lines). The graph's passes (`graph.passes`) always fold repeats, per-leaf copies too, and
draw many-leaf arguments as records. Past the budgets the view coarsens: the requested
depth, then the automatic one (a shallower call tree), then grouped by function, then by
forward/backward phase. A level is skipped when it has more than `max_nodes` nodes, its
layout overruns `layout_timeout` or its text would shrink below 8 px; each skip leaves a
one-line note. Without any renderer the view is text plus DOT source.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable

from ..core import collector, interrupt
from ..graph import auto_depth, passes
from ..graph import model as G
from ..graph.collapse import Collapser, holding
from ..graph.collapse import opened_at as opened_at_depth
from . import html as H
from . import layout
from . import size as S
from .dot import crowded as crowded_ends
from .dot import to_dot
from .text import to_text, visible

TALL_PX = 480          # a picture taller than this has the overlays' tables under it
KEPT_LAYOUTS = 64      # layouts a view keeps (its levels, its trials, its explorer's frames)

_GROUPING_NOTE = {
    "line": "equations grouped by source line",
    "function": "equations grouped by function",
    "phase": "equations grouped into forward and backward passes",
}


@dataclass
class _Drawn:
    graph: G.Graph
    dot: str
    svg: bytes | None
    png: bytes | None
    renderer: str
    notes: list[str]
    seconds: float

    def __post_init__(self) -> None:
        # two levels that fail alike (the depth asked for and the automatic one, both
        # past max_nodes) say so once
        self.notes = list(dict.fromkeys(self.notes))


def _level_text(g: G.Graph) -> str:
    """Which level a note is about, so the notes of successive levels differ."""
    return f" ({_GROUPING_NOTE[g.grouping]})" if g.grouping in _GROUPING_NOTE else ""


def depth_of(depth: int | str | None) -> int | str | None:
    """`--depth`/`depth=` as given (`'auto'`, `'all'` or None, a number, `'2'`) → what
    the view uses: 'auto', None (all levels) or an int."""
    if depth is None or depth == "auto":
        return depth
    if depth == "all":
        return None
    try:
        return int(depth)
    except (TypeError, ValueError):
        raise ValueError(f"depth takes a number, 'all' or 'auto', not {depth!r}") from None


def group_path(g: G.Graph, cluster: int) -> str:
    """A group's titles from the outermost call down, `model/block ×6/jit: _std`: the
    exact name `--expand '=…'` takes."""
    return "/".join(g.clusters[c].title for c in G.ancestors(g, cluster))


def typed(name: str) -> str:
    """A group's name as people type it, which `--expand`/`--lines`/`--box` match:
    `layer*15 backward` for `layer ×15 · backward`."""
    return re.sub(r"\s*×\s*", "*", re.sub(r"\s*·\s*", " ", name)).strip()


def named_groups(g: G.Graph, names: Iterable[str]) -> set[int | None]:
    """The groups `--expand`/`--lines` NAMEs name: `=PATH` the group of that path (or,
    without a `/`, every group of exactly that title); a bare NAME every group whose
    title contains it, ignoring case (for people typing). Either in its `typed` form
    or as drawn. `=` alone names the top, the traced function's own equations (None:
    `--box =`)."""
    found: set[int | None] = set()
    for name in map(typed, names):
        if name == "=":
            found.add(None)
        elif name.startswith("="):
            exact = name[1:]
            found |= {c.id for c in g.clusters.values()
                      if typed(group_path(g, c.id)) == exact or typed(c.title) == exact}
        else:
            found |= {c.id for c in g.clusters.values()
                      if name.lower() in typed(c.title).lower()}
    return found


def opened_at(g: G.Graph, depth: int | None, names: Iterable[str] = ()) -> set[int]:
    """The groups drawn open at `depth` (None: all, -1: none) and those `names` name
    (`--expand`, `--lines`, `--box`), with every group around them."""
    opened = opened_at_depth(g, depth)
    for c in named_groups(g, names):
        opened.update(G.ancestors(g, c))
    return opened


class JaxprView:
    """The jaxpr of one call; `.text()`, `.dot()`, `.svg()` and rich notebook display."""

    def __init__(self, graph: G.Graph, *, func_name: str = "f", stage: str = "jaxpr",
                 stage_text: str | None = None, depth: int | str | None = "auto",
                 expand: Iterable[str] = (), lines: Iterable[str] = (),
                 boxes: Iterable[str] = (), rankdir: str = "TB", max_nodes: int = 400,
                 layout_timeout: float = 10.0, renderer: str = "auto", png: bool = True,
                 group: str = "call", overlays: dict[str, Any] | None = None):
        self.full = graph
        # the overlays' results by view attribute, in the registry's order (jaxmagic.
        # overlays): `view.costs` (Costs), `view.collectives` (Collectives), `view.memory`
        # (Memory), …; None for one not asked for
        self.overlays: dict[str, Any] = dict(overlays or {})
        self.func_name = func_name
        self.stage = stage
        self.stage_text = stage_text
        self.depth = depth_of(depth)
        self.expand = tuple(expand)
        self.lines = tuple(lines)    # groups drawn open with their equations grouped by line
        self.boxes = tuple(boxes)    # groups drawn open with their own equations one box
        self.rankdir = rankdir
        self.max_nodes = max_nodes
        self.layout_timeout = layout_timeout
        self.renderer = renderer
        self.png = png
        self.group = group
        self._layouts: dict[tuple[str, bool], layout.Drawing] = {}  # (DOT, PNG?) → drawing
        self._widths: dict[str, float] = {}     # DOT → its width laid out, in points

    def __getattr__(self, name: str) -> Any:
        """An overlay's result: `view.costs`, `view.memory`, `view.collectives`, …"""
        overlays = self.__dict__.get("overlays")
        if overlays is not None and name in overlays:
            return overlays[name]
        raise AttributeError(f"'JaxprView' object has no attribute {name!r}")

    @property
    def _results(self) -> list[Any]:
        """The results of the overlays asked for, in the order their text and tables are
        shown: those that draw lines (`--sharding`'s collectives) first, then the others
        in the registry's order."""
        results = [r for r in self.overlays.values() if r is not None]
        return [r for r in results if r.draws == "lines"] + \
            [r for r in results if r.draws != "lines"]

    @property
    def num_equations(self) -> int:
        """Every equation, nested jaxprs included."""
        return self.full.num_equations

    def configure(self, **changes: Any) -> "JaxprView":
        """A copy with other options (depth, expand, rankdir, max_nodes, renderer, …);
        every overlay's result is kept (`costs=…`, an overlay's attribute, replaces one)."""
        overlays = dict(self.overlays)
        overlays.update(changes.pop("overlays", {}))
        for name in [k for k in changes if k in overlays]:
            overlays[name] = changes.pop(name)
        opts = dict(func_name=self.func_name, stage=self.stage, stage_text=self.stage_text,
                    depth=self.depth, expand=self.expand, lines=self.lines,
                    boxes=self.boxes, rankdir=self.rankdir,
                    max_nodes=self.max_nodes, layout_timeout=self.layout_timeout,
                    renderer=self.renderer, png=self.png, group=self.group,
                    overlays=overlays)
        opts.update(changes)
        return JaxprView(self.full, **opts)

    # ---- the levels ------------------------------------------------------------------

    @cached_property
    def folded(self) -> G.Graph:
        """Repeats folded, many-leaf arguments as records: the same at every depth
        (`passes.PASSES`, stage "folded")."""
        return passes.run(self.full, "folded")

    @cached_property
    def _collapser(self) -> Collapser:
        return Collapser(self.folded)

    def view_of(self, opened: set[int], by_line: frozenset[int] = frozenset(),
                whole: frozenset[int] = frozenset(), by: str | None = None) -> G.Graph:
        """The folded graph with `opened` clusters drawn open (those in `by_line` with
        their own equations grouped by source line, those in `whole` as one box beside
        their calls), coarsened `by` function or phase: `passes.PASSES`, stage "view"."""
        # an overlay that marks each argument (`--sharding`: its sharding, its gather, its
        # resharded edges) draws every argument's edge of its own
        marked = any(r.marks_inputs for r in self._results)
        return passes.run(self.folded, "view", passes.ViewOptions(
            opened, by_line, whole, by, self.group, self._collapser,
            lambda g: crowded_ends(g, many=None if marked else 3)))

    def _choose(self, width_pt: float, layouts: int = 3) -> tuple[set[int], frozenset[int],
                                                                  frozenset[int]]:
        """The automatic depth within `width_pt`, laying out at most `layouts` trials."""
        return auto_depth.choose(self.folded, self.view_of, width_pt, S.estimate,
                                 self._measure, layouts, first=self._focus_groups)

    def _auto(self, width_pt: float, layouts: int = 3) -> G.Graph:
        return self.view_of(*self._choose(width_pt, layouts))

    def _measure(self, g: G.Graph) -> S.Size | None:
        """The real drawing's size, or None past 1 s: laid out without a PNG (it takes
        twice as long to render as the layout and is wanted only of the drawing shown)."""
        dot = self.dot(g)
        try:
            width = _kept(self._widths, dot, lambda: layout.width_pt(
                dot, min(1.0, self.layout_timeout), self.renderer) or 0.0)
        except (layout.LayoutTimeout, layout.NoRenderer, RuntimeError):
            return None
        return S.Size(width, S.estimate(g).ranks)

    def layout_of(self, dot: str, timeout: float | None = None,
                  png: bool = False) -> layout.Drawing:
        """`dot` laid out (within `timeout` seconds, the view's `layout_timeout` by
        default): each DOT source once, and once more where a PNG is wanted after all. The
        one layout cache of the view and of its explorer (the trials' widths apart); past
        `KEPT_LAYOUTS` the oldest layouts go first."""
        d = self._layouts.get((dot, True))
        return d if d is not None else _kept(self._layouts, (dot, png), lambda: layout.render(
            dot, self.layout_timeout if timeout is None else timeout, self.renderer, png))

    @property
    def _named(self) -> tuple[str, ...]:
        """The groups asked for by name: `--expand`, `--lines`, `--box`."""
        return self.expand + self.lines + self.boxes

    def _levels(self):
        """(graph, retry): the views to try, finest first; `retry(width)` redoes an
        automatic view with a tighter width budget when the real layout came out wider."""
        auto = None
        lines = frozenset(named_groups(self.folded, self.lines))
        boxes = frozenset(named_groups(self.folded, self.boxes)) - lines
        if self.depth != "auto":
            yield self.view_of(opened_at(self.folded, self.depth, self._named), lines,
                               boxes), None
        elif self._named or self._focus_groups:
            # the automatic depth (the groups holding a collective opened first where
            # they fit), and open too: the calls named, the groups holding a collective,
            # with their equations one by one, not grouped by line (a coarser level
            # follows when that does not stay legible or runs past the ranks a reader
            # can follow)
            auto = self._choose(S.max_width_pt())
            named = opened_at(self.folded, -1, self._named) | self._focus_groups
            if not named <= auto[0] or named & (auto[1] | auto[2]) or not lines <= auto[1] \
                    or not boxes <= auto[2]:
                g = self.view_of(auto[0] | named, (auto[1] - named) | lines,
                                 (auto[2] - named - lines) | boxes)
                if self._named or S.estimate(g).ranks <= auto_depth.MAX_RANKS:
                    yield g, None
        auto = auto or self._choose(S.max_width_pt())
        yield self.view_of(*auto), self._auto
        yield self.view_of(*auto, by="function"), None
        yield self.view_of(*auto, by="phase"), None

    @cached_property
    def _focus_groups(self) -> set[int]:
        """The groups around the equations the overlays point at (`focus()`: those that
        run collectives, `--sharding`), opened first."""
        eqns = [e for r in self._results for e in r.focus()]
        return holding(self.folded, eqns) if eqns else set()

    def _title(self, g: G.Graph) -> str:
        n = self.num_equations
        said = [t for t in (r.title() for r in self._results) if t]
        return f"{self.func_name} — {G.equations(n) if n else 'no JAX operation'}" + \
            "".join(f" · {t}" for t in said)

    @cached_property
    def _drawn(self) -> _Drawn:
        notes: list[str] = list(self.full.notes)     # from tracing: what was held static
        if not self.num_equations:      # no program to draw: the notes say what it does
            return _Drawn(self.full, self.dot(self.full), None, None, "none", notes, 0.0)
        start = time.perf_counter()
        try:
            with interrupt.ctrl_c_noted(), collector.paused():   # the views' building
                return self._draw(notes, start)                  # too, not only layouts
        except KeyboardInterrupt:     # as %jit_compare: stop, and show what there is
            g = self.view_of(opened_at_depth(self.folded, 0))
            return _Drawn(g, self.dot(g), None, None, "none",
                          notes + ["layout interrupted (Ctrl-C); showing text"],
                          time.perf_counter() - start)

    def _draw(self, notes: list[str], start: float) -> _Drawn:
        """The finest level that fits the budgets, laid out (see the module doc)."""
        last = None
        for g, retry in self._levels():
            last = g
            if len(g.nodes) > self.max_nodes:
                notes.append(f"{len(g.nodes)} nodes exceed max_nodes={self.max_nodes}"
                             f"{_level_text(g)}; drawing a coarser view")
                continue
            dot = self.dot(g)
            try:
                d = self.layout_of(dot, self.layout_timeout, self.png)
                small = _text_px(d.svg)
                budget = S.max_width_pt()
                for tries in range(4 if retry is not None else 0):
                    if small >= S.MIN_TEXT_PX:
                        break
                    # the estimate was short: budget by the measured ratio and lay out
                    # again, a few times, and at last the collapsed call tree: a legible
                    # call-tree view is kept before any coarser family
                    ratio = S.estimate(g).width_pt / (_svg_width(d.svg) * 3 / 4)
                    budget = 0.0 if tries == 3 else min(budget * ratio * 0.95,
                                                        budget * 0.9)
                    g = retry(budget, 0)
                    dot = self.dot(g)
                    d = self.layout_of(dot, self.layout_timeout, self.png)
                    small = _text_px(d.svg)
                if small < S.MIN_TEXT_PX and g.grouping != "phase":
                    # `--expand`, `--lines`, `--box`: drawn as asked
                    named = bool(self._named) and retry is None
                    coarser = self.depth == "auto" and not named or retry is None and \
                        g.grouping != "equation" and not (self.lines or self.boxes)
                    notes.append(f"text {small:.1f} px at {S.CELL_PX} px wide"
                                 + _level_text(g) + ("; drawing a coarser view"
                                                     if coarser else ""))
                    if coarser:
                        continue
            except layout.LayoutTimeout as e:
                notes.append(f"{e}; drawing a coarser view")
                continue
            except RuntimeError as e:
                # the renderer failed on this graph (wasm's call stack ran out, dot crashed)
                lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()] or [""]
                why = lines[0].rstrip(":") + (f" ({lines[-1]})" if len(lines) > 1 else "")
                notes.append(f"{why[:300]}; drawing a coarser view")
                continue
            except layout.NoRenderer as e:
                return _Drawn(g, dot, None, None, "none", notes + [str(e)],
                              time.perf_counter() - start)
            if g.grouping != "equation":
                notes.append(_GROUPING_NOTE[g.grouping])
            return _Drawn(g, dot, d.svg, d.png, d.renderer, notes,
                          time.perf_counter() - start)
        dot = self.dot(last)
        return _Drawn(last, dot, None, None, "none",
                      notes + ["too large to draw within the budgets; showing text"],
                      time.perf_counter() - start)

    @property
    def _fill(self) -> Any:
        """The overlay whose fill the picture takes (`draws = "fill"`: costs, memory): the
        last asked for in the registry's order, else None."""
        fills = [r for r in self._results if r.draws == "fill"]
        return fills[-1] if fills else None


    def marks(self, g: G.Graph) -> dict:
        """The overlays' marks on `g` (`to_dot`'s `overlay` and `cluster_overlay`: per node
        and group (fill, the figures line, emphasised)), which the explorer's hover repeats:
        the fill overlay's, then each `draws = "lines"` overlay's fill and line on its own
        nodes, over it (a collective's line joins its node's cost)."""
        overlay = self._fill.overlay(g) if self._fill is not None else {}
        if self._fill is not None and (edges := self._fill.edge_lines(g)):
            overlay["edge_overlay"] = edges
        for r in reversed(self._results):
            if r.draws != "lines":
                continue
            for key, marks in (("overlay", r.overlay(g)),
                               ("cluster_overlay", r.cluster_overlay(g))):
                overlay[key] = _over(overlay.get(key, {}), marks)
            if edges := r.edge_lines(g):
                overlay["edge_overlay"] = {**overlay.get("edge_overlay", {}), **edges}
        return overlay

    def hover_lines(self, g: G.Graph) -> dict[str, list[str]]:
        """The overlays' lines for the explorer's hover beyond their marks (`hover(g)`),
        by SVG title ("n12", "cluster_3")."""
        out: dict[str, list[str]] = {}
        for r in self._results:
            for key, lines in r.hover(g).items():
                out.setdefault(key, []).extend(lines)
        return out

    # ---- public forms ----------------------------------------------------------------

    @property
    def graph(self) -> G.Graph:
        """The graph as drawn (after collapsing and any coarsening)."""
        return self._drawn.graph

    @property
    def notes(self) -> list[str]:
        return list(self._drawn.notes)

    def dot(self, g: G.Graph | None = None) -> str:
        """The DOT source of the picture drawn, or of `g` (a view of `folded`) drawn
        with this view's options and overlays."""
        if g is None:
            return self._drawn.dot
        return to_dot(g, self.rankdir, self._title(g), **self.marks(g))

    @property
    def drawing(self) -> bytes | None:
        """The picture's SVG, or None where no renderer could draw it."""
        return self._drawn.svg

    def svg(self) -> str:
        """The drawing as SVG text; raises RuntimeError when no renderer could draw it."""
        if self._drawn.svg is None:
            raise RuntimeError("; ".join(self._drawn.notes) or "no drawing")
        return self._drawn.svg.decode()

    def text(self) -> str:
        if self.stage != "jaxpr":
            return self.stage_text or ""
        d = self._drawn
        if not self.num_equations:
            return "\n".join([self._title(d.graph)] + d.notes)
        head = f"{self._title(d.graph)} ({self._summary(d.graph)})"
        extra = [t for t in (x.text() for x in self._results) if t]
        return "\n\n".join(["\n".join([to_text(d.graph, head)] +
                                       [f"note: {n}" for n in d.notes])] + extra)

    def _summary(self, g: G.Graph) -> str:
        collapsed = sum(1 for n in g.nodes.values() if n.kind == "call")
        parts = [f"{len(g.nodes)} nodes"]
        if collapsed:
            parts.append(f"{collapsed} nested jaxprs collapsed (--depth all, --expand NAME)")
        return ", ".join(parts)

    def save(self, path: str | Path) -> Path:
        """Write .svg, .dot or .txt, chosen by suffix."""
        path = Path(path)
        writers = {".svg": self.svg, ".dot": self.dot, ".txt": self.text}
        if path.suffix not in writers:
            raise ValueError(f"--save takes a .svg, .dot or .txt path, not {path.name!r}")
        if path.suffix == ".svg" and self.drawing is None:    # no program, or no renderer
            raise ValueError("no picture to save as SVG: " + "; ".join(self.notes))
        path.write_text(writers[path.suffix]())
        return path

    def formatted(self, fmt: str) -> Any:
        """What a magic displays for `--format svg|text|dot`."""
        if fmt == "svg":
            return self
        return _Plain(self.dot() if fmt == "dot" else self.text())

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        if self.stage != "jaxpr":
            body = (f'<pre style="{H.MONO};font-size:11px;max-height:480px;overflow:auto;'
                    f'white-space:pre;margin:0;color:{H.INK};background:{H.PANEL}">{H.esc(self.stage_text)}</pre>')
            title = f"{H.esc(self.func_name)} — {self.stage} ({len(self.stage_text or '')} chars)"
            return {"text/plain": visible(self.text()), "text/html": H.panel(body, title)}
        d = self._drawn
        if not self.num_equations:
            body = "".join(f'<div style="color:{H.INK}">{H.esc(n)}</div>' for n in d.notes)
            return {"text/plain": visible(self.text()),
                    "text/html": H.panel(body, H.esc(self._title(d.graph)))}
        # the picture carries the title (its PNG too, shown alone on GitHub)
        summary = H.esc(self._summary(d.graph))
        muted = f'<span style="font-weight:400;color:{H.MUTED}">'
        title = (f"{muted}{summary}</span>" if d.svg is not None else
                 f"{H.esc(self._title(d.graph))} {muted}({summary})</span>")
        note = H.esc(" · ".join(d.notes))
        if d.svg is not None:
            body = H.svg_img(layout.for_img(d.svg), f"jaxpr of {self.func_name}",
                             _svg_width(d.svg))
        else:
            body = (f'<pre style="{H.MONO};font-size:11px;max-height:480px;overflow:auto;'
                    f'margin:0;color:{H.INK};background:{H.PANEL}">{H.esc(to_text(d.graph))}</pre>'
                    f'<details><summary>DOT source</summary><pre style="{H.MONO};'
                    f'font-size:11px;color:{H.INK};background:{H.PANEL}">{H.esc(d.dot)}</pre></details>')
        # the tables of the overlays drawn: each `lines` overlay's and the fill's
        fill = self._fill
        side = "".join(x for x in (
            r.side_html(d.graph) for r in self._results
            if r is fill or r.draws != "fill") if x)
        if side:
            body = _with_tables(body, side, d.svg)
        bundle = {"text/plain": visible(self.text()), "text/html": H.panel(body, title, note)}
        if d.png is not None:
            # for GitHub's viewer: JupyterLab (trusted or not), Notebook 7, VS Code and
            # nbconvert show the text/html, whose <img> cannot point at these bytes
            bundle["image/png"] = d.png
        return bundle

    def __repr__(self) -> str:
        return f"<JaxprView {self.func_name}: {G.equations(self.num_equations)}>"


def _with_tables(picture: str, tables: str, svg: bytes | None) -> str:
    """The overlays' tables beside a short picture, under a tall one at the cell's width:
    beside a tall picture (or the explorer's scroll box drawn in its place) they stood in
    a third of the width, wrapped row by row, the width under them blank. Wrapped under
    a short picture that needs the width to stay legible, they take the width too."""
    height = (layout.svg_height_pt(svg) or 0) * 4 / 3 if svg is not None else 0
    if height > TALL_PX:
        return f'{picture}<div style="margin-top:10px">{tables}</div>'
    natural = (_svg_width(svg) if svg is not None else None) or 480
    return (f'<div style="display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start">'
            f'<div style="flex:1 1 {min(natural, 1100):.0f}px;min-width:0">{picture}</div>'
            f'<div style="flex:1 1 440px;min-width:300px">{tables}</div></div>')


def _over(below: dict, above: dict) -> dict:
    """A `lines` overlay's marks over those below: its fill where it gives one, its line
    first, outlined where either outlines."""
    out = dict(below)
    for i, (fill, line, emphasised) in above.items():
        under, figures, outlined = out.get(i, ("", "", False))
        out[i] = (fill or under, "\n".join(x for x in (line, figures) if x),
                  emphasised or outlined)
    return out


def _text_px(svg: bytes) -> float:
    """The drawing's smallest text on screen when scaled to the cell width."""
    return S.Size((_svg_width(svg) or 0) * 3 / 4, 0).text_px()


def _kept(cache: dict, key: Any, make: Any) -> Any:
    """`cache[key]`, made once; past `KEPT_LAYOUTS` entries the oldest go first."""
    if key not in cache:
        if len(cache) >= KEPT_LAYOUTS:
            del cache[next(iter(cache))]
        cache[key] = make()
    return cache[key]


def _svg_width(svg: bytes) -> float | None:
    """The natural width of a Graphviz SVG in CSS pixels (it writes points)."""
    width = layout.svg_width_pt(svg)
    return width * 4 / 3 if width is not None else None


class _Plain:
    def __init__(self, text: str):
        self._text = text

    def __repr__(self) -> str:
        return self._text

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": visible(self._text)}
