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
from typing import TYPE_CHECKING, Any, ClassVar, Dict, FrozenSet, Optional, Sequence, Tuple

if TYPE_CHECKING:  # pragma: no cover - libcst is imported only when code is analysed
    import libcst as cst

    from shapelint.static.flow import FunctionContext

# ---------------------------------------------------------------------------------------------
# Abstract values
# ---------------------------------------------------------------------------------------------

TENSOR = "tensor"  # a torch.Tensor
MASK = "mask"  # a boolean tensor (comparison, logical op): indexing with it is data dependent
SIZE = "size"  # a Python int that comes from a tensor's sizes (a SymInt under dynamic shapes)
SHAPE = "shape"  # a torch.Size (x.shape, x.size())
SCALAR = "scalar"  # a Python int/float/bool argument of a compiled entry
STATE = "state"  # a Python value read from module state (self.attr that is not a tensor/module)
MODULE = "module"  # an nn.Module instance (a submodule)
MODULE_LIST = "module_list"  # an nn.ModuleList / ModuleDict / Sequential
RANGE = "range"  # range(...) over a size
OPTIONAL = "optional"
GLOBAL = "global"  # a module-level name that some function rebinds with `global`
TENSOR_SEQ = "tensor_seq"  # a tuple/list of tensors (x.split(k), x.chunk(n), x.unbind())  # an argument that defaults to None and may hold a tensor


class Origin:
    """Where a tracked value came from: the source expression, its file, line and function.

    Built eagerly (``Origin(text, path, line, symbol)``) or lazily from a node
    (:meth:`of_node`): the static pass makes an origin for nearly every value it tracks but
    quotes only the few that end up in a finding, and working out a node's text and line costs
    a code generation, so a lazy origin does that on first use. Two origins are equal when they
    name the same expression (the same node, or the same text at the same place).
    """

    __slots__ = ("_text", "_line", "path", "symbol", "scope", "_node", "_where", "_near", "_fmt",
                 "_key")

    def __init__(self, text: str = "", path: str = "", line: int = 0, symbol: str = "",
                 scope: str = "") -> None:
        self._text: Optional[str] = text
        self._line: Optional[int] = line
        self.path = path
        self.symbol = symbol
        #: qualified name of the function the value starts in (a compiled entry's parameter)
        self.scope = scope
        self._node: Any = None
        self._where: Any = None
        self._near: Any = None
        self._fmt = "{}"
        self._key: Tuple = ("text", text, path, line, symbol)

    @classmethod
    def of_node(cls, node: Any, where: Any, path: str, symbol: str, scope: str = "",
                text: Optional[str] = None, near: Any = None) -> "Origin":
        """An origin whose text and line ``where`` (a FunctionContext) works out on demand;
        ``near`` is the statement that holds ``node``."""
        o = cls(path=path, symbol=symbol, scope=scope)
        o._text, o._line = text, None
        o._node, o._where, o._near = node, where, near
        # a node and the function walked: functions with the same text share one tree
        o._key = ("node", id(node), id(getattr(where, "info", where)))
        return o

    def derive(self, fmt: str) -> "Origin":
        """The same place, quoted through ``fmt`` (``"{}[0]"`` for one dim of a shape)."""
        o = Origin(path=self.path, symbol=self.symbol, scope=self.scope)
        o._text, o._line, o._node, o._where = None, self._line, self._node, self._where
        o._near = self._near
        o._fmt = fmt.replace("{}", self._fmt)
        if self._node is None:
            o._text = fmt.format(self._text)
        o._key = self._key + (fmt,)
        return o

    @property
    def text(self) -> str:
        if self._text is None:
            code = " ".join(self._where.code(self._node).split())
            if len(code) > 60:
                code = code[:57] + "..."
            self._text = self._fmt.format(code)
        return self._text

    @property
    def line(self) -> int:
        if self._line is None:
            self._line = self._where.position(self._node, self._near)[0]
        return self._line

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Origin) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"Origin({self.text!r}, {self.path!r}, {self.line}, {self.symbol!r})"

    def __reduce__(self):  # resolved text and line only: nodes stay in their process
        return (Origin, (self.text, self.path, self.line, self.symbol, self.scope))

    def describe(self) -> str:
        return f"`{self.text}` (line {self.line})"


