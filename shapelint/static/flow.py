"""Dataflow through compiled regions: what is a tensor, a size, a scalar argument, module state.

An abstract interpreter over libcst nodes. It walks each compiled entry's body in evaluation
order, keeps a Value per local name, follows calls into the tree's helpers, methods and
submodules (context-sensitive on the argument values, memoized), and hands every *site* to the
rules through the public API in :mod:`shapelint.api`. It records the calls it follows in a
networkx call graph.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple

import libcst as cst
import networkx as nx

from shapelint import api
from shapelint.api import (GLOBAL, MASK, MODULE, MODULE_LIST, OPTIONAL, RANGE, SCALAR, SHAPE, SIZE,
                           STATE, TENSOR, TENSOR_SEQ, UNKNOWN, Origin, Value)
from shapelint.static.project import ClassInfo, FunctionInfo, ModuleInfo, Project, dotted

MAX_DEPTH = 12

TENSOR_NON_TENSOR_METHODS = frozenset({
    "dim", "ndimension", "is_contiguous", "is_floating_point", "is_complex", "get_device",
    "element_size", "data_ptr", "stride", "storage_offset", "type", "is_pinned", "is_shared",
    "is_sparse", "is_nonzero", "has_names", "untyped_storage", "storage", "nbytes", "itemsize",
    "is_set_to", "is_signed", "is_inference", "__len__", "_version"})
TENSOR_SCALAR_METHODS = frozenset({"item", "tolist", "numpy"})
MASK_METHODS = frozenset({"eq", "ne", "gt", "ge", "lt", "le", "isnan", "isinf", "isfinite",
                          "isneginf", "isposinf", "logical_and", "logical_or", "logical_not",
                          "logical_xor", "bool", "any", "all", "isclose", "eq_", "signbit"})
SEQ_METHODS = frozenset({"split", "chunk", "unbind", "tensor_split", "split_with_sizes",
                         "hsplit", "vsplit", "dsplit"})
TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "data", "grad", "real", "imag"})
MODULE_NAMESPACES = ("torch.jit.", "torch.compiler.", "torch._dynamo.", "torch.cuda.",
                     "torch.backends.", "torch.distributed.", "torch.library.", "torch._C.",
                     "torch.autograd.", "torch.utils.", "torch.testing.", "torch.fx.",
                     "torch._logging.", "torch.mps.", "torch.xpu.", "torch.profiler.",
                     "torch.amp.", "torch.overrides.", "torch.accelerator.", "torch.hub.",
                     "torch.onnx.", "torch.export.", "torch.package.", "torch.nn.init.",
                     "torch.nn.utils.", "torch.nn.parameter.")
TORCH_NON_TENSOR = frozenset({"torch._check", "torch._check_is_size", "torch._check_with",
                              "torch._assert", "torch.cond", "torch.no_grad", "torch.enable_grad",
                              "torch.inference_mode", "torch.set_grad_enabled", "torch.autocast",
                              "torch.device", "torch.dtype", "torch.Generator", "torch.finfo",
                              "torch.iinfo", "torch.typename", "torch.sym_int", "torch.sym_float",
                              "torch.sym_max", "torch.sym_min", "torch.sym_not", "torch.manual_seed",
                              "torch.set_default_dtype", "torch.Size"})
TORCH_MASK_FUNCS = frozenset({"torch." + m for m in MASK_METHODS})
SIZE_PRESERVING_MATH = frozenset({"math.ceil", "math.floor", "math.trunc", "math.sqrt",
                                  "math.prod", "math.gcd", "math.lcm", "math.isqrt"})
MUTATORS = frozenset({"append", "extend", "insert", "pop", "popitem", "update", "setdefault",
                      "clear", "add", "remove", "discard", "appendleft"})
PASSTHROUGH_BUILTINS = frozenset({"list", "tuple", "reversed", "sorted", "iter"})


class FunctionContext:
    """One function being walked, as rules see it (``site.fn``)."""

    def __init__(self, info: FunctionInfo, root: str) -> None:
        self.info = info
        self.module: ModuleInfo = info.module
        self.root = root
        #: the statement the walk is in: where to look first for a node's position
        self.stmt: Optional[cst.CSTNode] = None

    @property
    def symbol(self) -> str:
        return self.info.symbol

    @property
    def qualname(self) -> str:
        return self.info.qualname

    @property
    def path(self) -> str:
        return self.module.path

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code(node)

    def line(self, node: cst.CSTNode) -> int:
        return self.position(node)[0]

    def position(self, node: cst.CSTNode, near: Optional[cst.CSTNode] = None):
        return self.module.position(node, self.info, near)

    def describe(self, origin: Optional[Origin]) -> str:
        """``x.shape[0]`` (line 12), with the file when it is another one."""
        if origin is None:
            return "a tracked value"
        where = f"line {origin.line}" if origin.path == self.path else f"{origin.path}:{origin.line}"
        return f"`{origin.text}` ({where})"


Dispatch = Callable[[str, api.Site], None]


class Analyzer:
    """Walks compiled regions of a Project and dispatches sites to rules."""

    def __init__(self, project: Project, dispatch: Dispatch,
                 scalar_names: Sequence[str] = ()) -> None:
        self.project = project
        self.dispatch = dispatch
        self.graph: nx.DiGraph = nx.DiGraph()
        #: (function, kinds of its arguments) -> (result, the arguments it was walked with)
        self._memo: Dict[Tuple, Tuple[Value, Dict[str, Value]]] = {}
        self._stack: List[str] = []
        self.scalar_names = tuple(scalar_names)

    # -- entry points -------------------------------------------------------------------------
    def analyze_entry(self, fn: FunctionInfo) -> None:
        self.graph.add_node(fn.qualname, entry=True, path=fn.module.path)
        args = self._entry_args(fn)
        self._analyze(fn, args, root=fn.qualname)

    def _entry_args(self, fn: FunctionInfo) -> Dict[str, Value]:
        """Values of a compiled entry's parameters: tensors unless they look like scalars."""
        out: Dict[str, Value] = {}
        where = FunctionContext(fn, fn.qualname)
        if fn.node is None:  # libcst could not parse it; the engine reports that
            return out
        params = list(fn.node.params.params) + list(fn.node.params.kwonly_params)
        if fn.is_method and params:
            params = params[1:]
        for p in params:
            name = p.name.value
            origin = Origin.of_node(p.name, where, fn.module.path, fn.symbol,
                                    scope=fn.qualname, text=name, near=fn.node)
            kind = self._param_kind(p)
            if kind in ("int", "bool", "float"):
                out[name] = Value(frozenset({SCALAR}), origin, detail=kind)
            elif kind == "optional":
                out[name] = Value(frozenset({TENSOR, OPTIONAL}), origin)
            elif kind == "tensor":
                out[name] = Value(frozenset({TENSOR}), origin)
            else:
                out[name] = UNKNOWN
        return out

    def _param_kind(self, p: cst.Param) -> str:
        ann = dotted(p.annotation.annotation) if p.annotation else None
        if p.annotation is not None and ann is None:
            text = cst.Module([]).code_for_node(p.annotation.annotation)
            if "Tensor" in text:
                return "optional" if "Optional" in text or "None" in text else "tensor"
            return "other"
        if ann in ("int", "bool", "float"):
            return ann
        if ann and ann.split(".")[-1] == "Tensor":
            return "tensor"
        if ann:
            return "other"
        d = p.default
        if isinstance(d, cst.Integer):
            return "int"
        if isinstance(d, cst.Float):
            return "float"
        if isinstance(d, cst.Name) and d.value in ("True", "False"):
            return "bool"
        if isinstance(d, cst.Name) and d.value == "None":
            return "optional"
        if d is not None:
            return "other"
        if p.name.value in self.scalar_names or _looks_like_int(p.name.value):
            return "int"
        return "tensor"

    # -- calls ----------------------------------------------------------------------------------
    def _analyze(self, fn: FunctionInfo, args: Dict[str, Value], root: str) -> Value:
        """Walk ``fn`` with ``args``, once per distinct *kind* of arguments.

        The memo ignores where the arguments came from and which entry got here: a helper
        that twenty forwards call with a tensor is walked once, not twenty times (findings
        are per source line anyway). A reused result is rebased onto the caller's origins."""
        key = (id(fn), tuple(sorted((k, _shape_of(v)) for k, v in args.items())))
        hit = self._memo.get(key)
        if hit is not None:
            return _rebase(hit[0], hit[1], args)
        if fn.qualname in self._stack or len(self._stack) >= MAX_DEPTH:
            return UNKNOWN
        self._memo[key] = (UNKNOWN, args)
        self._stack.append(fn.qualname)
        try:
            walker = Walker(self, FunctionContext(fn, root), args)
            result = walker.run()
        finally:
            self._stack.pop()
        self._memo[key] = (result, args)
        return result

    def call(self, caller: FunctionContext, callee: FunctionInfo, args: Dict[str, Value]) -> Value:
        self.graph.add_edge(caller.qualname, callee.qualname)
        self.graph.nodes[callee.qualname].setdefault("path", callee.module.path)
        return self._analyze(callee, args, caller.root)

    def reads_of(self, cls: ClassInfo) -> set:
        """``self.<attr>`` names loaded anywhere in the class's methods and its bases'."""
        names: set = set()
        for c in self.project.mro(cls):
            names |= c.reads
        return names


