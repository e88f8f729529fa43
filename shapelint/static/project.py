"""The analysed tree: one ModuleInfo per parsed file, resolution of names across files.

Only files that may hold a compiled region (a cheap text look, no parse) and the files those
import are parsed with libcst; the rest of a large tree never reaches the parser.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Set, Tuple, Union

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from shapelint.static.files import SourceFile, module_name_for

#: A file may hold a compiled region (or a custom op's fake) only if it says one of these.
REGION_HINT = re.compile(r"\bdef forward\b|\bcompile\(|\bcompile\b\s*$|custom_op|register_fake|"
                         r"impl_abstract|compiler\.disable|_dynamo\.disable", re.M)
FAKE_BY_NAME = re.compile(r"(\w+)\.(?:register_fake|register_abstract|impl_abstract)\b")
FAKE_BY_OP = re.compile(r"(?:register_fake|impl_abstract)\(\s*['\"]([^'\"]+)['\"]")
GLOBAL_STMT = re.compile(r"^[ \t]+global[ \t]+([\w, \t]+)$", re.M)
COMPILE_CALL = re.compile(r"\bcompile\(\s*([A-Za-z_][\w.]*)")

CONTAINER_CALLS = {"dict", "list", "set", "collections.OrderedDict", "collections.defaultdict",
                   "collections.deque", "collections.Counter", "OrderedDict", "defaultdict"}
MODULE_LIST_CLASSES = {"torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.Sequential",
                       "torch.nn.modules.container.ModuleList"}


def dotted(node: cst.CSTNode) -> Optional[str]:
    """``a.b.c`` of a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


@dataclass
class AttrInfo:
    """What ``__init__`` stored in ``self.<attr>``."""

    kind: str  # module, module_list, container, tensor, int, float, bool, str, none, other
    cls: str = ""  # qualified class for a module; element class for a module list


@dataclass
class FunctionInfo:
    name: str
    module: "ModuleInfo"
    node: cst.FunctionDef
    cls: Optional["ClassInfo"] = None
    decorators: Tuple[str, ...] = ()

    @property
    def symbol(self) -> str:
        return f"{self.cls.name}.{self.name}" if self.cls else self.name

    @property
    def qualname(self) -> str:
        return f"{self.module.name}.{self.symbol}"

    @property
    def is_method(self) -> bool:
        return self.cls is not None and not any(d.endswith("staticmethod") for d in self.decorators)

    @property
    def returns_value(self) -> bool:
        ret = self.node.returns
        if ret is None:
            return True
        return not (isinstance(ret.annotation, cst.Name) and ret.annotation.value == "None")


@dataclass
class ClassInfo:
    name: str
    module: "ModuleInfo"
    node: cst.ClassDef
    bases: Tuple[str, ...] = ()
    methods: Dict[str, FunctionInfo] = field(default_factory=dict)
    attrs: Dict[str, AttrInfo] = field(default_factory=dict)
    _method_order: List[cst.FunctionDef] = field(default_factory=list)

    @property
    def qualname(self) -> str:
        return f"{self.module.name}.{self.name}"


