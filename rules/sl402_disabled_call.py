from shapelint.api import DISABLE_DECORATORS, Call, Rule


class DisabledCall(Rule):
    """
    ## What it does
    Finds calls from a compiled region to a function decorated with
    `@torch.compiler.disable` (or `torch._dynamo.disable`).

    ## Why is this bad?
    A disabled function always runs eagerly: Dynamo breaks the graph before the call and
    resumes in a new frame after it (GB0098), on every call.

    ## Example
    ```python
    @torch.compiler.disable
    def log_stats(x):
        return float(x.std())
    ```

    ## Use instead
    Call it outside the compiled region, or make it traceable and drop the decorator.
    """

    code = "SL402"
    name = "call-to-disabled-function"
    summary = "A compiled region calls a torch.compiler.disable'd function"
    evidence = ("graph-break",)
    registry_ids = ("GB0098", "GB0099")
    hint = "call it outside the compiled region"
    VALID = ['''
import torch
@torch.compiler.disable
def log_stats(x):
    return float(x.std())
class M(torch.nn.Module):
    def forward(self, x):
        return x.sigmoid()
''']
    INVALID = ['''
import torch
@torch.compiler.disable
def log_stats(x):
    return float(x.std())
class M(torch.nn.Module):
    def forward(self, x):
        log_stats(x)  # error: SL402
        return x.sigmoid()
''']

    def on_call(self, site: Call) -> None:
        if any(d in DISABLE_DECORATORS for d in site.decorators):
            self.report(site, f"`{site.short_code()}` calls a function excluded with "
                              f"torch.compiler.disable; Dynamo breaks the graph around it")