def _shape_of(v: Value) -> Tuple:
    """What of a value decides a walk: its kinds and flags, not its origin, except the entry a
    scalar argument belongs to (whether it is reported depends on that entry being nested)."""
    elems = tuple(_shape_of(e) for e in v.elems) if v.elems is not None else None
    scope = v.origin.scope if v.origin is not None and SCALAR in v.kinds else ""
    return (v.kinds, v.direct, v.zero_one, v.detail, elems, scope)


def _rebase(result: Value, seen: Dict[str, Value], now: Dict[str, Value]) -> Value:
    """``result`` of a walk with arguments ``seen``, for a call with ``now``: a value that
    passed through from an argument gets that argument's origin in this call."""
    moves = {v.origin: now[k].origin for k, v in seen.items()
             if k in now and v.origin is not None and now[k].origin is not None
             and v.origin != now[k].origin}
    if not moves:
        return result

    def move(v: Value) -> Value:
        elems = tuple(move(e) for e in v.elems) if v.elems is not None else None
        origin = moves.get(v.origin, v.origin) if v.origin is not None else None
        if origin is v.origin and elems == v.elems:
            return v
        return v.with_(origin=origin, elems=elems)

    return move(result)


def _looks_like_int(name: str) -> bool:
    """Unannotated parameters whose names say 'count' or 'length' (``n``, ``num_heads``...)."""
    if name in ("n", "k", "m", "step", "steps", "offset", "idx", "index", "length", "count",
                "seq_len", "seqlen", "dim_size", "num_nodes", "max_len", "max_length", "pos",
                "start_pos", "position", "layer_idx", "chunk_size", "block_size", "window"):
        return True
    return name.startswith(("num_", "n_", "max_", "min_")) or name.endswith(("_len", "_size", "_idx",
                                                                             "_count", "_steps"))


