from typing import Set

from shapelint.api import Call, Condition, Rule, Tag, graph_break_reason


class AttributeAfterBreak(Rule):
    """
    ## What it does
    Finds a branch on a module's own Python attribute (`if self.layer_idx % 2 == 0:`) placed
    after a graph break in the same `forward`, where the module class is built several times
    (the blocks of a `ModuleList`) and the attribute holds each instance's own value (stored
    from an `__init__` argument). A module built once, or an attribute every instance shares,
    costs no recompile.

    ## Why is this bad?
    After a graph break, the rest of `forward` becomes its own frame, and its code object is
    shared by every instance of the module. The frame guards on `self.layer_idx`, so each
    instance (layer 0, 1, 2, ...) fails the previous one's guard and recompiles the same code:
    one compile per layer.

    ## Example
    ```python
    gain = x.abs().mean().item()      # graph break
    if self.layer_idx % 2 == 0:       # one recompile per layer
        ...
    ```

    ## Use instead
    Remove the graph break, or decide by attribute before it (choose the submodule in
    `__init__`).
    """

    code = "SL303"
    name = "attribute-branch-after-break"
    summary = "A branch on a module attribute after a graph break recompiles per instance"
    evidence = ("recompile",)
    hint = "remove the graph break, or resolve the attribute in __init__"
    VALID = ['''
import torch
class Block(torch.nn.Module):
    def __init__(self, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
    def forward(self, x):
        if self.layer_idx % 2 == 0:
            return x * 2
        return x
def build():
    return torch.nn.Sequential(*[Block(i) for i in range(4)])
''']
    INVALID = ['''
import torch
class Block(torch.nn.Module):
    def __init__(self, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
    def forward(self, x):
        gain = x.abs().mean().item()
        if self.layer_idx % 2 == 0:  # error: SL303
            return x * 2
        return x * gain
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(i) for i in range(4)])
    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x
''']

    def __init__(self, sink) -> None:
        super().__init__(sink)
        self._broken: Set[str] = set()

    def on_call(self, site: Call) -> None:
        if graph_break_reason(site):
            self._broken.add(site.fn.qualname)

    def on_condition(self, site: Condition) -> None:
        v = site.value
        if site.fn.qualname in self._broken and v.has(Tag.INSTANCE) and \
                not (v.is_tensor or v.is_size) and site.fn.is_method:
            self.report(site, f"`{site.short_code()}` tests module state after a graph break; the "
                              f"resumed frame is shared by every instance, so each instance's "
                              f"value recompiles it")
