from shapelint.api import Call, Rule, is_python_io


class PythonIO(Rule):
    """
    ## What it does
    Finds `print(...)`, `logging`/logger calls (`logger.warning_once` too) and
    `warnings.warn(...)` inside a compiled region (measured: each graph-breaks on torch 2.13),
    where they run on the path the model takes as configured: a warning under a test of
    settings (`if use_cache and self.training:`, `if verbose:`, `if head_mask is not None:`)
    or on a path that raises is not reported; one under a test of sizes or data is, and so is
    one on the side an optional input takes when the caller leaves it out
    (`if prompt_ids is None: logger.warning_once(...)`).

    ## Why is this bad?
    Dynamo cannot put I/O in a graph: it breaks the graph, runs the call eagerly and starts a
    new frame after it, paying a graph break on every call, even when the message is never
    shown.

    ## Example
    ```python
    if x.shape[0] > self.max_batch:
        warnings.warn("batch larger than tuned maximum")
    ```

    ## Use instead
    Log outside the compiled region, or guard the call with
    `if not torch.compiler.is_compiling():`.
    """

    code = "SL203"
    name = "python-io-in-region"
    summary = "print / logging / warnings inside a compiled region"
    evidence = ("graph-break",)
    measured_precision = 1.0  # the zoo's held-out half: 3 of 3 (bench/zoo.py score, 521 models)
    registry_ids = ("GB0007",)
    hint = "move the I/O out of the compiled region, or skip it when torch.compiler.is_compiling()"
    VALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        return x.sum()
def train(model, x):
    print(model(x))
''']
    INVALID = ['''
import logging
import warnings
import torch
logger = logging.getLogger(__name__)
class M(torch.nn.Module):
    def forward(self, x):
        print("shape", x.shape)  # error: SL203
        logger.debug("step")  # error: SL203
        warnings.warn("slow path")  # error: SL203
        return x
''', '''
import logging
import torch
logger = logging.getLogger(__name__)
class M(torch.nn.Module):
    def forward(self, x, prompt_ids=None, head_mask=None):
        if prompt_ids is None:  # left out, as callers usually do
            logger.warning("no prompt ids: detecting the language")  # error: SL203
            prompt_ids = torch.zeros(1)
        if head_mask is not None:  # a caller that passes it takes this path
            logger.warning("head_mask is ignored")  # error: SL203
        return x + prompt_ids
def inputs(batch):
    return (torch.randn(batch, 4), None, torch.ones(batch))
''']

    def on_call(self, site: Call) -> None:
        # a warning under a test of settings (`if use_cache and self.training:`, `if verbose:`)
        # runs only when the model is configured that way; a test of whether the caller passed
        # an optional input (`if head_mask is not None:`) is not a setting: both sides run
        if is_python_io(site) and not site.flag_guarded:
            self.report(site, f"`{site.code().splitlines()[0]}` does Python I/O inside the "
                              f"compiled region; Dynamo breaks the graph here")
