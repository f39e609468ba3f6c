"""The first NaN or Inf's card: where it was born (line, pass, iteration, the JAX
function the line called), why (from the mathematics of its primitive, or the derivative
it is in a gradient), the fix, and where it stopped short of the results. `Origin` is the
part of `Values` that finds it on the drawn graph."""
from __future__ import annotations

from dataclasses import dataclass

from ..core import nonfinite
from ..core.flow import Equation
from ..core.jaxprs import CALLS
from ..graph.model import Cluster, Node
from .costs import _chain


@dataclass
class Card:
    """Where the first non-finite value was born, why, and the fix."""
    what: str           # "NaN", "+Inf"
    primitive: str
    where: str
    source: str
    backward: bool
    cause: str
    fix: str
    iteration: str = ""          # "iteration 37 of scan ×60"
    first_nan: str = ""          # where the first NaN was made of it, if elsewhere
    nan_primitive: str = ""      # that equation's primitive (where jax_debug_nans stops)
    gradient_of: str = ""        # the forward primitive whose derivative the Inf is
    discarded: bool = False      # a jnp.where at that line discards the branch
    reached: bool = True         # it reached the call's results
    within: str = ""             # the JAX function the line called (`jnp.linalg.norm`)
    absorbed: str = ""           # where it stopped short of the results, and how
    dropped: bool = False        # by a select: nothing is wrong with the results
    rewrite: tuple | None = None     # (equation, primitive): a fix a run can check
    checked: bool | None = None      # that run's results all finite (None: not run)

    def lines(self) -> list[str]:
        side = "backward pass" if self.backward else "forward pass"
        within = f" in {self.within}" if self.within else ""
        out = [f"first {self.what}: {self.primitive}{within} at {self.where or '?'} "
               f"({side})" + (f", {self.iteration}" if self.iteration else "")
               + (" · discarded: no result holds NaN or Inf" if self.dropped else ""),
               f"  {self.source}" if self.source else "",
               f"cause: {self.cause}"]
        if self.gradient_of:
            out.append(f"the {self.what} is the derivative of {self.gradient_of}"
                       + ("; jnp.where discards that branch's value, but its gradient is "
                          "still computed, and 0 · inf = NaN" if self.discarded else ""))
        if self.first_nan:
            out.append(f"the first NaN: {self.first_nan} (where jax_debug_nans stops)")
        fix = f"{nonfinite.DOUBLE_WHERE}; or {self.fix}" if self.discarded else self.fix
        if self.dropped:
            out.append(f"nothing to fix for these results: {self.absorbed} drops it "
                       f"before them; under jax.grad of this code the fix would be "
                       f"(unchecked): {fix}")
            return [x for x in out if x]
        if not self.reached:
            out.append(f"no result holds NaN or Inf, but {self.absorbed}: the results "
                       "are finite and wrong" if self.absorbed else
                       "no result holds NaN or Inf: nothing they are made of reads it")
        out.append(f"fix ({self.verdict()}): {fix}")
        return [x for x in out if x]

    def verdict(self) -> str:
        """Whether the fix was run: with it, the results all finite or not."""
        if self.checked is None or self.rewrite is None:
            return "unchecked"
        change = nonfinite.REWRITES[self.rewrite[1]][1]
        return f"checked: with {change} the gradient " + \
            ("is finite" if self.checked else "still holds NaN or Inf") + " on these arguments"



