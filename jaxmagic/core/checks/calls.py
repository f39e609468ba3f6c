"""Calls, evaluated: JAX, NumPy, math and builtin functions, array methods, `.at[]`
updates and user functions (jitted ones bind their arguments; helpers called from traced
code are scheduled with the traced parameters).
"""
from __future__ import annotations

import ast
import math

from .jaxapi import (
    _ARRAY_ATTRS,
    _BOOL_FUNCS,
    _BUILTINS,
    _DTYPE64,
    _FLOAT_FUNCS,
    _JAX_PREFIXES,
    _JNP_STATIC,
    _LAX_BINARY,
    _LAX_STATIC,
    _NP_STATIC_OK,
    _SHAPE_ARGS,
    _SHAPE_KWARGS,
    _SIZED,
)
from .libraries import kind_of_call
from .scopes import _Ctx, _scope
from .values import (
    AV,
    UNKNOWN,
    FuncInfo,
    _at_parts,
    _concrete,
    _const_ints,
    _derived,
    _int_const,
    _jax,
    _literal_shape,
    _num_const,
    _traced,
    _traced_elt,
    _tracer,
)

# lax functions that map over a pytree and return the same structure
_TREE_LAX = {"psum", "pmean", "pmax", "pmin", "all_gather", "ppermute", "all_to_all",
             "psum_scatter", "stop_gradient", "optimization_barrier", "pbroadcast",
             "pshuffle", "pvary"}

_PRINTS = {"builtins.print", "jax.debug.print"}


