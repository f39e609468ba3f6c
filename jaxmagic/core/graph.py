"""A jaxpr as a graph: one node per equation, nested jaxprs as clusters.

`build` makes the full graph once (linear in the number of equations): the call tree's
groups, a call's backward pass as a group of its own, repeats marked by signature. What
is drawn of it (`collapse`, `fold`, `coarsen`, ...) is in `views`. Both work on plain
data, so renderers never touch JAX.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import linecache
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, NamedTuple

import numpy as np

from .. import _compat
from . import calltree, reshard
from .libraries import equinox
from .trace import Traced

COLLECTIVES = frozenset({
    "psum", "pmax", "pmin", "pmean", "psum2", "psum_invariant", "pbroadcast", "pvary",
    "all_gather", "all_gather_invariant", "all_to_all", "ppermute", "psum_scatter",
    "reduce_scatter", "axis_index", "pgather", "all_reduce",
})
# Named like collectives but move no data: a change of type under shard_map's check of
# which values vary over a manual axis (`pcast`/`pvary`), or the device's own index.
NO_DATA = frozenset({"pvary", "pbroadcast", "pcast", "axis_index"})

# Nested-jaxpr kinds, by primitive name, in JAX 0.7 to 0.12.
CALLS = {"pjit": "jit", "jit": "jit", "closed_call": "call", "core_call": "call",
          "custom_jvp_call": "custom_jvp", "custom_vjp_call": "custom_vjp",
          "custom_vjp_call_jaxpr": "custom_vjp", "remat2": "remat", "checkpoint": "remat",
          "remat": "remat", "shard_map": "shard_map", "custom_lin": "custom_lin",
          "linear_call": "linear_call", "xla_pmap": "pmap", "xla_call": "jit"}


def _jaxpr_params(eqn: Any) -> list:
    """An equation's parameters that hold jaxprs (a jaxpr, or a tuple of them)."""
    return [v for v in eqn.params.values() if isinstance(v, _compat.JAXPR_TYPES)
            or (isinstance(v, tuple) and v and isinstance(v[0], _compat.JAXPR_TYPES))]


def bodies(eqn: Any) -> list:
    """The sub-jaxprs `build` walks inside `eqn`, in its order; the walk order numbers
    equations (`Node.eqns`), so anything joined to them by index (`--values`) walks
    these too: a scan's body, a cond's branches, a while's cond then body, a call's
    first jaxpr."""
    p, prim = eqn.params, eqn.primitive.name
    if prim == "scan":
        return [p["jaxpr"]]
    if prim == "cond":
        return list(p["branches"])
    if prim == "while":
        return [p["cond_jaxpr"], p["body_jaxpr"]]
    subs = _jaxpr_params(eqn)
    return subs[:1] if subs and isinstance(subs[0], _compat.JAXPR_TYPES) else []


class Site(NamedTuple):
    """A user's line: its location (`Attention.__call__:9`), its source text (with the
    library frame behind it) and the file or notebook cell holding it."""
    where: str = ""
    source: str = ""
    file: str = ""


@dataclass
class Node:
    id: int
    kind: str                 # input | output | const | op | call | port | group
    title: str
    detail: tuple[str, ...] = ()
    where: str = ""           # "loss:12": the user's function and line
    source: str = ""          # the user's source line, for tooltips
    file: str = ""            # the file or cell holding that line
    cluster: int | None = None
    count: int = 1            # equations this node stands for
    collective: bool = False
    backward: bool = False
    primitive: str = ""
    signature: str = ""       # equal for the same operation / the same collapsed call
    eqns: tuple[int, ...] = ()  # walk-order indices of the equations this node stands for
    arg: str = ""             # an input's argument as written (`{'params': state.params}`)
    group: int | None = None  # a collapsed call: the cluster it stands for (opened by a click)


@dataclass
class Edge:
    src: int
    dst: int
    label: str = ""
    reshard: str = ""         # `P('data', None) → P('model', None)`: moved on its way
    value: tuple | None = None  # the value it carries: (equation, output), (-1, argument)


@dataclass
class Cluster:
    id: int
    kind: str                 # jit | scan | cond | branch | while | while_cond | while_body | ...
    title: str
    detail: tuple[str, ...]
    parent: int | None
    level: int                # nesting depth counted in expandable steps (1 = top level)
    where: str = ""
    source: str = ""
    num_equations: int = 0
    signature: str = ""       # equal for structurally identical sub-graphs
    backward: bool = False    # the backward pass of a call (its own group: acyclic)
    label: str = ""           # the call's name without its instance number
    repeat: int = 1           # a folded series: this cluster stands for `repeat` calls
    library: bool = False     # a call into a library's functions (`optimizer.update`)
    own_call: bool = False    # a jit whose function's own recorded call it is (`jit: f`)
    site: Site = Site()       # the user's line that calls it (`where` is drawn, this isn't)
    period: bool = False      # one period of a repeat of several calls (`a → b`), no call


