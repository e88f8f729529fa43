"""The public API for rules: built-in rules in ``rules/`` and users' own rules use only this.

A rule is one small class. The engine walks every function a compiled region reaches, in
evaluation order, with a dataflow value for every expression, and calls the rule's hooks at
*sites*: a condition steering Python control flow, a call, an iteration, a formatting of a
value into text, a subscript, a write to module state, a read of a name. The rule looks at the
site's :class:`Value` (is it a tensor? a size? where did it come from?) and calls
:meth:`Rule.report`.

Each rule carries ``VALID`` and ``INVALID`` examples; the test suite runs them all, and
``shapelint rule CODE`` prints them as documentation. In an INVALID example, each line that
must be reported ends with ``# error: CODE``.
"""

from __future__ import annotations

import dataclasses
import textwrap
from dataclasses import dataclass
from typing import (TYPE_CHECKING, Any, ClassVar, Dict, FrozenSet, List, Optional, Protocol, Sequence,
                    Tuple, runtime_checkable)

from shapelint.static import dynamo
from shapelint.static.dynamo import Effect, size_function
from shapelint.values import (CONST_DIM, NOT_A_LITERAL, UNKNOWN, UNKNOWN_DIM, UNKNOWN_DIMS,
                              BuiltItems, Dim, DimInfo, Dims, Kind, Origin, Tag, Value, join_dims,
                              tracked)

if TYPE_CHECKING:  # pragma: no cover - libcst is imported only when code is analysed
    import libcst as cst

__all__ = [
    "CONST_DIM", "UNKNOWN", "UNKNOWN_DIM", "UNKNOWN_DIMS", "Dim", "DimInfo", "Dims", "Kind", "Origin",
    "Tag", "Value", "join_dims", "tracked", "Function", "Site", "Condition", "Call", "Iteration",
    "Format", "Subscript", "Slice", "StateWrite", "BinaryOp", "NameUse", "Rule", "ReportSink",
    "graph_break_reason", "breaks_graph", "breaks_once_dynamic", "module_build", "tensor_as_size",
    "untraceable_reason", "is_python_io", "scalar_read", "tensor_bound", "Effect", "size_function", "varying_size",
    "varying_shape_dim",
    "EVIDENCE_KINDS", "LOGGER_METHODS", "DISABLE_DECORATORS", "NOT_A_LITERAL",
]

# The facts rules test with ``value.has(...)`` (kept as names for rules written against
# earlier versions, where they were strings; ``has`` accepts either).
TENSOR = Kind.TENSOR
TENSOR_SEQ = Kind.TENSORS
SHAPE = Kind.SHAPE
MODULE = Kind.MODULE
MODULE_LIST = Kind.MODULES
RANGE = Kind.RANGE
OPTIONAL = Kind.NONE  # an argument that may be None
SIZE = Tag.SIZE
MASK = Tag.MASK
SCALAR = Tag.SCALAR
STATE = Tag.STATE
GLOBAL = Tag.GLOBAL


@runtime_checkable
class Function(Protocol):
    """The function a site is in, as rules see it (``site.fn``)."""

    @property
    def symbol(self) -> str:
        """``Class.method`` or ``function``."""

    @property
    def qualname(self) -> str:
        """``package.module.Class.method``."""

    @property
    def path(self) -> str:
        """The file, relative to the working directory when under it."""

    @property
    def root(self) -> str:
        """Qualified name of the compiled entry whose walk reached this function."""

    @property
    def is_method(self) -> bool:
        """Whether it is bound to an instance (``self`` is its first parameter)."""

    @property
    def parameters(self) -> Tuple[str, ...]:
        """Its parameters' names, in order (``self`` included)."""

    @property
    def self_is_module(self) -> bool:
        """Whether ``self`` is an ``nn.Module``: an object that outlives the call, whose
        attributes Dynamo guards on from one call to the next."""

    def state_assignments(self, path: str) -> List[Tuple[int, str]]:
        """Where this method rebinds ``self.<path>`` (``path`` is ``cache`` or
        ``config.problem_type``), itself or through a method it calls on ``self``: (the line
        here, ``line 14`` or the helper and its line), in source order."""

    def first_state_read(self, path: str) -> Optional[int]:
        """The first line of this function that reads ``self.<path>``: where Dynamo installs
        the guard on it (one guard per attribute, whichever later lines read it again)."""

    def stored_before(self, attr: str) -> bool:
        """Whether the compiled region stored ``self.<attr>`` (on an instance of this class)
        before this function began: a cache reset by the model's forward before its layers
        run. The function then reads what this call stored, not what the last call left."""

    def code(self, node: "cst.CSTNode") -> str:
        """Source text of a node of this function."""

    def position(self, node: "cst.CSTNode", near: Any = None) -> Tuple[int, int, int, int]:
        """(line, column, end line, end column) of a node, 1-based."""

    def describe(self, origin: Optional[Origin]) -> str:
        """``x.shape[0]`` (line 12), with the file when it is another one."""


