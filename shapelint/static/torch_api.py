"""torch's API as data, for the static pass.

The static pass never imports torch (it runs in pre-commit environments without it), yet a
rule needs to know what `x.size(1)` returns or which argument of `torch.repeat_interleave(...)`
is `repeats`. `scripts/gen_torch_api.py` reads the stubs and sources of an installed torch with
`ast` and writes `data/torch_api.json`; this module loads that file and answers lookups.

    api = load()
    api.method("size").returns                          # "other": the overloads disagree
    api.resolve("Tensor.size", 1, is_method=True).returns   # "int"
    api.bind("torch.repeat_interleave", 1, ["repeats"])
    # {"input": ("pos", 0), "repeats": ("kw", "repeats")}

Return kinds: tensor, tensors (a sequence of tensors of unknown length), tensor_tuple (fixed
arity, see `arity`), int, float, bool, number, size (torch.Size), none, str, dtype, device,
other. Parameter kinds: the same minus tensor_tuple/none, size meaning any int sequence.
"""

from __future__ import annotations

import ast
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

DATA_FILE = "torch_api.json"

POSITIONAL_ONLY = "positional_only"
POSITIONAL = "positional"  # positional or keyword
VAR_POSITIONAL = "var_positional"
KEYWORD_ONLY = "keyword_only"
VAR_KEYWORD = "var_keyword"

# Where a parameter's argument is in a call: ("pos", i) the i-th explicit positional argument
# (the receiver not counted), ("kw", name) a keyword argument, ("varpos", i) *args collecting
# the positional arguments from i on, ("receiver", 0) the object a method is called on.
Location = Tuple[str, Union[int, str]]
Binding = Dict[str, Location]

_UNSET: Any = object()
# Parameter kinds a caller rarely passes without saying so: an argument of unknown kind leans
# away from overloads that want one of these (x.view(n) is the size overload, not the dtype).
_RARE = frozenset({"dtype", "device", "str", "none", "other"})
# How well an argument of one kind fits a parameter of another, where not an exact match.
_PARTIAL: Mapping[str, Mapping[str, float]] = {
    "int": {"number": 1.0, "float": 1.0, "size": 0.5, "bool": 0.25},
    "bool": {"number": 1.0, "int": 0.5},
    "float": {"number": 1.0},
    "number": {"int": 0.5, "float": 0.5, "bool": 0.25},
    "tensor": {"number": 0.25},
    "str": {"device": 0.5},
    "size": {"tensors": 0.0},
}
_MISMATCH = -5.0


@dataclass(frozen=True)
class Param:
    """One parameter of one overload."""

    name: str
    kinds: Tuple[str, ...]  # coarse types from the annotation: ("tensor", "int") for Tensor|int
    kind: str  # POSITIONAL_ONLY, POSITIONAL, VAR_POSITIONAL, KEYWORD_ONLY or VAR_KEYWORD
    default: Optional[str] = None  # source text; "..." when the stub hides it; None: required

    @property
    def has_default(self) -> bool:
        return self.default is not None

    @property
    def required(self) -> bool:
        return self.default is None and self.kind in (POSITIONAL_ONLY, POSITIONAL, KEYWORD_ONLY)

    def default_value(self, missing: Any = None) -> Any:
        """The default as a Python value, `missing` when absent or not a literal."""
        if self.default is None or self.default == "...":
            return missing
        try:
            return ast.literal_eval(self.default)
        except (ValueError, SyntaxError):
            return missing


@dataclass(frozen=True)
class Overload:
    """One signature of a callable, with what it returns."""

    params: Tuple[Param, ...]
    returns: str
    arity: Optional[int] = None  # for tensor_tuple
    nullable: bool = False  # the return may be None
    fields: Tuple[str, ...] = ()  # named-tuple fields (torch.max(x, 1) -> values, indices)
    # Flag values that select this overload (Literal[...] in the stub, or boolean_dispatch):
    # torch.unique(..., return_counts=True) -> {"return_counts": True, ...}.
    when: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    has_self: bool = False  # a method: params[0] is the receiver

    @property
    def positional(self) -> Tuple[Param, ...]:
        """Parameters that an argument may fill by position, self included."""
        return tuple(p for p in self.params if p.kind in (POSITIONAL_ONLY, POSITIONAL))

    @property
    def keyword_only(self) -> Tuple[Param, ...]:
        return tuple(p for p in self.params if p.kind == KEYWORD_ONLY)

    @property
    def varargs(self) -> Optional[Param]:
        return next((p for p in self.params if p.kind == VAR_POSITIONAL), None)

    @property
    def varkw(self) -> Optional[Param]:
        return next((p for p in self.params if p.kind == VAR_KEYWORD), None)

    def param(self, name: str) -> Optional[Param]:
        return next((p for p in self.params if p.name == name), None)


