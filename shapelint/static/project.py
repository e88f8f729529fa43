"""The analysed tree: one ModuleInfo per file that may hold a compiled region, and resolution
of names across files.

A module's summary (imports, classes and their bases, what ``__init__`` stores, decorators) is
read from Python's ``ast``, about ten times cheaper than libcst. libcst parses one function at
a time, only when the dataflow walks it: most code of a large tree never reaches it.
"""

from __future__ import annotations

import ast
import copy
import functools
import os
import re
import warnings
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Set, Tuple, Union

import libcst as cst

from shapelint.finding import Snippet
from shapelint.static import dynamo
from shapelint.static.files import SourceFile, module_name_for
from shapelint.static.positions import FunctionPositions, source_lines
from shapelint.values import NOT_A_LITERAL, Arguments

#: A file may hold a compiled region (or a custom op's fake) only if it says one of these:
#: a plain word, or a word whose regex must also match after a word boundary. Each regex
#: starts with its literal word, so ``re`` jumps from one occurrence to the next instead of
#: trying every position (a leading ``\b`` would make it try every position: 3 s on 44 MB).
_REGION_WORDS = (
    ("def forward", re.compile(r"def forward\b")),
    ("compile", re.compile(r"compile(?:\(|[ \t]*$)", re.M)),
    *((word, None) for word in dynamo.COMPILE_WORDS if word != "compile"),
    ("custom_op", None), ("register_fake", None), ("impl_abstract", None),
    ("compiler.disable", None), ("_dynamo.disable", None),
)


CONTAINER_DISPLAYS = (ast.Dict, ast.List, ast.Tuple, ast.Set, ast.DictComp, ast.ListComp,
                      ast.SetComp)


def may_hold_region(text: str) -> bool:
    """The cheapest look: substring tests (C speed), a regex only after its word was found."""
    for word, regex in _REGION_WORDS:
        if word not in text:
            continue
        if regex is None:
            return True
        for m in regex.finditer(text):
            i = m.start()
            if i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"):
                return True
    return False


FAKE_BY_NAME = re.compile(r"\b(\w+)\.(?:register_fake|register_abstract|impl_abstract)\b")
FAKE_BY_OP = re.compile(r"(?:register_fake|impl_abstract)\(\s*['\"]([^'\"]+)['\"]")
GLOBAL_STMT = re.compile(r"^[ \t]+global[ \t]+([\w, \t]+)$", re.M)
COMPILE_CALL = re.compile(r"\bcompile\(\s*([A-Za-z_][\w.]*)")

CONTAINER_CALLS = {"dict", "list", "set", "collections.OrderedDict", "collections.defaultdict",
                   "collections.deque", "collections.Counter", "OrderedDict", "defaultdict"}
MODULE_LIST_CLASSES = {"torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.Sequential",
                       "torch.nn.modules.container.ModuleList"}

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]


def dotted(node: cst.CSTNode) -> Optional[str]:
    """``a.b.c`` of a libcst Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def ast_dotted(node: ast.AST) -> Optional[str]:
    """``a.b.c`` of an ast Name/Attribute chain, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = ast_dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


_FIELDS: Dict[type, Tuple[str, ...]] = {}


def child_fields(cls: type) -> Tuple[str, ...]:
    """The fields of an ast node type that may hold nodes (all but ``ctx``)."""
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = _FIELDS[cls] = tuple(f for f in getattr(cls, "_fields", ()) if f != "ctx")
    return fields


def child_nodes(node: ast.AST) -> List[ast.AST]:
    """``ast.iter_child_nodes`` less the ``Load`` and ``Store`` markers, as a list, at half
    its cost: the children come from each type's own fields, with no generator per node."""
    out: List[ast.AST] = []
    for field in child_fields(type(node)):
        child = getattr(node, field, None)
        if isinstance(child, list):
            for c in child:
                if isinstance(c, ast.AST):
                    out.append(c)
        elif isinstance(child, ast.AST):
            out.append(child)
    return out


def walk_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``ast.walk``, in its order (breadth first), less the ``Load`` and
    ``Store`` markers, at half its cost (``ast.walk`` of every ``__init__`` and method
    summarized was 4% of a check of transformers)."""
    todo = [node]
    for n in todo:  # (a list grows under its own iteration: the queue)
        todo.extend(child_nodes(n))
        yield n


def parse_ast(text: str, path: str = "<unknown>") -> ast.Module:
    """``ast.parse`` without the SyntaxWarnings old escape sequences raise."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text, path)


class Limits:
    """What one function may cost the static pass (config: ``max-function-kib``,
    ``max-walk-seconds``); a function past them is reported as a file error and skipped."""

    def __init__(self, max_function_kib: int = 256, max_walk_seconds: float = 60.0) -> None:
        self.max_function_bytes = max_function_kib * 1024
        self.max_walk_seconds = max_walk_seconds


DEFAULT_LIMITS = Limits()


class AttrInfo:
    """What ``__init__`` stored in ``self.<attr>``."""

    __slots__ = ("kind", "cls", "from_param", "flag", "init", "per_instance")

    def __init__(self, kind: str, cls: str = "", from_param: bool = False,
                 flag: Optional[bool] = None, init: Tuple[Tuple[object, object], ...] = ()) -> None:
        self.kind = kind  # module, module_list, container, tensor, int, float, bool, str, none, other
        self.cls = cls  # qualified class for a module; element class for a module list
        #: stored from an ``__init__`` parameter: each instance may hold its own value
        self.from_param = from_param
        #: a flag ``__init__`` sets to a literal (``self.use_tiling = False``)
        self.flag = flag
        #: a torch.nn module's literal constructor arguments, ((0, 3), ("stride", 2), ...):
        #: positions by index, keywords by name (what some of torch's guards depend on)
        self.init = init
        #: a submodule whose class ``__init__`` picks by an argument that differs between the
        #: instances (``MoE(config) if layer_idx >= k else MLP(config)``): ``cls`` lists each
        self.per_instance = False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AttrInfo) and (self.kind, self.cls) == (other.kind, other.cls)

    def __repr__(self) -> str:
        return f"AttrInfo({self.kind!r}, {self.cls!r})"


ConfigReader = Callable[[ast.expr], object]


