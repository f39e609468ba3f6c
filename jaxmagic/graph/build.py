"""A traced jaxpr as a graph: one node per equation, nested jaxprs and calls as clusters.

The only reader of a jaxpr's structure. `build` walks it once (linear in the number of
equations) into a `Draft`, then settles its groups in a fixed order: library calls that
called the user's code back drawn as what they call, each call's site, lone calls
merged, pmap's plumbing dropped (`groups`, `sites`), signatures and the periods of
loops (`repeats`), unused constants and empty calls dropped, calls named and numbered,
the series found. What a drawing makes of the result is in `passes`.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Any

import numpy as np

from .. import _compat
from ..core import calltree, reshard
from ..core.jaxprs import CALLS, COLLECTIVES, NO_DATA, aval_str, bodies, jaxpr_params
from ..core.libraries import equinox
from ..core.trace import Traced
from . import groups, repeats
from .model import CAPTURED, Draft, Graph, Node, Site, ancestors, short
from .sites import call_sites, equation_site


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
        out.append("pad " + short(p["padding"] if isinstance(p["padding"], str)
                                   else _tup(tuple(_tup(x) for x in p["padding"]))))
        for key in ("lhs_dilation", "rhs_dilation"):
            if any(d != 1 for d in p.get(key) or ()):
                out.append(f"{key.split('_')[0]} dilation {_tup(p[key])}")
        if p.get("feature_group_count", 1) != 1:
            out.append(f"groups {p['feature_group_count']}")
    elif prim in COLLECTIVES:
        axes = p.get("axes", p.get("axis_name"))
        out.append("axes " + short(_tup(axes) if isinstance(axes, (tuple, list)) else axes))
        if prim == "ppermute":
            out.append("perm " + short(p.get("perm")))
    elif "call_target_name" in p or "target_name" in p:
        out.append("target " + short(p.get("call_target_name", p.get("target_name")), 48))
    elif "axes" in p and prim.startswith(("reduce", "arg", "cum")):
        out.append(f"axes {_tup(p['axes'])}")
    else:
        for key in ("dimensions", "permutation", "new_sizes", "broadcast_dimensions",
                    "dimension", "axis", "new_dtype", "y", "slice_sizes", "length"):
            if key in p and p[key] is not None:
                out.append(f"{key.replace('_', ' ')} {short(_tup(p[key]))}")
                break
    return tuple(out)


def _literal(atom: Any) -> str:
    v = _compat.literal_value(atom)
    if np.ndim(v) == 0:
        v = np.asarray(v).item()
        return f"{v:.4g}" if isinstance(v, float) else str(v)
    return aval_str(atom.aval)


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


class _Builder(Draft):
    """The walk over a traced jaxpr that makes its `Draft`: a node per equation, a
    cluster per call, scope and nested jaxpr, an edge per value."""

    def __init__(self, wrappers: frozenset[str] = frozenset(), sharding: bool = False,
                 types: dict | None = None, specs: dict | None = None,
                 library_calls: frozenset[str] = frozenset()) -> None:
        super().__init__(wrappers, library_calls, calltree.library_test())
        # edge labels: `f32[256,512]`, or with `sharding` the type as JAX prints it,
        # `f32[256@data,512]`, `f32[8,4]{V:i}`; `types`: the compiler's choice for values
        # whose type has none (an Auto mesh), by variable
        self.type_text = _compat.typed_aval_str if sharding else aval_str
        self.types = dict(types or {})
        self.specs = dict(specs or {})     # the mesh axes of each dimension, by variable
        self.sharding = sharding
        self.around: list[tuple[str, ...]] = [()]   # the scopes of the equations walked
        self.callees: list[tuple[str, int] | None] = [None]   # the functions called around

    def label_of(self, atom: Any) -> str:
        found = None if _compat.is_literal(atom) else self.types.get(atom)
        return found or self.type_text(atom.aval)

    def spec_of(self, atom: Any) -> Any:
        """A value's sharding: its type's (an Explicit mesh), else the compiler's."""
        return reshard.aval_spec(atom.aval) or self.specs.get(atom)

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
            self.equation(eqn, env, parent, self.level_of(parent, level), backward)
            self.around.pop()

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
                    "scope", names[k - 1], parent, self.level_of(parent, level) + 1,
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
        site = equation_site(eqn, self.is_library_file)
        if len(self.callees) > 1 and \
                _compat.beyond_callee(eqn, self.callees, self.is_library_file):
            site = Site()    # the line is a library call's, or stale
        kind = CALLS.get(prim)
        subs = bodies(eqn)
        loop = {"scan": self.scan, "cond": self.cond, "while": self.while_}.get(prim)
        if loop is not None:
            loop(eqn, env, parent, level, site)
            for k, v in enumerate(eqn.outvars):     # its own values, not its body's
                env[("value", v)] = (index, k)
            return
        if kind or jaxpr_params(eqn):
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
                      "in " + short(_specs(ins), 48), "out " + short(_specs(outs), 48))
            title = "shard_map"
        sub = subs[0] if subs else None
        if sub is None:
            return
        c = self.cluster(kind, title, parent, level + 1, detail, site,
                         backward=_compat.is_backward(eqn))
        self.callees.append(_compat.callee_entry(sub))
        ienv = self._inner(sub, list(eqn.invars), env, c, level + 1, alias=name or "")
        self.callees.pop()
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


