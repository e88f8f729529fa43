from shapelint.api import BinaryOp, Call, Format, Rule, Subscript

# math functions that torch traces symbolically (math.ceil(n / 8) stays a SymInt)
SYMBOLIC_MATH = {"math.ceil", "math.floor", "math.trunc", "math.sqrt", "math.prod", "math.gcd",
                 "math.lcm", "math.isqrt"}


class SizeToPython(Rule):
    """
    ## What it does
    Finds tensor sizes turned into plain Python values that torch cannot keep symbolic: an
    f-string or `str()` of a size, `int()`/`float()` of a size, `math.*` functions other than
    `ceil`/`floor`/`trunc`/`sqrt`, numpy calls, a size used as a dict key or list index,
    `dict.get(n)`, list repetition `[0] * n`.

    ## Why is this bad?
    Each of these forces Dynamo to read the concrete value: the size is specialized, a guard
    `s77 == 8` is installed, and every new size recompiles.

    ## Example
    ```python
    key = f"mask_{x.shape[0]}"
    ```

    ## Use instead
    Keep sizes in torch ops (`torch.ones(n, n)`), key caches outside the compiled region, or
    mark the value as data with `torch._check` / unbacked symbols.
    """

    code = "SL103"
    name = "size-to-python"
    summary = "A tensor size is forced into a concrete Python value"
    evidence = ("specialization", "recompile")
    hint = "keep the size inside torch ops, or move this out of the compiled region"
    VALID = ['''
import math
import torch
class M(torch.nn.Module):
    def forward(self, x):
        n = math.ceil(x.shape[0] / 8)
        y = x.view(x.shape[0], -1)
        return torch.zeros(n, 3) + y.sum() / math.sqrt(x.size(-1))
''']
    INVALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        key = f"tri_{x.shape[0]}"  # error: SL103
        return x
''', '''
import torch
class M(torch.nn.Module):
    def forward(self, x, table):
        n = int(x.shape[0] * 2)  # error: SL103
        w = [1.0] * x.shape[1]  # error: SL103
        return x * n
''']

    def on_format(self, site: Format) -> None:
        if site.value.is_size and not site.value.is_tensor:
            self.report(site, f"`{site.code()}` formats the tensor size "
                              f"{site.fn.describe(site.value.origin)} as text; that specializes it")

    def on_call(self, site: Call) -> None:
        first = site.args[0] if site.args else None
        if first is None or not first.is_size or first.is_tensor:
            return
        callee = site.callee or ""
        if callee in ("int", "float") or (callee.startswith("math.") and callee not in SYMBOLIC_MATH) \
                or callee.startswith(("numpy.", "np.")):
            self.report(site, f"`{site.code()}` turns the tensor size "
                              f"{site.fn.describe(first.origin)} into a concrete Python number")
        elif site.method == "get" and site.receiver is not None and not site.receiver.is_tensor:
            self.report(site, f"`{site.code()}` looks up a dict by the tensor size "
                              f"{site.fn.describe(first.origin)}; the key must be concrete")

    def on_subscript(self, site: Subscript) -> None:
        if site.value.is_size and not site.container.is_tensor and not site.container.is_shape \
                and (site.container.is_state or site.container.elems is not None):
            self.report(site, f"`{site.code()}` indexes a Python container with the tensor size "
                              f"{site.fn.describe(site.value.origin)}; the key must be concrete")

    def on_binary_op(self, site: BinaryOp) -> None:
        import libcst as cst

        node = site.node
        if site.op != "Multiply" or not isinstance(node, cst.BinaryOperation):
            return
        for seq, count in ((node.left, site.right), (node.right, site.left)):
            if isinstance(seq, (cst.List, cst.Tuple)) and count.is_size and not count.is_tensor:
                self.report(site, f"`{site.code()}` repeats a Python list by the tensor size "
                                  f"{site.fn.describe(count.origin)}; the length must be concrete")
