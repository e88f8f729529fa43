from shapelint.api import RANGE, Call, Iteration, Rule


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
        self.heads = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(3))
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
    def forward(self, x):
        h = x[:, 0]
        for t in range(x.size(1)):  # error: SL102
            h = h + x[:, t]
        return h
''', '''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        return torch.cat([p * 2 for p in x.split(8)])  # error: SL102
''']

    def on_iteration(self, site: Iteration) -> None:
        v = site.value
        if v.has(RANGE) and v.is_size:
            self.report(site, f"the loop runs once per unit of the tensor size "
                              f"{site.fn.describe(v.origin)}; Dynamo unrolls it and specializes "
                              f"on the size")

    def on_call(self, site: Call) -> None:
        is_split = (site.method == "split" and site.receiver is not None and site.receiver.is_tensor) \
            or (site.callee == "torch.split" and site.args and site.args[0].is_tensor)
        if not is_split:
            return
        index = 0 if site.method else 1
        size_arg = site.arg_node(index)
        if size_arg is None or len(site.args) <= index:
            return
        size_value = site.args[index]
        # an int chunk size (a list of sizes gives a fixed number of chunks)
        if not (_int_literal(size_arg.value) or size_value.is_size or size_value.is_scalar_arg):
            return
        dim = None
        for a in site.node.args:  # type: ignore[attr-defined]
            if a.keyword is not None and a.keyword.value == "dim":
                dim = a.value
        positional = [a for a in site.node.args if a.keyword is None]  # type: ignore[attr-defined]
        if dim is None and len(positional) > (1 if site.method else 2):
            dim = positional[1 if site.method else 2].value
        if dim is not None and site.code(dim).strip() not in ("0", "-0"):
            return
        self.report(site, f"`{site.code()}` makes as many chunks as the size of dim 0 allows; "
                          f"the chunk count is a Python number, so each new size recompiles")


def _int_literal(node) -> bool:
    import libcst as cst

    return isinstance(node, cst.Integer)
