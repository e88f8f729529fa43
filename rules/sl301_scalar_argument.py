from typing import Dict, List

from shapelint.api import Condition, NameUse, Origin, Rule, Value


class ScalarArgument(Rule):
    """
    ## What it does
    Finds Python `int` arguments of a compiled entry that change between calls: an int with no
    default (the caller passes a new one each time: a decode step, a max length, a node
    count), annotated or named like a count (`n`, `num_*`, `*_len`, `max_*`, or
    `scalar-arg-names`). The finding sits where torch guards on the value: the branch that
    tests it, or else its first use, followed through helpers in other modules.

    Flags (`return_dict`, `is_causal`) and defaulted ints are settings that stay the same
    between calls, and the int arguments of a submodule's `forward` are values its parent
    traced, not graph inputs: neither is reported. A float that changes costs one recompile
    and is then symbolic (floats are not specialized): it is reported only where it steers
    control flow.

    ## Why is this bad?
    Dynamo treats a Python int as a constant: the first call installs a guard `n == 3` and the
    next value recompiles (then automatic dynamic may make it symbolic, or not, if it is
    compared). A value that changes every call (a decode step, a max length, a node count)
    recompiles until the cache limit and then falls back to eager.

    ## Example
    ```python
    def forward(self, x, max_seqlen: int):
        pos = torch.arange(max_seqlen)
    ```

    ## Use instead
    Derive the number from a tensor you already pass (`x.shape[1]`), pass it as a 0-d tensor,
    or mark it dynamic (`torch._dynamo.mark_dynamic` on a tensor carrying it).
    """

    code = "SL301"
    name = "python-scalar-argument"
    summary = "A Python int/bool argument of a compiled entry is guarded on its value"
    evidence = ("recompile", "specialization")
    # under 0.9 on held-out real code: 0 of 10 right in issue 19's independent,
    # torch-judged sample of transformers, diffusers and timm findings
    preview = True
    needs_entry_scope = True  # a helper's use is reported for the entry whose argument it is
    measured_precision = 0.00
    hint = "derive it from a tensor's shape, pass it as a tensor, or keep it constant"
    VALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, logits, temperature: float):
        return (logits / temperature).softmax(-1)
def inputs(batch):  # a new temperature on each call
    return torch.randn(4, 8), 1.0 + batch / 10
''', '''
import torch
class Inner(torch.nn.Module):
    def forward(self, x, k: int):
        return x * k
class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
    def forward(self, x):
        return self.inner(x, 2)
''', '''
import torch
class GPT(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(100, 16)
    def forward(self, idx):
        b, t = idx.size()  # `idx` is used as a tensor: token ids, not an int
        return self.wte(idx)
def inputs(batch):
    return (torch.randint(0, 100, (batch, 8)),)
''']
    INVALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x, y: int):
        x = x + y
        if y == 2:  # error: SL301
            return x - 1
        return x
def inputs(batch):  # a new y on each call
    return torch.randn(4, 8), batch
''', '''
import torch
def gather(q, max_len: int):
    return q.new_zeros(q.shape[0], max_len)  # error: SL301
class M(torch.nn.Module):
    def forward(self, q, max_decode_len: int):
        return gather(q, max_decode_len)
def inputs(batch):  # a new max_decode_len on each call
    return torch.randn(4, 8), batch
''']

    def __init__(self, sink) -> None:
        super().__init__(sink)
        self._first_use: Dict[Origin, NameUse] = {}
        self._branches: Dict[Origin, List[Condition]] = {}
        self._roots: Dict[Origin, str] = {}

    def on_name_use(self, site: NameUse) -> None:
        origin = site.value.origin
        if origin is None or site.passthrough or not _changes(site.value):
            return
        self._first_use.setdefault(origin, site)
        self._roots.setdefault(origin, origin.scope or site.fn.root)

    def on_condition(self, site: Condition) -> None:
        v = site.value
        if _changes(v) and not v.is_tensor and not v.is_size and v.origin is not None \
                and not site.validates:
            self._branches.setdefault(v.origin, []).append(site)
            self._roots.setdefault(v.origin, v.origin.scope or site.fn.root)

    def on_finish(self) -> None:
        for origin in list(dict.fromkeys(list(self._branches) + list(self._first_use))):
            root = self._roots.get(origin, "")  # a submodule's argument: its caller decides
            if root and self.is_nested_entry(root):  # known already: skip the report's cost
                continue
            kind = self._kind(origin)
            branches = self._branches.get(origin)
            where = f"`{origin.symbol}` (line {origin.line})"
            if branches:
                for branch in branches[:1]:
                    self.report(branch, f"`{branch.short_code()}` tests the Python {kind} argument "
                                      f"`{origin.text}` of {where}; Dynamo guards on its value "
                                      f"and recompiles for each value that flips the test",
                                unless_nested=root)
            elif kind != "float" and origin in self._first_use:
                site = self._first_use[origin]
                self.report(site, f"the Python {kind} argument `{origin.text}` of {where} is first "
                                  f"used here; Dynamo specializes it (guard `{origin.text} == "
                                  f"<value>`) and recompiles when the value changes",
                            unless_nested=root)

    def _kind(self, origin: Origin) -> str:
        site = self._first_use.get(origin)
        if site is not None:
            return site.value.detail or "int"
        branches = self._branches.get(origin) or []
        return (branches[0].value.detail if branches else "") or "int"


def _changes(v: Value) -> bool:
    """An entry's scalar argument taken to change between calls (see regions.py)."""
    return v.is_scalar_arg and v.varies is True
