"""The dims model: which dims of a tensor vary between calls, followed through torch ops.

A compiled entry's inputs vary along known dims (batch, sequence; see ``regions.py``); the
rest of a region's tensors get their dims from the ops that make them: ``nn.Linear`` fixes
the last dim, ``nn.Embedding`` appends a fixed one, ``view(b, t, h, d)`` takes each dim from
its argument, ``transpose`` swaps two, a reduction drops one. A size read from a dim that
varies makes a recompile hazard where it steers control flow; the same code on a dim fixed by
a parameter costs nothing. Where an op is not modelled the dims are unknown, and an unknown
dim never makes a finding on its own.
"""

from __future__ import annotations

import re
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from shapelint.values import (CONST_DIM, SEQUENCES, UNKNOWN_DIM, UNKNOWN_DIMS, Dim, DimInfo, Dims,
                              Kind, Value, join_dims)

Args = Sequence[Value]
Kwargs = Mapping[str, Value]
Handler = Callable[[Dims, Args, Kwargs, Value], Optional[Dims]]


def dims_of(v: Optional[Value]) -> Dims:
    """A tensor value's dims (unknown when nothing is known)."""
    if v is None or v.dims is None:
        return Dims()
    return v.dims


def size_dim(v: Optional[Value]) -> DimInfo:
    """The dim a Python number used as a size stands for: a size read from a tensor keeps
    its dim; a literal and module state (``self.head_dim``) are constant."""
    if v is None:
        return UNKNOWN_DIM
    if v.dim is not None:
        return v.dim
    if isinstance(v.const, int) and not isinstance(v.const, bool):
        return CONST_DIM
    if v.is_state and not v.is_tensor:
        return CONST_DIM
    return UNKNOWN_DIM


def _int_const(v: Optional[Value]) -> Optional[int]:
    if v is None:
        return None
    c = v.const
    return c if isinstance(c, int) and not isinstance(c, bool) else None


def _arg(args: Args, kwargs: Kwargs, index: int, *names: str) -> Optional[Value]:
    for n in names:
        if n in kwargs:
            return kwargs[n]
    return args[index] if index < len(args) else None


def _size_list(args: Args, kwargs: Kwargs, start: int = 0, key: str = "size") -> Optional[List[Value]]:
    """The sizes of ``zeros(2, 3)``, ``zeros((2, 3))``, ``view(*shape)`` or ``size=...``."""
    if key in kwargs:
        v = kwargs[key]
        return list(v.elems) if v.elems is not None else None
    rest = list(args[start:])
    if len(rest) == 1 and rest[0].elems is not None:
        return list(rest[0].elems)
    if len(rest) == 1 and rest[0].is_shape and rest[0].dims is not None and rest[0].dims.rank is not None:
        return [Value(kinds=frozenset({Kind.INT}), dim=d) for d in rest[0].dims.front]
    if any(a.is_shape or a.elems is not None for a in rest):
        return None
    return rest


def _from_sizes(sizes: Optional[List[Value]], src: Optional[Dims] = None) -> Optional[Dims]:
    """Dims of a tensor made to the given sizes; ``-1`` takes what the other sizes leave of
    ``src`` (it varies when a dim of ``src`` varies and every other size is constant)."""
    if sizes is None:
        return None
    dims: List[DimInfo] = []
    for s in sizes:
        if _int_const(s) == -1:
            dims.append(UNKNOWN_DIM)  # filled below
        else:
            dims.append(size_dim(s))
    if src is not None:
        holes = [i for i, s in enumerate(sizes) if _int_const(s) == -1]
        if len(holes) == 1:
            varying = [d for d in src.all() if d.state is Dim.VARY]
            others = [d for i, d in enumerate(dims) if i not in holes]
            if varying and all(d.state is Dim.CONST for d in others):
                dims[holes[0]] = varying[0]
            elif src.rank is not None and all(d.state is Dim.CONST for d in src.front):
                dims[holes[0]] = CONST_DIM
    return Dims.of(*dims)


def _norm_dim(d: Optional[int], rank: Optional[int]) -> Optional[int]:
    if d is None:
        return None
    if d < 0 and rank is not None:
        return d + rank
    return d


# -- handlers: (dims of the receiver/first tensor, other args, kwargs, receiver) -> dims ---------


