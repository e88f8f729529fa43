"""What the static pass knows about a value: its type, where it came from, and for a tensor
which of its dims vary between calls.

Three independent facts, because each decides a different question torch answers:

- the **kind** (:class:`Kind`): is it a tensor, a list of tensors, a Python int, a module...?
  ``if x:`` breaks the graph on a tensor and costs nothing on a bool flag; iterating a tensor
  unrolls over its size, iterating a list of tensors does not. An unknown kind (the empty set)
  never makes a finding on its own.
- the **tags** (:class:`Tag`): where a Python value came from: a tensor's sizes (a SymInt
  under dynamic shapes), a tensor's data (``.item()``), a compiled entry's Python argument,
  module state, a rebound global.
- the **dims** (:class:`Dims`) of a tensor and the :class:`Dim` a size came from: a branch on
  a dim that varies between calls (batch, sequence) recompiles; the same branch on a dim that
  is fixed by a parameter (``nn.Linear(in_features)``) never does.

Plain data, no libcst and no torch: rules, the engine and users' rules all read it.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any, FrozenSet, Iterable, Optional, Tuple, Union


class Kind(enum.Enum):
    """The Python type of a value (a value may be a union: ``Optional[Tensor]``)."""

    TENSOR = "tensor"
    TENSORS = "tensor_seq"  # a tuple/list of tensors (x.split(k), [t for t in xs], List[Tensor])
    TENSOR_DICT = "tensor_dict"  # a dict of tensors (added_cond_kwargs, **kwargs of tensors)
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    STR = "str"
    NONE = "none"
    SHAPE = "shape"  # a torch.Size (x.shape, x.size())
    MODULE = "module"  # an nn.Module instance
    MODULES = "module_list"  # an nn.ModuleList / ModuleDict / Sequential
    RANGE = "range"  # range(...)
    CONTAINER = "container"  # a list/dict/tuple/set of Python values
    OBJECT = "object"  # another known non-tensor: a cache object, a config, a dtype, a device

    # members are singletons compared by identity: hash them by identity too (C, not Enum's
    # Python-level hash of the name: every `Kind.TENSOR in v.kinds` hashes one, millions of
    # times a check)
    __hash__ = object.__hash__


class Tag(enum.Enum):
    """Where a value came from."""

    SIZE = "size"  # computed from tensor sizes: a SymInt once dynamic
    DATA = "data"  # computed from tensor values in Python (.item(), .tolist())
    SCALAR = "scalar"  # a Python int/float/bool argument of a compiled entry
    STATE = "state"  # read from module state (self.attr that is not a tensor or module)
    GLOBAL = "global"  # a module-level name that some function rebinds with `global`
    MASK = "mask"  # a boolean tensor (a comparison): indexing with it is data dependent
    #: module state that differs between the instances of a module class built several times
    #: (``self.layer_idx = layer_idx`` in a block of a ModuleList)
    INSTANCE = "instance"
    #: a varying size's remainder modulo an int (``n % 8``, ``(w - n % w) % w``): Dynamo guards
    #: a branch on it with a ``Mod`` expression, which flips with the size's residue class
    REMAINDER = "remainder"

    __hash__ = object.__hash__  # (as Kind's)


#: the Python number kinds
NUMBERS = frozenset({Kind.INT, Kind.FLOAT, Kind.BOOL})


class Dim(enum.Enum):
    """Whether one dim of a tensor varies between calls of the compiled region."""

    VARY = "varies"
    CONST = "constant"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class DimInfo:
    """One dim: whether it varies, and how to name it in a message (``input_ids dim 1``)."""

    state: Dim
    label: str = ""
    #: VARY only because a name says so (``t``, ``seq_len``): weaker than an input's dim
    guessed: bool = False
    #: an entry input's trailing dim that nothing decided yet: a 2-D convolution that takes
    #: it makes it an image side, which varies (``shapes.image_side``)
    side: bool = False

    @property
    def varies(self) -> Optional[bool]:
        return True if self.state is Dim.VARY else False if self.state is Dim.CONST else None


UNKNOWN_DIM = DimInfo(Dim.UNKNOWN)
CONST_DIM = DimInfo(Dim.CONST)


def join_dims(*dims: DimInfo) -> DimInfo:
    """A value computed from several dims varies if any does and is constant if all are."""
    if not dims:
        return UNKNOWN_DIM
    for d in dims:
        if d.state is Dim.VARY:
            return d
    if all(d.state is Dim.CONST for d in dims):
        return CONST_DIM
    return UNKNOWN_DIM


@dataclass(frozen=True)
class Dims:
    """A tensor's dims as far as they are known: the leading ones (``front``), the trailing
    ones (``back``) and the rank when known (then ``front`` holds them all). ``x.flatten(1)``
    keeps dim 0 and loses the rest; ``linear(x)`` keeps the front and fixes the last dim."""

    front: Tuple[DimInfo, ...] = ()
    back: Tuple[DimInfo, ...] = ()
    rank: Optional[int] = None

    @staticmethod
    def of(*dims: DimInfo) -> "Dims":
        return Dims(tuple(dims), (), len(dims))

    def at(self, index: int) -> DimInfo:
        """The dim at ``index`` (negative counts from the end), or UNKNOWN."""
        if self.rank is not None:
            if -self.rank <= index < self.rank:
                return self.front[index]
            return UNKNOWN_DIM
        if index >= 0:
            return self.front[index] if index < len(self.front) else UNKNOWN_DIM
        return self.back[index] if -index <= len(self.back) else UNKNOWN_DIM

    def all(self) -> Tuple[DimInfo, ...]:
        """Every known dim (for numel-like joins): unknown ones count when the rank is not."""
        if self.rank is not None:
            return self.front
        return self.front + (UNKNOWN_DIM,) + self.back

    def with_last(self, dim: DimInfo) -> "Dims":
        if self.rank is not None:
            if self.rank == 0:
                return self
            return Dims.of(*(self.front[:-1] + (dim,)))
        return Dims(self.front, self.back[:-1] + (dim,) if self.back else (dim,), None)


UNKNOWN_DIMS = Dims()


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
        """An origin whose text and line ``where`` (the walked function) works out on demand;
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


