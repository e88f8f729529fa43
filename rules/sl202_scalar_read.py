from shapelint.api import Call, Rule, Slice, scalar_read, tensor_bound


class ScalarRead(Rule):
    """
    ## What it does
    Finds reads of tensor data into Python: `.item()`, `.tolist()`, `.numpy()`,
    `int(t)`/`float(t)`, `math.*` on a tensor, and a tensor as a slice bound
    (`x[start:start + n]`, which Python reads with `__index__`, Dynamo with `.item()`).

    ## Why is this bad?
    The value is unknown at trace time. By default Dynamo breaks the graph (GB0124 for
    `.item()`, GB0109 for `.tolist()`, GB0105 for `.numpy()`); with
    `capture_scalar_outputs=True` it becomes an unbacked symbol, and any branch on it is then a
    data-dependent error.

    ## Example
    ```python
    peak = x.abs().max().item()
    return x / (peak + 1e-6)
    ```

    ## Use instead
    ```python
    peak = x.abs().max()
    return x / (peak + 1e-6)
    ```
    """

    code = "SL202"
    name = "tensor-to-python"
    summary = "A tensor value is read into Python (.item(), .tolist(), int(t))"
    evidence = ("graph-break",)
    # a preview rule while issue 19's independent sample found it right 8 times in 12; the
    # zoo's held-out half (bench/zoo.py score --split held-out) then judged it right on all of
    # its 36 findings there, over the 20 it needed to leave preview; 47 of 48 with 572 models
    # replayed and a tensor slice bound counted as a read (tune 53 of 53); 57 of 58 (tune 57 of
    # 57) once the Qwen2.5-VL image-grid variants replayed
    measured_precision = 0.98  # 57 of 58
    registry_ids = ("GB0124", "GB0109", "GB0105")
    hint = ("keep the value as a 0-d tensor; if you need it as a number, set "
            "torch._dynamo.config.capture_scalar_outputs = True and torch._check its range")
    VALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        n_pos = (x > 0).sum(-1)
        return x / (x.abs().max() + 1e-6) * n_pos.unsqueeze(-1)
''']
    INVALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        peak = x.abs().max().item()  # error: SL202
        counts = torch.bincount(x.abs().long().flatten()).tolist()  # error: SL202
        return x / (peak + 1e-6)
''', '''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        stats = {"peak": x.max().item()}  # error: SL202
        rows = {x.sum(-1).tolist()[0]}  # error: SL202
        return x, stats, rows
''', '''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        starts = torch.ones_like(x[:, 0]).long().cumsum(0) - 1  # where each row's patch begins
        start = starts[0]
        return x[0, start:start + 2] * 2  # error: SL202
''', '''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        width = torch.IntTensor([2])  # a legacy typed constructor builds a tensor
        return torch.tanh(x[:, :width[0]])  # error: SL202
''']

    def on_call(self, site: Call) -> None:
        read = scalar_read(site)  # (the walker ends the frame at the same calls: api)
        if read is None:
            return
        if read == "__contains__":
            self.report(site, f"`{site.short_code()}` tests membership in a tensor: "
                              f"Tensor.__contains__ reads the answer back into Python, so "
                              f"Dynamo breaks the graph")
        elif read in ("item", "tolist", "numpy"):
            self.report(site, f"`{site.short_code()}` reads tensor data into Python; Dynamo breaks the "
                              f"graph (or, with capture_scalar_outputs, makes an unbacked symbol)")
        else:
            self.report(site, f"`{site.short_code()}` converts a tensor to a Python number; Dynamo "
                              f"breaks the graph to read it")

    def on_slice(self, site: Slice) -> None:
        bound = tensor_bound(site)  # (the walker ends the frame at the same slices: api)
        if bound is not None:
            self.report(site, f"`{site.short_code()}` slices with a tensor bound "
                              f"({site.fn.describe(bound.origin)}); Dynamo reads its value with "
                              f"Tensor.item() and breaks the graph")
