"""What a call outside the analysed tree returns: torch's API (from the stubs torch ships, read
into ``data/torch_api.json``), builtins, ``math``, and torch.nn modules.

The kind comes from torch's own signatures (``Tensor.size()`` is a ``torch.Size``,
``Tensor.size(1)`` an int, ``Tensor.item()`` a Python number, ``Tensor.split(k)`` a tuple of
tensors); the dims from ``shapes.py``; what Dynamo does with a size from ``dynamo.py``. A call
nothing here knows returns an unknown value, which never makes a finding on its own.
"""

from __future__ import annotations

from typing import Dict, Mapping, Optional, Sequence, Tuple

from shapelint.static import dynamo, shapes
from shapelint.static.torch_api import Binding, Overload, TorchAPI, load
from shapelint.static.types import TENSOR_NAMES
from shapelint.values import (CONST_DIM, NUMBERS, UNKNOWN, Dim, DimInfo, Dims, Kind, Origin, Tag, Value, join_dims,
                              tracked)

Args = Sequence[Value]
Kwargs = Mapping[str, Value]

_API: Optional[TorchAPI] = None


def torch_api() -> TorchAPI:
    global _API
    if _API is None:
        _API = load()
    return _API


def coarse(v: Value) -> Optional[str]:
    """The coarse kind torch's signatures use, for choosing an overload."""
    k = v.kinds
    if Kind.TENSOR in k:
        return "tensor"
    if Kind.TENSORS in k:
        return "tensors"
    if Kind.SHAPE in k or (v.elems is not None and k <= {Kind.CONTAINER}):
        return "size"
    if k == {Kind.BOOL}:
        return "bool"
    if k == {Kind.INT}:
        return "int"
    if k == {Kind.FLOAT}:
        return "float"
    if k == {Kind.STR}:
        return "str"
    if k == {Kind.NONE}:
        return "none"
    return None


def choose(name: str, args: Args, kwargs: Kwargs, is_method: bool
           ) -> Optional[Tuple[Overload, Binding]]:
    """The overload of torch's ``name`` that this call selects, with where each argument is."""
    api = torch_api()
    literals: Dict = {i: a.const for i, a in enumerate(args) if a.const is not None}
    literals.update({k: v.const for k, v in kwargs.items() if v.const is not None})
    kinds = [coarse(a) for a in args]
    kw_kinds = {k: coarse(v) for k, v in kwargs.items()}
    return api.select(name, len(args), list(kwargs), is_method, arg_kinds=kinds,
                      keyword_kinds=kw_kinds, literals=literals)


def bound_values(binding: Binding, args: Args, kwargs: Kwargs,
                 receiver: Optional[Value] = None) -> Dict[str, Value]:
    """Parameter name -> value, from a binding of torch's signatures."""
    out: Dict[str, Value] = {}
    for name, (where, key) in binding.items():
        if where == "pos" and isinstance(key, int) and key < len(args):
            out[name] = args[key]
        elif where == "kw" and key in kwargs:
            out[name] = kwargs[key]  # type: ignore[index]
        elif where == "varpos" and isinstance(key, int):
            rest = args[key:]
            out[name] = rest[0] if len(rest) == 1 else Value(elems=tuple(rest))
        elif where == "receiver" and receiver is not None:
            out[name] = receiver
    return out


#: torch functions and Tensor methods whose tensor result is a boolean mask
MASK_OPS = frozenset({"eq", "ne", "gt", "ge", "lt", "le", "isnan", "isinf", "isfinite",
                      "isneginf", "isposinf", "logical_and", "logical_or", "logical_not",
                      "logical_xor", "bool", "any", "all", "isclose", "eq_", "signbit", "isin",
                      "greater", "less", "greater_equal", "less_equal", "not_equal", "equal"})
#: methods that move, copy or reshape a tensor without changing its values: a mask stays one
KEEPS_VALUES = frozenset({"to", "contiguous", "clone", "detach", "cpu", "cuda", "view", "reshape",
                          "flatten", "squeeze", "unsqueeze", "expand", "expand_as", "transpose",
                          "permute", "repeat", "t", "view_as", "reshape_as", "narrow", "select",
                          "unflatten", "movedim", "swapaxes"})
