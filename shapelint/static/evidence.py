"""What a function's own body says its unannotated parameters hold.

A parameter's name is weak evidence of its type: ``idx`` in nanoGPT is a LongTensor of token ids,
``hidden_states`` in a head is often a tuple of every layer's output. How the body uses it is
stronger: ``idx.size()``, ``x.view(...)``, ``x[:, -1]`` only make sense on a tensor; a parameter
that is iterated and otherwise only counted, zipped or indexed, never computed with, passed on
or touched with a tensor member, is a sequence. The entry's argument model (``regions.Regions``) reads this
first and falls back on names only when the body says nothing.
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, List, Set, Union

from shapelint.static.project import child_nodes

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


def _is_tensor_index(sl: ast.Subscript) -> bool:
    """``x[:, 0]``, ``x[..., 1:]``, ``x[None]``: an index only a tensor (or an array) takes."""
    index = sl.slice
    if isinstance(index, ast.Tuple):
        return len(index.elts) > 1
    return isinstance(index, ast.Constant) and (index.value is Ellipsis or index.value is None)


class _Uses:
    """The uses of the parameters ``names`` in a function's ``ast`` (read from the summary
    tree: no libcst parse, and nodes an order of magnitude cheaper to visit)."""

    def __init__(self, names: Set[str]) -> None:
        self.names = names
        self.found: Dict[str, Set[str]] = {n: set() for n in names}

    def _name(self, node: ast.AST) -> str:
        if isinstance(node, ast.Starred):
            node = node.value
        return node.id if isinstance(node, ast.Name) and node.id in self.names else ""

    def run(self, body: List[ast.stmt]) -> None:
        stack: List[ast.AST] = list(reversed(body))
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue  # a nested function's parameters shadow ours; its uses are its own
            self.visit(node)
            stack.extend(child_nodes(node))

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Attribute):
            name = self._name(node.value)
            if name and _tensor_member(node.attr):
                self.found[name].add(TENSOR)
        elif isinstance(node, ast.Subscript):
            name = self._name(node.value)
            if name and _is_tensor_index(node):
                self.found[name].add(TENSOR)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            self._iterated(node.iter)
        elif isinstance(node, ast.Call):
            iterable = isinstance(node.func, ast.Name) and node.func.id in _ITERABLE_BUILTINS
            for a in list(node.args) + [k.value for k in node.keywords]:
                name = self._name(a)
                if name and not iterable:
                    self.found[name].add(OPERAND)
        elif isinstance(node, ast.BinOp):
            for side in (node.left, node.right):
                name = self._name(side)
                if name:
                    self.found[name].add(OPERAND)

    def _iterated(self, it: ast.expr) -> None:
        """``for h in p``, ``enumerate(p)``, ``zip(p, q)``, ``range(len(p))``."""
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.args and \
                it.func.id in ("enumerate", "zip", "reversed", "range", "len"):
            if it.func.id != "range" or len(it.args) == 1:
                for a in it.args:
                    self._iterated(a)
            return
        name = self._name(it)
        if name:
            self.found[name].add(SEQUENCE)


def parameter_uses(fn: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> Dict[str, FrozenSet[str]]:
    """For each parameter of ``fn``: ``TENSOR`` when its body uses it as only a tensor is
    used, ``SEQUENCE`` when it iterates it and never computes with it or passes it on."""
    args = fn.args
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    if not names:
        return {}
    uses = _Uses(names)
    uses.run(fn.body)
    out: Dict[str, FrozenSet[str]] = {}
    for n, found in uses.found.items():
        if OPERAND in found:
            found.discard(SEQUENCE)
        out[n] = frozenset(found - {OPERAND})
    return out