# ---------------------------------------------------------------------------------------------
# Sites: where the engine calls a rule
# ---------------------------------------------------------------------------------------------


@dataclass
class Site:
    node: "cst.CSTNode"
    value: Value
    fn: Function
    #: the statement that holds ``node`` (set by the engine; speeds up finding its line)
    near: Any = dataclasses.field(default=None, init=False, repr=False, compare=False)
    #: the site runs only under a test of Python settings (a flag, an optional argument, the
    #: config), in its function or in a caller on the way here: only some configurations
    #: reach it (``if use_cache and self.training: logger.warning(...)``)
    flag_guarded: bool = dataclasses.field(default=False, init=False, repr=False, compare=False)

    def code(self, node: Optional["cst.CSTNode"] = None) -> str:
        """Source text of a node (the site's own node by default)."""
        return self.fn.code(node if node is not None else self.node)

    def short_code(self, node: Optional["cst.CSTNode"] = None, limit: int = 60) -> str:
        """The source text on one line, cut at ``limit`` characters (for messages)."""
        text = " ".join(self.code(node).split())
        return text if len(text) <= limit else text[:limit - 3] + "..."


@dataclass
class Condition(Site):
    """An expression whose truth steers Python control flow.

    ``context`` is one of ``if``, ``while``, ``ifexp``, ``assert``, ``bool`` (``bool(x)``,
    ``not x`` and operands of ``and``/``or`` reach the rule one operand at a time), ``match``,
    ``compare`` (a tuple/list comparison with a tensor item: Python asks each item comparison
    for its truth).
    """

    context: str = "if"
    #: one side of the branch only raises: a validation check. A size or flag test there
    #: costs no recompile in practice (the other side errors anyway); a tensor value still
    #: has to be read, which breaks the graph
    validates: bool = False
    #: the test of how the model is called that decides whether this operand runs at all,
    #: as source text (``x.dtype == torch.float16`` before it in an ``and``); None: always
    only_when: Optional[str] = None