#: tensor results sized by tensor values (their dims are data-dependent)
DATA_SIZED = frozenset({"nonzero", "masked_select", "unique", "unique_consecutive", "argwhere",
                        "bincount"})


#: the tensor classes whose call builds a tensor (``torch.IntTensor([n])``, the legacy typed
#: constructors)
TENSOR_CLASSES = frozenset(f"torch.{t}" for t in TENSOR_NAMES if t.endswith("Tensor"))


def _kinds_of(ret: str) -> frozenset:
    return {
        "tensor": frozenset({Kind.TENSOR}), "tensors": frozenset({Kind.TENSORS}),
        "tensor_tuple": frozenset({Kind.TENSORS}), "int": frozenset({Kind.INT}),
        "float": frozenset({Kind.FLOAT}), "bool": frozenset({Kind.BOOL}),
        "number": frozenset({Kind.INT, Kind.FLOAT}), "size": frozenset({Kind.SHAPE}),
        "none": frozenset({Kind.NONE}), "str": frozenset({Kind.STR}),
        "dtype": frozenset({Kind.OBJECT}), "device": frozenset({Kind.OBJECT}),
    }.get(ret, frozenset())


def torch_result(name: str, short: str, args: Args, kwargs: Kwargs, origin: Origin,
                 receiver: Optional[Value] = None) -> Tuple[Value, Dict[str, Value]]:
    """What ``torch.name(...)`` (or, with ``receiver``, ``receiver.short(...)``) returns, and
    its arguments bound to torch's parameter names."""
    is_method = receiver is not None
    if not is_method and name in TENSOR_CLASSES:  # `torch.IntTensor([n])`: a new tensor
        return Value(kinds=frozenset({Kind.TENSOR}), origin=origin), {}
    picked = choose(short if is_method else name, args, kwargs, is_method)
    if picked is None:
        known = torch_api().lookup(short if is_method else name, is_method)
        if known is None:
            return UNKNOWN, {}
        ret, arity = known.returns, known.arity
        bound: Dict[str, Value] = {}
    else:
        ov, binding = picked
        ret, arity = ov.returns, ov.arity
        bound = bound_values(binding, args, kwargs, receiver)
    src = receiver if receiver is not None else (args[0] if args and args[0].is_tensor else None)
    if src is None:  # `torch.clone(input=x)`: the tensor passed by keyword
        given = bound.get("input", kwargs.get("input"))
        src = given if given is not None and given.is_tensor else None
    tensor_args = [a for a in list(args) + list(kwargs.values()) if a.is_tensor]
    if ret == "tensor":
        if (short in DATA_SIZED and short != "bincount") or (
                short == "repeat_interleave" and _tensor_repeats(args, kwargs, bound,
                                                                 receiver is not None)):
            # as many rows as the values ask for: a count that differs from call to call
            # (not bincount's: as long as its largest value, or its minlength, the number of
            # classes or experts)
            dims: Optional[Dims] = Dims((DimInfo(Dim.VARY, f"`{short}(...)` dim 0, sized by "
                                                           f"tensor values"),), (), None)
        elif short == "bincount":
            dims = Dims(rank=None)
        elif receiver is not None:
            dims = shapes.method_dims(short, receiver, args, kwargs)
        else:
            dims = shapes.function_dims(short, args, kwargs)
        mask = short in MASK_OPS or (receiver is not None and receiver.is_mask and
                                     short in KEEPS_VALUES)
        # a tensor made from Python numbers only (torch.div(n, 2), torch.tensor(n)) holds
        # what they hold: when every one is fixed, Dynamo folds it to a constant
        numbers = [a for a in list(args) + list(kwargs.values()) if a.kinds and a.kinds <= NUMBERS]
        held = join_dims(*(shapes.size_dim(a) for a in numbers)) \
            if receiver is None and numbers and not tensor_args else None
        return Value(kinds=frozenset({Kind.TENSOR}),
                     tags=frozenset({Tag.MASK}) if mask else frozenset(),
                     origin=origin, dims=dims, dim=held), bound
    if ret in ("tensors", "tensor_tuple"):
        if receiver is not None:
            item = shapes.item_dims(short, receiver, args, kwargs)
        else:
            item = shapes.item_dims(short, args[0], args[1:], kwargs) if args and args[0].is_tensor else None
        one = Value(kinds=frozenset({Kind.TENSOR}), origin=origin, dims=item)
        counted = _split_sections(short, args, kwargs, bound, receiver is not None)
        if counted is not None:  # one tensor per item of a list read from data
            return Value(kinds=frozenset({Kind.TENSORS}), tags=frozenset({Tag.DATA}),
                         origin=origin, dims=item, dim=counted.dim), bound
        if ret == "tensor_tuple" and arity:
            if short in ("max", "min", "sort", "topk", "median", "mode", "kthvalue", "cummax",
                         "cummin", "aminmax", "var_mean", "std_mean"):
                if receiver is not None:
                    d = shapes.method_dims(short, receiver, args, kwargs)
                else:
                    d = shapes.function_dims(short, args, kwargs)
                one = one.with_(dims=d)
            return Value(kinds=frozenset({Kind.TENSORS}), origin=origin,
                         elems=tuple(one for _ in range(arity))), bound
        return Value(kinds=frozenset({Kind.TENSORS}), origin=origin, dims=item), bound
    if ret == "size":
        return Value(kinds=frozenset({Kind.SHAPE}), origin=origin,
                     dims=src.dims if src is not None else None), bound
    kinds = _kinds_of(ret)
    if short == "item":
        return Value(kinds=kinds or frozenset({Kind.INT, Kind.FLOAT}),
                     tags=frozenset({Tag.DATA}), origin=origin), bound
    if short in ("tolist", "numpy") and (tensor_args or receiver is not None):
        # its length is the tensor's dim 0: a list as long as the batch varies with it
        length = shapes.dims_of(src).at(0) if src is not None else None
        return Value(kinds=frozenset({Kind.CONTAINER}), tags=frozenset({Tag.DATA}),
                     origin=origin, dim=length), bound
    if short in ("numel", "nelement") and src is not None:
        return size_value(origin, join_dims(*shapes.dims_of(src).all())), bound
    return Value(kinds=kinds), bound


