"""What a configured ``[[targets]]`` entry says about the inputs it replays: which dims vary.

``shapelint run`` calls a target's ``inputs(batch, seq_len)`` at every batch size and length
of the entry; the static pass reads the same function (with ``ast``: it is never imported or
run) so that it assumes what the replay will do. A dim built from the batch argument varies
when the entry lists several batch sizes, one built from ``seq_len`` when it lists several
lengths, and every other dim of a tensor the function builds with a literal size is fixed:

    def inputs(batch, seq_len):
        x = torch.randn(batch, seq_len, 64)           # x: dims 0 and 1 vary, dim 2 is fixed
        return x, (x[..., 0] > 0)                     # the mask: dims 0 and 1 vary

The result is keyed by the forward's parameter names, as ``dynamic-dims`` is: a ``tuple``
return fills the positional parameters in order (those of the class the ``model`` factory
returns), a ``dict`` its keyword ones, an ``(args, kwargs)`` pair both. What the reading
cannot follow (a helper's return value, a loop) says nothing, and the defaults apply there.
"""

from __future__ import annotations

import ast
import os
from typing import Dict, List, Optional, Sequence, Set, Tuple

from shapelint.harness.target import DEFAULT_BATCHES  # (no torch: the harness imports it lazily)
from shapelint.values import Dim

#: tensor factories whose positional arguments (or a tuple/list first argument) are the size
SIZE_FACTORIES = frozenset({"randn", "rand", "zeros", "ones", "empty", "full"})
#: ``torch.randint(low, high, size)``: the size is its last positional argument or ``size=``
RANDINT = frozenset({"randint"})
#: methods that keep their tensor's dims (``x.clone()``, ``(x > 0).long()``)
SAME_DIMS = frozenset({"clone", "long", "int", "float", "half", "bool", "to", "contiguous",
                       "detach", "cuda", "cpu", "abs", "sigmoid", "exp"})


class TargetDims:
    """Per forward parameter name, the dims the configured targets' inputs vary or fix (a
    dim any target varies varies), and the files read to learn it (the cache's dependencies)."""

    def __init__(self, targets: Sequence[Dict[str, object]], base_dir: str) -> None:
        self.dims: Dict[str, Dict[int, Dim]] = {}
        self.why: Dict[str, str] = {}
        self.files: Set[str] = set()
        for t in targets:
            self._read(t, base_dir)

    def _read(self, t: Dict[str, object], base_dir: str) -> None:
        inputs, model = t.get("inputs"), t.get("model")
        if not isinstance(inputs, str) or ":" not in inputs:
            return
        folder = str(t.get("_base_dir") or base_dir)
        fn = _function(inputs, folder, self.files)
        if fn is None:
            return
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        batch = params[0] if params else None
        seq = "seq_len" if "seq_len" in params else (params[1] if len(params) > 1 else None)
        batches = t.get("batch-sizes") or DEFAULT_BATCHES
        lens = t.get("seq-lens") or ()
        varying = {n for n, vals in ((batch, batches), (seq, lens))
                   if n and isinstance(vals, (list, tuple)) and len(set(vals)) > 1}
        fixed = {n for n in (batch, seq) if n and n not in varying}
        reader = _Reader(fn, varying, fixed)
        positional, keywords = reader.returned()
        names = _forward_params(model, folder, self.files) if positional else []
        pairs = list(zip(names, positional)) + list(keywords.items())
        label = f"target `{t.get('name') or inputs}`'s inputs"
        for name, dims in pairs:
            if dims is None:
                continue
            have = self.dims.setdefault(name, {})
            for d, state in enumerate(dims):
                if state is not None and have.get(d) is not Dim.VARY:
                    have[d] = state
            self.why.setdefault(name, label)


