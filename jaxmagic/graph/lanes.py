"""The per-leaf copies of a tree map folded: an optimizer updates every parameter leaf
with the same few operations, drawn once, ×N leaves. Told apart from a loop's layers
(each block fed by the one before), which `repeats` folds instead.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from .merge import contract
from .model import Graph, Node


def lanes(g: Graph, longest: int = 12) -> Graph:
    """Fold the per-leaf copies of a tree map: a run of `N` consecutive blocks of the
    same operations in one group (shapes may differ), with no edge between blocks and
    each block feeding results of its own, is drawn as its first block marked ×N leaves
    (an optimizer updates every parameter leaf with the same few operations); so is a
    sum over an argument's leaves, blocks joined only by a running total, each on
    leaves of its own (a weight decay's `sum(jnp.sum(x ** 2) for x in leaves)`). Edges
    between folded nodes lose their labels: the shapes differ per leaf."""
    reach = _outputs_reached(g)
    groups: dict[int | None, list[Node]] = defaultdict(list)
    for i in sorted(g.nodes):
        if g.nodes[i].kind == "op":
            groups[g.nodes[i].cluster].append(g.nodes[i])
    succ: dict[int, set[int]] = defaultdict(set)
    pred: dict[int, set[int]] = defaultdict(set)
    for e in g.edges:
        succ[e.src].add(e.dst)
        pred[e.dst].add(e.src)
    args = {i for i, n in g.nodes.items() if n.kind == "input"}
    alias: dict[int, int] = {}
    copies: dict[int, int] = {}
    for ops in groups.values():
        scan = _Scan(ops, succ, pred, reach, args)
        i = 0
        while i < len(ops):
            p, n = scan.run(i, longest)
            for k in range(1, n):
                alias.update((m.id, f.id) for m, f in zip(ops[i + k * p: i + k * p + p],
                                                          ops[i: i + p]))
            copies.update((f.id, n) for f in ops[i: i + p] if n > 1)
            i += p * n if n > 1 else 1
    if not alias:
        return g

    def make(key: int, members: list[Node]) -> Node:
        first = g.nodes[key]
        return replace(first, detail=first.detail + (f"×{copies[key]} leaves",),
                       count=sum(m.count for m in members))

    out = contract(g, lambda n: alias.get(n.id, n.id if n.id in copies else None), make)
    folded = {i for i, n in out.nodes.items() if n.detail and n.detail[-1].endswith(" leaves")
              and n.kind == "op"}
    out.edges = [replace(e, label="") if e.src in folded and e.dst in folded else e
                 for e in out.edges]
    return out


class _Scan:
    """One group's operations in order, for `lanes`: their titles, where each one's
    results go (positions in the group), and the runs of equal blocks counted so far."""

    def __init__(self, ops: list[Node], succ: dict, pred: dict, reach: dict, args: set):
        self.ops, self.succ, self.pred, self.reach, self.args = ops, succ, pred, reach, args
        self.titles = [o.title for o in ops]
        at = {o.id: k for k, o in enumerate(ops)}
        self.to = [[at[j] for j in succ[o.id] if j in at] for o in ops]
        self.copies: dict[tuple[int, int, bool], int] = {}    # (start, period, summed)

    def run(self, i: int, longest: int) -> tuple[int, int]:
        """(period, copies) of the longest run of equal blocks starting at i: independent
        or a sum (`_summed`); never a chain, each block fed by the one before (a layer
        loop)."""
        best = (1, 1)
        for p in range(1, min(longest, len(self.ops) - i) + 1):
            for summed in (False, True):
                n = self._count(i, p, summed)
                if n > 1 and p * n > best[0] * best[1] and \
                        (self._summed(i, p, n) if summed else self._independent(i, p, n)):
                    best = (p, n)
        return best

    def _count(self, i: int, p: int, summed: bool) -> int:
        """How many equal blocks of `p` follow on from i, each not fed by the one before
        (`summed`: but through its running total); counted once per start and period (a
        run from i is one block more than the run from i + p), so scanning every start
        costs linear time, not quadratic."""
        chain = []
        while (i, p, summed) not in self.copies:
            if not (self._totalled(i, p) if summed else self._copied(i, p)):
                self.copies[i, p, summed] = 1
                break
            chain.append(i)
            i += p
        n = self.copies[i, p, summed]
        for start in reversed(chain):
            n += 1
            self.copies[start, p, summed] = n
        return n

    def _copied(self, i: int, p: int) -> bool:
        """Whether the block at i is followed by an equal one it does not feed."""
        return self.titles[i + p: i + 2 * p] == self.titles[i: i + p] and not self._feeds(i, p)

    def _total(self, start: int, p: int) -> int | None:
        """The position in its block of the running total the block at `start` passes
        to the next, if that is all it passes on: one edge, to the same position."""
        links = [(q, t) for q in range(start, start + p) for t in self.to[q]
                 if start + p <= t < start + 2 * p]
        if len(links) == 1 and links[0][1] - links[0][0] == p:
            return links[0][0] - start
        return None

    def _totalled(self, i: int, p: int) -> bool:
        """Whether the block at i passes only its running total to an equal one (the
        total's own operation may differ by its constant: a sum starts at `0 + x`)."""
        j = self._total(i, p)
        if j is None:
            return False
        a, b = self.titles[i: i + p], self.titles[i + p: i + 2 * p]
        return len(b) == p and a[:j] + a[j + 1:] == b[:j] + b[j + 1:] \
            and a[j].split(" · ")[0] == b[j].split(" · ")[0]

    def _summed(self, i: int, p: int, n: int) -> bool:
        """Blocks joined only by one running total (the same position in each; every
        total but the last used by the next alone), each working on leaves of its own
        before adding: arguments, none shared (not `q * k * v`, terms multiplied as
        they come, nor the three terms of `x`'s gradient through `x @ wq`, `x @ wk`,
        `x @ wv`, each made from the step's values; so no block is fed by another)."""
        j = self._total(i, p)
        if p < 2 or any(self._total(i + k * p, p) != j for k in range(n - 1)):
            return False
        run = {o.id for o in self.ops[i: i + n * p]}
        if any(self.succ[self.ops[i + k * p + j].id] != {self.ops[i + (k + 1) * p + j].id}
               for k in range(n - 1)):
            return False
        leaves = [{s for o in self.ops[i + k * p: i + k * p + p] for s in self.pred[o.id]
                   if s not in run} for k in range(n)]
        return all(mine and mine <= self.args for mine in leaves) and \
            len(set().union(*leaves)) == sum(map(len, leaves))

    def _feeds(self, start: int, p: int) -> bool:
        """Whether the block at `start` (p long) feeds the one after it."""
        end = start + 2 * p
        return any(start + p <= t < end for q in range(start, start + p) for t in self.to[q])

    def _independent(self, i: int, p: int, n: int) -> bool:
        """No edge between the blocks, and each reaches results no other block reaches.
        The results first, block by block: two blocks of a chain (a backward pass's
        layers) share theirs at once, and a run of fifty is refused after two blocks."""
        seen = 0
        for k in range(n):
            mine = 0
            for o in self.ops[i + k * p: i + k * p + p]:
                mine |= self.reach[o.id]
            if not mine or mine & seen:
                return False
            seen |= mine
        end = i + n * p
        return not any(i <= t < end and (t - i) // p != (q - i) // p
                       for q in range(i, end) for t in self.to[q])


def _outputs_reached(g: Graph) -> dict[int, int]:
    """Per node, the results it flows into (outputs, and values nothing uses: a state
    update that `nnx.jit` writes back), as a bit set."""
    succ: dict[int, list[int]] = defaultdict(list)
    indeg = {i: 0 for i in g.nodes}
    for e in g.edges:
        succ[e.src].append(e.dst)
        indeg[e.dst] += 1
    order, ready = [], [i for i, d in indeg.items() if d == 0]
    while ready:
        i = ready.pop()
        order.append(i)
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    outputs = [i for i, n in g.nodes.items() if n.kind == "output" or not succ[i]]
    reach = {i: 0 for i in g.nodes}
    for k, i in enumerate(outputs):
        reach[i] = 1 << k
    for i in reversed(order):
        for j in succ[i]:
            reach[i] |= reach[j]
    return reach