def build(traced: Traced, sharding: bool = False, types: dict | None = None,
          specs: dict | None = None) -> Graph:
    """The full graph of a traced call: every equation a node, every nested jaxpr a cluster.

    With `sharding`, values carry their types as JAX prints them, shardings included, or
    as `types` gives them (the compiler's propagated shardings, by variable), and an
    edge whose value the reader needs sharded otherwise (by `specs` where the type has no
    sharding) says how. The passes after the walk run in this order (see the module doc)."""
    b = _Builder(traced.wrappers, sharding, types, specs, traced.library_calls)
    top = _compat.open_jaxpr(traced.jaxpr)
    env = _arguments(b, traced, top)
    b.walk(top, env, None, 0)
    groups.unwrap(b)
    call_sites(b)
    groups.merge_lone_calls(b)
    moved: dict[int, int] = {}      # a dropped node → the one its edges now leave from
    if traced.pmap:
        results = {env.get(v) for v in top.outvars if not _compat.is_literal(v)}
        moved = groups.as_pmap(b, traced.func_name, results)
    repeats.signatures(b)
    repeats.periods(b)
    constants = _results(b, traced, top, env, moved)
    linked = {i for e in b.edges for i in (e.src, e.dst)}     # what has an edge
    unused = groups.drop_unused(b, linked)
    _count_equations(b, unused)
    empty = groups.drop_empty(b, linked)
    groups.name_calls(b)
    groups.root_level(b)
    repeats.signatures(b)
    return Graph(b.nodes, b.edges, b.clusters, b.num_equations,
                 _notes(constants, unused, empty), series=repeats.series_of(b))


def _arguments(b: _Builder, traced: Traced, top: Any) -> dict:
    """The env of the top jaxpr: a node per argument and per named constant."""
    env: dict = {}
    args = traced.in_args or [""] * len(traced.in_names)
    for i, (v, name, arg) in enumerate(zip(top.invars, traced.in_names, args)):
        env[v] = b.node("input", name, None, detail=(b.label_of(v),), arg=arg)
        env[("value", v)] = (-1, i)
    names = traced.const_names or [""] * len(top.constvars)
    for i, (v, name) in enumerate(zip(top.constvars, names)):
        env[("value", v)] = (-2, i)
        env[v] = b.node("const", name or "const", None, detail=(aval_str(v.aval),),
                        arg=re.match(r"[^\[.]+", name).group(0) if name else CAPTURED)
    return env


def _results(b: _Builder, traced: Traced, top: Any, env: dict,
             moved: dict[int, int]) -> list[str]:
    """A node per result, fed by what computes it (`moved`: past pmap's dropped
    plumbing); returns the results that are constants, `name = value`."""
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
    return constants


def _count_equations(b: _Builder, unused: list[Node]) -> None:
    """Each cluster's `num_equations`: its operations, and the unused ones dropped."""
    counts: Counter = Counter()
    for n in [*b.nodes.values(), *unused]:
        if n.kind == "op":
            counts.update(ancestors(b, n.cluster))
    for c in b.clusters.values():
        c.num_equations = counts[c.id]


def _notes(constants: list[str], unused: list[Node], empty: list[str]) -> list[str]:
    """What the picture leaves out, said under it."""
    notes = [groups.constants_note(constants)] if constants else []
    if unused:
        notes.append(f"{len(unused)} unused constant{'s' if len(unused) > 1 else ''} not "
                     f"drawn (XLA removes {'them' if len(unused) > 1 else 'it'})")
    if empty:
        notes.append(f"{len(empty)} call{'s' if len(empty) > 1 else ''} making no equation "
                     f"not drawn: {', '.join(empty[:3])}" + (", …" if len(empty) > 3 else ""))
    return notes
