#!/usr/bin/env python3
"""Generate shapelint/static/data/torch_api.json from an installed torch, without importing it.

The static pass runs where torch is absent (a pre-commit environment), yet its rules need to
know torch's API: what a call returns (a tensor, a tuple of tensors, an int, a torch.Size...)
and where each parameter sits (so an argument can be read whether it was passed by position or
by keyword). This script reads the type stubs and Python sources that torch ships, with `ast`
only, and writes a small, sorted, deterministic JSON file that `shapelint.static.torch_api`
loads.

Sources, in order of authority for a name (the runtime definition wins over a stale stub):
  torch.*                  torch/functional.py, torch/__init__.py (and a few of
                           torch/random.py, torch/_lowrank.py) defs, then
                           torch/_C/_VariableFunctions.pyi
  torch.nn.functional.*    torch/nn/functional.py defs (boolean_dispatch and _add_docstr
                           followed), then torch/nn/functional.pyi (re-exports resolved into
                           _VariableFunctions.pyi and torch/_C/_nn.pyi)
  torch.linalg/fft/special torch/<ns>/__init__.py: only `_add_docstr(_C.op, doc)`, so the
                           signature and the types come from the docstring (approximate)
  Tensor.*                 torch/_tensor.py (class Tensor), then torch/_C/__init__.pyi
                           (class TensorBase); Tensor properties from TensorBase annotations
  Size.*                   torch/_C/__init__.pyi (class Size) plus tuple's own methods
  named tuples             torch/return_types.pyi (arity and field names)

Usage: python scripts/gen_torch_api.py [--torch-dir DIR] [--output PATH] [--check]
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO / "shapelint" / "static" / "data" / "torch_api.json"
COMMAND = "python scripts/gen_torch_api.py"
FORMAT = 1

# Return kinds, in the order used to sort unions.
RETURN_KINDS = ("tensor", "tensors", "tensor_tuple", "int", "float", "bool", "number", "size",
                "none", "str", "dtype", "device", "other")
# Coarse parameter types ("none" only for a parameter typed exactly None, e.g. size(dim: None)).
PARAM_KINDS = ("tensor", "tensors", "int", "float", "bool", "number", "size", "dtype",
               "device", "str", "none", "other")
NUMERIC = {"int", "float", "bool", "number"}

SOURCES = {
    "vf": "torch/_C/_VariableFunctions.pyi",
    "nn_c": "torch/_C/_nn.pyi",
    "torch_py": "torch/functional.py",
    "torch_init": "torch/__init__.py",
    "torch_lowrank": "torch/_lowrank.py",
    "torch_random": "torch/random.py",
    "F_py": "torch/nn/functional.py",
    "F_pyi": "torch/nn/functional.pyi",
    "linalg_doc": "torch/linalg/__init__.py",
    "fft_doc": "torch/fft/__init__.py",
    "special_doc": "torch/special/__init__.py",
    "tensor_pyi": "torch/_C/__init__.pyi",
    "tensor_py": "torch/_tensor.py",
    "manual": "scripts/gen_torch_api.py",
}

# Python modules whose public defs are torch.*: (source code, path under torch/, only these
# names or all public defs). Later ones win (torch/__init__.py star-imports functional.py last).
TORCH_PY_MODULES = (
    ("torch_random", "random.py", ("get_rng_state", "initial_seed", "manual_seed", "seed",
                                   "set_rng_state")),
    ("torch_lowrank", "_lowrank.py", ("pca_lowrank", "svd_lowrank")),
    ("torch_init", "__init__.py", ()),
    ("torch_py", "functional.py", ()),
)

# Last resort for Python defs that carry no return annotation, type comment, stub or docstring
# signature. Checked by hand against the 2.13 sources.
MANUAL_RETURNS = {
    "torch.atleast_1d": "other",  # a tensor for one argument, a tuple of tensors otherwise
    "torch.atleast_2d": "other",
    "torch.atleast_3d": "other",
    "torch.block_diag": "tensor",
    "torch.broadcast_shapes": "size",
    "torch.broadcast_tensors": "tensors",
    "torch.cdist": "tensor",
    "torch.chain_matmul": "tensor",
    "torch.tensordot": "tensor",
    "torch.linalg.multi_dot": "tensor",
    "torch.special.logsumexp": "tensor",
    "torch.sym_float": "float",
    "torch.sym_int": "int",
    "torch.sym_max": "number",
    "torch.sym_min": "number",
    "torch.sym_not": "bool",
    "torch.sym_sum": "number",
    "Tensor.__len__": "int",
    "Tensor.__iter__": "tensors",
    "Tensor.__reversed__": "tensor",
    "Tensor.__hash__": "int",
    "Tensor.__repr__": "str",
    "Tensor.__format__": "str",
    "Tensor.backward": "none",
    "Tensor.is_shared": "bool",
    "Tensor.share_memory_": "tensor",
    "Tensor.module_load": "tensor",
    "Tensor.resize": "tensor",
    "Tensor.resize_as": "tensor",
    "Tensor.to_sparse_coo": "tensor",
    "Tensor.unflatten": "tensor",
}
# Tensor dunders that are protocol plumbing, not something model code calls.
SKIP_DUNDERS = {"__init__", "__new__", "__init_subclass__", "__torch_function__",
                "__torch_dispatch__", "__reduce_ex__", "__setstate__", "__deepcopy__", "__dir__",
                "__array_wrap__", "__class_getitem__", "__cuda_array_interface__"}
# tuple's own methods, which torch.Size inherits (the stub only lists what Size overrides).
SIZE_TUPLE_METHODS = {
    "__len__": (["self:size"], "int"),
    "__contains__": (["self:size", "key:int", "/"], "bool"),
    "__iter__": (["self:size"], "other"),
    "count": (["self:size", "value:int", "/"], "int"),
    "index": (["self:size", "value:int", "start:int=0", "stop:int=...", "/"], "int"),
}


# --------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class Ret:
    kind: str
    arity: Optional[int] = None
    nullable: bool = False
    fields: tuple = ()

    def encode(self) -> str:
        s = self.kind
        if self.arity is not None:
            s += f"({self.arity})"
        return s + ("?" if self.nullable else "")


UNKNOWN_RET = None  # a def with no return information yet


@dataclass
class Param:
    name: str
    kinds: Optional[frozenset]  # None: not annotated (filled later, else "other")
    default: Optional[str] = None  # source text; "..." when the stub hides it; None: required
    literal: object = None  # the single Literal[...] value the annotation allows, if any
    has_literal: bool = False

    def encode(self) -> str:
        kinds = self.kinds or frozenset({"other"})
        s = f"{self.name}:{'|'.join(k for k in PARAM_KINDS if k in kinds)}"
        if self.default is not None:
            s += "=" + self.default
        return s


@dataclass
class Sig:
    args: list  # positional-or-keyword (and positional-only) Params, self included
    posonly: int = 0
    varargs: Optional[Param] = None
    kwonly: list = field(default_factory=list)
    varkw: Optional[Param] = None
    ret: Optional[Ret] = None
    when: dict = field(default_factory=dict)

    def all_params(self) -> Iterator[Param]:
        yield from self.args
        if self.varargs:
            yield self.varargs
        yield from self.kwonly
        if self.varkw:
            yield self.varkw

    def shape_key(self) -> tuple:
        """Everything but the parameter types: overloads equal on this merge their types."""
        return (tuple((p.name, p.default) for p in self.args), self.posonly,
                self.varargs.name if self.varargs else None,
                tuple((p.name, p.default) for p in self.kwonly),
                self.varkw.name if self.varkw else None, self.ret,
                tuple(sorted((k, repr(v)) for k, v in self.when.items())))

    def encode(self) -> dict:
        params = []
        for i, p in enumerate(self.args):
            params.append(p.encode())
            if self.posonly and i == self.posonly - 1:
                params.append("/")
        if self.varargs:
            params.append("*" + self.varargs.encode())
        elif self.kwonly:
            params.append("*")
        params.extend(p.encode() for p in self.kwonly)
        if self.varkw:
            params.append("**" + self.varkw.encode())
        ret = self.ret or Ret("other")
        out: dict = {"params": params, "ret": ret.encode()}
        if ret.fields:
            out["fields"] = list(ret.fields)
        if self.when:
            out["when"] = dict(sorted(self.when.items()))
        return out


@dataclass
class Entry:
    sigs: list
    src: str


# --------------------------------------------------------------------------------------------
# Types


class Types:
    """Maps annotations (stub or runtime) to coarse kinds."""

    def __init__(self, return_types: dict):
        self.return_types = return_types  # name -> tuple of field names

    # Atoms: ("tensor",), ("ttuple", n, fields), ("itup",), ("lit", value), ("none",), ...
    def atoms(self, node: Optional[ast.AST], self_kind: str = "tensor") -> set:
        if node is None:
            return {("other",)}
        if isinstance(node, ast.Constant):
            if node.value is None:
                return {("none",)}
            if isinstance(node.value, str):
                try:
                    return self.atoms(ast.parse(node.value, mode="eval").body, self_kind)
                except SyntaxError:
                    return {("other",)}
            return {("other",)}
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self.atoms(node.left, self_kind) | self.atoms(node.right, self_kind)
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self.named(dotted(node), self_kind)
        if isinstance(node, ast.Subscript):
            base = dotted(node.value).split(".")[-1]
            args = subscript_args(node)
            if base == "Optional":
                return self.atoms(args[0], self_kind) | {("none",)}
            if base == "Union":
                return set().union(*(self.atoms(a, self_kind) for a in args))
            if base == "Literal":
                return {("lit", a.value) if isinstance(a, ast.Constant) else ("other",)
                        for a in args}
            if base in ("Annotated",):
                return self.atoms(args[0], self_kind)
            if base in ("_TypeIs", "_TypeGuard", "TypeIs", "TypeGuard"):
                return {("bool",)}
            if base.startswith("BroadcastingList"):
                inner = self.atoms(args[0], self_kind)
                return inner | ({("itup",)} if inner <= {("int",)} else {("other",)})
            if base in ("tuple", "Tuple"):
                if len(args) == 2 and is_ellipsis(args[1]):
                    return {self.seq(args[0], self_kind)}
                elems = [self.atoms(a, self_kind) - {("none",)} for a in args]
                if elems and all(e and e <= {("tensor",)} for e in elems):
                    return {("ttuple", len(elems), ())}
                if elems and all(e and e <= {("int",)} for e in elems):
                    return {("itup",)}
                return {("other",)}
            if base in ("list", "List", "Sequence", "Iterable", "Iterator", "MutableSequence"):
                return {self.seq(args[0], self_kind)} if args else {("other",)}
            return {("other",)}
        return {("other",)}

    def seq(self, elem: ast.AST, self_kind: str) -> tuple:
        inner = self.atoms(elem, self_kind) - {("none",)}
        if inner and inner <= {("tensor",)}:
            return ("tensors",)
        if inner and inner <= {("int",)}:
            return ("itup",)  # a size as a parameter; as a return, not a torch.Size
        return ("other",)

    def named(self, name: str, self_kind: str) -> set:
        if name.startswith("torch.return_types."):
            short = name.rsplit(".", 1)[1]
            fields = self.return_types.get(short)
            return {("ttuple", len(fields), fields)} if fields else {("other",)}
        last = name.split(".")[-1]
        if last in ("Tensor", "TensorBase", "LongTensor", "BoolTensor", "FloatTensor",
                    "Parameter"):
            return {("tensor",)}
        if last in ("_int", "int", "SymInt", "SupportsIndex", "IntLikeType", "_SymInt"):
            return {("int",)}
        if last in ("_float", "float", "SymFloat", "FloatLikeType"):
            return {("float",)}
        if last in ("_bool", "bool", "SymBool", "BoolLikeType"):
            return {("bool",)}
        if last in ("Number", "_number", "number", "Scalar", "_complex", "complex"):
            return {("number",)}
        if last in ("Size", "_size", "_symsize"):
            return {("size",)}
        if last in ("str", "_str"):
            return {("str",)}
        if last in ("_dtype", "dtype", "DType"):
            return {("dtype",)}
        if last in ("_device", "device", "Device", "DeviceLikeType"):
            return {("device",)}
        if last in ("None", "NoneType"):
            return {("none",)}
        if last == "Self":
            return {(self_kind,)}
        if last == "_TensorOrTensors":
            return {("tensor",), ("tensors",)}
        if last == "_maybe_indices_t":
            return {("tensor",), ("ttuple", 2, ())}
        if re.fullmatch(r"_size_(\d|any)(_opt)?_t", last):
            return {("int",), ("size",)}
        if re.fullmatch(r"_ratio_(\d|any)_t", last):
            return {("float",), ("other",)}
        return {("other",)}

    def ret(self, node: Optional[ast.AST], self_kind: str = "tensor",
            self_ann: Optional[ast.AST] = None) -> Ret:
        if (self_ann is not None and node is not None and isinstance(node, ast.Name)
                and isinstance(self_ann, ast.Name) and node.id == self_ann.id):
            return Ret(self_kind)  # def cuda(self: T, ...) -> T
        return ret_from_atoms(self.atoms(node, self_kind))

    def param(self, node: Optional[ast.AST], self_kind: str = "tensor") -> tuple:
        """(kinds, literal, has_literal) for a parameter annotation."""
        if node is None:
            return None, None, False
        atoms = self.atoms(node, self_kind)
        lits = [a[1] for a in atoms if a[0] == "lit"]
        kinds = set()
        for a in atoms:
            kinds.add(param_kind(a))
        if kinds != {"none"}:
            kinds.discard("none")
        single_literal = len(lits) == 1 and len(atoms) == 1
        return frozenset(kinds), (lits[0] if single_literal else None), single_literal


def param_kind(atom: tuple) -> str:
    k = atom[0]
    if k == "lit":
        v = atom[1]
        return ("bool" if isinstance(v, bool) else "int" if isinstance(v, int)
                else "float" if isinstance(v, float) else "str" if isinstance(v, str) else "other")
    if k == "ttuple":
        return "tensors"
    if k == "itup":
        return "size"
    return k if k in PARAM_KINDS else "other"


def ret_from_atoms(atoms: set) -> Ret:
    nullable = ("none",) in atoms
    rest = atoms - {("none",)}
    if not rest:
        return Ret("none")
    kinds = set()
    for a in rest:
        if a[0] == "lit":
            kinds.add(param_kind(a))
        elif a[0] == "itup":
            kinds.add("other")
        else:
            kinds.add(a)
    if len(kinds) == 1:
        (k,) = kinds
        if isinstance(k, str):
            return Ret(k, nullable=nullable)
        if k[0] == "ttuple":
            return Ret("tensor_tuple", k[1], nullable, tuple(k[2]))
        return Ret(k[0], nullable=nullable)
    names = {k if isinstance(k, str) else k[0] for k in kinds}
    if names <= NUMERIC:
        return Ret("number", nullable=nullable)
    return Ret("other", nullable=nullable)


def merge_rets(rets: Sequence[Ret]) -> Ret:
    """One kind for a callable: its overloads' kind when they agree, else number/other."""
    rets = [r or Ret("other") for r in rets]
    if not rets:
        return Ret("other")
    nullable = any(r.nullable for r in rets)
    first = rets[0]
    if all((r.kind, r.arity, r.fields) == (first.kind, first.arity, first.fields) for r in rets):
        return Ret(first.kind, first.arity, nullable, first.fields)
    if all((r.kind, r.arity) == (first.kind, first.arity) for r in rets):
        return Ret(first.kind, first.arity, nullable)  # named differently
    if all(r.kind == first.kind for r in rets):
        return Ret(first.kind, nullable=nullable)  # tensor_tuple of differing arities
    if {r.kind for r in rets} <= NUMERIC:
        return Ret("number", nullable=nullable)
    return Ret("other", nullable=nullable)


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return dotted(node.value) + "." + node.attr
    return ""