@dataclass
class Graph:
    nodes: dict[int, Node]
    edges: list[Edge]
    clusters: dict[int, Cluster]
    num_equations: int
    notes: list[str] = field(default_factory=list)
    grouping: str = "equation"   # equation | line | function | phase
    # consecutive sibling calls of the same structure: member cluster → (first, index)
    series: dict[int, tuple[int, int]] = field(default_factory=dict)
    # clusters drawn open with their own equations as one box beside their calls
    whole: frozenset[int] = frozenset()
    by_line: frozenset[int] = frozenset()   # the open groups drawn with their lines grouped

    def expandable(self) -> list[str]:
        """Names accepted by --expand: the titles of clusters drawn as single nodes."""
        return sorted({c.title for c in self.clusters.values()})


def ancestors(g: Any, cluster: int | None) -> list[int]:
    """`cluster` and the groups around it, outermost first (empty for None); `g` a graph,
    or the builder making one."""
    chain = []
    while cluster is not None:
        chain.append(cluster)
        cluster = g.clusters[cluster].parent
    return chain[::-1]   # outermost first


# ---- labels ------------------------------------------------------------------------

def equations(n: int) -> str:
    return f"{n} equation" + ("" if n == 1 else "s")


_DTYPES = {"float": "f", "int": "i", "uint": "u", "complex": "c", "bfloat": "bf"}


_AVAL_TEXT: dict[Any, str] = {}


def aval_str(aval: Any) -> str:
    """`f32[16,64]`, as JAX prints avals in every jaxpr, from any shaped value: with the
    sharding its type carries on an Explicit mesh (`f32[8@X,4]`), its varying manual axes
    (`{V:i}`) and unreduced or reduced axes (`{U:X}`), as `jax.make_jaxpr` shows them."""
    try:
        return _AVAL_TEXT[aval]      # a 64-layer gradient prints 28,000 avals, 20 distinct
    except (KeyError, TypeError):
        text = _aval_text(aval)
    try:
        _AVAL_TEXT[aval] = text
    except TypeError:                # an unhashable aval
        pass
    return text


def _aval_text(aval: Any) -> str:
    if hasattr(aval, "str_short"):
        return _compat.typed_aval_str(aval)
    shape = getattr(aval, "shape", None)
    dtype = getattr(aval, "dtype", None)
    if shape is None or dtype is None:
        return type(aval).__name__
    name = np.dtype(dtype).name if not hasattr(dtype, "name") else dtype.name
    for long, short in sorted(_DTYPES.items(), key=lambda kv: -len(kv[0])):
        if name.startswith(long) and name[len(long):].isdigit():
            name = short + name[len(long):]
            break
    return f"{name}[{','.join(map(str, shape))}]"


def _short(value: Any, limit: int = 36) -> str:
    text = value.name if hasattr(value, "name") and not isinstance(value, str) else str(value)
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tup(v: Any) -> str:
    return "(" + ",".join(map(str, v)) + ")" if isinstance(v, (tuple, list)) else str(v)


def _params_detail(prim: str, p: dict) -> tuple[str, ...]:
    """The few parameters that tell what an equation does."""
    out: list[str] = []
    if prim == "dot_general":
        (lc, rc), (lb, rb) = p["dimension_numbers"]
        out.append(f"contract {_tup(lc)}·{_tup(rc)}")
        if lb:
            out.append(f"batch {_tup(lb)}·{_tup(rb)}")
    elif prim == "conv_general_dilated":
        out.append(f"stride {_tup(p['window_strides'])}")
        out.append("pad " + _short(p["padding"] if isinstance(p["padding"], str)
                                   else _tup(tuple(_tup(x) for x in p["padding"]))))
        for key in ("lhs_dilation", "rhs_dilation"):
            if any(d != 1 for d in p.get(key) or ()):
                out.append(f"{key.split('_')[0]} dilation {_tup(p[key])}")
        if p.get("feature_group_count", 1) != 1:
            out.append(f"groups {p['feature_group_count']}")
    elif prim in COLLECTIVES:
        axes = p.get("axes", p.get("axis_name"))
        out.append("axes " + _short(_tup(axes) if isinstance(axes, (tuple, list)) else axes))
        if prim == "ppermute":
            out.append("perm " + _short(p.get("perm")))
    elif "call_target_name" in p or "target_name" in p:
        out.append("target " + _short(p.get("call_target_name", p.get("target_name")), 48))
    elif "axes" in p and prim.startswith(("reduce", "arg", "cum")):
        out.append(f"axes {_tup(p['axes'])}")
    else:
        for key in ("dimensions", "permutation", "new_sizes", "broadcast_dimensions",
                    "dimension", "axis", "new_dtype", "y", "slice_sizes", "length"):
            if key in p and p[key] is not None:
                out.append(f"{key.replace('_', ' ')} {_short(_tup(p[key]))}")
                break
    return tuple(out)


def _literal(atom: Any) -> str:
    v = _compat.literal_value(atom)
    if np.ndim(v) == 0:
        v = np.asarray(v).item()
        return f"{v:.4g}" if isinstance(v, float) else str(v)
    return aval_str(atom.aval)


# ---- build -------------------------------------------------------------------------

def _beside_a_call(names: tuple[str, ...], i: int) -> bool:
    """names[i] is an Equinox layer's own scope next to the call tree's group for the call."""
    return equinox.is_layer_scope(names[i]) and any(
        0 <= j < len(names) and calltree.parse(names[j]) for j in (i - 1, i + 1))


