from shapelint.api import Call, Rule, module_build

class ModuleBuiltInRegion(Rule):
    """
    ## What it does
    Finds modules with parameters, and parameters, built inside a compiled region:
    `nn.Linear(...)`,
    `Block(config)` (a module class of your own: Dynamo traces its `__init__`, where every
    layer with parameters it builds is reported, since torch breaks there),
    `nn.Parameter(...)`.
    Modules without parameters (`nn.CrossEntropyLoss()`, `nn.GELU()`, `nn.Dropout()`) are
    traced without a break and are not reported.

    ## Why is this bad?
    Dynamo cannot trace the creation of a parameter (`nn.Parameter()`, which every layer with
    weights calls in its `__init__`): it breaks the graph there (BigBird's
    `set_attention_type` rebuilding attention layers in forward is a
    real case), and the new module's attributes are guarded by value in the frame that
    resumes, so every instance recompiles it.

    ## Example
    ```python
    def forward(self, x):
        if x.shape[1] <= self.block_size * 4:
            self.attn = FullAttention(self.config)   # built while compiled
        return self.attn(x)
    ```

    ## Use instead
    Build every module in `__init__` and choose between them in forward (or outside the
    compiled region); hold state in buffers created in `__init__`.
    """

    code = "SL404"
    name = "module-built-in-region"
    summary = "An nn.Module or parameter is built inside a compiled region"
    evidence = ("graph-break", "recompile")
    # under 0.9 on held-out real code: 0 of 6 right in issue 19's independent,
    # torch-judged sample of transformers, diffusers and timm findings
    preview = True
    measured_precision = 0.00
    hint = "build it in __init__ and choose between prebuilt modules in forward"
    VALID = ['''
import torch
from torch import nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.scale = nn.Parameter(torch.ones(8))
    def forward(self, x):
        return self.proj(x) * self.scale
''']
    INVALID = ['''
import torch
from torch import nn
class Attention(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(dim, dim)  # error: SL404
    def forward(self, x):
        return self.proj(x)
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention(8)
    def forward(self, x):
        self.attn = Attention(8)
        w = nn.Parameter(torch.ones(8))  # error: SL404
        return self.attn(x) * w
''']

    def on_call(self, site: Call) -> None:
        what = module_build(site)
        if what is not None:
            self.report(site, f"`{site.short_code()}` builds {what} inside the compiled region; "
                              f"Dynamo breaks the graph to run it")