def subscript_args(node: ast.Subscript) -> list:
    s = node.slice
    return list(s.elts) if isinstance(s, ast.Tuple) else [s]


def is_ellipsis(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def default_text(node: ast.AST) -> str:
    """A default's source text: a literal's repr, a dotted name, or "..." when unknown."""
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else repr(node.value)
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, (int, float))):
        return repr(-node.operand.value)
    if isinstance(node, (ast.Tuple, ast.List)):
        parts = [default_text(e) for e in node.elts]
        if "..." in parts:
            return "..."
        if isinstance(node, ast.List):
            return "[" + ", ".join(parts) + "]"
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    name = dotted(node)
    return name or "..."


def doc_text(node: ast.AST) -> Optional[str]:
    """A docstring argument's text: a literal, `"...".format(...)`, an f-string, or a sum."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"):
        return doc_text(node.func.value)
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values
                       if isinstance(v, ast.Constant) and isinstance(v.value, str))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = doc_text(node.left), doc_text(node.right)
        return None if left is None or right is None else left + right
    return None


def decorators(fn: ast.FunctionDef) -> set:
    return {dotted(d).split(".")[-1] for d in fn.decorator_list}


# --------------------------------------------------------------------------------------------
# Signatures


class SigReader:
    def __init__(self, types: Types):
        self.types = types

    def from_def(self, fn: ast.FunctionDef, *, self_kind: Optional[str] = None) -> Sig:
        """A signature from a def; self_kind set for methods (first parameter is the receiver)."""
        a = fn.args
        comment_args: list = []
        comment_ret = None
        if fn.type_comment:
            try:
                ft = ast.parse(fn.type_comment, mode="func_type")
                comment_args, comment_ret = list(ft.argtypes), ft.returns
            except SyntaxError:
                pass
        positional = list(a.posonlyargs) + list(a.args)
        defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
        is_method = self_kind is not None and "staticmethod" not in decorators(fn)
        kind_for_self = self_kind or "tensor"
        if comment_args and is_method and len(comment_args) == len(positional) - 1:
            comment_args = [None] + comment_args
        self_ann = positional[0].annotation if is_method and positional else None

        def mk(arg: ast.arg, default: Optional[ast.AST], idx: Optional[int]) -> Param:
            ann = arg.annotation
            if ann is None and idx is not None and idx < len(comment_args):
                ann = comment_args[idx]
            if is_method and idx == 0:
                kinds, lit, has_lit = frozenset({kind_for_self}), None, False
            else:
                kinds, lit, has_lit = self.types.param(ann, kind_for_self)
            return Param(arg.arg, kinds, None if default is None else default_text(default),
                         lit, has_lit)

        args = [mk(p, d, i) for i, (p, d) in enumerate(zip(positional, defaults))]
        kwonly = [mk(p, d, None) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
        varargs = mk(a.vararg, None, None) if a.vararg else None
        varkw = mk(a.kwarg, None, None) if a.kwarg else None
        ret_node = fn.returns if fn.returns is not None else comment_ret
        ret = (self.types.ret(ret_node, kind_for_self, self_ann) if ret_node is not None
               else UNKNOWN_RET)
        sig = Sig(args, len(a.posonlyargs), varargs, kwonly, varkw, ret)
        for p in sig.all_params():
            if p.has_literal:
                sig.when[p.name] = p.literal
        return sig

    def from_doc(self, doc: str, types_doc: Optional[str] = None) -> Optional[Sig]:
        """A signature from a docstring's first line, `name(a, b=1, *, out=None) -> Tensor`."""
        line = next((ln.strip() for ln in doc.strip().splitlines() if ln.strip()), "")
        head, arrow, ret_text = line.partition("->")
        m = re.match(r"^[\w.]*?(\w+)\((.*)\)\s*$", head.strip())
        if not m:
            return None
        params = re.sub(r"\b(?:bool|int|float|Tensor|str)\s+(?=\w)", "", m.group(2))
        try:
            fn = ast.parse(f"def f({params}): pass").body[0]
        except SyntaxError:
            return None
        assert isinstance(fn, ast.FunctionDef)
        sig = self.from_def(fn)
        doc_types = doc_param_types(types_doc if types_doc is not None else doc)
        for p in sig.all_params():
            if p.kinds is None and p.name in doc_types:
                p.kinds = doc_types[p.name]
        sig.ret = doc_ret(ret_text) if arrow and ret_text.strip() else UNKNOWN_RET
        return sig