def _literal_arguments(call: ast.Call, read: Optional[ConfigReader] = None) -> Arguments:
    """The arguments of ``call``: literals (``3``, ``(2, 2)``, ``True``) as their values, a
    config field as ``read`` gives it (see :func:`_config_reader`), any other expression
    (``stride=patch_size``) as :data:`NOT_A_LITERAL`."""
    out: List[Tuple[object, object]] = []
    for key, node in [(i, a) for i, a in enumerate(call.args)] + \
            [(k.arg, k.value) for k in call.keywords if k.arg]:
        if isinstance(node, ast.Starred):
            break  # the positions after it are unknown
        value = _literal_or_missing(node)
        out.append((key, read(node) if value is NOT_A_LITERAL and read is not None else value))
    return tuple(out)


def default_pairs(args: ast.arguments) -> List[Tuple[ast.arg, ast.expr]]:
    """Each parameter that has a default, with its default expression (positional ones
    first, then keyword-only ones)."""
    positional = args.posonlyargs + args.args
    return list(zip(positional[len(positional) - len(args.defaults):], args.defaults)) + \
        [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]


def _class_defaults(cls: "ClassInfo") -> Dict[str, object]:
    """The literal defaults a config class gives its fields: class-level ``field: T = 3``
    (transformers 5's dataclass configs) and ``__init__``'s ``field=3`` (older ones)."""
    found: Dict[str, object] = {}
    for stmt in cls.tree.body:
        target = stmt.target if isinstance(stmt, ast.AnnAssign) else \
            (stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None)
        value = getattr(stmt, "value", None)
        if isinstance(target, ast.Name) and value is not None:
            found[target.id] = _literal_or_missing(value)
    init = cls.methods.get("__init__")
    for arg, default in default_pairs(init.tree.args) if init is not None else ():
        found.setdefault(arg.arg, _literal_or_missing(default))
    return {k: v for k, v in found.items() if v is not NOT_A_LITERAL}


def _literal_or_missing(node: ast.expr) -> object:
    """The value of a literal expression, else :data:`NOT_A_LITERAL`."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NOT_A_LITERAL


def _config_reader(init: FunctionNode, module: "ModuleInfo") -> Optional[ConfigReader]:
    """Reads ``config.<field>`` and ``config.<field>[i]`` in ``__init__`` as the default its
    config class gives the field: ``nn.Conv1d(..., stride=config.conv_stride[layer_id])`` is
    built with one of ``(5, 2, 2, 2, 2, 2, 2)``, a frozenset of them (an element at an index
    not known here). The class is the ``config`` parameter's annotation, else the one
    ``*Config`` class the module imports or defines. None where there is no such name."""
    project = module.project
    params = {a.arg: a for a in init.args.posonlyargs + init.args.args + init.args.kwonlyargs}
    cfg = params.get("config")
    if project is None or cfg is None:
        return None
    name = ast_dotted(cfg.annotation) if cfg.annotation is not None else None
    if not name:
        names = {n for n in list(module.imports) + list(module.classes) if n.endswith("Config")}
        if len(names) != 1:
            return None
        name = names.pop()
    qualname = module.resolve(name)

    @functools.lru_cache(maxsize=None)
    def defaults() -> Dict[str, object]:
        """Looked up on the first field read: most classes read none, and the lookup may
        parse the config's module."""
        found = project.lookup(qualname, module)
        return found.defaults if isinstance(found, ClassInfo) else {}

    def field(node: ast.expr) -> Optional[str]:
        if isinstance(node, ast.Attribute) and (
                (isinstance(node.value, ast.Name) and node.value.id == "config") or
                (isinstance(node.value, ast.Attribute) and node.value.attr == "config" and
                 _is_self(node.value.value))):
            return node.attr
        return None

    def read(node: ast.expr) -> object:
        name = field(node.value if isinstance(node, ast.Subscript) else node)
        if name is None or name not in defaults():
            return NOT_A_LITERAL
        value = defaults()[name]
        if not isinstance(node, ast.Subscript):
            return value
        if not isinstance(value, (tuple, list)) or not value:
            return NOT_A_LITERAL
        index = _literal_or_missing(node.slice)
        if isinstance(index, int) and -len(value) <= index < len(value):
            return value[index]
        items = frozenset(v for v in value if isinstance(v, (int, float, str, bool)))
        if len(items) != len(set(map(repr, value))):
            return NOT_A_LITERAL  # items of other kinds
        return next(iter(items)) if len(items) == 1 else items

    return read


class SelfState:
    """What a method does with ``self``'s attributes, read from ``ast`` once per function
    (rules ask at every test of an attribute): the first line that reads each dotted path
    (``self.config.problem_type``; ``+=`` reads too), the lines that rebind each, and the
    methods it calls on ``self``."""

    def __init__(self, fn: FunctionNode) -> None:
        self.first_read: Dict[str, int] = {}
        self.writes: Dict[str, List[int]] = {}
        self.self_calls: List[Tuple[int, str]] = []
        for n in walk_nodes(fn):
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
                self._read(ast_dotted(n), n.lineno)
            elif isinstance(n, ast.AugAssign):
                self._read(ast_dotted(n.target), n.lineno)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and _is_self(n.func.value):
                self.self_calls.append((n.lineno, n.func.attr))
        for stmt in _statements(fn.body):
            if isinstance(stmt, ast.Assign):
                targets = [t for tgt in stmt.targets
                           for t in (tgt.elts if isinstance(tgt, (ast.Tuple, ast.List)) else [tgt])]
            elif isinstance(stmt, ast.AugAssign) or (isinstance(stmt, ast.AnnAssign) and stmt.value is not None):
                targets = [stmt.target]
            else:
                continue
            for t in targets:
                path = ast_dotted(t)
                if path is not None and path.startswith("self."):
                    self.writes.setdefault(path, []).append(stmt.lineno)

    def _read(self, path: Optional[str], line: int) -> None:
        if path is not None and path.startswith("self.") and line < self.first_read.get(path, line + 1):
            self.first_read[path] = line