@dataclass
class Call(Site):
    """A call. ``callee`` is the resolved qualified name (``torch.nonzero``,
    ``warnings.warn``, ``pkg.helpers.pad``) or ``None``; for a method call on a value,
    ``method`` is its name and ``receiver`` its value."""

    callee: Optional[str] = None
    method: Optional[str] = None
    receiver: Optional[Value] = None
    args: Tuple[Value, ...] = ()
    kwargs: Dict[str, Value] = dataclasses.field(default_factory=dict)
    decorators: Tuple[str, ...] = ()  # qualified decorator names of a resolved callee
    target_returns_value: bool = True  # resolved callee has a non-None return annotation
    has_fake: bool = True  # custom op callee has a register_fake/impl_abstract in the tree
    module_class: str = ""  # qualified class name when calling (or building) a module
    #: the call builds an instance of a class (``nn.Linear(4, 4)``, ``Block(config)``)
    constructs: bool = False
    #: parameter name -> argument value, where the callee's signature is known (a function
    #: of the tree, or torch's API from the stubs it ships): read arguments through
    #: :meth:`arg`, which works whether the caller passed them by position or by keyword
    bound: Dict[str, Value] = dataclasses.field(default_factory=dict)
    #: parameter name -> the argument's node, alike
    bound_nodes: Dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)
    #: for a torch call: parameter name -> the kinds torch's signature accepts there
    #: (``("int",)``, ``("size",)``, ``("tensor", "number")``...)
    param_kinds: Dict[str, Tuple[str, ...]] = dataclasses.field(default_factory=dict, repr=False)
    #: ids of the argument values that are inputs of the frame being traced: the compiled
    #: entry's arguments, and locals that crossed a graph break into the resumed frame (see
    #: :meth:`is_graph_input`)
    graph_inputs: FrozenSet[int] = dataclasses.field(default_factory=frozenset, repr=False)

    def is_graph_input(self, value: Value) -> bool:
        """Whether ``value`` (an argument, or an item of one) enters the traced frame as an
        input rather than being computed in its graph. Dynamo reads a 0-d tensor *input* where
        a size is wanted without breaking the graph, while a tensor computed in the graph breaks
        it (measured on torch 2.13: ``F.pad(h, (0, t))`` with ``t`` an input vs ``t * 1``)."""
        return id(value) in self.graph_inputs

    def arg(self, name: str, index: Optional[int] = None) -> Optional[Value]:
        """The value passed for parameter ``name`` (at ``index`` among the positional
        arguments, not counting the receiver of a method call, when the signature is not
        known), or None when it was not passed."""
        if name in self.bound:
            return self.bound[name]
        if name in self.kwargs:
            return self.kwargs[name]
        if index is not None and not self.bound and index < len(self.args):
            return self.args[index]
        return None

    def built_with(self, name: str, index: Optional[int] = None) -> Any:
        """For a call of a torch.nn module held in ``self.<attr>``: the literal its
        ``__init__`` passed for ``name`` (or at position ``index``), e.g. the ``stride`` of
        ``self.conv = nn.Conv2d(3, 16, 3, stride=2)``; None when not passed (or not known),
        ``NOT_A_LITERAL`` when passed as an expression (``stride=patch_size``). A field of the
        model's config (``stride=config.conv_stride[i]``) reads as the default its config
        class gives it; an item at an index not known statically as a frozenset of the
        items it may be. For an item of a module list, the first item of this class."""
        each = self.built_with_each(name, index)
        return each[0] if each else None

    def built_with_each(self, name: str, index: Optional[int] = None) -> Tuple[Any, ...]:
        """:meth:`built_with` for every way the module called here was built: one for a
        module attribute; for an item of a module list (``for layer in self.layers:``) or a
        Sequential, one per distinct item of this class, since the call runs them all.
        Empty when how it was built is not known."""
        recv = self.receiver
        init = recv.const if recv is not None and recv.kinds & {Kind.MODULE, Kind.MODULES} else None
        if isinstance(init, tuple) and recv is not None and Kind.MODULES in recv.kinds:
            init = BuiltItems(init)  # a Sequential called: its items of this class
        inits = init.of(self.module_class) if isinstance(init, BuiltItems) else \
            (init,) if isinstance(init, tuple) else ()
        found = [dict(args) for args in inits]
        return tuple(f.get(name, f.get(index) if index is not None else None) for f in found)

    def arg_expr(self, name: str, index: Optional[int] = None) -> Optional["cst.BaseExpression"]:
        """The expression passed for parameter ``name`` (see :meth:`arg`)."""
        if name in self.bound_nodes:
            return self.bound_nodes[name]
        import libcst as cst

        node = self.node
        assert isinstance(node, cst.Call)
        for a in node.args:
            if a.keyword is not None and a.keyword.value == name:
                return a.value
        if index is not None and not self.bound_nodes:
            found = self.arg_node(index)
            return found.value if found is not None else None
        return None

    def arg_node(self, index: int) -> Optional["cst.Arg"]:
        import libcst as cst

        node = self.node
        assert isinstance(node, cst.Call)
        positional = [a for a in node.args if a.keyword is None and not a.star]
        return positional[index] if index < len(positional) else None

    def has_kwarg(self, name: str) -> bool:
        import libcst as cst

        node = self.node
        assert isinstance(node, cst.Call)
        return any(a.keyword is not None and a.keyword.value == name for a in node.args)


@dataclass
class Iteration(Site):
    """A ``for`` loop or comprehension iterating over ``value`` (``node`` is the iterable)."""


@dataclass
class Format(Site):
    """A value turned into text: f-string part, ``str()``, ``repr()``, ``"%d" %``, ``format``."""


@dataclass
class Subscript(Site):
    """``container[index]``; ``value`` is the index's value."""

    container: Value = UNKNOWN


@dataclass
class Slice(Site):
    """One slice of a tensor subscript, ``x[:, lower:upper:step]``: ``value`` is the upper
    bound (UNKNOWN when absent), ``dim`` the container dim it cuts (UNKNOWN when the rank or
    an ellipsis hides which one)."""

    container: Value = UNKNOWN
    dim: DimInfo = UNKNOWN_DIM
    lower: Optional[Value] = None
    upper: Optional[Value] = None
    step: Optional[Value] = None
    lower_node: Optional["cst.BaseExpression"] = dataclasses.field(default=None, repr=False)
    upper_node: Optional["cst.BaseExpression"] = dataclasses.field(default=None, repr=False)