@dataclass(frozen=True)
class Value:
    """What the static pass knows about an expression's value.

    ``direct`` marks a plain size (``x.shape[0]``, ``b`` from ``b, t = x.shape``, ``len(x)``)
    as opposed to arithmetic on sizes; torch assumes plain sizes are >= 2 once dynamic, so
    comparing them to 0 or 1 is decided without a guard (``zero_one``).
    """

    kinds: FrozenSet[str] = frozenset()
    origin: Optional[Origin] = None
    direct: bool = False
    zero_one: bool = False
    elems: Optional[Tuple["Value", ...]] = None
    detail: str = ""

    # -- predicates rules use ---------------------------------------------------------------
    @property
    def is_tensor(self) -> bool:
        return TENSOR in self.kinds

    @property
    def is_mask(self) -> bool:
        return MASK in self.kinds

    @property
    def is_size(self) -> bool:
        return SIZE in self.kinds

    @property
    def is_shape(self) -> bool:
        return SHAPE in self.kinds

    @property
    def is_scalar_arg(self) -> bool:
        return SCALAR in self.kinds

    @property
    def is_state(self) -> bool:
        return STATE in self.kinds

    @property
    def is_module(self) -> bool:
        return MODULE in self.kinds

    def has(self, kind: str) -> bool:
        return kind in self.kinds

    # -- construction -----------------------------------------------------------------------
    def with_(self, **changes: Any) -> "Value":
        return dataclasses.replace(self, **changes)

    def merge(self, other: "Value") -> "Value":
        """Join of two values (both branches of an ``if``, both operands of ``+``)."""
        if not other.kinds and other.origin is None:
            return self
        if not self.kinds and self.origin is None:
            return other
        both_sizes = self.is_size and other.is_size
        return Value(
            kinds=self.kinds | other.kinds,
            origin=self.origin or other.origin,
            direct=both_sizes and self.direct and other.direct and self.origin == other.origin,
            zero_one=self.zero_one or other.zero_one,
            elems=self.elems if self.elems == other.elems else None,
            detail=self.detail or other.detail,
        )

    def derived(self) -> "Value":
        """The value after arithmetic: still tracked, no longer a plain size."""
        return dataclasses.replace(self, direct=False, elems=None)


UNKNOWN = Value()


def tracked(*values: Value) -> Value:
    """Merge many values."""
    out = UNKNOWN
    for v in values:
        out = out.merge(v)
    return out


# ---------------------------------------------------------------------------------------------
# Sites: where the engine calls a rule
# ---------------------------------------------------------------------------------------------


@dataclass
class Site:
    node: "cst.CSTNode"
    value: Value
    fn: "FunctionContext"
    #: the statement that holds ``node`` (set by the engine; speeds up finding its line)
    near: Any = dataclasses.field(default=None, init=False, repr=False, compare=False)

    def code(self, node: Optional["cst.CSTNode"] = None) -> str:
        """Source text of a node (the site's own node by default)."""
        return self.fn.code(node if node is not None else self.node)


@dataclass
class Condition(Site):
    """An expression whose truth steers Python control flow.

    ``context`` is one of ``if``, ``while``, ``ifexp``, ``assert``, ``bool`` (``bool(x)``,
    ``not x`` and operands of ``and``/``or`` reach the rule one operand at a time), ``match``.
    """

    context: str = "if"


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
    module_class: str = ""  # qualified class name when calling a submodule

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
    when it is only handed on to a helper that the engine follows (the real use is inside)."""

    name: str = ""
    passthrough: bool = False


# ---------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------

EVIDENCE_KINDS = ("recompile", "specialization", "graph-break", "compile-error")


class Rule:
    """Base class of every rule. Subclasses set the class attributes and override hooks.

    The class docstring is the rule's documentation, in four sections: ``What it does``,
    ``Why is this bad?``, ``Example``, ``Use instead``.
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

    def report(self, rule: Rule, fn: "FunctionContext", node: "cst.CSTNode", message: str,
               hint: str, near: Any = None,
               unless_nested: Optional[str] = None) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def is_called_by_region(self, qualname: str) -> bool:  # pragma: no cover - interface
        return False


# ---------------------------------------------------------------------------------------------
# Shared knowledge rules use: which calls break the graph
# ---------------------------------------------------------------------------------------------

LOGGING_PREFIXES = ("logging.", "warnings.warn", "print")
LOGGER_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception",
                            "critical", "log"})


def graph_break_reason(site: Call) -> Optional[str]:
    """Why a call breaks the graph, or None. Shared by the graph-break rules and SL303."""
    callee = site.callee or ""
    if site.method in ("item", "tolist", "numpy") and site.receiver is not None \
            and site.receiver.is_tensor:
        return f"`.{site.method}()` reads a tensor value into Python"
    if callee == "print" or callee.startswith("warnings.warn") or callee.startswith("logging."):
        return f"`{callee}` runs Python I/O"
    if site.method in LOGGER_METHODS and callee.startswith("<logger>"):
        return f"logger `.{site.method}()` runs Python I/O"
    if callee in ("int", "float", "bool") and site.args and site.args[0].is_tensor:
        return f"`{callee}()` of a tensor reads its value into Python"
    if any(d in DISABLE_DECORATORS for d in site.decorators):
        return "the callee is excluded from compilation with `torch.compiler.disable`"
    return None


DISABLE_DECORATORS = frozenset({"torch.compiler.disable", "torch._dynamo.disable",
                                "torch._disable_dynamo"})