class _Reader:
    """Reads one ``inputs`` function: its simple assignments and what it returns."""

    def __init__(self, fn: ast.FunctionDef, varying: Set[str], fixed: Set[str]) -> None:
        self.varying, self.fixed = varying, fixed
        self.bound = _assignments(fn)
        self.returns = next((n.value for n in reversed(fn.body)
                             if isinstance(n, ast.Return) and n.value is not None), None)

    def returned(self) -> Tuple[List[Optional[List[Optional[Dim]]]],
                                Dict[str, Optional[List[Optional[Dim]]]]]:
        """(positional arguments' dims, keyword arguments' dims) of the returned inputs."""
        value = self._resolve(self.returns)
        if isinstance(value, ast.Tuple) and len(value.elts) == 2:
            args, kwargs = (self._resolve(e) for e in value.elts)
            if isinstance(args, (ast.Tuple, ast.List)) and isinstance(kwargs, ast.Dict):
                return [self.dims(e) for e in args.elts], self._keywords(kwargs)
        if isinstance(value, (ast.Tuple, ast.List)):
            return [self.dims(e) for e in value.elts], {}
        if isinstance(value, ast.Dict):
            return [], self._keywords(value)
        if value is not None:
            return [self.dims(value)], {}
        return [], {}

    def _keywords(self, node: ast.Dict) -> Dict[str, Optional[List[Optional[Dim]]]]:
        return {k.value: self.dims(v) for k, v in zip(node.keys, node.values)
                if isinstance(k, ast.Constant) and isinstance(k.value, str)}

    def _resolve(self, node: Optional[ast.expr], depth: int = 0) -> Optional[ast.expr]:
        while isinstance(node, ast.Name) and node.id in self.bound and depth < 8:
            node, depth = self.bound[node.id], depth + 1
        return node

    def dims(self, expr: ast.expr, depth: int = 0) -> Optional[List[Optional[Dim]]]:
        """Each dim of the tensor ``expr`` builds: VARY, CONST, or None (not known)."""
        node = self._resolve(expr)
        if node is None or depth > 8:
            return None
        if isinstance(node, ast.Compare) and len(node.comparators) == 1:
            return self.dims(node.left, depth + 1) or self.dims(node.comparators[0], depth + 1)
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else \
            func.id if isinstance(func, ast.Name) else ""
        if isinstance(func, ast.Attribute) and name in SAME_DIMS:
            return self.dims(func.value, depth + 1)
        if name in SIZE_FACTORIES:
            sizes: Sequence[ast.expr] = node.args
            if len(node.args) == 1 and isinstance(node.args[0], (ast.Tuple, ast.List)):
                sizes = node.args[0].elts
            elif name == "full" and node.args and isinstance(node.args[0], (ast.Tuple, ast.List)):
                sizes = node.args[0].elts
            return [self._size(s) for s in sizes] if sizes else None
        if name in RANDINT:
            size = next((k.value for k in node.keywords if k.arg == "size"), None)
            if size is None and node.args:
                size = node.args[-1]
            size = self._resolve(size)
            if isinstance(size, (ast.Tuple, ast.List)):
                return [self._size(s) for s in size.elts]
        return None

    def _size(self, node: ast.expr) -> Optional[Dim]:
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        if names & self.varying:
            return Dim.VARY
        if not names or names <= self.fixed:
            return Dim.CONST if _literal_or_fixed(node, self.fixed) else None
        return None


def _assignments(fn: ast.FunctionDef) -> Dict[str, ast.expr]:
    """``name = value`` at the top level of ``fn`` (the last one wins; a branch or a loop is
    not followed)."""
    return {n.targets[0].id: n.value for n in fn.body if isinstance(n, ast.Assign)
            and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)}


def _unchained(value: ast.expr) -> ast.expr:
    """The object a chain of method calls starts from (``Decoder().eval()`` -> ``Decoder()``)."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        value = value.func.value
    return value


def _literal_or_fixed(node: ast.expr, fixed: Set[str]) -> bool:
    return all(isinstance(n, (ast.Constant, ast.BinOp, ast.operator, ast.UnaryOp, ast.unaryop,
                              ast.Load, ast.expr_context))
               or (isinstance(n, ast.Name) and n.id in fixed) for n in ast.walk(node))


def _parse(path: Optional[str], read: Set[str]) -> Optional[ast.Module]:
    from shapelint.static import files as files_mod

    if path is None or not os.path.isfile(path):
        return None
    src = files_mod.read_source(path)
    if not isinstance(src, files_mod.SourceFile):
        return None
    read.add(os.path.abspath(path))
    try:
        return ast.parse(src.text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _source(ref: str, folder: str) -> Optional[str]:
    from shapelint.harness.target import TargetError, source_file

    try:
        return source_file(ref, folder, [os.path.join(folder, "src")])
    except TargetError:
        return None


def _function(ref: str, folder: str, read: Set[str]) -> Optional[ast.FunctionDef]:
    tree = _parse(_source(ref, folder), read)
    attr = ref.rpartition(":")[2]
    if tree is None:
        return None
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == attr), None)


def _forward_params(model: object, folder: str, read: Set[str]) -> List[str]:
    """The positional parameters of ``forward`` of the class the ``model`` factory returns
    (``return Decoder(...)``, ``Decoder().eval()``, or ``m = Decoder(...); return m``), or of
    the class itself."""
    if not isinstance(model, str) or ":" not in model:
        return []
    tree = _parse(_source(model, folder), read)
    if tree is None:
        return []
    attr = model.rpartition(":")[2]
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    cls = classes.get(attr)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == attr), None)
    if cls is None and fn is not None:
        bound = _assignments(fn)
        for ret in (n.value for n in fn.body if isinstance(n, ast.Return) and n.value):
            value = _unchained(ret)  # Decoder().eval(), Decoder().to(device)
            if isinstance(value, ast.Name):
                value = _unchained(bound.get(value.id, value))
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
                cls = classes.get(value.func.id) or _imported_class(tree, value.func.id, folder,
                                                                     read)
    if cls is None:
        return []
    forward = next((n for n in cls.body if isinstance(n, ast.FunctionDef)
                    and n.name == "forward"), None)
    if forward is None:
        return []
    return [a.arg for a in forward.args.posonlyargs + forward.args.args][1:]


def _imported_class(tree: ast.Module, name: str, folder: str, read: Set[str]
                    ) -> Optional[ast.ClassDef]:
    """The class ``from pkg.models import Net`` brings into the factory's module (an absolute
    import, found the way the target's own references are: never by importing)."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    other = _parse(_source(f"{node.module}:{alias.name}", folder), read)
                    return next((n for n in (other.body if other else [])
                                 if isinstance(n, ast.ClassDef) and n.name == alias.name), None)
    return None
