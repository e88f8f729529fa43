from shapelint.api import NameUse, Rule, varying_size


class SizeAcrossBreak(Rule):
    """
    ## What it does
    Finds a Python int computed from a varying tensor size before a graph break and read after
    it, in the same function: the first read after the break.

    ## Why is this bad?
    A graph break ends the graph; what follows runs in a resume frame that takes the function's
    live locals as inputs. A Python int among them is an input like any other: the resume frame
    guards its value (`seq_len == 8`) and recompiles when it changes, until automatic dynamic
    shapes make it symbolic (one more compile), or on every change under `dynamic=False`.

    This is a preview rule: torch does not always guard at the read this rule points to (when
    the function is inlined into a caller, the caller's resume frame guards the value it gets
    back, on the caller's line), so it is right less than nine times in ten on real code.

    ## Example
    ```python
    n = x.shape[0]
    peak = x.abs().max().item()  # graph break
    return x * peak + torch.ones(n, 1)
    ```

    ## Use instead
    Remove the graph break (keep the value a tensor: `peak = x.abs().max()`), so that the size
    stays symbolic in one graph. Reading the size again after the break does not help: the
    resumed frame guards the tensor's size instead.
    """

    code = "SL104"
    name = "size-across-break"
    summary = "A size held in a Python int crosses a graph break and is guarded by value"
    evidence = ("recompile",)
    measured_precision = 0.5  # 2 of 4 (bench/zoo.py score); 2 of 5 on tests/cases/real
    preview = True
    hint = "remove the graph break (keep the value a tensor), so that the size stays symbolic"
    VALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        n = x.shape[0]
        peak = x.abs().max()
        return x * peak + torch.ones(n, 1)
''']
    INVALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        n = x.shape[0]
        peak = x.abs().max().item()
        return x * peak + torch.ones(n, 1)  # error: SL104
''']

    def on_name_use(self, site: NameUse) -> None:
        if site.after_break and not site.passthrough and varying_size(site.value):
            # on the statement: torch names the line where the statement's guard is made
            self.report(site, node=site.near, message=f"`{site.name}` holds the tensor size "
                              f"{site.fn.describe(site.value.origin)} and crosses the graph break "
                              f"at line {site.break_line}: the resumed frame takes it as a Python "
                              f"int and guards its value (`{site.name} == <value>`), recompiling "
                              f"when it changes")
