from shapelint.api import Rule


class UnusedSuppression(Rule):
    """
    ## What it does
    Reports a `# noqa: SLxxx` or `# shapelint: ignore[SLxxx]` comment whose codes reported
    nothing on that line.

    ## Why is this bad?
    A stale suppression hides the next real hazard that lands on the line, and tells readers a
    problem exists where none does.

    ## Example
    ```python
    y = x * 2  # noqa: SL101
    ```

    ## Use instead
    ```python
    y = x * 2
    ```
    """

    code = "SL001"
    name = "unused-suppression"
    summary = "A suppression comment that suppresses nothing"
    severity = "info"
    hint = "remove the code from the comment"
    VALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > 4:  # noqa: SL101
            return x
        return -x
''']
    INVALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        return x * 2  # noqa: SL101  # error: SL001
''']