def _second_argument(names: Sequence[str], args: Args, kwargs: Kwargs,
                     bound: Dict[str, Value], is_method: bool) -> Optional[Value]:
    """The argument after the tensor (``x.split(sizes)``, ``torch.split(x, sizes)``), found
    by any of its parameter ``names`` when given by keyword or bound by the overload."""
    given = next((bound[k] for k in names if k in bound), None)
    if given is None:
        given = next((kwargs[k] for k in names if k in kwargs), None)
    if given is None:
        rest = args if is_method else args[1:]
        given = rest[0] if rest else None
    return given


def _tensor_repeats(args: Args, kwargs: Kwargs, bound: Dict[str, Value], is_method: bool) -> bool:
    """``repeat_interleave`` given a tensor of repeats: its length is their sum."""
    given = _second_argument(("repeats",), args, kwargs, bound, is_method)
    return given is not None and given.is_tensor


#: ops that cut a tensor into one piece per item of a list of sizes or indices
SPLITS = frozenset({"split", "split_with_sizes", "tensor_split"})
#: the names of that list among their parameters
SECTIONS = ("split_size_or_sections", "split_size", "split_sizes", "indices_or_sections",
            "indices", "sections")


def _split_sections(short: str, args: Args, kwargs: Kwargs, bound: Dict[str, Value],
                    is_method: bool) -> Optional[Value]:
    """The list of sizes a split is given, when it was read from tensor data with a length
    that varies (``torch.split(x, grid.prod(-1).tolist())``): the split makes as many tensors
    as it has items, so their count varies as its length does."""
    if short not in SPLITS:
        return None
    given = _second_argument(SECTIONS, args, kwargs, bound, is_method)
    return given if given is not None and given.is_varying_list else None


