"""Dataflow through compiled regions: types, sizes and which dims vary, per expression.

An abstract interpreter over libcst nodes. It walks each compiled entry's body in evaluation
order with a :class:`~shapelint.values.Value` per local name, follows calls into the tree's
helpers, methods and submodules (once per kind of arguments, memoized), asks ``results.py``
what library calls return, and hands every *site* to the rules through :mod:`shapelint.api`.

It walks what Dynamo would trace: code under ``if not torch.compiler.is_compiling():`` or
``if torch.jit.is_scripting():`` is dead in a region, a branch on a flag the caller fixed is
walked on the side it takes, and a path that only raises (a validation check) is never walked:
the sites in it never run while the model works. It records the calls it follows in a
networkx call graph.
"""

from __future__ import annotations

import re
import time
from typing import Callable, Dict, FrozenSet, List, Optional, Protocol, Sequence, Set, Tuple, Union, cast

import libcst as cst
import networkx as nx

from shapelint import api
from shapelint.static import callees, dynamo, results, shapes
from shapelint.static.frames import Frames
from shapelint.static.project import (SELF_ITEMS, ClassInfo, FunctionInfo, ModuleInfo, Project,
                                      default_pairs, dotted as _dotted)
from shapelint.static.regions import Regions
from shapelint.static.types import ast_literal, ast_param_kinds, kinds_of_ast_annotation, literal
from shapelint.values import (CONST_DIM, NUMBERS, SEQUENCES, UNKNOWN, UNKNOWN_DIM, BuiltItems, Dim,
                              DimInfo, Dims, Kind, Origin, Tag, Value, join_dims, tracked)

MAX_DEPTH = 12
#: how deep one expression may nest before the walk stops following it (deeper code is
#: reported by the engine as too deeply nested, not walked on the C stack until it overflows)
MAX_EXPRESSION_DEPTH = 200
MUTATORS = frozenset({"append", "extend", "insert", "pop", "popitem", "update", "setdefault",
                      "clear", "add", "remove", "discard", "appendleft"})
#: builtins that iterate over their (tensor) arguments
ITERATING_BUILTINS = frozenset({"list", "tuple", "zip", "enumerate", "iter", "sorted",
                                "reversed", "set", "frozenset", "dict", "map", "filter"})
_KEPT = frozenset({Tag.SIZE, Tag.SCALAR, Tag.STATE, Tag.DATA, Tag.GLOBAL, Tag.INSTANCE, Tag.REMAINDER})
_BOOL = frozenset({Kind.BOOL})
_REMAINDER = frozenset({Tag.REMAINDER})
_NONE = Value(kinds=frozenset({Kind.NONE}), const=None)  # a model output's field not given
_INT = frozenset({Kind.INT})
_TENSOR = frozenset({Kind.TENSOR})
_MAYBE_TENSOR = frozenset({Kind.TENSOR, Kind.OBJECT})
_STATE = frozenset({Tag.STATE})
_STATE_PER_INSTANCE = frozenset({Tag.STATE, Tag.INSTANCE})
_INSTANCE = frozenset({Tag.INSTANCE})


class TooDeep(Exception):
    """An expression nests deeper than the walk follows."""


class TooSlow(Exception):
    """An entry's walk ran past ``max-walk-seconds``."""


class FunctionContext:
    """One function being walked, as rules see it (``site.fn``; see :class:`api.Function`)."""

    def __init__(self, info: FunctionInfo, root: str,
                 instance: Optional[ClassInfo] = None, project: Optional[Project] = None) -> None:
        self.info = info
        self.project = project
        self.module: ModuleInfo = info.module
        self.root = root
        #: the class of ``self``: a subclass of the one defining the method, or its own
        self.instance = instance if instance is not None else info.cls
        #: the statement the walk is in: where to look first for a node's position
        self.stmt: Optional[cst.CSTNode] = None
        #: (class, attribute) the region stored on ``self`` before this function began
        self.stored_earlier: FrozenSet[Tuple[str, str]] = frozenset()

    @property
    def symbol(self) -> str:
        return self.info.symbol

    @property
    def qualname(self) -> str:
        return self.info.qualname

    @property
    def path(self) -> str:
        return self.module.path

    @property
    def is_method(self) -> bool:
        return self.info.is_method

    @property
    def parameters(self) -> Tuple[str, ...]:
        args = self.info.tree.args
        return tuple(a.arg for a in args.posonlyargs + args.args + args.kwonlyargs)

    @property
    def _self_class(self) -> Optional[ClassInfo]:
        """The class of ``self`` where the walk knows it (a method, with the project at hand)."""
        return self.instance if self.info.is_method and self.project is not None else None

    @property
    def self_is_module(self) -> bool:
        cls = self._self_class
        return cls is not None and self.project is not None and self.project.is_nn_module(cls)

    def state_assignments(self, path: str) -> List[Tuple[int, str]]:
        cls = self._self_class
        if cls is None or self.project is None:
            return []
        out = []
        for here, fn, line in self.project.state_assignments(self.info, cls, path):
            where = f"line {line}" if fn.module is self.module else f"{fn.module.path}:{line}"
            out.append((here, where if fn is self.info else f"`{fn.symbol}` ({where})"))
        return out

    def first_state_read(self, path: str) -> Optional[int]:
        return self.info.self_state.first_read.get("self." + path)

    def stored_before(self, attr: str) -> bool:
        cls = self._self_class
        return cls is not None and (cls.qualname, attr) in self.stored_earlier

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


class Journal(Protocol):
    """The reports of the walk under way (the engine keeps them)."""

    def mark(self) -> int: ...

    def retract(self, mark: int, path: str, symbol: str) -> None: ...

    def keep(self, mark: int) -> None: ...

    def forget_journal(self) -> None: ...


class Signature:
    """A function's parameters as the walk binds them: names in order, keyword-only names,
    and what the annotation or default says of each (the default's literal value too). Read
    from the ``ast`` summary: a callee the memo answers is never parsed with libcst."""

    def __init__(self, fn: FunctionInfo) -> None:
        self.params: List[str] = list(fn.params)
        self.kwonly: List[str] = list(fn.kwonly)
        self.kinds: Dict[str, frozenset] = {}
        self.defaults: Dict[str, Value] = {}
        #: what the return annotation says (``-> torch.Tensor | None``)
        self.returns = kinds_of_ast_annotation(fn.tree.returns)
        args = fn.tree.args
        #: the ``*args`` and ``**kwargs`` parameters' names
        self.star = args.vararg.arg if args.vararg is not None else None
        self.star_kw = args.kwarg.arg if args.kwarg is not None else None
        defaults = {a.arg: d for a, d in default_pairs(args)}
        for a in list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs):
            d = defaults.get(a.arg)
            self.kinds[a.arg] = ast_param_kinds(a.annotation, d)
            if d is not None:
                self.defaults[a.arg] = ast_literal(d)


def _module_item(v: Value) -> Value:
    """One module of a ModuleList or Sequential: the classes it may be and how each item was
    built (the strides SL106 reads)."""
    built = BuiltItems(v.const) if isinstance(v.const, tuple) else None
    return Value(kinds=frozenset({Kind.MODULE}), detail=v.detail, const=built)


def signature(fn: FunctionInfo) -> Signature:
    sig = getattr(fn, "_signature", None)
    if sig is None:
        sig = Signature(fn)
        fn._signature = sig  # type: ignore[attr-defined]
    return sig


class Analyzer:
    """Walks compiled regions of a Project and dispatches sites to rules."""

    def __init__(self, project: Project, dispatch: Dispatch, regions: Regions,
                 journal: Optional["Journal"] = None,
                 hooks: Optional[FrozenSet[str]] = None, by_entry: bool = True) -> None:
        self.project = project
        self.dispatch = dispatch
        #: the hooks some enabled rule implements (None: all); sites no rule reads and that
        #: never break the graph are not built
        self.hooks = hooks
        #: a helper's walk with a scalar argument of a compiled entry is kept for that entry
        #: alone (an enabled rule reports on which entry the argument belongs to, SL301's);
        #: otherwise one walk serves every entry whose scalar argument reaches it alike
        self.by_entry = by_entry
        #: the reports of the walk under way, so that a frame Dynamo skips can take its back
        self.journal = journal
        self.regions = regions
        self.graph: nx.DiGraph = nx.DiGraph()
        #: (function, kinds of its arguments) -> (result, the arguments it was walked with)
        self._memo: Dict[Tuple, Tuple[Value, Dict[str, Value]]] = {}
        self._stack: List[str] = []
        self.deadline = float("inf")
        #: which walks broke the graph (by memo key), and whether the last call's did: 0 no,
        #: 1 only once sizes are dynamic (see ``api.breaks_once_dynamic``), 2 whatever the sizes
        self._broke: Dict[Tuple, int] = {}
        self.callee_broke = 0
        #: walks under way in a frame Dynamo skipped (a graph break in a loop): sites there
        #: are not traced, so not handed to the rules
        self.eager = 0
        #: the values that are inputs of a traced frame (the entry's arguments, locals that
        #: crossed a graph break), by id; kept alive here so that no id is reused
        self.graph_inputs: Dict[int, Value] = {}
        #: (class, attribute) stored on ``self`` so far in the walk of the entry under way,
        #: in the order the region runs (``FunctionContext.stored_before``)
        self.stored: Set[Tuple[str, str]] = set()

    # -- entry points -------------------------------------------------------------------------
    def analyze_entry(self, fn: FunctionInfo) -> None:
        self.graph.add_node(fn.qualname, entry=True, path=fn.module.path)
        args = self.regions.entry_args(fn, FunctionContext(fn, fn.qualname, project=self.project))
        self.graph_inputs = {}
        self.stored = set()
        self.add_graph_inputs(args.values())
        limit = self.project.limits.max_walk_seconds
        self.deadline = time.monotonic() + limit
        try:
            self._analyze(fn, args, root=fn.qualname)
        except TooSlow:
            fn.module.function_errors.append((fn.tree.lineno, (
                f"the walk from `{fn.symbol}` stopped after {limit:g} s "
                f"(`max-walk-seconds`); findings from it are incomplete")))
            self._stack.clear()
        finally:
            if self.journal is not None:
                self.journal.forget_journal()

    def add_graph_inputs(self, values) -> None:
        for v in values:
            row = (v.item, *(v.item.elems or ())) if v.item is not None else ()
            for item in (v, *(v.elems or ()), *row):
                self.graph_inputs[id(item)] = item

    # -- calls ----------------------------------------------------------------------------------
    def _analyze(self, fn: FunctionInfo, args: Dict[str, Value], root: str,
                 flag_guarded: bool = False, instance: Optional[ClassInfo] = None) -> Value:
        """Walk ``fn`` with ``args``, once per distinct *kind* of arguments.

        The memo ignores where the arguments came from and which entry got here: a helper
        that twenty forwards call with a tensor is walked once, not twenty times (findings
        are per source line anyway). A reused result is rebased onto the caller's origins."""
        # called from a frame Dynamo skipped (it runs eagerly), the callee is a frame Dynamo
        # compiles on its own, its arguments its inputs (longformer's layers, called from an
        # encoder loop that broke, compile as frames of their own)
        own_frame = self.eager > 0
        if instance is fn.cls or not fn.is_method:
            instance = None  # the method's own class: one walk for every caller
        key = (id(fn), id(instance), flag_guarded, own_frame,
               root == fn.qualname,  # (see graph_break)
               tuple(sorted((k, _shape_of(v, self.by_entry)) for k, v in args.items())))
        hit = self._memo.get(key)
        if hit is not None:
            self.callee_broke = self._broke.get(key, 0)
            return _rebase(hit[0], hit[1], args)
        if fn.qualname in self._stack or len(self._stack) >= MAX_DEPTH:
            return UNKNOWN
        self._memo[key] = (UNKNOWN, args)
        self._stack.append(fn.qualname)
        eager, self.eager = self.eager, 0
        try:
            ctx = FunctionContext(fn, root, instance, self.project)
            ctx.stored_earlier = frozenset(self.stored)
            walker = Walker(self, ctx, args, flag_guarded, own_frame)
            result = walker.run()
            self._broke[key] = walker.frames.broke
        except (TooDeep, RecursionError):
            # reported as a file error; the function's callers and the other entries go on
            error = (fn.tree.lineno, f"`{fn.symbol}` is too deeply nested to analyse")
            if error not in fn.module.function_errors:
                fn.module.function_errors.append(error)
            result = UNKNOWN
        finally:
            self._stack.pop()
            self.eager = eager
        self._memo[key] = (result, args)
        self.callee_broke = self._broke.get(key, 0)
        return result

    def call(self, caller: FunctionContext, callee: FunctionInfo, args: Dict[str, Value],
             flag_guarded: bool = False, instance: Optional[ClassInfo] = None) -> Value:
        self.graph.add_edge(caller.qualname, callee.qualname)
        self.graph.nodes[callee.qualname].setdefault("path", callee.module.path)
        return self._analyze(callee, args, caller.root, flag_guarded, instance)

    def reads_of(self, cls) -> set:
        """``self.<attr>`` names loaded anywhere in the class's methods and its bases'."""
        names: set = set()
        for c in self.project.mro(cls):
            names |= c.reads
        return names