def _same(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    return x


def _broadcast(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    others = [a for a in args if a.is_tensor]
    out = x
    for o in others:
        out = broadcast(out, dims_of(o))
    return out


def broadcast(a: Dims, b: Dims) -> Dims:
    """Dims of ``a op b`` under broadcasting (aligned from the right)."""
    if b.rank == 0:
        return a
    if a.rank == 0:
        return b
    # one side unknown: the other's trailing dims (not its rank), unless those are a
    # weight's (all fixed, any rank), which say nothing of the activations they scale
    # (`alpha * residual`)
    if b == UNKNOWN_DIMS:
        return b if _fixed_any_rank(a) else _trailing(a)
    if a == UNKNOWN_DIMS:
        return a if _fixed_any_rank(b) else _trailing(b)
    if a.rank is not None and b.rank is not None:
        n = max(a.rank, b.rank)
        out = []
        for i in range(-n, 0):
            da = a.at(i) if -i <= a.rank else None
            db = b.at(i) if -i <= b.rank else None
            if da is None or db is None:
                out.append(da or db or UNKNOWN_DIM)
            else:
                out.append(_bcast_one(da, db))
        return Dims.of(*out)
    # a rank unknown. A dim that varies on either side varies in the result (torch guards an
    # operand's fixed dim equal only where it is not 1: a weight broadcast against
    # activations, `self.weight * x` in every RMSNorm, leaves the activations' dims as they
    # are); a side of known rank gives the result its rank (a weight has no more dims than
    # what it scales), and a weight's fixed dims of unknown rank (all-const) add nothing
    if _fixed_any_rank(b):
        return a
    if _fixed_any_rank(a):
        return b
    if a.rank is None and b.rank is None:
        n = max(len(a.back), len(b.back))
        back = tuple(_bcast_one(a.at(i), b.at(i)) for i in range(-n, 0))
        front = a.front if len(a.front) >= len(b.front) else b.front
        return Dims(front, back, None)
    known, other = (a, b) if a.rank is not None else (b, a)
    rank = known.rank or 0
    return Dims.of(*(_bcast_one(known.at(i), other.at(i)) for i in range(-rank, 0)))


def _trailing(d: Dims) -> Dims:
    """What ``d op unknown`` keeps of ``d``: broadcasting aligns from the right, so a side of
    known rank gives the result its trailing dims, not its rank (``inputs_embeds + pos`` with
    ``pos`` a (seq, hidden) table has the activations' rank, not the table's)."""
    if d.rank is None:
        return d
    return Dims((), d.front, None)


def _fixed_any_rank(d: Dims) -> bool:
    """A parameter's or buffer's dims: fixed, whatever its rank."""
    return d.rank is None and bool(d.front) and \
        all(x.state is Dim.CONST for x in d.front + d.back)


def _bcast_one(a: DimInfo, b: DimInfo) -> DimInfo:
    if a.state is Dim.VARY:
        return a
    if b.state is Dim.VARY:
        return b
    if a.state is Dim.CONST and b.state is Dim.CONST:
        return a
    return UNKNOWN_DIM


def _linear(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    return x.with_last(CONST_DIM)


def _embedding(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    if x.rank is not None:
        return Dims.of(*(x.front + (CONST_DIM,)))
    return Dims(x.front, x.back + (CONST_DIM,), None)


def _conv(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    """(N, C, *spatial): channels fixed by the weight, spatial dims follow the input."""
    if x.rank is not None and x.rank >= 2:
        return Dims.of(x.front[0], CONST_DIM, *x.front[2:])
    return Dims((x.at(0), CONST_DIM) + x.front[2:], (), None)


def _conv2d(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    """A 2-D convolution: (N, C, H, W). An entry's input whose height and width nothing
    decided is an image here, and an image's sides vary between calls as its batch does (a
    model that takes images takes them at the sizes they come in); the output's sides follow
    the input's."""
    if x.rank is not None and x.rank != 4:
        return _conv(x, args, kwargs, recv)
    h, w = (x.front[2], x.front[3]) if x.rank is not None else (x.at(-2), x.at(-1))
    h, w = image_side(h), image_side(w)
    return Dims.of(x.at(0), CONST_DIM, h, w) if x.rank is not None else \
        Dims((x.at(0), CONST_DIM), (h, w), None)


def image_side(d: DimInfo) -> DimInfo:
    """An entry input's trailing dim that nothing decided, taken by a 2-D convolution: an
    image side, which varies between calls as the batch does."""
    if d.state is Dim.UNKNOWN and d.side:
        return DimInfo(Dim.VARY, f"{d.label}, an image side (a 2-D convolution takes it)")
    return d


def _pool_to_one(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    if x.rank is not None and x.rank >= 2:
        return Dims.of(x.front[0], x.front[1], *([CONST_DIM] * (x.rank - 2)))
    return Dims(x.front[:2], (), None)


def _view(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    sizes = _size_list(args, kwargs, 0, "size") if "shape" not in kwargs else \
        _size_list([], {"size": kwargs["shape"]})
    return _from_sizes(sizes, x)


def _expand(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    sizes = _size_list(args, kwargs, 0, "size")
    if sizes is None:
        return None
    n = len(sizes)
    out = []
    for i, s in enumerate(sizes):
        if _int_const(s) == -1:
            out.append(x.at(i - n) if x.rank is None or x.rank >= n - i else UNKNOWN_DIM)
        else:
            out.append(size_dim(s))
    return Dims.of(*out)


def _repeat(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    sizes = _size_list(args, kwargs, 0, "repeats")
    if sizes is None or x.rank is None or len(sizes) < x.rank:
        return None
    lead = len(sizes) - x.rank
    out = [size_dim(s) for s in sizes[:lead]]
    for i in range(x.rank):
        out.append(join_dims(x.front[i], size_dim(sizes[lead + i])))
    return Dims.of(*out)


def _new_sized(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    return _from_sizes(_size_list(args, kwargs, 0, "size"))


def _new_full(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    size = _arg(args, kwargs, 0, "size")
    return _from_sizes(list(size.elems)) if size is not None and size.elems is not None else None


def _transpose(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    a = _int_const(_arg(args, kwargs, 0, "dim0"))
    b = _int_const(_arg(args, kwargs, 1, "dim1"))
    if a is None or b is None:
        return None
    if x.rank is not None:
        a, b = _norm_dim(a, x.rank), _norm_dim(b, x.rank)
        if a is None or b is None or not (0 <= a < x.rank and 0 <= b < x.rank):
            return None
        dims = list(x.front)
        dims[a], dims[b] = dims[b], dims[a]
        return Dims.of(*dims)
    if a >= 0 and b >= 0 and max(a, b) < len(x.front):
        dims = list(x.front)
        dims[a], dims[b] = dims[b], dims[a]
        return Dims(tuple(dims), x.back, None)
    if a < 0 and b < 0 and max(-a, -b) <= len(x.back):
        dims = list(x.back)
        dims[a], dims[b] = dims[b], dims[a]
        return Dims(x.front, tuple(dims), None)
    if (a >= 0) != (b >= 0):
        # ``transpose(-1, 1)`` of a tensor of unknown rank: the rank is over ``pos`` and at
        # least ``-neg``, so the negative dim sits at ``pos + 1 + neg`` or later, and the dims
        # before both stay where they were
        pos, neg = (a, b) if a >= 0 else (b, a)
        return Dims(x.front[:min(pos, max(pos + 1 + neg, 0))], (), None)
    return Dims(x.front[:min(a, b)] if a >= 0 and b >= 0 else (), (), None)


def _t(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    if x.rank is not None and x.rank <= 2:
        return Dims.of(*reversed(x.front))
    return None


def _permute(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    order = _size_list(args, kwargs, 0, "dims")
    if order is None:
        return None
    idx = [_int_const(o) for o in order]
    if any(i is None for i in idx):
        return None
    rank = x.rank if x.rank is not None else len(idx)
    out = []
    for i in idx:
        j = _norm_dim(i, rank)
        out.append(x.at(j) if j is not None else UNKNOWN_DIM)
    return Dims.of(*out)


def _unsqueeze(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    d = _int_const(_arg(args, kwargs, 0, "dim"))
    if d is None:
        return None
    if x.rank is not None:
        d = d + x.rank + 1 if d < 0 else d
        if not 0 <= d <= x.rank:
            return None
        return Dims.of(*(x.front[:d] + (CONST_DIM,) + x.front[d:]))
    if d >= 0 and d <= len(x.front):
        return Dims(x.front[:d] + (CONST_DIM,) + x.front[d:], x.back, None)
    if d < 0 and -d - 1 <= len(x.back):
        k = len(x.back) + d + 1
        return Dims(x.front, x.back[:k] + (CONST_DIM,) + x.back[k:], None)
    return Dims(x.front if d >= 0 else x.front, (), None)


def _squeeze(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    d = _int_const(_arg(args, kwargs, 0, "dim"))
    return _drop(x, d) if d is not None else None


def _drop(x: Dims, d: int) -> Dims:
    if x.rank is not None:
        d = _norm_dim(d, x.rank)  # type: ignore[assignment]
        if d is None or not 0 <= d < x.rank:
            return Dims()
        return Dims.of(*(x.front[:d] + x.front[d + 1:]))
    if d >= 0:
        return Dims(x.front[:d] + x.front[d + 1:] if d < len(x.front) else x.front[:d], x.back, None)
    if -d <= len(x.back):
        k = len(x.back) + d
        return Dims(x.front, x.back[:k] + x.back[k + 1:], None)
    return Dims(x.front, (), None)


def _select(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    d = _int_const(_arg(args, kwargs, 0, "dim"))
    return _drop(x, d) if d is not None else None


def _flatten(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    start = _int_const(_arg(args, kwargs, 0, "start_dim"))
    end = _int_const(_arg(args, kwargs, 1, "end_dim"))
    start = 0 if start is None and not args and "start_dim" not in kwargs else start
    end = -1 if end is None and len(args) < 2 and "end_dim" not in kwargs else end
    if start is None or end is None:
        return None
    if x.rank is not None:
        s, e = _norm_dim(start, x.rank), _norm_dim(end, x.rank)
        if s is None or e is None or s > e:
            return None
        merged = join_dims(*x.front[s:e + 1])
        return Dims.of(*(x.front[:s] + (merged,) + x.front[e + 1:]))
    if start >= 0 and end == -1:  # the rank is start + 1 whatever the input's
        lead = tuple(x.front[:start]) + (UNKNOWN_DIM,) * max(0, start - len(x.front))
        return Dims.of(*(lead + (join_dims(*(x.front[start:] + (UNKNOWN_DIM,) + x.back)),)))
    return Dims(x.front[:start] if start >= 0 else (), (), None)


def _unflatten(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    d = _int_const(_arg(args, kwargs, 0, "dim"))
    sizes = _arg(args, kwargs, 1, "sizes")
    if d is None or sizes is None or sizes.elems is None or x.rank is None:
        return None
    d = _norm_dim(d, x.rank)
    if d is None or not 0 <= d < x.rank:
        return None
    new = _from_sizes(list(sizes.elems), Dims.of(x.front[d]))
    return Dims.of(*(x.front[:d] + (new.front if new else ()) + x.front[d + 1:]))


def _reduce(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    dim = _arg(args, kwargs, 0, "dim", "axis")
    keep = _arg(args, kwargs, 1, "keepdim", "keepdims")
    keepdim = bool(keep is not None and keep.const is True)
    if dim is None:
        return Dims.of()
    ds = [_int_const(e) for e in dim.elems] if dim.elems is not None else [_int_const(dim)]
    if any(d is None for d in ds):
        return Dims(x.front[:1], (), None) if all((d or 0) > 0 for d in ds) else None
    if keepdim:
        out = x
        for d in ds:
            out = _replace(out, d, CONST_DIM)  # type: ignore[arg-type]
        return out
    out = x
    for d in sorted(ds, key=lambda v: -(v if v >= 0 else 1000 + v)):  # type: ignore[operator]
        out = _drop(out, d)  # type: ignore[arg-type]
    return out


def _replace(x: Dims, d: int, new: DimInfo) -> Dims:
    if x.rank is not None:
        d2 = _norm_dim(d, x.rank)
        if d2 is None or not 0 <= d2 < x.rank:
            return x
        dims = list(x.front)
        dims[d2] = new
        return Dims.of(*dims)
    if 0 <= d < len(x.front):
        dims = list(x.front)
        dims[d] = new
        return Dims(tuple(dims), x.back, None)
    if d < 0 and -d <= len(x.back):
        dims = list(x.back)
        dims[d] = new
        return Dims(x.front, tuple(dims), None)
    return x


def _narrow(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    d = _int_const(_arg(args, kwargs, 0, "dim"))
    length = _arg(args, kwargs, 2, "length")
    if d is None:
        return None
    return _replace(x, d, size_dim(length))


def _index_select(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    d = _int_const(_arg(args, kwargs, 0, "dim"))
    idx = _arg(args, kwargs, 1, "index")
    if d is None:
        return None
    return _replace(x, d, dims_of(idx).at(0))


def _gather(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    idx = _arg(args, kwargs, 1, "index")
    return dims_of(idx) if idx is not None else None


def _matmul(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    other = _arg(args, kwargs, 0, "other", "mat2", "vec")
    if other is None:
        return None
    return matmul(x, dims_of(other))


def matmul(a: Dims, b: Dims) -> Dims:
    last = b.at(-1) if (b.rank is None or b.rank >= 2) else None
    if a.rank is not None:
        if a.rank < 1:
            return Dims()
        lead = a.front[:-1]
        if b.rank is not None and b.rank > 2 and a.rank >= 2:  # batch dims broadcast
            batch = broadcast(Dims.of(*a.front[:-2]), Dims.of(*b.front[:-2]))
            lead = batch.front + a.front[-2:-1]
        return Dims.of(*(lead + ((last,) if last is not None else ())))
    return Dims(a.front, (last,) if last is not None else (), None)


def _sdpa(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    value = _arg(args, kwargs, 1, "value")
    return x.with_last(dims_of(value).at(-1)) if value is not None else x


def _pad(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    pad = _arg(args, kwargs, 0, "pad")
    if pad is None or pad.elems is None:
        return Dims(x.front[:1], (), x.rank) if x.rank is None else \
            Dims.of(*[d if d.state is Dim.VARY else UNKNOWN_DIM for d in x.front])
    n = len(pad.elems) // 2
    out = x
    for i in range(n):
        before, after = pad.elems[2 * i], pad.elems[2 * i + 1]
        d = -(i + 1)
        out = _replace(out, d, join_dims(x.at(d), size_dim(before), size_dim(after)))
    return out


def _interpolate(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    size = _arg(args, kwargs, 0, "size")
    if x.rank is None or x.rank < 3:
        return Dims(x.front[:2], (), None)
    spatial: Tuple[DimInfo, ...]
    if size is not None and size.const is not None:
        spatial = tuple(CONST_DIM for _ in x.front[2:])
    elif size is not None and size.elems is not None:
        spatial = tuple(size_dim(e) for e in size.elems)
    elif size is not None and size.dim is not None:
        spatial = tuple(size.dim for _ in x.front[2:])
    else:  # scale_factor: follows the input
        spatial = x.front[2:]
    return Dims.of(*(x.front[:2] + spatial))


def _one_hot(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    n = _arg(args, kwargs, 0, "num_classes")
    emb = _embedding(x, args, kwargs, recv)
    return emb.with_last(size_dim(n) if n is not None else UNKNOWN_DIM) if emb is not None else None


def _topk(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    k = _arg(args, kwargs, 0, "k")
    d = _int_const(_arg(args, kwargs, 1, "dim"))
    return _replace(x, -1 if d is None else d, size_dim(k))


def _split_elems(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    """One chunk of split/chunk: the split dim is unknown, the others are kept."""
    d = _int_const(_arg(args, kwargs, 1, "dim"))
    return _replace(x, 0 if d is None else d, UNKNOWN_DIM)


def _unbind_elem(x: Dims, args: Args, kwargs: Kwargs, recv: Value) -> Optional[Dims]:
    d = _int_const(_arg(args, kwargs, 0, "dim"))
    return _drop(x, 0 if d is None else d)


SAME = ("abs", "neg", "relu", "relu_", "gelu", "silu", "sigmoid", "tanh", "exp", "log", "log1p",
        "sqrt", "rsqrt", "float", "half", "double", "bfloat16", "int", "long", "bool", "byte",
        "to", "type", "type_as", "contiguous", "clone", "detach", "detach_", "cpu", "cuda",
        "requires_grad_", "masked_fill", "masked_fill_", "clamp", "clamp_", "clip", "clamp_min",
        "clamp_max", "softmax", "log_softmax", "dropout", "sin", "cos", "erf", "sign", "round",
        "floor", "ceil", "triu", "tril", "cumsum", "cumprod", "flip", "roll", "fill_", "zero_",
        "copy_", "mul_", "add_", "sub_", "div_", "pow", "square", "reciprocal", "nan_to_num",
        "sigmoid_", "tanh_", "exp_", "normal_", "uniform_", "bernoulli", "logical_not",
        "softplus", "mish", "hardswish", "hardsigmoid", "leaky_relu", "elu", "selu", "glu",
        "layer_norm", "group_norm", "batch_norm", "instance_norm", "normalize", "rms_norm",
        "silu_", "gelu_", "pin_memory", "float_", "retain_grad", "view_as_real", "clamp_min_",
        "isnan", "isinf", "isfinite", "logit", "neg_", "abs_", "trunc", "frac", "angle",
        "conj", "resolve_conj", "resolve_neg", "sort", "argsort", "index_fill", "index_fill_",
        "scatter", "scatter_", "scatter_add", "scatter_add_", "index_add", "index_add_",
        "index_copy", "index_copy_", "masked_scatter", "masked_scatter_", "lerp", "addcmul",
        "addcdiv", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
        "threshold", "hardtanh", "relu6", "celu", "prelu", "rrelu", "tanhshrink", "softsign",
        "local_response_norm", "rotary", "apply_rotary_pos_emb")
BINARY = ("add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod",
          "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
          "logical_xor", "bitwise_and", "bitwise_or", "where", "atan2", "hypot", "mul_",
          "add_", "pow", "masked_fill", "xlogy", "copysign")
REDUCE = ("sum", "mean", "amax", "amin", "prod", "std", "var", "norm", "logsumexp", "any",
          "all", "count_nonzero", "argmax", "argmin", "nansum", "nanmean", "median", "mode",
          "max", "min", "std_mean", "var_mean", "aminmax")

METHODS: Dict[str, Handler] = {}
for _n in SAME:
    METHODS[_n] = _same
for _n in BINARY:
    METHODS[_n] = _broadcast
for _n in REDUCE:
    METHODS[_n] = _reduce
METHODS.update({
    "view": _view, "reshape": _view, "expand": _expand, "broadcast_to": _expand,
    "repeat": _repeat, "new_zeros": _new_sized, "new_ones": _new_sized, "new_empty": _new_sized,
    "new_full": _new_full, "transpose": _transpose, "swapaxes": _transpose,
    "swapdims": _transpose, "t": _t, "permute": _permute, "unsqueeze": _unsqueeze,
    "squeeze": _squeeze, "select": _select, "flatten": _flatten, "unflatten": _unflatten,
    "narrow": _narrow, "index_select": _index_select, "gather": _gather, "matmul": _matmul,
    "bmm": _matmul, "mm": _matmul, "topk": _topk, "linear": _linear, "embedding": _embedding,
    "view_as": lambda x, a, k, r: dims_of(_arg(a, k, 0, "other")),
    "reshape_as": lambda x, a, k, r: dims_of(_arg(a, k, 0, "other")),
    "expand_as": lambda x, a, k, r: dims_of(_arg(a, k, 0, "other")),
    "scaled_dot_product_attention": _sdpa, "pad": _pad, "interpolate": _interpolate,
    "upsample": _interpolate, "one_hot": _one_hot, "conv1d": _conv, "conv2d": _conv2d,
    "conv3d": _conv, "conv_transpose1d": _conv, "conv_transpose2d": _conv2d,
    "conv_transpose3d": _conv, "adaptive_avg_pool1d": _pool_to_one,
    "adaptive_avg_pool2d": _pool_to_one, "adaptive_max_pool2d": _pool_to_one,
    "avg_pool1d": _same, "avg_pool2d": _same, "max_pool1d": _same, "max_pool2d": _same,
    "max_pool3d": _same, "avg_pool3d": _same, "pixel_shuffle": _same,
})
#: ops whose result is a sequence of tensors, with the dims of one item
ITEM_METHODS: Dict[str, Handler] = {"split": _split_elems, "chunk": _split_elems,
                                    "tensor_split": _split_elems, "unbind": _unbind_elem}

#: nn module classes by last name -> dims of ``module(x)``
MODULES: Dict[str, Handler] = {
    "Linear": _linear, "LazyLinear": _linear, "Bilinear": _linear, "Embedding": _embedding,
    "Conv1d": _conv, "Conv2d": _conv2d, "Conv3d": _conv, "ConvTranspose1d": _conv,
    "ConvTranspose2d": _conv2d, "ConvTranspose3d": _conv, "LazyConv2d": _conv2d,
    "AdaptiveAvgPool1d": _pool_to_one, "AdaptiveAvgPool2d": _pool_to_one,
    "AdaptiveMaxPool2d": _pool_to_one, "Flatten": _flatten,
}
for _n in ("LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
           "InstanceNorm1d", "InstanceNorm2d", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
           "AlphaDropout", "Identity", "ReLU", "ReLU6", "GELU", "SiLU", "Tanh", "Sigmoid",
           "Softmax", "LogSoftmax", "LeakyReLU", "ELU", "Mish", "Hardswish", "Hardsigmoid",
           "PReLU", "Softplus", "SELU", "CELU", "GLU", "MaxPool1d", "MaxPool2d", "MaxPool3d",
           "AvgPool1d", "AvgPool2d", "AvgPool3d", "Upsample", "PixelShuffle", "ZeroPad2d",
           "ConstantPad2d", "ReflectionPad2d", "ReplicationPad2d", "SyncBatchNorm",
           "LocalResponseNorm", "Hardtanh", "Threshold", "QuickGELU",
           # torch's transformer blocks give back the shape of their src / tgt
           "TransformerEncoder", "TransformerEncoderLayer", "TransformerDecoder",
           "TransformerDecoderLayer"):
    MODULES[_n] = _same


def method_dims(name: str, recv: Value, args: Args, kwargs: Kwargs) -> Optional[Dims]:
    """Dims of ``recv.name(*args, **kwargs)`` for a tensor ``recv`` (None: not modelled)."""
    h = METHODS.get(name)
    if h is None:
        if name.endswith("_") and name[:-1] in METHODS:  # in-place: the receiver's dims
            return dims_of(recv)
        return None
    try:
        return h(dims_of(recv), args, kwargs, recv)
    except (IndexError, TypeError, ValueError):
        return None


def item_dims(name: str, recv: Value, args: Args, kwargs: Kwargs) -> Optional[Dims]:
    h = ITEM_METHODS.get(name)
    if h is None:
        return None
    try:
        return h(dims_of(recv), args, kwargs, recv)
    except (IndexError, TypeError, ValueError):
        return None


def module_dims(cls_name: str, args: Args, kwargs: Kwargs) -> Optional[Dims]:
    """Dims of ``module(x)`` for a torch.nn module class (by its last name)."""
    h = MODULES.get(cls_name.rsplit(".", 1)[-1])
    if h is None or not args:
        return None
    try:
        return h(dims_of(args[0]), args[1:], kwargs, args[0])
    except (IndexError, TypeError, ValueError):
        return None


#: torch functions that make a tensor from sizes
FACTORIES = frozenset({"zeros", "ones", "empty", "randn", "rand", "empty_strided"})


def function_dims(name: str, args: Args, kwargs: Kwargs) -> Optional[Dims]:
    """Dims of ``torch.name(...)`` / ``F.name(...)`` (None: not modelled)."""
    if name in FACTORIES:
        return _from_sizes(_size_list(args, kwargs, 0, "size"))
    if name == "full":
        size = _arg(args, kwargs, 0, "size")
        return _from_sizes(list(size.elems)) if size is not None and size.elems is not None else None
    if name == "randint":
        size = kwargs.get("size") or next((a for a in args if a.elems is not None), None)
        return _from_sizes(list(size.elems)) if size is not None and size.elems is not None else None
    if name in ("zeros_like", "ones_like", "empty_like", "rand_like", "randn_like", "full_like",
                "randint_like"):
        src = _arg(args, kwargs, 0, "input")
        return dims_of(src) if src is not None else None
    if name == "arange":
        nums = [a for a in args if not a.is_tensor][:3] or list(kwargs.values())[:1]
        if not nums:
            return None
        if len(nums) >= 2:  # arange(start, end[, step]): end - start
            return Dims.of(join_dims(size_dim(nums[0]), size_dim(nums[1]),
                                     *(size_dim(n) for n in nums[2:])))
        return Dims.of(size_dim(nums[0]))
    if name in ("cat", "concat", "concatenate"):
        return _cat(args, kwargs)
    if name == "stack":
        seq = _arg(args, kwargs, 0, "tensors")
        d = _int_const(_arg(args, kwargs, 1, "dim")) or 0
        rows = sequence_length(seq) if seq is not None and seq.elems is None and d == 0 else None
        if rows is not None:  # one row per item of a grown list, each an item's dims
            item = dims_of(seq)
            return Dims((rows,) + item.front, item.back, None if item.rank is None else item.rank + 1)
        if seq is None or seq.elems is None or not seq.elems:
            return None
        first = dims_of(seq.elems[0])
        if first.rank is None:
            return Dims(first.front[:d] + (CONST_DIM,) + first.front[d:], first.back, None) \
                if d >= 0 else None
        d = d + first.rank + 1 if d < 0 else d
        return Dims.of(*(first.front[:d] + (CONST_DIM,) + first.front[d:]))
    if name == "einsum":
        return _einsum(args)
    if name in ("where",) and len(args) == 3:
        out = dims_of(args[0])
        for a in args[1:]:
            if a.is_tensor:
                out = broadcast(out, dims_of(a))
        return out
    if name == "tensor" or name == "as_tensor":
        data = args[0] if args else None
        if data is not None and data.is_tensor:  # `torch.as_tensor(image_sizes)`: the same sizes
            return dims_of(data)
        if data is not None and data.elems is not None:
            return Dims.of(CONST_DIM)
        rows = sequence_length(data) if data is not None else None
        if rows is not None:
            return Dims((rows,), (), None)  # `torch.tensor(items)`, a grown list
        if data is not None and data.kinds and data.kinds <= {Kind.INT, Kind.FLOAT, Kind.BOOL}:
            return Dims.of()
        return None
    if args and args[0].is_tensor:  # torch.f(x, ...) as x.f(...)
        return method_dims(name, args[0], args[1:], kwargs)
    given = kwargs.get("input")
    if given is not None and given.is_tensor:  # torch.f(input=x, ...) alike
        return method_dims(name, given, args, {k: v for k, v in kwargs.items() if k != "input"})
    return None


def _cat(args: Args, kwargs: Kwargs) -> Optional[Dims]:
    seq = _arg(args, kwargs, 0, "tensors")
    d = _int_const(_arg(args, kwargs, 1, "dim", "axis"))
    d = 0 if d is None and len(args) < 2 and "dim" not in kwargs else d
    if seq is None or d is None:
        return None
    items = list(seq.elems) if seq.elems is not None else None
    if items is None and seq.is_tensor_seq and seq.dims is not None:
        return _cat_sequence(seq.dims, sequence_length(seq), d)
    if not items:
        return None
    out = dims_of(items[0])
    for it in items[1:]:
        out = _merge_same(out, dims_of(it))
    joined = join_dims(*(dims_of(it).at(d) for it in items))
    if all(it.dims is not None for it in items):
        return _replace(out, d, joined if joined.state is not Dim.CONST else CONST_DIM)
    return _replace(out, d, joined if joined.state is Dim.VARY else UNKNOWN_DIM)


def _cat_sequence(item: Dims, length: Optional[DimInfo], d: int) -> Optional[Dims]:
    """Dims of ``torch.cat(items, d)`` where ``items`` is a sequence of tensors of dims
    ``item`` and ``length`` items (``list(x)``, ``x.split(k)``): dim ``d`` is the sum of the
    items' dims, so it varies when theirs or the count does."""
    joined = join_dims(item.at(d), length or UNKNOWN_DIM)  # (constant only if both are)
    if item.rank is None and d == len(item.front):
        return Dims(item.front + (joined,), item.back, None)
    return _replace(item, d, joined)


def _merge_same(a: Dims, b: Dims) -> Dims:
    """Dims of two tensors known to have the same shape: what either knows."""
    if a.rank is not None and b.rank == a.rank:
        return Dims.of(*[_prefer(x, y) for x, y in zip(a.front, b.front)])
    return a if a.rank is not None or len(a.front) >= len(b.front) else b


def _prefer(a: DimInfo, b: DimInfo) -> DimInfo:
    if a.state is Dim.VARY or b.state is Dim.VARY:
        return a if a.state is Dim.VARY else b
    return a if a.state is Dim.CONST else b


_EINSUM_SIDE = re.compile(r"^[a-zA-Z.\s]*$")


def _einsum(args: Args) -> Optional[Dims]:
    if not args or not isinstance(args[0].const, str):
        return None
    eq = args[0].const.replace(" ", "")
    if "->" not in eq or "." in eq:
        return None
    ins, out = eq.split("->")
    operands = list(args[1:])
    if len(operands) == 1 and operands[0].elems is not None:
        operands = list(operands[0].elems)
    letters: Dict[str, DimInfo] = {}
    for spec, op in zip(ins.split(","), operands):
        d = dims_of(op)
        if d.rank is not None and d.rank != len(spec):
            return None
        for i, ch in enumerate(spec):
            got = d.at(i) if d.rank is not None else (d.front[i] if i < len(d.front) else UNKNOWN_DIM)
            letters[ch] = _prefer(letters.get(ch, got), got)
    return Dims.of(*[letters.get(ch, UNKNOWN_DIM) for ch in out])


def index_dims(x: Dims, parts: Sequence[Tuple[str, Optional[Value], Tuple[Optional[Value], ...]]]
               ) -> Optional[Dims]:
    """Dims of ``x[...]``. Each part is ``("int", v, ())``, ``("none", None, ())``,
    ``("ellipsis", None, ())``, ``("slice", None, (lower, upper, step))`` or
    ``("tensor", v, ())`` (advanced indexing: the result's dims are not modelled)."""
    kinds = [k for k, _, _ in parts]
    if "tensor" in kinds:
        return None
    cut = kinds.index("ellipsis") if "ellipsis" in kinds else None
    pre = parts if cut is None else parts[:cut]
    post = () if cut is None else parts[cut + 1:]
    front: List[DimInfo] = []
    pos = 0
    for kind, _, bounds in pre:
        if kind == "none":
            front.append(CONST_DIM)
        elif kind in ("int", "slice"):
            if kind == "slice":
                front.append(_sliced(x.at(pos), bounds))
            pos += 1
    back: List[DimInfo] = []
    consumed = sum(1 for k, _, _ in post if k in ("int", "slice"))
    i = -consumed
    for kind, _, bounds in post:
        if kind == "none":
            back.append(CONST_DIM)
        elif kind in ("int", "slice"):
            if kind == "slice":
                back.append(_sliced(x.at(i), bounds))
            i += 1
    if x.rank is not None:
        end = x.rank - consumed if cut is not None else x.rank
        return Dims.of(*(tuple(front) + x.front[pos:end] + tuple(back)))
    if cut is not None:
        return Dims(tuple(front), tuple(back), None)
    return Dims(tuple(front) + x.front[pos:], x.back, None)


def source_dims(x: Dims, parts: Sequence[Tuple[str, Optional[Value], Tuple[Optional[Value], ...]]]
                ) -> List[DimInfo]:
    """For each part of ``x[...]`` (as :func:`index_dims` takes them), the dim of ``x`` it
    indexes or slices (UNKNOWN for ``None``, ``...`` and what an ellipsis hides)."""
    kinds = [k for k, _, _ in parts]
    cut = kinds.index("ellipsis") if "ellipsis" in kinds else len(parts)
    out: List[DimInfo] = [UNKNOWN_DIM] * len(parts)
    pos = 0
    for i in range(cut):
        if kinds[i] in ("int", "slice", "tensor"):
            out[i] = x.at(pos)
            pos += 1
    pos = -sum(1 for k in kinds[cut + 1:] if k in ("int", "slice", "tensor"))
    for i in range(cut + 1, len(parts)):
        if kinds[i] in ("int", "slice", "tensor"):
            out[i] = x.at(pos)
            pos += 1
    return out


def _sliced(d: DimInfo, bounds: Tuple[Optional[Value], ...]) -> DimInfo:
    lower, upper, step = (bounds + (None, None, None))[:3]
    if lower is None and upper is None and step is None:
        return d
    parts = [b for b in (lower, upper, step) if b is not None]
    if all(_int_const(b) is not None for b in parts):
        u = _int_const(upper) if upper is not None else None
        if upper is not None and u is not None and u >= 0 and (lower is None or (_int_const(lower) or 0) >= 0):
            return CONST_DIM  # x[:8]: at most 8
        return d  # x[1:], x[:-1], x[::2]: follows the dim
    return join_dims(d, *(size_dim(b) for b in parts))


def shape_slice(x: Dims, bounds: Tuple[Optional[Value], ...]) -> Optional[Dims]:
    """The sizes ``x.shape[lower:upper:step]`` holds: a slice of a shape picks dims, it does
    not slice one (``h, w = x.shape[-2:]`` are the last two dims, ``x.shape[2:]`` the dims
    from 2 on). None where a bound is not a constant int or the rank needed is unknown."""
    lower, upper, step = (b.const if b is not None else None for b in bounds)
    if any(b is not None and not isinstance(b, int) for b in (lower, upper, step)) or \
            step not in (None, 1):
        return None
    if x.rank is not None:
        return Dims.of(*x.front[lower:upper])
    if upper is None and lower is not None and lower < 0 and -lower <= len(x.back):
        return Dims.of(*x.back[lower:])  # x.shape[-2:]: the last two, whatever the rank
    if upper is None and lower is not None and lower >= 0:
        return Dims(x.front[lower:], x.back, None)
    if lower in (None, 0) and upper is not None and 0 <= upper <= len(x.front):
        return Dims.of(*x.front[:upper])
    if lower in (None, 0) and upper is not None and upper < 0:
        return Dims(x.front, x.back[:upper], None)
    return None


def sequence_length(seq: Value) -> Optional[DimInfo]:
    """A Python list's length as a dim, where the walk knows it (a list grown once per row of
    a varying dim, ``tolist()`` of a tensor); None otherwise."""
    if seq.length is not None:
        return seq.length
    if seq.kinds and seq.kinds <= SEQUENCES and seq.dim is not None:
        return seq.dim
    return None
