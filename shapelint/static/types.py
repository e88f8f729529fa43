"""The type model: what kind of value an annotation, a default or a literal says a name holds.

Real model code says a lot about its values: ``hidden_states: torch.Tensor``,
``past_key_values: Optional[Cache] = None``, ``return_dict: bool = True``,
``xs: List[torch.Tensor]``. Reading it is what keeps a bool flag, a cache object or a list of
tensors from being taken for a tensor. What the annotation does not say stays unknown.
"""

from __future__ import annotations

import re
from typing import FrozenSet, Optional

import libcst as cst

from shapelint.values import Kind, Value

#: names (last component) of classes that are tensors
TENSOR_NAMES = frozenset({"Tensor", "FloatTensor", "LongTensor", "BoolTensor", "IntTensor",
                          "HalfTensor", "DoubleTensor", "ByteTensor", "BFloat16Tensor",
                          "Parameter", "Buffer", "TensorType", "SymInt"})
SEQUENCE_NAMES = frozenset({"List", "list", "Tuple", "tuple", "Sequence", "Iterable",
                            "MutableSequence", "Iterator", "Deque", "deque", "Set", "set",
                            "FrozenSet", "frozenset"})
MAPPING_NAMES = frozenset({"Dict", "dict", "Mapping", "MutableMapping", "OrderedDict",
                           "DefaultDict", "defaultdict", "TypedDict"})
SCALARS = {"int": Kind.INT, "float": Kind.FLOAT, "bool": Kind.BOOL, "str": Kind.STR,
           "bytes": Kind.STR, "complex": Kind.FLOAT, "Number": Kind.FLOAT, "SymInt": Kind.INT,
           "SymFloat": Kind.FLOAT, "SymBool": Kind.BOOL}
OTHER_KNOWN = frozenset({"dtype", "device", "Module", "Callable", "Type", "Generator", "Enum",
                         "Literal", "Config", "PretrainedConfig", "PreTrainedConfig"})
UNKNOWN_NAMES = frozenset({"Any", "object", "Unpack", "TypeVar", "Self", "T"})

_NAME = re.compile(r"[A-Za-z_][\w.]*")


def _last(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def kinds_of_annotation(node: Optional[cst.BaseExpression]) -> FrozenSet[Kind]:
    """The kinds an annotation admits (empty: unknown)."""
    if node is None:
        return frozenset()
    return frozenset(_kinds(node, 0))


def _kinds(node: cst.BaseExpression, depth: int) -> set:
    if depth > 8:
        return set()
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):  # "torch.Tensor"
        text = node.evaluated_value if isinstance(node, cst.SimpleString) else None
        if not isinstance(text, str):
            return set()
        try:
            return _kinds(cst.parse_expression(text), depth + 1)
        except Exception:  # noqa: BLE001 - an annotation we cannot read is unknown
            return set()
    if isinstance(node, cst.Name) and node.value == "None":
        return {Kind.NONE}
    if isinstance(node, (cst.Name, cst.Attribute)):
        return _named(_dotted(node))
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        return _kinds(node.left, depth + 1) | _kinds(node.right, depth + 1)
    if isinstance(node, cst.Subscript):
        base = _last(_dotted(node.value) or "")
        items = [el.slice.value for el in node.slice if isinstance(el.slice, cst.Index)]
        if base in ("Optional",) and items:
            return _kinds(items[0], depth + 1) | {Kind.NONE}
        if base == "Union":
            out: set = set()
            for it in items:
                inner = _kinds(it, depth + 1)
                if not inner:
                    return set()  # Union[Tensor, Any]: unknown
                out |= inner
            return out
        if base in SEQUENCE_NAMES:
            elems = set()
            for it in items:
                if isinstance(it, cst.Ellipsis):
                    continue
                elems |= _kinds(it, depth + 1)
            return {Kind.TENSORS} if Kind.TENSOR in elems else {Kind.CONTAINER}
        if base in MAPPING_NAMES:
            vals = _kinds(items[-1], depth + 1) if items else set()
            return {Kind.TENSOR_DICT} if Kind.TENSOR in vals else {Kind.CONTAINER}
        if base in ("Annotated", "Final", "ClassVar") and items:
            return _kinds(items[0], depth + 1)
        if base in ("Literal",):
            return _literal_kinds(items)
        if base in ("Unpack", "Any"):
            return set()
        if base in ("Callable", "Type", "type"):
            return {Kind.OBJECT}
        return _named(_dotted(node.value) or "")
    return set()