class Calls:
    """Mixin of `Analyzer`: the value of a call, and the rules that look at calls."""

    def _call(self, node: ast.Call, ctx: _Ctx) -> AV:
        func = node.func
        q = self.resolve(func) if type(func) in (ast.Name, ast.Attribute) else None
        if q is not None and type(func) is ast.Name and self._shadowed(func.id, ctx):
            q = None
        if q is None and type(func) is ast.Name and func.id in _BUILTINS and \
                self._lookup(func.id, ctx) is UNKNOWN:
            q = "builtins." + func.id
        if q in _PRINTS and ctx.fn is not None:
            # a global that is only printed does not make the computation stale (JX304)
            reads = dict(ctx.fn.global_reads)
            try:
                return self._known_call(node, q, *self._arguments(node, ctx), ctx)
            finally:
                ctx.fn.global_reads.clear()
                ctx.fn.global_reads.update(reads)
        args, kwargs = self._arguments(node, ctx)
        if q is not None:
            return self._known_call(node, q, args, kwargs, ctx)
        # methods and user functions
        if type(func) is ast.Attribute:
            at = _at_parts(node)
            if at is not None:
                return self._at_call(node, at, args, ctx)
            recv = self.ev(func.value, ctx)
            return self._method(node, recv, func.attr, args, kwargs, ctx)
        fv = self.ev(func, ctx)
        if fv.kind == "nnxclass":
            return AV("nnxmodule")
        if fv.kind == "func" and fv.func is not None:
            return self._user_call(node, fv.func, args, kwargs, ctx)
        if type(func) is ast.Call:     # jax.jit(f, ...)(args)
            inner = self.resolve(func.func)
            if inner in ("jax.jit", "jax.pmap") and func.args and \
                    type(func.args[0]) is ast.Name:
                fns = self.visible_defs(func.args[0].id, _scope(ctx))
                if fns:
                    return self._user_call(node, fns[-1], args, kwargs, ctx)
            if inner == "jax.grad" and args and args[0].kind == "jax":
                return _jax(traced=ctx.traced)     # the gradient has the argument's kind
        return _derived(ctx.traced and any(_traced(a) for a in args))

    def _arguments(self, node: ast.Call, ctx: _Ctx) -> tuple[list[AV], dict[str, AV]]:
        return ([self.ev(a, ctx) for a in node.args],
                {k.arg: self.ev(k.value, ctx) for k in node.keywords})

    def _known_call(self, node, q: str, args, kwargs, ctx: _Ctx) -> AV:
        lib = kind_of_call(q, node)
        if lib is not None:
            return AV("ref" if lib == "nnxvar" and self.state.hijax else lib)
        if q.startswith("flax.nnx.") and q.endswith(("var_defaults", "use_hijax")):
            on = [k.value for k in node.keywords if k.arg == "hijax"] + node.args[:1]
            if on and type(on[0]) is ast.Constant:
                self.state.hijax = bool(on[0].value)
        any_traced = any(_traced(a) for a in args) or any(_traced(v) for v in
                                                          kwargs.values())
        if q.startswith("builtins."):
            return self._builtin(node, q[9:], args, kwargs, ctx)
        if q.startswith(_JAX_PREFIXES):
            return self._jax_call(node, q, args, kwargs, ctx, any_traced)
        if q.startswith("numpy."):
            return self._np_call(node, q, args, kwargs, ctx)
        if q.startswith("math.") and ctx.traced:
            if any(_tracer(a) for a in args):
                self._math_on_tracer(node, q[5:])
            return AV("float")
        if q.startswith("random.") and ctx.staged and ctx.fn is not None:
            self._randomness(node, q, ctx)
            return AV("float")
        if q in ("jax.device_put", "jax.block_until_ready"):
            a = args[0] if args else UNKNOWN
            return _jax(traced=_traced(a), shape=a.shape, dtype=a.dtype)
        if q == "jax.device_get":
            return AV("np")
        if q in ("jax.jit", "jax.pmap", "jax.vmap", "jax.grad", "jax.value_and_grad",
                 "jax.checkpoint", "jax.remat"):
            fn = None
            if node.args and type(node.args[0]) is ast.Name:
                fns = self.visible_defs(node.args[0].id, _scope(ctx))
                fn = fns[-1] if fns else None
            if q in ("jax.jit", "jax.pmap") and fn is not None:
                return AV("func", func=fn)
            return AV("jaxfunc")
        if q.startswith("jax.debug."):
            return AV("none")
        if q.startswith("jax.experimental.checkify."):
            return AV("static")
        if q.startswith(("jax.tree", "jax.tree_util")):
            return UNKNOWN
        return UNKNOWN          # other jax.* functions: not known to make arrays

    def _builtin(self, node, name: str, args, kwargs, ctx: _Ctx) -> AV:
        if name == "print":
            if ctx.staged and ctx.fn is not None:
                self._print(node, args, ctx)
            return AV("none")
        if name in ("int", "float", "complex") and args:
            if _tracer(args[0]) and ctx.traced:
                self._concrete_cast(node, name, ctx)
            return AV(name, dtype=f"{name}*")
        if name == "bool" and args:
            if _tracer(args[0]) and ctx.traced:
                self._control_flow(node, node.args[0], ctx, "bool")
            return AV("bool")
        if name == "range":
            for a, n in zip(args, node.args):
                t = _traced_elt(a)
                if t is not None and ctx.traced:
                    self._int_use(n, t, ctx, "as a loop bound in range()", range_call=node)
                    break
            return AV("range")
        if name == "len":
            return AV("int", dtype="int*")
        if name in ("max", "min") and ctx.traced:
            if (len(args) >= 2 and any(_tracer(a) for a in args)) or \
                    (len(args) == 1 and _tracer(args[0])):
                self._builtin_minmax(node, name)
                return _jax(traced=True)
            return AV("static")
        if name in ("isinstance", "hasattr", "callable", "type", "id", "getattr",
                    "issubclass", "repr", "str", "tuple", "list", "dict", "set", "sorted",
                    "enumerate", "zip", "sum", "abs", "round", "reversed", "map", "filter",
                    "iter", "next", "any", "all", "divmod", "pow", "frozenset", "hash"):
            if name in ("sum", "abs", "round", "pow", "divmod") and any(_traced(a) for a in
                                                                        args):
                return _jax(traced=True) if any(_tracer(a) for a in args) else _derived(True)
            if name in ("tuple", "list") and args:
                return AV(name, traced=_traced(args[0]), elts=args[0].elts)
            if name in ("any", "all") and args and _tracer(args[0]) and ctx.traced:
                self._control_flow(node, node.args[0], ctx, "bool")
            if name == "zip":
                return AV("zip", traced=any(_traced(a) for a in args), elts=args)
            if name == "enumerate":
                return AV("enumerate", traced=any(_traced(a) for a in args),
                          elts=[AV("int", dtype="int*")] + args[:1])
            return AV("static") if name not in ("tuple", "list", "dict", "set") else AV(name)
        return UNKNOWN

    def _jax_call(self, node, q: str, args, kwargs, ctx: _Ctx, any_traced: bool) -> AV:
        mod, _, name = q.rpartition(".")
        if mod == "jax.lax" and name in _TREE_LAX and args and args[0].kind != "jax":
            a = args[0]            # lax.pmean(metrics_dict, ...): a dict stays a dict
            return AV(a.kind, traced=_traced(a)) if a.kind else _derived(_traced(a))
        if (mod == "jax.numpy" and name in _JNP_STATIC) or (mod == "jax.lax" and
                                                             name in _LAX_STATIC):
            return AV("static")
        # shape-position arguments must be static
        if ctx.traced:
            for pos in _SHAPE_ARGS.get(q, ()):
                if pos < len(args):
                    self._shape_arg(node.args[pos], args[pos], ctx, q)
            for k in node.keywords:
                if k.arg in _SHAPE_KWARGS:
                    self._shape_arg(k.value, kwargs[k.arg], ctx, q)
            if mod == "jax.numpy" and name in _SIZED and "size" not in kwargs:
                self._sized(node, name, args, ctx)
            elif q == "jax.numpy.where" and len(args) == 1 and "size" not in kwargs:
                self._sized(node, "where", args, ctx)
            elif q == "jax.numpy.repeat" and len(args) > 1 and _tracer(args[1]) and \
                    "total_repeat_length" not in kwargs:
                self._int_use(node.args[1], args[1], ctx, "as repeats in jnp.repeat "
                              "(add total_repeat_length=N)")
        if mod == "jax.lax" and name in _LAX_BINARY and len(args) == 2:
            self._lax_mixed(node, name, args)
        if q == "jax.numpy.where" and len(node.args) == 3:
            self._where_gradient(node, ctx)
        if not self.x64:
            self._x64(node, q, name, args, kwargs)
        if q in ("jax.experimental.checkify.check",):
            return AV("none")
        # result
        traced = any_traced or ctx.traced
        from_shape = None
        if ctx.traced and not any_traced and mod == "jax.numpy" and node.args and \
                self._is_shape_expr(node.args[0], ctx):
            from_shape = node
        boolean = (mod == "jax.numpy" and name in _BOOL_FUNCS) or (
            name in ("any", "all") and mod == "jax.numpy")
        shape, dtype = self._ctor_shape_dtype(q, name, node, args, kwargs)
        if dtype is None and name in _FLOAT_FUNCS and (mod == "jax.numpy" or
                                                       mod == "jax.nn"):
            dtype = "float?"
        if not ctx.traced and any(a.traced for a in args):
            traced = True
        av = _jax(traced=traced and (ctx.traced or any_traced), boolean=boolean,
                  shape=shape, dtype=dtype, shape_src=from_shape)
        if from_shape is None and any_traced:
            src = next((a.shape_src for a in args if a.shape_src is not None), None)
            if src is not None and all(a.shape_src is not None or not _traced(a)
                                       for a in args):
                av.shape_src = node       # the whole static-shape computation
        return av

    def _ctor_shape_dtype(self, q, name, node, args, kwargs):
        shape = dtype = None
        mod = q.rpartition(".")[0]
        dt = node.keywords and next((k.value for k in node.keywords if k.arg == "dtype"),
                                    None)
        if mod == "jax.numpy":
            if name in ("zeros", "ones", "empty", "full") and node.args:
                v = _const_ints(node.args[0])
                if v is not None:
                    shape = tuple(v)
                dtype = "float32"
                if name == "full" and len(args) > 1 and args[1].dtype:
                    dtype = args[1].dtype.rstrip("*") + ("32" if args[1].dtype.endswith("*")
                                                         else "")
                    dtype = {"bool32": "bool"}.get(dtype, dtype)
            elif name == "arange":
                nums = [_num_const(a) for a in node.args]
                if nums and len(nums) <= 3 and all(n is not None for n in nums):
                    start, stop, step = (0, nums[0], 1) if len(nums) == 1 else \
                        (nums[0], nums[1], nums[2] if len(nums) == 3 else 1)
                    if step:
                        shape = (max(0, math.ceil((stop - start) / step)),)
                if node.args and all(a.kind == "int" for a in args):
                    dtype = "int32"
                elif node.args and any(a.kind == "float" for a in args):
                    dtype = "float32"
            elif name in ("array", "asarray") and node.args:
                shape, kinds = _literal_shape(node.args[0])
                if kinds:
                    dtype = "bool" if kinds == {"bool"} else "float32" if "float" in kinds \
                        else "int32" if kinds <= {"int", "bool"} else None
                elif args and args[0].kind == "jax":
                    shape, dtype = args[0].shape, args[0].dtype
            elif name in ("eye", "identity") and node.args:
                n = _int_const(node.args[0])
                m = _int_const(node.args[1]) if len(node.args) > 1 and name == "eye" else n
                if n is not None and m is not None:
                    shape = (n, m)
                dtype = "float32"
            elif name == "linspace":
                num = _int_const(node.args[2]) if len(node.args) > 2 else next(
                    (_int_const(k.value) for k in node.keywords if k.arg == "num"), 50)
                if num is not None:
                    shape = (num,)
                dtype = "float32"
            elif name in _DTYPE64 or name in ("float32", "int32", "float16", "bfloat16",
                                              "int8", "uint8", "int16", "uint32"):
                dtype = name if name not in _DTYPE64 or self.x64 else _DTYPE64[name]
        elif mod == "jax.random" and name in ("normal", "uniform") and len(node.args) > 1:
            v = _const_ints(node.args[1])
            if v is not None:
                shape = tuple(v)
            dtype = "float32"
        if dt is not None:
            if type(dt) is ast.Constant and isinstance(dt.value, str):
                dtype = dt.value
            elif type(dt) in (ast.Attribute, ast.Name):
                r = self.resolve(dt)
                last = (r or (dt.id if type(dt) is ast.Name else dt.attr)).rsplit(".", 1)[-1]
                dtype = {"float": "float32", "int": "int32", "bool_": "bool",
                         "complex": "complex64"}.get(last, last)
        if dtype in _DTYPE64 and not self.x64:
            dtype = _DTYPE64[dtype]
        return shape, dtype

    def _np_call(self, node, q: str, args, kwargs, ctx: _Ctx) -> AV:
        parts = q.split(".")
        if len(parts) >= 3 and parts[1] == "random":
            if ctx.staged and ctx.fn is not None:
                self._randomness(node, q, ctx)
            return AV("np")
        if len(parts) == 3 and parts[2] == "at" and node.args:
            self._ufunc_at(node, parts[1], args)
            return AV("none")
        name = parts[-1]
        if ctx.traced and name not in _NP_STATIC_OK and any(_tracer(a) for a in args):
            self._numpy_on_tracer(node, name, top_level=len(parts) == 2)
            return _jax(traced=True)
        if name in ("prod", "sum") and node.args and self._is_shape_expr(node.args[0], ctx):
            return AV("int", dtype="int*")
        shape, dtype = None, None
        if name in ("float32", "int32"):
            dtype = name
        return AV("np", shape=shape, dtype=dtype)

    def _method(self, node, recv: AV, meth: str, args, kwargs, ctx: _Ctx) -> AV:
        any_traced = recv.traced or any(_traced(a) for a in args)
        if recv.kind == "jax" and meth not in _ARRAY_ATTRS:
            return UNKNOWN
        if recv.kind == "jax":
            if meth in ("item", "tolist", "__float__", "__int__", "__index__"):
                if recv.traced and ctx.traced:
                    self._concrete_item(node, meth)
                    return AV("static")
                return UNKNOWN      # a Python number or list: `l = x.tolist(); l[0] = 1` is fine
            if meth in ("reshape", "broadcast_to") and ctx.traced:
                for a, n in zip(args, node.args):
                    self._shape_arg(n, a, ctx, "reshape")
            if meth == "astype" and node.args and not self.x64:
                self._dtype64(node.args[0], node)
            shape = recv.shape if meth in ("astype", "block_until_ready", "copy") else None
            if meth == "reshape":
                v = _const_ints(node.args[0]) if len(node.args) == 1 else \
                    _const_ints(ast.Tuple(node.args, ast.Load()))
                shape = tuple(v) if v is not None and all(i >= 0 for i in v) else None
            dtype = recv.dtype
            if meth == "astype" and node.args:
                dtype = None
            boolean = meth in ("any", "all")
            if meth in ("any", "all", "sum", "mean", "max", "min", "prod", "argmax",
                        "argmin", "std", "var"):
                shape = None
            src = node if recv.shape_src is not None and not any(
                _traced(a) and a.shape_src is None for a in args) else None
            return _jax(traced=any_traced, shape=shape, dtype=dtype, boolean=boolean,
                        shape_src=src)
        if recv.kind == "method" or recv.kind == "atref":
            return _jax(traced=any_traced)
        if recv.kind == "np":
            return AV("np")
        self._outer_mutation(node, meth, args, ctx)
        if recv.kind == "func" and recv.func is not None:
            return UNKNOWN
        if recv.kind in ("static", "int", "float", "str"):
            return AV("static")
        if recv.kind is None and recv.traced:
            return _derived(True)
        return AV(None, traced=any_traced and ctx.traced and recv.kind in ("tuple",
                                                                            "list"))

    def _at_call(self, node, at, args, ctx: _Ctx) -> AV:
        base_node, idx_node, op = at
        base = self.ev(base_node, ctx)
        idx = self.ev(idx_node, ctx)
        if base.kind == "jax":
            if idx.boolean and _traced(idx) and ctx.traced and op in ("set", "add",
                                                                      "multiply", "get"):
                self._bool_mask_at(node, base_node, idx_node, op)
            has_mode = any(k.arg == "mode" for k in node.keywords)
            if not has_mode:
                fake = ast.Subscript(base_node, idx_node, ast.Load())
                ast.copy_location(fake, node)
                fake.end_lineno, fake.end_col_offset = node.end_lineno, node.end_col_offset
                self._oob(fake, base, idx_node, read=(op == "get"), at_op=op, call=node)
        return _jax(traced=base.traced or _traced(idx) or any(_traced(a) for a in args),
                    shape=base.shape if op != "get" else None, dtype=base.dtype)

    def _user_call(self, node, fn: FuncInfo, args, kwargs, ctx: _Ctx) -> AV:
        if fn.transform in ("jit", "pmap"):
            self._jit_args(node, fn, args, kwargs, ctx)
            self.state.called.add(fn.name)
            if fn.wrapper_name:
                self.state.called.add(fn.wrapper_name)
            got = self._returned(fn, self._schedule(fn, fn.parent))
            return got if ctx.traced else _concrete(got)
        # a helper called from a traced function: analyse it with those params traced
        if ctx.traced and type(fn.node) is not ast.Lambda:
            traced_params = set()
            avs = {}
            for p, a in zip(fn.params, args):
                if p.startswith("*"):
                    break
                if _traced(a):
                    traced_params.add(p)
                    avs[p] = a
            for k, v in kwargs.items():
                if k in fn.params and _traced(v):
                    traced_params.add(k)
                    avs[k] = v
            if traced_params:
                self._helper_avs.setdefault(id(fn.node), avs)
                key = self._schedule(fn, fn.parent, frozenset(traced_params), ctx.staged)
                return self._returned(fn, key)
        return UNKNOWN
