from shapelint.api import NameUse, Rule, Tag


class ListLengthAcrossBreak(Rule):
    """
    ## What it does
    Finds a Python list read from a tensor (`sizes = grid.prod(-1).tolist()`) whose length
    follows a dim that varies between calls (one row per image of the batch, or a count of
    rows only the tensor's values decide, as after `repeat_interleave` or `nonzero`), where
    the frame that resumes after the read's graph break first uses it (`torch.split(x,
    sizes)`). The same holds for what keeps that length: the pieces `torch.split(x, sizes)`
    cuts, a list of such splits, a list grown once per image (`append` in a loop over the
    batch's images, in a helper that breaks the graph and so runs eagerly), and an output or
    dict that holds them, returned by a call that breaks the graph and read back after it
    (`outputs["image"].pooler_output`).

    ## Why is this bad?
    `.tolist()` breaks the graph, and the rest of the function runs as a resumed frame that
    takes the list as an input. Dynamo guards its length (`len(sizes) == 2`) at the first use,
    so every new length (a batch with another number of images) compiles that frame again;
    automatic dynamic shapes do not make a list's length symbolic.

    ## Example
    ```python
    split_sizes = (image_grid_thw.prod(-1) // merge**2).tolist()  # graph break
    chunks = torch.split(image_embeds, split_sizes)  # guards len(split_sizes) == <images>
    ```

    ## Use instead
    Keep the sizes a tensor and split with tensor operations (`torch.tensor_split` with a
    tensor of indices), or pad every batch to the same number of images.
    """

    code = "SL207"
    name = "list-length-across-break"
    summary = "A list read from a tensor, as long as a varying dim, is guarded on its length"
    evidence = ("recompile",)
    # the zoo's held-out half: 46 of 46 right (tune 40 of 40); it became a default rule at 9 of
    # 9, right on held-out real code every time it was judged, on guards its replayed INVALID
    # examples show
    preview = False
    measured_precision = 1.0  # 46 of 46
    hint = "keep the sizes a tensor (torch.tensor_split with tensor indices), or pad the batch"
    VALID = ['''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        counts = torch.ones_like(x[:, 0]).long()  # kept a tensor: no break, no list
        return x * counts.cumsum(0)[:, None]
''']
    INVALID = ['''
import torch
from torch import nn
class Merger(nn.Module):
    def forward(self, h, sizes):
        pieces, start = [], 0
        for i in range(len(sizes)):  # once per image: the list grows as long as the batch
            n = sizes[i]
            pieces.append(h[start:start + n] * 2)  # a tensor bound: a break, in a loop
            start = start + n
        return pieces
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.merger = Merger()
    def forward(self, h, sizes):
        feats = self.merger(h, sizes)  # runs eagerly; this frame resumes after the call
        return torch.cat(feats)  # error: SL207
def inputs(batch):
    return torch.randn(batch, 8), torch.ones(batch, dtype=torch.long)
''', '''
import torch
from torch import nn
class Attention(nn.Module):
    def forward(self, x, cu_seqlens=None, scale=1.0):
        lengths = cu_seqlens[1:] - cu_seqlens[:-1]
        splits = [torch.split(t, lengths.tolist()) for t in (x, x * scale)]
        outs = [
            a + b
            for a, b in zip(*splits)  # error: SL207
        ]
        return torch.cat(outs)
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()
    def forward(self, x, grid):
        cu_seqlens = torch.nn.functional.pad(grid[:, 0].cumsum(0), (1, 0))  # one per image
        attn_kwargs = {"cu_seqlens": cu_seqlens, "scale": 2.0}
        return self.attn(x, **attn_kwargs)  # the keyword travels inside the dict
def inputs(batch):
    return torch.randn(batch, 8), torch.ones(batch, 3, dtype=torch.long)
''', '''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        sizes = torch.ones_like(x[:, 0]).long().tolist()
        parts = torch.split(x, sizes)  # error: SL207
        return torch.cat([p * 2 for p in parts])
''', '''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        counts = torch.ones_like(x[:, 0]).long()
        splits = [torch.split(t, counts.tolist()) for t in (x, x * 2)]
        outs = [a + b for a, b in zip(*splits)]  # error: SL207
        return torch.cat(outs)
''', '''
import torch
class M(torch.nn.Module):
    def forward(self, x):
        ones = (x[:, 0] > -1e9).long()
        rows = torch.repeat_interleave(ones, ones)  # as many rows as the values say
        sizes = rows.tolist()
        parts = torch.split(x, sizes)  # error: SL207
        return torch.cat([p * 2 for p in parts])
''', '''
import torch
class Features:
    pieces = None
class M(torch.nn.Module):
    def features(self, pixels):
        out = Features()
        counts = torch.ones_like(pixels[:, 0]).long()  # one image per row
        out.pieces = torch.split(pixels, counts.tolist())
        return out
    def forward(self, x, pixels=None):
        found = {}
        if found.get("image") is None and pixels is not None:
            found["image"] = self.features(pixels)  # the call breaks: this frame resumes after it
        pieces = found["image"].pieces
        return x + torch.cat([p * 2 for p in pieces])  # error: SL207
def inputs(batch):
    return torch.randn(batch, 8), torch.randn(batch, 8)
''', '''
import torch
class Features:
    pieces = None
class M(torch.nn.Module):
    def features(self, pixels):
        out = Features()
        out.pieces = torch.split(pixels, torch.ones_like(pixels[:, 0]).long().tolist())
        return out
    def forward(self, x):
        found = {"image": self.features(x)}
        y = x * 2
        return y + torch.cat(found["image"].pieces)  # error: SL207
''']

    def on_name_use(self, site: NameUse) -> None:
        if site.after_break and not site.passthrough and site.value.is_varying_list:
            dim = site.value.dim
            rows = dim.label if dim is not None and dim.label else "a dim that varies"
            # (a list grown by `append` in a loop has no data read to name)
            length = f"has a length read from tensor data ({site.fn.describe(site.value.origin)})" \
                if site.value.has(Tag.DATA) else "was grown in a loop"
            self.report(site,  # the read's own line: Dynamo guards the list where it loads it
                        message=f"`{site.name}` {length}: one item per row of "
                                f"{rows}; the graph break at line {site.break_line} hands it to "
                                f"the resumed frame, which guards its length "
                                f"(`len({site.name}) == <rows>`) and recompiles for each new one")
