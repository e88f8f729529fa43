"""Regions: what is compiled, and what varies between calls of it.

One place decides it:

- **Entries**: functions and methods decorated with ``torch.compile``, names passed to
  ``torch.compile(...)``, the configured ``entry-points``, and, by default, the ``forward`` of
  every *outermost* ``nn.Module``: a module class that no other module class of the tree
  builds. A module built inside another (``self.layers = nn.ModuleList([Block(...)])``) is
  inlined into its parent's graph: its int arguments are values the parent traced, not graph
  inputs, so they are not guarded as arguments (a containment graph in networkx answers it).
  Losses, criteria, matchers and metrics (by their class names) run beside a model, not in
  its graph, and are regions only when compiled or configured.
- **What varies**: the dims of an entry's tensor inputs that the code declares dynamic
  (``torch._dynamo.mark_dynamic(x, 1)``, ``maybe_mark_dynamic``, ``mark_unbacked``; a
  ``mark_static`` fixes one), that the config names (``dynamic-dims = { input_ids = [0, 1] }``),
  and otherwise dim 0 (the batch) and dim 1 of token ids and masks (the sequence). An int
  argument with no default is passed at every call and taken to change between calls; a flag
  or a defaulted int is a setting.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst
import networkx as nx

from shapelint.config import Settings
from shapelint.static import dynamo
from shapelint.static.evidence import SEQUENCE, TENSOR, parameter_uses
from shapelint.static.project import (ClassInfo, FunctionInfo, ModuleInfo, Project, ast_dotted,
                                      child_fields, default_pairs)
from shapelint.static.target_inputs import TargetDims
from shapelint.static.types import param_kinds
from shapelint.values import (NUMBERS, UNKNOWN, UNKNOWN_DIM, Dim, DimInfo, Dims, Kind, Origin, Tag,
                              Value)

MARKS = {"mark_dynamic": Dim.VARY, "maybe_mark_dynamic": Dim.VARY, "mark_unbacked": Dim.VARY,
         "mark_static": Dim.CONST}
_MARK_WORD = re.compile(r"\b(?:maybe_)?mark_(?:dynamic|unbacked|static)\s*\(")
#: module classes that are not models by their names: losses, criteria, matchers, metrics
NOT_A_MODEL = re.compile(r"(?:Loss|Criterion|Matcher|Metric|Metrics)$")
#: names of flags, by the conventions of transformers, diffusers and timm (``return_dict``,
#: ``output_attentions``, ``use_cache``, ``is_causal``...)
FLAG_NAME = re.compile(r"^(?:return|output|use|is|has|do|enable|disable|skip|apply|with|"
                       r"interpolate)_|_(?:flag|only)$|^(?:training|verbose|debug|causal)$")
#: parameter names of token ids and masks: (batch, sequence)
SEQUENCE_INPUT = re.compile(r"(?:^|_)(?:ids|mask|labels|tokens)$")
#: parameter names that say an input is a batch of images: (batch, channels, height, width)
IMAGE_INPUT = re.compile(r"^(?:pixel_values|images)$")
#: names that say a size is a length, a time or a token count (``b, t, c = x.shape``,
#: ``seq_len = x.shape[1]``): such a dim varies between calls, as the sequence of ids does.
#: Not an image side (``H``, ``W``): on the zoo's tune half they added two true findings and
#: four false ones (strict-size asserts of models that accept one resolution)
LENGTH_NAME = re.compile(r"^(?:[tTLS]|seq|seqlen|seq_?len(?:gth)?|sequence_length|"
                         r"num_tokens|n_?tokens|"
                         r"[qk]v?_len|kv_seq_len|q_seq_len|(?:src|tgt|key|query|kv|q|k)_(?:len|length|"
                         r"seq_len)|num_frames|n_?frames|seqlen_[qk]|[tT]_?[qk]|n_?ctx|time_steps|"
                         r"timesteps_len)$")
_INT_NAMES = frozenset({"n", "k", "m", "step", "steps", "offset", "idx", "index", "length",
                        "count", "seq_len", "seqlen", "dim_size", "num_nodes", "max_len",
                        "max_length", "pos", "start_pos", "position", "layer_idx", "chunk_size",
                        "block_size", "window"})


def looks_like_int(name: str) -> bool:
    """Unannotated parameters whose names say 'count' or 'length' (``n``, ``num_heads``...)."""
    if name in _INT_NAMES:
        return True
    return name.startswith(("num_", "n_", "max_", "min_")) or \
        name.endswith(("_len", "_size", "_idx", "_count", "_steps"))


class Regions:
    """The compiled entries of a project and the values their arguments hold."""

    def __init__(self, project: Project, settings: Settings) -> None:
        self.project = project
        self.settings = settings
        self.containment: nx.DiGraph = nx.DiGraph()
        self._marks: Optional[Dict[str, Dict[int, Dim]]] = None
        self._targets: Optional[TargetDims] = None
        #: the names each helper body refers to (see ``_through_helpers``), by (body, looped)
        self._helper_names: Dict[Tuple[int, bool], List[Tuple[str, bool]]] = {}
        #: the names each method body refers to, by its text (see ``_names_in``)
        self._names_by_text: Dict[str, List[Tuple[str, bool]]] = {}

    # -- entries ----------------------------------------------------------------------------------
    def entries(self) -> List[FunctionInfo]:
        """Every compiled entry, in file order, each once."""
        out: List[FunctionInfo] = []
        seen: Set[int] = set()

        def add(fn: Optional[FunctionInfo]) -> None:
            if fn is not None and id(fn) not in seen:
                seen.add(id(fn))
                out.append(fn)

        modules = sorted(self.project.all_modules(), key=lambda m: m.path)
        outermost = self._outermost(modules) if self.settings.module_forward else set()
        for mod in modules:
            for fn in mod.functions.values():
                if _compiled(fn) or fn.name in mod.compile_targets or self._configured(fn):
                    add(fn)
            for cls in mod.classes.values():
                for m in cls.methods.values():
                    if _compiled(m) or self._configured(m):
                        add(m)
                if cls.name in mod.compile_targets or cls.qualname in outermost:
                    if self.project.is_nn_module(cls):
                        add(self.project.method(cls, "forward"))
        return out

    def _configured(self, fn: FunctionInfo) -> bool:
        pats = self.settings.entry_points
        return bool(pats) and any(fnmatch.fnmatchcase(n, p) for p in pats
                                  for n in (fn.name, fn.symbol, fn.qualname))

    def _outermost(self, modules: List[ModuleInfo]) -> Set[str]:
        """Module classes no other module class of the tree builds (networkx: in-degree 0)."""
        g = self.containment
        classes: Dict[str, ClassInfo] = {}
        for mod in modules:
            for cls in mod.classes.values():
                if not self.project.is_nn_module(cls):
                    continue
                g.add_node(cls.qualname)
                classes[cls.qualname] = cls
                for built, repeated in self._builds(cls):
                    if built.qualname != cls.qualname:
                        g.add_edge(cls.qualname, built.qualname, repeated=repeated)
        # losses, matchers and metrics run beside the model (a training step computes them on
        # its outputs), not inside the graph a server or a training loop compiles
        return {n for n in g.nodes if g.in_degree(n) == 0 and not NOT_A_MODEL.search(n)
                and not (n in classes and self._variant_of_nested(classes[n]))}

    def _variant_of_nested(self, cls: ClassInfo) -> bool:
        """A subclass that keeps a nested block's ``forward`` (it changes only what
        ``__init__`` builds) is that block again: a variant built where the block is
        (transformers' modular files subclass a block and leave building it to the code they
        generate), not a model of its own."""
        if "forward" in cls.methods:
            return False
        fwd = self.project.method(cls, "forward")
        owner = fwd.cls if fwd is not None else None
        return owner is not None and self.is_nested_module(owner.qualname)

    def _builds(self, cls: ClassInfo) -> List[Tuple[ClassInfo, bool]]:
        """Module classes that ``cls`` builds or hands to a builder outside ``forward``
        (``Block(...)``, ``nn.ModuleList([Block(...) ...])``, ``partial(Block, ...)``,
        ``block_fn=Block`` defaults), each with whether it builds several (in a loop or a
        comprehension)."""
        out: Dict[str, Tuple[ClassInfo, bool]] = {}
        for m in cls.methods.values():
            if m.name == "forward":
                continue
            names = list(self._names_in(m))
            names.extend(self._through_helpers(names, cls.module))
            args = m.tree.args
            params_in_loops = {n for n, looped in names if looped}
            names.extend((ast_dotted(d) or "", a.arg in params_in_loops)
                         for a, d in default_pairs(args))
            for name, looped in names:
                if not name or not name.lstrip("_")[:1].isalpha() or \
                        not name.split(".")[-1].lstrip("_")[:1].isupper():  # `_InvertedResidual`
                    continue
                found = self._class(name, cls.module)
                if found is not None and self.project.is_nn_module(found):
                    seen = out.get(found.qualname)
                    out[found.qualname] = (found, looped or (seen is not None and seen[1]))
        return list(out.values())

    def _names_in(self, m: FunctionInfo) -> List[Tuple[str, bool]]:
        """The names ``m``'s body refers to, with whether in a loop; by the body's text, read
        once for every copy (transformers repeats many a block's ``__init__`` word for
        word in model after model)."""
        text = m.module.text(m.tree.lineno, m.tree.end_lineno or m.tree.lineno)
        found = self._names_by_text.get(text)
        if found is None:
            found = self._names_by_text[text] = []
            _referenced(m.tree.body, False, found)
        return found

    def _through_helpers(self, names: List[Tuple[str, bool]], mod: ModuleInfo,
                         depth: int = 3) -> List[Tuple[str, bool]]:
        """Names that helpers called from ``__init__`` build or pass on: torchvision's
        ``_stack(...)`` builds the blocks, timm's ``EfficientNetBuilder`` instance does in its
        methods. A module built that way sits inside its caller's graph as surely as one
        built in ``__init__`` itself (a call in a loop builds several)."""
        out: List[Tuple[str, bool]] = []
        seen: Set[int] = set()
        todo = [(n, looped, mod, depth) for n, looped in names]
        while todo:
            name, looped, where, left = todo.pop()
            if not name or not left:
                continue
            obj = where.functions.get(name) or self.project.lookup(where.resolve(name), where)
            bodies: List[Tuple[ast.AST, ModuleInfo]] = []
            if isinstance(obj, FunctionInfo) and obj.cls is None:
                bodies.append((obj.tree, obj.module))
            elif isinstance(obj, ClassInfo) and not self.project.is_nn_module(obj):
                bodies.extend((m.tree, obj.module) for m in obj.methods.values())
            for body, home in bodies:
                if id(body) in seen:
                    continue
                seen.add(id(body))
                key = (id(body), looped)
                found = self._helper_names.get(key)  # (one helper serves many classes)
                if found is None:
                    found = self._helper_names[key] = []
                    _referenced(body.body, looped, found)  # type: ignore[attr-defined]
                # a name resolved in the helper's own module, reported relative to ``mod``
                for n, lp in found:
                    qual = home.resolve(n) if n.lstrip("_")[:1].isalpha() else ""
                    out.append((qual if "." in qual else n, lp))
                    todo.append((n, lp, home, left - 1))
        return out

    def is_repeated(self, cls_qualname: str) -> bool:
        """Whether some module class builds several instances of this one."""
        g = self.containment
        return cls_qualname in g and any(d.get("repeated") for _, _, d in g.in_edges(cls_qualname, data=True))

    def _class(self, name: str, mod: ModuleInfo) -> Optional[ClassInfo]:
        if name in mod.classes:
            return mod.classes[name]
        qual = mod.resolve(name)
        if "." not in qual:
            return None
        return self.project.class_of(qual, mod)

    def is_nested_module(self, cls_qualname: str) -> bool:
        g = self.containment
        return cls_qualname in g and g.in_degree(cls_qualname) > 0

    # -- what varies ------------------------------------------------------------------------------
    @property
    def marks(self) -> Dict[str, Dict[int, Dim]]:
        """``mark_dynamic(input_ids, 1)`` and friends anywhere in the tree, by the marked
        name (a variable, an attribute or a dict key): dim -> varies or fixed."""
        if self._marks is None:
            self._marks = {}
            for mod in self.project.all_modules():
                text = mod.source.text
                if "mark_" in text and _MARK_WORD.search(text):
                    _read_marks(text, self._marks)
        return self._marks

    @property
    def targets(self) -> TargetDims:
        """What the configured ``[[targets]]``' inputs say varies (read once, on first need)."""
        if self._targets is None:
            self._targets = TargetDims(self.settings.targets, self.settings.base_dir)
        return self._targets

    def files_read(self) -> Set[str]:
        """Files read to learn what varies beyond the analysed ones (the targets' inputs, if
        anything asked): the cache's dependencies."""
        return set(self._targets.files) if self._targets is not None else set()

    @property
    def exact_dims(self) -> bool:
        """Whether the config says which dims vary (``dynamic-dims``, or targets whose inputs
        the static pass could read): then no dim is guessed from a name."""
        return bool(self.settings.dynamic_dims) or bool(self.targets.dims)

    def arg_dims(self, name: str, default_rank: Optional[int] = None) -> Dims:
        """Dims of an entry's tensor argument ``name``."""
        declared: Dict[int, Tuple[Dim, str]] = {}
        sides: Set[int] = set()  # trailing dims nothing decided: image sides if a conv takes them
        configured = self.settings.dynamic_dims.get(name, self.settings.dynamic_dims.get("*"))
        if configured is not None:
            for d in configured:
                declared[d] = (Dim.VARY, "dynamic-dims in the config")
        for d, state in self.marks.get(name, {}).items():
            declared.setdefault(d, (state, "marked in the code"))
        replayed = self.targets.dims.get(name)
        for d, state in (replayed or {}).items():
            declared.setdefault(d, (state, self.targets.why[name]))
        if configured is None and replayed is None and \
                not any(s is Dim.VARY for s, _ in declared.values()):
            declared.setdefault(0, (Dim.VARY, "assumed: the batch dim"))
            if SEQUENCE_INPUT.search(name):
                declared.setdefault(1, (Dim.VARY, "assumed: the sequence dim of ids and masks"))
            for d in (-2, -1):  # an image's sides: by its name, or where a 2-D convolution
                # takes them (shapes.image_side)
                if IMAGE_INPUT.search(name):
                    declared.setdefault(d, (Dim.VARY, "assumed: an image side"))
                elif d not in declared:
                    sides.add(d)
        front: List[DimInfo] = []
        back: List[DimInfo] = []
        for d in sorted(k for k in declared if k >= 0):
            while len(front) < d:
                front.append(UNKNOWN_DIM)
            state, why = declared[d]
            front.append(DimInfo(state, f"`{name}` dim {d}, {why}"))
        for d in sorted({k for k in declared if k < 0} | sides, reverse=True):
            while len(back) < -d - 1:
                back.insert(0, UNKNOWN_DIM)
            if d in sides:
                back.insert(0, DimInfo(Dim.UNKNOWN, f"`{name}` dim {d}", side=True))
                continue
            state, why = declared[d]
            back.insert(0, DimInfo(state, f"`{name}` dim {d}, {why}"))
        return Dims(tuple(front), tuple(back), None)

    def named_length(self, name: str, v: Value) -> Value:
        """``v`` bound to ``name``: a tensor size whose dim nothing decided, read into a name
        that says length or time, varies between calls (a model's sequence length is its
        input's). Not when the config says exactly which dims vary (``dynamic-dims``, targets)."""
        if Tag.SIZE in v.tags and (v.dim is None or v.dim.state is Dim.UNKNOWN) and \
                not self.exact_dims and LENGTH_NAME.match(name):
            return v.with_(dim=DimInfo(Dim.VARY, f"`{name}`, named as a length", guessed=True))
        return v

    def entry_args(self, fn: FunctionInfo, where) -> Dict[str, Value]:
        """Values of a compiled entry's parameters (``where`` places their origins)."""
        out: Dict[str, Value] = {}
        node = fn.node
        if node is None:  # libcst could not parse it; the engine reports that
            return out
        params = list(node.params.params) + list(node.params.kwonly_params)
        if fn.is_method and params:
            params = params[1:]
        uses = parameter_uses(fn.tree)
        for p in params:
            name = p.name.value
            origin = Origin.of_node(p.name, where, fn.module.path, fn.symbol, scope=fn.qualname,
                                    text=name, near=node)
            out[name] = self._entry_arg(p, name, origin, uses.get(name, frozenset()))
        star = node.params.star_arg
        if isinstance(star, cst.Param):
            out[star.name.value] = UNKNOWN
        if node.params.star_kwarg is not None:
            out[node.params.star_kwarg.name.value] = UNKNOWN
        return out

    def _entry_arg(self, p: cst.Param, name: str, origin: Origin, uses: frozenset) -> Value:
        """The value an entry's parameter holds: its annotation or default says, else how the
        body uses it (``idx.size()``: a tensor whatever its name; only iterated or counted: a
        sequence), else its name (``n``, ``seq_len``: an int), else a tensor input."""
        ann = p.annotation.annotation if p.annotation is not None else None
        kinds = param_kinds(ann, p.default)
        if not kinds and p.default is None:  # forward(self, x): the inputs are tensors
            if name in self.settings.scalar_arg_names:
                kinds = frozenset({Kind.INT})
            elif TENSOR in uses:
                kinds = frozenset({Kind.TENSOR})
            elif SEQUENCE in uses:  # a tuple of layer outputs, a list of features
                return Value(kinds=frozenset({Kind.TENSORS}), origin=origin)
            else:
                kinds = frozenset({Kind.INT}) if looks_like_int(name) else frozenset({Kind.TENSOR})
        elif not kinds and ann is None and _is_none(p.default):  # forward(self, x, mask=None)
            # a flag by its name (return_dict=None, output_attentions=None), a size by its
            # name (size=None, max_length=None: what a caller read off a shape), else an
            # optional input tensor
            if FLAG_NAME.search(name):
                kinds = frozenset({Kind.BOOL, Kind.NONE})
            elif looks_like_int(name) or name in ("size", "shape"):
                kinds = frozenset({Kind.INT, Kind.NONE})
            else:
                kinds = frozenset({Kind.TENSOR, Kind.NONE})
        if Kind.TENSOR in kinds:
            return Value(kinds=kinds, origin=origin, dims=self.arg_dims(name))
        if Kind.TENSORS in kinds:
            return Value(kinds=kinds, origin=origin, dims=self.arg_dims(name))
        if kinds and kinds - {Kind.NONE} and kinds - {Kind.NONE} <= NUMBERS:
            number = sorted(k.value for k in kinds - {Kind.NONE})
            detail = "int" if "int" in number else number[0]
            varies = Kind.INT in kinds and (p.default is None or name in self.settings.scalar_arg_names)
            dim = DimInfo(Dim.VARY, f"the int argument `{name}`, passed at every call") \
                if varies else UNKNOWN_DIM
            return Value(kinds=kinds, tags=frozenset({Tag.SCALAR}), origin=origin, detail=detail,
                         dim=dim)
        return Value(kinds=kinds, origin=origin)