def _shape_of(v: Value, by_entry: bool = True) -> Tuple:
    """What of a value decides a walk: its kinds, tags, dims and literal, not its origin,
    except whether a scalar is an entry's argument and, ``by_entry``, which entry's (a rule
    that reports on the entry the argument belongs to needs a walk per entry)."""
    elems = tuple(_shape_of(e, by_entry) for e in v.elems) if v.elems is not None else \
        ("item", _shape_of(v.item, by_entry)) if v.item is not None else None
    scope: object = v.origin.scope if v.origin is not None and Tag.SCALAR in v.tags else ""
    if not by_entry:
        scope = bool(scope)
    const = v.const if isinstance(v.const, (bool, int, str, float, type(None))) else None
    return (v.kinds, v.tags, v.direct, v.zero_one, v.detail, elems, scope, v.dims, v.dim, const)


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


def _is_self_attr(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) \
        and node.value.value == "self"


def _literal_key(node: cst.Subscript) -> Optional[str]:
    """The string literal of ``d["key"]``, None for any other subscript."""
    if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        return _string_literal(node.slice[0].slice.value)
    return None


def _string_literal(node: Optional[cst.BaseExpression]) -> Optional[str]:
    """The text of a plain string literal (``"image"``), None for anything else."""
    if isinstance(node, cst.SimpleString):
        text = node.evaluated_value
        return text if isinstance(text, str) else None
    return None


def _int_literal(node: cst.BaseExpression) -> Optional[int]:
    v = literal(node).const
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def always_raises(node: Optional[cst.CSTNode]) -> bool:
    """Whether every path through a suite ends in ``raise`` (a validation failure)."""
    if node is None:
        return False
    if isinstance(node, cst.Else):
        return always_raises(node.body)
    if isinstance(node, (cst.IndentedBlock, cst.SimpleStatementSuite)):
        body = list(node.body)
        return bool(body) and always_raises(body[-1])
    if isinstance(node, cst.SimpleStatementLine):
        return bool(node.body) and isinstance(node.body[-1], cst.Raise)
    if isinstance(node, cst.Raise):
        return True
    if isinstance(node, cst.If):
        return node.orelse is not None and always_raises(node.body) and always_raises(node.orelse)
    return False