def _is_self_attr(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) \
        and node.value.value == "self"


def _int_literal(node: cst.CSTNode) -> Optional[int]:
    if isinstance(node, cst.Integer):
        try:
            return int(node.value, 0)
        except ValueError:
            return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _int_literal(node.expression)
        return -inner if inner is not None else None
    return None


class Walker:
    """Walks one function body with an environment of Values."""

    def __init__(self, analyzer: Analyzer, ctx: FunctionContext, args: Dict[str, Value]) -> None:
        self.a = analyzer
        self.ctx = ctx
        self.mod = ctx.module
        self.env: Dict[str, Value] = dict(args)
        self.returns = UNKNOWN
        self.cls = ctx.info.cls
        self._passthrough = False

    # -- helpers ----------------------------------------------------------------------------------
    def emit(self, hook: str, site: api.Site) -> None:
        site.near = self.ctx.stmt
        self.a.dispatch(hook, site)

    def origin(self, node: cst.CSTNode) -> Origin:
        """Where ``node``'s value comes from; its text and line are worked out if quoted."""
        return Origin.of_node(node, self.ctx, self.mod.path, self.ctx.symbol, near=self.ctx.stmt)

    def run(self) -> Value:
        node = self.ctx.info.node
        if node is not None:
            self.block(node.body.body)  # IndentedBlock or one-line suite alike
        return self.returns

    # -- statements -------------------------------------------------------------------------------
    def block(self, stmts: Sequence[cst.CSTNode]) -> None:
        for s in stmts:
            self.stmt(s)

    def suite(self, node: Optional[cst.CSTNode]) -> None:
        if node is None:
            return
        if isinstance(node, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            self.block(node.body)
        elif isinstance(node, cst.Else):
            self.suite(node.body)
        elif isinstance(node, cst.If):
            self.stmt(node)
        elif isinstance(node, cst.Finally):
            self.suite(node.body)

    def branches(self, *suites: Optional[cst.CSTNode]) -> None:
        """Walk alternative suites from the same state and join what each assigns."""
        start = dict(self.env)
        joined: Optional[Dict[str, Value]] = None
        for s in suites:
            self.env = dict(start)
            self.suite(s)
            if joined is None:
                joined = self.env
            else:
                # a name only one side has joins with UNKNOWN, which leaves it as it is
                for k, v in self.env.items():
                    j = joined.get(k)
                    if j is not v:
                        joined[k] = v if j is None else j.merge(v)
        self.env = joined if joined is not None else start

    def stmt(self, s: cst.CSTNode) -> None:
        self.ctx.stmt = s
        if isinstance(s, cst.SimpleStatementLine):
            for small in s.body:
                self.ctx.stmt = small
                self.small(small)
        elif _is_a(s, cst.BaseSmallStatement):  # the body of `if x: return y`
            self.small(s)
        elif isinstance(s, cst.If):
            self.condition(s.test, "if")
            self.branches(s.body, s.orelse)
        elif isinstance(s, cst.While):
            self.condition(s.test, "while")
            for _ in range(2):  # loop-carried values
                self.branches(s.body, None)
            self.suite(s.orelse)
        elif isinstance(s, (cst.For,)):
            it = self.ev(s.iter)
            self.emit("on_iteration", api.Iteration(s.iter, it, self.ctx))
            for _ in range(2):
                self.bind(s.target, self.elem(it, s.iter))
                self.branches(s.body, None)
            self.suite(s.orelse)
        elif isinstance(s, cst.With):
            for item in s.items:
                self.ev(item.item)
                if item.asname is not None:
                    self.bind(item.asname.name, UNKNOWN)
            self.suite(s.body)
        elif isinstance(s, (cst.Try, getattr(cst, "TryStar", cst.Try))):
            self.suite(s.body)
            for h in s.handlers:
                if h.name is not None:
                    self.bind(h.name.name, UNKNOWN)
                self.suite(h.body)
            self.suite(s.orelse)
            self.suite(s.finalbody)
        elif isinstance(s, cst.Match):
            self.condition(s.subject, "match")
            self.branches(*[c.body for c in s.cases])
        # nested defs and classes are analysed when called through a name we cannot resolve

    def small(self, s: cst.BaseSmallStatement) -> None:
        if isinstance(s, cst.Expr):
            self.ev(s.value)
        elif isinstance(s, cst.Assign):
            v = self.ev(s.value)
            for t in s.targets:
                self.bind(t.target, v, s.value)
        elif isinstance(s, cst.AnnAssign):
            if s.value is not None:
                self.bind(s.target, self.ev(s.value), s.value)
        elif isinstance(s, cst.AugAssign):
            right = self.ev(s.value)
            if _is_self_attr(s.target):
                current = self.ev(s.target)
                self.state_write(s.target, current.merge(right).derived(), "augassign", s)
            elif isinstance(s.target, cst.Name):
                cur = self.env.get(s.target.value, UNKNOWN)
                self.env[s.target.value] = cur.merge(right).derived() if not cur.is_tensor else cur
            else:
                self.bind(s.target, right, s.value)
        elif isinstance(s, cst.Return):
            if s.value is not None:
                self.returns = self.returns.merge(self.ev(s.value))
        elif isinstance(s, cst.Assert):
            self.condition(s.test, "assert")
            if s.msg is not None:
                self.ev(s.msg)
        elif isinstance(s, cst.Raise):
            if s.exc is not None:
                self.ev(s.exc)
        elif isinstance(s, cst.Del):
            pass

    # -- binding ----------------------------------------------------------------------------------
    def bind(self, target: cst.CSTNode, v: Value, value_node: Optional[cst.CSTNode] = None) -> None:
        if isinstance(target, cst.Name):
            self.env[target.value] = v
        elif isinstance(target, (cst.Tuple, cst.List)):
            elems = [e for e in target.elements]
            for i, e in enumerate(elems):
                if isinstance(e, cst.StarredElement):
                    self.bind(e.value, UNKNOWN)
                    continue
                self.bind(e.value, self.unpack(v, i, value_node))
        elif _is_self_attr(target):
            self.state_write(target, v, "assign", target)
        elif isinstance(target, cst.Subscript):
            base = target.value
            for el in target.slice:
                self._slice(el)
            if _is_self_attr(base):
                self.state_write(base, v, "item", target)
            else:
                self.ev(base)
        elif isinstance(target, cst.Attribute):
            self.ev(target.value)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, UNKNOWN)

    def unpack(self, v: Value, i: int, value_node: Optional[cst.CSTNode]) -> Value:
        if v.elems is not None:
            return v.elems[i] if i < len(v.elems) else UNKNOWN
        if v.is_shape and v.origin is not None:
            o = v.origin
            return Value(frozenset({SIZE}), o.derive("{}[%d]" % i), direct=True)
        if v.is_tensor or v.has(TENSOR_SEQ):
            return Value(frozenset({TENSOR}), v.origin)
        if v.has(MODULE_LIST):
            return Value(frozenset({MODULE}), detail=v.detail)
        return UNKNOWN

    def elem(self, v: Value, node: Optional[cst.CSTNode] = None) -> Value:
        """The value of one item when iterating ``v``."""
        if v.has("zip") and v.elems is not None:
            return Value(elems=tuple(self.elem(e) for e in v.elems))
        if v.has("enumerate") and v.elems:
            return Value(elems=(UNKNOWN, self.elem(v.elems[0])))
        if v.is_tensor or v.has(TENSOR_SEQ):
            return Value(frozenset({TENSOR}), v.origin)
        if v.is_shape and v.origin is not None:
            return Value(frozenset({SIZE}), v.origin.derive("a dim of {}"))
        if v.has(MODULE_LIST):
            return Value(frozenset({MODULE}), detail=v.detail)
        return UNKNOWN

    def state_write(self, attr_node: cst.Attribute, v: Value, op: str, node: cst.CSTNode) -> None:
        attr = attr_node.attr.value
        info = self.a.project.attr(self.cls, attr) if self.cls else None
        reads = self.a.reads_of(self.cls) if self.cls else set()
        read = attr in reads or op == "augassign"
        self.emit("on_state_write", api.StateWrite(node, v, self.ctx, attr=attr, op=op,
                                                   read_in_region=read,
                                                   attr_kind=info.kind if info else ""))

    # -- conditions -------------------------------------------------------------------------------
    def condition(self, expr: cst.BaseExpression, context: str) -> Value:
        if isinstance(expr, cst.BooleanOperation):
            left = self.condition(expr.left, context)
            right = self.condition(expr.right, context)
            return left.merge(right)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return self.condition(expr.expression, context)
        v = self.ev(expr)
        self.emit("on_condition", api.Condition(expr, v, self.ctx, context=context))
        return v

    # -- expressions ------------------------------------------------------------------------------
    def ev(self, node: cst.BaseExpression) -> Value:
        kind = type(node)
        try:
            method = _EV[kind]
        except KeyError:
            method = _EV[kind] = getattr(Walker, "ev_" + kind.__name__, None)
        if method is not None:
            return method(self, node)
        # any other expression (a dict or set display, await, yield...): the expressions in it
        for child in _sub_expressions(node):
            self.ev(child)
        return UNKNOWN

    def ev_leaf(self, node: cst.BaseExpression) -> Value:
        return UNKNOWN

    ev_Integer = ev_Float = ev_Imaginary = ev_SimpleString = ev_Ellipsis = ev_leaf

    def ev_Name(self, node: cst.Name) -> Value:
        v = self.env.get(node.value)
        if v is None:
            if node.value in self.mod.mutated_globals:
                v = Value(frozenset({GLOBAL}), self.origin(node), detail=node.value)
                self.emit("on_name_use", api.NameUse(node, v, self.ctx, name=node.value,
                                                     passthrough=self._passthrough))
                return v
            return UNKNOWN
        if v.is_scalar_arg:
            self.emit("on_name_use", api.NameUse(node, v, self.ctx, name=node.value,
                                                 passthrough=self._passthrough))
        return v

    def ev_Attribute(self, node: cst.Attribute) -> Value:
        attr = node.attr.value
        if isinstance(node.value, cst.Name) and node.value.value == "self" and self.cls is not None:
            if attr == "training":
                return UNKNOWN
            info = self.a.project.attr(self.cls, attr)
            if info is None:
                if self.a.project.method(self.cls, attr) is not None:
                    return UNKNOWN
                return Value(frozenset({STATE}), self.origin(node), detail="unknown")
            if info.kind == "module":
                return Value(frozenset({MODULE}), detail=info.cls)
            if info.kind == "module_list":
                return Value(frozenset({MODULE_LIST}), detail=info.cls)
            if info.kind == "tensor":
                return Value(frozenset({TENSOR}), self.origin(node))
            return Value(frozenset({STATE}), self.origin(node), detail=info.kind)
        base = self.ev(node.value)
        if base.is_tensor:
            if attr == "shape":
                return Value(frozenset({SHAPE}), self.origin(node))
            if attr in TENSOR_ATTRS:
                return Value(frozenset({TENSOR}), base.origin)
            return UNKNOWN
        if base.is_module and attr in ("weight", "bias"):
            return Value(frozenset({TENSOR}), self.origin(node))
        if base.is_state:
            return base.with_(elems=None)
        return UNKNOWN

    def _slice(self, el: cst.SubscriptElement) -> Tuple[Value, bool]:
        s = el.slice
        if isinstance(s, cst.Index):
            return self.ev(s.value), True
        for part in (s.lower, s.upper, s.step):
            if part is not None:
                self.ev(part)
        return UNKNOWN, False

    def ev_Subscript(self, node: cst.Subscript) -> Value:
        container = self.ev(node.value)
        indices = [self._slice(el) for el in node.slice]
        single = len(indices) == 1 and indices[0][1]
        idx = indices[0][0] if indices else UNKNOWN
        if container.is_shape:
            if single:
                return Value(frozenset({SIZE}), self.origin(node), direct=True)
            return Value(frozenset({SHAPE}), self.origin(node))
        if container.is_tensor:
            for iv, _ in indices:
                self.emit("on_subscript", api.Subscript(node, iv, self.ctx, container=container))
            return Value(frozenset({TENSOR}), container.origin)
        if container.has(MODULE_LIST):
            return Value(frozenset({MODULE}), detail=container.detail)
        if container.elems is not None and single:
            i = _int_literal(node.slice[0].slice.value) if isinstance(node.slice[0].slice, cst.Index) else None
            if i is not None and -len(container.elems) <= i < len(container.elems):
                return container.elems[i]
        self.emit("on_subscript", api.Subscript(node, idx, self.ctx, container=container))
        if container.is_state:
            return Value(frozenset({STATE}), self.origin(node), detail="item")
        return UNKNOWN

    def ev_Comparison(self, node: cst.Comparison) -> Value:
        left = self.ev(node.left)
        values = [left]
        for target in node.comparisons:
            values.append(self.ev(target.comparator))
        ops = [type(t.operator).__name__ for t in node.comparisons]
        if all(o in ("Is", "IsNot") for o in ops):  # identity: a Python bool, never a tensor
            if any(v.has(OPTIONAL) for v in values):
                return Value(frozenset({OPTIONAL}), self.origin(node))
            return UNKNOWN
        if any(v.is_tensor for v in values):
            return Value(frozenset({TENSOR, MASK}), self.origin(node))
        if any(v.is_shape for v in values) and not any(o in ("In", "NotIn") for o in ops):
            return Value(frozenset({SIZE}), self.origin(node))  # a whole shape compared
        if any(v.is_size for v in values):
            if len(node.comparisons) == 1 and ops[0] in ("Equal", "NotEqual", "LessThan",
                                                          "LessThanEqual", "GreaterThan",
                                                          "GreaterThanEqual"):
                right_node = node.comparisons[0].comparator
                pairs = ((left, right_node), (values[1], node.left))
                for v, other in pairs:
                    if v.is_size and v.direct and _int_literal(other) in (0, 1):
                        return Value(origin=v.origin, zero_one=True)
            return api.tracked(*values).derived().with_(kinds=api.tracked(*values).kinds - {SHAPE, MODULE})
        tracked = api.tracked(*values)
        if tracked.is_scalar_arg or tracked.is_state:
            return tracked.derived()
        return UNKNOWN

    def ev_BinaryOperation(self, node: cst.BinaryOperation) -> Value:
        left = self.ev(node.left)
        right = self.ev(node.right)
        self.emit("on_binary_op", api.BinaryOp(node, left.merge(right), self.ctx, left=left,
                                                right=right, op=type(node.operator).__name__))
        if left.is_tensor or right.is_tensor:
            kinds = {TENSOR}
            if isinstance(node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)) and \
                    (left.is_mask or right.is_mask):
                kinds.add(MASK)
            return Value(frozenset(kinds), left.origin or right.origin)
        if isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString)) and \
                isinstance(node.operator, cst.Modulo):
            self.emit("on_format", api.Format(node.right, right, self.ctx))
            return UNKNOWN
        merged = left.merge(right)
        if merged.is_shape:  # shape + tuple -> a shape
            return Value(frozenset({SHAPE}), merged.origin)
        return merged.derived()

    def ev_UnaryOperation(self, node: cst.UnaryOperation) -> Value:
        if isinstance(node.operator, cst.Not):
            v = self.condition(node.expression, "bool")
            return UNKNOWN if not v.is_tensor else v
        return self.ev(node.expression).derived()

    def ev_BooleanOperation(self, node: cst.BooleanOperation) -> Value:
        left = self.condition(node.left, "bool")
        right = self.ev(node.right)
        return left.merge(right)

    def ev_IfExp(self, node: cst.IfExp) -> Value:
        self.condition(node.test, "ifexp")
        return self.ev(node.body).merge(self.ev(node.orelse))

    def ev_NamedExpr(self, node: cst.NamedExpr) -> Value:
        v = self.ev(node.value)
        self.bind(node.target, v)
        return v

    def ev_Tuple(self, node: cst.Tuple) -> Value:
        vals = tuple(self.ev(e.value) for e in node.elements)
        return Value(elems=vals)

    ev_List = ev_Tuple

    def ev_FormattedString(self, node: cst.FormattedString) -> Value:
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                v = self.ev(part.expression)
                self.emit("on_format", api.Format(part.expression, v, self.ctx))
        return UNKNOWN

    def ev_Lambda(self, node: cst.Lambda) -> Value:
        return UNKNOWN

    def _comprehension(self, node: cst.BaseComp) -> Value:
        saved = dict(self.env)
        comp = node.for_in
        while comp is not None:
            it = self.ev(comp.iter)
            self.emit("on_iteration", api.Iteration(comp.iter, it, self.ctx))
            self.bind(comp.target, self.elem(it, comp.iter))
            for cond in comp.ifs:
                self.condition(cond.test, "if")
            comp = comp.inner_for_in
        if isinstance(node, cst.DictComp):
            self.ev(node.key)
            out = self.ev(node.value)
        else:
            out = self.ev(node.elt)
        self.env = saved
        return Value(out.kinds & {TENSOR}, out.origin) if out.is_tensor else UNKNOWN

    ev_ListComp = ev_SetComp = ev_GeneratorExp = ev_DictComp = _comprehension

    # -- calls ------------------------------------------------------------------------------------
    def _local_base(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` a value (a local, ``self``, a call result...) rather than a module path
        such as ``torch.nn.functional``?"""
        while isinstance(expr, cst.Attribute):
            expr = expr.value
        if isinstance(expr, cst.Name):
            return expr.value in self.env or expr.value == "self"
        return True

    def ev_Call(self, node: cst.Call) -> Value:
        func = node.func
        callee: Optional[str] = None
        method: Optional[str] = None
        receiver: Optional[Value] = None
        target: Optional[FunctionInfo] = None
        module_class = ""
        bound_self = False

        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) \
                and dotted(func.value.func) == "super" and self.cls is not None:
            method = func.attr.value
            for base in self.a.project.mro(self.cls)[1:]:
                if method in base.methods:
                    target = base.methods[method]
                    bound_self = True
                    break
        elif isinstance(func, cst.Attribute) and _is_self_attr(func) and self.cls is not None:
            method = func.attr.value
            info = self.a.project.attr(self.cls, method)
            fn = self.a.project.method(self.cls, method) if info is None else None
            if fn is not None:
                target, bound_self = fn, fn.is_method
                callee = fn.qualname
            else:
                receiver = self.ev(func)
                if receiver.is_module or receiver.has(MODULE_LIST):
                    module_class = receiver.detail
                    callee = f"self.{method}"
                    method = None
        elif isinstance(func, cst.Attribute) and self._local_base(func.value):
            method = func.attr.value
            receiver = self.ev(func.value)
            if receiver.is_state and method in MUTATORS and _is_self_attr(func.value):
                self.state_write(func.value, UNKNOWN, "method", node)
            if receiver.is_module and receiver.detail:
                cls = self.a.project.class_of(receiver.detail, self.mod)
                if cls is not None:
                    fn = self.a.project.method(cls, method)
                    if fn is not None:
                        target, bound_self = fn, True
        elif isinstance(func, cst.Name) and func.value in self.env:
            receiver = self.ev(func)
            if receiver.is_module:
                module_class = receiver.detail
        else:
            name = dotted(func)
            if name is not None:
                callee = self.mod.resolve(name)
                if isinstance(func, cst.Attribute) and name.split(".")[0] in self.mod.loggers:
                    method = func.attr.value
                obj = self.a.project.lookup(callee, self.mod) if "." in callee else None
                if obj is None and name in self.mod.functions:
                    obj = self.mod.functions[name]
                if isinstance(obj, FunctionInfo):
                    target = obj
                elif isinstance(obj, ClassInfo) and self.a.project.is_nn_module(obj):
                    module_class = obj.qualname
            else:
                receiver = self.ev(func)

        if module_class and target is None and receiver is not None and receiver.is_module:
            cls = self.a.project.class_of(module_class, self.mod)
            fwd = self.a.project.method(cls, "forward") if cls is not None else None
            if fwd is not None:
                target, bound_self = fwd, True

        # arguments
        follow = target is not None and not _is_disabled(target)
        self._passthrough = follow
        try:
            pos: List[Value] = []
            kw: Dict[str, Value] = {}
            starred = False
            for a in node.args:
                v = self.ev(a.value)
                if a.star:  # *args / **kwargs: later positions are unknown
                    starred = starred or a.star == "*"
                    continue
                if a.keyword is not None:
                    kw[a.keyword.value] = v
                elif not starred:
                    pos.append(v)
        finally:
            self._passthrough = False

        decorators = target.decorators if target is not None else ()
        has_fake = True
        if target is not None and target.name in target.module.custom_ops:
            op = target.module.custom_ops[target.name]
            has_fake = target.name in self.a.project.fake_names or op in self.a.project.fake_ops
        site = api.Call(node, UNKNOWN, self.ctx, callee=callee, method=method, receiver=receiver,
                        args=tuple(pos), kwargs=kw, decorators=decorators,
                        target_returns_value=target.returns_value if target else True,
                        has_fake=has_fake, module_class=module_class)
        self.emit("on_call", site)

        if target is not None:
            if _is_disabled(target) or target.name in target.module.custom_ops:
                return Value(frozenset({TENSOR}), self.origin(node)) \
                    if target.name in target.module.custom_ops else UNKNOWN
            return self._follow(target, pos, kw, bound_self)
        if module_class:
            if receiver is None:  # constructing a submodule inside the region
                return Value(frozenset({MODULE}), detail=module_class)
            return Value(frozenset({TENSOR}), self.origin(node))
        if receiver is not None and method is not None:
            return self._method_result(node, receiver, method, pos, kw)
        if callee is not None:
            return self._function_result(node, callee, pos, kw)
        return UNKNOWN

    def _follow(self, target: FunctionInfo, pos: List[Value], kw: Dict[str, Value],
                bound_self: bool) -> Value:
        params = list(target.params)
        if target.is_method and params and params[0] in ("self", "cls"):
            params = params[1:]
        bound: Dict[str, Value] = dict(zip(params, pos))
        names = set(params) | set(target.kwonly)
        for k, v in kw.items():
            if k in names:
                bound[k] = v
        return self.a.call(self.ctx, target, bound)

    def _method_result(self, node: cst.Call, recv: Value, method: str, pos: List[Value],
                       kw: Dict[str, Value]) -> Value:
        if recv.is_tensor:
            if method in TENSOR_SCALAR_METHODS or method in TENSOR_NON_TENSOR_METHODS:
                return UNKNOWN
            if method == "size":
                if pos or "dim" in kw:
                    return Value(frozenset({SIZE}), self.origin(node), direct=True)
                return Value(frozenset({SHAPE}), self.origin(node))
            if method in ("numel", "nelement"):
                return Value(frozenset({SIZE}), self.origin(node))
            if method in MASK_METHODS:
                return Value(frozenset({TENSOR, MASK}), self.origin(node))
            if method in SEQ_METHODS:
                return Value(frozenset({TENSOR_SEQ}), self.origin(node))
            return Value(frozenset({TENSOR}), self.origin(node))
        if recv.is_shape:
            if method == "numel":
                return Value(frozenset({SIZE}), self.origin(node))
            return UNKNOWN
        if recv.is_state:
            return Value(frozenset({STATE}), self.origin(node), detail="item")
        if recv.is_size:
            return recv.derived()
        return UNKNOWN

    def _function_result(self, node: cst.Call, callee: str, pos: List[Value],
                         kw: Dict[str, Value]) -> Value:
        first = pos[0] if pos else UNKNOWN
        if callee == "len":
            if first.is_tensor:
                return Value(frozenset({SIZE}), self.origin(node), direct=True)
            if first.is_state:
                return first.derived()
            return UNKNOWN
        if callee in ("int", "float", "bool", "str", "repr", "format"):
            if callee in ("str", "repr", "format"):
                self.emit("on_format", api.Format(node.args[0].value if node.args else node, first, self.ctx))
            if callee == "bool" and node.args:
                self.emit("on_condition", api.Condition(node.args[0].value, first, self.ctx, context="bool"))
            return UNKNOWN  # a concrete Python value from here on
        if callee in ("min", "max", "abs", "round", "sum", "divmod", "pow"):
            merged = api.tracked(*pos)
            if merged.is_tensor and callee in ("min", "max"):
                return Value(frozenset({TENSOR}), self.origin(node))
            return merged.derived()
        if callee == "range":
            merged = api.tracked(*pos)
            if merged.is_size or merged.is_scalar_arg or merged.is_state:
                return Value(frozenset({RANGE}) | (merged.kinds & {SIZE, SCALAR, STATE}),
                             merged.origin)
            return UNKNOWN
        if callee == "zip":
            return Value(frozenset({"zip"}), elems=tuple(pos))
        if callee == "enumerate":
            return Value(frozenset({"enumerate"}), elems=tuple(pos[:1]))
        if callee in PASSTHROUGH_BUILTINS:
            return first
        if callee.startswith("math."):
            if callee in SIZE_PRESERVING_MATH and (first.is_size or first.is_scalar_arg):
                return first.derived()
            return UNKNOWN
        if callee.startswith("torch."):
            if callee in TORCH_NON_TENSOR or callee.startswith(MODULE_NAMESPACES):
                if callee == "torch.Size":
                    return Value(frozenset({SHAPE}), self.origin(node))
                return UNKNOWN
            last = callee.rsplit(".", 1)[-1]
            if last.startswith(("is_", "are_", "get_", "set_")):
                return UNKNOWN
            if callee.startswith("torch.nn.") and last[:1].isupper():
                return Value(frozenset({MODULE}), detail=callee)
            if callee in TORCH_MASK_FUNCS:
                return Value(frozenset({TENSOR, MASK}), self.origin(node))
            if last in SEQ_METHODS:
                return Value(frozenset({TENSOR_SEQ}), self.origin(node))
            return Value(frozenset({TENSOR}), self.origin(node))
        return UNKNOWN


#: the ``ev_`` method of each node type (None: evaluate the expressions inside)
_EV: Dict[type, Optional[Callable[["Walker", cst.CSTNode], Value]]] = {}
_IS_A: Dict[Tuple[type, type], bool] = {}
#: fields that hold punctuation and whitespace, never an expression
_NO_EXPRESSION = frozenset({"lpar", "rpar", "lbrace", "rbrace", "lbracket", "rbracket",
                            "comma", "colon", "equal", "star", "semicolon", "dot"})


def _is_a(node: cst.CSTNode, base: type) -> bool:
    """``isinstance`` against libcst's abstract bases, by type, remembered: an ABC check
    costs several times a plain one, and the walk asks hundreds of thousands of times."""
    key = (type(node), base)
    hit = _IS_A.get(key)
    if hit is None:
        hit = _IS_A[key] = isinstance(node, base)
    return hit


def _sub_expressions(node: cst.CSTNode) -> List[cst.BaseExpression]:
    """The outermost expressions inside ``node``, in source order (through the elements of a
    dict, set or list display, the arguments of a subscript...)."""
    out: List[cst.BaseExpression] = []
    for name in node.__dataclass_fields__:
        if name in _NO_EXPRESSION or name.startswith("whitespace"):
            continue
        value = getattr(node, name)
        for part in (value if isinstance(value, (list, tuple)) else (value,)):
            if isinstance(part, cst.CSTNode):
                if _is_a(part, cst.BaseExpression):
                    out.append(part)
                else:
                    out.extend(_sub_expressions(part))
    return out


def _is_disabled(fn: FunctionInfo) -> bool:
    return any(d in api.DISABLE_DECORATORS for d in fn.decorators)