@dataclass
class StateWrite(Site):
    """A write to module state inside a compiled region.

    ``op`` is ``assign`` (``self.a = v``), ``augassign`` (``self.a += v``), ``item``
    (``self.a[k] = v``) or ``method`` (``self.a.append(v)``). ``read_in_region`` tells
    whether the compiled region also reads ``self.<attr>``, which is what makes Dynamo guard
    on it. ``value`` is the written value.
    """

    attr: str = ""
    op: str = "assign"
    read_in_region: bool = False
    attr_kind: str = ""  # what __init__ stored there: container, int, tensor, module, ...


@dataclass
class BinaryOp(Site):
    """``left <op> right`` on Python values (``op`` is libcst's operator class name, such as
    ``Multiply``); ``value`` is the join of both sides."""

    left: Value = UNKNOWN
    right: Value = UNKNOWN
    op: str = ""


@dataclass
class NameUse(Site):
    """A read of a tracked name (a scalar argument, a mutable module global); ``passthrough``
    when it is only handed on to a helper that the engine follows (the real use is inside).

    ``after_break``: the first read of a local Python number after a graph break in its
    function (a size computed before the break, or a value the break read from a tensor).
    The rest of the function runs as a new frame that takes it as an input, and Dynamo guards
    its value there; ``break_line`` is where the graph broke.

    ``frame_input``: with ``after_break``, the first read of a parameter of a function that
    breaks the graph. Called from a compiled frame, such a function runs as a frame of its
    own (Dynamo breaks the caller at the call), so its arguments are that frame's inputs:
    a Python int among them is guarded by value where the function first reads it. A function
    its caller calls from code Dynamo runs eagerly (a frame skipped for a break in a loop, the
    rest of a function after a break in a ``try`` body) is a frame of its own too; then
    ``break_line`` is 0."""

    name: str = ""
    passthrough: bool = False
    after_break: bool = False
    break_line: int = 0
    frame_input: bool = False

    def own_frame_cause(self) -> str:
        """Why the function is a frame of its own, as a clause after its name (``frame_input``)."""
        if not self.break_line:
            return ("is called from code Dynamo runs eagerly (what it skips of a frame after a "
                    "graph break in a loop or in a `try` block)")
        return f"breaks the graph (line {self.break_line})"


# ---------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------

EVIDENCE_KINDS = ("recompile", "specialization", "graph-break", "compile-error")


