"""Dynamo's own rules, in one table: what torch.compile does with each operation on a symbolic
size or a tensor value.

A naive reading gets many of these wrong: ``int(n)`` and ``math.sqrt(n)`` of a size stay
symbolic, while ``math.log(n)``, an f-string or ``dict.get(n)`` pin it to its value; ``n > 1``
on a plain dynamic size is decided without a guard (its range is [2, inf]); ``x[mask] = 0``
stays in the graph while ``x[mask]`` breaks it. The static pass and its rules ask this table
instead of carrying their own lists, and every row carries a tiny program with the line it is
about marked ``# <-``: ``tests/test_dynamo_table.py`` (slow) runs each one under the installed
torch with the harness and fails where torch disagrees.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Dict, Optional, Tuple


class Effect(enum.Enum):
    """What Dynamo does at the marked line when the size (or value) varies between calls."""

    SYMBOLIC = "stays symbolic"  # no guard that a new value fails: no recompile
    GUARD = "guards"  # a guard on the size: an input on the other side recompiles
    SPECIALIZE = "specializes"  # the size is pinned to its value: every new value recompiles
    GRAPH_BREAK = "graph break"  # the graph ends here
    NONE = "nothing"  # no guard, no break


@dataclass(frozen=True)
class Row:
    op: str  # the table key: what the static pass looks up
    effect: Effect
    program: str  # a tiny runnable program: build() and inputs(batch); the line is marked `# <-`
    note: str = ""


def _prog(body: str, args: str = "x", inputs: str = "(torch.randn(batch, 4),)",
          head: str = "", init: str = "") -> str:
    """A module whose forward runs ``body`` (its line marked ``# <-``); ``init`` is the body of
    its ``__init__`` (after ``super().__init__()``)."""
    lines = "\n".join("        " + line for line in body.strip("\n").split("\n"))
    ctor = ""
    if init:
        ctor = ("    def __init__(self):\n        super().__init__()\n"
                + "".join(f"        {line}\n" for line in init.strip("\n").split("\n")))
    return (f"import math\nimport torch\n{head}\n\nclass M(torch.nn.Module):\n{ctor}"
            f"    def forward(self, {args}):\n{lines}\n\n\n"
            f"def build():\n    return M()\n\n\ndef inputs(batch):\n    return {inputs}\n")


ROWS: Tuple[Row, ...] = (
    # -- a symbolic size turned into a Python value ------------------------------------------
    Row("int(size)", Effect.SYMBOLIC, _prog("n = int(x.shape[0])  # <-\nreturn x * n")),
    Row("float(size)", Effect.SYMBOLIC, _prog("n = float(x.shape[0])  # <-\nreturn x * n")),
    Row("round(size)", Effect.SYMBOLIC, _prog("n = round(x.shape[0] / 2)  # <-\nreturn x * n")),
    Row("math.sqrt(size)", Effect.SYMBOLIC,
        _prog("n = int(math.sqrt(x.shape[0]))  # <-\nreturn x * n")),
    Row("math.ceil(size)", Effect.SYMBOLIC, _prog("n = math.ceil(x.shape[0] / 8)  # <-\nreturn x * n")),
    Row("math.floor(size)", Effect.SYMBOLIC,
        _prog("n = math.floor(x.shape[0] / 8)  # <-\nreturn x * n")),
    Row("max(size)", Effect.SYMBOLIC, _prog("n = max(x.shape[0], 8)  # <-\nreturn x * n")),
    Row("min(size)", Effect.SYMBOLIC, _prog("n = min(x.shape[0], 8)  # <-\nreturn x * n")),
    Row("abs(size)", Effect.SYMBOLIC, _prog("n = abs(x.shape[0] - 8)  # <-\nreturn x * n")),
    Row("math.log(size)", Effect.SPECIALIZE,
        _prog("n = math.log(x.shape[0])  # <-\nreturn x * n")),
    Row("math.log2(size)", Effect.SYMBOLIC,
        _prog("n = math.log2(x.shape[0])  # <-\nreturn x * n"),
        "unlike math.log, a symbolic function (torch's OpaqueUnaryFn_log2): no guard"),
    Row("math.exp(size)", Effect.SPECIALIZE,
        _prog("n = math.exp(x.shape[0] / 100)  # <-\nreturn x * n")),
    Row("math.pow(size)", Effect.SPECIALIZE,
        _prog("n = math.pow(x.shape[0], 0.5)  # <-\nreturn x * n")),
    Row("str(size)", Effect.GRAPH_BREAK,
        _prog("key = str(x.shape[0])  # <-\nreturn x * len(key)"),
        "str() of a SymInt is not traced: the graph breaks, and the resumed frame guards the "
        "string (`___stack0 == '3'`): every new size recompiles there too, on the next line"),
    Row("repr(size)", Effect.GRAPH_BREAK,
        _prog("key = repr(x.shape[0])  # <-\nreturn x * len(key)"),
        "as str(): a graph break, then a guard on the string in the resumed frame"),
    Row("f-string(size)", Effect.SPECIALIZE,
        _prog("key = f\"n={x.shape[0]}\"  # <-\nreturn x * len(key)")),
    Row("str % size", Effect.GRAPH_BREAK,
        _prog("key = \"n=%d\" % x.shape[0]  # <-\nreturn x * len(key)"),
        "%-formatting a SymInt raises inside Dynamo (`unsupported operand type(s) for %`): a "
        "break it cannot resume from, so the whole function runs eagerly"),
    Row("hash(size)", Effect.SPECIALIZE,
        _prog("h = hash(x.shape[0]) % 3  # <-\nreturn x * h")),
    Row("dict.get(size)", Effect.SPECIALIZE,
        _prog("scale = {1: 1.0, 2: 0.5}.get(x.shape[0], 0.25)  # <-\nreturn x * scale")),
    Row("dict[size]", Effect.SPECIALIZE,
        _prog("scale = SCALES[x.shape[0]]  # <-\nreturn x * scale",
              head="SCALES = {n: 1.0 / n for n in range(1, 64)}")),
    Row("list*size", Effect.SPECIALIZE,
        _prog("w = [1.0] * x.shape[0]  # <-\nreturn x * len(w)")),
    Row("range(size)", Effect.SPECIALIZE,
        _prog("out = x[0]\nfor i in range(x.shape[0]):  # <-\n    out = out + x[i]\nreturn out")),
    Row("Tensor.split(int)", Effect.SPECIALIZE,
        _prog("parts = x.split(2)  # <-\nreturn torch.cat([p * 2 for p in parts])",
              inputs="(torch.randn(2 * batch + 4, 4),)"),
        "split(k) pins the number of pieces, ceil(n / k) (guard `(n + k - 1) // k == c`): a "
        "size that changes the count recompiles, with k=2 every size; the program keeps the "
        "pieces over 1 row, which would be 0/1-specialized on their own"),
    Row("Tensor.chunk(int)", Effect.SYMBOLIC,
        _prog("parts = x.chunk(2)  # <-\nreturn torch.cat([p * 2 for p in parts])",
              inputs="(torch.randn(batch + 4, 4),)"),
        "chunk(c) makes c pieces whatever the size: the count stays fixed. A piece of 1 row "
        "(chunk(2) of 2 or 3 rows) is 0/1-specialized like any size (measured: a recompile at 4 "
        "rows on `n - (n + 1) // 2 == 1`), so the program feeds 5 rows and more"),
    Row("iter(tensor)", Effect.SPECIALIZE,
        _prog("return torch.stack([r * 2 for r in x.contiguous()])  # <-")),
    Row("list(tensor)", Effect.SPECIALIZE,
        _prog("rows = list(x)  # <-\nreturn torch.stack(rows) * 2"),
        "iterates the tensor: a guard `len(x) == n` for each size"),
    Row("size // const", Effect.SYMBOLIC,
        _prog("y = x.view(x.shape[0] // 2, -1)  # <-\nreturn y * 2",
              inputs="(torch.randn(2 * batch, 4),)")),
    Row("pow(size)", Effect.SYMBOLIC, _prog("n = pow(x.shape[0], 2)  # <-\nreturn x * n")),
    Row("math.trunc(size)", Effect.SYMBOLIC,
        _prog("n = math.trunc(x.shape[0] / 8)  # <-\nreturn x * n")),
    Row("math.prod(shape)", Effect.SYMBOLIC, _prog("n = math.prod(x.shape)  # <-\nreturn x * n")),
    Row("sum(shape)", Effect.SYMBOLIC, _prog("n = sum(x.shape)  # <-\nreturn x * n")),
    Row("divmod(size)", Effect.GRAPH_BREAK,
        _prog("q, r = divmod(x.shape[0], 8)  # <-\nreturn x * q + r"),
        "not traced for a SymInt ('Observed exception'): Dynamo gives up on the whole frame "
        "and runs it eagerly; use n // k and n % k"),
    Row("math.gcd(size)", Effect.GRAPH_BREAK,
        _prog("n = math.gcd(x.shape[0], 8)  # <-\nreturn x * n"),
        "not traced for a SymInt: a graph break (the size is specialized before it)"),
    Row("math.isqrt(size)", Effect.GRAPH_BREAK,
        _prog("n = math.isqrt(x.shape[0])  # <-\nreturn x * n"),
        "not traced for a SymInt: a graph break, then a guard on the result in the resumed frame"),
    # -- control flow on a size --------------------------------------------------------------
    # (each side computes something: a first call whose graph is empty, `return x`, makes
    # Dynamo skip the frame for good, and no later size would compile)
    Row("size > const", Effect.GUARD,
        _prog("if x.shape[0] > 4:  # <-\n    return x * 2\nreturn x + 1")),
    Row("size > 1", Effect.NONE,
        _prog("if x.shape[0] > 1:  # <-\n    return x * 2\nreturn x + 1"),
        "a plain dynamic size has the range [2, inf]: the test is decided without a guard"),
    Row("size != 1", Effect.NONE,
        _prog("if x.shape[0] != 1:  # <-\n    return x * 2\nreturn x + 1"),
        "decided by the symbol's range, like > 1"),
    Row("bool(size)", Effect.NONE,
        _prog("if bool(x.shape[0]):  # <-\n    return x * 2\nreturn x + 1"),
        "n != 0, decided by the symbol's range [2, inf]"),
    Row("size in (1, 2)", Effect.GUARD,
        _prog("if x.shape[0] in (1, 2):  # <-\n    return x * 2\nreturn x + 1"),
        "`n == 1 or n == 2`: the first term is decided by the range, the second guards"),
    Row("size == 0", Effect.NONE, _prog("if x.shape[0] == 0:  # <-\n    return x\nreturn x * 2"),
        "decided by the symbol's range, like > 1"),
    Row("size != const", Effect.GUARD,
        _prog("if x.shape[0] != 4:  # <-\n    return x * 2\nreturn x + 1"),
        "at most one recompile: the value itself gets its own graph"),
    Row("size % const == 0", Effect.GUARD,
        _prog("if x.shape[0] % 4 == 0:  # <-\n    return x * 2\nreturn x + 1")),
    Row("isinstance(size, int)", Effect.NONE,
        _prog("if isinstance(x.shape[0], int):  # <-\n    return x * 2\nreturn x + 1"),
        "a SymInt is an int to Dynamo: the test is decided while tracing"),
    Row("assert size", Effect.NONE,
        _prog("assert x.shape[1] == 4, f\"bad {x.shape}\"  # <-\nreturn x * 2"),
        "the message of a plain assert is never formatted while the test holds"),
    Row("torch._assert(size, f-string)", Effect.SPECIALIZE,
        _prog("torch._assert(x.shape[0] > 0, f\"empty batch {x.shape[0]}\")  # <-\nreturn x * 2"),
        "torch._assert's message is built before the call: the f-string specializes"),
    # -- tensor values read into Python ------------------------------------------------------
    Row("Tensor.item()", Effect.GRAPH_BREAK, _prog("s = x.sum().item()  # <-\nreturn x * s")),
    Row("Tensor.tolist()", Effect.GRAPH_BREAK, _prog("s = x.sum(1).tolist()  # <-\nreturn x * len(s)")),
    Row("if tensor", Effect.GRAPH_BREAK,
        _prog("if x.sum() > 0:  # <-\n    return x * 2\nreturn x")),
    Row("x[mask]", Effect.GRAPH_BREAK, _prog("y = x[x > 0]  # <-\nreturn y.sum()")),
    Row("x[t:t + n]", Effect.GRAPH_BREAK,
        _prog("start = (x[0, :1] > 9).long().sum()\ny = x[start:start + 1]  # <-\nreturn y * 2"),
        "a tensor bound of a slice is an index: Dynamo calls Tensor.item() to read it"),
    Row("x[mask] = v", Effect.NONE, _prog("x = x.clone()\nx[x > 0] = 0  # <-\nreturn x * 2"),
        "an indexed assignment with a mask is index_put_: its shape does not depend on the data"),
    Row("x[mask] *= v", Effect.GRAPH_BREAK,
        _prog("x = x.clone()\nx[x > 0] *= 2  # <-\nreturn x * 2"),
        "an augmented assignment reads x[mask] first: a nonzero, whose length is the data's"),
    Row("list == [.., tensor]", Effect.GRAPH_BREAK,
        _prog("k = (x > 9).long().sum() + 4\nassert list(x.size()) == [x.shape[0], k]  # <-\n"
              "return x * 2"),
        "Python compares the items one by one and asks the tensor item's comparison for its "
        "truth: Dynamo cannot decide it (list_richcompare_nonconst)"),
    Row("list == [.., size]", Effect.NONE,
        _prog("n = x.shape[1]\nassert list(x.size()) == [x.shape[0], n]  # <-\nreturn x * 2"),
        "every item a size: decided while tracing, no guard beyond the sizes' own"),
    Row("Tensor.nonzero()", Effect.GRAPH_BREAK, _prog("i = x.nonzero()  # <-\nreturn i.sum()")),
    Row("torch.bincount", Effect.GRAPH_BREAK,
        _prog("c = torch.bincount(x.abs().long().flatten())  # <-\nreturn c.sum() + x")),
    Row("torch.arange(tensor)", Effect.GRAPH_BREAK,
        _prog("r = torch.arange((x > 0).sum())  # <-\nreturn r.sum() + x"),
        "a 0-d tensor where a size is expected is read back into Python"),
    Row("torch.div(size) as a size", Effect.GRAPH_BREAK,
        _prog("n = torch.div(x.shape[0], 2, rounding_mode=\"floor\")\nreturn x.new_zeros(n, 4)  # <-"),
        "torch.div of a dynamic size is a tensor, read back where a size is expected (a "
        "static size is folded to a constant: no break until the batch varies)"),
    Row("value in tensor", Effect.GRAPH_BREAK,
        _prog("if 3.0 in x:  # <-\n    return x * 2\nreturn x + 1"),
        "Tensor.__contains__ reads its answer with .item(): Dynamo gives up on the whole frame"),
    Row("nn.Parameter in forward", Effect.GRAPH_BREAK,
        _prog("w = torch.nn.Parameter(torch.ones(4))  # <-\nreturn x * w")),
    Row("print", Effect.GRAPH_BREAK, _prog("print(\"hi\")  # <-\nreturn x * 2")),
    Row("logger.warning", Effect.GRAPH_BREAK,
        _prog("logger.warning(\"hi\")  # <-\nreturn x * 2",
              head="import logging\nlogger = logging.getLogger(__name__)")),
    Row("logger.warning_once", Effect.GRAPH_BREAK,
        _prog("logger.warning_once(\"hi\")  # <-\nreturn x * 2",
              head="import functools\nimport logging\nlogger = logging.getLogger(__name__)\n\n\n"
                   "@functools.lru_cache(None)\ndef warning_once(self, *args, **kwargs):\n"
                   "    self.warning(*args, **kwargs)\n\n\n"
                   "logging.Logger.warning_once = warning_once"),
        "transformers' warning_once: a logger method behind functools.lru_cache"),
    Row("warnings.warn", Effect.GRAPH_BREAK,
        _prog("warnings.warn(\"hi\")  # <-\nreturn x * 2", head="import warnings")),
    Row("time.sleep", Effect.GRAPH_BREAK,
        _prog("time.sleep(0)  # <-\nreturn x * 2", head="import time")),
    Row("torch._check_tensor_all", Effect.GRAPH_BREAK,
        _prog("torch._check_tensor_all(x.sum() > -1e9)  # <-\nreturn x * 2"),
        "it reads the condition back with `.item()` (transformers' torch_compilable_check "
        "calls it while tracing)"),
    Row("torch.backends.cudnn.flags", Effect.GRAPH_BREAK,
        _prog("with torch.backends.cudnn.flags(enabled=False):  # <-\n    return x * 2")),
    Row("nn.LSTM", Effect.GRAPH_BREAK,
        _prog("out, _ = self.lstm(x)  # <-\nreturn out * 2", init="self.lstm = torch.nn.LSTM(4, 4)",
              inputs="(torch.randn(batch, 3, 4),)"),
        "'Attempted to wrap RNN, GRU, or LSTM': Dynamo gives up on the whole frame"),
    Row("graph break in a loop", Effect.GRAPH_BREAK,
        _prog("for i in range(2):\n    print(i)  # <-\n    x = x * 2\nreturn x"),
        "a break inside a for/while loop cannot resume: Dynamo runs the whole frame eagerly, "
        "so nothing else in it is traced"),
    # -- what Dynamo folds ---------------------------------------------------------------------
    Row("torch.compiler.is_compiling()", Effect.NONE,
        _prog("if not torch.compiler.is_compiling():  # <-\n    print(\"eager\")\nreturn x * 2"),
        "True while Dynamo traces: the other side is never traced (no break for its print)"),
)

BY_OP: Dict[str, Row] = {r.op: r for r in ROWS}




# -- lookups the static pass makes -------------------------------------------------------------

#: builtins and math functions of a size, by qualified name, and what Dynamo does with them
_DEFAULT_SIZE_FUNCTIONS: Dict[str, Effect] = {
    "int": Effect.SYMBOLIC, "float": Effect.SYMBOLIC, "round": Effect.SYMBOLIC,
    "max": Effect.SYMBOLIC, "min": Effect.SYMBOLIC, "abs": Effect.SYMBOLIC,
    "sum": Effect.SYMBOLIC, "pow": Effect.SYMBOLIC, "math.lcm": Effect.SYMBOLIC,
    "format": Effect.SPECIALIZE, "range": Effect.SPECIALIZE,
}


def _from_rows() -> Dict[str, Effect]:
    """``NAME(size)`` rows of the table, by NAME: what torch did, as the slow test checks."""
    out: Dict[str, Effect] = {}
    for row in ROWS:
        if row.op.endswith("(size)"):
            out[row.op[:-len("(size)")]] = row.effect
    return out


#: builtins and math functions of a size, by qualified name: what Dynamo does with them
SIZE_FUNCTIONS: Dict[str, Effect] = {**_DEFAULT_SIZE_FUNCTIONS, **_from_rows()}


def size_function(qualname: str) -> Optional[Effect]:
    """What a builtin, ``math.*`` or numpy function does to a symbolic size argument."""
    if qualname in SIZE_FUNCTIONS:
        return SIZE_FUNCTIONS[qualname]
    if qualname.startswith("math."):
        return Effect.SPECIALIZE  # log, exp, pow, sin...: computed on a concrete float
    if qualname.startswith(("numpy.", "np.")):
        return Effect.SPECIALIZE
    return None


#: ops whose output shape depends on tensor values: Dynamo breaks the graph there (without
#: capture_dynamic_output_shape_ops)
DATA_DEPENDENT_OPS = frozenset({"nonzero", "masked_select", "unique", "unique_consecutive",
                                "argwhere", "bincount"})

LOGGER_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical",
                            "log", "warning_once", "info_once", "warning_advice"})
#: context managers and calls Dynamo cannot trace through
UNSUPPORTED_CALLS = frozenset({"torch.backends.cudnn.flags", "torch.backends.cuda.sdp_kernel",
                               "torch.cuda.synchronize", "torch.cuda.empty_cache",
                               "pdb.set_trace", "breakpoint", "time.sleep",
                               "torch._check_tensor_all"})
#: modules whose every call breaks the graph: numpy's random generator (measured on torch
#: 2.13 with numpy installed: `np.random.uniform(0, 1)` "Data dependent operator",
#: `np.random.permutation(4)` "numpy function unsupported by PyTorch"; the rest of numpy is
#: traced through torch._numpy)
UNSUPPORTED_PREFIXES = ("numpy.random.",)
#: torch.nn classes that are not modules (building them in forward is plain tensor work)
NOT_MODULES = frozenset({"torch.nn.Parameter", "torch.nn.Buffer", "torch.nn.parameter.Parameter"})
#: torch.nn modules without parameters: Dynamo builds them in forward without a break
#: (measured on torch 2.13: `nn.CrossEntropyLoss()` in forward compiles; `nn.Linear(4, 4)`
#: breaks the graph)
MODULES_WITHOUT_PARAMETERS = frozenset({
    "ReLU", "ReLU6", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Softmin",
    "LeakyReLU", "ELU", "SELU", "CELU", "Mish", "Hardswish", "Hardsigmoid", "Hardtanh",
    "Softplus", "Softsign", "Tanhshrink", "Threshold", "GLU", "Identity", "Flatten", "Unflatten",
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "Upsample", "UpsamplingNearest2d",
    "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle", "ZeroPad1d", "ZeroPad2d",
    "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d",
    "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "CosineSimilarity", "PairwiseDistance", "ChannelShuffle"})
#: nn modules that break the graph when called inside a compiled region (RNNs: cudnn flat
#: weights and data-dependent packing)
GRAPH_BREAK_MODULES = frozenset({"LSTM", "GRU", "RNN"})

#: what makes a compiled region: these decorate a function, or are called on a function or a
#: module (``torch.compile(model)``); the cheap text look of the engine (project.py) and the
#: regions (regions.py) both read this list
COMPILE_FUNCTIONS = ("torch.compile", "torch.compiler.compile", "torch._dynamo.optimize")
#: how each is spelt in text, for the look that picks the files worth parsing
COMPILE_WORDS = ("compile", "_dynamo.optimize")

#: under torch.compile these are constant: code under the other side is never traced
COMPILING_TRUE = frozenset({"torch.compiler.is_compiling", "torch._dynamo.is_compiling",
                            "torch.compiler.is_dynamo_compiling", "torch._utils.is_compiling",
                            "torch._dynamo.external_utils.is_compiling"})
#: library helpers (transformers, diffusers, timm...) that answer "is Dynamo tracing?"
COMPILING_TRUE_LAST = frozenset({"is_torchdynamo_compiling", "is_dynamo_compiling"})
COMPILING_FALSE = frozenset({"torch.jit.is_scripting", "torch.jit.is_tracing",
                             "torch._C._get_tracing_state", "torch.fx._symbolic_trace.is_fx_tracing",
                             "torch.onnx.is_in_onnx_export", "torch._jit_internal.is_scripting"})


def compile_time_constant(qualname: str) -> Optional[bool]:
    """``torch.compiler.is_compiling()`` is True while Dynamo traces, ``torch.jit.is_scripting()``
    False: Dynamo folds them, so the other side is dead code in the region. Only torch's own
    names and the libraries' ``is_torchdynamo_compiling`` count: a function of the user's
    called ``is_tracing`` is walked like any other."""
    if qualname in COMPILING_TRUE or qualname.rsplit(".", 1)[-1] in COMPILING_TRUE_LAST:
        return True
    if qualname in COMPILING_FALSE:
        return False
    return None


def size_compare_decided(op: str, const: object) -> bool:
    """A comparison of a plain dynamic size (range [2, inf]) with a constant that its range
    decides: ``n > 1``, ``n >= 2``, ``n == 0``, ``n != 1``, ``n < 2``..."""
    if not isinstance(const, int) or isinstance(const, bool):
        return False
    if op in ("GreaterThan", "LessThanEqual"):
        return const <= 1
    if op in ("GreaterThanEqual", "LessThan"):
        return const <= 2
    if op in ("Equal", "NotEqual"):
        return const <= 1
    return False