class Origin:
    """Finds the card on `self.flow` (the run) and `self.full` (the graph), by the nodes
    its equations are drawn as (`self._node_of`); mixed into `Values`."""

    def _iteration(self, eqn: Equation, at: int | None) -> str:
        if not eqn.loops or at is None:
            return ""
        kind, length, _ = self.flow.loops.get(eqn.loops[0], ("loop", -1, False))
        return f"iteration {at} of {kind}" + (f" ×{length}" if length > 0 else "")

    @property
    def card(self) -> Card | None:
        eqn = self.flow.origin()
        if eqn is None:
            return None
        node = self._node_of.get(eqn.index) or self._body_of(eqn)
        what = nonfinite.made(self.flow, eqn)
        why = nonfinite.cause(self.flow, eqn)
        at = eqn.born_at if eqn.born_at is not None else eqn.nan_born_at
        card = Card(what, eqn.primitive, self._line(node) if node else "",
                    node.source if node else "", self._backward(node), why.what,
                    why.fix, self._iteration(eqn, at),
                    reached=self.flow.reached_results())
        card.within = self._within(eqn, card.backward)
        self._absorbed(card)
        nan = self.flow.first_nan()
        if nan is not None and (nan.index != eqn.index or what != "NaN"):
            n = self._node_of.get(nan.index)
            later = self._iteration(nan, nan.nan_born_at) if nan.index == eqn.index else ""
            card.first_nan = (f"{nan.primitive} at {self._line(n) if n else '?'}"
                              f"{' (backward pass)' if self._backward(n) else ''}"
                              f"{', ' + later if later else ''}: "
                              f"{nonfinite.cause(self.flow, nan, nan=True).what}")
            card.nan_primitive = nan.primitive
        else:
            card.nan_primitive = eqn.primitive if what == "NaN" else ""
        self._gradient(card, eqn)
        return card

    def _within(self, eqn: Equation, backward: bool) -> str:
        """The JAX function the line called, where it is not the primitive itself; a
        custom_vjp's backward rule, whose equations JAX places at its call."""
        name = eqn.called.rsplit(".", 1)[-1]
        if name == "custom_vjp":
            return "the backward rule of a jax.custom_vjp called" if backward else ""
        return "" if name in (eqn.primitive, "arc" + eqn.primitive[1:], "custom_jvp") \
            else eqn.called

    def _absorbed(self, card: Card) -> None:
        """Where a NaN or Inf that reached no result stopped, and how: a select drops
        it; x / inf = 0 makes wrong finite values of it."""
        if card.reached:
            return
        eqn = self.flow.absorbed()
        loop = self._lanes()
        if eqn is None and loop is not None:
            card.dropped = True
            card.absorbed = (f"the vmapped while_loop at {self._line(loop) or '?'} (its "
                             "body runs on every lane, and a lane that has finished keeps "
                             "its carry)")
        if eqn is None:
            return
        n = self._node_of.get(eqn.index)
        where = self._line(n) if n else "?"
        card.dropped = self._dropped()
        card.absorbed = f"a select (jnp.where) at {where}" if card.dropped else \
            f"{eqn.primitive} at {where} makes finite values of it" + \
            (" (x / inf = 0)" if eqn.primitive == "div" else "")

    def _dropped(self) -> bool:
        """A NaN or Inf that reached no result because a select dropped it: the results
        are right (x / inf = 0 instead makes them wrong)."""
        eqn = self.flow.absorbed()
        return not self.flow.reached_results() and (
            eqn.primitive == "select_n" if eqn is not None else self._lanes() is not None)

    def _lanes(self) -> Cluster | None:
        """The vmapped while_loop around the origin that drops what its body made for
        lanes that had finished, where it made a NaN or Inf there (its group)."""
        origin = self.flow.origin()
        loop = next((i for i in (origin.loops if origin else ())
                     if self.flow.lanes.get(i)), None)
        return None if loop is None else \
            self._body_of(Equation(loop, "while", (), ()))

    def _body_of(self, eqn: Equation):
        """The group a body run as one equation is drawn as (a scan, a shard_map): the
        nearest around the first equation inside it."""
        inside = [e for e in self._node_of if e > eqn.index]
        if not inside:
            return None
        chain = _chain(self.full, self._node_of[min(inside)].cluster)[::-1]
        kind = CALLS.get(eqn.primitive, eqn.primitive)
        return next((self.full.clusters[c] for c in chain
                     if self.full.clusters[c].kind == kind), None)

    def _gradient(self, card: Card, eqn: Equation) -> None:
        """In a gradient, an Inf born at a line one of whose forward primitives, run
        before it, has an infinite derivative at the point its input was at: the cause
        is that derivative, the fix that primitive's; and a user's `jnp.where` at that
        line discards the branch, not its gradient."""
        node = self._node_of.get(eqn.index)
        line = self._line(node) if node is not None else ""
        if not line or not any(c.backward for c in self.full.clusters.values()):
            return
        at_line = [self.flow.equations[i] for i, n in sorted(self._node_of.items())
                   if i in self.flow.equations and self._line(n) == line
                   and not self._backward(n)]
        found = nonfinite.derivative(self.flow, [e for e in at_line if e.index < eqn.index])
        if found is None:
            return
        card.cause, card.fix = found.what, found.fix
        if found.primitive in nonfinite.REWRITES:
            card.rewrite, card.checked = (found.index, found.primitive), self.checked
        card.gradient_of = f"{found.primitive} at {found.point} ({line})"
        card.discarded = any(e.primitive == "select_n" and e.called in ("", "jnp.where")
                             for e in at_line)

    def _backward(self, n: Node | None) -> bool:
        """In the backward pass: the node, or a call it is drawn in (`jnp.linalg.norm`'s
        jit)."""
        return n is not None and (n.backward or any(
            self.full.clusters[c].backward for c in self._around(n)))

    def _around(self, n: Node | Cluster) -> list[int]:
        """The clusters a node is drawn in, or a cluster and those around it, innermost
        first."""
        return _chain(self.full, n.id if isinstance(n, Cluster) else n.cluster)[::-1]

    def _line(self, n: Node | Cluster) -> str:
        """A node's line, or the line of the call around it (a library's `_where`)."""
        if n.where:
            return n.where
        chain = self._around(n)
        return next((self.full.clusters[c].where for c in chain
                     if self.full.clusters[c].where), "")