def doc_type_kinds(text: str) -> frozenset:
    s = text.lower().replace("optional", "")
    kinds = set()

    def seq(m: re.Match) -> str:
        inner = m.group(2)
        if "tensor" in inner:
            kinds.add("tensors")
        elif re.search(r"\bints?\b", inner):
            kinds.add("size")
        else:
            kinds.add("other")
        return " "

    s = re.sub(r"\b(tuple|list|sequence|iterable)(\s*\[[^\]]*\]|\s+of\s+[\w.]+)", seq, s)
    s = re.sub(r"torch\.size", lambda m: kinds.add("size") or " ", s)
    words = set(re.findall(r"[\w.]+", s))
    table = {"tensor": "tensor", "longtensor": "tensor", "booltensor": "tensor",
             "tensors": "tensors", "int": "int", "float": "float", "bool": "bool",
             "str": "str", "string": "str", "torch.dtype": "dtype", "dtype": "dtype",
             "torch.device": "device", "device": "device", "number": "number",
             "scalar": "number", "tuple": "other", "list": "other", "callable": "other",
             "torch.generator": "other", "torch.layout": "other", "generator": "other",
             "torch.memory_format": "other", "complex": "number"}
    for w in words:
        if w in table:
            kinds.add(table[w])
    return frozenset(kinds or {"other"})