@dataclass(frozen=True)
class TorchCallable:
    """A function (torch.cat) or method (Tensor.view) and its overloads."""

    qualname: str
    returns: str  # the overloads' kind when they agree, else "number" (all numeric) or "other"
    overloads: Tuple[Overload, ...]
    arity: Optional[int] = None
    nullable: bool = False
    source: str = ""  # which torch file it was read from (see the data file's header)

    @property
    def is_method(self) -> bool:
        return bool(self.overloads) and self.overloads[0].has_self


@dataclass(frozen=True)
class Attribute:
    """A Tensor property: Tensor.shape -> size, Tensor.grad -> tensor (nullable)."""

    qualname: str
    returns: str
    nullable: bool = False


def _parse_ret(text: str) -> Tuple[str, Optional[int], bool]:
    nullable = text.endswith("?")
    text = text.rstrip("?")
    arity = None
    if text.endswith(")"):
        text, _, n = text[:-1].partition("(")
        arity = int(n)
    return text, arity, nullable


def _parse_params(items: Sequence[str]) -> Tuple[Param, ...]:
    out: List[Param] = []
    kind = POSITIONAL
    for item in items:
        if item == "/":
            out = [Param(p.name, p.kinds, POSITIONAL_ONLY, p.default) for p in out]
            continue
        if item == "*":
            kind = KEYWORD_ONLY
            continue
        this = kind
        if item.startswith("**"):
            item, this = item[2:], VAR_KEYWORD
        elif item.startswith("*"):
            item, this, kind = item[1:], VAR_POSITIONAL, KEYWORD_ONLY
        name, _, rest = item.partition(":")
        kinds, eq, default = rest.partition("=")
        out.append(Param(name, tuple(kinds.split("|")), this, default if eq else None))
    return tuple(out)


def _overload(raw: Mapping[str, Any], is_method: bool) -> Overload:
    params = _parse_params(raw["params"])
    kind, arity, nullable = _parse_ret(raw["ret"])
    has_self = is_method and bool(params) and params[0].name == "self"
    return Overload(params, kind, arity, nullable, tuple(raw.get("fields", ())),
                    MappingProxyType(dict(raw.get("when", {}))), has_self)