class FunctionInfo:
    """A function or method: its summary from ``ast``, its libcst tree parsed on first use."""

    def __init__(self, name: str, module: "ModuleInfo", tree: FunctionNode,
                 cls: Optional["ClassInfo"] = None) -> None:
        self.name = name
        self.module = module
        self.tree = tree
        self.cls = cls
        self.decorators: Tuple[str, ...] = ()
        args = tree.args
        self.params: Tuple[str, ...] = tuple(a.arg for a in args.posonlyargs + args.args)
        self.kwonly: Tuple[str, ...] = tuple(a.arg for a in args.kwonlyargs)
        ret = tree.returns
        self.returns_value = not (isinstance(ret, ast.Constant) and ret.value is None)
        self._node: Optional[cst.FunctionDef] = None
        self._parsed = False
        self._positions: Optional[FunctionPositions] = None
        self._self_state: Optional[SelfState] = None

    @property
    def self_state(self) -> SelfState:
        if self._self_state is None:
            self._self_state = SelfState(self.tree)
        return self._self_state

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
    def first_line(self) -> int:
        """The line of its first decorator, or of ``def``."""
        return min([d.lineno for d in self.tree.decorator_list] + [self.tree.lineno])

    @property
    def node(self) -> Optional[cst.FunctionDef]:
        """The libcst tree of this function alone (None where libcst cannot parse it)."""
        if not self._parsed:
            self._parsed = True
            self._node = self.module.parse_function(self)
        return self._node

    def position(self, node: cst.CSTNode, near: Optional[cst.CSTNode] = None
                 ) -> Optional[Tuple[int, int, int, int]]:
        if self.node is None:
            return None
        if self._positions is None:
            self._positions = FunctionPositions(self.node, self.tree, self.module.line_text,
                                                self._segment_module)
        return self._positions.position(node, near)

    _segment_module: Optional[Tuple[cst.Module, int]] = None  # (parsed segment, line offset)


def _parse_function_text(text: str, indented: bool
                         ) -> Union[str, Tuple[cst.Module, cst.CSTNode]]:
    """(module, the function's node) of a function's own lines, or why libcst cannot."""
    try:
        with _unvalidated():
            module = cst.parse_module(text)
        stmt = module.body[0]
        return module, (stmt.body.body[0] if indented else stmt)  # type: ignore[union-attr]
    except (cst.ParserSyntaxError, RecursionError, IndexError, AttributeError) as exc:
        return getattr(exc, "message", None) or type(exc).__name__


#: the base classes of model outputs (see ``Project.output_fields``)
OUTPUT_BASES = frozenset({"ModelOutput", "BaseOutput"})