def doc_param_types(doc: str) -> dict:
    """`name (type, optional): text` lines of a Google-style docstring's Args sections."""
    out: dict = {}
    for m in re.finditer(r"^\s*(\w+)\s*\((.*)\)\s*:", doc, re.M):
        out.setdefault(m.group(1), doc_type_kinds(m.group(2)))
    return out


def doc_ret(text: str) -> Ret:
    t = text.strip().rstrip(".")
    tensor = r"(?:Tensor|LongTensor|BoolTensor|FloatTensor)"
    if re.fullmatch(tensor, t):
        return Ret("tensor")
    m = re.fullmatch(r"\(\s*(.*)\)", t)
    if m:
        parts = [p.strip() for p in m.group(1).split(",") if p.strip()]
        if parts and all(re.fullmatch(tensor, p) for p in parts):
            return Ret("tensor_tuple", len(parts))
        return Ret("other")
    low = t.lower()
    if re.fullmatch(r"(a )?(list|tuple|sequence|seq) of tensors", low):
        return Ret("tensors")
    return Ret({"int": "int", "bool": "bool", "float": "float", "number": "number",
                "none": "none", "str": "str", "torch.size": "size", "size": "size",
                "torch.dtype": "dtype", "torch.device": "device"}.get(low, "other"))


