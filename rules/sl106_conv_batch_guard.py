from shapelint.api import Call, Rule

CONV_MODULES = {f"torch.nn.{k}" for k in ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
                                          "ConvTranspose2d", "ConvTranspose3d")}
CONV_FUNCS = {f"torch.nn.functional.{k}" for k in ("conv1d", "conv2d", "conv3d",
                                                   "conv_transpose1d", "conv_transpose2d",
                                                   "conv_transpose3d")}


class ConvBatchGuard(Rule):
    """
    ## What it does
    Points at convolutions inside a compiled region. On CPU, torch's convolution picks its
    kernel by batch size and installs the guard `batch < 16` (measured on torch 2.13, CPU):
    batches of 16 and more recompile once.

    ## Why is this bad?
    It is a recompile no line of your code asks for, and it shows up in production only when
    a large batch arrives. Knowing where it comes from saves an investigation.

    ## Example
    ```python
    x = torch.relu(self.conv(x))
    ```

    ## Use instead
    Warm up with both a small and a large batch (or mark the batch dynamic with explicit
    `min`/`max`), so the second graph is compiled before traffic needs it.
    """

    code = "SL106"
    name = "cpu-conv-batch-guard"
    summary = "A CPU convolution adds a framework guard on batch < 16"
    severity = "info"
    evidence = ("recompile",)
    # issue 19's independent, torch-judged sample of library findings
    measured_precision = 1.00  # 18 of 18
    hint = "warm up with a batch >= 16 as well, or accept one extra compile"
    VALID = ['''
import torch
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
    def forward(self, x):
        return self.fc(x)
''']
    INVALID = ['''
import torch
from torch import nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
    def forward(self, x):
        return torch.relu(self.conv(x))  # error: SL106
def inputs(batch):
    return (torch.randn(batch, 3, 8, 8),)
''']

    def on_call(self, site: Call) -> None:
        if site.module_class in CONV_MODULES or (site.callee or "") in CONV_FUNCS:
            x = site.args[0] if site.args else site.arg("input")
            if x is None or x.dims is None or x.dims.at(0).varies is not True:
                return  # the guard matters only where the batch varies
            self.report(site, f"`{site.short_code()}` runs a convolution; on CPU torch guards on "
                              f"batch < 16, so the first batch of 16 or more recompiles")
