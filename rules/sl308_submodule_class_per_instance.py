from shapelint.api import NameUse, Rule, Tag


class SubmoduleClassPerInstance(Rule):
    """
    ## What it does
    Finds the first read of a submodule (`self.mlp(x)`) whose class `__init__` picks by an
    argument that differs between the instances of a block built several times (`MoE(config)
    if layer_idx >= config.first_k_dense_replace else MLP(config)`, `Downsample() if
    downsample else nn.Identity()`), in a frame every instance runs: after a graph break in the
    method, or in a method that breaks the graph (Dynamo then skips the layers' loop and runs
    each layer's call as a frame of its own).

    ## Why is this bad?
    A frame's code is shared by every instance of the block. Dynamo guards the type of the
    submodule the frame calls (`___check_type_id(self._modules['mlp'])`), so the first
    instance of the other class fails the guard and compiles the same code again, once per
    class (and again when the layers alternate beyond the cache limit). Compiled in one graph
    with its model, the block is inlined per layer and costs nothing.

    ## Example
    ```python
    class DecoderLayer(nn.Module):
        def __init__(self, config, layer_idx):
            self.mlp = MoE(config) if layer_idx >= config.first_k_dense_replace else MLP(config)
        def forward(self, x):
            return self.mlp(x)  # MoE breaks the graph: one frame per layer, one type guard
    ```

    ## Use instead
    Remove the graph break (in an MoE, route with fixed-shape ops), so the layers are traced
    inline in one graph, or accept one compile per submodule class.
    """

    code = "SL308"
    name = "submodule-class-per-instance"
    summary = "A frame shared by a block's instances calls a submodule of another class in some"
    evidence = ("recompile",)
    # the zoo's held-out half: 9 of 24 right (tune 9 of 18). Whether a model's layers differ
    # is up to its config (`mlp_layer_types`, `decoder_sparse_step`): the tiny test configs
    # often build every layer of one class. A preview rule
    preview = True
    measured_precision = 0.38  # 9 of 24
    hint = "remove the graph break so the layers trace inline, or accept one compile per class"
    VALID = ['''
import torch
class Block(torch.nn.Module):
    def __init__(self, layer_idx: int):
        super().__init__()
        self.mlp = torch.nn.Linear(8, 8) if layer_idx % 2 else torch.nn.Identity()
    def forward(self, x):
        return self.mlp(x)  # traced inline for every layer, in one graph
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([Block(i) for i in range(4)])
    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
''']
    INVALID = ['''
import torch
class Block(torch.nn.Module):
    def __init__(self, layer_idx: int):
        super().__init__()
        if layer_idx % 2:
            self.mlp = torch.nn.Linear(8, 8)
        else:
            self.mlp = torch.nn.Identity()
    def forward(self, x):
        gain = x.abs().mean().item()  # a graph break: the block is a frame every layer runs
        return self.mlp(x) * gain  # error: SL308
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([Block(i) for i in range(4)])
    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
''']

    def on_name_use(self, site: NameUse) -> None:
        v = site.value
        if not site.after_break or not v.is_module or not v.has(Tag.INSTANCE):
            return
        classes = " or ".join(f"`{c.rsplit('.', 1)[-1]}`" for c in v.detail.split("|"))
        if site.frame_input:
            where = (f"`{site.fn.symbol}` {site.own_frame_cause()}, so each instance runs it as "
                     f"a frame of its own")
        else:
            where = f"the frame that resumes after the graph break at line {site.break_line}"
        self.report(site, message=f"`{site.name}` is {classes} depending on the instance; "
                                  f"{where} is shared by every instance and guards the "
                                  f"submodule's type here, recompiling for an instance of the "
                                  f"other class")
