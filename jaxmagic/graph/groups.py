"""The call tree's groups settled after the walk (`build` runs these in its order): a
library call that called the user's code back drawn as what it calls, a named scope
around one call merged with it, pmap's own plumbing dropped, unused constants and calls
making nothing dropped, calls named and numbered, the traced function's own call made
context. Each works on the `Draft` alone: none reads the jaxpr.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import replace

from ..core import calltree
from .model import Cluster, Draft, Edge, Node, ancestors


def drop_unused(b: Draft, linked: set[int]) -> list[Node]:
    """Drop the constants nothing uses, and return them: equations that read no value
    and whose values nothing reads, such as the zeros a relu's jvp makes and its backward
    pass never reads, one per layer, each a box beside the model with no edge in or out
    (ResNet50: 49). XLA removes them. One with effects stays, and so does a group that
    holds nothing else: it is the call the user made."""
    unused = {i for i, n in b.nodes.items()
              if n.kind == "op" and i not in linked and i not in b.effectful}
    alive = {c for n in b.nodes.values() if n.id not in unused
             for c in ancestors(b, n.cluster)}
    unused = {i for i in unused if b.nodes[i].cluster in alive | {None}}
    for c, items in b.order.items():
        b.order[c] = [x for x in items if not (x[0] == "n" and x[1] in unused)]
    return [b.nodes.pop(i) for i in sorted(unused)]


def drop_empty(b: Draft, linked: set[int]) -> list[str]:
    """Drop the calls that hold no equation and pass nothing through, and return their
    titles: a U-Net's upsample by 1, a `jit: relu` the gradient of a scan leaves behind.
    Each was a box of "0 equations" with no edge, a column of its own beside the model.
    (An empty body that passes a value on, a `cond` branch, stays.)"""
    idle = {i for i, n in b.nodes.items() if n.kind == "port" and i not in linked}
    holding = {a for n in b.nodes.values() if n.id not in idle
               for a in ancestors(b, n.cluster)}
    empty = [c for c in b.clusters if c not in holding]
    for i in [i for i in idle if b.nodes[i].cluster in empty]:
        del b.nodes[i]
    for c in empty:
        b.order.pop(c, None)
    for c, items in b.order.items():
        b.order[c] = [x for x in items if not (x[0] == "c" and x[1] in empty)]
    titles = [b.clusters[c].title for c in empty if b.clusters[c].parent not in empty]
    for c in empty:
        del b.clusters[c]
    return list(dict.fromkeys(titles))      # a call and its backward pass: one name


def constants_note(constants: list[str], most: int = 3) -> str:
    shown = ", ".join(constants[:most]) + (f", and {len(constants) - most} more"
                                           if len(constants) > most else "")
    return (f"{len(constants)} result{'s' if len(constants) > 1 else ''} "
            f"{'are constants' if len(constants) > 1 else 'is a constant'}, not drawn: {shown}")


def name_calls(b: Draft) -> None:
    """`layer #3` where a parent calls `layer` more than once (in either pass: a frozen
    layer's backward twin keeps its forward's number), else `layer`. The number
    is the call's own (the k-th call of `layer` in its caller) unless two siblings share
    it, having come from different callers drawn as no group of their own (a library
    call drawn as what it calls): then they are numbered in the order they run."""
    siblings: dict[tuple, list[Cluster]] = defaultdict(list)
    for c in sorted(b.clusters.values(), key=lambda c: c.id):     # in walk order
        if c.kind == "scope":
            siblings[c.parent, c.label, c.backward].append(c)

    # a call's callers' names before any is renamed: the same for its backward twin
    path = {c.id: tuple(b.clusters[a].title for a in ancestors(b, c.parent)) + (c.label,)
            for same in siblings.values() for c in same}
    numbered = {path[same[0].id] for same in siblings.values() if len(same) > 1}
    for same in siblings.values():
        c = same[0]
        if len(same) == 1 and not (path[c.id] in numbered and calltree.parse(c.title)):
            c.title = c.label
        elif len({c.title for c in same}) < len(same) and \
                all(calltree.parse(c.title) for c in same):     # calls, not repeats
            for k, c in enumerate(same):
                c.title = calltree.scope_name(c.label, k)
    for c in b.clusters.values():
        if c.backward:
            c.title += " · backward"


def root_level(b: Draft) -> None:
    """The traced function's own call (and its backward pass) is context, not a level:
    depth 0 shows what it calls."""
    top = [x for x in b.order[None] if x[0] == "c" or b.nodes[x[1]].kind not in
           ("input", "output", "const")]
    labels = {b.clusters[i].label if kind == "c" and b.clusters[i].kind == "scope" else None
              for kind, i in top}
    if len(labels) == 1 and None not in labels:
        for c in b.clusters.values():
            c.level -= 1


def unwrap(b: Draft) -> None:
    """A library call that called the user's code back is drawn as what it calls where
    that is its work (`nnx.value_and_grad(loss_fn)`, Linen's `model.apply`, Haiku's
    `apply`: the user's calls hold at least half its equations); otherwise it is a step of
    its own (an optimizer's update calling a learning-rate schedule) and stays one group,
    the user's code drawn inside it. Innermost first, so a wrapper inside another counts
    as the calls it is drawn as."""
    ops: Counter = Counter()
    for n in b.nodes.values():
        if n.kind == "op":
            ops[n.cluster] += 1
    children: dict[int | None, list[int]] = defaultdict(list)
    for c in b.clusters.values():
        children[c.parent].append(c.id)

    def total(c: int) -> int:
        return ops[c] + sum(total(k) for k in children[c])

    def called_back(c: int) -> int:
        """Equations in the outermost recorded calls of the user's code below `c`."""
        out = 0
        for k in children[c]:
            x = b.clusters[k]
            if x.kind == "scope" and calltree.parse(x.title) and k not in b.wrapping:
                out += total(k)
            else:
                out += called_back(k)
        return out

    for c in sorted(b.wrapping, key=lambda c: -c):
        if c not in b.clusters or 2 * called_back(c) < total(c):
            continue
        outer = b.clusters[c].parent
        items = b.order[outer]
        at = items.index(("c", c))
        items[at:at + 1] = b.order.pop(c, [])
        for k in children.pop(c, []):
            children[outer].append(k)
        children[outer].remove(c)
        ops[outer] += ops.pop(c, 0)
        _absorb(b, c, outer)
    b.wrapping &= set(b.clusters)


def merge_lone_calls(b: Draft) -> None:
    """A named scope that holds nothing but one module's call (Linen's
    `encoderdecoderblock_0` around an `EncoderDecoder1DBlock`) is one group, named as the
    scope and marked with the module: two nested boxes of one call say nothing more."""
    for outer in sorted(b.clusters.values(), key=lambda c: -c.id):
        inner = b.order[outer.id]
        if outer.kind != "scope" or outer.detail != ("named scope",) or len(inner) != 1 or \
                inner[0][0] != "c" or b.clusters[inner[0][1]].kind != "scope" or \
                b.clusters[inner[0][1]].detail:
            continue
        call = b.clusters[inner[0][1]]
        outer.detail, outer.site = (call.label,), call.site
        b.order[outer.id] = b.order.pop(call.id)
        _absorb(b, call.id, outer.id)


def as_pmap(b: Draft, name: str, results: set) -> dict[int, int]:
    """Newer JAX runs `jax.pmap(f)` as a jit of a shard_map of f (`jit: _fun ›
    shard_map`): one group `pmap: f`, the shard_map's mesh and specs its detail, so the
    automatic depth opens f's body, not JAX's implementation, and without the device
    axis it squeezes and puts back (`_unplumbed`: what it returns)."""
    calls = [i for kind, i in b.order[None] if kind == "c"]
    if len(calls) != 1 or b.clusters[calls[0]].kind != "jit":
        return {}
    outer = b.clusters[calls[0]]
    inner = [i for kind, i in b.order[outer.id] if kind == "c"]
    if len(inner) != 1 or b.clusters[inner[0]].kind != "shard_map" or \
            any(kind == "n" and b.nodes[i].kind == "op" for kind, i in b.order[outer.id]):
        return {}
    shard = b.clusters[inner[0]]
    moved = _unplumbed(b, shard.id, results)
    outer.kind, outer.title, outer.label, outer.detail = \
        "pmap", f"pmap: {name}", f"pmap: {name}", shard.detail
    b.order[outer.id] = [x for x in b.order[outer.id] if x != ("c", shard.id)] + \
        b.order.pop(shard.id)
    _absorb(b, shard.id, outer.id)
    # the pmapped function's own call (and its backward pass) is the pmap group itself,
    # as a traced function's is the picture (`unroot`) and a jit's is the jit: opened
    # like the same body under `vmap(axis_name=…)`, not a box with an edge to its
    # backward and one back
    calls = [i for kind, i in b.order[outer.id] if kind == "c"]
    labels = {calltree.parse(b.clusters[i].title) and b.clusters[i].label
              if b.clusters[i].kind == "scope" else None for i in calls}
    if len(labels) == 1 and None not in labels:
        for i in calls:
            items = b.order[outer.id]
            at = items.index(("c", i))
            items[at:at + 1] = b.order.pop(i, [])
            _absorb(b, i, outer.id)
    return moved


_BROADCAST = re.compile(r"broadcast dimensions \(([\d,]*)\)")


def _unplumbed(b: Draft, shard: int, results: set) -> dict[int, int]:
    """Drop what pmap over shard_map adds to the function: each argument's device axis
    squeezed on the way in and put back on each of the `results` (nodes) on the way out
    (603 `squeeze` and 601 `broadcast_in_dim` of a Haiku ResNet50 step: two boxes of
    "library code" with an edge to every layer). The user wrote none of it, and
    `xla_pmap` (JAX 0.7) had none. An edge through one is joined into one past it;
    returns dropped result → the node the result now comes from."""
    inside = {i for i, n in b.nodes.items() if n.cluster == shard}
    ins: dict[int, list[Edge]] = defaultdict(list)
    used = set()
    for e in b.edges:
        ins[e.dst].append(e)
        used.add(e.src)

    def plumbing(i: int) -> bool:
        n = b.nodes[i]
        if n.kind != "op" or len(ins[i]) != 1:
            return False
        if n.primitive == "squeeze":      # the device axis, of an argument
            return n.detail[:1] == ("dimensions (0)",) and ins[i][0].src not in inside
        m = _BROADCAST.fullmatch(n.detail[0]) if n.detail else None
        if n.primitive != "broadcast_in_dim" or m is None or i not in results or i in used:
            return False
        dims = [int(d) for d in m.group(1).split(",") if d]    # a result's own axes, after
        return dims == list(range(1, len(dims) + 1))           # the device axis put back

    dropped = {i for i in inside if plumbing(i)}

    def source(i: int) -> int:
        while i in dropped:               # an argument returned as it came: through both
            i = ins[i][0].src
        return i

    b.edges = [replace(e, src=source(e.src)) if e.src in dropped else e
               for e in b.edges if e.dst not in dropped]
    for i in dropped:
        del b.nodes[i]
    b.order[shard] = [x for x in b.order[shard] if not (x[0] == "n" and x[1] in dropped)]
    return {i: source(i) for i in dropped}


def _absorb(b: Draft, inner: int, outer: int) -> None:
    """Dissolve cluster `inner` into its parent `outer`, whose `order` already lists what
    `inner` held: its nodes and child clusters become `outer`'s, everything below it one
    level up. Found through `order`, not by a walk over the whole graph: a ResNet50 step
    dissolves 245 clusters among 8,000 nodes."""
    todo = []
    for kind, i in b.order[outer]:
        if kind == "n" and b.nodes[i].cluster == inner:
            b.nodes[i].cluster = outer
        elif kind == "c" and b.clusters[i].parent == inner:
            b.clusters[i].parent = outer
            todo.append(i)
    while todo:
        c = todo.pop()
        b.clusters[c].level -= 1
        todo.extend(i for kind, i in b.order.get(c, ()) if kind == "c")
    del b.clusters[inner]