Fact = Union[Kind, Tag]
#: Python sequences: a list or tuple of anything, one of tensors
SEQUENCES = frozenset({Kind.CONTAINER, Kind.TENSORS})
_EMPTY: FrozenSet = frozenset()


@dataclass(frozen=True)
class Value:
    """What the static pass knows about an expression's value.

    ``direct`` marks a plain size (``x.shape[0]``, ``b`` from ``b, t = x.shape``, ``len(x)``)
    as opposed to arithmetic on sizes; torch gives a plain dynamic size the range [2, inf], so
    comparing it with 0 or 1 is decided without a guard (``zero_one``). ``dim`` is the dim a
    size came from (joined through arithmetic); ``dims`` a tensor's dims. ``elems`` are the
    items of a tuple or list display; ``cls`` the class of a module.
    """

    kinds: FrozenSet[Kind] = _EMPTY
    tags: FrozenSet[Tag] = _EMPTY
    origin: Optional[Origin] = None
    direct: bool = False
    zero_one: bool = False
    elems: Optional[Tuple["Value", ...]] = None
    detail: str = ""
    dims: Optional[Dims] = None
    dim: Optional[DimInfo] = None
    #: the literal value of a Python constant (an int, a bool, a string...), when known
    const: Any = None
    #: for a size or a shape: the tensors it was read from (the values themselves, compared
    #: by identity); None when unknown (a size that went through an untracked path)
    carriers: Optional[Tuple["Value", ...]] = dataclasses.field(default=None, compare=False,
                                                                repr=False)
    #: a model output (transformers' ModelOutput, diffusers' BaseOutput): each field's name
    #: and value, in declaration order (a field not given is None); None for other values
    record: Optional[Tuple[Tuple[str, "Value"], ...]] = dataclasses.field(default=None,
                                                                          compare=False,
                                                                          repr=False)
    #: the items a function stored in a local dict under a literal key (``outputs["image"] =
    #: self.encode(...)``), to read back (``outputs["image"]``); None when it stored none
    keyed: Optional[Tuple[Tuple[str, "Value"], ...]] = dataclasses.field(default=None,
                                                                         compare=False,
                                                                         repr=False)
    #: what each item of a list of unknown length is, where the list was built from one
    #: display (``[(h // p, w // p) for h, w in sizes]``: a tuple of two tensors); the same
    #: Value for every item, so an item of a list that crossed a graph break is an input too
    item: Optional["Value"] = dataclasses.field(default=None, compare=False, repr=False)
    #: a list built by a comprehension: how many items it has, as a dim (the rows of what it
    #: iterates; UNKNOWN where a filter or a nested loop decides). ``dim`` holds its items'
    #: (``max(lengths)`` is a size of that dim), so ``len()`` and ``torch.tensor(items)`` read
    #: this; None elsewhere (a grown list's ``dim`` is its length)
    length: Optional[DimInfo] = None

    # -- predicates rules use ---------------------------------------------------------------
    @property
    def is_tensor(self) -> bool:
        return Kind.TENSOR in self.kinds

    @property
    def is_sure_tensor(self) -> bool:
        """A tensor on every path (None aside): not a `list[int] | Tensor` item, nor a value
        that is a Python bool while the model serves and a tensor while it trains."""
        return Kind.TENSOR in self.kinds and self.kinds <= {Kind.TENSOR, Kind.NONE}

    @property
    def is_tensor_seq(self) -> bool:
        return Kind.TENSORS in self.kinds

    @property
    def is_mask(self) -> bool:
        return Tag.MASK in self.tags

    @property
    def is_size(self) -> bool:
        """A Python number computed from tensor sizes (not a tensor)."""
        return Tag.SIZE in self.tags and Kind.TENSOR not in self.kinds

    @property
    def is_varying_list(self) -> bool:
        """A Python sequence whose length follows a dim that varies between calls: ``t.tolist()``
        of a tensor with one row per image of the batch, the tensors ``torch.split(x, sizes)``
        makes of such a list, a list of those (``dim`` is then the length, of the sequence or
        of its items), or a list grown once per row (``append`` in ``for i in range(len(
        sizes)):``). Dynamo never makes a list's length symbolic: a frame that takes one as an
        input guards it."""
        return bool(self.kinds) and self.kinds <= SEQUENCES \
            and self.dim is not None and self.dim.varies is True and not self.dim.guessed

    @property
    def is_shape(self) -> bool:
        return Kind.SHAPE in self.kinds

    @property
    def is_scalar_arg(self) -> bool:
        return Tag.SCALAR in self.tags

    @property
    def is_state(self) -> bool:
        return Tag.STATE in self.tags

    @property
    def is_module(self) -> bool:
        return Kind.MODULE in self.kinds

    @property
    def is_known(self) -> bool:
        """Whether anything is known of its type."""
        return bool(self.kinds)

    @property
    def is_python_number(self) -> bool:
        """Only Python numbers (no tensor, no container) as far as is known."""
        return bool(self.kinds) and self.kinds <= NUMBERS

    @property
    def varies(self) -> Optional[bool]:
        """For a size: whether the dim(s) it came from vary between calls (None: unknown)."""
        return self.dim.varies if self.dim is not None else None

    def has(self, fact: Union[Fact, str]) -> bool:
        """Whether the value has a kind or tag (an enum member or its string value)."""
        if isinstance(fact, str):
            return any(k.value == fact for k in self.kinds) or \
                any(t.value == fact for t in self.tags) or (fact == "optional" and Kind.NONE in self.kinds)
        return fact in self.kinds or fact in self.tags

    # -- construction -----------------------------------------------------------------------
    def with_(self, **changes: Any) -> "Value":
        return dataclasses.replace(self, **changes)

    def merge(self, other: "Value") -> "Value":
        """Join of two values (both branches of an ``if``, both operands of ``+``)."""
        if other is self:
            return self
        if other._blank:
            return self
        if self._blank:
            return other
        both_sizes = self.is_size and other.is_size
        dim = self.dim if other.dim is None else other.dim if self.dim is None \
            else join_dims(self.dim, other.dim)
        return Value(
            kinds=self.kinds | other.kinds,
            tags=self.tags | other.tags,
            origin=self.origin or other.origin,
            direct=both_sizes and self.direct and other.direct and self.origin == other.origin,
            zero_one=self.zero_one or other.zero_one,
            elems=self.elems if self.elems == other.elems else None,
            detail=self.detail or other.detail,
            dims=self.dims if self.dims == other.dims else (self.dims or other.dims) if
            (self.dims is None or other.dims is None) else _either_dims(self.dims, other.dims),
            dim=dim,
            const=self.const if self.const == other.const else None,
            carriers=_join_carriers(self, other),
            record=_either_record(self, other),
            keyed=_join_keyed(self.keyed, other.keyed),
            item=self.item if self.item is other.item else None,
        )

    @property
    def _blank(self) -> bool:
        """Nothing known: merging it changes nothing."""
        return not self.kinds and not self.tags and self.origin is None and not self.keyed

    def stored(self, key: str) -> Optional["Value"]:
        """What the function stored under ``key`` (see ``keyed``), None if nothing."""
        return dict(self.keyed).get(key) if self.keyed else None

    def store(self, key: str, item: "Value") -> "Value":
        """This dict after ``[key] = item``."""
        rest = tuple((k, v) for k, v in self.keyed or () if k != key)
        return dataclasses.replace(self, keyed=rest + ((key, item),))

    def field(self, key: Union[int, str]) -> Optional["Value"]:
        """A model output's item as Python gives it: by name, its field; by position, its
        ``i``-th field that is not None (``to_tuple()[i]``). None where unknown: not a model
        output, or a field before it that may or may not be None."""
        if self.record is None:
            return None
        if isinstance(key, str):
            return dict(self.record).get(key)
        if key < 0:
            return None
        for _, v in self.record:
            if v.kinds == {Kind.NONE}:
                continue
            if not v.kinds or Kind.NONE in v.kinds:
                return None
            if key == 0:
                return v
            key -= 1
        return None

    def derived(self) -> "Value":
        """The value after arithmetic: still tracked, no longer a plain size or a literal."""
        if not self.direct and self.elems is None and self.const is None:
            return self
        return dataclasses.replace(self, direct=False, elems=None, const=None)


