"""`--values`: what flowed along every edge of a traced call, and where the first NaN or
Inf was born, in one compile.

The traced jaxpr is evaluated again inside one `jax.jit`, equation by equation; after each
equation a few reductions summarise its outputs (a `Summary`: count, NaN, ±Inf, zeros,
mean and spread of the finite elements, their range), and each equation is flagged where
its outputs hold a non-finite value while its inputs hold none (where it was *born*).
The summaries are the program's only outputs: nothing large reaches the host, and XLA
fuses the reductions with the equations they read. Loops are run as loops (`lax.scan`,
`lax.while_loop`, `lax.switch`) whose bodies return their summaries per iteration, reduced
over the iterations inside the program with the first iteration at which a value went
non-finite; a loop's or a shard_map's own arguments are summarised as its body sees them
(a cause reads them: `x / c` of a carry). A vmapped `while_loop` whose predicate is
batched runs as JAX lowers it: while any lane's predicate holds, its body on every lane,
the finished lanes keeping their carry (what it made for them is summarised apart).
Calls (`jit`, `custom_jvp`, `checkpoint`, ...) are opened in place; any other equation
with a body (JAX 0.7's `xla_pmap`, a kernel) runs as it is and only its outputs are
summarised. An integer division makes no NaN where
its divisor is 0, so what it returned there is summarised too (`Flow.by_zero`).

Equations are numbered in the walk order of `graph.build`, so every summary finds its
node and edge on the drawn graph (`Edge.value`). The rows' reductions are
`core.summary_rows`'; the data read back from them, `core.flow`'s.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compat
from .flow import Equation, Flow, summary_of
from .jaxprs import CALLS, bodies
from .summary_rows import (
    EMPTY,
    FLOAT,
    INTEGER,
    KEY,
    NAN,
    NINF,
    OTHER,
    PINF,
    WIDTH,
    Pending,
    accumulate,
    born_all,
    born_flags,
    earliest,
    first_iteration,
    kind_of,
    masked_row,
    over_devices,
    over_iterations,
    resolve,
    row,
)

# primitives whose body is opened in place: `graph.build` walks their first sub-jaxpr
_OPENED = frozenset(p for p, kind in CALLS.items() if kind not in ("shard_map", "pmap"))
_SHARD_MAP = "shard_map"
COMPILED_BUDGET = 300
# jnp's calls whose result is an integer `div`'s made good (x // y), and the id of what
# an integer division returned where its divisor was 0
RETURNS_FOR_DIV = frozenset({"floor_divide"})
BY_ZERO = "by_zero"
# the id of what a vmapped while's body made for lanes that had finished (dropped)
LANES = "finished_lanes"


# ---- the walk: the jaxpr evaluated again, summarising as it goes -------------------------

def size(eqn: Any) -> int:
    """Equations `graph.build` numbers for `eqn`: itself and those of its bodies."""
    return 1 + sum(jaxpr_size(b) for b in bodies(eqn))


def jaxpr_size(j: Any) -> int:
    return sum(size(e) for e in _compat.open_jaxpr(j).eqns)


@dataclass
class _Entry:
    """A value in the walk: the array, its summary row this iteration, its id."""
    value: Any
    row: Any
    vid: tuple | None


@dataclass
class _Waiting:
    """An equation's born flags, to be made from its rows once they are."""
    outs: list
    ins: list


