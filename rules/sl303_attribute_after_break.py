from shapelint.api import NameUse, Rule, Tag


class AttributeAfterBreak(Rule):
    """
    ## What it does
    Finds the first read of a module's own Python attribute (`if self.layer_idx % 2 == 0:`,
    `cache.update(k, v, self.layer_idx)`) after a graph break in the same method, where the
    module class is built several times
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

    def on_name_use(self, site: NameUse) -> None:
        # the first read of a per-instance attribute after a graph break in its method: the
        # resumed frame guards its value, and every instance brings its own
        if site.after_break and site.value.has(Tag.INSTANCE) and not site.value.is_module and \
                site.fn.is_method and \
                site.name.startswith("self."):  # (a layer index argument is SL104's)
            self.report(site, f"`{site.name}` is read after the graph break at line "
                              f"{site.break_line}; the resumed frame is shared by every instance "
                              f"of the module and guards this attribute's value, so each "
                              f"instance recompiles it")
