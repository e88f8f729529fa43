from typing import Set, Tuple

from shapelint.api import GLOBAL, NameUse, Rule


class MutableGlobalRead(Rule):
    """
    ## What it does
    Finds reads, inside a compiled region, of a module-level name that some function of the
    same module rebinds with `global NAME` (a step counter, a mode flag, a cached size).

    ## Why is this bad?
    Dynamo treats the global's current value as a constant and guards on it
    (`G['STEP'] == 3`). Each rebinding fails the guard: the next call recompiles, until the
    cache limit makes it fall back to eager.

    ## Example
    ```python
    STEP = 0
    def advance():
        global STEP
        STEP += 1
    class M(nn.Module):
        def forward(self, x):
            return x * STEP
    ```

    ## Use instead
    Pass the value as a tensor argument, or keep it in a buffer (`self.step.add_(1)`).
    """

    code = "SL304"
    name = "mutable-global-read"
    summary = "A compiled region reads a module global that is rebound elsewhere"
    evidence = ("recompile",)
    # never right on real code so far: 0 of 1 on the zoo's held-out half and 0 of 1 on its tune
    # half (a global the library rebinds only when configured: no replay changes it)
    preview = True
    measured_precision = 0.0  # 0 of 2
    hint = "pass the value in as a tensor, or hold it in a module buffer"
    VALID = ['''
import torch
SCALE = 2.0
class M(torch.nn.Module):
    def forward(self, x):
        return x * SCALE
''']
    INVALID = ['''
import torch
STEP = 0
def advance():
    global STEP
    STEP += 1
class M(torch.nn.Module):
    def forward(self, x):
        return x * STEP  # error: SL304
def inputs(batch):  # the training loop advances STEP between calls
    advance()
    return (torch.randn(batch, 8),)
''']

    def __init__(self, sink) -> None:
        super().__init__(sink)
        self._seen: Set[Tuple[str, str]] = set()

    def on_name_use(self, site: NameUse) -> None:
        if not site.value.has(GLOBAL) or site.passthrough:
            return
        key = (site.fn.path, site.name)
        if key in self._seen:
            return
        self._seen.add(key)
        self.report(site, f"`{site.name}` is a module global that a function rebinds with "
                          f"`global {site.name}`; Dynamo guards on its value here and recompiles "
                          f"whenever it changes")