class _Frame:
    """What one body records: rows by value id and born flags by equation, in order.
    In a traced body a row is `Pending` and a born flag waits for the rows it reads,
    until `settle` makes them all at once."""

    def __init__(self, loops: tuple = ()):
        self.loops = loops
        self.rows: dict[tuple, Any] = {}
        self.born: dict[int, Any] = {}
        self.pending: list[Pending] = []

    def settle(self) -> None:
        """Make the pending rows, then the born flags that read them: before the body's
        rows are read, or a body inside it reads its values' rows (in their own trace)."""
        if not self.pending:
            return
        resolve(self.pending)
        self.pending = []
        self.rows = {vid: settled(r) for vid, r in self.rows.items()}
        waiting = [e for e, b in self.born.items() if isinstance(b, _Waiting)]
        made = born_all([([settled(r) for r in self.born[e].outs],
                          [settled(r) for r in self.born[e].ins]) for e in waiting])
        self.born.update(zip(waiting, made))

    def stacked(self) -> tuple[Any, Any]:
        self.settle()
        values = list(self.rows.values()) + list(self.born.values())
        xp = jnp if any(_compat.is_tracer(v) for v in values) else np
        rows = xp.stack(list(self.rows.values())) if self.rows else \
            xp.zeros((0, WIDTH), np.float32)
        born = xp.stack(list(self.born.values())) if self.born else \
            xp.zeros((0, 2), np.float32)
        return rows, born

    def absorb(self, ids: list, eqns: list, rows: Any, born: Any) -> None:
        rows, born = on_host(rows, born)
        for i, vid in enumerate(ids):
            self.rows[vid] = rows[i]
        for i, e in enumerate(eqns):
            self.born[e] = born[i]


