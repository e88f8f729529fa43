"""A read-only walk over a libcst tree, several times cheaper than ``node.visit(visitor)``.

libcst's ``visit`` rebuilds every node it passes (``_visit_and_replace_children`` constructs a
new node even for a read-only ``CSTVisitor``) and visits every whitespace, comment and newline
node on the way; on transformers that was most of what a full-body visitor cost. This walk
reads the dataclass fields instead, skips the whitespace nodes, and calls the same
``visit_<Node>`` / ``leave_<Node>`` methods: a ``visit_<Node>`` that returns False skips that
node's children, as it does for libcst. It does not call ``visit_<Node>_<field>`` methods, nor
``visit_`` methods of whitespace nodes (``Comment``, ``EmptyLine``, ``Newline``, the
whitespace classes); use ``node.visit`` for those. Nodes are visited in the order of their
fields (the source order for every node the static pass looks at). The walk keeps its own
stack, so a 600-term expression never raises RecursionError.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Optional, Tuple

import libcst as cst

#: nodes that hold only layout; never visited, nor their children
_LAYOUT = frozenset({cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.TrailingWhitespace,
                     cst.EmptyLine, cst.Newline, cst.Comment})

#: node class -> the names of its fields that may hold nodes (layout fields left out)
_FIELDS: Dict[type, Tuple[str, ...]] = {}

_Handlers = Tuple[Optional[Callable[[Any], Any]], Optional[Callable[[Any], Any]]]


def _fields(cls: type) -> Tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(
            f.name for f in dataclasses.fields(cls)
            if not f.name.startswith("whitespace") and f.name not in (
                "leading_lines", "lines_after_decorators", "header", "footer",
                "trailing_whitespace", "newline", "comment", "empty_lines"))
    return names


def _handler(visitor: Any, name: str) -> Optional[Callable[[Any], Any]]:
    """``visitor``'s method ``name``, or None where it is libcst's empty default (a
    ``CSTVisitor`` has one for every node)."""
    method = getattr(visitor, name, None)
    if method is None or getattr(type(visitor), name, None) is getattr(cst.CSTVisitor, name, 0):
        return None
    return method


def walk(root: cst.CSTNode, visitor: Any) -> None:
    """Call ``visitor``'s ``visit_<Node>`` on ``root`` and every node below it (pre-order),
    and its ``leave_<Node>`` after a node's children."""
    handlers: Dict[type, _Handlers] = {}
    leave_mark = object()
    stack: List[Any] = [root]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        if node is leave_mark:
            node = pop()
            handlers[type(node)][1](node)  # type: ignore[misc]
            continue
        cls = type(node)
        h = handlers.get(cls)
        if h is None:
            h = handlers[cls] = (_handler(visitor, f"visit_{cls.__name__}"),
                                 _handler(visitor, f"leave_{cls.__name__}"))
        if h[0] is not None and h[0](node) is False:
            if h[1] is not None:
                h[1](node)
            continue
        if h[1] is not None:
            push(node)
            push(leave_mark)
        children: List[Any] = []
        for field in _fields(cls):
            value = getattr(node, field)
            if isinstance(value, cst.CSTNode):
                if type(value) not in _LAYOUT:
                    children.append(value)
            elif isinstance(value, (tuple, list)):
                children.extend(v for v in value
                                if isinstance(v, cst.CSTNode) and type(v) not in _LAYOUT)
        children.reverse()
        stack.extend(children)