class ModuleInfo:
    """One parsed file: its names, classes, functions, imports; positions on demand."""

    def __init__(self, source: SourceFile, tree: cst.Module) -> None:
        self.source = source
        self.path = source.path
        self.tree = tree
        self.name, self.root = module_name_for(source.abspath)
        self.is_package = source.abspath.endswith("__init__.py")
        self.imports: Dict[str, str] = {}
        self.functions: Dict[str, FunctionInfo] = {}
        self.classes: Dict[str, ClassInfo] = {}
        self.loggers: Set[str] = set()
        self.globals_assigned: Set[str] = set()
        self.mutated_globals: Set[str] = set()
        self.compile_targets: Set[str] = set(m.group(1).split(".")[-1]
                                             for m in COMPILE_CALL.finditer(source.text))
        self.fake_names: Set[str] = set(FAKE_BY_NAME.findall(source.text))
        self.fake_ops: Set[str] = set(FAKE_BY_OP.findall(source.text))
        self.custom_ops: Dict[str, str] = {}  # function name -> "ns::op"
        self._positions = None
        self._fn_positions: Dict[int, object] = {}
        self._defs: Optional[Dict[int, Tuple[int, int]]] = None
        self._function_order: List[cst.FunctionDef] = []
        self._lines = source.text.splitlines()
        self._summarize()

    # -- positions and text ---------------------------------------------------------------------
    def position(self, node: cst.CSTNode, fn: Optional["FunctionInfo"] = None) -> Tuple[int, int, int, int]:
        """(line, column, end_line, end_column), 1-based, end column inclusive.

        With ``fn`` (the function holding ``node``), positions come from that function alone:
        libcst's PositionProvider runs on a one-function module and ``ast`` gives where its
        ``def`` sits, which costs a fraction of resolving positions for the whole file."""
        if fn is not None and fn.module is self:
            table = self._fn_positions.get(id(fn.node))
            if table is None:
                table = self._function_positions(fn)
                self._fn_positions[id(fn.node)] = table
            if table is not False and node in table[0]:  # type: ignore[index]
                rng, dl, dc = table[0][node], table[1], table[2]  # type: ignore[index]
                return (rng.start.line + dl, rng.start.column + 1 + (dc if rng.start.line > 0 else 0),
                        rng.end.line + dl, max(rng.end.column + dc, 1))
        if self._positions is None:
            self._positions = MetadataWrapper(self.tree, unsafe_skip_copy=True).resolve(
                PositionProvider)
        try:
            rng = self._positions[node]
        except KeyError:
            return (1, 1, 1, 1)
        return (rng.start.line, rng.start.column + 1, rng.end.line, max(rng.end.column, 1))

    def _function_positions(self, fn: "FunctionInfo"):
        where = self._ast_defs().get(id(fn.node))
        if where is None:
            return False
        def_line, col = where
        small = cst.Module(body=[fn.node])
        table = MetadataWrapper(small, unsafe_skip_copy=True).resolve(PositionProvider)
        rel = table[fn.node.name].start.line  # the line of `def` in the small module
        return (table, def_line - rel, col)

    def _ast_defs(self) -> Dict[int, Tuple[int, int]]:
        """id(libcst FunctionDef) -> (line of its name, column of `def`), matched to ``ast``
        by (class, name, occurrence) in source order."""
        if self._defs is not None:
            return self._defs
        import ast
        import warnings

        self._defs = {}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(self.source.text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return self._defs
        found: Dict[Tuple[Optional[str], str], List[Tuple[int, int]]] = {}

        def visit(body, cls):
            for node in body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    # the line of the name: decorators come before `def`
                    found.setdefault((cls, node.name), []).append((node.lineno, node.col_offset))
                elif isinstance(node, ast.ClassDef) and cls is None:
                    visit(node.body, node.name)
                elif isinstance(node, (ast.If, ast.Try)) and cls is None:
                    visit(node.body, cls)
                    visit(getattr(node, "orelse", []), cls)
                    for h in getattr(node, "handlers", []):
                        visit(h.body, cls)
                    visit(getattr(node, "finalbody", []), cls)

        visit(tree.body, None)
        seen: Dict[Tuple[Optional[str], str], int] = {}
        ordered = [(None, f) for f in self._function_order] + \
            [(c.name, m) for c in self.classes.values() for m in c._method_order]
        for cls_name, node in ordered:
            key = (cls_name, node.name.value)
            i = seen.get(key, 0)
            seen[key] = i + 1
            spots = found.get(key, [])
            if i < len(spots):
                self._defs[id(node)] = spots[i]
        return self._defs

    def code(self, node: cst.CSTNode) -> str:
        return self.tree.code_for_node(node)

    def line_text(self, line: int) -> str:
        return self._lines[line - 1] if 0 < line <= len(self._lines) else ""

    # -- summary --------------------------------------------------------------------------------
    def resolve(self, name: str) -> str:
        """Qualified name of a module-level name (import alias, local def or builtin)."""
        head, _, rest = name.partition(".")
        if head in self.imports:
            base = self.imports[head]
        elif head in self.functions or head in self.classes:
            base = f"{self.name}.{head}"
        elif head in self.loggers:
            base = "<logger>"
        else:
            base = head
        return f"{base}.{rest}" if rest else base

    def _package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]

    def _import_from(self, node: cst.ImportFrom) -> None:
        level = len(node.relative)
        mod = dotted(node.module) if node.module else ""
        if level:
            pkg = self._package().split(".") if self._package() else []
            pkg = pkg[: len(pkg) - (level - 1)] if level > 1 else pkg
            mod = ".".join(p for p in pkg + ([mod] if mod else []) if p)
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = dotted(alias.name) or ""
            asname = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
            self.imports[asname] = f"{mod}.{name}" if mod else name

    def _decorators(self, node: Union[cst.FunctionDef, cst.ClassDef]) -> Tuple[str, ...]:
        out = []
        for dec in node.decorators:
            expr = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
            name = dotted(expr)
            if name:
                out.append(self.resolve(name))
        return tuple(out)

    def _summarize(self) -> None:
        body = self.tree.body
        # imports first, so that decorators and bases resolve
        for stmt in body:
            for small in _small_statements(stmt):
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        full = dotted(alias.name) or ""
                        if alias.asname and isinstance(alias.asname.name, cst.Name):
                            self.imports[alias.asname.name.value] = full
                        else:
                            self.imports[full.split(".")[0]] = full.split(".")[0]
                elif isinstance(small, cst.ImportFrom):
                    self._import_from(small)
        for stmt in _flatten_toplevel(body):
            if isinstance(stmt, cst.FunctionDef):
                self.functions[stmt.name.value] = FunctionInfo(stmt.name.value, self, stmt)
                self._function_order.append(stmt)
            elif isinstance(stmt, cst.ClassDef):
                self.classes[stmt.name.value] = ClassInfo(stmt.name.value, self, stmt)
            else:
                for small in _small_statements(stmt):
                    if isinstance(small, (cst.Assign, cst.AnnAssign)):
                        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) \
                            else [small.target]
                        value = small.value
                        for t in targets:
                            if isinstance(t, cst.Name):
                                self.globals_assigned.add(t.value)
                                if isinstance(value, cst.Call) and (dotted(value.func) or "").endswith("getLogger"):
                                    self.loggers.add(t.value)
        for fn in self.functions.values():
            fn.decorators = self._decorators(fn.node)
            if any(d.endswith("custom_op") for d in fn.decorators):
                self.custom_ops[fn.name] = _first_string_arg(fn.node) or fn.name
        for cls in self.classes.values():
            cls.bases = tuple(self.resolve(dotted(b.value) or "?") for b in cls.node.bases)
            for stmt in cls.node.body.body:
                if isinstance(stmt, cst.FunctionDef):
                    cls._method_order.append(stmt)
                    m = FunctionInfo(stmt.name.value, self, stmt, cls)
                    m.decorators = self._decorators(stmt)
                    cls.methods[m.name] = m
            init = cls.methods.get("__init__")
            if init is not None:
                cls.attrs = _init_attrs(init, self)
        for m in GLOBAL_STMT.finditer(self.source.text):  # `global X` inside a function
            self.mutated_globals.update(n.strip() for n in m.group(1).split(",") if n.strip())

    def _all_functions(self) -> Iterable[FunctionInfo]:
        yield from self.functions.values()
        for cls in self.classes.values():
            yield from cls.methods.values()