#: the outputs of a library model (transformers' ModelOutput) that are (batch, sequence,
#: hidden) whatever the model: its batch and sequence dims vary as its inputs' do
SEQUENCE_OUTPUTS = frozenset({"last_hidden_state", "encoder_last_hidden_state"})


def sequence_output(attr: str, origin: Origin) -> Value:
    """``model(...).last_hidden_state`` of a model the walk cannot see into."""
    return Value(kinds=frozenset({Kind.TENSOR}), origin=origin, dims=Dims.of(
        DimInfo(Dim.VARY, f"`.{attr}` dim 0, a library model's batch"),
        DimInfo(Dim.VARY, f"`.{attr}` dim 1, a library model's sequence"), CONST_DIM))


def size_value(origin: Optional[Origin], dim: Optional[DimInfo], direct: bool = False) -> Value:
    return Value(kinds=frozenset({Kind.INT}), tags=frozenset({Tag.SIZE}), origin=origin,
                 dim=dim, direct=direct)


def tensor_method(recv: Value, method: str, args: Args, kwargs: Kwargs, origin: Origin
                  ) -> Tuple[Value, Dict[str, Value]]:
    """``recv.method(...)`` for a tensor ``recv``."""
    if method == "size":
        d = args[0] if args else kwargs.get("dim")
        if d is not None:
            idx = d.const if isinstance(d.const, int) else None
            dim = shapes.dims_of(recv).at(idx) if idx is not None else None
            return size_value(origin, dim, direct=True).with_(carriers=(recv,)), {"dim": d}
        return Value(kinds=frozenset({Kind.SHAPE}), origin=origin, dims=recv.dims,
                     carriers=(recv,)), {}
    return torch_result(f"Tensor.{method}", method, args, kwargs, origin, receiver=recv)


def tensor_attribute(recv: Value, attr: str, origin: Origin) -> Value:
    """``recv.attr`` for a tensor ``recv``."""
    if attr == "shape":
        return Value(kinds=frozenset({Kind.SHAPE}), origin=origin, dims=recv.dims,
                     carriers=(recv,))
    if attr in ("T", "mT", "H", "mH"):
        d = shapes.dims_of(recv)
        dims = Dims.of(*reversed(d.front)) if d.rank is not None and d.rank <= 2 else None
        if attr in ("mT", "mH"):
            dims = shapes.METHODS["transpose"](d, [_int(-2), _int(-1)], {}, recv)
        return Value(kinds=frozenset({Kind.TENSOR}), origin=recv.origin, dims=dims)
    if attr in ("data", "grad", "real", "imag"):
        return Value(kinds=frozenset({Kind.TENSOR}), origin=recv.origin, dims=recv.dims)
    if attr == "ndim":
        return Value(kinds=frozenset({Kind.INT}))
    found = torch_api().attribute(attr)
    if found is None:
        return UNKNOWN
    return Value(kinds=_kinds_of(found.returns))


def _int(n: int) -> Value:
    return Value(kinds=frozenset({Kind.INT}), const=n)


def module_result(cls: str, args: Args, kwargs: Kwargs, origin: Origin) -> Value:
    """Calling a torch.nn module (a class outside the tree, by qualified name)."""
    last = cls.rsplit(".", 1)[-1]
    if last in ("LSTM", "GRU", "RNN", "MultiheadAttention"):
        # (output, state) / (output, weights): the output keeps the query's (input's) leading
        # dims, with a feature dim fixed by the module
        dims = shapes.dims_of(args[0]).with_last(CONST_DIM) if args else None
        out = Value(kinds=frozenset({Kind.TENSOR}), origin=origin, dims=dims)
        return Value(kinds=frozenset({Kind.TENSORS}), origin=origin, elems=(out, UNKNOWN))
    if last in ("ModuleList", "ModuleDict", "ParameterList", "ParameterDict"):
        return UNKNOWN
    return Value(kinds=frozenset({Kind.TENSOR}), origin=origin,
                 dims=shapes.module_dims(cls, args, kwargs))