class Rule:
    """Base class of every rule. Subclasses set the class attributes and override hooks.

    The class docstring is the rule's documentation, in four sections: ``What it does``,
    ``Why is this bad?``, ``Example``, ``Use instead``.

    ``VALID`` and ``INVALID`` examples are whole modules, and torch must agree with them:
    ``tests/test_rule_examples_replay.py`` replays each one with the harness (``torch.compile``,
    backend eager, CPU, torch's default dynamic mode) at batch sizes 1, 2, 3, 4, 8 and 17. Each
    line of an INVALID example marked ``# error: CODE`` must be blamed by an event of a kind
    ``evidence`` lists; a VALID example must have no event blamed on any of its lines (batch 1
    compiling a static graph and batch 2 a dynamic one blame no line). How an example runs:

    - the model is ``build()`` when the example defines one; otherwise its outermost
      ``nn.Module`` class (the last one defined that no other class of the example uses),
      built with no arguments;
    - ``inputs(batch)``, when the example defines it, is called with each size of the sweep and
      gives the forward's arguments (a tuple, ``(args, kwargs)``, a dict or one tensor), e.g.
      an int argument that changes between calls, or a 4-d image batch; otherwise each forward
      parameter without a default gets ``torch.randn(batch, 8)``.

    Keep the examples runnable: a forward whose first call builds an empty graph (``return x``
    on the path batch 1 takes) is skipped by Dynamo for good and shows nothing, and a size that
    one line specializes is a constant for the lines after it (one hazard per example then).
    """

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    severity: ClassVar[str] = "warning"
    #: runtime evidence that confirms a finding (see EVIDENCE_KINDS)
    evidence: ClassVar[Tuple[str, ...]] = ()
    #: graph-break registry ids shipped in torch (``torch/_dynamo/graph_break_registry.json``)
    registry_ids: ClassVar[Tuple[str, ...]] = ()
    hint: ClassVar[str] = ""
    #: off unless selected (``--select`` / ``extend-select``); for rules that are noisy
    default_enabled: ClassVar[bool] = True
    #: a preview rule is off by default, as ruff's are: its measured precision on real code
    #: (``bench/zoo.py``) is under 0.9. ``--preview`` (``preview = true``) or selecting its
    #: code turns it on
    preview: ClassVar[bool] = False
    #: precision on real code as last measured by ``bench/zoo.py`` (None: not measured)
    measured_precision: ClassVar[Optional[float]] = None
    #: reported only by the harness (events no static rule predicted); no static hooks
    runtime_only: ClassVar[bool] = False
    #: the rule tells apart the compiled entries a scalar argument belongs to
    #: (``Origin.scope``): then a helper is walked once per entry that hands it one, not once
    #: for all of them (a cost: transformers' ``get_head_mask`` is reached from 130 forwards)
    needs_entry_scope: ClassVar[bool] = False
    VALID: ClassVar[Sequence[str]] = ()
    INVALID: ClassVar[Sequence[str]] = ()

    def __init__(self, sink: "ReportSink") -> None:
        self._sink = sink

    # -- hooks (override what you need) -------------------------------------------------------
    def on_condition(self, site: Condition) -> None: ...

    def on_call(self, site: Call) -> None: ...

    def on_iteration(self, site: Iteration) -> None: ...

    def on_format(self, site: Format) -> None: ...

    def on_subscript(self, site: Subscript) -> None: ...

    def on_slice(self, site: Slice) -> None: ...

    def on_state_write(self, site: StateWrite) -> None: ...

    def on_name_use(self, site: NameUse) -> None: ...

    def on_binary_op(self, site: BinaryOp) -> None: ...

    def on_finish(self) -> None:
        """Called once after every compiled region was walked."""

    # -- reporting ------------------------------------------------------------------------------
    def report(self, site: Site, message: str, *, node: Optional["cst.CSTNode"] = None,
               hint: Optional[str] = None, unless_nested: Optional[str] = None) -> None:
        """Report ``site`` (or ``node`` in it). With ``unless_nested`` (a compiled entry's
        qualified name), the finding is dropped if another region turns out to call that
        entry: decided once every region was walked, in every process."""
        self._sink.report(self, site.fn, node if node is not None else site.node, message,
                          hint if hint is not None else self.hint, near=site.near,
                          unless_nested=unless_nested)

    def is_nested_entry(self, qualname: str) -> bool:
        """Whether another compiled region calls ``qualname`` (a submodule's forward)."""
        return self._sink.is_called_by_region(qualname)

    # -- documentation --------------------------------------------------------------------------
    @classmethod
    def documentation(cls) -> str:
        doc = textwrap.dedent(cls.__doc__ or "").strip()
        return doc

    @classmethod
    def describe(cls) -> Dict[str, Any]:
        return {"code": cls.code, "name": cls.name, "summary": cls.summary,
                "severity": cls.severity, "evidence": list(cls.evidence),
                "registry_ids": list(cls.registry_ids), "hint": cls.hint,
                "default_enabled": cls.default_enabled, "runtime_only": cls.runtime_only,
                "preview": cls.preview, "measured_precision": cls.measured_precision}


class ReportSink:
    """Receives reports from rules (implemented by the engine)."""

    def report(self, rule: Rule, fn: Function, node: "cst.CSTNode", message: str,
               hint: str, near: Any = None,
               unless_nested: Optional[str] = None) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def is_called_by_region(self, qualname: str) -> bool:  # pragma: no cover - interface
        return False


# ---------------------------------------------------------------------------------------------
# Shared knowledge rules use: which calls break the graph
# ---------------------------------------------------------------------------------------------

#: logger methods that do I/O (``logger.warning_once`` included), from the Dynamo table
LOGGER_METHODS = dynamo.LOGGER_METHODS


def varying_size(v: Value) -> bool:
    """A Python number read from a tensor dim that varies between calls (not a tensor)."""
    return v.is_size and v.varies is True and v.dim is not None