def _first_string_arg(fn: cst.FunctionDef) -> Optional[str]:
    for dec in fn.decorators:
        if isinstance(dec.decorator, cst.Call) and dec.decorator.args:
            val = dec.decorator.args[0].value
            if isinstance(val, cst.SimpleString):
                return val.evaluated_value if isinstance(val.evaluated_value, str) else None
    return None


def _small_statements(stmt: cst.CSTNode) -> List[cst.BaseSmallStatement]:
    if isinstance(stmt, cst.SimpleStatementLine):
        return list(stmt.body)
    return []


def _flatten_toplevel(body: Iterable[cst.CSTNode]) -> Iterable[cst.CSTNode]:
    """Top-level statements, looking inside ``if``/``try`` blocks (TYPE_CHECKING, fallbacks)."""
    for stmt in body:
        if isinstance(stmt, (cst.If, cst.Try)):
            yield from _flatten_toplevel(stmt.body.body)
            orelse = getattr(stmt, "orelse", None)
            while orelse is not None:
                inner = orelse.body
                if isinstance(inner, cst.IndentedBlock):
                    yield from _flatten_toplevel(inner.body)
                    break
                if isinstance(orelse, cst.If):
                    yield from _flatten_toplevel(orelse.body.body)
                    orelse = orelse.orelse
                else:
                    break
        else:
            yield stmt


def _walk(node: Union[cst.CSTNode, Iterable[cst.CSTNode]]) -> Iterable[cst.CSTNode]:
    """All nodes under ``node`` (depth first). Reads dataclass fields directly: libcst's
    ``children`` runs a visitor per node and dominated the summary's cost."""
    stack = [node] if isinstance(node, cst.CSTNode) else list(node)
    while stack:
        cur = stack.pop()
        yield cur
        for name in cur.__dataclass_fields__:
            value = getattr(cur, name)
            if isinstance(value, cst.CSTNode):
                stack.append(value)
            elif isinstance(value, (list, tuple)):
                stack.extend(v for v in value if isinstance(v, cst.CSTNode))