# --------------------------------------------------------------------------------------------
# Sources


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path), type_comments=True)


def is_type_checking(test: ast.AST) -> bool:
    return dotted(test).split(".")[-1] == "TYPE_CHECKING"


def walk_body(body: Iterable[ast.stmt], in_tc: bool = False) -> Iterator[tuple]:
    """Top-level statements, descending into `if` branches: (stmt, under TYPE_CHECKING)."""
    for node in body:
        if isinstance(node, ast.If):
            tc = is_type_checking(node.test)
            yield from walk_body(node.body, in_tc or tc)
            yield from walk_body(node.orelse, in_tc)
        elif isinstance(node, ast.Try):
            yield from walk_body(node.body, in_tc)
        else:
            yield node, in_tc


class PyModule:
    """A module's defs and assignments, read from its source (or stub)."""

    def __init__(self, path: Path):
        self.path = path
        tree = parse(path)
        self.tree = tree
        self.defs: dict = {}
        self.tc_defs: dict = {}
        self.assigns: dict = {}
        self.reexports: dict = {}  # local name -> dotted source (from X import Y as Z)
        for node, in_tc in walk_body(tree.body):
            if isinstance(node, ast.FunctionDef):
                (self.tc_defs if in_tc else self.defs).setdefault(node.name, []).append(node)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                    node.targets[0], ast.Name):
                self.assigns[node.targets[0].id] = node.value
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    if alias.asname and alias.asname == alias.name:  # explicit re-export
                        self.reexports[alias.name] = f"{node.module}.{alias.name}"

    def chosen_defs(self, name: str) -> list:
        """The defs that make `name`'s signature: typing overloads, else the runtime def."""
        found = self.tc_defs.get(name) or self.defs.get(name) or []
        overloads = [f for f in found if decorators(f) & {"overload", "_overload"}]
        if overloads:
            return overloads
        return found[-1:] if found else []

    def doc(self, name: str) -> str:
        """The runtime def's docstring (typing overloads have none)."""
        for fn in reversed(self.defs.get(name, []) + self.tc_defs.get(name, [])):
            doc = ast.get_docstring(fn)
            if doc:
                return doc
        return ""

    def names(self) -> set:
        return set(self.defs) | set(self.tc_defs) | set(self.assigns) | set(self.reexports)


def class_body(tree: ast.Module, name: str) -> list:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node.body
    raise SystemExit(f"class {name} not found")


def read_return_types(path: Path) -> dict:
    out = {}
    for node in parse(path).body:
        if isinstance(node, ast.ClassDef):
            fields = [n.name for n in node.body if isinstance(n, ast.FunctionDef)
                      and "property" in decorators(n)]
            if fields:
                out[node.name] = tuple(fields)
    return out


def read_version(torch_dir: Path) -> str:
    path = torch_dir / "version.py"
    if path.exists():
        for node in parse(path).body:
            target = node.targets[0] if isinstance(node, ast.Assign) else getattr(
                node, "target", None)
            if isinstance(target, ast.Name) and target.id == "__version__":
                value = node.value
                if isinstance(value, ast.Constant):
                    return str(value.value).split("+")[0]  # 2.13.0+cpu and +cu126 alike
    return "unknown"


# --------------------------------------------------------------------------------------------
# The generator