UNKNOWN = Value()


def _either_record(a: Value, b: Value) -> Optional[Tuple[Tuple[str, Value], ...]]:
    """A model output's fields, kept when the other path gives a tuple nothing is known of
    (``outputs.to_tuple()`` or ``decoder_outputs + encoder_outputs`` under ``return_dict=
    False``): by position it holds the same fields (``outputs[0]``)."""
    if a.record is b.record:
        return a.record
    for one, other in ((a, b), (b, a)):
        if one.record is not None and other.record is None and other.elems is None and \
                other.kinds == {Kind.CONTAINER}:
            return one.record
    return None


def _either_dims(a: Dims, b: Dims) -> Dims:
    """The dims of a tensor that is ``a`` on one path and ``b`` on another (two classes a
    submodule may be, both branches of an ``if``): each dim either path names, joined (a dim
    one path does not name is unknown there), so a dim varies if it varies on either path.
    Dims of two different ranks are not joined (front with front and back with back made
    SL101 worse on both zoo halves and moved no default figure)."""
    if a.rank is not None and a.rank == b.rank:
        return Dims.of(*(join_dims(x, y) for x, y in zip(a.front, b.front)))
    if a.rank is None and b.rank is None:
        # a dim one path knows and the other does not is unknown there: it still varies if
        # it varies on the known path (``if embeds is None: embeds = embed(ids)`` keeps the
        # ids' sequence dim, which the parameter's own dims do not name)
        return Dims(tuple(join_dims(x, y) for x, y in
                          zip_longest(a.front, b.front, fillvalue=UNKNOWN_DIM)),
                    tuple(join_dims(x, y) for x, y in
                          zip_longest(a.back[::-1], b.back[::-1], fillvalue=UNKNOWN_DIM))[::-1],
                    None)
    return UNKNOWN_DIMS


