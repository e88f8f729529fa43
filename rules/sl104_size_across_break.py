from shapelint.api import Kind, NameUse, Rule, Tag, varying_shape_dim, varying_size


class SizeAcrossBreak(Rule):
    """
    ## What it does
    Finds a Python int that differs between calls (a varying tensor size, a layer index; a
    per-layer string setting such as `pad_mode` too), or a `torch.Size` that holds one
    (`orig_shape = x.shape`), where a frame that takes it as an input first reads it:
    - after a graph break in its function (the first read in each resumed frame);
    - in a function that breaks the graph, which Dynamo compiles as a frame of its own when a
      compiled frame calls it, or whatever it does when eagerly run code calls it (a frame
      Dynamo skipped for a break in its loop runs eagerly from its start, so the calls it
      makes before the loop are such frames too; after a break in a `try` block Dynamo cannot
      resume, and runs the rest of the function eagerly): its first read of such an argument;
    - handed to a call that breaks the graph: the call's line.

    ## Why is this bad?
    A graph break ends the graph; what follows runs in a resume frame that takes the function's
    live locals as inputs, and a function that breaks runs as a frame of its own whose
    arguments are its inputs. A Python int among them is an input like any other: the frame
    guards its value (`seq_len == 8`) and recompiles when it changes, until automatic dynamic
    shapes make it symbolic (one more compile), or on every change under `dynamic=False`.
    A layer index passed into a function that breaks recompiles it for the second layer.

    A Size is a tuple of such ints: the frame guards each (`orig_shape[1] == 64`).

    torch names only the first failing guard of a recompile, and checks a frame's guards in
    their sort order (shorter names first), not in the order the frame reads its inputs. An
    int read from a tensor that the resumed frame also reads, under a name that sorts first,
    is not reported: that tensor's guard fails first, a recompile torch makes itself
    (automatic dynamic shapes) in which the int turns dynamic too, so the int costs nothing
    more (measured: torch named the tensor in longformer 828 and 1352 and case r23, and
    `residuals` before `orig_shape` in DeepSeek-V3's MoE block; it named the int in
    `return x * peak + torch.ones(n, 1)`).

    ## Example
    ```python
    n = x.shape[0]
    peak = x.abs().max().item()  # graph break
    ones = torch.ones(n, 1)      # the resumed frame guards n == <value> here
    return x * peak + ones
    ```

    ## Use instead
    Remove the graph break (keep the value a tensor: `peak = x.abs().max()`), so that the size
    stays symbolic in one graph. Reading the size again after the break does not help: the
    resumed frame guards the tensor's size instead.
    """

    code = "SL104"
    name = "size-across-break"
    summary = "A Python int that differs between calls enters a frame and is guarded by value"
    evidence = ("recompile",)
    # the zoo's held-out half: 43 of 45 right (tune 44 of 46); 23 of 24 a stop after the frame
    # and dims fixes that got it there (issue 19's independent sample, before them: 1 of 12).
    # Past 20 held-out findings and over 0.9 there: a default rule
    preview = False
    measured_precision = 0.96  # 43 of 45
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
        shape = x.shape
        x = x.reshape(-1, x.shape[-1])
        peak = x.abs().max().item()
        return (x * peak).view(shape)  # error: SL104
def inputs(batch):  # the length changes after the batch did: the Size's int guard fails then
    return (torch.randn(batch, 5 if batch < 4 else 7, 8),)
''', '''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        n = x.shape[0]
        peak = x.abs().max().item()
        ones = torch.ones(n, 1)  # error: SL104
        return x * peak + ones
''', '''
import torch
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.arange(64.0))
    def rows(self, n):
        print("rows")
        return self.table[:n]  # error: SL104
    def forward(self, x):
        return x * self.rows(x.shape[0])[:, None]
''', '''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        n = x.shape[0]
        x = x.clone()
        x[x > 0] *= 2  # reads x[mask] first: a break
        return x * n  # error: SL104