class Generator:
    def __init__(self, torch_dir: Path):
        self.torch_dir = torch_dir
        self.types = Types(read_return_types(torch_dir / "return_types.pyi"))
        self.reader = SigReader(self.types)
        self.vf = PyModule(torch_dir / "_C" / "_VariableFunctions.pyi")
        self.nn_c = PyModule(torch_dir / "_C" / "_nn.pyi")
        self.functions: dict = {}
        self.methods: dict = {}
        self.attributes: dict = {}
        self.notes: list = []

    # -- helpers

    def sigs_of_defs(self, defs: list, self_kind: Optional[str] = None) -> list:
        return [self.reader.from_def(f, self_kind=self_kind) for f in defs]

    def stub_sigs(self, dotted_name: str) -> list:
        """Signatures of a compiled op named by its import path (torch.X, torch._C._nn.X)."""
        parts = dotted_name.split(".")
        name = parts[-1]
        module = ".".join(parts[:-1])
        if module in ("torch", "torch._C._VariableFunctions", "_VF", "torch._VF",
                      "_C._VariableFunctions"):
            return self.sigs_of_defs(self.vf.chosen_defs(name))
        if module in ("torch._C._nn", "_C._nn", "torch.nn._C._nn"):
            return self.sigs_of_defs(self.nn_c.chosen_defs(name))
        return []

    def resolve(self, mod: PyModule, expr: ast.AST, depth: int = 0) -> tuple:
        """(signatures, docstring) of what a module-level expression names."""
        if depth > 8:
            return [], None
        if isinstance(expr, ast.Name):
            if expr.id in mod.defs or expr.id in mod.tc_defs:
                defs = mod.chosen_defs(expr.id)
                return self.sigs_of_defs(defs), ast.get_docstring(defs[-1]) if defs else None
            if expr.id in mod.assigns:
                return self.resolve(mod, mod.assigns[expr.id], depth + 1)
            return [], None
        if isinstance(expr, ast.Attribute):
            return self.stub_sigs(dotted(expr)), None
        if isinstance(expr, ast.Call):
            fname = dotted(expr.func).split(".")[-1]
            if fname == "_add_docstr" and len(expr.args) == 2:
                sigs, _ = self.resolve(mod, expr.args[0], depth + 1)
                return sigs, doc_text(expr.args[1])
            if fname == "boolean_dispatch":
                return self.dispatch(mod, expr, depth), None
        return [], None

    def dispatch(self, mod: PyModule, call: ast.Call, depth: int) -> list:
        """boolean_dispatch(arg_name=..., if_true=f, if_false=g): each leaf's overloads, with
        `when` saying which value of the flag selects it."""
        kw = {k.arg: k.value for k in call.keywords}
        arg = kw.get("arg_name")
        if not isinstance(arg, ast.Constant):
            return []
        out = []
        for key, value in (("if_false", False), ("if_true", True)):
            if key in kw:
                sigs, _ = self.resolve(mod, kw[key], depth + 1)
                for s in sigs:
                    out.append(replace(s, when={**s.when, arg.value: value}))
        return out

    def py_entry(self, mod: PyModule, name: str, src: str, fallback: list) -> Optional[Entry]:
        if name in mod.defs or name in mod.tc_defs:
            sigs = self.sigs_of_defs(mod.chosen_defs(name))
            doc = mod.doc(name)
        elif name in mod.assigns:
            sigs, doc = self.resolve(mod, mod.assigns[name])
            doc = doc or ""
            if not sigs and doc:
                s = self.reader.from_doc(doc)
                sigs = [s] if s else []
        else:
            return None
        if not sigs:
            return None
        self.complete(sigs, fallback, doc)
        return Entry(sigs, src)

    def complete(self, sigs: list, fallback: list, doc: str) -> None:
        """Fill what a Python def leaves unsaid: parameter types from the stub's overloads (by
        name) or the docstring's Args; the return from the stub or the docstring's first line."""
        by_name: dict = {}
        for fs in fallback:
            for p in fs.all_params():
                if p.kinds:
                    by_name[p.name] = by_name.get(p.name, frozenset()) | p.kinds
        doc_types = doc_param_types(doc) if doc else {}
        doc_sig = self.reader.from_doc(doc) if doc else None
        for s in sigs:
            for p in s.all_params():
                if p.kinds is None:
                    p.kinds = by_name.get(p.name) or doc_types.get(p.name)
            if s.ret is UNKNOWN_RET:
                if fallback:
                    s.ret = merge_rets([f.ret for f in fallback])
                elif doc_sig is not None and doc_sig.ret is not UNKNOWN_RET:
                    s.ret = doc_sig.ret

    def add(self, table: dict, qualname: str, entry: Optional[Entry]) -> None:
        if entry is None:
            return
        for s in entry.sigs:
            if s.ret is UNKNOWN_RET and qualname in MANUAL_RETURNS:
                s.ret = Ret(MANUAL_RETURNS[qualname])
                entry.src = entry.src if entry.src.endswith("+manual") else entry.src + "+manual"
        if any(s.ret is UNKNOWN_RET for s in entry.sigs):
            self.notes.append(f"{qualname}: return unknown (other)")
        table[qualname] = entry

    # -- namespaces

    def gen_torch(self) -> None:
        init = PyModule(self.torch_dir / "__init__.py")
        private = init.assigns.get("PRIVATE_OPS")  # VF ops torch/__init__.py does not export
        hidden = ({e.value for e in private.elts if isinstance(e, ast.Constant)}
                  if isinstance(private, (ast.Tuple, ast.List)) else set())
        for name in sorted(set(self.vf.defs) | set(self.vf.tc_defs)):
            if not name.startswith("_") and name not in hidden:
                self.add(self.functions, f"torch.{name}",
                         Entry(self.sigs_of_defs(self.vf.chosen_defs(name)), "vf"))
        for src, rel, only in TORCH_PY_MODULES:
            mod = PyModule(self.torch_dir / rel)
            public = set(only) if only else set(mod.defs) | set(mod.tc_defs)
            if not only and rel == "functional.py":
                public |= {n for n, v in mod.assigns.items() if isinstance(v, ast.Call)}
            for name in sorted(public):
                if name.startswith("_"):
                    continue
                fallback = self.sigs_of_defs(self.vf.chosen_defs(name))
                entry = self.py_entry(mod, name, src, fallback)
                self.add(self.functions, f"torch.{name}", entry)

    def gen_functional(self) -> None:
        py = PyModule(self.torch_dir / "nn" / "functional.py")
        pyi = PyModule(self.torch_dir / "nn" / "functional.pyi")
        names = {n for n in py.defs if not n.startswith("_")}
        names |= {n for n, v in py.assigns.items() if not n.startswith("_")
                  and isinstance(v, (ast.Call, ast.Attribute))}
        names |= {n for n in pyi.names() if not n.startswith("_") and n not in pyi.assigns}
        for name in sorted(names):
            qual = f"torch.nn.functional.{name}"
            if name in pyi.reexports:
                stub = self.stub_sigs(pyi.reexports[name])
            else:
                stub = self.sigs_of_defs(pyi.chosen_defs(name))
            entry = self.py_entry(py, name, "F_py", stub)
            if entry is None and stub:
                entry = Entry(stub, "F_pyi")
            self.add(self.functions, qual, entry)

    def gen_doc_namespace(self, ns: str) -> None:
        mod = PyModule(self.torch_dir / ns / "__init__.py")
        for name in sorted(mod.names()):
            if name.startswith("_"):
                continue
            value = mod.assigns.get(name)
            if name in mod.defs:
                self.add(self.functions, f"torch.{ns}.{name}",
                         self.py_entry(mod, name, f"{ns}_doc", []))
            elif isinstance(value, ast.Call) and dotted(value.func).endswith("_add_docstr"):
                doc = doc_text(value.args[1]) if len(value.args) == 2 else None
                sig = self.reader.from_doc(doc) if doc else None
                if sig is None:
                    self.notes.append(f"torch.{ns}.{name}: docstring signature unreadable")
                    continue
                self.add(self.functions, f"torch.{ns}.{name}", Entry([sig], f"{ns}_doc"))

    def gen_tensor(self) -> None:
        tree = parse(self.torch_dir / "_C" / "__init__.pyi")
        stub_defs: dict = {}
        for node in class_body(tree, "TensorBase"):
            if isinstance(node, ast.FunctionDef):
                if "property" in decorators(node):
                    if not node.name.startswith("_"):
                        self.attributes[f"Tensor.{node.name}"] = self.types.ret(node.returns)
                    continue
                stub_defs.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if not node.target.id.startswith("_"):
                    self.attributes[f"Tensor.{node.target.id}"] = self.types.ret(node.annotation)

        def keep(name: str) -> bool:
            if name.startswith("__") and name.endswith("__"):
                return name not in SKIP_DUNDERS
            return not name.startswith("_")

        stub_sigs = {}
        for name, defs in stub_defs.items():
            overloads = [f for f in defs if "overload" in decorators(f)] or defs[-1:]
            stub_sigs[name] = self.sigs_of_defs(overloads, self_kind="tensor")
        for name, sigs in stub_sigs.items():
            if keep(name):
                self.add(self.methods, f"Tensor.{name}", Entry(sigs, "tensor_pyi"))

        py_body = class_body(parse(self.torch_dir / "_tensor.py"), "Tensor")
        py_defs: dict = {}
        for node in py_body:
            if isinstance(node, ast.FunctionDef):
                if "property" in decorators(node):
                    if keep(node.name) and not node.name.startswith("_"):
                        self.attributes[f"Tensor.{node.name}"] = (
                            self.types.ret(node.returns) if node.returns else Ret("other"))
                    continue
                py_defs.setdefault(node.name, []).append(node)
            elif (isinstance(node, ast.Assign) and len(node.targets) == 1
                  and isinstance(node.targets[0], ast.Name) and keep(node.targets[0].id)):
                # __rtruediv__ = __rdiv__, __pos__ = _C.TensorBase.positive, ...
                target = node.targets[0].id
                value = node.value
                if isinstance(value, ast.Call) and value.args:
                    value = value.args[0]  # _add_docstr(_C.TensorBase.detach, ...), cast(...)
                source = dotted(value).split(".")[-1]
                if source in py_defs:
                    py_defs[target] = py_defs[source]
                elif source in stub_sigs and f"Tensor.{target}" not in self.methods:
                    self.add(self.methods, f"Tensor.{target}",
                             Entry(stub_sigs[source], "tensor_pyi"))
        for name, defs in sorted(py_defs.items()):
            if not keep(name):
                continue
            overloads = [f for f in defs if "overload" in decorators(f)] or defs[-1:]
            sigs = self.sigs_of_defs(overloads, self_kind="tensor")
            fallback = stub_sigs.get(name, [])
            if not fallback and all(s.ret is UNKNOWN_RET for s in sigs):
                sigs = self.borrow_function_returns(name, sigs) or sigs
            self.complete(sigs, fallback, ast.get_docstring(defs[-1]) or "")
            self.add(self.methods, f"Tensor.{name}", Entry(sigs, "tensor_py"))

    def borrow_function_returns(self, name: str, sigs: list) -> list:
        """Tensor.unique(self, sorted, ...) returns what torch.unique(input, sorted, ...)
        returns: copy the function's overloads (returns and `when`) onto the method's params
        when the parameters after the first line up."""
        fn = self.functions.get(f"torch.{name}")
        if fn is None or len(sigs) != 1:
            return []
        msig = sigs[0]
        mnames = [p.name for p in msig.args[1:]] + [p.name for p in msig.kwonly]
        out = []
        for fs in fn.sigs:
            fnames = [p.name for p in fs.args[1:]] + [p.name for p in fs.kwonly]
            if not set(mnames) <= set(fnames):
                return []
            types = {p.name: p.kinds for p in fs.all_params()}
            new = Sig([replace(p, kinds=p.kinds or types.get(p.name)) for p in msig.args],
                      msig.posonly, msig.varargs,
                      [replace(p, kinds=p.kinds or types.get(p.name)) for p in msig.kwonly],
                      msig.varkw, fs.ret, {k: v for k, v in fs.when.items() if k in mnames})
            out.append(new)
        return out

    def gen_size(self) -> None:
        tree = parse(self.torch_dir / "_C" / "__init__.pyi")
        defs: dict = {}
        for node in class_body(tree, "Size"):
            if isinstance(node, ast.FunctionDef):
                defs.setdefault(node.name, []).append(node)
        for name, fns in defs.items():
            overloads = [f for f in fns if "overload" in decorators(f)] or fns[-1:]
            self.add(self.methods, f"Size.{name}",
                     Entry(self.sigs_of_defs(overloads, self_kind="size"), "tensor_pyi"))
        for name, (params, ret) in SIZE_TUPLE_METHODS.items():
            if f"Size.{name}" not in self.methods:
                self.manual_sig(self.methods, f"Size.{name}", params, ret)
        # the class itself: torch.Size([2, 3]) (the stub declares no __new__)
        self.manual_sig(self.functions, "torch.Size", ["sizes:size=()", "/"], "size")

    def manual_sig(self, table: dict, qualname: str, params: list, ret: str) -> None:
        args, posonly = [], 0
        for text in params:
            if text == "/":
                posonly = len(args)
                continue
            name, rest = text.split(":", 1)
            kinds, eq, default = rest.partition("=")
            args.append(Param(name, frozenset(kinds.split("|")), default if eq else None))
        table[qualname] = Entry([Sig(args, posonly, ret=Ret(ret))], "manual")

    # -- output

    def run(self) -> dict:
        self.gen_torch()
        self.gen_functional()
        for ns in ("linalg", "fft", "special"):
            self.gen_doc_namespace(ns)
        self.gen_tensor()
        self.gen_size()
        return {
            "header": {
                "format": FORMAT,
                "torch_version": read_version(self.torch_dir),
                "generated_by": COMMAND,
                "sources": SOURCES,
                "return_kinds": list(RETURN_KINDS),
                "param_kinds": list(PARAM_KINDS),
                "encoding": (
                    "params: Python-like, 'name:kind|kind[=default]' in order, '/' ends the "
                    "positional-only ones, '*' starts the keyword-only ones, '*name:kind' is "
                    "*args, '**name:kind' is **kwargs; methods list self first. default is "
                    "source text, '...' when the stub hides the value. ret: kind, "
                    "tensor_tuple(N) for a fixed arity, trailing '?' when it may be None. "
                    "when: the flag values (Literal[...] or boolean_dispatch) that select the "
                    "overload. returns: the overloads' kind when they agree, else number "
                    "(all numeric) or other."),
                "unresolved": sorted(self.notes),
            },
            "functions": {k: encode_entry(v) for k, v in sorted(self.functions.items())},
            "methods": {k: encode_entry(v) for k, v in sorted(self.methods.items())},
            "attributes": {k: v.encode() for k, v in sorted(self.attributes.items())},
        }


