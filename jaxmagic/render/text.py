"""Graph model → plain text, for terminals and for when no renderer exists."""
from __future__ import annotations

import re

from ..graph.model import Graph


def to_text(g: Graph, title: str = "") -> str:
    """One line per node in build order (topological), indented by cluster nesting."""
    depth: dict = {}

    def level(cid) -> int:
        if cid is None or cid not in g.clusters:
            return 0
        if cid not in depth:
            depth[cid] = level(g.clusters[cid].parent) + 1
        return depth[cid]

    sources: dict[int, list[str]] = {}
    for e in g.edges:      # a resharded value says how: `v3 (P('x', None) → P(None, 'x'))`
        sources.setdefault(e.dst, []).append(f"v{e.src}" + (f" ({e.reshard})" if e.reshard
                                                              else ""))
    lines = [title] if title else []
    opened: list = []
    for n in g.nodes.values():
        chain = []
        c = n.cluster if n.cluster in g.clusters else None
        while c is not None:
            chain.append(c)
            c = g.clusters[c].parent
        chain.reverse()
        common = 0
        while common < min(len(chain), len(opened)) and chain[common] == opened[common]:
            common += 1
        for cid in chain[common:]:
            cl = g.clusters[cid]
            info = " · ".join(cl.detail)
            where = f"  @ {cl.where}" if cl.where else ""
            lines.append("  " * level(cl.parent) + f"┌ {cl.title}"
                         + (f" ({info})" if info else "") + where)
        opened = chain
        pad = "  " * len(chain)
        detail = f" [{'; '.join(n.detail)}]" if n.detail else ""
        ins = f" ← {', '.join(dict.fromkeys(sources.get(n.id, [])))}" if n.id in sources else ""
        where = f"  @ {n.where}" if n.where else ""
        mark = " ◆collective" if n.collective else ""
        lines.append(f"{pad}v{n.id} {n.kind:<6} {n.title}{detail}{ins}{mark}{where}")
    return "\n".join(lines)


_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """text/plain for terminals: control characters that came from names or messages
    (ESC, BEL, CR, ...) are shown as `\\x1b` instead of acting on the terminal; newlines
    and tabs are kept."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