def varying_shape_dim(v: Value) -> Optional[DimInfo]:
    """For a ``torch.Size`` (``shape = x.shape``) or a tuple of sizes (``(*shape[:-1], -1,
    8)``): the first of its dims known to vary between calls, else None. A frame that takes
    it as an input guards each of its ints."""
    if v.is_shape and v.dims is not None:
        return next((d for d in v.dims.all() if d.state is Dim.VARY), None)
    if v.elems is not None and v.elems and not v.is_tensor_seq and \
            all(e.kinds and e.kinds <= {Kind.INT} for e in v.elems):
        return next((e.dim for e in v.elems if e.is_size and e.varies and e.dim is not None), None)
    return None


def is_python_io(site: Call) -> bool:
    """``print``, ``warnings.warn``, ``logging.*`` and logger methods: Python I/O."""
    callee = site.callee or ""
    return callee in ("print", "builtins.print") or callee.startswith(("warnings.warn", "logging.")) \
        or (callee.startswith("<logger>") and site.method in LOGGER_METHODS)


def untraceable_reason(site: Call) -> Optional[str]:
    """Why Dynamo cannot trace a call (an RNN module, ``cudnn.flags``...), or None."""
    callee = site.callee or ""
    if callee in dynamo.UNSUPPORTED_CALLS:
        return f"Dynamo cannot trace `{callee}`"
    if callee.startswith(dynamo.UNSUPPORTED_PREFIXES):
        return f"Dynamo cannot trace `{callee}` (numpy's random generator)"
    last = site.module_class.rsplit(".", 1)[-1]
    if last in dynamo.GRAPH_BREAK_MODULES and site.module_class.startswith("torch.nn"):
        return f"`{last}` (a recurrent module) is not traced into the graph"
    return None


def tensor_as_size(site: Call) -> Optional[str]:
    """The parameter of a torch call that expects a size or a Python number but is given a
    tensor (``x.new_zeros(b, torch.div(n, 2))``), or None."""
    for name, value in site.bound.items():
        kinds = site.param_kinds.get(name)
        if not kinds or "tensor" in kinds or "tensors" in kinds or name in ("self", "input"):
            continue
        if not set(kinds) & {"int", "size", "number"}:
            continue
        for item in (value.elems if value.elems is not None else (value,)):
            if item.is_tensor and item.kinds <= {Kind.TENSOR} and not site.is_graph_input(item) \
                    and not (item.dim is not None and item.dim.state is Dim.CONST):
                return name  # (a tensor of fixed numbers is folded to a constant)
            if "size" in kinds and item.kinds == {Kind.TENSORS} and item.elems is None \
                    and not site.is_graph_input(item):
                return name  # a list of tensors as sizes: `torch.split(x, [h * w for h, w in grid])`
    return None


def module_build(site: Call) -> Optional[str]:
    """What a call builds that Dynamo must break the graph for, inside a compiled region:
    ``"a parameter"``, ``"a `Linear`"`` (a torch.nn module with parameters), or None. Dynamo
    traces ``nn.Module.__init__`` and modules without parameters; it breaks at the
    ``nn.Parameter`` constructor (measured on torch 2.13), so a module class of the tree built
    in forward breaks where its ``__init__`` builds a layer with parameters, not at
    ``super().__init__()``."""
    callee = site.callee or ""
    last = site.module_class.rsplit(".", 1)[-1]
    if site.module_class.startswith("torch.nn.") and \
            (last in dynamo.MODULES_WITHOUT_PARAMETERS or last.endswith("Loss")):
        return None  # no parameters: traced without a break
    if site.constructs and site.module_class and not site.module_class.startswith("torch.nn."):
        return None
    if site.constructs and (site.module_class or callee in dynamo.NOT_MODULES):
        return "a parameter" if callee in dynamo.NOT_MODULES else f"a `{last}`"
    return None


def breaks_once_dynamic(site: Site) -> bool:
    """A break that only a dynamic size causes: a tensor computed from sizes alone given as a
    size (``new_zeros((b, torch.div(n, 2) + 1))``). While the sizes are static (the first
    compile under automatic dynamic shapes) Dynamo folds it to a number and traces on, so a
    frame that holds it in a loop is traced whole once before the break makes Dynamo skip it
    (measured: its guards after the loop are blamed at the first sizes)."""
    if not isinstance(site, Call) or graph_break_reason(site) or dynamic_output_op(site):
        return False
    name = tensor_as_size(site)
    if name is None:
        return False
    value = site.bound[name]
    items = value.elems if value.elems is not None else (value,)
    return all(not it.is_tensor or (it.dim is not None and Tag.DATA not in it.tags)
               for it in items)


