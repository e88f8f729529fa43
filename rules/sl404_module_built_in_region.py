from shapelint.api import Call, Rule

#: torch.nn classes that are not modules (building them in forward is plain tensor work)
NOT_MODULES = frozenset({"torch.nn.Parameter", "torch.nn.Buffer", "torch.nn.parameter.Parameter"})
#: torch.nn modules without parameters: Dynamo builds them in forward without a break
#: (measured on torch 2.13: `nn.CrossEntropyLoss()` in forward compiles; `nn.Linear(4, 4)`
#: breaks the graph)
PARAMETERLESS = frozenset({
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


class ModuleBuiltInRegion(Rule):
    """
    ## What it does
    Finds modules with parameters, and parameters, built inside a compiled region:
    `nn.Linear(...)`,
    `Block(config)` (a module class of your own: Dynamo traces its `__init__`, where its
    `super().__init__()` and every layer it builds are reported, since torch breaks there),
    `nn.Parameter(...)`.
    Modules without parameters (`nn.CrossEntropyLoss()`, `nn.GELU()`, `nn.Dropout()`) are
    traced without a break and are not reported.

    ## Why is this bad?
    Dynamo cannot trace `nn.Module.__init__` or the creation of a parameter: it breaks the
    graph there (BigBird's `set_attention_type` rebuilding attention layers in forward is a
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
    measured_precision = 1.0  # 2 of 2 (bench/zoo.py score)
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
        super().__init__()  # error: SL404
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
        callee = site.callee or ""
        last = site.module_class.rsplit(".", 1)[-1]
        if site.module_class.startswith("torch.nn.") and (last in PARAMETERLESS or last.endswith("Loss")):
            return  # no parameters: traced without a break
        if site.constructs and site.module_class and not site.module_class.startswith("torch.nn."):
            return  # a class of the tree: torch breaks inside its __init__, reported there
        if site.constructs and (site.module_class or callee in NOT_MODULES):
            what = "a parameter" if callee in NOT_MODULES else f"a `{site.module_class.rsplit('.', 1)[-1]}`"
            self.report(site, f"`{site.short_code()}` builds {what} inside the compiled region; "
                              f"Dynamo breaks the graph to run it")
        elif callee == "torch.nn.Module.__init__":
            self.report(site, f"`{site.short_code()}` runs nn.Module.__init__ inside the compiled "
                              f"region (this module is built in forward); Dynamo breaks the graph")
