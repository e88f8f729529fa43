from shapelint.api import Condition, Rule, varying_size


class SizeBranch(Rule):
    """
    ## What it does
    Finds Python control flow (`if`, `elif`, `while`, a conditional expression, `assert`,
    `and`/`or`, `match`) that depends on a tensor size: `x.shape[0]`, `x.size(1)`, `len(x)`,
    `x.numel()`, or anything computed from them, also through helpers in other modules.

    Only sizes of dims that vary between calls count (the batch and sequence dims of the
    compiled entry's inputs, or the dims declared with `mark_dynamic` or `dynamic-dims`): a
    branch on a dim fixed by a parameter (`x.shape[-1] == self.hidden_size`) costs nothing, and
    a validation check (`if ...: raise`, `assert`) is not reported. `n > 1` and `n == 0` on a
    plain size are decided by its range without a guard. A branch on a size's remainder
    (`if n % 8:`) is SL109's.

    ## Why is this bad?
    Dynamo must pick one side of the branch when it traces. With a dynamic size it installs a
    guard such as `s77 <= 8`; an input on the other side fails the guard and recompiles. With a
    static size every new value recompiles. Under `dynamic=False` or vLLM-style guard dropping
    the wrong branch runs silently.

    ## Example
    ```python
    def forward(self, x):
        if x.shape[0] > 8:
            return self.big(x)
        return self.small(x)
    ```

    ## Use instead
    Make the choice with tensor ops (`torch.where`), with `torch.cond`, or outside the compiled
    region (pick the module before calling it); assert invariants with `torch._check`.
    ```python
    def forward(self, x):
        return torch.cond(x.shape[0] > 8, self.big, self.small, (x,))
    ```
    """

    code = "SL101"
    name = "size-branch"
    summary = "Python control flow depends on a tensor size"
    evidence = ("recompile", "specialization")
    # under 0.9 on held-out real code (issue 19's independent, torch-judged sample of library
    # findings, before this turn's model changes): a preview rule until the zoo's held-out half
    # measures it at 0.9 or more on 20 judged findings (bench/zoo.py score --split held-out);
    # `shapelint run` and the pytest plugin still report its findings torch confirms
    preview = True
    measured_precision = 0.24  # 4 of 17
    hint = ("move the decision out of the compiled region, or use torch.cond / torch.where; "
            "torch._check(...) states an invariant without branching")
    VALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        if x.dim() == 3:
            x = x.mean(1)
        torch._check(x.shape[0] > 0)
        return x.view(x.shape[0], -1)
''', '''
import torch
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
    def forward(self, x):
        if x.shape[-1] != 8:
            raise ValueError(f"expected 8 features, got {x.shape}")
        assert x.shape[0] > 0, f"empty batch {x.shape}"
        h = self.proj(x)
        if h.shape[-1] == 8 and x.shape[0] > 1:
            h = h * 2
        return h
''', '''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        if x.dtype == torch.float16 or self.training:
            x = x.float()
        return x
''', '''
import torch
def keep_mask_length(key, mask):
    seq_len = mask.shape[-1]
    if key.shape[1] > seq_len:  # two sizes of one batch: they vary together
        key = key[:, :seq_len]
    return key
class M(torch.nn.Module):
    def forward(self, key, mask):
        return keep_mask_length(key, mask)
''']
    INVALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        n = x.shape[0]
        if n > 8:  # error: SL101
            return x * 2
        return x + 1
''', '''
import torch
def pad_rows(x, rows):
    missing = rows - x.shape[0]
    if missing > 0:  # error: SL101
        x = torch.cat([x, x.new_zeros(missing, x.shape[1])])
    return x
class M(torch.nn.Module):
    def forward(self, x):
        y = pad_rows(x, 4)
        return y if len(x) < 16 else y * 2  # error: SL101
''', '''
import torch
class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(16, 48)
    def forward(self, x):
        B, T, C = x.size()  # T: a length, whatever x's dims are declared
        q, k, v = self.qkv(x).split(16, dim=2)
        if T > 32:  # error: SL101
            q = q * 2
        return q
def inputs(batch):
    return (torch.randn(batch, 8 * batch, 16),)  # T = 8, 16, ... crosses 32
''']

    def on_condition(self, site: Condition) -> None:
        v = site.value
        if not varying_size(v) or site.validates or v.dim is None:
            return  # a constant dim, an unknown one, or a validation check: no recompile
        if v.has("remainder"):
            return  # a branch on a remainder: SL109's
        self.report(site, f"`{site.short_code()}` depends on the tensor size "
                          f"{site.fn.describe(v.origin)}, which varies between calls "
                          f"({v.dim.label}); Dynamo guards on it and recompiles when an input "
                          f"takes the other branch")
