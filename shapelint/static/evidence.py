"""What a function's own body says its unannotated parameters hold.

A parameter's name is weak evidence of its type: ``idx`` in nanoGPT is a LongTensor of token ids,
``hidden_states`` in a head is often a tuple of every layer's output. How the body uses it is
stronger: ``idx.size()``, ``x.view(...)``, ``x[:, -1]`` only make sense on a tensor; a parameter
that is iterated and otherwise only counted, zipped or indexed, never computed with, passed on
or touched with a tensor member, is a sequence. The entry's argument model (``regions.Regions``) reads this
first and falls back on names only when the body says nothing.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Set

import libcst as cst

from shapelint.static.cstwalk import walk

#: members of Tensor that lists, tuples, dicts, ints, strings, modules or config objects
#: share: reading one says nothing of a tensor
_SHARED = frozenset({"index", "count", "copy", "values", "keys", "items", "get", "pop", "append",
                     "extend", "insert", "sort", "reverse", "split", "real", "imag", "conjugate",
                     "to", "cpu", "cuda", "float", "half", "double", "type", "apply", "eval",
                     "train", "register_hook", "data", "name", "T"})

TENSOR = "tensor"
SEQUENCE = "sequence"
#: computed with or passed on: not evidence of a tensor, but no longer of a sequence alone
OPERAND = "operand"
#: builtins that take any iterable: passing a parameter to one says nothing against a sequence
_ITERABLE_BUILTINS = frozenset({"len", "enumerate", "zip", "reversed", "list", "tuple", "iter",
                                "isinstance", "sorted", "any", "all", "sum"})


def _tensor_member(attr: str) -> bool:
    from shapelint.static.results import torch_api

    if attr in _SHARED or attr.startswith("_"):
        return False
    api = torch_api()
    return api.method(attr) is not None or api.attribute(attr) is not None


def _is_tensor_index(sl: cst.Subscript) -> bool:
    """``x[:, 0]``, ``x[..., 1:]``, ``x[None]``: an index only a tensor (or an array) takes."""
    if len(sl.slice) > 1:
        return True
    el = sl.slice[0].slice
    return isinstance(el, cst.Index) and (
        isinstance(el.value, cst.Ellipsis) or
        (isinstance(el.value, cst.Name) and el.value.value == "None"))


class _Uses(cst.CSTVisitor):
    def __init__(self, names: Set[str]) -> None:
        self.names = names
        self.found: Dict[str, Set[str]] = {n: set() for n in names}

    def _name(self, node: cst.CSTNode) -> str:
        return node.value if isinstance(node, cst.Name) and node.value in self.names else ""

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a nested function's parameters shadow ours; its uses are its own

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        name = self._name(node.value)
        if name and _tensor_member(node.attr.value):
            self.found[name].add(TENSOR)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        name = self._name(node.value)
        if name and _is_tensor_index(node):
            self.found[name].add(TENSOR)

    def visit_For(self, node: cst.For) -> None:
        self._iterated(node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._iterated(node.iter)

    def _iterated(self, it: cst.BaseExpression) -> None:
        """``for h in p``, ``enumerate(p)``, ``zip(p, q)``, ``range(len(p))``."""
        if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.args and \
                it.func.value in ("enumerate", "zip", "reversed", "range", "len"):
            if it.func.value != "range" or len(it.args) == 1:
                for a in it.args:
                    self._iterated(a.value)
            return
        name = self._name(it)
        if name:
            self.found[name].add(SEQUENCE)

    def visit_Call(self, node: cst.Call) -> None:
        iterable = isinstance(node.func, cst.Name) and node.func.value in _ITERABLE_BUILTINS
        for a in node.args:
            name = self._name(a.value)
            if name and not iterable:
                self.found[name].add(OPERAND)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        for side in (node.left, node.right):
            name = self._name(side)
            if name:
                self.found[name].add(OPERAND)


def parameter_uses(fn: cst.FunctionDef) -> Dict[str, FrozenSet[str]]:
    """For each parameter of ``fn``: ``TENSOR`` when its body uses it as only a tensor is
    used, ``SEQUENCE`` when it iterates it and never computes with it or passes it on."""
    names = {p.name.value for p in list(fn.params.params) + list(fn.params.kwonly_params)
             + list(fn.params.posonly_params)}
    if not names:
        return {}
    uses = _Uses(names)
    try:
        walk(fn.body, uses)
    except RecursionError:  # a 600-term expression: no evidence, the names decide
        return {}
    out: Dict[str, FrozenSet[str]] = {}
    for n, found in uses.found.items():
        if OPERAND in found:
            found.discard(SEQUENCE)
        out[n] = frozenset(found - {OPERAND})
    return out