class ClassInfo:
    def __init__(self, name: str, module: "ModuleInfo", tree: ast.ClassDef) -> None:
        self.name = name
        self.module = module
        self.tree = tree
        self.bases: Tuple[str, ...] = ()
        self.methods: Dict[str, FunctionInfo] = {}
        self._attrs: Optional[Dict[str, AttrInfo]] = None
        self._reads: Optional[Set[str]] = None
        self._forward_writes: Optional[FrozenSet[str]] = None
        self._defaults: Optional[Dict[str, object]] = None

    @property
    def qualname(self) -> str:
        return f"{self.module.name}.{self.name}"

    @property
    def attrs(self) -> Dict[str, AttrInfo]:
        """What ``__init__`` stores in ``self`` (read on first need: most classes of a large
        tree are never walked)."""
        if self._attrs is None:
            init = self.methods.get("__init__")
            self._attrs = _init_attrs(init.tree, self.module) if init is not None else {}
        return self._attrs

    @property
    def defaults(self) -> Dict[str, object]:
        """For a config class: the literal defaults of its fields (read on first need)."""
        if self._defaults is None:
            self._defaults = _class_defaults(self)
        return self._defaults

    @property
    def forward_writes(self) -> FrozenSet[str]:
        """``self.<attr>`` names ``forward`` assigns (read once: the walk asks at every
        flag it reads)."""
        if self._forward_writes is None:
            fwd = self.methods.get("forward")
            self._forward_writes = frozenset() if fwd is None else frozenset(
                t.attr for n in walk_nodes(fwd.tree) if isinstance(n, (ast.Assign, ast.AugAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                if isinstance(t, ast.Attribute) and _is_self(t.value))
        return self._forward_writes

    @property
    def reads(self) -> Set[str]:
        """``self.<attr>`` names read in its methods other than ``__init__``."""
        if self._reads is None:
            self._reads = set()
            for m in self.methods.values():
                if m.name != "__init__":  # `self.a.b` read: `a` is read
                    self._reads |= {path.split(".")[1] for path in m.self_state.first_read}
        return self._reads


class ModuleInfo:
    """One file: its names, classes, functions, imports (from ``ast``); functions' libcst trees
    and positions on demand."""

    def __init__(self, source: SourceFile, tree: Optional[ast.Module] = None) -> None:
        self.source = source
        self.path = source.path
        self.name, self.root = module_name_for(source.abspath)
        self.is_package = source.abspath.endswith("__init__.py")
        self.imports: Dict[str, str] = {}
        self.functions: Dict[str, FunctionInfo] = {}
        self.classes: Dict[str, ClassInfo] = {}
        self.loggers: Set[str] = set()
        self.globals_assigned: Set[str] = set()
        self.mutated_globals: Set[str] = set()
        #: module-level names bound to a dict, list, tuple or set display or comprehension
        self.containers: Set[str] = set()
        #: module-level dicts of classes (``LAYER_TYPES = {"attention": Attn, "mamba":
        #: Mamba}``): name -> the class expressions, for ``LAYER_TYPES[kind](config)``
        self.class_tables: Dict[str, List[ast.expr]] = {}
        text = source.text
        self.compile_targets: Set[str] = set(m.group(1).split(".")[-1]
                                             for m in COMPILE_CALL.finditer(text)) \
            if "compile(" in text else set()
        fakes = "register_fake" in text or "impl_abstract" in text or "register_abstract" in text
        self.fake_names: Set[str] = set(FAKE_BY_NAME.findall(text)) if fakes else set()
        self.fake_ops: Set[str] = set(FAKE_BY_OP.findall(text)) if fakes else set()
        self.custom_ops: Dict[str, str] = {}  # function name -> "ns::op"
        #: the project the module was added to (set by Project.add): a config class that
        #: ``__init__`` reads fields of is looked up there
        self.project: Optional["Project"] = None
        #: functions libcst could not parse: (line, message), reported by the engine
        self.function_errors: List[Tuple[int, str]] = []
        #: libcst trees by function text, shared by the modules of a project (set by
        #: Project.add): a large tree repeats functions word for word ("Copied from ..." in
        #: transformers), and a tree holds no position, so one parse serves every copy
        self.parsed_texts: Dict[str, Union[str, Tuple[cst.Module, cst.CSTNode]]] = {}
        self.limits = DEFAULT_LIMITS  # set by Project.add
        self._lines = source_lines(source.text)
        self._summarize(tree if tree is not None else parse_ast(source.text, source.path))

    # -- libcst, one function at a time ---------------------------------------------------------
    def text(self, first: int, last: int) -> str:
        """The file's lines ``first`` to ``last`` (1-based, both included)."""
        return "\n".join(self._lines[first - 1:last])

    def parse_function(self, fn: FunctionInfo) -> Optional[cst.FunctionDef]:
        """libcst tree of ``fn`` from its own lines. An indented def is parsed inside an
        ``if 1:`` so that its lines, columns included, are the file's."""
        first, last = fn.first_line, fn.tree.end_lineno or fn.tree.lineno
        indented = fn.tree.col_offset > 0
        text = ("if 1:\n" if indented else "") + self.text(first, last) + "\n"
        if len(text) > self.limits.max_function_bytes:
            # libcst holds ~2.5 kB per byte of a long expression: 5 MB took 13 GB
            self.function_errors.append((fn.tree.lineno, (
                f"`{fn.symbol}` is too large to analyse ({len(text) // 1024} KiB; the limit is "
                f"{self.limits.max_function_bytes // 1024} KiB, `max-function-kib`)")))
            return None
        parsed = self.parsed_texts.get(text)
        if parsed is None:
            parsed = self.parsed_texts[text] = _parse_function_text(text, indented)
        if isinstance(parsed, str):
            self.function_errors.append((fn.tree.lineno, f"libcst cannot parse `{fn.symbol}`: {parsed}"))
            return None
        module, node = parsed
        if not isinstance(node, cst.FunctionDef):
            return None
        fn._segment_module = (module, first - 1 - (1 if indented else 0))
        return node

    def position(self, node: cst.CSTNode, fn: FunctionInfo,
                 near: Optional[cst.CSTNode] = None) -> Tuple[int, int, int, int]:
        """(line, column, end_line, end_column), 1-based, end column inclusive. ``fn`` is the
        function that holds ``node`` and ``near`` its statement, where known."""
        candidates = [fn] if fn.module is self else []
        candidates += [f for f in self._all_functions() if f._parsed and f is not fn]
        for f in candidates:
            pos = f.position(node, near if f is fn else None)
            if pos is not None:
                return pos
        return (1, 1, 1, 1)

    def code(self, node: cst.CSTNode) -> str:
        return _CODEGEN.code_for_node(node)

    def line_text(self, line: int) -> str:
        return self._lines[line - 1] if 0 < line <= len(self._lines) else ""

    def snippet(self, line: int) -> Snippet:
        """The lines around ``line``, saved with a finding for reports."""
        return Snippet.around(self._lines, line)

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

    def _import_from(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        if node.level:
            pkg = self._package().split(".") if self._package() else []
            pkg = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
            mod = ".".join(p for p in pkg + ([mod] if mod else []) if p)
        for alias in node.names:
            if alias.name == "*":
                continue
            self.imports[alias.asname or alias.name] = f"{mod}.{alias.name}" if mod else alias.name

    def _decorators(self, node: Union[FunctionNode, ast.ClassDef]) -> Tuple[str, ...]:
        out = []
        for dec in node.decorator_list:
            name = ast_dotted(dec.func if isinstance(dec, ast.Call) else dec)
            if name:
                out.append(self.resolve(name))
        return tuple(out)

    def _summarize(self, tree: ast.Module) -> None:
        top = list(_flatten_toplevel(tree.body))
        for stmt in top:  # imports first, so that decorators and bases resolve
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        self.imports[alias.asname] = alias.name
                    else:
                        head = alias.name.split(".")[0]
                        self.imports[head] = head
            elif isinstance(stmt, ast.ImportFrom):
                self._import_from(stmt)
        for stmt in top:  # `LayerNorm = nn.LayerNorm` (the live side of a version switch whose
            # other side defines a fallback class): an alias, as an import would be
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                    isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Attribute):
                target = ast_dotted(stmt.value)
                if target and target.split(".")[0] in self.imports:
                    self.imports[stmt.targets[0].id] = self.resolve(target)
        for stmt in top:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[stmt.name] = FunctionInfo(stmt.name, self, stmt)
            elif isinstance(stmt, ast.ClassDef):
                self.classes[stmt.name] = ClassInfo(stmt.name, self, stmt)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        self.globals_assigned.add(t.id)
                        if isinstance(stmt.value, ast.Call) and \
                                (ast_dotted(stmt.value.func) or "").endswith(("getLogger", "get_logger")):
                            self.loggers.add(t.id)
                        if isinstance(stmt.value, CONTAINER_DISPLAYS):
                            self.containers.add(t.id)
                        classes = _class_table(stmt.value)
                        if classes:
                            self.class_tables[t.id] = classes
        for fn in self.functions.values():
            fn.decorators = self._decorators(fn.tree)
            if any(d.endswith("custom_op") for d in fn.decorators):
                self.custom_ops[fn.name] = _first_string_arg(fn.tree) or fn.name
        for cls in self.classes.values():
            cls.bases = tuple(self.resolve(ast_dotted(b) or "?") for b in cls.tree.bases)
            for stmt in cls.tree.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    m = FunctionInfo(stmt.name, self, stmt, cls)
                    m.decorators = self._decorators(stmt)
                    cls.methods[m.name] = m
        globals_ = GLOBAL_STMT.finditer(self.source.text) if "global" in self.source.text else ()
        for g in globals_:  # `global X` inside a function
            self.mutated_globals.update(n.strip() for n in g.group(1).split(",") if n.strip())

    def _all_functions(self) -> Iterable[FunctionInfo]:
        yield from self.functions.values()
        for cls in self.classes.values():
            yield from cls.methods.values()


_CODEGEN = cst.Module(body=[])


class _unvalidated:
    """Skip libcst's per-node validation while its own parser builds a tree (a sixth of the
    parse; the parser's output is valid by construction, as libcst's own PERF note says)."""

    _base = cst.CSTNode

    def __enter__(self) -> None:
        self._saved = self._base.__dict__.get("__post_init__")
        if self._saved is not None:
            self._base.__post_init__ = _no_check  # type: ignore[method-assign]

    def __exit__(self, *exc) -> None:
        if self._saved is not None:
            self._base.__post_init__ = self._saved  # type: ignore[method-assign]


def _no_check(self) -> None:
    return None


def _first_string_arg(fn: FunctionNode) -> Optional[str]:
    for dec in fn.decorator_list:
        if isinstance(dec, ast.Call) and dec.args:
            val = dec.args[0]
            if isinstance(val, ast.Constant) and isinstance(val.value, str):
                return val.value
    return None


def _flatten_toplevel(body: Iterable[ast.stmt]) -> Iterable[ast.stmt]:
    """Top-level statements, looking inside ``if``/``try`` blocks (TYPE_CHECKING, fallbacks)."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            yield from _flatten_toplevel(stmt.body)
            yield from _flatten_toplevel(stmt.orelse)
        elif isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            yield from _flatten_toplevel(stmt.body)  # type: ignore[attr-defined]  # the except's fallback does not win
            yield from _flatten_toplevel(stmt.orelse)  # type: ignore[attr-defined]
        else:
            yield stmt


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _statements(body: List[ast.stmt]) -> Iterable[ast.stmt]:
    """Statements of a body in source order, nested blocks included, expressions not entered
    (a fraction of ``ast.walk``)."""
    for stmt in body:
        yield stmt
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list) and not isinstance(stmt, (ast.FunctionDef, ast.ClassDef,
                                                                   ast.AsyncFunctionDef)):
                yield from _statements(inner)
        for h in getattr(stmt, "handlers", ()):
            yield from _statements(h.body)
        for case in getattr(stmt, "cases", ()):
            yield from _statements(case.body)


def _init_attrs(init: FunctionNode, module: ModuleInfo) -> Dict[str, AttrInfo]:
    """``self.<attr> = ...`` in ``__init__``, classified by what is stored."""
    params = {a.arg: a for a in init.args.posonlyargs + init.args.args + init.args.kwonlyargs}
    defaults = {a.arg: d for a, d in default_pairs(init.args)}
    attrs: Dict[str, AttrInfo] = {}
    local_items: Dict[str, List[ast.expr]] = {}
    read = _config_reader(init, module)
    aliases: Dict[str, List[ast.expr]] = {}
    # what differs from one instance to the next: an argument other than the shared config,
    # a loop's variable (``for i in range(config.num_hidden_layers)``); read only as the key
    # of a table of classes, so the loops are looked for only in a module that has one
    varying = {p for p in params if p not in _SHARED_PARAMS}
    if module.class_tables:
        varying |= {t.id for n in walk_nodes(init) if isinstance(n, (ast.For, ast.comprehension))
                    for t in walk_nodes(n.target) if isinstance(t, ast.Name)}
    for node in _statements(init.body):  # in source order: the first store decides, unless vague
        node = _bind_class_aliases(node, module, aliases, varying)
        _collect_items(node, local_items)
        grown = _appended(node) or _added_to_self(node)
        if grown is not None and grown[0] == SELF_ITEMS and grown[0] not in attrs:
            attrs[SELF_ITEMS] = AttrInfo("module_list")
        if grown is not None and grown[0] in attrs and attrs[grown[0]].kind == "module_list":
            attrs[grown[0]] = _with_items(attrs[grown[0]], _module_items(grown[1], local_items),
                                          module, read, defaults)
        if isinstance(node, ast.Expr):
            node = node.value  # type: ignore[assignment]  # a call statement: the call
        if isinstance(node, ast.Call):
            fname = ast_dotted(node.func) or ""
            if fname.endswith(("register_buffer", "register_parameter")) and node.args and \
                    isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                attrs[node.args[0].value] = AttrInfo("tensor")
        else:
            for attr, value in _self_stores(node):
                known = attrs.get(attr)
                if known is None or known.kind in ("none", "other"):
                    new = _classify(value, module, params, defaults, local_items, read)
                    if known is None or new.kind not in ("none", "other"):
                        attrs[attr] = new
    for attr, classes in _classes_per_instance(init, module, params, defaults, read).items():
        chosen = AttrInfo("module", "|".join(classes))
        chosen.per_instance = True
        attrs[attr] = chosen
    return attrs


def _is_class_name(expr: ast.expr) -> bool:
    name = ast_dotted(expr) or ""
    return bool(name) and name.split(".")[-1][:1].isupper()


def _class_table(value: ast.expr) -> List[ast.expr]:
    """The classes of a dict display whose every value names a class, else nothing."""
    if not isinstance(value, ast.Dict) or not value.values or \
            not all(v is not None and _is_class_name(v) for v in value.values):
        return []
    return list(value.values)


def _class_choices(expr: ast.expr, module: ModuleInfo, aliases: Dict[str, List[ast.expr]],
                   varying: Set[str]) -> List[ast.expr]:
    """The classes an expression of ``__init__`` may name: a class, an alias bound before,
    ``A if test else B``, a module-level table of classes indexed (``LAYER_TYPES[kind]``)."""
    if isinstance(expr, ast.Name) and expr.id in aliases:
        return aliases[expr.id]
    if _is_class_name(expr):
        return [expr]
    if isinstance(expr, ast.IfExp):
        body = _class_choices(expr.body, module, aliases, varying)
        orelse = _class_choices(expr.orelse, module, aliases, varying)
        return body + orelse if body and orelse else []
    return _table_pick(expr, module, varying)


def _table_pick(expr: ast.expr, module: ModuleInfo, varying: Set[str]) -> List[ast.expr]:
    """The classes of ``TABLE[key]``, a table of classes indexed by a key that differs from
    instance to instance (``LAYER_TYPES[config.layer_types[layer_idx]]``): the blocks are of
    each class. A key the config alone decides (``ATTENTION_CLASSES[config._attn_implementation]``)
    picks one implementation the walk cannot know: nothing."""
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name) and \
            expr.value.id in module.class_tables and \
            any(isinstance(n, ast.Name) and n.id in varying for n in walk_nodes(expr.slice)):
        return list(module.class_tables[expr.value.id])
    return []


class _AliasCalls(ast.NodeTransformer):
    """``alias(args)`` of a local name bound to one of several classes (or ``TABLE[kind](args)``
    of a table of classes): ``A(args) if ... else B(args)``, which the classification reads as
    a module of either class."""

    def __init__(self, module: ModuleInfo, aliases: Dict[str, List[ast.expr]],
                 varying: Set[str]) -> None:
        self.module = module
        self.aliases = aliases
        self.varying = varying

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        choices = _called_choices(node, self.module, self.aliases, self.varying)
        if not choices:
            return node
        calls = [ast.Call(func=c, args=node.args, keywords=node.keywords) for c in choices]
        out: ast.expr = calls[-1]
        for call in reversed(calls[:-1]):
            out = ast.IfExp(test=ast.Constant(True), body=call, orelse=out)
        return ast.copy_location(out, node)


#: the statements ``_init_attrs`` reads: stores, growth of a list, a call statement
_READ_STATEMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)


def _bind_class_aliases(node: ast.stmt, module: ModuleInfo, aliases: Dict[str, List[ast.expr]],
                        varying: Set[str]) -> ast.stmt:
    """Record ``layer_class = LAYER_TYPES[kind]`` (or ``A if test else B``), and return the
    statement with calls of such aliases spelt as calls of their classes (a copy; the
    summary's tree is left as it is)."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
            isinstance(node.targets[0], ast.Name):
        name = node.targets[0].id
        choices = _class_choices(node.value, module, aliases, varying)
        if len(choices) > 1 or (choices and not _is_class_name(node.value)):
            aliases[name] = choices
        else:
            aliases.pop(name, None)
    # only the simple statements the summary reads (a stored attribute, a list grown): a
    # compound one's inner statements come on their own, and are rewritten then; with no
    # alias nor table of classes, no call goes through one (most classes: no walk at all)
    if (aliases or module.class_tables) and isinstance(node, _READ_STATEMENTS) and any(
            isinstance(n, ast.Call) and _called_choices(n, module, aliases, varying)
            for n in walk_nodes(node)):
        return _AliasCalls(module, aliases, varying).visit(copy.deepcopy(node))
    return node


def _called_choices(call: ast.Call, module: ModuleInfo, aliases: Dict[str, List[ast.expr]],
                    varying: Set[str]) -> List[ast.expr]:
    """The classes a call builds when its callee is an alias or an indexed table of classes."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in aliases:
        return aliases[func.id]
    return _table_pick(func, module, varying)


def _self_stores(node: ast.AST) -> List[Tuple[str, ast.expr]]:
    """``self.<attr> = value`` (or annotated): each (attr, value) the statement stores."""
    if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
        return []
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [(t.attr, node.value) for t in targets
            if isinstance(t, ast.Attribute) and _is_self(t.value)]


#: ``__init__`` parameters every instance of a model's blocks shares (the model's config)
_SHARED_PARAMS = frozenset({"self", "config", "cfg", "args", "kwargs", "dd", "device", "dtype"})


def _classes_per_instance(init: FunctionNode, module: ModuleInfo, params: Dict[str, ast.arg],
                          defaults: Dict[str, ast.expr],
                          read: Optional[ConfigReader]) -> Dict[str, List[str]]:
    """The submodules ``__init__`` builds of one class or another by a test of an argument
    that differs from instance to instance (``if layer_idx >= config.first_k_dense_replace:``,
    ``if downsample:``, ``A(c) if self.block_type == "linear" else B(c)`` where
    ``self.block_type`` was read with ``layer_idx``): attribute -> its classes, in order."""
    varying = {p for p in params if p not in _SHARED_PARAMS}
    if not varying:
        return {}

    def reads_varying(expr: ast.AST) -> bool:
        return any((isinstance(n, ast.Name) and n.id in varying) or
                   (isinstance(n, ast.Attribute) and _is_self(n.value) and f"self.{n.attr}" in varying)
                   for n in walk_nodes(expr))

    def built(value: ast.expr) -> Optional[str]:
        info = _classify(value, module, params, defaults, None, read)
        return info.cls if info.kind == "module" and "|" not in info.cls else None

    out: Dict[str, List[str]] = {}

    def add(attr: str, cls: Optional[str]) -> None:
        if cls is not None and cls not in out.setdefault(attr, []):
            out[attr].append(cls)

    for node in _statements(init.body):
        for attr, value in _self_stores(node):
            if isinstance(value, ast.IfExp) and reads_varying(value.test):
                add(attr, built(value.body))
                add(attr, built(value.orelse))
            elif reads_varying(value):  # `self.block_type = config.layer_types[idx]`
                varying.add(f"self.{attr}")
        if isinstance(node, ast.If) and reads_varying(node.test):
            # (this block's own statements: a nested test is visited on its own)
            for attr, value in [store for st in node.body + node.orelse
                                for store in _self_stores(st)]:
                add(attr, built(value))
    return {attr: classes for attr, classes in out.items() if len(classes) > 1}


def _returned_classes(call: ast.Call, module: ModuleInfo) -> List[str]:
    """The classes a plain function of ``module`` returns (``return Block`` / ``return
    BlockESE`` by a string argument), resolved; empty unless every ``return`` names a class."""
    if not isinstance(call.func, ast.Name):
        return []
    fn = module.functions.get(call.func.id)
    if fn is None:
        return []
    out: List[str] = []
    for node in walk_nodes(fn.tree):
        if isinstance(node, ast.Return):
            name = ast_dotted(node.value) if node.value is not None else None
            if not name or not name.split(".")[-1][:1].isupper():
                return []
            out.append(module.resolve(name))
    return list(dict.fromkeys(out))


def _built_class(func: ast.expr, module: ModuleInfo,
                 defaults: Optional[Dict[str, ast.expr]] = None) -> str:
    """The class a call builds: its callee resolved, or, for a parameter of ``__init__``
    (``block_layer(...)`` of ``block_layer=Sequencer2dBlock``), its default class: what a model
    built with its defaults holds. Empty when not known."""
    name = ast_dotted(func) or ""
    if defaults is not None and isinstance(func, ast.Name) and func.id in defaults:
        default = ast_dotted(defaults[func.id]) or ""
        return module.resolve(default) if default.split(".")[-1][:1].isupper() else ""
    return module.resolve(name) if name else ""


def _with_items(info: AttrInfo, items: List[ast.expr], module: ModuleInfo,
                read: Optional[ConfigReader],
                defaults: Optional[Dict[str, ast.expr]] = None) -> AttrInfo:
    """A module list with ``items`` added: its element classes in order ("A|B|C"; a Sequential
    runs them one after another, iterating a ModuleList of mixed blocks may give any), and
    each distinct way an item was built (its class and literal arguments): a loop over the
    list runs every one of them at the same line."""
    classes = [c for c in info.cls.split("|") if c]
    inits = list(info.init)
    pending = list(items)
    while pending:
        item = pending.pop(0)
        if isinstance(item, ast.IfExp):  # `A(c) if test else B(c)`: an item of either class
            pending[:0] = [item.body, item.orelse]
            continue
        if isinstance(item, ast.Call):
            name = _built_class(item.func, module, defaults)
            if not name:
                continue
            if name not in classes:
                classes.append(name)
            built = (name, _literal_arguments(item, read))
            if built not in inits:
                inits.append(built)
    return AttrInfo("module_list", "|".join(classes), init=tuple(inits))


def _growth(node: ast.stmt) -> Optional[Tuple[ast.expr, List[ast.expr]]]:
    """``owner.append(x)`` (``extend``, ``insert``, ``owner += [...]``): the owner and the
    expressions it adds, as a list display's items."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and \
            isinstance(node.value.func, ast.Attribute):
        call, method = node.value, node.value.func.attr
        if method in ("append", "extend", "insert") and call.args:
            added = call.args[-1]
            wrapped: List[ast.expr] = [added] if method == "extend" else [ast.List(elts=[added])]
            return node.value.func.value, wrapped
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
        return node.target, [node.value]
    return None


#: the modules a container module holds itself (``class Stage(nn.Sequential)`` whose
#: ``__init__`` calls ``self.add_module(name, Block())`` or ``self.append(Block())``), kept
#: among its attributes under a name no attribute can have; ``for block in self:`` runs them
SELF_ITEMS = "[items]"


def _added_to_self(node: ast.stmt) -> Optional[Tuple[str, List[ast.expr]]]:
    """``self.add_module(name, m)``, ``self.append(m)`` (``extend``, ``insert``): (SELF_ITEMS,
    what it adds, as :func:`_growth` gives it)."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and \
            isinstance(node.value.func, ast.Attribute) and _is_self(node.value.func.value):
        call, method = node.value, node.value.func.attr
        if method in ("add_module", "register_module") and len(call.args) == 2:
            return SELF_ITEMS, [ast.List(elts=[call.args[1]])]
    grown = _growth(node)
    if grown is not None and _is_self(grown[0]) and isinstance(node, ast.Expr):
        return SELF_ITEMS, grown[1]
    return None


def _appended(node: ast.stmt) -> Optional[Tuple[str, List[ast.expr]]]:
    """``self.<attr>`` grown in place (``self.layers = nn.ModuleList();
    self.layers.append(Conv2d(...))``): the attribute and what it adds."""
    grown = _growth(node)
    if grown is not None and isinstance(grown[0], ast.Attribute) and _is_self(grown[0].value):
        return grown[0].attr, grown[1]
    return None


def _collect_items(node: ast.stmt, items: Dict[str, List[ast.expr]]) -> None:
    """What a local name of ``__init__`` holds, for the modules a container is built from
    (``layers = [Stem()]; layers += [Block()]; layers.append(Head()); self.layers =
    nn.Sequential(*layers)``, ``block = Block(); self.blocks = nn.ModuleList([block])``)."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            if isinstance(t, ast.Name):
                value = node.value
                if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and \
                        isinstance(value.left, ast.Name) and value.left.id == t.id:
                    items.setdefault(t.id, []).extend(_module_items([value.right], items))
                else:
                    items[t.id] = _module_items([value], items)
    grown = _growth(node)
    if grown is not None and isinstance(grown[0], ast.Name):
        items.setdefault(grown[0].id, []).extend(_module_items(grown[1], items))


def _module_items(args: List[ast.expr],
                  local_items: Optional[Dict[str, List[ast.expr]]] = None) -> List[ast.expr]:
    """The module expressions of ``nn.Sequential(a, b)``, ``nn.ModuleList([a, b])``,
    ``nn.Sequential(*[Block() for ...])``, ``nn.ModuleDict({"a": a})``; a local name of
    ``local_items`` (see :func:`_collect_items`) stands for what it holds."""
    out: List[ast.expr] = []
    for arg in args:
        if isinstance(arg, ast.Starred):
            arg = arg.value
        if isinstance(arg, ast.Name) and local_items and arg.id in local_items:
            out.extend(local_items[arg.id])
            continue
        if isinstance(arg, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            out.append(arg.elt)
        elif isinstance(arg, (ast.List, ast.Tuple, ast.Set)):
            # `[block]` of a local `block = Block()`: what the name holds
            out.extend(held for elt in arg.elts for held in (
                local_items[elt.id] if isinstance(elt, ast.Name) and local_items and
                elt.id in local_items else [elt]))
        elif isinstance(arg, ast.Dict):
            out.extend(v for v in arg.values if v is not None)
        elif isinstance(arg, ast.DictComp):
            out.append(arg.value)
        else:
            out.append(arg)
    return out


def _classify(value: ast.expr, module: ModuleInfo, params: Dict[str, ast.arg],
              defaults: Dict[str, ast.expr],
              local_items: Optional[Dict[str, List[ast.expr]]] = None,
              read: Optional[ConfigReader] = None) -> AttrInfo:
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return AttrInfo("container")
    if isinstance(value, ast.Constant):
        v = value.value
        if isinstance(v, bool):
            return AttrInfo("bool", flag=v)
        if isinstance(v, int):
            return AttrInfo("int")
        if isinstance(v, float):
            return AttrInfo("float")
        if isinstance(v, str):
            return AttrInfo("str")
        if v is None:
            return AttrInfo("none")
        return AttrInfo("other")
    if isinstance(value, ast.JoinedStr):
        return AttrInfo("str")
    if isinstance(value, ast.IfExp):
        # `None if skip else Indexer(config)`: a module or nothing; where it is called it is
        # the module (calling None raises). `A(c) if linear else B(c)`: either class, so a
        # call runs each (as for an item of a mixed ModuleList), built with arguments unknown
        sides = [_classify(v, module, params, defaults, local_items, read)
                 for v in (value.body, value.orelse)]
        modules = [side for side in sides if side.kind == "module"]
        if len(modules) == 1 and {side.kind for side in sides} == {"none", "module"}:
            return modules[0]
        if len(modules) == 2:
            classes = list(dict.fromkeys(m.cls for m in modules))
            return modules[0] if len(classes) == 1 else AttrInfo("module", "|".join(classes))
        # `config.pad_mode if pad_mode is None else pad_mode`: an argument where one is given
        kinds = {side.kind for side in sides} - {"none"}
        return AttrInfo(kinds.pop() if len(kinds) == 1 else "other",
                        from_param=any(side.from_param for side in sides))
    if isinstance(value, ast.Name):
        param = params.get(value.id)
        if param is not None:
            ann_name = ast_dotted(param.annotation) if param.annotation is not None else None
            if ann_name in ("int", "float", "bool", "str"):
                return AttrInfo(ann_name, from_param=True)
            default = defaults.get(value.id)
            if isinstance(default, ast.Constant) and type(default.value) in (int, float, bool, str):
                return AttrInfo(type(default.value).__name__, from_param=True)
            return AttrInfo("other", from_param=True)
        return AttrInfo("other")
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and \
            value.func.id in defaults:  # `rnn_layer(...)` of a parameter `rnn_layer=LSTM2d`
        built = _built_class(value.func, module, defaults)
        return AttrInfo("module", built) if built else AttrInfo("other")
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Call):
        # `_get_block_type(block_type)(...)`: a helper of this module that returns one of
        # several classes; the block is any of them (a call runs each, as for a mixed list)
        classes = _returned_classes(value.func, module)
        return AttrInfo("module", "|".join(classes)) if classes else AttrInfo("other")
    if isinstance(value, ast.Call):
        fname = module.resolve(ast_dotted(value.func) or "")
        if fname in CONTAINER_CALLS or fname.startswith("collections."):
            return AttrInfo("container")
        if fname in MODULE_LIST_CLASSES or fname.endswith(("ModuleList", "ModuleDict", "Sequential")):
            # the element classes, in order: "A|B|C" (a Sequential runs them one after another;
            # iterating a ModuleList of mixed blocks may give any of them)
            return _with_items(AttrInfo("module_list"), _module_items(value.args, local_items),
                               module, read, defaults)
        if fname.startswith("torch.nn.") and fname.split(".")[-1][:1].isupper():
            if fname.endswith(("Parameter", "Buffer")):
                return AttrInfo("tensor")
            return AttrInfo("module", fname, init=_literal_arguments(value, read))
        if fname.startswith("torch."):  # what torch's signature says it returns
            from shapelint.static.torch_api import load

            found = load().function(fname)
            returns = found.returns if found is not None else ""
            return AttrInfo("tensor" if returns == "tensor" else "other")
        last = fname.split(".")[-1]
        if last[:1].isupper():
            return AttrInfo("module", fname)  # confirmed against the project's classes later
        if fname in ("int", "len"):
            return AttrInfo("int")
        if fname == "float":
            return AttrInfo("float")
    if isinstance(value, ast.BinOp):
        left = _classify(value.left, module, params, defaults)
        right = _classify(value.right, module, params, defaults)
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
        #: per class (as ``_mros``), its model-output fields (see ``output_fields``)
        self._outputs: Dict[str, Optional[Tuple[str, ...]]] = {}
        self._suffix: Dict[str, List[ModuleInfo]] = {}
        #: the last part of a dotted module name -> the names of ``modules`` ending in it,
        #: in the order of ``modules`` (what ``_suffix`` scans, not every module per name)
        self._by_last: Dict[str, List[str]] = {}
        #: file -> its import root (``module_name_for`` stats a folder per package level)
        self._roots: Dict[str, str] = {}
        self._parsed_texts: Dict[str, Union[str, Tuple[cst.Module, cst.CSTNode]]] = {}
        self.limits = DEFAULT_LIMITS

    def add(self, module: ModuleInfo) -> None:
        module.project = self
        module.parsed_texts = self._parsed_texts
        module.limits = self.limits
        self._attempted.add(module.source.abspath)
        self._lookups.clear()
        self._mros.clear()
        self._outputs.clear()
        for name, found in self._suffix.items():  # (kept up to date: rebuilding it scanned
            if module.name.endswith("." + name):  # every module at each lazy load)
                found.append(module)
        if module.name not in self.modules:
            self._by_last.setdefault(module.name.rsplit(".", 1)[-1], []).append(module.name)
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
        if cands and near is not None and self.loader is not None and \
                not any(m.root == near.root for m in cands):
            # `from utils import f` in a/model.py is a/utils.py when it exists (the importer's
            # own folder, as Python's path has a script's), even once b/utils.py is loaded
            paths = [p for p in self.index.get(name, []) if p not in self._attempted
                     and self._root_of(p) == near.root]
            if paths:
                cands = []
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
                self._suffix[name] = [m for n in self._by_last.get(name.rsplit(".", 1)[-1], ())
                                      if n.endswith(suffix) for m in self.modules[n]]
            cands = self._suffix[name]
        if not cands:
            return None
        if near is not None and len(cands) > 1:
            same = [m for m in cands if m.root == near.root]
            if same:
                return same[0]
        return cands[0]

    def _root_of(self, path: str) -> str:
        root = self._roots.get(path)
        if root is None:
            root = self._roots[path] = module_name_for(path)[1]
        return root

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

    def output_fields(self, cls: ClassInfo) -> Optional[Tuple[str, ...]]:
        """The fields of a model-output class, base classes' first, in declaration order;
        None for another class. transformers' ModelOutput and diffusers' BaseOutput are
        dataclasses whose ``out[0]`` is the first field that is not None and ``out.name``
        (or ``out["name"]``) a field: heads read ``outputs[0]`` of the model they wrap.
        Cached per class: the walk asks at every output a forward builds."""
        key = f"{cls.module.source.abspath}:{cls.name}"
        if key not in self._outputs:
            self._outputs[key] = self._output_fields(cls)
        return self._outputs[key]

    def _output_fields(self, cls: ClassInfo) -> Optional[Tuple[str, ...]]:
        chain = self.mro(cls)
        if not any(c.name in OUTPUT_BASES or any(b.rsplit(".", 1)[-1] in OUTPUT_BASES
                                                  for b in c.bases) for c in chain):
            return None
        names: List[str] = []
        for c in reversed(chain):
            for stmt in c.tree.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and \
                        stmt.target.id not in names and "ClassVar" not in ast.unparse(stmt.annotation):
                    names.append(stmt.target.id)
        return tuple(names)

    def state_assignments(self, fn: FunctionInfo, cls: ClassInfo,
                          path: str) -> List[Tuple[int, FunctionInfo, int]]:
        """Where ``fn`` (a method of an instance of ``cls``) rebinds ``self.<path>`` (``path``
        is ``x`` or ``config.problem_type``), itself or through a method it calls on ``self``:
        (the line in ``fn``, the function that assigns, the assignment's line), in source
        order. One level of ``self.m(...)`` calls is followed: lazy initialisation sits in a
        helper (``self._init_cache(x)``)."""
        key = "self." + path
        found = [(line, fn, line) for line in fn.self_state.writes.get(key, ())]
        for line, name in fn.self_state.self_calls:
            callee = self.method(cls, name)
            if callee is not None and callee.name != "__init__" and callee is not fn:
                inner = callee.self_state.writes.get(key)
                if inner:
                    found.append((line, callee, inner[0]))
        return sorted(found, key=lambda f: f[0])

    def is_nn_module(self, cls: ClassInfo) -> bool:
        for c in self.mro(cls):
            for base in c.bases:
                if base.startswith("torch.nn.") or base in ("nn.Module", "Module"):
                    return True
        return False