class TorchAPI:
    """Lookups over the generated data. Records are built on first use and kept."""

    def __init__(self, data: Mapping[str, Any]):
        self.header: Mapping[str, Any] = data["header"]
        self._functions: Mapping[str, Any] = data["functions"]
        self._methods: Mapping[str, Any] = data["methods"]
        self._attributes: Mapping[str, str] = data["attributes"]
        self._cache: Dict[str, Optional[TorchCallable]] = {}
        self._picked: Dict[tuple, Optional[Tuple[Overload, Binding]]] = {}

    @property
    def torch_version(self) -> str:
        return str(self.header.get("torch_version", "unknown"))

    # -- lookups

    def function(self, qualname: str) -> Optional[TorchCallable]:
        """torch.cat, torch.nn.functional.pad, torch.linalg.norm... (import aliases resolved
        by the caller); None when torch has no such function."""
        return self._record(qualname, self._functions, False)

    def method(self, name: str, owner: str = "Tensor") -> Optional[TorchCallable]:
        """A method by bare name ("view") or qualified ("Tensor.view", "Size.numel")."""
        return self._record(self._method_key(name, owner), self._methods, True)

    def attribute(self, name: str, owner: str = "Tensor") -> Optional[Attribute]:
        """A Tensor property ("shape", "Tensor.ndim"): what reading it gives."""
        key = self._method_key(name, owner)
        raw = self._attributes.get(key)
        if raw is None:
            return None
        kind, _, nullable = _parse_ret(raw)
        return Attribute(key, kind, nullable)

    def lookup(self, name: str, is_method: bool = False) -> Optional[TorchCallable]:
        """A function by qualified name, else a method ("Tensor.view", "torch.Tensor.view",
        or a bare "view" when is_method)."""
        if is_method:
            return self.method(name)
        found = self.function(name)
        if found is None and "." in name:
            found = self.method(name)
        return found

    def functions(self) -> Iterator[str]:
        return iter(self._functions)

    def methods(self) -> Iterator[str]:
        return iter(self._methods)

    def attributes(self) -> Iterator[str]:
        return iter(self._attributes)

    # -- calls

    def resolve(self, name: str, positional_count: int, keyword_names: Iterable[str] = (),
                is_method: bool = False, *, arg_kinds: Optional[Sequence[Optional[str]]] = None,
                keyword_kinds: Optional[Mapping[str, Optional[str]]] = None,
                literals: Optional[Mapping[Union[int, str], Any]] = None) -> Optional[Overload]:
        """The overload a call selects, None when none accepts its shape.

        positional_count counts explicit positional arguments (for `x.view(2, 3)`, 2 with
        is_method=True). Overloads whose parameters cannot take the call are dropped; among
        the rest, the argument kinds the caller knows (arg_kinds by position, keyword_kinds by
        name: "tensor", "int", ...) and literal flag values (literals, by position or keyword:
        {"as_tuple": True}) pick the best; ties go to the first declared."""
        best = self._best(name, positional_count, tuple(keyword_names), is_method, arg_kinds,
                          keyword_kinds, literals)
        return best[0] if best else None

    def bind(self, name: str, positional_count: int, keyword_names: Iterable[str] = (),
             is_method: bool = False, *, arg_kinds: Optional[Sequence[Optional[str]]] = None,
             keyword_kinds: Optional[Mapping[str, Optional[str]]] = None,
             literals: Optional[Mapping[Union[int, str], Any]] = None) -> Optional[Binding]:
        """Parameter name -> where its argument is in the call, for the overload `resolve`
        picks: ("pos", i), ("kw", name), ("varpos", first index) or ("receiver", 0).
        Parameters left to their defaults are absent. None when no overload fits."""
        best = self._best(name, positional_count, tuple(keyword_names), is_method, arg_kinds,
                          keyword_kinds, literals)
        return best[1] if best else None

    def select(self, name: str, positional_count: int, keyword_names: Iterable[str] = (),
               is_method: bool = False, *, arg_kinds: Optional[Sequence[Optional[str]]] = None,
               keyword_kinds: Optional[Mapping[str, Optional[str]]] = None,
               literals: Optional[Mapping[Union[int, str], Any]] = None
               ) -> Optional[Tuple[Overload, Binding]]:
        """What `resolve` and `bind` give, at once (the walk asks both at every torch call)."""
        return self._best(name, positional_count, tuple(keyword_names), is_method, arg_kinds,
                          keyword_kinds, literals)

    def candidates(self, name: str, positional_count: int, keyword_names: Iterable[str] = (),
                   is_method: bool = False) -> Tuple[Overload, ...]:
        """Every overload that accepts the call's shape, in declared order: more than one
        means the return or a parameter's meaning depends on argument types."""
        found = self.lookup(name, is_method)
        if found is None:
            return ()
        names = tuple(keyword_names)
        return tuple(ov for ov in found.overloads
                     if _shape_bind(ov, positional_count, names, is_method) is not None)

    # -- internals

    @staticmethod
    def _method_key(name: str, owner: str) -> str:
        if name.startswith("torch."):
            name = name[len("torch."):]
        return name if "." in name else f"{owner}.{name}"

    def _record(self, key: str, table: Mapping[str, Any],
                is_method: bool) -> Optional[TorchCallable]:
        cache_key = ("m:" if is_method else "f:") + key
        if cache_key in self._cache:
            return self._cache[cache_key]
        raw = table.get(key)
        record = None
        if raw is not None:
            kind, arity, nullable = _parse_ret(raw["returns"])
            record = TorchCallable(key, kind,
                                   tuple(_overload(o, is_method) for o in raw["overloads"]),
                                   arity, nullable, raw.get("src", ""))
        self._cache[cache_key] = record
        return record

    def _best(self, name: str, npos: int, kwnames: Tuple[str, ...], is_method: bool,
              arg_kinds: Optional[Sequence[Optional[str]]],
              keyword_kinds: Optional[Mapping[str, Optional[str]]],
              literals: Optional[Mapping[Union[int, str], Any]]
              ) -> Optional[Tuple[Overload, Binding]]:
        """Memoized :meth:`_pick` (a check of transformers asks the same few thousand calls
        over 160,000 times, and resolve and bind ask each twice); the binding is shared, not
        to be changed."""
        try:
            key = (name, npos, kwnames, is_method, tuple(arg_kinds or ()),
                   tuple(sorted((keyword_kinds or {}).items())),
                   tuple(sorted((literals or {}).items(), key=lambda kv: str(kv[0]))))
            hash(key)
        except TypeError:  # a literal that is no key (a list): worked out each time
            return self._pick(name, npos, kwnames, is_method, arg_kinds, keyword_kinds, literals)
        if key not in self._picked:
            self._picked[key] = self._pick(name, npos, kwnames, is_method, arg_kinds,
                                           keyword_kinds, literals)
        return self._picked[key]

    def _pick(self, name: str, npos: int, kwnames: Tuple[str, ...], is_method: bool,
              arg_kinds: Optional[Sequence[Optional[str]]],
              keyword_kinds: Optional[Mapping[str, Optional[str]]],
              literals: Optional[Mapping[Union[int, str], Any]]
              ) -> Optional[Tuple[Overload, Binding]]:
        found = self.lookup(name, is_method)
        if found is None:
            return None
        best: Optional[Tuple[float, Overload, Binding]] = None
        for ov in found.overloads:
            binding = _shape_bind(ov, npos, kwnames, is_method)
            if binding is None:
                continue
            score = _score(ov, binding, arg_kinds or (), keyword_kinds or {}, literals or {})
            if score is None:
                continue
            if best is None or score > best[0]:
                best = (score, ov, binding)
        return (best[1], best[2]) if best else None


