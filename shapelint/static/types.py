"""The type model: what kind of value an annotation, a default or a literal says a name holds.

Real model code says a lot about its values: ``hidden_states: torch.Tensor``,
``past_key_values: Optional[Cache] = None``, ``return_dict: bool = True``,
``xs: List[torch.Tensor]``. Reading it is what keeps a bool flag, a cache object or a list of
tensors from being taken for a tensor. What the annotation does not say stays unknown.
"""

from __future__ import annotations

import ast
from typing import FrozenSet, Optional

import libcst as cst

from shapelint.values import Kind, Value

#: names (last component) of classes that are tensors
TENSOR_NAMES = frozenset({"Tensor", "FloatTensor", "LongTensor", "BoolTensor", "IntTensor",
                          "HalfTensor", "DoubleTensor", "ByteTensor", "BFloat16Tensor",
                          "CharTensor", "ShortTensor",
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

def _last(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def kinds_of_annotation(node: Optional[cst.BaseExpression]) -> FrozenSet[Kind]:
    """The kinds an annotation admits (empty: unknown)."""
    if node is None:
        return frozenset()
    return frozenset(_kinds(_from_cst(node), 0))


def kinds_of_ast_annotation(node: Optional[ast.expr]) -> FrozenSet[Kind]:
    """The same for an ``ast`` annotation (summaries are read with ``ast``: no libcst parse)."""
    if node is None:
        return frozenset()
    return frozenset(_kinds(_from_ast(node), 0))


# An annotation as a small tree both parsers map to: ("name", dotted), ("none",),
# ("or", a, b), ("sub", dotted base, [items]), ("str", text), ("lit", value), ("?",)
Ann = tuple


def _from_cst(node: cst.CSTNode) -> Ann:
    if isinstance(node, cst.Name) and node.value == "None":
        return ("none",)
    if isinstance(node, (cst.Name, cst.Attribute)):
        return ("name", _dotted(node) or "")
    if isinstance(node, cst.SimpleString):
        v = node.evaluated_value
        return ("str", v) if isinstance(v, str) else ("?",)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        return ("or", _from_cst(node.left), _from_cst(node.right))
    if isinstance(node, cst.Subscript):
        items = [_from_cst(el.slice.value) for el in node.slice if isinstance(el.slice, cst.Index)]
        if len(items) == 1 and items[0][0] == "tuple":
            items = list(items[0][1])
        return ("sub", _dotted(node.value) or "", items)
    if isinstance(node, cst.Tuple):
        return ("tuple", [_from_cst(e.value) for e in node.elements])
    if isinstance(node, cst.Ellipsis):
        return ("...",)
    value = literal_value(node) if isinstance(node, cst.BaseExpression) else _MISSING
    return ("lit", value) if value is not _MISSING else ("?",)


def _from_ast(node: ast.AST) -> Ann:
    if isinstance(node, ast.Constant):
        if node.value is None:
            return ("none",)
        if isinstance(node.value, str):
            return ("str", node.value)
        if node.value is Ellipsis:
            return ("...",)
        return ("lit", node.value)
    if isinstance(node, (ast.Name, ast.Attribute)):
        return ("name", _ast_dotted(node) or "")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return ("or", _from_ast(node.left), _from_ast(node.right))
    if isinstance(node, ast.Subscript):
        sl = node.slice
        items = [_from_ast(e) for e in sl.elts] if isinstance(sl, ast.Tuple) else [_from_ast(sl)]
        return ("sub", _ast_dotted(node.value) or "", items)
    if isinstance(node, ast.Tuple):
        return ("tuple", [_from_ast(e) for e in node.elts])
    return ("?",)


def _ast_dotted(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _ast_dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _kinds(a: Ann, depth: int) -> set:
    tag = a[0]
    if depth > 8:
        return set()
    if tag == "none":
        return {Kind.NONE}
    if tag == "name":
        return _named(a[1])
    if tag == "str":  # "torch.Tensor"
        try:
            return _kinds(_from_cst(cst.parse_expression(a[1])), depth + 1)
        except Exception:  # noqa: BLE001 - an annotation we cannot read is unknown
            return set()
    if tag == "or":
        left, right = _kinds(a[1], depth + 1), _kinds(a[2], depth + 1)
        return left | right if left and right else set()
    if tag != "sub":
        return set()
    base, items = _last(a[1]), a[2]
    if base == "Optional" and items:
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
        elems: set = set()
        for it in items:
            if it[0] != "...":
                elems |= _kinds(it, depth + 1)
        return {Kind.TENSORS} if Kind.TENSOR in elems else {Kind.CONTAINER}
    if base in MAPPING_NAMES:
        vals = _kinds(items[-1], depth + 1) if items else set()
        return {Kind.TENSOR_DICT} if Kind.TENSOR in vals else {Kind.CONTAINER}
    if base in ("Annotated", "Final", "ClassVar") and items:
        return _kinds(items[0], depth + 1)
    if base == "Literal":
        return _literal_kinds([it[1] for it in items if it[0] in ("lit", "str", "none")
                               ] + [None for it in items if it[0] == "none"])
    if base in ("Unpack", "Any"):
        return set()
    if base in ("Callable", "Type", "type"):
        return {Kind.OBJECT}
    return _named(a[1])


def _literal_kinds(values) -> set:
    out = set()
    for v in values:
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
    if last == "Size" and name in ("Size", "torch.Size"):  # a shape: ints, not an object
        return {Kind.SHAPE}
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
    from shapelint.static.project import dotted

    return dotted(node)


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
    return constant(literal_value(node))


def constant(v: object) -> Value:
    """The Value of a Python constant (unknown for anything else)."""
    for kinds, types in _CONSTANT_KINDS:
        if isinstance(v, types):
            return Value(kinds=kinds, const=v)
    if v is None:
        return Value(kinds=_NONE, const=None)
    return Value()


#: (the kinds, the Python type) of constants, the sets built once (a walk reads many literals)
_CONSTANT_KINDS = tuple((frozenset({kind}), types) for kind, types in (
    (Kind.BOOL, bool), (Kind.INT, int), (Kind.FLOAT, float), (Kind.STR, str)))
_NONE = frozenset({Kind.NONE})


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
    """A parameter's kinds from its annotation, else its default. Python never checks an
    annotation, so a default's own kind joins what the annotation says
    (``output_attentions: torch.Tensor | None = False`` holds a bool when left out)."""
    return _annotated_or_default(kinds_of_annotation(annotation), kinds_of_default(default))


def _annotated_or_default(ann: FrozenSet[Kind], dflt: FrozenSet[Kind]) -> FrozenSet[Kind]:
    if ann:
        return ann | dflt
    return dflt - {Kind.NONE}  # ``x=None`` alone says nothing of what else x holds


def ast_literal(node: Optional[ast.expr]) -> Value:
    """The value of an ``ast`` literal default (``= 0``, ``= False``, ``= None``, ``= -1``)."""
    if node is None:
        return Value()
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
            isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float)) \
            and not isinstance(node.operand.value, bool):
        return constant(-node.operand.value)
    if isinstance(node, ast.Constant):
        return constant(node.value) if node.value is not Ellipsis else Value()
    return Value(kinds=frozenset({Kind.CONTAINER})) if isinstance(
        node, (ast.Tuple, ast.List, ast.Dict, ast.Set)) else Value()


def ast_param_kinds(annotation: Optional[ast.expr], default: Optional[ast.expr]) -> FrozenSet[Kind]:
    """:func:`param_kinds` for an ``ast`` parameter."""
    dflt = ast_literal(default).kinds if default is not None else frozenset()
    return _annotated_or_default(kinds_of_ast_annotation(annotation), dflt)
