from shapelint.api import RANGE, Call, Iteration, Rule, Value, varying_size


class SizeLoop(Rule):
    """
    ## What it does
    Finds Python loops whose trip count comes from a tensor size: `for i in range(x.size(1))`,
    a comprehension over `range(n)` with `n` from a shape, or `x.split(k)` along a dynamic
    dimension (the number of chunks is a Python count).

    ## Why is this bad?
    Dynamo unrolls Python loops. The trip count is burned into the graph, so every new size
    specializes and recompiles, and long loops make huge graphs that compile slowly.

    ## Example
    ```python
    for t in range(x.size(1)):
        h = self.cell(x[:, t], h)
    ```

    ## Use instead
    Vectorize over the dimension, use a fixed-size loop, `torch.scan`-style higher-order ops,
    or run the loop outside the compiled region and compile the step.
    """

    code = "SL102"
    name = "size-loop"
    summary = "A Python loop runs once per element of a tensor dimension"
    evidence = ("recompile", "specialization")
    hint = "vectorize over the dimension, or compile only the loop body"
    VALID = ['''
import torch
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(3))
    def forward(self, x):
        out = 0
        for i in range(len(self.heads)):
            out = out + self.heads[i](x)
        q, k = x.split(4, dim=-1)
        return out
''']
    INVALID = ['''
import torch
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4)
    def forward(self, input_ids):
        x = self.emb(input_ids)
        h = x[:, 0]
        for t in range(x.size(1)):  # error: SL102
            h = h + x[:, t]
        return h
def inputs(seq_len):
    return (torch.randint(0, 10, (2, seq_len)),)
''', '''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        return torch.cat([p * 2 for p in x.split(8)])  # error: SL102
''']

    def on_iteration(self, site: Iteration) -> None:
        v = site.value
        if v.has(RANGE) and v.is_size and v.varies and v.dim is not None:
            self.report(site, f"the loop runs once per unit of the tensor size "
                              f"{site.fn.describe(v.origin)}, which varies between calls "
                              f"({v.dim.label}); Dynamo unrolls it and specializes on the size")

    def on_call(self, site: Call) -> None:
        recv = site.receiver
        method = site.method if recv is not None and recv.is_tensor else None
        function = (site.callee or "") if site.args and site.args[0].is_tensor else ""
        if method in ("split", "chunk"):
            tensor, offset, op = recv, 0, method
        elif function in ("torch.split", "torch.chunk"):
            tensor, offset, op = site.args[0], 1, function.rsplit(".", 1)[-1]
        else:
            return
        if op == "chunk":
            # chunk(c) makes c pieces whatever the size (symbolic, measured on
            # tests/cases/shared/b34); a count computed from a varying size is a new number
            # of pieces, a new graph, for each size
            count = site.arg("chunks", offset)
            if count is not None and varying_size(count):
                self.report(site, f"`{site.short_code()}` makes a number of pieces computed from "
                                  f"the tensor size {site.fn.describe(count.origin)}, which varies "
                                  f"({count.dim.label}); each new count is a new graph")
            return
        count = site.arg("split_size", offset) or site.arg("split_size_or_sections", offset)
        if count is None or not _is_int(count):
            return  # a list of sizes gives a fixed number of chunks
        dim_value = site.arg("dim", offset + 1)
        dim = dim_value.const if dim_value is not None else 0
        if not isinstance(dim, int) or tensor is None or tensor.dims is None:
            return
        d = tensor.dims.at(dim)
        if d.varies:
            self.report(site, f"`{site.short_code()}` cuts dim {dim} ({d.label}) into pieces: their "
                              f"number and sizes are Python numbers, so each new size "
                              f"recompiles (`split` specializes the dim)")


def _is_int(v: Value) -> bool:
    return (isinstance(v.const, int) and not isinstance(v.const, bool)) or v.is_size \
        or v.is_scalar_arg or v.is_state