def _shape_bind(ov: Overload, npos: int, kwnames: Tuple[str, ...],
                is_method: bool) -> Optional[Binding]:
    """Bind by position and keyword as Python would, or None if the call cannot fit."""
    binding: Binding = {}
    positional = list(ov.positional)
    if ov.has_self and is_method:
        binding[positional[0].name] = ("receiver", 0)
        positional = positional[1:]
    varargs = ov.varargs
    if npos > len(positional) and varargs is None:
        return None
    for i, p in enumerate(positional[:npos]):
        binding[p.name] = ("pos", i)
    if npos > len(positional) and varargs is not None:
        binding[varargs.name] = ("varpos", len(positional))
    has_varkw = ov.varkw is not None
    for kw in kwnames:
        named = ov.param(kw)
        if named is None or named.kind not in (POSITIONAL, KEYWORD_ONLY):
            if has_varkw and (named is None or named.kind == POSITIONAL_ONLY):
                continue  # swallowed by **kwargs
            return None
        if named.name in binding:
            return None  # given twice
        binding[named.name] = ("kw", kw)
    for p in ov.params:
        if p.required and p.name not in binding:
            return None
    return binding


def _fit(arg_kind: Optional[str], param: Param) -> float:
    kinds = param.kinds
    if arg_kind is None or arg_kind == "other":
        return -0.25 if set(kinds) <= _RARE else 0.0
    if arg_kind in kinds:
        return 1.0
    if arg_kind == "none":
        return 1.0 if param.default == "None" else (0.0 if "other" in kinds else _MISMATCH)
    partial = max((_PARTIAL.get(arg_kind, {}).get(k, _MISMATCH) for k in kinds),
                  default=_MISMATCH)
    if partial == _MISMATCH and "other" in kinds:
        return 0.0
    return partial


def _score(ov: Overload, binding: Binding, arg_kinds: Sequence[Optional[str]],
           keyword_kinds: Mapping[str, Optional[str]],
           literals: Mapping[Union[int, str], Any]) -> Optional[float]:
    """How well the bound arguments' kinds fit; None when a known flag value rules it out."""
    score = 0.0
    for pname, (where, at) in binding.items():
        p = ov.param(pname)
        assert p is not None
        if where == "pos":
            i = int(at)
            score += _fit(arg_kinds[i] if i < len(arg_kinds) else None, p)
        elif where == "varpos":
            for kind in list(arg_kinds)[int(at):]:
                score += _fit(kind, p)
        elif where == "kw":
            score += _fit(keyword_kinds.get(str(at)), p)
    for flag, wanted in ov.when.items():
        loc = binding.get(flag)
        if loc is None:
            p = ov.param(flag)
            default = p.default_value(_UNSET) if p is not None else _UNSET
            if default is not _UNSET and default != wanted:
                return None
            continue
        key: Union[int, str] = loc[1] if loc[0] == "pos" else flag
        given = literals.get(key, _UNSET)
        if given is not _UNSET:
            if given != wanted:
                return None
            score += 2.0
    return score


def _data_path() -> Path:
    return Path(__file__).resolve().with_name("data") / DATA_FILE


def _read_data() -> str:
    """The file next to this module; through importlib.resources when installed zipped."""
    path = _data_path()
    if path.is_file():
        return path.read_text(encoding="utf-8")
    from importlib import resources

    return (resources.files("shapelint.static") / "data" / DATA_FILE).read_text(
        encoding="utf-8")


@functools.lru_cache(maxsize=None)
def load(path: Optional[str] = None) -> TorchAPI:
    """The API data shipped with shapelint (or the file at `path`), parsed once per process."""
    text = Path(path).read_text(encoding="utf-8") if path else _read_data()
    return TorchAPI(json.loads(text))