class Walker:
    """Walks one function body with an environment of Values."""

    def __init__(self, analyzer: Analyzer, ctx: FunctionContext, args: Dict[str, Value],
                 flag_guarded: bool = False, own_frame: bool = False) -> None:
        self.a = analyzer
        #: how many enclosing tests of Python settings the walk is under (a caller's count 1)
        self.flag_guards = 1 if flag_guarded else 0
        #: the caller's test of settings: whether this function runs at all, not which of
        #: its own paths do (given that it runs, its breaks end its frames as any other's)
        self.inherited_flag = self.flag_guards
        self.flag_test = False  # set by condition()
        #: how many enclosing tests of a Python value read from tensor data the walk is under
        #: (``if is_global_attn:`` after an ``.item()``): which side runs depends on the data
        self.data_guards = 0
        self.data_test = False  # set by condition()
        self.size_guards = 0  # tests of a varying size the current statement is under
        self.presence_guards = 0  # tests of whether an optional input was given
        #: where (in the journal) each `try:` body the statement is in began: Dynamo cannot
        #: resume after a break inside one (see Frames.graph_break)
        self.try_marks: List[int] = []
        self.size_test = False  # set by condition()
        self.ctx = ctx
        self.mod = ctx.module
        self.env: Dict[str, Value] = dict(args)
        self.returns = UNKNOWN
        self.cls = ctx.instance
        self._passthrough = False
        #: crossed names passed straight into the call whose arguments are being evaluated,
        #: and per call node the ones it took (see ``_guard_passed``)
        self._passed: Optional[List[Tuple[cst.Name, Value, Optional[cst.CSTNode]]]] = None
        self._passed_args: Dict[int, List[Tuple[cst.Name, Value, Optional[cst.CSTNode]]]] = {}
        self._depth = 0
        #: the path walked so far returned or raised
        self.done = False
        #: how many loops (and comprehensions, also counted alone) enclose the statement walked
        self.loops = 0
        self.comprehensions = 0
        #: per enclosing ``for`` loop, how many times it runs, as a dim (None: unknown)
        self.loop_lengths: List[Optional[DimInfo]] = []
        #: the dtype tests (source text) before the operand of an ``and`` being tested
        self._only_when: List[str] = []
        #: where the graph broke, and the ints each break hands to a resume frame
        self.frames = Frames(self, args, own_frame)

    # -- helpers ----------------------------------------------------------------------------------
    def emit(self, hook: str, site: api.Site) -> None:
        if self.a.eager:  # Dynamo gave up on this frame: it runs eagerly, nothing is traced
            return
        site.near = self.ctx.stmt
        site.flag_guarded = self.flag_guards > 0
        journal = self.a.journal
        mark = journal.mark() if journal is not None else 0
        self.a.dispatch(hook, site)
        if hook in ("on_call", "on_condition", "on_subscript", "on_slice") and \
                self.flag_guards == self.inherited_flag and \
                api.breaks_graph(hook, site):  # (a break under a setting's test may not run)
            if journal is not None:
                journal.keep(mark)
            self.graph_break(site.node, skips_loop=not api.breaks_once_dynamic(site))

    def graph_break(self, node: cst.CSTNode, skips_loop: bool = True) -> None:
        self.frames.graph_break(node, skips_loop)

    def pin(self, v: Value) -> None:
        """``v``, a size, was specialized here: its dim is a constant for the rest of the frame."""
        if api.varying_size(v) and not self.a.eager:
            self.frames.pin(cast(DimInfo, v.dim))

    def in_module_init(self) -> bool:
        return self.ctx.info.name == "__init__" and self.cls is not None and \
            self.a.project.is_nn_module(self.cls)

    def origin(self, node: cst.CSTNode) -> Origin:
        """Where ``node``'s value comes from; its text and line are worked out if quoted."""
        return Origin.of_node(node, self.ctx, self.mod.path, self.ctx.symbol, near=self.ctx.stmt)

    def local_base(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` a value (a local, ``self``, a call result...) rather than a module path
        such as ``torch.nn.functional``?"""
        while isinstance(expr, cst.Attribute):
            expr = expr.value
        if isinstance(expr, cst.Name):
            return expr.value in self.env or expr.value == "self"
        return True

    def run(self) -> Value:
        node = self.ctx.info.node
        self.frames.begin()
        try:
            if node is not None:
                self.block(node.body.body)  # IndentedBlock or one-line suite alike
            self.frames.frame_inputs()
        finally:
            self.frames.end()
        return self.returns

    # -- statements -------------------------------------------------------------------------------
    def block(self, stmts: Sequence[cst.CSTNode]) -> None:
        for s in stmts:
            if self.done:  # after a return or raise: dead code on this path
                return
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

    def branches(self, *arms: Tuple[Optional[cst.CSTNode], Dict[str, Value], bool]) -> int:
        """Walk alternative suites from the same state (each with the names its test narrows,
        and whether it runs only in some configurations) and join what each leaves behind.
        When every arm that reaches what follows broke the graph (whichever runs, what follows
        runs in a resumed frame): 2 if each arm's breaks include one that makes Dynamo skip a
        loop's frame, else 1; 0 when some arm did not break."""
        start = dict(self.env)
        pins = self.frames.pinned
        arm_pins: List[Dict[DimInfo, int]] = []
        joined: Optional[Dict[str, Value]] = None
        ended = 0
        every_arm_broke = every_arm_hard = True
        for suite, narrowed, configured in arms:
            self.env = dict(start)
            self.frames.pinned = dict(pins)
            self.env.update(narrowed)
            self.done = False
            self.flag_guards += configured
            breaks, hard = self.frames.count, self.frames.hard_count
            try:
                self.suite(suite)
            finally:
                self.flag_guards -= configured
            if self.done:  # this arm returned or raised: nothing of it reaches what follows
                ended += 1
                continue
            arm_pins.append(self.frames.pinned)
            every_arm_broke = every_arm_broke and self.frames.count > breaks
            every_arm_hard = every_arm_hard and self.frames.hard_count > hard
            if joined is None:
                joined = self.env
            else:
                # a name only one side has joins with UNKNOWN, which leaves it as it is
                for k, v in self.env.items():
                    j = joined.get(k)
                    if j is not v:
                        joined[k] = v if j is None else j.merge(v)
        self.env = joined if joined is not None else start
        # a dim stays pinned after the arms when every arm that goes on pinned it
        self.frames.pinned = {d: n for d, n in arm_pins[0].items()
                              if all(d in other for other in arm_pins[1:])} if arm_pins else dict(pins)
        self.done = bool(arms) and ended == len(arms)
        if joined is None or not every_arm_broke:
            return 0
        return 2 if every_arm_hard else 1

    def stmt(self, s: cst.CSTNode) -> None:
        self.ctx.stmt = s
        if time.monotonic() > self.a.deadline:
            raise TooSlow()
        try:
            if isinstance(s, cst.SimpleStatementLine):
                for small in s.body:
                    self.ctx.stmt = small
                    self.small(small)
            elif _is_a(s, cst.BaseSmallStatement):  # the body of `if x: return y`
                self.small(cast(cst.BaseSmallStatement, s))
            elif isinstance(s, cst.If):
                self.if_stmt(s)
            elif isinstance(s, cst.While):
                if self.truth(s.test) is False:
                    self.suite(s.orelse)
                    return
                self.condition(s.test, "while")
                self.loops += 1
                try:
                    for _ in range(2):  # loop-carried values
                        self.branches((s.body, {}, False), (None, {}, False))
                finally:
                    self.loops -= 1
                self.suite(s.orelse)
            elif isinstance(s, cst.For):
                it = self.ev(s.iter)
                self.emit("on_iteration", api.Iteration(s.iter, it, self.ctx))
                self.loops += 1
                self.loop_lengths.append(_iterations(it))
                try:
                    for _ in range(2):
                        self.bind(s.target, self.elem(it))
                        self.branches((s.body, {}, False), (None, {}, False))
                finally:
                    self.loops -= 1
                    self.loop_lengths.pop()
                self.suite(s.orelse)
            elif isinstance(s, cst.With):
                for item in s.items:
                    v = self.ev(item.item)
                    if item.asname is not None:
                        self.bind(item.asname.name, v if v.is_tensor else UNKNOWN)
                self.suite(s.body)
            elif isinstance(s, (cst.Try, getattr(cst, "TryStar", cst.Try))):
                s = cast(cst.Try, s)  # (TryStar has the same fields)
                journal = self.a.journal
                self.try_marks.append(journal.mark() if journal is not None else 0)
                try:
                    self.suite(s.body)
                finally:
                    self.try_marks.pop()
                self.done = False  # a handler may run after any statement of the body
                for h in s.handlers:
                    if always_raises(h.body):
                        continue  # re-raising: never runs while the model works
                    if h.name is not None:
                        self.bind(h.name.name, UNKNOWN)
                    # it runs or not: what it binds joins what the body bound (`except
                    # ImportError: scan = None` leaves `scan` a function or None)
                    self.branches((None, {}, False), (h.body, {}, False))
                self.suite(s.orelse)
                self.suite(s.finalbody)
                self.done = False
            elif isinstance(s, cst.Match):
                self.condition(s.subject, "match")
                self.branches(*[(c.body, {}, False) for c in s.cases])
            # nested defs and classes are analysed when called through a name we cannot resolve
        except RecursionError as exc:  # pragma: no cover - bounded by MAX_EXPRESSION_DEPTH
            raise TooDeep() from exc

    def if_stmt(self, s: cst.If) -> None:
        truth = self.truth(s.test)
        if truth is True:  # decided while tracing: no guard, the other side is dead code
            self.suite(s.body)
            return
        if truth is False:
            self.suite(s.orelse)
            return
        body_raises = always_raises(s.body)
        else_raises = always_raises(s.orelse)
        v = self.condition(s.test, "if", validates=body_raises or else_raises)
        fixed = _const_truth(v)  # a flag the caller passed, is_tracing() returning is_compiling()
        if fixed is not None:
            self.suite(s.body if fixed else s.orelse)
            return
        yes, no = self.narrow(s.test)
        flag, data, size = self.flag_test, self.data_test, self.size_test
        # a test of whether the caller passed an optional input of the compiled entry
        # (``if prompt_ids is None:``, ``elif input_ids is not None:``) is decided by how the
        # model is called, not by a configuration: both sides are paths callers take
        presence = self._tests_presence(yes, no)
        flag = flag and not presence
        arms: List[Tuple[Optional[cst.CSTNode], Dict[str, Value], bool]] = []
        if not body_raises:
            arms.append((s.body, yes, flag))
        if not else_raises:
            arms.append((s.orelse, no, flag))
        self.data_guards += data
        self.size_guards += size
        self.presence_guards += presence
        every_arm_broke = 0
        before = dict(self.env) if data or v.is_tensor else None
        try:
            if arms:
                every_arm_broke = self.branches(*arms)
        finally:
            self.data_guards -= data
            self.size_guards -= size
            self.presence_guards -= presence
        if before is not None:
            self._picked_by_data(before)
        if every_arm_broke and (data or size or presence) and len(arms) == 2:
            # each arm's break may not run, but one of them does: what follows the `if` runs
            # in a resumed frame that takes the live ints again (longformer: `seq_len` after
            # `if is_global_attn: ... else: ...`, both arms calling a helper that breaks)
            self.frames.graph_break(cast(cst.CSTNode, self.frames.last_break),
                                    skips_loop=every_arm_broke == 2)
        if body_raises != else_raises:  # a validation check: what it checked holds from here
            self.learn(s.test, holds=else_raises)

    def _picked_by_data(self, before: Dict[str, Value]) -> None:
        """After an ``if`` on tensor data, a Python value its arms bound differently is data
        too: LayerDrop's ``to_drop = True`` under ``if torch.rand([]) < p:`` is no setting,
        and ``if not to_drop: x = layer(x)`` runs the layer on most calls."""
        for name, v in self.env.items():
            if v is not before.get(name) and not v.is_tensor and v.kinds and \
                    v.kinds <= NUMBERS and Tag.DATA not in v.tags:
                self.env[name] = v.with_(tags=v.tags | {Tag.DATA}, const=None)

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
            if isinstance(s.target, cst.Subscript):
                # `x[m] *= w` reads x[m] before it writes: with a boolean mask that read is a
                # nonzero and breaks the graph (measured, torch 2.13), where `x[m] = w` does not
                self.ev(s.target)
            right = self.ev(s.value)
            if _is_self_attr(s.target):
                current = self.ev(s.target)
                self.state_write(s.target, current.merge(right).derived(), "augassign", s)
            elif isinstance(s.target, cst.Name):
                cur = self.env.get(s.target.value, UNKNOWN)
                if _bool_kept(cur, s.operator):  # `tracing |= ...` once tracing is True
                    return
                self.env[s.target.value] = self.arith(cur, right, s.operator)
            else:
                self.bind(s.target, right, s.value)
        elif isinstance(s, cst.Return):
            if s.value is not None:
                self.returns = self.returns.merge(self.ev(s.value))
            self.done = True
        elif isinstance(s, cst.Assert):
            self.condition(s.test, "assert", validates=True)
            self.learn(s.test, holds=True)
            # the message is built only when the assertion fails
        elif isinstance(s, cst.Raise):
            self.done = True  # the exception's message is built only on the failing path
        elif isinstance(s, (cst.Import, cst.ImportFrom)):
            self.local_import(s)
        elif isinstance(s, cst.Del):
            pass

    def local_import(self, s: Union[cst.Import, cst.ImportFrom]) -> None:
        """``from torch._higher_order_ops.associative_scan import associative_scan`` inside a
        function (an optional dependency tried at call time): the name calls that function."""
        if isinstance(s, cst.ImportFrom):
            if s.relative or s.module is None or isinstance(s.names, cst.ImportStar):
                return
            base = _dotted(s.module)
            pairs = [(a.evaluated_alias or a.evaluated_name, f"{base}.{a.evaluated_name}")
                     for a in s.names]
        else:
            pairs = [(a.evaluated_alias or a.evaluated_name.split(".")[0],
                      a.evaluated_name if a.asname else a.evaluated_name.split(".")[0])
                     for a in s.names]
        for name, qualname in pairs:
            self.bind(cst.Name(name), Value(kinds=frozenset({Kind.OBJECT}),
                                            detail=f"{callees.IMPORTED}{qualname}"))

    # -- binding ----------------------------------------------------------------------------------
    def bind(self, target: cst.CSTNode, v: Value, value_node: Optional[cst.CSTNode] = None) -> None:
        if isinstance(target, cst.Name):
            v = self.a.regions.named_length(target.value, v)
            self.env[target.value] = v
            self.frames.bound(target.value, v)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elems = [e for e in target.elements]
            for i, e in enumerate(elems):
                if isinstance(e, cst.StarredElement):
                    self.bind(e.value, UNKNOWN)
                    continue
                self.bind(e.value, self.unpack(v, i))
        elif _is_self_attr(target):
            self.state_write(target, v, "assign", target)
        elif isinstance(target, cst.Subscript):
            base = target.value
            for el in target.slice:
                self._slice(el)
            if _is_self_attr(base):
                self.state_write(base, v, "item", target)
            else:
                owner = self.ev(base)
                key = _literal_key(target)
                if isinstance(base, cst.Name) and key is not None and not owner.is_tensor:
                    self.env[base.value] = owner.store(key, v)
        elif isinstance(target, cst.Attribute):
            owner = self.ev(target.value)
            if isinstance(target.value, cst.Name) and not owner.is_tensor and not owner.is_module:
                # `outputs.pooler_output = torch.split(...)`: read back as what was stored
                self.env[target.value.value] = owner.store("." + target.attr.value, v)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, UNKNOWN)

    def unpack(self, v: Value, i: int) -> Value:
        if v.elems is not None:
            return v.elems[i] if i < len(v.elems) else UNKNOWN
        if v.is_shape and v.origin is not None:
            d = shapes.dims_of(v).at(i) if v.dims is not None and v.dims.rank is not None else \
                (shapes.dims_of(v).front[i] if v.dims is not None and i < len(v.dims.front) else None)
            return results.size_value(v.origin.derive("{}[%d]" % i), d, direct=True).with_(
                carriers=v.carriers)
        if v.is_tensor:
            return Value(kinds=_TENSOR, origin=v.origin,
                         dims=_drop0(v.dims))
        if v.is_tensor_seq:
            return Value(kinds=_TENSOR, origin=v.origin, dims=v.dims)
        if v.has(Kind.MODULES):
            return _module_item(v)
        return UNKNOWN

    def elem(self, v: Value) -> Value:
        """The value of one item when iterating ``v``."""
        if v.detail == "zip" and v.elems is not None:
            return Value(elems=tuple(self.elem(e) for e in v.elems))
        if v.detail == "enumerate" and v.elems:
            # over a ModuleList the index differs from layer to layer, as `layer_idx` does
            index = Value(kinds=_INT, tags=frozenset({Tag.INSTANCE})) \
                if v.elems[0].has(Kind.MODULES) else Value(kinds=_INT)
            return Value(elems=(index, self.elem(v.elems[0])))
        if v.is_tensor:
            return Value(kinds=_TENSOR, origin=v.origin, dims=_drop0(v.dims))
        if v.is_tensor_seq:
            if v.item is not None:
                return v.item
            if v.elems:
                return tracked(*v.elems)
            return Value(kinds=_TENSOR, origin=v.origin, dims=v.dims)
        if v.has(Kind.TENSOR_DICT):
            return Value(kinds=frozenset({Kind.STR}))
        if v.is_shape and v.origin is not None:
            return results.size_value(v.origin.derive("a dim of {}"),
                                      join_dims(*shapes.dims_of(v).all()))
        if v.has(Kind.MODULES):
            return _module_item(v)
        if v.has(Kind.RANGE):
            # `range(n)` over a varying size specializes n (the Dynamo table's `range` row):
            # each index is then a constant of the graph, not a size
            return Value(kinds=_INT, tags=v.tags & _KEPT - {Tag.SIZE}, origin=v.origin)
        if v.elems is not None and v.elems:
            return tracked(*v.elems)
        return UNKNOWN

    def state_write(self, target: cst.CSTNode, v: Value, op: str, node: cst.CSTNode) -> None:
        attr_node = cast(cst.Attribute, target)  # `self.x` (_is_self_attr)
        if self.ctx.info.name == "__init__":
            return  # a module built in the region fills a new object: no state changes
        attr = attr_node.attr.value
        info = self.a.project.attr(self.cls, attr) if self.cls else None
        reads = self.a.reads_of(self.cls) if self.cls else set()
        read = attr in reads or op == "augassign"
        self.emit("on_state_write", api.StateWrite(node, v, self.ctx, attr=attr, op=op,
                                                   read_in_region=read,
                                                   attr_kind=info.kind if info else ""))
        if op == "assign" and self.cls is not None:
            self.a.stored.add((self.cls.qualname, attr))

    # -- conditions -------------------------------------------------------------------------------
    def condition(self, expr: cst.BaseExpression, context: str, validates: bool = False) -> Value:
        """Evaluate a test, hand each operand of ``and``/``or``/``not`` to the rules, and set
        ``self.flag_test``: whether the test's true side runs only in some configurations, and
        ``self.data_test``: whether it depends on a number read from tensor data."""
        if isinstance(expr, cst.BooleanOperation):
            is_and = isinstance(expr.operator, cst.And)
            left = self.condition(expr.left, context, validates)
            left_flag, left_data, left_size = self.flag_test, self.data_test, self.size_test
            decided = self.truth(expr.left)
            if decided is None:
                decided = _const_truth(left)
            if decided is (not is_and):
                return left  # `x or y` with x true, `x and y` with x false: y never runs
            # after a test of settings, the right side runs only in some configurations:
            # `x.dtype == torch.float16 and torch.isinf(x).any()` breaks in float16 alone
            guarded = left_flag and decided is None
            self.flag_guards += guarded
            # (a dtype test is no setting, but the right side still runs only on the calls
            # that pass it: the rules say so)
            called_when = is_and and decided is None and _tests_dtype(expr.left)
            if called_when:
                self._only_when.append(self.ctx.code(expr.left))
            try:
                right = self.condition(expr.right, context, validates)
            finally:
                self.flag_guards -= guarded
                if called_when:
                    self._only_when.pop()
            # a test of settings only if every operand is one: `self.attention_type == "sparse"
            # and seq_len <= limit` is decided by the size on a model configured that way
            self.flag_test = left_flag and self.flag_test
            self.data_test = left_data or self.data_test
            self.size_test = left_size or self.size_test
            return left.merge(right)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            v = self.condition(expr.expression, context, validates)
            return _negated(v) or v
        if self.truth(expr) is not None:
            v = self.ev(expr)
            self.flag_test = self.data_test = self.size_test = False
            return v
        v = self.ev(expr)
        if _truth_decided(v):
            self.flag_test = self.data_test = self.size_test = False
            return Value(kinds=_BOOL, origin=v.origin, zero_one=True)
        # (a test of an input's dtype is decided by how the model is called, as a test of
        # whether an optional input was given is: `x.dtype == torch.float16 and
        # torch.isinf(x).any()` breaks the graph for every half-precision caller)
        self.flag_test = _is_flag_test(v) and not _tests_dtype(expr)
        self.data_test = not v.is_tensor and Tag.DATA in v.tags
        self.size_test = v.is_size and v.varies is True
        self.emit("on_condition", api.Condition(expr, v, self.ctx, context=context,
                                                validates=validates,
                                                only_when=self._only_when[-1] if self._only_when
                                                else None))
        return v

    def _isinstance_truth(self, test: cst.Call) -> Optional[bool]:
        """``isinstance(n, torch.Tensor)`` of a value whose type is known: Dynamo answers it
        from the variable's Python type while tracing, so only one side runs (timm's
        ``get_same_padding`` takes its ``int`` path for a size; a SymInt is an ``int``)."""
        if len(test.args) != 2 or not isinstance(test.args[0].value, cst.Name):
            return None
        kinds = _isinstance_kinds(test.args[1].value)
        v = self.env.get(test.args[0].value.value)
        if not kinds or v is None or not v.kinds or v.kinds - _DEFINITE_KINDS:
            return None
        if v.kinds <= kinds:
            return True
        return False if not v.kinds & kinds else None

    def truth(self, expr: cst.BaseExpression) -> Optional[bool]:
        """The truth of a test that is fixed while Dynamo traces (``is_compiling()``, a flag
        the caller passed as a literal, ``x is None`` for an ``x`` known not to be None)."""
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            t = self.truth(expr.expression)
            return None if t is None else not t
        if isinstance(expr, cst.BooleanOperation):
            left, right = self.truth(expr.left), self.truth(expr.right)
            if isinstance(expr.operator, cst.And):
                if left is False or right is False:
                    return False
                return True if left is True and right is True else None
            if left is True or right is True:
                return True
            return False if left is False and right is False else None
        if isinstance(expr, cst.Call):
            name = _dotted(expr.func)
            if name == "isinstance":
                return self._isinstance_truth(expr)
            if name is not None:
                fixed = dynamo.compile_time_constant(self.mod.resolve(name))
                if fixed is not None:
                    return fixed
            return None
        if isinstance(expr, cst.Name):
            if expr.value == "TYPE_CHECKING":
                return False
            v = self.env.get(expr.value)
            return _const_truth(v)
        if isinstance(expr, cst.Attribute) and expr.attr.value == "training" and \
                isinstance(expr.value, cst.Name) and expr.value.value == "self":
            # Dynamo guards on the module's mode and traces one side: the one of the mode
            # the model is compiled in (`module-mode`; a server's model is in eval mode)
            mode = self.a.regions.settings.module_mode
            return None if mode == "any" else mode == "train"
        if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
            op = expr.comparisons[0].operator
            if isinstance(op, (cst.Is, cst.IsNot)) and _is_none(expr.comparisons[0].comparator) \
                    and isinstance(expr.left, cst.Name):
                v = self.env.get(expr.left.value)
                if v is None or not v.kinds:
                    return None
                is_none = True if v.kinds == {Kind.NONE} else False if Kind.NONE not in v.kinds \
                    else None
                if is_none is None:
                    return None
                return is_none if isinstance(op, cst.Is) else not is_none
        if isinstance(expr, (cst.Integer, cst.SimpleString)) or (isinstance(expr, cst.Name)):
            return _const_truth(literal(expr))
        return None

    def learn(self, test: cst.BaseExpression, holds: bool) -> None:
        """After a validation check (``if x.shape[-1] != self.dim: raise``, ``assert
        x.size(1) == 12``), the dim it compared with a constant is constant."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            self.learn(test.expression, not holds)
            return
        if isinstance(test, cst.BooleanOperation):
            if isinstance(test.operator, cst.And) == holds:  # `a and b` true, `a or b` false
                self.learn(test.left, holds)
                self.learn(test.right, holds)
            return
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return
        op = test.comparisons[0].operator
        equal = (isinstance(op, cst.Equal) and holds) or (isinstance(op, cst.NotEqual) and not holds)
        if not equal:
            return
        right = test.comparisons[0].comparator
        for dim_side, const_side in ((test.left, right), (right, test.left)):
            other = self.ev_quiet(const_side)
            if not (other.is_state or isinstance(other.const, int)):
                continue
            target = _dim_of_name(dim_side)
            if target is None and isinstance(dim_side, cst.Name):
                # `H` from `B, C, H, W = x.shape`: the local and the dim it was read from
                local = self.env.get(dim_side.value)
                if local is not None and local.is_size and local.dim is not None:
                    self.env[dim_side.value] = local.with_(dim=CONST_DIM)
                    target = _dim_of_origin(local)
            if target is None:
                continue
            name, index = target
            v = self.env.get(name)
            if v is None or v.dims is None:
                continue
            self.env[name] = v.with_(dims=shapes._replace(v.dims, index, CONST_DIM))

    def ev_quiet(self, node: cst.BaseExpression) -> Value:
        """The value of a simple expression (a literal, ``self.x``, ``self.config.x``)
        without sending its sites to the rules again."""
        if isinstance(node, cst.Attribute) and _is_self_attr(node) and self.cls is not None:
            return self._self_attr(node, node.attr.value)
        if isinstance(node, cst.Attribute):
            base = self.ev_quiet(node.value)
            return Value(tags=frozenset({Tag.STATE})) if base.is_state else UNKNOWN
        if isinstance(node, cst.Name):
            return self.env.get(node.value, UNKNOWN)
        return literal(node)

    def _tests_presence(self, yes: Dict[str, Value], no: Dict[str, Value]) -> bool:
        """Whether a test tells, on one side, that the caller left an optional input of the
        compiled entry out (``if prompt_ids is None:``, ``elif input_ids is not None:``)."""
        def optional_input(name: str) -> bool:
            given = self.env.get(name)
            return given is not None and Kind.NONE in given.kinds and \
                id(given) in self.a.graph_inputs

        # (a side that tells it was given counts too: `if cached is None and pixel_values is
        # not None:` runs on the calls that pass pixel_values)
        return any(optional_input(name) and (v.kinds == {Kind.NONE} or Kind.NONE not in v.kinds)
                   for narrowed in (yes, no) for name, v in narrowed.items())

    def narrow(self, test: cst.BaseExpression) -> Tuple[Dict[str, Value], Dict[str, Value]]:
        """What ``test`` says of names on its true and its false side: ``x is None``,
        ``x is not None``, ``isinstance(x, torch.Tensor)``, ``if x:`` for an optional ``x``."""
        yes: Dict[str, Value] = {}
        no: Dict[str, Value] = {}
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            y, n = self.narrow(test.expression)
            return n, y
        if isinstance(test, cst.BooleanOperation):
            left_yes, left_no = self.narrow(test.left)
            right_yes, right_no = self.narrow(test.right)
            if isinstance(test.operator, cst.And):
                return {**left_yes, **right_yes}, {}
            return {}, {**left_no, **right_no}
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and \
                isinstance(test.left, cst.Name) and _is_none(test.comparisons[0].comparator):
            name = test.left.value
            v = self.env.get(name)
            if v is not None and v.kinds:
                none = Value(kinds=frozenset({Kind.NONE}), const=None)
                rest = v.with_(kinds=v.kinds - {Kind.NONE}) if v.kinds - {Kind.NONE} else UNKNOWN
                if isinstance(test.comparisons[0].operator, cst.Is):
                    yes[name], no[name] = none, rest
                elif isinstance(test.comparisons[0].operator, cst.IsNot):
                    yes[name], no[name] = rest, none
        elif isinstance(test, cst.Call) and _dotted(test.func) == "isinstance" and \
                len(test.args) == 2 and isinstance(test.args[0].value, cst.Name):
            name = test.args[0].value.value
            kinds = _isinstance_kinds(test.args[1].value)
            v = self.env.get(name, UNKNOWN)
            if kinds:
                yes[name] = v.with_(kinds=kinds) if (v.kinds & kinds) else Value(kinds=kinds, origin=v.origin)
                if v.kinds - kinds:
                    no[name] = v.with_(kinds=v.kinds - kinds)
        elif isinstance(test, cst.Name):
            v = self.env.get(test.value)
            if v is not None and Kind.NONE in v.kinds and v.kinds - {Kind.NONE}:
                yes[test.value] = v.with_(kinds=v.kinds - {Kind.NONE})
        return yes, no

    # -- expressions ------------------------------------------------------------------------------
    def ev(self, node: cst.BaseExpression) -> Value:
        kind = type(node)
        try:
            method = _EV[kind]
        except KeyError:
            method = _EV[kind] = getattr(Walker, "ev_" + kind.__name__, None)
        self._depth += 1
        if self._depth > MAX_EXPRESSION_DEPTH:
            self._depth = 0
            raise TooDeep()
        pins = self.frames.pins_made
        try:
            if method is not None:
                v = method(self, node)
                if self.frames.pinned and self.frames.pinned_before(v.dim, pins):
                    return v.with_(dim=CONST_DIM)  # a constant of this frame's graph now
                return v
            # any other expression (await, yield...): the expressions in it
            for child in _sub_expressions(node):
                self.ev(child)
            return UNKNOWN
        finally:
            self._depth -= 1

    def ev_leaf(self, node: cst.BaseExpression) -> Value:
        return literal(node)

    ev_Integer = ev_Float = ev_Imaginary = ev_SimpleString = ev_leaf

    def ev_Ellipsis(self, node: cst.Ellipsis) -> Value:
        return UNKNOWN

    def ev_ConcatenatedString(self, node: cst.ConcatenatedString) -> Value:
        self.ev(node.left)
        self.ev(node.right)
        return Value(kinds=frozenset({Kind.STR}))

    def ev_Name(self, node: cst.Name) -> Value:
        v = self.env.get(node.value)
        if v is None:
            if node.value in ("True", "False", "None"):
                return literal(node)
            if node.value == "self" and self.cls is not None:
                return self._self_items()
            if node.value in self.mod.mutated_globals:
                v = Value(tags=frozenset({Tag.GLOBAL}), origin=self.origin(node), detail=node.value)
                self.emit("on_name_use", api.NameUse(node, v, self.ctx, name=node.value,
                                                     passthrough=self._passthrough))
                return v
            if node.value in self.mod.containers:  # SCALES = {...} at module level
                return Value(kinds=frozenset({Kind.CONTAINER}), origin=self.origin(node))
            return UNKNOWN
        if v.is_scalar_arg:
            self.emit("on_name_use", api.NameUse(node, v, self.ctx, name=node.value,
                                                 passthrough=self._passthrough))
        where = self.frames.read(node, v)
        if where is not None:
            if self._passthrough and self._passed is not None:
                self._passed.append((node, v, where))
            self.emit("on_name_use", api.NameUse(node, v, self.ctx, name=node.value,
                                                 passthrough=self._passthrough, after_break=True,
                                                 break_line=self.frames.line_of(where)))
        return v

    def ev_Attribute(self, node: cst.Attribute) -> Value:
        attr = node.attr.value
        if isinstance(node.value, cst.Name) and node.value.value == "self" and self.cls is not None:
            return self._self_attr(node, attr)
        base = self.ev(node.value)
        if base.is_tensor:
            return results.tensor_attribute(base, attr, self.origin(node))
        if base.is_module and attr in ("weight", "bias"):
            return Value(kinds=_TENSOR, origin=self.origin(node), dims=Dims(rank=None))
        if base.is_state:
            return Value(tags=frozenset({Tag.STATE}), origin=base.origin, detail="unknown")
        item = base.stored("." + attr)
        if item is not None:  # what the function stored there
            return self._stored_read(node, item)
        item = base.field(attr)
        if item is not None:  # a model output's field
            return item
        if attr in results.SEQUENCE_OUTPUTS and isinstance(node.value, (cst.Call, cst.Name)) \
                and not base.kinds:
            # a library model's output the walk cannot see into: (batch, sequence, hidden)
            return results.sequence_output(attr, self.origin(node))
        return UNKNOWN

    def _self_items(self) -> Value:
        """``self`` of a container module that holds its blocks itself (a Sequential
        subclass whose ``__init__`` adds them): iterating it runs them."""
        info = self.a.project.attr(self.cls, SELF_ITEMS)  # type: ignore[arg-type]
        if info is None or info.kind != "module_list" or not info.cls:
            return UNKNOWN
        return Value(kinds=frozenset({Kind.MODULES}), detail=info.cls, const=info.init or None)

    def _self_attr(self, node: cst.Attribute, attr: str) -> Value:
        if attr == "training":
            return Value(kinds=_BOOL)
        info = self.a.project.attr(self.cls, attr)  # type: ignore[arg-type]
        if info is None:
            if self.a.project.method(self.cls, attr) is not None:  # type: ignore[arg-type]
                return UNKNOWN
            return Value(tags=frozenset({Tag.STATE}), origin=self.origin(node), detail="unknown")
        if info.kind == "module":  # const: its literal constructor arguments
            v = Value(kinds=frozenset({Kind.MODULE}), detail=info.cls, const=info.init or None)
            if info.per_instance and self.a.regions.is_repeated(self.cls.qualname):  # type: ignore[union-attr]
                # one class in some instances, another in others: a frame each instance runs
                # guards its type where it first reads it
                v = v.with_(tags=_INSTANCE)
                self.frames.read_instance_module(node, attr, v)
            return v
        if info.kind == "module_list":  # const: per class, its first item's arguments
            return Value(kinds=frozenset({Kind.MODULES}), detail=info.cls, const=info.init or None)
        if info.kind == "tensor":  # a parameter or buffer: its dims are fixed
            return Value(kinds=_TENSOR, origin=self.origin(node), dims=_all_const())
        kinds = {"int": _INT, "float": frozenset({Kind.FLOAT}), "bool": _BOOL,
                 "str": frozenset({Kind.STR}), "container": frozenset({Kind.CONTAINER}),
                 "none": frozenset({Kind.NONE})}.get(info.kind, frozenset())
        tags = _STATE
        if info.from_param and self.a.regions.is_repeated(self.cls.qualname):  # type: ignore[union-attr]
            tags = _STATE_PER_INSTANCE
        # a flag __init__ sets to a literal and forward never changes (self.use_tiling = False,
        # turned on by a method the user calls before compiling): as the model is configured
        flag = info.flag if info.flag is not None and attr not in self.cls.forward_writes else None  # type: ignore[union-attr]
        v = Value(kinds=kinds, tags=tags, origin=self.origin(node), detail=info.kind, const=flag)
        if tags is _STATE_PER_INSTANCE and self.frames.read_attribute(attr):
            # the resumed frame guards its value here
            self.emit("on_name_use", api.NameUse(node, v, self.ctx, name=f"self.{attr}",
                                                 after_break=True,
                                                 break_line=self.ctx.line(cast(cst.CSTNode, self.frames.broke_at))))
        return v

    def _stored_read(self, node: cst.CSTNode, item: Value) -> Value:
        """A stored item read back: its first read after the break it crossed inside its
        dict or output (``torch.cat(outputs["image"].pooler_output)``) is where the resumed
        frame guards it."""
        stmt = self.ctx.stmt
        if isinstance(stmt, (cst.Assign, cst.AnnAssign)) and stmt.value is node:
            return item  # only bound to a name: the name's first read is (Frames.bound)
        where = self.frames.read_held(item)
        if where is not None:
            self.emit("on_name_use", api.NameUse(node, item, self.ctx, name=self.ctx.code(node),
                                                 after_break=True, break_line=self.ctx.line(where)))
        return item

    def _slice(self, el: cst.SubscriptElement) -> Tuple[Value, bool]:
        s = el.slice
        if isinstance(s, cst.Index):
            return self.ev(s.value), True
        s = cast(cst.Slice, s)
        for part in (s.lower, s.upper, s.step):
            if part is not None:
                self.ev(part)
        return UNKNOWN, False

    def ev_Subscript(self, node: cst.Subscript) -> Value:
        container = self.ev(node.value)
        if container.keyed is not None:
            name = _literal_key(node)
            stored = container.stored(name) if name is not None else None
            if stored is not None:  # outputs["image"], stored by this function
                return self._stored_read(node, stored)
        if container.record is not None and len(node.slice) == 1 and \
                isinstance(node.slice[0].slice, cst.Index):
            key = node.slice[0].slice.value
            index = key.evaluated_value if isinstance(key, cst.SimpleString) else _int_literal(key)
            item = container.field(index) if isinstance(index, (int, str)) else None
            if item is not None:  # a model output's field: outputs[0], outputs["logits"]
                return item
        parts: List[Tuple[str, Optional[Value], Tuple[Optional[Value], ...]]] = []
        indices: List[Tuple[Value, bool]] = []
        for el in node.slice:
            s = el.slice
            if isinstance(s, cst.Index):
                v = self.ev(s.value)
                indices.append((v, True))
                if isinstance(s.value, cst.Ellipsis):
                    parts.append(("ellipsis", None, ()))
                elif isinstance(s.value, cst.Name) and s.value.value == "None":
                    parts.append(("none", None, ()))
                elif v.is_tensor:
                    parts.append(("tensor", v, ()))
                else:
                    parts.append(("int", v, ()))
            else:
                s = cast(cst.Slice, s)
                bounds = tuple(self.ev(p) if p is not None else None
                               for p in (s.lower, s.upper, s.step))
                indices.append((UNKNOWN, False))
                parts.append(("slice", None, bounds))
        single = len(indices) == 1 and indices[0][1]
        idx = indices[0][0] if indices else UNKNOWN
        if container.is_shape:
            if single:
                i = idx.const if isinstance(idx.const, int) else None
                d = shapes.dims_of(container).at(i) if i is not None else \
                    join_dims(*shapes.dims_of(container).all())
                return results.size_value(self.origin(node), d, direct=True).with_(
                    carriers=container.carriers)
            kind, _, bounds = parts[0] if len(parts) == 1 else ("", None, ())
            sub = shapes.shape_slice(shapes.dims_of(container), bounds) if kind == "slice" \
                else None
            return Value(kinds=frozenset({Kind.SHAPE}), origin=self.origin(node), dims=sub,
                         carriers=container.carriers)
        if container.is_tensor:
            for iv, _ in indices:
                self.emit("on_subscript", api.Subscript(node, iv, self.ctx, container=container))
            self._emit_slices(node, container, parts)
            # an item of a `list[int] | Tensor` may be a Python number: a tensor, or not
            kinds = _TENSOR if container.kinds <= {Kind.TENSOR, Kind.NONE} else _MAYBE_TENSOR
            return Value(kinds=kinds, origin=container.origin,
                         dims=shapes.index_dims(shapes.dims_of(container), parts))
        if container.has(Kind.MODULES):
            if len(parts) == 1 and parts[0][0] == "slice":
                return container  # `self.layers[: config.num_hidden_layers]`: the same list
            return _module_item(container)
        if container.elems is not None and single:
            i = _int_literal(node.slice[0].slice.value) if isinstance(node.slice[0].slice, cst.Index) else None
            if i is not None and -len(container.elems) <= i < len(container.elems):
                return container.elems[i]
        if container.is_tensor_seq:
            if single:
                if container.item is not None:
                    return container.item
                return Value(kinds=_TENSOR, origin=container.origin, dims=container.dims)
            return container.with_(elems=None)
        if container.has(Kind.TENSOR_DICT) and single:
            return Value(kinds=_TENSOR, origin=self.origin(node))
        self.emit("on_subscript", api.Subscript(node, idx, self.ctx, container=container))
        if container.is_state:
            return Value(tags=frozenset({Tag.STATE}), origin=self.origin(node), detail="item")
        if Tag.DATA in container.tags:
            return Value(tags=frozenset({Tag.DATA}), origin=container.origin)
        return UNKNOWN

    def _emit_slices(self, node: cst.Subscript, container: Value,
                     parts: List[Tuple[str, Optional[Value], Tuple[Optional[Value], ...]]]) -> None:
        """One ``on_slice`` per ``lower:upper:step`` of a tensor subscript, with its dim (none
        when no enabled rule reads slices and no bound is a tensor: only a tensor bound breaks
        the graph)."""
        if self.a.hooks is not None and "on_slice" not in self.a.hooks and not any(
                b is not None and b.is_sure_tensor for _, _, bounds in parts for b in bounds):
            return
        dims = shapes.source_dims(shapes.dims_of(container), parts)
        for el, (kind, _, bounds), dim in zip(node.slice, parts, dims):
            if kind != "slice" or not isinstance(el.slice, cst.Slice):
                continue
            lower, upper, step = bounds
            self.emit("on_slice", api.Slice(
                node, upper if upper is not None else UNKNOWN, self.ctx, container=container,
                dim=dim, lower=lower, upper=upper, step=step, lower_node=el.slice.lower,
                upper_node=el.slice.upper))

    def ev_Comparison(self, node: cst.Comparison) -> Value:
        left = self.ev(node.left)
        values = [left]
        for target in node.comparisons:
            values.append(self.ev(target.comparator))
        ops = [type(t.operator).__name__ for t in node.comparisons]
        if all(o in ("Is", "IsNot") for o in ops):  # identity: a Python bool, never a tensor
            # `mask is None` on an optional argument of the compiled entry (SL305)
            detail = "none-test" if (any(_is_none(c.comparator) for c in node.comparisons) or
                                     _is_none(node.left)) and any(
                Kind.NONE in v.kinds and v.origin is not None and v.origin.scope
                for v in values) else ""
            return Value(kinds=_BOOL, detail=detail, origin=self.origin(node) if detail else None)
        if any(o in ("In", "NotIn") for o in ops):  # membership: a Python bool
            container = values[-1]
            if container.is_tensor and container.kinds <= {Kind.TENSOR}:
                # `pad_id in input_ids`: Tensor.__contains__ reads the result back (.item())
                self.emit("on_call", api.Call(node, UNKNOWN, self.ctx, method="__contains__",
                                              receiver=container, args=(left,)))
                return Value(kinds=_BOOL, tags=frozenset({Tag.DATA}), origin=self.origin(node))
            tags = left.tags & _KEPT
            return Value(kinds=_BOOL, tags=tags, origin=left.origin if tags else None, dim=left.dim)
        item = _tensor_item_compared(values)
        if item is not None:
            # `list(t.size()) == [b, n, k]` with `k = mask.sum().max()`: Python compares item by
            # item and calls bool() on a tensor; Dynamo cannot decide it and breaks the graph
            # (list_richcompare_nonconst). The result is a Python bool again after the break
            self.emit("on_condition", api.Condition(node, Value(
                kinds=_TENSOR, tags=frozenset({Tag.MASK}), origin=self.origin(node),
                dims=shapes.dims_of(item)), self.ctx, context="compare"))
            return Value(kinds=_BOOL)
        if any(v.is_tensor for v in values):
            dims = None
            for v in values:
                if v.is_tensor:
                    dims = shapes.dims_of(v) if dims is None else shapes.broadcast(dims, shapes.dims_of(v))
            # a tensor only where an operand surely is one: `i >= n` of an `n` that is an int
            # in eval and a tensor in training is a Python bool on the path that has the int
            sure = any(v.is_sure_tensor for v in values)
            return Value(kinds=_TENSOR if sure else _TENSOR | _BOOL, tags=frozenset({Tag.MASK}),
                         origin=self.origin(node), dims=dims)
        if any(v.is_shape for v in values):  # a whole shape compared
            each = [d for v in values if v.is_shape for d in shapes.dims_of(v).all()]
            return Value(kinds=_BOOL, tags=frozenset({Tag.SIZE}), origin=self.origin(node),
                         dim=join_dims(*each) if each else None)
        if any(v.is_size for v in values):
            varying = [v.dim for v in values if v.dim is not None and v.dim.state is Dim.VARY]
            if len(node.comparisons) == 1 and all(v.is_size for v in values) and varying and \
                    all(d.guessed for d in varying):
                # two sizes of the model's tensors (`k.shape[1] > seq_len`): a consistency
                # check whose sides vary together, unless an input's dim says one varies
                return Value(kinds=_BOOL)
            if len(node.comparisons) == 1:
                right = values[1]
                for v, other, flip in ((left, right, False), (right, left, True)):
                    if v.is_size and v.direct and isinstance(other.const, int) and \
                            not isinstance(other.const, bool):
                        op = _flip(ops[0]) if flip else ops[0]
                        if dynamo.size_compare_decided(op, other.const):
                            return Value(kinds=_BOOL, origin=v.origin, zero_one=True)
            merged = tracked(*values)
            return Value(kinds=_BOOL, tags=merged.tags & _KEPT, origin=merged.origin,
                         dim=merged.dim)
        merged = tracked(*values)
        if merged.tags & _KEPT:
            return Value(kinds=_BOOL, tags=merged.tags & _KEPT, origin=merged.origin,
                         dim=merged.dim, detail=merged.detail)
        if ops in (["Equal"], ["NotEqual"]) and all(
                isinstance(v.const, (str, int)) for v in values):
            # two known constants (`value == "original_full"` with the literal a caller
            # passed): decided while tracing, no guard, the other side never runs
            return Value(kinds=_BOOL, const=(values[0].const == values[1].const) is (ops[0] == "Equal"))
        return Value(kinds=_BOOL)

    def arith(self, left: Value, right: Value, operator: cst.CSTNode) -> Value:
        """``left <op> right`` (also for ``+=``)."""
        if left.is_tensor or right.is_tensor:
            tags = frozenset({Tag.MASK}) if isinstance(operator, (cst.BitAnd, cst.BitOr, cst.BitXor,
                                                                   cst.BitAndAssign, cst.BitOrAssign)) \
                and (left.is_mask or right.is_mask) else frozenset()
            dims: Optional[Dims]
            if isinstance(operator, (cst.MatrixMultiply, cst.MatrixMultiplyAssign)):
                dims = shapes.matmul(shapes.dims_of(left), shapes.dims_of(right))
            elif left.is_tensor and right.is_tensor:
                dims = shapes.broadcast(shapes.dims_of(left), shapes.dims_of(right))
            else:
                dims = (left if left.is_tensor else right).dims
            # a tensor of numbers (torch.div(n, 2)) stays one under arithmetic with numbers
            held = [s.dim if s.is_tensor else shapes.size_dim(s) for s in (left, right)
                    if s.is_tensor or (s.kinds and s.kinds <= NUMBERS)]
            dim = join_dims(*cast(List[DimInfo], held)) if len(held) == 2 and all(h is not None for h in held) \
                and all(s.dim is not None for s in (left, right) if s.is_tensor) else None
            # a tensor on every path only if an operand is one: `end = n - extra` where
            # `extra` is 0 on one path and a tensor on the other is an int there
            kinds = _TENSOR if left.is_sure_tensor or right.is_sure_tensor else \
                _TENSOR | ((left.kinds | right.kinds) & NUMBERS or _INT)
            return Value(kinds=kinds, tags=tags, origin=left.origin or right.origin, dims=dims,
                         dim=dim)
        if isinstance(left.const, bool) and isinstance(operator, (cst.BitOr, cst.BitOrAssign,
                                                                  cst.BitAnd, cst.BitAndAssign)):
            is_or = isinstance(operator, (cst.BitOr, cst.BitOrAssign))
            if left.const is is_or:  # True | anything, False & anything
                return left
            if isinstance(right.const, bool):
                return Value(kinds=_BOOL, const=(left.const | right.const) if is_or
                             else (left.const & right.const))
        merged = left.merge(right)
        if merged.is_shape or (left.elems is not None and right.elems is not None):
            return Value(kinds=frozenset({Kind.SHAPE}) if merged.is_shape else frozenset({Kind.CONTAINER}),
                         origin=merged.origin,
                         elems=(left.elems + right.elems) if left.elems is not None and
                         right.elems is not None else None)
        if Kind.STR in merged.kinds or Kind.CONTAINER in merged.kinds:
            return Value(kinds=merged.kinds & {Kind.STR, Kind.CONTAINER})
        kinds = merged.kinds & NUMBERS
        if isinstance(operator, (cst.Divide, cst.DivideAssign)) or Kind.FLOAT in kinds:
            kinds = frozenset({Kind.FLOAT})
        elif kinds:
            kinds = _INT
        dim = None
        if left.dim is not None or right.dim is not None:
            dim = join_dims(shapes.size_dim(left), shapes.size_dim(right))
        # named after the operand that varies: `(window - seq_len % window) % window` is
        # seq_len's, not the constant's on its left
        origin = next((s.origin for s in (left, right) if s.origin is not None and s.varies),
                      merged.origin)
        tags = merged.tags & _KEPT
        if isinstance(operator, (cst.Modulo, cst.ModuloAssign)) and left.is_size and \
                left.varies is True:
            tags |= _REMAINDER
        return Value(kinds=kinds, tags=tags, origin=origin, dim=dim,
                     detail=merged.detail, zero_one=False, carriers=merged.carriers)

    def ev_BinaryOperation(self, node: cst.BinaryOperation) -> Value:
        left = self.ev(node.left)
        right = self.ev(node.right)
        if isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString)) and \
                isinstance(node.operator, cst.Modulo):
            self.emit("on_format", api.Format(node.right, right, self.ctx))
            return Value(kinds=frozenset({Kind.STR}))
        self.emit("on_binary_op", api.BinaryOp(node, left.merge(right), self.ctx, left=left,
                                                right=right, op=type(node.operator).__name__))
        return self.arith(left, right, node.operator)

    def ev_UnaryOperation(self, node: cst.UnaryOperation) -> Value:
        if isinstance(node.operator, cst.Not):
            v = self.condition(node.expression, "bool")
            negated = _negated(v)
            if negated is not None:
                return negated
            return v if v.is_tensor else Value(kinds=_BOOL, tags=v.tags & _KEPT, origin=v.origin,
                                                dim=v.dim)
        v = self.ev(node.expression)
        lit = literal(node)
        if lit.kinds:
            return lit
        return v.derived()

    def ev_BooleanOperation(self, node: cst.BooleanOperation) -> Value:
        left = self.condition(node.left, "bool")
        decided = self.truth(node.left)
        if decided is None:
            decided = _const_truth(left)
        if decided is (isinstance(node.operator, cst.Or)):
            # short-circuit: Dynamo never traces the right side (`is_compiling() or ...`)
            return left if _const_truth(left) is not None else Value(kinds=_BOOL, const=decided)
        right = self.ev(node.right)
        if decided is not None and _const_truth(right) is not None:
            return right  # `True and flag`, `False or flag`: the right side decides
        return left.merge(right)

    def ev_IfExp(self, node: cst.IfExp) -> Value:
        truth = self.truth(node.test)
        if truth is True:
            return self.ev(node.body)
        if truth is False:
            return self.ev(node.orelse)
        self.condition(node.test, "ifexp")
        yes, no = self.narrow(node.test)
        saved = dict(self.env)
        self.env.update(yes)
        a = self.ev(node.body)
        self.env = dict(saved)
        self.env.update(no)
        b = self.ev(node.orelse)
        self.env = saved
        return a.merge(b)

    def ev_NamedExpr(self, node: cst.NamedExpr) -> Value:
        v = self.ev(node.value)
        self.bind(node.target, v)
        return v

    def ev_Tuple(self, node: cst.Tuple) -> Value:
        vals: List[Value] = []
        lead: Optional[Value] = None  # `(*input_shape, -1, self.head_dim)`: a Size's dims first
        for e in node.elements:
            v = self.ev(e.value)
            if isinstance(e, cst.StarredElement):
                if v.elems is not None:
                    vals.extend(v.elems)
                    continue
                if v.is_shape and v.dims is not None:
                    if v.dims.rank is not None:  # its ints, one by one
                        vals.extend(self.unpack(v, i) for i in range(v.dims.rank))
                        continue
                    if not vals and lead is None:
                        lead = v
                        continue
                return Value(kinds=frozenset({Kind.TENSORS}) if v.is_tensor_seq else frozenset({Kind.CONTAINER}))
            vals.append(v)
        if lead is not None:  # a shape: the Size's leading dims, then those of the sizes after
            assert lead.dims is not None
            return Value(kinds=frozenset({Kind.SHAPE}), origin=lead.origin, carriers=lead.carriers,
                         dims=Dims(lead.dims.front, tuple(shapes.size_dim(v) for v in vals)))
        kinds = frozenset({Kind.TENSORS}) if vals and all(v.is_tensor for v in vals) \
            else frozenset({Kind.CONTAINER})
        return Value(kinds=kinds, elems=tuple(vals))

    ev_List = ev_Tuple

    def ev_Dict(self, node: cst.Dict) -> Value:
        out = Value(kinds=frozenset({Kind.CONTAINER}))
        for el in node.elements:
            values = [self.ev(child) for child in _sub_expressions(el)]
            key = _string_literal(el.key) if isinstance(el, cst.DictElement) else None
            if key is not None:  # `{"image": feats}`: read back as stored
                out = out.store(key, values[-1])
            elif isinstance(el, cst.StarredDictElement):  # `{**kwargs}`: its known items
                for k, item in values[-1].keyed or ():
                    out = out.store(k, item)
        return out

    def ev_Set(self, node: cst.Set) -> Value:
        for el in node.elements:
            self.ev(el.value)
        return Value(kinds=frozenset({Kind.CONTAINER}))

    def ev_FormattedString(self, node: cst.FormattedString) -> Value:
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                v = self.ev(part.expression)
                self.emit("on_format", api.Format(part.expression, v, self.ctx))
                self.pin(v)  # an f-string asks for the size's value (the Dynamo table)
        return Value(kinds=frozenset({Kind.STR}))

    def ev_Lambda(self, node: cst.Lambda) -> Value:
        return Value(kinds=frozenset({Kind.OBJECT}))

    def _comprehension(self, node: cst.BaseComp) -> Value:
        self.loops += 1
        self.comprehensions += 1
        try:
            return self._comprehension_body(node)
        finally:
            self.comprehensions -= 1
            self.loops -= 1

    def _comprehension_body(self, node: cst.BaseComp) -> Value:
        saved = dict(self.env)
        comp: Optional[cst.CompFor] = node.for_in
        # how many items: the rows of what it iterates, unless a filter or a nested loop decides
        length: Optional[DimInfo] = None if comp is None or comp.ifs or comp.inner_for_in else UNKNOWN_DIM
        while comp is not None:
            it = self.ev(comp.iter)
            if length is None:
                length = _iterations(it) or UNKNOWN_DIM
            self.emit("on_iteration", api.Iteration(comp.iter, it, self.ctx))
            self.bind(comp.target, self.elem(it))
            for cond in comp.ifs:
                self.condition(cond.test, "if")
            comp = comp.inner_for_in
        if isinstance(node, cst.DictComp):
            self.ev(node.key)
            out = self.ev(node.value)
            self.env = saved
            return Value(kinds=frozenset({Kind.TENSOR_DICT}) if out.is_tensor else frozenset({Kind.CONTAINER}))
        out = self.ev(cast(Union[cst.ListComp, cst.SetComp, cst.GeneratorExp], node).elt)
        self.env = saved
        if out.is_tensor:  # a list (or generator) of tensors, not a tensor
            return Value(kinds=frozenset({Kind.TENSORS}), origin=out.origin, dims=out.dims)
        if out.elems and all(e.is_tensor for e in out.elems):
            # rows of tensors (`[(s[0] // p, s[1] // p) for s in sizes]`): each item unpacks
            # into those tensors
            return Value(kinds=frozenset({Kind.TENSORS}), origin=out.origin, item=out)
        return Value(kinds=frozenset({Kind.CONTAINER}), tags=out.tags & _KEPT, origin=out.origin,
                     dim=out.dim, length=length)

    ev_ListComp = ev_SetComp = ev_GeneratorExp = ev_DictComp = _comprehension

    # -- calls ------------------------------------------------------------------------------------
    def ev_Call(self, node: cst.Call) -> Value:
        callee = callees.resolve(self, node.func)
        if callee.kind == "modules":
            return self._call_modules(node, callee)
        pos, kw, starred = self._arguments(node, follow=callee.target is not None)
        bound, bound_nodes, param_kinds = self._bind(callee, node, pos, kw, starred)
        target = callee.target
        decorators = target.decorators if target is not None else ()
        has_fake = True
        if target is not None and target.name in target.module.custom_ops:
            op = target.module.custom_ops[target.name]
            has_fake = target.name in self.a.project.fake_names or op in self.a.project.fake_ops
        site = api.Call(node, UNKNOWN, self.ctx, callee=callee.qualname, method=callee.method,
                        receiver=callee.receiver, args=tuple(pos), kwargs=kw,
                        decorators=decorators, constructs=callee.kind == "construct",
                        target_returns_value=target.returns_value if target else True,
                        has_fake=has_fake, module_class=callee.module_class, bound=bound,
                        bound_nodes=bound_nodes, param_kinds=param_kinds,
                        graph_inputs=self._graph_inputs_among(bound.values()))
        self.emit("on_call", site)
        if self.loop_lengths and isinstance(node.func, cst.Attribute) and \
                node.func.attr.value in ("append", "insert") and isinstance(node.func.value, cst.Name):
            self._grow(node.func.value.value)
        return self._result(node, callee, pos, kw, bound)

    def _grow(self, name: str) -> None:
        """``items.append(...)`` in a loop that runs once per row of a varying dim (``for i,
        ids in enumerate(input_ids):``): the list is as long as that dim (then
        ``torch.tensor(items)`` has it as dim 0, Qwen-VL's per-sample ``rope_deltas``)."""
        current = self.env.get(name)
        if current is None or not current.kinds or not current.kinds <= SEQUENCES:
            return
        varying = [d for d in self.loop_lengths if d is not None and d.state is Dim.VARY]
        if varying:
            self.env[name] = current.with_(dim=varying[0], elems=None)

    def _graph_inputs_among(self, values) -> frozenset:
        known = self.a.graph_inputs
        return frozenset(id(item) for v in values for item in (v, *(v.elems or ()))
                         if id(item) in known)

    def _call_modules(self, node: cst.Call, callee: callees.Callee) -> Value:
        """A Sequential called (its modules in order, each on what the last returned), or an
        item of a mixed ModuleList called (each class it may be, on the same arguments)."""
        pos, kw, starred = self._arguments(node, follow=True)
        receiver = callee.receiver
        chain = receiver is not None and receiver.has(Kind.MODULES)
        classes = [c for c in callee.module_class.split("|") if c]
        if not classes:
            return UNKNOWN
        out: Optional[Value] = None
        for cls in classes:
            one = callees.module_callee(self, cls, receiver)
            bound, bound_nodes, _ = self._bind(one, node, pos, kw, starred)
            self.emit("on_call", api.Call(node, UNKNOWN, self.ctx, callee=callee.qualname,
                                          receiver=receiver, args=tuple(pos), kwargs=kw,
                                          module_class=cls, bound=bound, bound_nodes=bound_nodes))
            result = self._result(node, one, pos, kw, bound)
            if chain:
                pos, kw = [result], {}
                out = result
            else:
                out = result if out is None else out.merge(result)
        return out if out is not None else UNKNOWN

    def _arguments(self, node: cst.Call, follow: bool
                   ) -> Tuple[List[Value], Dict[str, Value], bool]:
        """Evaluate the arguments: positional values (up to a ``*args``), keyword values."""
        self._passthrough = follow
        outer, self._passed = self._passed, []
        try:
            pos: List[Value] = []
            kw: Dict[str, Value] = {}
            starred = False
            for a in node.args:
                v = self.ev(a.value)
                if a.star == "*":
                    if v.elems is not None and not starred:
                        pos.extend(v.elems)
                    else:
                        starred = True
                    continue
                if a.star == "**":  # `f(**attn_kwargs)`: the items stored under literal keys
                    for k, item in v.keyed or ():
                        kw.setdefault(k, item)
                    continue
                if a.keyword is not None:
                    kw[a.keyword.value] = v
                elif not starred:
                    pos.append(v)
        finally:
            self._passthrough = False
            if self._passed:
                self._passed_args[id(node)] = self._passed
            self._passed = outer
        return pos, kw, starred

    def _bind(self, callee: callees.Callee, node: cst.Call, pos: List[Value],
              kw: Dict[str, Value], starred: bool):
        """Parameter name -> value (and -> argument node) for a callee whose signature is
        known: a function of the tree, or torch's API."""
        if starred:
            return {}, {}, {}
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if callee.target is not None:
            sig = signature(callee.target)
            params = list(sig.params)
            if callee.bound_self or (callee.target.is_method and callee.kind == "module"):
                params = params[1:]
            names = dict(zip(params, pos))
            nodes = dict(zip(params, positional))
            for k, v in kw.items():
                names[k] = v
                if k in keywords:  # not one a `**dict` passed
                    nodes[k] = keywords[k]
            return names, nodes, {}
        name = None
        if callee.kind == "method" and callee.receiver is not None and callee.receiver.is_tensor:
            name, is_method = callee.method, True
        elif callee.kind == "external" and (callee.qualname or "").startswith("torch."):
            name, is_method = callee.qualname, False
        if name is None:
            return {}, {}, {}
        picked = results.choose(name, pos, kw, is_method)
        if picked is None:
            return {}, {}, {}
        overload, binding = picked
        values = results.bound_values(binding, pos, kw, callee.receiver if is_method else None)
        nodes = {}
        for pname, (where, key) in binding.items():
            if where == "pos" and isinstance(key, int) and key < len(positional):
                nodes[pname] = positional[key]
            elif where == "kw" and key in keywords:
                nodes[pname] = keywords[key]
        return values, nodes, {p.name: p.kinds for p in overload.params}

    def _result(self, node: cst.Call, callee: callees.Callee, pos: List[Value],
                kw: Dict[str, Value], bound: Dict[str, Value]) -> Value:
        target = callee.target
        if callee.kind == "construct":
            if target is not None:  # walk its __init__ for what it does in the region
                self._follow(target, pos, kw, True)
                self._guard_passed(node)
            if callee.module_class:
                return Value(kinds=frozenset({Kind.MODULE}), detail=callee.module_class)
            last = (callee.qualname or "").rsplit(".", 1)[-1]
            if last in ("Parameter", "Buffer"):
                return Value(kinds=_TENSOR, origin=self.origin(node))
            return Value(kinds=frozenset({Kind.OBJECT}), detail=callee.qualname or "",
                         record=self._output_record(callee.qualname, pos, kw))
        name = target.qualname if target is not None else \
            callee.qualname if callee.kind == "external" else None
        fixed = dynamo.compile_time_constant(name) if name else None
        if fixed is not None:  # is_compiling(), a library's is_torchdynamo_compiling(): True
            return Value(kinds=_BOOL, const=fixed)  # while Dynamo traces (not walked)
        if target is not None:
            if _is_disabled(target):
                return UNKNOWN
            if target.name in target.module.custom_ops:
                return Value(kinds=_TENSOR, origin=self.origin(node))
            out = self._follow(target, pos, kw, callee.bound_self or callee.kind == "module",
                               callee.instance)
            self._guard_passed(node)
            return out
        if callee.kind == "module":
            if callee.module_class.startswith("torch.nn."):
                return results.module_result(callee.module_class, pos, kw, self.origin(node))
            return UNKNOWN
        if callee.kind == "method" and callee.receiver is not None and callee.method is not None:
            return self._method_result(node, callee.receiver, callee.method, pos, kw)
        if callee.kind == "external" and callee.qualname is not None:
            return self._external_result(node, callee, pos, kw)
        return UNKNOWN

    def _output_record(self, qualname: Optional[str], pos: List[Value],
                       kw: Dict[str, Value]) -> Optional[Tuple[Tuple[str, Value], ...]]:
        """A model output's fields as the constructor gave them (see ``Value.field``)."""
        cls = self.a.project.class_of(qualname, self.mod) if qualname else None
        fields = self.a.project.output_fields(cls) if cls is not None else None
        if not fields:
            return None
        given = dict(zip(fields, pos))
        given.update((k, v) for k, v in kw.items() if k in fields)
        return tuple((f, given.get(f, _NONE)) for f in fields)

    def _guard_passed(self, node: cst.Call) -> None:
        """Crossed ints passed straight into a call whose callee broke the graph: this frame
        breaks at the call and hands them over there, which is where their value guard is
        made (``self.encoder(h, padding_len=padding_len)``, torch blames the call). Into a
        callee that is traced inline they are read, and guarded, inside it."""
        passed = self._passed_args.pop(id(node), [])
        if not self.a.callee_broke:
            return
        for name_node, v, where in passed:  # (where: None for a parameter, see frame_inputs)
            self.emit("on_name_use", api.NameUse(
                name_node, v, self.ctx, name=name_node.value, after_break=True,
                break_line=self.frames.line_of(where) if where is not None else
                self.ctx.position(node, self.ctx.stmt)[0],
                frame_input=where is None))

    def _follow(self, target: FunctionInfo, pos: List[Value], kw: Dict[str, Value],
                bound_self: bool, instance: Optional[ClassInfo] = None) -> Value:
        sig = signature(target)
        params = list(sig.params)
        if target.is_method and params and params[0] in ("self", "cls"):
            params = params[1:]
        bound: Dict[str, Value] = dict(zip(params, pos))
        names = set(params) | set(sig.kwonly)
        extra_kw: Dict[str, Value] = {}
        for k, v in kw.items():
            if k in names:
                bound[k] = v
            else:
                extra_kw[k] = v
        if sig.star is not None:  # def f(*tensors): the extra positional arguments, in order
            extra = tuple(pos[len(params):])
            bound[sig.star] = Value(kinds=frozenset({Kind.TENSORS}) if extra and
                                    all(e.is_tensor for e in extra) else frozenset({Kind.CONTAINER}),
                                    elems=extra)
        if sig.star_kw is not None and extra_kw:  # `**kwargs`: the keywords, to pass on
            tensors = all(v.is_tensor for v in extra_kw.values())
            bound[sig.star_kw] = Value(kinds=frozenset({Kind.TENSOR_DICT}) if tensors else
                                       frozenset(), keyed=tuple(extra_kw.items()))
        for name in list(params) + list(sig.kwonly):  # what the caller left to the default
            if name not in bound and name in sig.defaults:
                bound[name] = sig.defaults[name]
            elif name in bound and sig.kinds.get(name):
                declared, have = sig.kinds[name], bound[name].kinds
                if have and not have & declared and Kind.TENSOR in declared and \
                        Kind.TENSOR not in have:
                    # an int read off a shape, a list of them: the caller's value is the
                    # evidence, a `Tensor` annotation only a claim (rt_detr's
                    # `value_spatial_shapes: Tensor` gets a list of (height, width) ints)
                    continue
                # the callee's annotation says what the value is where the caller only
                # assumed (an unannotated `x=None` of an entry is taken for a tensor)
                both = have & declared if have else declared
                if not both - {Kind.NONE}:
                    both = declared if declared - {Kind.NONE} else have
                if both != have and both:
                    bound[name] = bound[name].with_(kinds=both)
        self.a.callee_broke = 0
        flagged, inst = self.flag_guards > 0, instance if bound_self else None
        result = self.a.call(self.ctx, target, bound, flagged, inst)
        if not result.kinds:  # the walk could not tell: the return annotation can
            returns = signature(target).returns
            if returns:
                result = result.with_(kinds=returns)
        if not self.a.callee_broke and not self.a.eager:  # traced inline, in this frame
            self.frames.frame_calls.append((target, bound, flagged, inst))
        if self.a.callee_broke:  # the graph broke inside: this frame resumes after the call
            self.frames.callee_broke(self.ctx.stmt if self.ctx.stmt is not None else target.node,  # type: ignore[arg-type]
                                     hard=self.a.callee_broke == 2, returned=result)
        return result

    def _method_result(self, node: cst.Call, recv: Value, method: str, pos: List[Value],
                       kw: Dict[str, Value]) -> Value:
        if recv.is_tensor:
            return results.tensor_method(recv, method, pos, kw, self.origin(node))[0]
        if recv.is_shape:
            if method == "numel":
                return results.size_value(self.origin(node), join_dims(*shapes.dims_of(recv).all()))
            return UNKNOWN
        if recv.is_state and not recv.is_tensor:
            if method in MUTATORS and isinstance(node.func, cst.Attribute) and \
                    _is_self_attr(node.func.value):
                self.state_write(node.func.value, UNKNOWN, "method", node)
            return Value(tags=frozenset({Tag.STATE}), origin=self.origin(node), detail="item")
        if recv.is_tensor_seq:
            if method in ("pop",):
                return Value(kinds=_TENSOR, origin=recv.origin, dims=recv.dims)
            if method in ("index", "count"):
                return Value(kinds=_INT)
            return UNKNOWN
        if recv.has(Kind.TENSOR_DICT):
            if method in ("get", "pop", "setdefault"):
                return Value(kinds=frozenset({Kind.TENSOR, Kind.NONE}))
            if method == "values":
                return Value(kinds=frozenset({Kind.TENSORS}))
            if method == "items":
                return Value(kinds=frozenset({Kind.CONTAINER}))
            return UNKNOWN
        if recv.is_size:
            return recv.derived()
        if Kind.STR in recv.kinds:
            return Value(kinds=frozenset({Kind.STR})) if method not in ("split",) else \
                Value(kinds=frozenset({Kind.CONTAINER}))
        return UNKNOWN

    def _external_result(self, node: cst.Call, callee: callees.Callee, pos: List[Value],
                         kw: Dict[str, Value]) -> Value:
        name = callee.qualname or ""
        first = pos[0] if pos else UNKNOWN
        if api.size_function(name) is api.Effect.SPECIALIZE:
            self.pin(first)  # math.log(n), format(n): Dynamo asked for n's value
        if name in ITERATING_BUILTINS:  # list(x), zip(scores, boxes): iterate each argument
            for a, value in zip(node.args, pos):
                if value.is_tensor:
                    self.emit("on_iteration", api.Iteration(a.value, value, self.ctx))
        if name.rsplit(".", 1)[-1] in ("_assert", "_check", "_check_with") and node.args:
            self.learn(node.args[0].value, holds=True)  # a validation: it holds from here
        if name in ("str", "repr", "format"):
            self.emit("on_format", api.Format(node.args[0].value if node.args else node, first,
                                              self.ctx))
        elif name == "bool" and node.args and _truth_decided(first):
            return Value(kinds=_BOOL, origin=first.origin, zero_one=True)
        elif name == "bool" and node.args:
            self.emit("on_condition", api.Condition(node.args[0].value, first, self.ctx,
                                                    context="bool"))
        if name.startswith("torch."):
            if callee.method is not None:
                return UNKNOWN
            short = name.rsplit(".", 1)[-1]
            if name == "torch.Size":
                return Value(kinds=frozenset({Kind.SHAPE}), origin=self.origin(node),
                             elems=first.elems, dims=Dims.of(*[shapes.size_dim(e) for e in first.elems])
                             if first.elems is not None else None)
            value, _ = results.torch_result(name, short, pos, kw, self.origin(node))
            if not value.kinds and name.startswith("torch.nn.functional."):
                dims = shapes.function_dims(short, pos, kw)
                return Value(kinds=_TENSOR, origin=self.origin(node), dims=dims)
            return value
        if callee.method is not None:  # logger.info(...)
            return Value(kinds=frozenset({Kind.NONE}))
        return results.builtin_result(name, pos, kw, self.origin(node))


def _dim_of_name(node: cst.CSTNode) -> Optional[Tuple[str, int]]:
    """``x.shape[i]`` or ``x.size(i)`` with a literal ``i``: (``x``, i)."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and \
            isinstance(node.slice[0].slice, cst.Index) and isinstance(node.value, cst.Attribute) \
            and node.value.attr.value == "shape" and isinstance(node.value.value, cst.Name):
        i = _int_literal(node.slice[0].slice.value)
        return (node.value.value.value, i) if i is not None else None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
            node.func.attr.value == "size" and isinstance(node.func.value, cst.Name) and \
            len(node.args) == 1:
        i = _int_literal(node.args[0].value)
        return (node.func.value.value, i) if i is not None else None
    return None


_SHAPE_ITEM = re.compile(r"^(\w+)\.(?:shape\[|size\()(-?\d+)[\])]$")


def _dim_of_origin(v: Value) -> Optional[Tuple[str, int]]:
    """(``x``, 2) for a size read as ``x.shape[2]`` (or unpacked from ``x.shape``)."""
    m = _SHAPE_ITEM.match(v.origin.text) if v.origin is not None else None
    return (m.group(1), int(m.group(2))) if m else None


def _flip(op: str) -> str:
    return {"GreaterThan": "LessThan", "LessThan": "GreaterThan",
            "GreaterThanEqual": "LessThanEqual", "LessThanEqual": "GreaterThanEqual"}.get(op, op)


def _drop0(dims: Optional[Dims]) -> Optional[Dims]:
    if dims is None:
        return None
    if dims.rank is not None:
        return Dims.of(*dims.front[1:]) if dims.rank > 0 else dims
    return Dims(dims.front[1:], dims.back, None)


def _all_const() -> Dims:
    """A parameter's or buffer's dims: fixed, whatever its rank."""
    return Dims((CONST_DIM,) * 4, (CONST_DIM,) * 4, None)


def _truth_decided(v: Value) -> bool:
    """The truth of a plain dynamic size (``if n:``, ``bool(n)``) is ``n != 0``, which its
    range [2, inf] decides without a guard (the Dynamo table's ``bool(size)`` row)."""
    return v.is_size and v.direct and not v.is_tensor and dynamo.size_compare_decided("NotEqual", 0)


def _tests_dtype(expr: cst.BaseExpression) -> bool:
    """``x.dtype == torch.float16`` (``!=``, ``is``, ``in``): a comparison of a ``.dtype``."""
    return isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1 and \
        isinstance(expr.left, cst.Attribute) and expr.left.attr.value == "dtype"


def _is_flag_test(v: Value) -> bool:
    """A test of settings (module state, the config, a flag, whether an optional argument
    or a keyword was given), not of a tensor's value, a varying size or a number the caller
    of the compiled entry passes: which side runs depends on how the model is configured."""
    if v.is_tensor or v.tags & {Tag.SIZE, Tag.DATA} or v.zero_one:
        return False  # (zero_one: a size test its range decides, `x.shape[0] > 1`)
    # a number argument of the entry (a step, a length) is data; a flag argument is a setting
    return not (Tag.SCALAR in v.tags and v.detail in ("int", "float"))


def _bool_kept(cur: Value, op: cst.BaseAugOp) -> bool:
    """``flag |= x`` of a flag known True, ``flag &= x`` of one known False: unchanged."""
    if cur.kinds != _BOOL or not isinstance(cur.const, bool):
        return False
    return (isinstance(op, cst.BitOrAssign) and cur.const) or \
        (isinstance(op, cst.BitAndAssign) and not cur.const)


def _negated(v: Value) -> Optional[Value]:
    """``not v`` of a value fixed while Dynamo traces (``not is_tracing(x)``: False), else None."""
    fixed = _const_truth(v)
    return None if fixed is None else Value(kinds=_BOOL, const=not fixed, origin=v.origin)


def _const_truth(v: Optional[Value]) -> Optional[bool]:
    if v is None or v.tags - {Tag.STATE}:  # (a module's flag as __init__ sets it counts)
        return None
    if v.kinds == {Kind.NONE}:  # only a literal None (or a name narrowed to it) says this
        return False
    if v.const is not None and v.kinds and v.kinds <= {Kind.BOOL, Kind.INT, Kind.FLOAT, Kind.STR}:
        return bool(v.const)
    return None


def _tensor_item_compared(values: Sequence[Value]) -> Optional[Value]:
    """A tensor item of a tuple/list display compared with another sequence (``list(t.size())
    == [b, n, k]``, ``t.size() != (b, k)``), or None: Python compares the items one by one and
    asks the tensor comparison for its truth."""
    if len(values) < 2 or any(v.is_tensor for v in values) or \
            not all(v.elems is not None or v.is_shape or (v.kinds and v.kinds <= SEQUENCES)
                    for v in values):
        return None
    return next((it for v in values for it in (v.elems or ()) if it.is_sure_tensor), None)


def _is_none(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


#: kinds whose isinstance answer is certain (a CONTAINER may be a list or a tuple, an OBJECT
#: anything; TENSOR includes a Parameter)
_DEFINITE_KINDS = frozenset({Kind.TENSOR, Kind.INT, Kind.FLOAT, Kind.BOOL, Kind.STR, Kind.NONE})


def _isinstance_kinds(node: cst.BaseExpression) -> frozenset:
    names = []
    if isinstance(node, cst.Tuple):
        names = [_dotted(e.value) for e in node.elements]
    else:
        names = [_dotted(node)]
    kinds = set()
    for n in names:
        last = (n or "").rsplit(".", 1)[-1]
        if last in ("Tensor", "Parameter"):
            kinds.add(Kind.TENSOR)
        elif last in ("int",):
            kinds.add(Kind.INT)
        elif last in ("float",):
            kinds.add(Kind.FLOAT)
        elif last in ("bool",):
            kinds.add(Kind.BOOL)
        elif last in ("str",):
            kinds.add(Kind.STR)
        elif last in ("list", "tuple", "dict", "set"):
            kinds.add(Kind.CONTAINER)
        elif last:
            return frozenset()
    return frozenset(kinds)


def _is_disabled_name(name: str) -> bool:
    return name in api.DISABLE_DECORATORS


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
                    out.append(cast(cst.BaseExpression, part))
                else:
                    out.extend(_sub_expressions(part))
    return out


def _is_disabled(fn: FunctionInfo) -> bool:
    return any(d in api.DISABLE_DECORATORS for d in fn.decorators)


def _iterations(it: Value) -> Optional[DimInfo]:
    """How many times ``for ... in it`` runs, as a dim (None: unknown): a tensor's rows, a
    list's length, a range's, through ``enumerate`` and ``zip`` (the shortest: a varying one
    where any varies)."""
    if it.detail == "enumerate" and it.elems:
        return _iterations(it.elems[0])
    if it.detail == "zip" and it.elems:
        lengths = [_iterations(e) for e in it.elems]
        return next((d for d in lengths if d is not None and d.state is Dim.VARY), None)
    if it.is_tensor:
        return shapes.dims_of(it).at(0) if it.dims is not None else None
    if it.has(Kind.RANGE):
        return it.dim
    return shapes.sequence_length(it)