def _init_attrs(init: FunctionInfo, module: ModuleInfo) -> Dict[str, AttrInfo]:
    """``self.<attr> = ...`` in ``__init__``, classified by what is stored."""
    params = {p.name.value: p for p in init.node.params.params}
    attrs: Dict[str, AttrInfo] = {}
    for node in _walk(init.node.body):
        if isinstance(node, cst.Call):
            fname = dotted(node.func) or ""
            if fname.endswith("register_buffer") or fname.endswith("register_parameter"):
                if node.args and isinstance(node.args[0].value, cst.SimpleString):
                    name = node.args[0].value.evaluated_value
                    if isinstance(name, str):
                        attrs[name] = AttrInfo("tensor")
            continue
        if isinstance(node, (cst.Assign, cst.AnnAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            if node.value is None:
                continue
            for t in targets:
                if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                    attrs.setdefault(t.attr.value, _classify(node.value, module, params))
    return attrs


def _classify(value: cst.BaseExpression, module: ModuleInfo,
              params: Dict[str, cst.Param]) -> AttrInfo:
    if isinstance(value, (cst.Dict, cst.List, cst.Set, cst.DictComp, cst.ListComp, cst.SetComp)):
        return AttrInfo("container")
    if isinstance(value, cst.Integer):
        return AttrInfo("int")
    if isinstance(value, cst.Float):
        return AttrInfo("float")
    if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return AttrInfo("str")
    if isinstance(value, cst.Name):
        if value.value in ("True", "False"):
            return AttrInfo("bool")
        if value.value == "None":
            return AttrInfo("none")
        param = params.get(value.value)
        if param is not None:
            ann = param.annotation.annotation if param.annotation else None
            ann_name = dotted(ann) if ann is not None else None
            if ann_name in ("int", "float", "bool", "str"):
                return AttrInfo(ann_name)
            if isinstance(param.default, cst.Integer):
                return AttrInfo("int")
            if isinstance(param.default, cst.Float):
                return AttrInfo("float")
        return AttrInfo("other")
    if isinstance(value, cst.Call):
        fname = module.resolve(dotted(value.func) or "")
        if fname in CONTAINER_CALLS or fname.startswith("collections."):
            return AttrInfo("container")
        if fname in MODULE_LIST_CLASSES or fname.endswith(("ModuleList", "ModuleDict", "Sequential")):
            elem = ""
            if value.args:
                arg = value.args[0].value
                inner = getattr(arg, "elt", None)
                if isinstance(arg, (cst.List, cst.Tuple)) and arg.elements:
                    inner = arg.elements[0].value
                if isinstance(inner, cst.Call):
                    elem = module.resolve(dotted(inner.func) or "")
            return AttrInfo("module_list", elem)
        if fname.startswith("torch.nn.") and fname.split(".")[-1][:1].isupper():
            if fname.endswith(("Parameter", "Buffer")):
                return AttrInfo("tensor")
            return AttrInfo("module", fname)
        if fname.startswith("torch."):
            return AttrInfo("tensor")
        last = fname.split(".")[-1]
        if last[:1].isupper():
            return AttrInfo("module", fname)  # confirmed against the project's classes later
        if fname in ("int", "len"):
            return AttrInfo("int")
        if fname == "float":
            return AttrInfo("float")
    if isinstance(value, cst.BinaryOperation):
        left = _classify(value.left, module, params)
        right = _classify(value.right, module, params)
        if left.kind == right.kind and left.kind in ("int", "float"):
            return left
    return AttrInfo("other")


class Project:
    """Parsed modules of the analysed tree, with lookups across files."""

    def __init__(self) -> None:
        self.modules: Dict[str, List[ModuleInfo]] = {}
        self.by_path: Dict[str, ModuleInfo] = {}
        self.fake_names: Set[str] = set()
        self.fake_ops: Set[str] = set()
        self._lookups: Dict[tuple, Optional[Union[FunctionInfo, ClassInfo]]] = {}
        #: dotted name -> files of the tree, and how to parse one (set by the engine)
        self.index: Dict[str, List[str]] = {}
        self.loader: Optional[Callable[[str], Optional[ModuleInfo]]] = None
        self._attempted: Set[str] = set()
        self._mros: Dict[str, List[ClassInfo]] = {}
        self._suffix: Dict[str, List[ModuleInfo]] = {}

    def add(self, module: ModuleInfo) -> None:
        self._attempted.add(module.source.abspath)
        self._lookups.clear()
        self._mros.clear()
        self._suffix.clear()
        self.modules.setdefault(module.name, []).append(module)
        self.by_path[module.source.abspath] = module
        self.fake_names |= module.fake_names
        self.fake_ops |= module.fake_ops

    def all_modules(self) -> List[ModuleInfo]:
        return list(self.by_path.values())

    def find_module(self, name: str, near: Optional[ModuleInfo] = None) -> Optional[ModuleInfo]:
        """A module by dotted name, preferring one beside ``near`` (same import root). Files
        of the tree are parsed here, on first need: an import no analysed call goes through
        never reaches the parser."""
        cands = self.modules.get(name, [])
        if not cands and self.loader is not None:
            paths = self.index.get(name, [])
            if near is not None:
                paths = sorted(paths, key=lambda p: os.path.dirname(p) != near.root and
                               not p.startswith(near.root + os.sep))
            for path in paths:
                if path not in self._attempted:
                    self._attempted.add(path)
                    mod = self.loader(path)
                    if mod is not None:
                        self.add(mod)
                    break
            cands = self.modules.get(name, [])
        if not cands and "." in name:
            # a package imported through a longer path than its root gives it
            if name not in self._suffix:
                suffix = "." + name
                self._suffix[name] = [m for ms in self.modules.values() for m in ms
                                      if m.name.endswith(suffix)]
            cands = self._suffix[name]
        if not cands:
            return None
        if near is not None and len(cands) > 1:
            same = [m for m in cands if m.root == near.root]
            if same:
                return same[0]
        return cands[0]

    def lookup(self, qualname: str, near: Optional[ModuleInfo] = None
               ) -> Optional[Union[FunctionInfo, ClassInfo]]:
        """A function, class or method of the tree by qualified name (memoized; follows
        re-exports such as ``from .impl import f`` in ``__init__.py``, cycles included)."""
        key = (qualname, near.root if near is not None else None)
        if key not in self._lookups:
            self._lookups[key] = None  # a re-export cycle resolves to nothing
            self._lookups[key] = self._lookup(qualname, near, 0)
        return self._lookups[key]

    def _lookup(self, qualname: str, near: Optional[ModuleInfo], depth: int
                ) -> Optional[Union[FunctionInfo, ClassInfo]]:
        parts = qualname.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            mod = self.find_module(".".join(parts[:cut]), near)
            if mod is None:
                continue
            rest = parts[cut:]
            if rest[0] in mod.functions and len(rest) == 1:
                return mod.functions[rest[0]]
            if rest[0] in mod.classes:
                obj = mod.classes[rest[0]]
                if len(rest) == 1:
                    return obj
                if len(rest) == 2:
                    return self.method(obj, rest[1])
                return None
            target = mod.imports.get(rest[0])
            if target and target != qualname and depth < 8:  # re-export
                return self.lookup(".".join([target] + rest[1:]), mod)
            return None
        return None

    def class_of(self, qualname: str, near: Optional[ModuleInfo] = None) -> Optional[ClassInfo]:
        obj = self.lookup(qualname, near)
        return obj if isinstance(obj, ClassInfo) else None

    def mro(self, cls: ClassInfo) -> List[ClassInfo]:
        key = f"{cls.module.source.abspath}:{cls.name}"
        if key not in self._mros:
            self._mros[key] = self._mro(cls)
        return self._mros[key]

    def _mro(self, cls: ClassInfo) -> List[ClassInfo]:
        out: List[ClassInfo] = []
        todo = [cls]
        while todo:
            cur = todo.pop(0)
            if cur in out:
                continue
            out.append(cur)
            for base in cur.bases:
                b = self.class_of(base, cur.module)
                if b is not None:
                    todo.append(b)
        return out

    def method(self, cls: ClassInfo, name: str) -> Optional[FunctionInfo]:
        for c in self.mro(cls):
            if name in c.methods:
                return c.methods[name]
        return None

    def attr(self, cls: ClassInfo, name: str) -> Optional[AttrInfo]:
        for c in self.mro(cls):
            if name in c.attrs:
                return c.attrs[name]
        return None

    def is_nn_module(self, cls: ClassInfo) -> bool:
        for c in self.mro(cls):
            for base in c.bases:
                if base.startswith("torch.nn.") or base in ("nn.Module", "Module"):
                    return True
        return False