def merge_sigs(sigs: list) -> list:
    """Drop duplicate overloads and merge those that differ only in parameter types (the
    union is recorded: repeat_interleave's repeats is tensor|int)."""
    merged: dict = {}
    order = []
    for s in sigs:
        key = s.shape_key()
        if key not in merged:
            merged[key] = Sig([replace(p) for p in s.args], s.posonly,
                              replace(s.varargs) if s.varargs else None,
                              [replace(p) for p in s.kwonly],
                              replace(s.varkw) if s.varkw else None, s.ret, dict(s.when))
            order.append(key)
            continue
        for mine, theirs in zip(merged[key].all_params(), s.all_params()):
            mine.kinds = (mine.kinds or frozenset()) | (theirs.kinds or frozenset({"other"}))
    return [merged[k] for k in order]


def encode_entry(entry: Entry) -> dict:
    sigs = merge_sigs(entry.sigs)
    return {"returns": merge_rets([s.ret for s in sigs]).encode(), "src": entry.src,
            "overloads": [s.encode() for s in sigs]}


def dumps(doc: dict) -> str:
    """One line per callable: small, diffable, deterministic."""
    lines = ["{"]
    sections = list(doc.items())
    for i, (key, value) in enumerate(sections):
        if key == "header":
            body = json.dumps(value, indent=1, sort_keys=True, ensure_ascii=True)
            lines.append(f"{json.dumps(key)}: {body}" + ("," if i < len(sections) - 1 else ""))
            continue
        lines.append(f"{json.dumps(key)}: {{")
        items = list(value.items())
        for j, (name, entry) in enumerate(items):
            text = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
            lines.append(f"{json.dumps(name)}: {text}" + ("," if j < len(items) - 1 else ""))
        lines.append("}" + ("," if i < len(sections) - 1 else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


def find_torch_dir() -> Path:
    """The installed torch package, found without importing it."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("torch is not installed here; pass --torch-dir .../site-packages/torch")
    return Path(list(spec.submodule_search_locations)[0])


def generate(torch_dir: Path) -> str:
    return dumps(Generator(torch_dir).run())


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--torch-dir", type=Path, help="the torch package directory "
                    "(default: the one this interpreter would import, found without importing)")
    ap.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if --output differs from what would be generated")
    args = ap.parse_args(argv)
    torch_dir = args.torch_dir or find_torch_dir()
    text = generate(torch_dir)
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is stale: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} ({len(text.encode())} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