''', '''
import torch
class Layer(torch.nn.Module):
    def forward(self, x):
        print("layer")  # a break in the loop below: Dynamo skips M.forward, runs it eagerly
        return x * 2
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([Layer() for _ in range(2)])
    def permute(self, x, n):  # called eagerly: a frame of its own, n its input
        return x.reshape(n, -1) + 1  # error: SL104
    def forward(self, x):
        x = self.permute(x, x.shape[0])
        for layer in self.layers:
            x = layer(x)
        return x
''', '''
import torch
class Conv(torch.nn.Module):
    def __init__(self, pad_mode=None):
        super().__init__()
        self.pad_mode = "constant" if pad_mode is None else pad_mode  # per instance
    @staticmethod
    def _pad(x, mode: str):
        print("pad")  # a break: the helper is a frame of its own, shared by every instance
        if mode != "reflect":  # error: SL104
            return torch.nn.functional.pad(x, (1, 1), mode)
        return x
    def forward(self, x):
        return self._pad(x, self.pad_mode) * 2
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = torch.nn.ModuleList([Conv("replicate" if i % 2 else None) for i in range(4)])
    def forward(self, x):
        for conv in self.convs:
            x = conv(x)[..., 1:-1]
        return x
def inputs(batch):
    return (torch.randn(batch, 3, 8),)
''', '''
import torch
class M(torch.nn.Module):
    def helper(self, x, n):  # called eagerly: a frame of its own, n its input
        return x.reshape(n, -1) + 1  # error: SL104
    def forward(self, x):
        n = x.shape[0]
        try:  # a break in a try block: Dynamo cannot resume, the rest runs eagerly
            peak = x.abs().max().item()
        except RuntimeError:
            peak = 1.0
        ones = torch.ones(n, 1) * peak  # not guarded: this line runs eagerly
        return self.helper(x, n) + ones.sum()
''']

    def on_name_use(self, site: NameUse) -> None:
        if not site.after_break or site.passthrough:
            return
        v = site.value
        shape_dim = varying_shape_dim(v)
        if varying_size(v):
            what = f"holds the tensor size {site.fn.describe(v.origin)}"
        elif shape_dim is not None:
            what = (f"is the shape {site.fn.describe(v.origin)}, which holds a size that varies "
                    f"({shape_dim.label or 'a varying dim'})")
        elif v.has(Tag.DATA) and not v.is_tensor and v.kinds == {Kind.INT}:
            # (an int: a float crossing a break is not specialized by default, measured on
            # the shared case b45: no recompile as `peak` changed)
            what = f"was read from tensor data ({site.fn.describe(v.origin)})"
        elif site.frame_input and v.has(Tag.INSTANCE) and not v.is_tensor and not v.is_module:
            what = "differs from layer to layer (a loop index or a per-layer attribute)"
        else:
            return
        # (a name bound from a Size argument, `bsz, seq_len = input_ids_shape[:2]`, is not one)
        source = "is an argument" if site.name.split(".")[0] in site.fn.parameters \
            else "comes from an argument"
        if site.frame_input:
            where = (f"{source} of `{site.fn.symbol}`, which {site.own_frame_cause()} and so "
                     f"runs as a frame of its own: that frame")
        else:
            where = f"crosses the graph break at line {site.break_line}: the resumed frame"
        # on the statement: torch names the line where the statement's guard is made
        guard = f"`{site.name}[i] == <value>` for each size" if shape_dim is not None \
            else f"`{site.name} == <value>`"
        taken = "its sizes as Python ints and guards their values" if shape_dim is not None \
            else "it as a Python string and guards its value" if v.kinds == {Kind.STR} \
            else "it as a Python int and guards its value"
        self.report(site, node=site.near, message=f"`{site.name}` {what} and {where} takes "
                                                  f"{taken} ({guard}), recompiling when it "
                                                  f"changes")