class Walk:
    """One evaluation of a traced jaxpr with summaries (see the module's doc)."""

    def __init__(self, budget: int, rewrites: dict | None = None):
        self.budget = budget
        self.rewrites = rewrites or {}     # equation → its inputs' values as changed
        self.full = 0
        self.left_out = 0
        self.avals: dict[tuple, tuple[str, str]] = {}
        self.equations: dict[int, Equation] = {}
        self.loops: dict[int, tuple[str, int, bool]] = {}
        self.skipped: dict[int, str] = {}
        self.results: list = []        # the value ids of the call's results
        # a compiled body (a loop, a shard_map) summarises at most this many values: XLA
        # compiles a kernel for each, about 10 ms apiece on a CPU
        self.compiled_budget = COMPILED_BUDGET
        self.body_index: int | None = None         # the outermost compiled body running
        self.in_program: set = set()               # the values it summarises
        self.capped: dict[int, set] = {}           # those it left out, by body
        self.zero_divisors: dict[int, Any] = {}    # an integer div's mask of them
        self.by_zero_in: dict[int, str] = {}
        self.calling = ""      # the JAX function of the call opened around (its name)
        self.body_of = ""      # the name of the innermost call opened around

    def row_of(self, x: Any, key: Any, full: bool = True, frame: _Frame | None = None) \
            -> Any:
        """`row(x)`, or None for a value inside a compiled body past its budget; a traced
        value's is pending in `frame` where one is given."""
        if _compat.is_tracer(x) and self.body_index is not None and key not in \
                self.in_program:
            if len(self.in_program) >= self.compiled_budget:
                self.capped.setdefault(self.body_index, set()).add(key)
                return None
            self.in_program.add(key)
        if frame is not None and _compat.is_tracer(x) and x.size and \
                kind_of(x) not in (KEY, OTHER):
            frame.pending.append(Pending(x, full))
            return frame.pending[-1]
        return row(x, full)

    # -- values --------------------------------------------------------------------------

    def record(self, frame: _Frame, vid: tuple, x: Any) -> _Entry:
        from .jaxprs import aval_str

        aval = _compat.aval_of(x) if hasattr(x, "shape") else None
        self.avals[vid] = (aval_str(aval) if aval is not None else type(x).__name__,
                           kind_of(aval) if aval is not None else OTHER)
        full = vid in frame.rows or self.full < self.budget
        if vid not in frame.rows:
            self.full += full
            self.left_out += not full
        r = self.row_of(x, vid, full, frame) if aval is not None else EMPTY.copy()
        if r is not None:
            frame.rows[vid] = r
        return _Entry(x, r, vid)

    def read(self, atom: Any, env: dict) -> _Entry:
        if _compat.is_literal(atom):
            v = _compat.literal_value(atom)
            return _Entry(v, row(np.asarray(v)), ("literal", _literal_number(v)))
        return env[atom]

    # -- the walk ------------------------------------------------------------------------

    def run(self, closed: Any, ins: list[_Entry], frame: _Frame, start: int,
            consts: list[_Entry] | None = None) -> list[_Entry]:
        """Evaluate (closed) jaxpr `closed` on `ins`, its equations numbered from `start`;
        its constants as `consts` gives them, else unsummarised."""
        jaxpr = _compat.open_jaxpr(closed)
        if consts is None:
            consts = [_Entry(c, row(c, False) if hasattr(c, "shape") else EMPTY.copy(),
                             None) for c in _compat.consts_of(closed)]
        env: dict = dict(zip(jaxpr.constvars, consts))
        env.update(zip(jaxpr.invars, ins))
        last = _last_uses(jaxpr)
        index = start
        for i, eqn in enumerate(jaxpr.eqns):
            ins_e = [self.read(a, env) for a in eqn.invars]
            outs = self.equation(eqn, ins_e, frame, index)
            for v, out in zip(eqn.outvars, outs):
                if not _compat.is_dropvar(v):
                    env[v] = out
            for v in last.get(i, ()):     # run op by op, a value is freed once read
                env.pop(v, None)
            index += size(eqn)
        return [self.read(a, env) for a in jaxpr.outvars]

    def equation(self, eqn: Any, ins: list[_Entry], frame: _Frame, index: int) -> list:
        prim = eqn.primitive.name
        compiled = {"scan": self.scan, "while": self.while_, "cond": self.cond}.get(prim)
        if prim == _SHARD_MAP and _compat.open_jaxpr(eqn.params["jaxpr"]).constvars == []:
            compiled = self.shard_map
        if compiled is not None:
            return self.compiled(compiled, eqn, ins, frame, index)
        if prim in _OPENED and self._opens(eqn, ins):
            around = self.calling, self.body_of
            self.calling = self.calling or _compat.library_function(eqn, self.body_of)
            self.body_of = eqn.params.get("name", "")
            try:
                outs = self.run(bodies(eqn)[0], ins, frame, index + 1)
            finally:
                self.calling, self.body_of = around
            if eqn.params.get("name") in RETURNS_FOR_DIV:
                self._returned_by(eqn.params["name"], frame, index, size(eqn), outs)
            return outs
        if bodies(eqn):
            self.skipped[index] = prim
        xs = [e.value for e in ins]
        values = _compat.bind_equation(eqn, self.rewrites[index](xs) if index in
                                       self.rewrites else xs)
        return self.leaf(eqn, ins, values, frame, index)

    def compiled(self, run: Any, eqn: Any, ins: list[_Entry], frame: _Frame,
                 index: int) -> list[_Entry]:
        """A body run as one compiled loop or shard_map; where it could not summarise
        every value inside (its budget), it stands as one equation for the origin."""
        frame.settle()     # the rows its body's equations read as their inputs'
        outer = self.body_index is None
        if outer:
            self.body_index, self.in_program = index, set()
        try:
            values = run(eqn, ins, frame, index)
        finally:
            if outer:
                self.body_index = None
        if outer and index in self.capped:
            return self.leaf(eqn, ins, values, frame, index)
        return [self.record(frame, (index, k), x) for k, x in enumerate(values)]

    def _opens(self, eqn: Any, ins: list) -> bool:
        subs = bodies(eqn)
        return bool(subs) and len(_compat.open_jaxpr(subs[0]).invars) == len(ins)

    def leaf(self, eqn: Any, ins: list[_Entry], values: list, frame: _Frame,
             index: int) -> list[_Entry]:
        outs = [self.record(frame, (index, k), x) for k, x in enumerate(values)]
        rows = [o.row for o in outs], [e.row for e in ins]
        frame.born[index] = _Waiting(*rows) if frame.pending else born_flags(*rows)
        if eqn.primitive.name == "div" and self.avals[(index, 0)][1] == INTEGER:
            self._by_zero(frame, index, ins[1].value, values[0])
        self.equations[index] = Equation(index, eqn.primitive.name,
                                         tuple(e.vid for e in ins),
                                         tuple(o.vid for o in outs), frame.loops,
                                         bool(bodies(eqn)), called=self.calling or
                                         _compat.library_function(eqn, self.body_of),
                                         params={k: v for k, v in eqn.params.items()
                                                 if type(v) in (int, float)})
        return outs

    # -- integer division by 0: no NaN says it happened ---------------------------------

    def _by_zero(self, frame: _Frame, index: int, divisor: Any, out: Any) -> None:
        """Where an integer division's divisor held a 0, what it returned there (XLA's
        −1, or the type's largest for unsigned ones)."""
        xp = jnp if _compat.is_tracer(out) or _compat.is_tracer(divisor) else np
        mask = xp.broadcast_to(xp.asarray(divisor) == 0, np.shape(out))
        if xp is np and not mask.any():
            return
        self.zero_divisors[index] = mask
        frame.rows[(BY_ZERO, index)] = masked_row(out, mask)

    def _returned_by(self, name: str, frame: _Frame, index: int, n: int,
                     outs: list[_Entry]) -> None:
        """A call that makes `//` of a div (`floor_divide`): what it returned where the
        divisor was 0, which is what the user's line returned."""
        for i in range(index + 1, index + n):
            mask = self.zero_divisors.pop(i, None)
            if mask is not None and len(outs) == 1 and \
                    np.shape(outs[0].value) == mask.shape:
                frame.rows[(BY_ZERO, i)] = masked_row(outs[0].value, mask)
                self.by_zero_in[i] = name

    # -- loops, run as loops -------------------------------------------------------------

    def body(self, jaxpr: Any, ins: list[_Entry], loops: tuple, start: int,
             fresh: tuple = (), key: tuple = ()):
        """A body evaluated in a frame of its own: (outputs, frame). `fresh`: its inputs
        after `ins` that are no outer value (a loop's carry, a device's block), recorded
        as values of their own, `key + (k,)`, for the causes of the equations reading
        them."""
        frame = _Frame(loops)
        ins = ins + [self.record(frame, key + (k,), v) for k, v in enumerate(fresh)]
        return self.run(jaxpr, ins, frame, start), frame

    def scan(self, eqn: Any, ins: list[_Entry], frame: _Frame, index: int) -> list:
        p = eqn.params
        nconsts, ncarry = _compat.scan_counts(p)
        consts, carry, xs = ins[:nconsts], ins[nconsts:nconsts + ncarry], \
            ins[nconsts + ncarry:]
        loops = frame.loops + (index,)
        self.loops[index] = ("scan", p["length"], bool(p.get("reverse")))
        ids: dict = {}

        def step(c, x):
            outs, sub = self.body(p["jaxpr"], consts, loops, index + 1,
                                  list(c) + list(x), ("in", index))
            ids["rows"], ids["born"] = list(sub.rows), list(sub.born)
            rows, born = sub.stacked()
            return [o.value for o in outs[:ncarry]], ([o.value for o in outs[ncarry:]],
                                                      rows, born)

        final, (ys, rows, born) = jax.lax.scan(
            step, [e.value for e in carry], [e.value for e in xs], length=p["length"],
            reverse=bool(p.get("reverse")), unroll=p.get("unroll", 1))
        self._reduced(frame, ids, rows, born, bool(p.get("reverse")))
        return list(final) + list(ys)

    def _reduced(self, frame: _Frame, ids: dict, rows: Any, born: Any,
                 reverse: bool) -> None:
        rows, born = on_host(rows, born)
        length = rows.shape[0]
        frame.absorb(ids["rows"], ids["born"], over_iterations(rows, reverse)
                     if length else rows.sum(0),
                     first_iteration(born >= 0, reverse, length) if length else born.sum(0))

    def while_(self, eqn: Any, ins: list[_Entry], frame: _Frame, index: int) -> list:
        p = eqn.params
        nc, nb = p["cond_nconsts"], p["body_nconsts"]
        cconsts, bconsts, init = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
        loops = frame.loops + (index,)
        self.loops[index] = ("while", -1, False)
        start = index + 1 + jaxpr_size(p["cond_jaxpr"])
        ids: dict = {}

        def predicate(carry):
            entries = cconsts + [_Entry(v, self.row_of(v, ("in", index, k), False), None)
                                 for k, v in enumerate(carry)]
            out, _ = self.body(p["cond_jaxpr"], entries, loops, index + 1)
            return jnp.asarray(out[0].value)

        # vmap's while with a batched predicate: it runs while any lane's holds, and a
        # lane whose predicate is false keeps its carry (as JAX lowers it)
        batched = bool(_compat.open_jaxpr(p["cond_jaxpr"]).outvars[0].aval.shape)

        def run_body(carry):
            outs, sub = self.body(p["body_jaxpr"], bconsts, loops, start, carry,
                                  ("in", start))
            values = [o.value for o in outs]
            if batched:
                values = self._lanes_kept(sub, index, predicate(carry), values, carry)
            ids["rows"], ids["born"] = list(sub.rows), list(sub.born)
            return values, sub.stacked()

        _, (rows0, born0) = jax.eval_shape(run_body, [e.value for e in init])

        def step(state):
            carry, t, acc, acc_born = state
            values, (rows, born) = run_body(carry)
            return values, t + 1, accumulate(acc, rows, t), \
                jnp.where(acc_born >= 0, acc_born, jnp.where(born >= 0, t, -1.0))

        acc = jnp.broadcast_to(jnp.asarray(EMPTY, jnp.float32), rows0.shape)
        state = ([e.value for e in init], jnp.float32(0), acc,
                 jnp.full(born0.shape, -1.0, jnp.float32))
        final, _, rows, born = jax.lax.while_loop(lambda state: predicate(state[0]).any(),
                                                  step, state)
        frame.absorb(ids["rows"], ids["born"], rows, born)
        return list(final)

    def _lanes_kept(self, frame: _Frame, index: int, running: Any, new: list,
                    old: list) -> list:
        """A batched while's carry after one step: the body's values in the lanes still
        running (`running`: the leading axes of every carry), the old ones elsewhere.
        What the body made for the finished lanes is summarised apart (`(LANES, index,
        k)`): a NaN there is dropped by the loop, not by an equation."""
        out = []
        for k, (x, y) in enumerate(zip(new, old)):
            mask = jax.lax.broadcast_in_dim(running, np.shape(x), tuple(range(running.ndim)))
            if kind_of(x) == FLOAT:
                r = self.row_of(jnp.where(mask, 0, x), (LANES, index, k), False)
                if r is not None:
                    frame.rows[(LANES, index, k)] = r
            out.append(jax.lax.select(mask, x, y))
        return out

    def shard_map(self, eqn: Any, ins: list[_Entry], frame: _Frame, index: int) -> list:
        """The body run by `shard_map` as it was, each device's summaries returned along
        a leading axis split over the manual axes, then pooled into the global value's."""
        p = eqn.params
        _, in_specs, out_specs = _compat.shard_map_specs(p)
        axes = _compat.shard_map_axes(p)
        every = jax.sharding.PartitionSpec(axes)
        ids: dict = {}

        def body(*local):
            outs, sub = self.body(p["jaxpr"], [], frame.loops, index + 1, local,
                                  ("in", index))
            ids["rows"], ids["born"] = list(sub.rows), list(sub.born)
            rows, born = sub.stacked()
            return tuple(o.value for o in outs), _compat.vary(jnp.asarray(rows)[None], axes), \
                _compat.vary(jnp.asarray(born)[None], axes)

        mapped = _compat.shard_map(body, p, tuple(in_specs),
                                   (tuple(out_specs), every, every))
        # compiled: called as it is, shard_map would run its body op by op on each device
        outs, rows, born = jax.jit(mapped)(*[e.value for e in ins])
        rows, born = on_host(rows, born)
        frame.absorb(ids["rows"], ids["born"], over_devices(rows),
                     earliest(born))
        return list(outs)

    def cond(self, eqn: Any, ins: list[_Entry], frame: _Frame, index: int) -> list:
        branches = eqn.params["branches"]
        starts = [index + 1]
        for b in branches[:-1]:
            starts.append(starts[-1] + jaxpr_size(b))
        ids: list[tuple[list, list]] = []
        for b, s in zip(branches, starts):    # every branch's ids, to return them all
            box: dict = {}

            def probe(*ops, b=b, s=s, box=box):
                outs, sub = self.body(b, [_Entry(v, e.row, e.vid) for v, e in
                                          zip(ops, ins[1:])], frame.loops, s)
                box["ids"] = (list(sub.rows), list(sub.born))
                return [o.value for o in outs]

            jax.eval_shape(probe, *[e.value for e in ins[1:]])
            ids.append(box["ids"])
        all_rows = [v for r, _ in ids for v in r]
        all_born = [e for _, b in ids for e in b]

        def branch(k):
            def run(*ops):
                outs, sub = self.body(branches[k], [_Entry(v, e.row, e.vid) for v, e in
                                                    zip(ops, ins[1:])], frame.loops,
                                      starts[k])
                sub.settle()
                empty, unborn = jnp.asarray(EMPTY, jnp.float32), jnp.full(2, -1.0, jnp.float32)
                rows = jnp.stack([sub.rows.get(v, empty) for v in all_rows]) \
                    if all_rows else jnp.zeros((0, WIDTH), jnp.float32)
                born = jnp.stack([sub.born.get(e, unborn) for e in all_born]) \
                    if all_born else jnp.zeros((0, 2), jnp.float32)
                return [o.value for o in outs], rows, born
            return run

        outs, rows, born = jax.lax.switch(ins[0].value, [branch(k) for k in
                                                         range(len(branches))],
                                          *[e.value for e in ins[1:]])
        frame.absorb(all_rows, all_born, rows, born)
        return list(outs)


