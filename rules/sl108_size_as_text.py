from shapelint.api import Format, Rule, varying_size


class SizeAsText(Rule):
    """
    ## What it does
    Finds the size of a dim that varies between calls formatted as text where the compiled
    region runs: an f-string part, `str()`, `repr()`, `format()`, `"%d" % n`. Messages built
    for a check count too: `torch_compilable_check(ok, f"... {n} ...")`, timm's
    `_assert(ok, f"...")` and `logger.warning(f"...")` build their string on every call,
    before the callee decides whether to use it. A string built only under a branch that
    raises is not reported: the branch does not run. Nor is a size the frame already pinned
    (an earlier f-string, `range()` or `math.log` of it): it is a constant of the graph there.

    ## Why is this bad?
    A string cannot hold a symbolic size. In an f-string Dynamo asks for the size's concrete
    value: it specializes the size (a guard `s0 == 8`) and compiles the region again for every
    new size, even though the tensors themselves were dynamic; `format(n)` does the same.
    `"%d" % n`, `str(n)` and `repr(n)` break the graph instead (torch 2.13), and `%` makes
    Dynamo skip the whole function.

    ## Example
    ```python
    n_features = image_features.shape[0]
    torch_compilable_check(n_tokens == n_features, f"tokens {n_tokens}, features {n_features}")
    ```

    ## Use instead
    Leave the size out of the message (name the tensors whose sizes disagree), build the
    message only in the branch that raises, or log outside the compiled region. (A callable
    message, `torch._check(ok, lambda: f"...")`, breaks the graph in torch 2.13.)
    """

    code = "SL108"
    name = "size-as-text"
    summary = "A varying tensor size is formatted as text, which specializes it"
    evidence = ("specialization", "recompile", "graph-break")
    # stop 38: an independent torch-judged sample of its findings in transformers, diffusers and
    # timm found 16 of 16 right (the dim varied on purpose), but the zoo's held-out half, where
    # torch judges the sizes the sweep varies, 11 of 16 (stop 40): a preview rule until that
    # half measures it at 0.9 or more (tune 9 of 10)
    preview = True
    measured_precision = 0.69  # 11 of 16
    hint = "leave the size out of the message, or build it only in the branch that raises"
    VALID = ['''
import torch
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
    def forward(self, x):
        h = self.proj(x)
        tag = f"width {h.shape[-1]}"  # a fixed dim: its value never changes
        if x.dim() != 2:  # never true: the message is never built
            raise ValueError(f"expected rows of features, got {x.shape[0]} of rank {x.dim()}")
        return h * len(tag)
''']
    INVALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        key = f"tri_{x.shape[0]}"  # error: SL108
        return x * 2
''', '''
import torch
def check(ok, message):
    return ok
class M(torch.nn.Module):
    def forward(self, x):
        n = x.shape[0]
        check(n > 0, "got %d rows" % n)  # error: SL108
        return x * 2
''', '''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        n = x.shape[0]
        head = f"rows {n}"  # error: SL108
        tail = f"of {n} rows"  # n is a constant of the graph from the line above: no new guard
        return x * (len(head) + len(tail))
''']

    def on_format(self, site: Format) -> None:
        if varying_size(site.value):
            dim = site.value.dim.label if site.value.dim else "varies"
            self.report(site, f"`{site.short_code()}` formats the tensor size "
                              f"{site.fn.describe(site.value.origin)} ({dim}) as text; that "
                              f"specializes it")