_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.GeneratorExp,
          ast.DictComp)


def _referenced(node, looped: bool, out: List[Tuple[str, bool]]) -> None:
    """Names called or passed to a call under ``node`` (not in isinstance/issubclass), chosen
    as a fallback (``layer or Default``, ``A if flag else B``: the class a builder is then
    handed) or returned (by a helper that picks the class), each with whether it sits in a
    loop or a comprehension. It visits every node of every ``__init__`` and helper of a tree:
    the children come from each type's own fields (no ``ctx``, no generator)."""
    if isinstance(node, list):
        for n in node:
            _referenced(n, looped, out)
        return
    if isinstance(node, ast.Call):
        fname = ast_dotted(node.func) or ""
        if fname in ("isinstance", "issubclass", "type"):
            return
        out.append((fname, looped))
        out.extend((ast_dotted(a) or "", looped) for a in node.args)
        out.extend((ast_dotted(k.value) or "", looped) for k in node.keywords)
    elif isinstance(node, (ast.BoolOp, ast.IfExp)):  # `se_layer = se_layer or SqueezeExcite`
        values = node.values if isinstance(node, ast.BoolOp) else [node.body, node.orelse]
        out.extend((ast_dotted(v) or "", looped) for v in values)
    elif isinstance(node, ast.Return) and node.value is not None:
        # a helper that picks the class (`return BlockESE`): its caller builds it
        out.append((ast_dotted(node.value) or "", looped))
    inner = looped or isinstance(node, _LOOPS)
    for field in child_fields(type(node)):
        child = getattr(node, field, None)
        if isinstance(child, list):
            for c in child:
                if isinstance(c, ast.AST):
                    _referenced(c, inner, out)
        elif isinstance(child, ast.AST):
            _referenced(child, inner, out)


def _is_none(node: Optional[cst.BaseExpression]) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _compiled(fn: FunctionInfo) -> bool:
    return any(d in dynamo.COMPILE_FUNCTIONS for d in fn.decorators)


def _read_marks(text: str, into: Dict[str, Dict[int, Dim]]) -> None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or len(node.args) < 1:
            continue
        fname = (ast_dotted(node.func) or "").rsplit(".", 1)[-1]
        if fname not in MARKS:
            continue
        target = node.args[0]
        name = None
        if isinstance(target, ast.Name):
            name = target.id
        elif isinstance(target, ast.Attribute):
            name = target.attr
        elif isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) \
                and isinstance(target.slice.value, str):
            name = target.slice.value
        dims_node = node.args[1] if len(node.args) > 1 else next(
            (k.value for k in node.keywords if k.arg in ("index", "dim")), None)
        dims: List[int] = []
        if isinstance(dims_node, ast.Constant) and isinstance(dims_node.value, int):
            dims = [dims_node.value]
        elif isinstance(dims_node, (ast.List, ast.Tuple)):
            dims = [e.value for e in dims_node.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, int)]
        if name:
            for d in dims:
                into.setdefault(name, {})[d] = MARKS[fname]
