from shapelint.api import Condition, Rule


class OptionalArgumentBranch(Rule):
    """
    ## What it does
    Finds branches on whether an argument that defaults to `None` holds a tensor
    (`if mask is not None:`). Off by default: enable it where callers alternate.

    ## Why is this bad?
    `None` and a tensor are different guards: a model called sometimes with a mask and
    sometimes without compiles one graph for each combination of present arguments.

    ## Example
    ```python
    def forward(self, x, mask=None):
        if mask is not None:
            x = x.masked_fill(mask, 0)
    ```

    ## Use instead
    Always pass the argument (an all-true mask), so one graph serves every call.
    """

    code = "SL305"
    name = "optional-argument-branch"
    summary = "A branch on whether a None-default argument holds a tensor"
    severity = "info"
    evidence = ("recompile",)
    default_enabled = False
    hint = "always pass a tensor (e.g. an all-true mask) so that one graph serves every call"
    VALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x, mask):
        return x.masked_fill(mask, 0)
def inputs(batch):
    return torch.randn(batch, 8), torch.rand(batch, 8) > 0.5
''']
    INVALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x, mask=None):
        if mask is not None:  # error: SL305
            x = x.masked_fill(mask, 0)
        return x * 2
def inputs(batch):  # a mask on some calls only
    return torch.randn(batch, 8), (torch.rand(batch, 8) > 0.5 if batch % 2 else None)
''']

    def on_condition(self, site: Condition) -> None:
        v = site.value
        if v.detail == "none-test" and not v.is_size and v.origin is not None:
            self.report(site, f"`{site.short_code()}` tests whether an optional argument was passed; "
                              f"each combination of present arguments compiles its own graph")