def builtin_result(name: str, args: Args, kwargs: Kwargs, origin: Origin) -> Value:
    """Builtins and ``math``: what they return, and what becomes of a size passed to them."""
    first = args[0] if args else UNKNOWN
    if name == "len":
        if first.is_tensor:
            return size_value(origin, shapes.dims_of(first).at(0), direct=True)
        if first.is_state:
            return Value(kinds=frozenset({Kind.INT}), tags=frozenset({Tag.STATE}), origin=first.origin)
        if first.is_shape:
            return Value(kinds=frozenset({Kind.INT}))  # the rank
        return Value(kinds=frozenset({Kind.INT}))
    if name in ("int", "float", "bool", "round"):
        kind = {"int": Kind.INT, "float": Kind.FLOAT, "bool": Kind.BOOL, "round": Kind.INT}[name]
        if first.is_tensor:  # reads a value: a graph break
            return Value(kinds=frozenset({kind}), tags=frozenset({Tag.DATA}), origin=origin)
        return Value(kinds=frozenset({kind}), tags=first.tags & _KEPT, origin=first.origin,
                     dim=first.dim, const=_convert(kind, first.const))
    if name in ("str", "repr", "format"):
        return Value(kinds=frozenset({Kind.STR}))
    if name in ("min", "max", "abs", "sum", "divmod", "pow"):
        merged = tracked(*args)
        if merged.is_tensor:
            return Value(kinds=frozenset({Kind.TENSOR}), origin=origin, dims=merged.dims)
        if name in ("sum",) and first.has(Kind.TENSORS):
            return Value(kinds=frozenset({Kind.TENSOR}), origin=origin)
        return _number(merged)
    if name == "range":
        merged = tracked(*args)
        return Value(kinds=frozenset({Kind.RANGE}), tags=merged.tags & _KEPT,
                     origin=merged.origin, dim=merged.dim)
    if name == "zip":
        return Value(kinds=frozenset({Kind.CONTAINER}), detail="zip", elems=tuple(args))
    if name == "enumerate":
        return Value(kinds=frozenset({Kind.CONTAINER}), detail="enumerate", elems=tuple(args[:1]))
    if name in ("list", "tuple", "reversed", "sorted", "iter"):
        if first.is_tensor:
            return Value(kinds=frozenset({Kind.TENSORS}), origin=first.origin)
        return first
    if name in ("isinstance", "hasattr", "callable", "issubclass", "all", "any"):
        return Value(kinds=frozenset({Kind.BOOL}))
    if name in ("dict", "set", "frozenset"):
        return Value(kinds=frozenset({Kind.CONTAINER}))
    if name.startswith("math."):
        effect = dynamo.size_function(name)
        if first.is_tensor:
            return Value(kinds=frozenset({Kind.FLOAT}), tags=frozenset({Tag.DATA}), origin=origin)
        if effect is dynamo.Effect.SYMBOLIC:
            return _number(tracked(*args))
        return Value(kinds=frozenset({Kind.FLOAT}))  # a concrete number from here on
    return UNKNOWN


_KEPT = frozenset({Tag.SIZE, Tag.SCALAR, Tag.STATE, Tag.DATA, Tag.GLOBAL, Tag.INSTANCE})


def _number(v: Value) -> Value:
    kinds = v.kinds & {Kind.INT, Kind.FLOAT} or frozenset({Kind.INT})
    return Value(kinds=kinds, tags=v.tags & _KEPT, origin=v.origin, dim=v.dim)


def _convert(kind: Kind, const):
    if const is None or isinstance(const, str):
        return None
    try:
        return {Kind.INT: int, Kind.FLOAT: float, Kind.BOOL: bool}[kind](const)
    except (TypeError, ValueError, KeyError):
        return None