def on_host(rows: Any, born: Any) -> tuple[Any, Any]:
    """A loop's or shard_map's rows as numpy arrays, unless traced (a body inside a body):
    pooled and read row by row on the host with no compile (op by op, each JAX operation
    would compile on first use)."""
    if _compat.is_tracer(rows) or _compat.is_tracer(born):
        return rows, born
    return np.asarray(rows), np.asarray(born)


def settled(r: Any) -> Any:
    return r.row if isinstance(r, Pending) else r


def _last_uses(jaxpr: Any) -> dict[int, list]:
    """The variables each equation reads last (the jaxpr's results are read after all)."""
    last: dict = {}
    for i, eqn in enumerate(jaxpr.eqns):
        for a in eqn.invars:
            if not _compat.is_literal(a):
                last[a] = i
    for a in jaxpr.outvars:     # a result may be a literal (`jnp.where`'s 1.0 branch)
        if not _compat.is_literal(a):
            last.pop(a, None)
    out: dict[int, list] = {}
    for v, i in last.items():
        out.setdefault(i, []).append(v)
    return out


def _literal_number(v: Any) -> Any:
    try:
        return np.asarray(v).item()
    except (ValueError, TypeError):
        return str(v)


# ---- one run --------------------------------------------------------------------------------

def summarise(traced: Any, args: list, budget: int = 20000, jit: bool = False,
              rewrites: dict | None = None) -> Flow:
    """The values of `traced`'s jaxpr run on `args` (its flat inputs), summarised: op by
    op, each summary on the host, every loop compiled once with its body's summaries
    inside it (`jit=True`: the whole walk in one compiled program, the other design
    `benchmarks/bench_values.py` measures; XLA:CPU compiles each summary's reduction as a
    kernel of its own, a second per 100 values).
    `budget`: values summarised in full; those past it get only their non-finite counts.
    `rewrites`: a fix tried on the program, by equation: its inputs' values → the values
    it computes on instead (`sqrt(s + 1e-12)` for `sqrt(s)`).
    The user's configuration is left as it is: the run itself sets NaN checks off and
    jit on, for its own duration only."""
    import time

    walk = Walk(budget, rewrites)
    program = program_of(walk, traced)

    start = time.perf_counter()
    with _compat.values_config():
        if jit:
            keys = {}

            def compiled(*flat):
                (rows, born), keys["rows"], keys["born"] = program(*flat)
                return rows, born

            rows, born = jax.jit(compiled)(*args)
            row_ids, born_ids = keys["rows"], keys["born"]
        else:
            (rows, born), row_ids, born_ids = program(*args)
        rows, born = np.asarray(rows), np.asarray(born)
    flow = _collect(walk, row_ids, born_ids, rows, born, time.perf_counter() - start)
    flow.names = {**{(-1, i): n for i, n in enumerate(traced.in_names)},
                  **{(-2, i): n for i, n in enumerate(traced.const_names)}}
    return flow