def breaks_graph(hook: str, site: Site) -> bool:
    """Whether Dynamo ends the graph at this site: a call :func:`graph_break_reason` names,
    an op whose output shape depends on data, or a tensor value steering Python control flow."""
    if isinstance(site, Call):
        if graph_break_reason(site) or tensor_as_size(site) or module_build(site):
            return True
        return dynamic_output_op(site) is not None
    if isinstance(site, Condition):
        return site.value.is_sure_tensor
    if isinstance(site, Subscript):  # x[mask]: its length depends on the data
        return site.container.is_tensor and site.value.is_mask
    if isinstance(site, Slice):  # x[start:end] with a tensor bound: read with .item()
        return tensor_bound(site) is not None
    return False


def tensor_bound(site: Slice) -> Optional[Value]:
    """The bound of a tensor's slice that is itself a tensor (``x[start:start + n]`` with
    ``start`` read from a cumsum): Dynamo reads it into Python with ``Tensor.item()``, which
    breaks the graph (or, with capture_scalar_outputs, makes an unbacked symbol)."""
    if not site.container.is_tensor:
        return None
    return next((b for b in (site.lower, site.upper, site.step)
                 if b is not None and b.is_sure_tensor), None)


def dynamic_output_op(site: Call) -> Optional[str]:
    """The op, when this call's output shape depends on tensor values (``nonzero``,
    ``masked_select``, one-argument ``torch.where``, ``repeat_interleave`` with tensor repeats
    and no ``output_size``...): Dynamo breaks the graph there by default."""
    callee = site.callee or ""
    recv = site.receiver
    on_tensor = recv is not None and recv.is_tensor
    if site.method in dynamo.DATA_DEPENDENT_OPS and on_tensor:
        return site.method
    if callee.count(".") == 1 and callee.startswith("torch.") and \
            callee.split(".")[-1] in dynamo.DATA_DEPENDENT_OPS:
        return callee
    if callee == "torch.where" and len(site.args) + len(site.kwargs) == 1:
        return "torch.where(cond)"
    if (site.method == "repeat_interleave" and on_tensor) or callee == "torch.repeat_interleave":
        repeats = site.arg("repeats", 0 if site.method else 1)
        if repeats is not None and repeats.is_tensor and site.arg("output_size") is None:
            return "repeat_interleave without output_size"
    return None


def scalar_read(site: Call) -> Optional[str]:
    """How a call reads tensor data into a Python value, or None: ``"item"``, ``"tolist"``,
    ``"numpy"``, ``"__contains__"`` (``v in t``), or the function (``int``, ``float``,
    ``math.sqrt``) given a tensor. Dynamo breaks the graph at each (SL202 reports them)."""
    if site.method in ("item", "tolist", "numpy", "__contains__") and site.receiver is not None \
            and site.receiver.is_tensor:
        return site.method
    callee = site.callee or ""
    # (a function takes lists and numbers too: only a value that is surely a tensor reads
    # one, not a `list[int] | Tensor` parameter handed a row of `.tolist()`)
    if site.args and site.args[0].is_sure_tensor \
            and (callee in ("int", "float") or callee.startswith("math.")):
        return callee
    return None


def graph_break_reason(site: Call) -> Optional[str]:
    """Why a call breaks the graph, or None. Shared by the walker (where frames end), the
    graph-break rules and SL303."""
    callee = site.callee or ""
    read = scalar_read(site)
    if read == "__contains__":
        return "`in` on a tensor reads the result back into Python"
    if read in ("item", "tolist", "numpy"):
        return f"`.{read}()` reads a tensor value into Python"
    if read or (callee == "bool" and site.args and site.args[0].is_tensor):
        return f"`{callee}()` of a tensor reads its value into Python"
    if is_python_io(site):
        return f"`{callee if not callee.startswith('<logger>') else 'logger.' + str(site.method)}` runs Python I/O"
    reason = untraceable_reason(site)
    if reason:
        return reason
    if any(d in DISABLE_DECORATORS for d in site.decorators):
        return "the callee is excluded from compilation with `torch.compiler.disable`"
    return None


DISABLE_DECORATORS = frozenset({"torch.compiler.disable", "torch._dynamo.disable",
                                "torch._disable_dynamo"})
