from shapelint.api import Condition, Rule


class SizeZeroOne(Rule):
    """
    ## What it does
    Finds a branch that compares a plain size with 0 or 1 (`if x.shape[0] == 1:`). Off by
    default: enable it when you use `mark_unbacked`, guard-free compilation (vLLM) or expect
    batch 1 in production.

    ## Why is this bad?
    torch assumes dynamic sizes are >= 2, so it decides such tests without a guard, using the
    size-1 specialization: a batch of 1 gets its own graph, and with unbacked sizes the test is
    a data-dependent error.

    ## Example
    ```python
    if x.size(0) == 1:
        x = x.squeeze(0)
    ```

    ## Use instead
    Handle the singleton case with broadcasting, or with `torch._check(x.size(0) != 1)` when it
    cannot happen.
    """

    code = "SL105"
    name = "size-zero-one-branch"
    summary = "A branch compares a tensor size with 0 or 1 (size-1 specialization)"
    severity = "info"
    evidence = ("specialization",)
    default_enabled = False
    hint = "use broadcasting, or torch._check the invariant"
    VALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        return x.view(x.shape[0], -1)
''']
    INVALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        if x.size(0) == 1:  # error: SL105
            x = x * 2
        return x
''']

    def on_condition(self, site: Condition) -> None:
        if site.value.zero_one:
            self.report(site, f"`{site.short_code()}` compares the size "
                              f"{site.fn.describe(site.value.origin)} with 0/1; torch decides it by "
                              f"the size-1 specialization, so batch 1 gets its own graph")
