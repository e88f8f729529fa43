from shapelint.api import Condition, Rule


class ValueBranch(Rule):
    """
    ## What it does
    Finds Python control flow that depends on a tensor's *values*: `if t.any():`,
    `while (x > 0).sum():`, `if loss > best:`, `bool(t)`, `t and ...`, and a tuple or list
    comparison with a tensor item (`assert list(t.size()) == [b, n, k]` with `k =
    mask.sum().max()`), where Python asks the item comparison for its truth.

    A test that runs only in some configurations is not reported: under a test of settings
    (`if self.training:`, `if self.config.use_x:`), or after one in the same `and`. A test of
    how the model is called is no setting: whether an optional input was given (`if mask is
    not None:`), or an input's dtype (`x.dtype == torch.float16 and torch.isinf(x).any()`
    breaks the graph on every call in float16, T5's and BART's overflow clamp).

    ## Why is this bad?
    Dynamo cannot know a value at trace time: it breaks the graph at the branch (registry
    GB0170, "Data-dependent branching"), runs the test in Python and compiles what follows as a
    new frame. Under `fullgraph=True` it is an error.

    ## Example
    ```python
    if x.sum() > 0:
        return self.a(x)
    return self.b(x)
    ```

    ## Use instead
    ```python
    return torch.where(x.sum() > 0, self.a(x), self.b(x))
    # or: torch.cond(x.sum() > 0, self.a, self.b, (x,))
    ```
    """

    code = "SL201"
    name = "value-branch"
    summary = "Python control flow depends on a tensor value"
    evidence = ("graph-break",)
    # a preview rule while it was under 0.9 on held-out real code (issue 19's sample: 11 of
    # 14; the zoo's held-out half: 35 of 44, its 8 false findings all on tests that run only
    # in some configurations). Left alone, as SL203 leaves them, those tests
    # (`x.dtype == torch.float16 and torch.isinf(x).any()`, `self.training and ...`) take it to
    # 26 of 26 there (bench/zoo.py score --split held-out), past the 20 needed to leave
    # preview; 28 of 29 with 572 models replayed; 30 of 31 once a test of an input's dtype
    # counts as how the model is called (the zoo replays half-precision callers too); 35 of
    # 37 once `module-mode = "eval"` walked the layers LayerDrop's `to_drop` used to hide
    # 36 of 38; 35 of 37 once ViLT, cited by stop 37's sample, moved to tune
    measured_precision = 0.95  # 35 of 37
    registry_ids = ("GB0170", "GB0035")
    hint = "use torch.where / torch.cond, or move the decision out of the compiled region"
    VALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        if not isinstance(x, torch.Tensor) or torch.compiler.is_compiling():
            x = torch.as_tensor(x)
        y = torch.where(x > 0, x, torch.zeros_like(x))
        return torch.cond(x.sum() > 0, torch.sin, torch.cos, (y,))
''']
    INVALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        if x.dtype == torch.float16 and torch.isinf(x).any():  # error: SL201
            x = torch.nan_to_num(x)
        return x * 2
def inputs(batch):
    return (torch.randn(batch, 8).half(),)  # a half-precision caller
''', '''
import torch
class M(torch.nn.Module):
    def forward(self, x, mask):
        if mask.any() and x.shape[0] > 2:  # error: SL201
            x = x * 2
        return x
''', '''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        stop = torch.sigmoid(x).min()
        while stop > 0.5:  # error: SL201
            stop = stop - 0.1
        return x
''']

    def on_condition(self, site: Condition) -> None:
        # a tensor on every path (None aside): `skip = False; if self.training: skip = p < q`
        # is a Python bool while the model serves, and a tensor only while it trains
        if site.value.is_sure_tensor and not site.flag_guarded:
            when = f" (on the calls where `{site.only_when}`)" if site.only_when else ""
            if site.context == "compare":
                self.report(site, f"`{site.short_code()}` compares a tensor item of a list or "
                                  f"tuple; Python asks that item's comparison for its truth, "
                                  f"which Dynamo cannot decide: it breaks the graph here{when}")
                return
            self.report(site, f"`{site.short_code()}` is a tensor value used as a Python bool; Dynamo "
                              f"breaks the graph here to evaluate it{when}")
