from typing import Optional

from shapelint.api import Call, Iteration, Rule, Value


class TensorIteration(Rule):
    """
    ## What it does
    Finds Python iteration over a tensor: `for row in x:`, `[f(r) for r in x]`, `list(x)`,
    and `x.unbind(d)` of a dim that varies (a tuple of one tensor per row). A
    forward's parameter counts as a tensor when the body uses it as one (`x.shape`, `x * 2`,
    `self.proj(x)`); one that is only iterated is taken for a tuple or list of tensors (every
    layer's hidden states) and not reported.

    ## Why is this bad?
    Iterating unbinds dim 0 in Python: Dynamo unrolls one step per row, specializing on the
    size of dim 0, and recompiles for every new length.

    ## Example
    ```python
    outs = [self.proj(row) for row in x]
    ```

    ## Use instead
    ```python
    outs = self.proj(x)  # batched
    ```
    """

    code = "SL205"
    name = "tensor-iteration"
    summary = "A Python loop iterates over a tensor's first dimension"
    evidence = ("specialization", "recompile")
    # the zoo's held-out half: 21 of 23 right (tune 23 of 23), once the builder gave
    # Qwen2.5-VL-family models a window their vision code can divide by and their image-grid
    # variants replayed. Past 20 held-out findings and over 0.9 there: a default rule (issue
    # 19's independent sample, taken before the frame and type fixes: 0 of 14)
    preview = False
    # 19 of 21 once ViLT, cited by stop 37's sample, moved to tune
    measured_precision = 0.90  # 19 of 21
    hint = "apply the op to the whole batch, or use torch.vmap"
    VALID = ['''
import torch
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(8, 8)])
    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        for d in x.shape:
            pass
        return x
''', '''
import torch
class Head(torch.nn.Module):
    def forward(self, hidden_states):
        # every layer's output, as a tuple: only iterated, never computed with
        return torch.stack([h[:, 0] for h in hidden_states])
def inputs(batch):
    return ((torch.randn(batch, 4, 8), torch.randn(batch, 4, 8)),)
''']
    INVALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        x = x * 2
        return torch.stack([r.sum() for r in x])  # error: SL205
''', '''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        rows = (x * 2).unbind(0)  # error: SL205
        return torch.stack(rows).sum(0)
''']

    def on_call(self, site: Call) -> None:
        """``x.unbind(d)`` / ``torch.unbind(x, d)``: one tensor per row, a tuple as long as
        the dim (torch 2.13: a compile per batch size, as iterating makes)."""
        tensor: Optional[Value]
        if site.method == "unbind" and site.receiver is not None:
            tensor, dim = site.receiver, site.arg("dim", 0)
        elif (site.callee or "") == "torch.unbind":
            tensor, dim = site.arg("input", 0), site.arg("dim", 1)
        else:
            return
        if tensor is None or not tensor.is_tensor or tensor.dims is None:
            return
        index = 0 if dim is None else dim.const
        if not isinstance(index, int) or isinstance(index, bool):
            return
        d = tensor.dims.at(index)
        if d.varies:
            self.report(site, f"`{site.short_code()}` unbinds a dim that varies ({d.label}) into a "
                              f"Python tuple of one tensor per row; Dynamo specializes on its size")

    def on_iteration(self, site: Iteration) -> None:
        v = site.value
        if not v.is_tensor or v.dims is None:
            return
        first = v.dims.at(0)
        if first.varies:
            self.report(site, f"iterating `{site.short_code()}` unrolls a Python loop over its first "
                              f"dimension ({first.label}); Dynamo specializes on its size")
