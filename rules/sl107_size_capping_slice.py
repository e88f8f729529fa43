from typing import Optional

from shapelint.api import Rule, Slice, Value


class SizeCappingSlice(Rule):
    """
    ## What it does
    Finds a slice of a dim that varies between calls whose bound is a fixed number: an end
    (`x[:, :512]`, `x[:, :self.max_len]`) or a start counted from the end
    (`x[:, -self.window + 1:]`).

    ## Why is this bad?
    Such a slice keeps `min(size, k)` elements, so the result's length depends on whether the
    size reaches `k`. Dynamo decides that once and guards on it (`size >= k`): when an input
    crosses `k` it recompiles, like `if x.shape[1] > k:` would. Bounds computed from sizes
    (`x[:, :n - 1]`), starts (`x[:, 1:]`) and ends counted from the end (`x[:, :-1]`) stay
    symbolic and cost nothing (measured on torch 2.13 with sizes 5 to 33).

    ## Example
    ```python
    keys = torch.cat([self.keys, k], dim=-2)
    self.keys = keys[:, :, -self.sliding_window + 1:, :]
    ```

    ## Use instead
    Give the result a size that does not depend on the input: keep a buffer of the full window
    (pad to it once, then `torch.roll`/`index_copy_`), or mark the length as bounded with
    `torch._check(n >= k)` when it always is.

    This is a preview rule: on real code the fixed bound is often one the size is known to
    pass (longformer pads the sequence to a multiple of twice the window it slices by), and
    the sliding-window caches where torch does blame it (transformers' cache layers) sit
    behind a dispatch the static pass does not follow.
    """

    code = "SL107"
    name = "size-capping-slice"
    summary = "A slice with a fixed bound on a varying dim guards on whether the size reaches it"
    evidence = ("recompile",)
    preview = True
    measured_precision = 0.0  # 0 of 2 (bench/zoo.py score): longformer pads past the bound
    hint = "give the result a fixed size (pad once to the window) or torch._check the bound"
    VALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        n = x.shape[0]
        return torch.cat([x[1:], x[: n - 1], x[:-1]])
''', '''
import torch
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 32)
    def forward(self, x):
        return self.proj(x)[:, :16]
''']
    INVALID = ['''
import torch
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.window = 8
    def forward(self, x):
        return x[-self.window + 1:] * 2  # error: SL107
''', '''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        return x[:12, :4] * 2  # error: SL107
''']

    def on_slice(self, site: Slice) -> None:
        if site.dim.varies is not True or not site.container.is_tensor:
            return
        if site.step is not None and not isinstance(site.step.const, int):
            return
        if site.upper is not None and _fixed(site.upper) and not _negative(site.upper, site.upper_node):
            bound, where = site.upper, "end"
        elif site.lower is not None and _fixed(site.lower) and _negative(site.lower, site.lower_node):
            bound, where = site.lower, "start (counted from the end)"
        else:
            return
        if isinstance(bound.const, int) and abs(bound.const) < 2:
            return  # x[:, :1], x[:, -1:]: one element whatever the size (sizes are >= 2)
        self.report(site, f"`{site.short_code()}` slices {site.dim.label or 'a varying dim'} to "
                          f"a fixed {where}: the result has min(size, k) elements, so Dynamo "
                          f"guards on whether the size reaches k and recompiles when an input "
                          f"crosses it")


def _fixed(v: Optional[Value]) -> bool:
    """A bound that is the same number at every call: a literal, module state, a config."""
    if v is None or v.is_tensor or v.is_size or v.has("data"):
        return False
    if isinstance(v.const, int) and not isinstance(v.const, bool):
        return True
    return v.is_state and (not v.is_known or v.is_python_number)


def _negative(v: Value, node: object) -> bool:
    """``-k``, ``-k + 1``, ``-(k + 1)``: a bound counted from the end."""
    import libcst as cst

    if isinstance(v.const, int):
        return v.const < 0
    while isinstance(node, cst.BinaryOperation):
        node = node.left
    return isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus)
