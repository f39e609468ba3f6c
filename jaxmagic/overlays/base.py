"""The overlay protocol (see the package's doc): `Overlay`, its `Flag`s, and the
`Context` the pipeline hands each overlay's `prepare` and `compute`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

TRACE, ANALYSIS, RUN = "trace", "analysis", "run"   # what an overlay needs


@dataclass(frozen=True)
class Flag:
    """`--NAME` (a switch of `%jaxpr`) and its help text."""
    name: str
    help: str

    @property
    def option(self) -> str:
        return f"--{self.name}"

    @property
    def dest(self) -> str:
        """Its attribute on the magic's parsed arguments."""
        return self.name.replace("-", "_")


@dataclass
class Context:
    """What one `%jaxpr` call's overlays share: the traced call, the graph once built,
    the one analysis compile, and the results computed so far (by view attribute)."""
    traced: Any
    stage: str = "jaxpr"
    settings: dict = field(default_factory=dict)  # per overlay attr: its settings, filled in
    graph_options: dict = field(default_factory=dict)    # graph.build's, from `prepare`
    graph: Any = None
    results: dict = field(default_factory=dict)
    compiled: Any = None      # the analysis compile, once made (`analysis()`)
    shared: dict = field(default_factory=dict)   # what a `prepare` leaves its `compute`,
    #                                 and an overlay those after it (`--profile` its times)

    def analysis(self) -> Any:
        """The analysis compile (`core.compiled.analysis.analyze`), made once and shared:
        `--sharding` and `--memory` read the same one. Raises where it cannot be made."""
        if self.compiled is None:
            from ..core.compiled.analysis import analyze

            self.compiled = analyze(self.traced)
        return self.compiled

    def setting(self, overlay: str, name: str) -> Any:
        """The setting `name` of the overlay `overlay` (its attr): as the caller gave it,
        else the overlay's default."""
        return self.settings[overlay][name]


@dataclass(frozen=True)
class Overlay:
    """One analysis drawn over the graph: see the package's doc."""
    attr: str                                  # the view attribute holding its result
    flags: tuple[Flag, ...]
    compute: Callable[[Context, str], Any]     # (context, the flag given) → result or None
    needs: frozenset[str] = frozenset({TRACE})
    prepare: Callable[[Context, str], None] | None = None
    after: tuple[str, ...] = ()                # attrs whose results `compute` reads
    settings: Mapping[str, Any] = field(default_factory=dict)   # its own, with defaults
    # (a budget): the caller's `settings={attr: {name: value}}` replace them

    def given(self, names) -> str | None:
        """Of this overlay's flags in `names`, the last it lists; None when none is."""
        return next((f.name for f in reversed(self.flags) if f.name in names), None)