def _within_its_like(names: tuple[str, ...], i: int) -> bool:
    """names[i] is a call inside another call of its kind: an `nnx.Sequential` in a block
    of an `nnx.Sequential`. The outer one called the user's blocks back and is drawn as
    them; the inner one, which calls library layers, stays a group, as where the block
    is called alone (`wrappers` names kinds of calls, not calls)."""
    label = calltree.parse(names[i])[0]
    return any((calltree.parse(n) or ("",))[0] == label for n in names[:i])


def _unrepeated(names: tuple[str, ...]) -> tuple[str, ...]:
    """A backward equation's scopes without the repeats a transpose adds: of the scope
    around it (inside a jit), or of the whole stack down to it (`f/g/transpose(f)/g/…`)."""
    for k in range(len(names) // 2, 1, -1):
        if names[:k] == names[k:2 * k]:
            names = names[k:]
            break
    return tuple(n for i, n in enumerate(names) if i == 0 or names[i - 1] != n)


def _within(names: tuple[str, ...], around: tuple[str, ...]) -> tuple[str, ...]:
    """An inner jaxpr's equation's scopes inside the equation that holds the jaxpr: JAX
    re-traces a scan's body to differentiate it, and what it re-traces inside a call
    there (`relu`'s custom_jvp) carries the scopes of that call's equation too (drawn
    `custom_jvp: relu › over_layers › dot_relu › jit: relu` inside `over_layers ›
    dot_relu`)."""
    return names[len(around):] if around and names[:len(around)] == around else names


def _names(eqn: Any) -> tuple[str, ...]:
    names = _compat.scope_names(eqn)
    return _unrepeated(names) if _compat.is_backward(eqn) else names


_LOOPS = {"scan": ("jaxpr",), "while": ("body_jaxpr", "cond_jaxpr")}


def _hoisted(eqns: list, stacks: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Each equation's scopes, with those JAX hoisted out of a loop's body (the
    loop-invariant part of a `scan` it splits when differentiating: Linen's `nn.RNN` and
    `nn.scan`, `nnx.scan`, Haiku's unrolls) put back inside the function that runs the
    loop. A hoisted equation keeps the scopes it had in the body, relative to the loop
    (`LSTMCell_0.scan_fn/hi`), so it stood at the top of the picture as an orphan group;
    it is known by a first scope that the body of a loop in the same jaxpr starts with
    and that the loop's own scopes do not."""
    loops = []
    for i, eqn in enumerate(eqns):
        keys = _LOOPS.get(eqn.primitive.name)
        if not keys:
            continue
        firsts = set()
        for k in keys:
            body = eqn.params.get(k)
            if body is not None:
                firsts.update(n[0] for n in map(_compat.scope_names,
                                                 _compat.open_jaxpr(body).eqns) if n)
        if firsts:
            loops.append((i, stacks[i], firsts))
    if not loops:
        return stacks
    out = list(stacks)
    for i, names in enumerate(stacks):
        if not names or eqns[i].primitive.name in _LOOPS:
            continue
        found = [(j, own) for j, own, firsts in loops if names[0] in firsts
                 and (not own or own[0] != names[0])]
        if found:      # the loop it feeds: the first after it, else the last before it
            after = [x for x in found if x[0] > i]
            out[i] = (after[0] if after else found[-1])[1] + names
    return out


class _Builder:
    def __init__(self, wrappers: frozenset[str] = frozenset(), sharding: bool = False,
                 types: dict | None = None, specs: dict | None = None,
                 library_calls: frozenset[str] = frozenset()) -> None:
        self.library_calls = library_calls
        self.wrappers = wrappers      # library calls that called the user's code back
        self.wrapping: set[int] = set()   # their clusters (`_unwrap` decides which stay)
        # edge labels: `f32[256,512]`, or with `sharding` the type as JAX prints it,
        # `f32[256@data,512]`, `f32[8,4]{V:i}`; `types`: the compiler's choice for values
        # whose type has none (an Auto mesh), by variable
        self.type_text = _compat.typed_aval_str if sharding else aval_str
        self.types = dict(types or {})
        self.specs = dict(specs or {})     # the mesh axes of each dimension, by variable
        self.sharding = sharding
        self.nodes: dict[int, Node] = {}
        self.edges: list[Edge] = []
        self.clusters: dict[int, Cluster] = {}
        self._next_cluster = self._next_node = 0
        self.num_equations = 0
        # what each cluster (None: the top) holds, in walk order: ("n", node) / ("c", cluster)
        self.order: dict[int | None, list[tuple[str, int]]] = defaultdict(list)
        self.first_eqn: dict[int, Any] = {}    # a scope's first equation: where it is called
        self.eqn_of: dict[int, Any] = {}       # an operation's node → its equation
        self.effectful: set[int] = set()        # nodes whose equations have effects
        self.is_library_file = calltree.library_test()
        self.around: list[tuple[str, ...]] = [()]   # the scopes of the equations walked

    def label_of(self, atom: Any) -> str:
        found = None if _compat.is_literal(atom) else self.types.get(atom)
        return found or self.type_text(atom.aval)

    def node(self, kind: str, title: str, cluster: int | None, **kw: Any) -> int:
        i = self._next_node         # not len(): dropped nodes leave gaps
        self._next_node += 1
        self.nodes[i] = Node(i, kind, title, cluster=cluster, **kw)
        self.order[cluster].append(("n", i))
        return i

    def cluster(self, kind: str, title: str, parent: int | None, level: int,
                detail: Iterable[str] = (), site: Site = Site(),
                signature: str = "", backward: bool = False, label: str = "") -> int:
        i = self._next_cluster      # not len(): merged clusters leave gaps
        self._next_cluster += 1
        self.clusters[i] = Cluster(i, kind, title, tuple(detail), parent, level, site.where,
                                   site.source, signature=signature, backward=backward,
                                   label=label or title, site=site)
        self.order[parent].append(("c", i))
        return i

    def spec_of(self, atom: Any) -> Any:
        """A value's sharding: its type's (an Explicit mesh), else the compiler's."""
        return reshard.aval_spec(atom.aval) or self.specs.get(atom)

    def edge(self, src: int, dst: int, label: str, reshard: str = "",
             value: tuple | None = None) -> None:
        self.edges.append(Edge(src, dst, label, reshard, value))

    # env maps a Var to the node that produces it (or a Literal standing for itself),
    # ("role", Var) to the part a nested jaxpr's input plays (carry, xs, …), and
    # ("value", Var) to the value it is (`Edge.value`: what `--values` summarised)
    def feed(self, atom: Any, env: dict, dst: int, moved: str = "") -> None:
        if _compat.is_literal(atom):
            return
        src = env.get(atom)
        if src is None or _compat.is_literal(src):
            return
        role = env.get(("role", atom), "")
        label = self.label_of(atom)
        self.edge(src, dst, f"{role} {label}" if role else label, moved,
                  env.get(("value", atom)))

    def walk(self, jaxpr: Any, env: dict, cluster: int | None, level: int,
             alias: str = "") -> None:
        """Walk equations; scopes (named scopes, recorded calls) become clusters, a call's
        backward pass a cluster of its own. `alias`: the function a jit cluster is named
        after, whose own call scope is that cluster (not a box inside it)."""
        scopes: dict[tuple, int | None] = {((), False): cluster, ((), True): cluster}
        own = [_names(eqn) for eqn in jaxpr.eqns]
        stacks = [_within(names, self.around[-1]) for names in own]
        for eqn, mine, names in zip(jaxpr.eqns, own, _hoisted(jaxpr.eqns, stacks)):
            backward = _compat.is_backward(eqn)
            parent = self._scope_cluster(scopes, names, backward, level, alias)
            if parent is not None:
                self.first_eqn.setdefault(parent, eqn)
            self.around.append(mine)
            self.equation(eqn, env, parent, self._level_of(parent, level), backward)
            self.around.pop()

    def _level_of(self, cluster: int | None, default: int) -> int:
        return self.clusters[cluster].level if cluster is not None else default

    def _scope_cluster(self, scopes: dict, names: tuple[str, ...], backward: bool,
                       level: int, alias: str) -> int | None:
        for k in range(1, len(names) + 1):
            key = (names[:k], backward)
            if key not in scopes:
                parent = scopes[(names[: k - 1], backward)]
                call = calltree.parse(names[k - 1])
                if call and k == 1 and call[0] == alias or \
                        not call and _beside_a_call(names, k - 1):
                    scopes[key] = parent
                    if call and parent is not None:
                        self.clusters[parent].own_call = True
                    continue
                if call and self._named_for(parent, call[0]):
                    scopes[key] = parent
                    self.clusters[parent].detail = ()     # a module call, not a bare scope
                    continue
                label = call[0] if call else names[k - 1]
                scopes[key] = self.cluster(
                    "scope", names[k - 1], parent, self._level_of(parent, level) + 1,
                    detail=() if call else ("named scope",), backward=backward, label=label)
                if call and call[0] in self.wrappers and not _within_its_like(names, k - 1):
                    self.wrapping.add(scopes[key])
                if call and call[0] in self.library_calls:
                    self.clusters[scopes[key]].library = True
        return scopes[(names, backward)]

    def _named_for(self, cluster: int | None, label: str) -> bool:
        """`cluster` is the name scope a library opened for this very call (Haiku names
        `linear_0` the scope of a `Linear`, Linen `Dense_0`): one group, not two."""
        c = self.clusters.get(cluster) if cluster is not None else None
        return c is not None and c.detail in ((), ("named scope",)) and c.kind == "scope" \
            and calltree.parse(c.title) is None and \
            re.sub(r"_\d+$", "", c.label).replace("_", "").lower() == label.lower()

    def equation(self, eqn: Any, env: dict, parent: int | None, level: int,
                 backward: bool) -> None:
        index = self.num_equations
        self.num_equations += 1
        prim = eqn.primitive.name
        site = _where(eqn, self.is_library_file)
        kind = CALLS.get(prim)
        subs = bodies(eqn)
        loop = {"scan": self.scan, "cond": self.cond, "while": self.while_}.get(prim)
        if loop is not None:
            loop(eqn, env, parent, level, site)
            for k, v in enumerate(eqn.outvars):     # its own values, not its body's
                env[("value", v)] = (index, k)
            return
        if kind or _jaxpr_params(eqn):
            return self.call(eqn, kind or prim, env, parent, level, site, subs)
        lits = [a for a in eqn.invars if _compat.is_literal(a)]
        title = _compat.user_primitive_name(prim) + (
            " · " + ", ".join(map(_literal, lits)) if lits else "")
        # a constant is no part of the structure: the layers of a Linen model differ in
        # the salt each folds into its dropout key, and are still one layer ×4; a loop's
        # first iteration adds its loss to the Python float `0.0`, later ones to an array;
        # nor is the width it is handed (a loop's first `Dense` reads the embedding). How it
        # works is: a 4×4 stride-2 conv is no repeat of a 3×3 stride-1 one of the same
        # result (Haiku's VQ-VAE encoder)
        detail = _params_detail(prim, eqn.params)
        shape = ",".join(aval_str(v.aval) for v in eqn.outvars) + " " + " ".join(detail)
        if self.sharding and eqn.outvars:
            # the result's sharding on the node: an edge between groups has no label
            detail += ("→ " + self.label_of(eqn.outvars[0]),)
        n = self.node("op", title, parent, detail=detail,
                      where=site.where, source=site.source, file=site.file,
                      collective=prim in COLLECTIVES and prim not in NO_DATA,
                      backward=backward, primitive=prim, eqns=(index,),
                      signature=f"{prim}:{shape}")
        self.eqn_of[n] = eqn
        if _compat.has_effects(eqn):
            self.effectful.add(n)
        result = self.spec_of(eqn.outvars[0]) if self.sharding and eqn.outvars else None
        for k, a in enumerate(eqn.invars):
            moved = "" if result is None or _compat.is_literal(a) else \
                reshard.change(eqn, k, result, self.spec_of(a))
            self.feed(a, env, n, moved)
        for k, v in enumerate(eqn.outvars):
            env[v] = n
            env[("value", v)] = (index, k)

    def _inner(self, sub: Any, outer_atoms: list, env: dict, cluster: int, level: int,
               roles: list[str] | None = None, alias: str = "") -> dict:
        """Walk `sub` inside `cluster`, its inputs fed by `outer_atoms`; return its env."""
        inner = _compat.open_jaxpr(sub)
        ienv: dict = {}
        for v, c in zip(inner.constvars, _compat.consts_of(sub)):
            ienv[v] = self.node("const", f"const {aval_str(v.aval)}", cluster)
        for i, (v, a) in enumerate(zip(inner.invars, outer_atoms)):
            ienv[v] = a if _compat.is_literal(a) else env.get(a)
            if not _compat.is_literal(a):
                ienv[("value", v)] = env.get(("value", a))
            if not _compat.is_literal(a) and a in self.types:   # the same value inside
                self.types.setdefault(v, self.types[a])
            if not _compat.is_literal(a) and a in self.specs:
                self.specs.setdefault(v, self.specs[a])
            if roles:
                ienv[("role", v)] = roles[i]
        self.walk(inner, ienv, cluster, level, alias)
        if not inner.eqns:   # an empty body still shows as a box
            self.node("port", "pass-through", cluster)
        return ienv

    def _outputs(self, eqn: Any, sub_outs: list, ienv: dict, env: dict, cluster: int) -> None:
        for v, o in zip(eqn.outvars, sub_outs):
            if _compat.is_literal(o):
                env[v] = self.node("const", _literal(o), cluster)
            else:
                env[v] = ienv.get(o)
                env[("value", v)] = ienv.get(("value", o))

    def call(self, eqn, kind, env, parent, level, site, subs) -> None:
        p = eqn.params
        name = p.get("name") or _func_name(subs[0] if subs else None)
        title = f"{kind}: {name}" if name else kind
        detail: tuple[str, ...] = ()
        if kind == "shard_map":
            mesh, ins, outs = _compat.shard_map_specs(p)
            shape = getattr(mesh, "shape", {}) or {}
            detail = ("mesh " + " ".join(f"{k}={v}" for k, v in dict(shape).items()),
                      "in " + _short(_specs(ins), 48), "out " + _short(_specs(outs), 48))
            title = "shard_map"
        sub = subs[0] if subs else None
        if sub is None:
            return
        c = self.cluster(kind, title, parent, level + 1, detail, site,
                         backward=_compat.is_backward(eqn))
        ienv = self._inner(sub, list(eqn.invars), env, c, level + 1, alias=name or "")
        self._outputs(eqn, list(_compat.open_jaxpr(sub).outvars), ienv, env, c)

    def scan(self, eqn, env, parent, level, site) -> None:
        p = eqn.params
        nconsts, ncarry = _compat.scan_counts(p)
        nxs = len(eqn.invars) - nconsts - ncarry
        roles = ["const"] * nconsts + ["carry"] * ncarry + ["xs"] * nxs
        detail = (f"length {p['length']}" + (", reverse" if p.get("reverse") else ""),
                  f"consts {nconsts} · carry {ncarry} · xs {nxs}")
        c = self.cluster("scan", f"scan ×{p['length']}", parent, level + 1, detail, site,
                         backward=_compat.is_backward(eqn), label="scan")
        ienv = self._inner(p["jaxpr"], list(eqn.invars), env, c, level + 1, roles)
        self._outputs(eqn, list(_compat.open_jaxpr(p["jaxpr"]).outvars), ienv, env, c)

    def cond(self, eqn, env, parent, level, site) -> None:
        branches = eqn.params["branches"]
        c = self.cluster("cond", "cond", parent, level + 1, (f"{len(branches)} branches",),
                         site, backward=_compat.is_backward(eqn))
        index = self.node("port", "index", c, where=site.where, source=site.source,
                          file=site.file)
        self.feed(eqn.invars[0], env, index)
        merge = self.node("port", "merge", c)
        for i, br in enumerate(branches):
            label = ("false", "true")[i] if len(branches) == 2 else str(i)
            b = self.cluster("branch", f"branch {label}", c, level + 1)
            ienv = self._inner(br, list(eqn.invars[1:]), env, b, level + 1)
            self.edge(index, next(iter(self._first_nodes(b))), "")
            for o in _compat.open_jaxpr(br).outvars:
                self._result(o, ienv, merge, self.label_of(o))
        for v in eqn.outvars:
            env[v] = merge

    def while_(self, eqn, env, parent, level, site) -> None:
        p = eqn.params
        nc, nb = p["cond_nconsts"], p["body_nconsts"]
        ins = list(eqn.invars)
        cconsts, bconsts, init = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
        c = self.cluster("while", "while", parent, level + 1, (f"carry {len(init)}",),
                         site, backward=_compat.is_backward(eqn))
        merge = self.node("port", "carry out", c)
        cc = self.cluster("while_cond", "cond", c, level + 1)
        cenv = self._inner(p["cond_jaxpr"], cconsts + init, env, cc, level + 1,
                           ["const"] * nc + ["carry"] * len(init))
        bb = self.cluster("while_body", "body", c, level + 1)
        benv = self._inner(p["body_jaxpr"], bconsts + init, env, bb, level + 1,
                           ["const"] * nb + ["carry"] * len(init))
        for o in _compat.open_jaxpr(p["cond_jaxpr"]).outvars:
            self._result(o, cenv, merge, "continue?")
        for o in _compat.open_jaxpr(p["body_jaxpr"]).outvars:
            self._result(o, benv, merge, self.label_of(o))
        for v in eqn.outvars:
            env[v] = merge

    def _result(self, out: Any, ienv: dict, dst: int, label: str) -> None:
        """An edge from the node producing a nested jaxpr's result `out`, if a node does:
        a literal, or an input bound to a Python constant (`cond(p, f, g, x, -0.1)`),
        has none."""
        src = None if _compat.is_literal(out) else ienv.get(out)
        if src is not None and not _compat.is_literal(src):
            self.edge(src, dst, label, value=ienv.get(("value", out)))

    def _first_nodes(self, cluster: int) -> list[int]:
        inside = [n.id for n in self.nodes.values() if n.cluster == cluster]
        return inside[:1] or [self.node("port", "pass-through", cluster)]


def _func_name(sub: Any) -> str:
    info = getattr(_compat.open_jaxpr(sub), "debug_info", None) if sub is not None else None
    name = getattr(info, "func_name", "") or ""
    return "" if name in ("<lambda>", "<unnamed function>", "unknown") else name


def _specs(specs: Any) -> str:
    if isinstance(specs, (tuple, list)):
        return ", ".join(_specs(s) for s in specs)
    return str(specs).replace("PartitionSpec", "P")


def _where(eqn: Any, is_library_file: Callable[[str], bool]) -> Site:
    """The user's line: the innermost frame outside JAX and installed libraries (Optax's
    `<lambda>:398` tells a reader nothing); the library's line inside it, for tooltips."""
    lib = next(_compat.source_frames(eqn), None)
    src = lib if lib is None or not is_library_file(lib[0]) else \
        next(_compat.source_frames(eqn, skip=is_library_file), None)
    if src is None:
        return Site()
    where, text = _where_text(*src)
    if not _compat.is_user_file(lib[0]):
        text += f"  (in {lib[2]}, {os.path.basename(lib[0])}:{lib[1]})"
    return Site(where, text, src[0])


@functools.lru_cache(maxsize=4096)
def _where_text(file: str, line: int, func: str) -> tuple[str, str]:
    text = linecache.getline(file, line).strip()
    func = _function_name(func) if func and func != "<module>" else os.path.basename(file)
    return f"{func}:{line}", text


def _function_name(qualname: str) -> str:
    """A method with its class (`Attention.__call__`: three classes share `__call__`),
    a function by its name; the functions it is defined in left out (JAX's frames carry
    the code's `co_qualname`, `make.<locals>.Attention.__call__`)."""
    return ".".join(qualname.rsplit(".<locals>.", 1)[-1].split(".")[-2:])


def build(traced: Traced, sharding: bool = False, types: dict | None = None,
          specs: dict | None = None) -> Graph:
    """The full graph of a traced call: every equation a node, every nested jaxpr a cluster.

    With `sharding`, values carry their types as JAX prints them, shardings included, or
    as `types` gives them (the compiler's propagated shardings, by variable), and an
    edge whose value the reader needs sharded otherwise (by `specs` where the type has no
    sharding) says how."""
    b = _Builder(traced.wrappers, sharding, types, specs, traced.library_calls)
    top = _compat.open_jaxpr(traced.jaxpr)
    env: dict = {}
    args = traced.in_args or [""] * len(traced.in_names)
    for i, (v, name, arg) in enumerate(zip(top.invars, traced.in_names, args)):
        env[v] = b.node("input", name, None, detail=(b.label_of(v),), arg=arg)
        env[("value", v)] = (-1, i)
    names = traced.const_names or [""] * len(top.constvars)
    for i, (v, name) in enumerate(zip(top.constvars, names)):
        env[("value", v)] = (-2, i)
        env[v] = b.node("const", name or "const", None, detail=(aval_str(v.aval),),
                        arg=re.match(r"[^\[.]+", name).group(0) if name else _CAPTURED)
    b.walk(top, env, None, 0)
    _unwrap(b)
    _call_sites(b)
    _merge_lone_calls(b)
    moved: dict[int, int] = {}      # a dropped node → the one its edges now leave from
    if traced.pmap:
        results = {env.get(v) for v in top.outvars if not _compat.is_literal(v)}
        moved = _as_pmap(b, traced.func_name, results)
    _signatures(b)
    _periods(b)
    constants = []
    for v, name in zip(top.outvars, traced.out_names):
        if _compat.is_literal(v):
            # a result the program never computes (BatchNorm's first-call flag, set to
            # False, in a returned state): a box of its own each, said in a note instead
            constants.append(f"{name} = {_literal(v)}")
            continue
        out = b.node("output", name, None, detail=(b.label_of(v),))
        if env.get(v) is not None and not _compat.is_literal(env[v]):
            b.edge(moved.get(env[v], env[v]), out, b.label_of(v), value=env.get(("value", v)))
    linked = {i for e in b.edges for i in (e.src, e.dst)}     # what has an edge
    unused = _drop_unused(b, linked)
    counts = Counter()
    for n in [*b.nodes.values(), *unused]:
        if n.kind == "op":
            counts.update(ancestors(b, n.cluster))
    for c in b.clusters.values():
        c.num_equations = counts[c.id]
    empty = _drop_empty(b, linked)
    _name_calls(b)
    _root_level(b)
    _signatures(b)
    notes = [_constants_note(constants)] if constants else []
    if unused:
        notes.append(f"{len(unused)} unused constant{'s' if len(unused) > 1 else ''} not "
                     f"drawn (XLA removes {'them' if len(unused) > 1 else 'it'})")
    if empty:
        notes.append(f"{len(empty)} call{'s' if len(empty) > 1 else ''} making no equation "
                     f"not drawn: {', '.join(empty[:3])}" + (", …" if len(empty) > 3 else ""))
    return Graph(b.nodes, b.edges, b.clusters, b.num_equations, notes, series=_series(b))


def _drop_unused(b: _Builder, linked: set[int]) -> list[Node]:
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


def _drop_empty(b: _Builder, linked: set[int]) -> list[str]:
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


def _constants_note(constants: list[str], most: int = 3) -> str:
    shown = ", ".join(constants[:most]) + (f", and {len(constants) - most} more"
                                           if len(constants) > most else "")
    return (f"{len(constants)} result{'s' if len(constants) > 1 else ''} "
            f"{'are constants' if len(constants) > 1 else 'is a constant'}, not drawn: {shown}")


def _name_calls(b: _Builder) -> None:
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


def _root_level(b: _Builder) -> None:
    """The traced function's own call (and its backward pass) is context, not a level:
    depth 0 shows what it calls."""
    top = [x for x in b.order[None] if x[0] == "c" or b.nodes[x[1]].kind not in
           ("input", "output", "const")]
    labels = {b.clusters[i].label if kind == "c" and b.clusters[i].kind == "scope" else None
              for kind, i in top}
    if len(labels) == 1 and None not in labels:
        for c in b.clusters.values():
            c.level -= 1


def _signatures(b: _Builder) -> None:
    """Equal for sub-graphs of the same structure: the same calls of the same operations
    on the same shapes, in the same order."""
    for c in sorted(b.clusters.values(), key=lambda c: -c.id):   # children first
        parts = [c.kind, _base_label(c.label), str(c.backward), *c.detail]
        for kind, i in b.order[c.id]:
            parts.append(b.clusters[i].signature if kind == "c" else
                         b.nodes[i].signature or f"{b.nodes[i].kind}:{b.nodes[i].title}")
        c.signature = hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()


def _unwrap(b: _Builder) -> None:
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


def _merge_lone_calls(b: _Builder) -> None:
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


def _as_pmap(b: _Builder, name: str, results: set) -> dict[int, int]:
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


def _unplumbed(b: _Builder, shard: int, results: set) -> dict[int, int]:
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


def _absorb(b: _Builder, inner: int, outer: int) -> None:
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


def _base_label(label: str) -> str:
    """`Dense` for Linen's `Dense_3`: the k-th submodule of a class is the same layer."""
    return re.sub(r"_\d+$", "", label)


# Per occurrence of a call, the later occurrences of the same call whose distance is a
# candidate period: a layer body holds the rarest of its calls at most this many times.
_OCCURRENCES = 16


def _periods(b: _Builder) -> None:
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


def _item_key(b: _Builder, kind: str, i: int) -> str | None:
    if kind == "c":
        return "c" + b.clusters[i].signature
    n = b.nodes[i]
    return "n" + (n.signature or n.title) if n.kind == "op" else None


def _loose_key(b: _Builder, kind: str, i: int) -> str | None:
    """An item's kind of step, whatever its shapes and constants: the call's name, the
    operation's primitive, and the line that makes it (the same line of a loop in every
    iteration; a `relu` before the loop is another step than the loop's `relu`)."""
    if kind == "c":
        c = b.clusters[i]
        return f"c{c.kind}:{_base_label(c.label)}:{c.backward}:{_call_site(b, c)}"
    n = b.nodes[i]
    return f"n{n.primitive}:{n.where}" if n.kind == "op" else None


def _call_site(b: _Builder, c: Cluster) -> str:
    """The user's line that makes call `c`: outside the function called, where it is the
    user's own (its equations stand at its own lines, whoever calls it)."""
    if c.kind != "scope":
        return c.where
    f = _call_frame(b, c)
    return f"{f[0]}:{f[1]}" if f else ""


def _call_frame(b: _Builder, c: Cluster, exact: bool = False) \
        -> tuple[str, int, str] | None:
    """(file, line, function) of the user's frame that calls scope `c`; failing that
    (a named scope, which no function's frame shows), its first line unless `exact`."""
    first = _first_equation(b, c)
    if first is None:
        return None
    skip = calltree.library_dirs()
    frames = [f for f in _compat.source_frames(first) if not f[0].startswith(skip)]
    label = _base_label(c.label)
    inside = [k for k, f in enumerate(frames) if label in f[2].split(".")]
    if inside and inside[0] + 1 < len(frames):
        return frames[inside[0] + 1]
    return None if exact or not frames else frames[0]


def _first_equation(b: _Builder, c: Cluster) -> Any:
    """The first equation in walk order in `c` or a call inside it, or None."""
    below = [c.id]
    while below:
        x = below.pop(0)
        if x in b.first_eqn:
            return b.first_eqn[x]
        below = [j for kind, j in b.order.get(x, ()) if kind == "c"] + below
    return None


def _call_sites(b: _Builder) -> None:
    """Each recorded call's `site`: the user's line that calls it, which its hover and
    search name (a line inside it says where its first equation is, not the call)."""
    for c in b.clusters.values():
        f = _call_frame(b, c, exact=True) if c.kind == "scope" else None
        if f:
            c.site = Site(*_where_text(*f), f[0])


def _runs(items: list, keys: list, loose: _Lazy, lo: int, hi: int, looped: Callable) \
        -> list[tuple[int, int, int]]:
    """(start, period, repetitions) of the groups to wrap in items[lo:hi], as `_periods`
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


def _wrap(b: _Builder, parent: int | None, members: list[tuple[str, int]]) -> int:
    calls = [b.clusters[i] for kind, i in members if kind == "c"]
    steps = calls or [b.nodes[i] for _, i in members]
    label = _period_name(b, members)
    level = calls[0].level if calls else b._level_of(parent, 0) + 1
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


def _period_name(b: _Builder, members: list[tuple[str, int]]) -> str:
    """What one repetition computes, named as the user wrote it: the calls in it, where
    one is the user's (`Dense → BatchNorm → relu`); else the one line of the user's that
    makes it, where more than one of that line's calls and operators do
    (`tanh(x @ w)`); else its steps in order (`tanh → sin → cos → relu → exp`: a line
    calling another function each time round, `fs[i % 5](x)`, says nothing of them)."""
    calls = [b.clusters[i] for kind, i in members if kind == "c"]
    if any(c.kind == "scope" for c in calls):
        mixed = not all(c.backward for c in calls)   # a backward call named as it is drawn
        return _chain_name([_base_label(c.label).split(": ")[-1] + (
            " · backward" if mixed and c.backward else "") for c in calls])
    line = _one_line(b, members)
    if line:
        return line
    return _chain_name([_base_label(b.clusters[i].label).split(": ")[-1] if kind == "c"
                        else b.nodes[i].title.split(" · ")[0] for kind, i in members])


def _chain_name(names: list[str]) -> str:
    label = " → ".join(names)
    if len(names) > 4 and len(label) > 48:      # a transformer layer's ten calls
        label = " → ".join([*names[:2], "…", names[-1]])
    return label


def _one_line(b: _Builder, members: list[tuple[str, int]]) -> str:
    """The expression of the one line that makes every member, where two or more of its
    instructions (calls, operators) do; else ""."""
    wheres = {(b.clusters[i].where if kind == "c" else b.nodes[i].where)
              for kind, i in members}
    if len(wheres) != 1 or not next(iter(wheres)):
        return ""
    skip = b.is_library_file
    eqns = [b.eqn_of[i] if kind == "n" else _first_equation(b, b.clusters[i])
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
    return _short(_MODULES.sub("", ast.unparse(value)), limit)


def _series(b: _Builder) -> dict[int, tuple[int, int]]:
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


_CAPTURED = "captured constants"      # constants whose Python name is not known