def _literal_kinds(items) -> set:
    out = set()
    for it in items:
        v = literal_value(it)
        if isinstance(v, bool):
            out.add(Kind.BOOL)
        elif isinstance(v, int):
            out.add(Kind.INT)
        elif isinstance(v, str):
            out.add(Kind.STR)
        elif v is None:
            out.add(Kind.NONE)
    return out


def _named(name: Optional[str]) -> set:
    if not name:
        return set()
    last = _last(name)
    if last in TENSOR_NAMES:
        return {Kind.TENSOR}
    if last in SCALARS:
        return {SCALARS[last]}
    if last in SEQUENCE_NAMES:
        return {Kind.CONTAINER}
    if last in MAPPING_NAMES:
        return {Kind.CONTAINER}
    if last in UNKNOWN_NAMES or len(last) == 1:
        return set()
    if last in ("Module",) or name.startswith(("torch.nn.", "nn.")) and last[:1].isupper():
        return {Kind.MODULE}
    if last[:1].isupper() or last in OTHER_KNOWN:
        return {Kind.OBJECT}  # a class of the user's: a cache, a config, an output dataclass
    return set()


def _dotted(node: cst.CSTNode) -> Optional[str]:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


_MISSING = object()


def literal_value(node: Optional[cst.BaseExpression]):
    """The Python value of a literal (int, float, bool, None, str, negative number), else a
    sentinel that is not equal to anything a literal can be."""
    if node is None:
        return _MISSING
    if isinstance(node, cst.Integer):
        try:
            return int(node.value, 0)
        except ValueError:
            return _MISSING
    if isinstance(node, cst.Float):
        try:
            return float(node.value)
        except ValueError:
            return _MISSING
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, cst.SimpleString):
        try:
            return node.evaluated_value
        except Exception:  # noqa: BLE001
            return _MISSING
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = literal_value(node.expression)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner
    return _MISSING


def is_literal(node: Optional[cst.BaseExpression]) -> bool:
    return literal_value(node) is not _MISSING


def literal(node: cst.BaseExpression) -> Value:
    """The value of a literal expression: its kind and the constant itself."""
    v = literal_value(node)
    if v is _MISSING:
        return Value()
    if isinstance(v, bool):
        return Value(kinds=frozenset({Kind.BOOL}), const=v)
    if isinstance(v, int):
        return Value(kinds=frozenset({Kind.INT}), const=v)
    if isinstance(v, float):
        return Value(kinds=frozenset({Kind.FLOAT}), const=v)
    if isinstance(v, str):
        return Value(kinds=frozenset({Kind.STR}), const=v)
    if v is None:
        return Value(kinds=frozenset({Kind.NONE}), const=None)
    return Value()


def kinds_of_default(node: Optional[cst.BaseExpression]) -> FrozenSet[Kind]:
    """What a parameter's default says of its kind (``= None`` admits None only)."""
    if node is None:
        return frozenset()
    v = literal(node)
    if v.kinds:
        return v.kinds
    if isinstance(node, (cst.Tuple, cst.List, cst.Dict, cst.Set)):
        return frozenset({Kind.CONTAINER})
    return frozenset()


def param_kinds(annotation: Optional[cst.BaseExpression],
                default: Optional[cst.BaseExpression]) -> FrozenSet[Kind]:
    """A parameter's kinds from its annotation, else its default (a ``None`` default adds
    NONE to what the annotation says)."""
    ann = kinds_of_annotation(annotation)
    dflt = kinds_of_default(default)
    if ann:
        return ann | (dflt & {Kind.NONE})
    return dflt  # {NONE} alone for ``x=None``: None, or something narrowing cannot name
