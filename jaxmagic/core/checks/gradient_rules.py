"""Rules JX7xx: gradients. A `jnp.where` that masks the elements where a function's
derivative is infinite still differentiates them: the gradient of
`jnp.where(x > 0, jnp.sqrt(x), 0.)` is NaN at every x ≤ 0 (JAX's FAQ), because the masked
branch's Inf derivative is multiplied by the mask's 0 (`0 · inf`).

The rule fires only on the exact shape it can prove: a function that the cell
differentiates (`jax.grad`, `value_and_grad`, `vjp`, `jacrev`, `hessian`, NNX's and
Equinox's forms; the function itself, by name or as a decorator) calls `jnp.where(C, A, B)`
where C compares an expression X with 0, and the branch kept where X > 0 applies `sqrt`,
`log` (`log2`, `log10`, `rsqrt`, `arctanh`) to X or divides by X. `%jaxpr --values` finds
the same NaN at run time, at the backward equation and at this line."""
from __future__ import annotations

import ast

_GRADS = {"jax.grad", "jax.value_and_grad", "jax.vjp", "jax.jacrev", "jax.hessian",
          "flax.nnx.grad", "flax.nnx.value_and_grad", "equinox.filter_grad",
          "equinox.filter_value_and_grad", "equinox.filter_vjp"}
_SINGULAR = {"jax.numpy.sqrt": "sqrt", "jax.numpy.log": "log", "jax.numpy.log2": "log2",
             "jax.numpy.log10": "log10", "jax.lax.rsqrt": "rsqrt",
             "jax.numpy.arctanh": "arctanh", "jax.lax.sqrt": "sqrt", "jax.lax.log": "log"}
# comparison with 0 → the branch (1: where's second argument, 2: its third) kept where the
# compared expression is positive, for `X op 0` and for `0 op X`
_KEPT = {ast.Gt: (1, 2), ast.GtE: (1, 2), ast.Lt: (2, 1), ast.LtE: (2, 1),
         ast.Eq: (2, 2), ast.NotEq: (1, 1)}


def _is_zero(node) -> bool:
    return type(node) is ast.Constant and node.value == 0 and \
        not isinstance(node.value, bool)


class GradientRules:
    """Mixin of `Analyzer`: a `jnp.where` over a singular derivative under `grad`."""

    def _differentiated(self) -> set[str]:
        """The names of the functions this source differentiates."""
        found = getattr(self, "_grad_names", None)
        if found is not None:
            return found
        found = self._grad_names = set()
        try:
            tree = ast.parse(self.src)
        except SyntaxError:
            return found
        for node in ast.walk(tree):
            if type(node) is ast.Call and self.resolve(node.func) in _GRADS and node.args \
                    and type(node.args[0]) is ast.Name:
                found.add(node.args[0].id)
            elif type(node) in (ast.FunctionDef, ast.AsyncFunctionDef) and any(
                    self.resolve(d.func if type(d) is ast.Call else d) in _GRADS
                    for d in node.decorator_list):
                found.add(node.name)
        return found

    def _where_gradient(self, node: ast.Call, ctx) -> None:
        """JX701: `jnp.where(X > 0, f(X), ...)` in a differentiated function."""
        names = self._differentiated()
        scope = ctx
        while scope is not None and (scope.fn is None or scope.fn.name not in names):
            scope = scope.parent
        cond = node.args[0]
        if scope is None or type(cond) is not ast.Compare or len(cond.ops) != 1:
            return
        left, right, op = cond.left, cond.comparators[0], type(cond.ops[0])
        if op not in _KEPT or not (_is_zero(left) or _is_zero(right)):
            return
        x = ast.unparse(right if _is_zero(left) else left)
        branch = node.args[_KEPT[op][1 if _is_zero(left) else 0]]
        what = self._singular_use(branch, x)
        if what is None:
            return
        self.add("JX701", node, f"the gradient of {what} is NaN wherever {x} <= 0: "
                 "jnp.where discards that branch's value, but its gradient is still "
                 "computed (an Inf derivative times the mask's 0).",
                 f"make the discarded elements safe too (the double where): "
                 f"safe = jnp.where({ast.unparse(cond)}, {x}, 1.0), then use safe inside "
                 f"{what.split('(')[0]}(...)")

    def _singular_use(self, branch, x: str) -> str | None:
        """`sqrt(x)` or `1 / x` where `branch` applies one to the expression `x`."""
        for sub in ast.walk(branch):
            if type(sub) is ast.Call and sub.args and ast.unparse(sub.args[0]) == x:
                name = _SINGULAR.get(self.resolve(sub.func) or "")
                if name:
                    return f"{name}({x})"
            if type(sub) is ast.BinOp and type(sub.op) is ast.Div and \
                    ast.unparse(sub.right) == x:
                return f"a division by {x}"
        return None