def _join_keyed(a: Optional[Tuple[Tuple[str, Value], ...]],
                b: Optional[Tuple[Tuple[str, Value], ...]]) -> Optional[Tuple[Tuple[str, Value], ...]]:
    """Both paths' stored items: a key stored on one path only keeps that item (a store under
    `if outputs.get("image") is None:` is what a later read gets whenever it was made)."""
    if a is None or b is None or a is b:
        return a if b is None else b
    out = dict(a)
    for k, v in b:
        out[k] = out[k].merge(v) if k in out else v
    return tuple(out.items())


def _join_carriers(a: Value, b: Value) -> Optional[Tuple[Value, ...]]:
    """The tensors a joined size was read from: both sides' (a size and a number that is not
    one keep the size's); unknown if a size side's are unknown."""
    sized = [v for v in (a, b) if v.is_size or v.is_shape]
    if not sized or any(v.carriers is None for v in sized):
        return None
    out: Tuple[Value, ...] = ()
    for v in sized:
        out += tuple(c for c in v.carriers if not any(c is o for o in out))  # type: ignore[union-attr]
    return out


def tracked(*values: Value) -> Value:
    """Merge many values."""
    out = UNKNOWN
    for v in values:
        out = out.merge(v)
    return out


def value(*kinds: Kind, tags: Iterable[Tag] = (), **fields: Any) -> Value:
    """A value of the given kinds and tags."""
    return Value(kinds=frozenset(kinds), tags=frozenset(tags), **fields)


def tensor(origin: Optional[Origin] = None, dims: Optional[Dims] = None,
           mask: bool = False) -> Value:
    return Value(kinds=_TENSOR, tags=_MASK if mask else _EMPTY, origin=origin, dims=dims)


def size(origin: Optional[Origin], dim: Optional[DimInfo] = None, direct: bool = False) -> Value:
    """A Python int computed from tensor sizes."""
    return Value(kinds=_INT, tags=_SIZE, origin=origin, dim=dim, direct=direct)


_TENSOR = frozenset({Kind.TENSOR})
_INT = frozenset({Kind.INT})
_SIZE = frozenset({Tag.SIZE})
_MASK = frozenset({Tag.MASK})


#: what the project summary records for a module argument passed as an expression
NOT_A_LITERAL = "<not a literal>"

#: the literal arguments a module was built with: (keyword or position, value) pairs
Arguments = Tuple[Tuple[object, object], ...]


@dataclass(frozen=True)
class BuiltItems:
    """How the items of a module list were built, as distinct (class, arguments) pairs: what
    an item taken from it (``for layer in self.layers:``) may be. A loop over the list runs
    every one of them at the same line."""

    pairs: Tuple[Tuple[str, Arguments], ...]

    def of(self, cls: str) -> Tuple[Arguments, ...]:
        return tuple(args for c, args in self.pairs if c == cls)