def program_of(walk: Walk, traced: Any):
    """The walk over `traced`'s jaxpr as a function of its flat inputs: ((rows, born),
    row ids, equation ids)."""
    closed = traced.jaxpr

    def program(*flat):
        frame = _Frame()
        ins = [walk.record(frame, (-1, i), x) for i, x in enumerate(flat)]
        consts = [walk.record(frame, (-2, i), c) for i, c in
                  enumerate(_compat.consts_of(closed))]
        outs = walk.run(closed, ins, frame, 0, consts)
        walk.results = [o.vid for o in outs]
        return frame.stacked(), list(frame.rows), list(frame.born)

    return program


def _collect(walk: Walk, row_ids: list, born_ids: list, rows: np.ndarray,
             born: np.ndarray, seconds: float) -> Flow:
    summaries = {vid: summary_of(walk.avals.get(vid, ("?", OTHER)), r)
                 for vid, r in zip(row_ids, rows) if vid[0] not in (BY_ZERO, LANES)}
    lanes: dict[int, int] = {}
    for vid, r in zip(row_ids, rows):
        if vid[0] == LANES:
            lanes[vid[1]] = lanes.get(vid[1], 0) + int(r[NAN] + r[PINF] + r[NINF])
    by_zero = {vid[1]: s for vid, r in zip(row_ids, rows) if vid[0] == BY_ZERO
               and (s := summary_of(walk.avals[(vid[1], 0)], r)).n}
    for index, flags in zip(born_ids, born):
        e = walk.equations.get(index)
        if e is not None:
            e.born_at = int(flags[0]) if flags[0] >= 0 else None
            e.nan_born_at = int(flags[1]) if flags[1] >= 0 else None
    skipped = [f"inside {prim} (equation {i}): only its outputs are summarised"
               for i, prim in sorted(walk.skipped.items())]
    skipped += [f"inside {walk.equations[i].primitive} (equation {i}): {len(left)} values "
                f"not summarised (a compiled body summarises at most "
                f"{walk.compiled_budget}: XLA compiles a kernel for each)"
                for i, left in sorted(walk.capped.items()) if i in walk.equations]
    return Flow(summaries, walk.equations, walk.loops, skipped, walk.left_out, seconds,
                walk.results, by_zero, {i: walk.by_zero_in[i] for i in by_zero
                                        if i in walk.by_zero_in}, lanes=lanes)
