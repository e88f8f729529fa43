from shapelint.api import Call, Rule, untraceable_reason


class UntraceableCall(Rule):
    """
    ## What it does
    Finds calls inside a compiled region that Dynamo cannot put in a graph: recurrent modules
    (`nn.LSTM`, `nn.GRU`, `nn.RNN`), the `torch.backends.cudnn.flags` context manager,
    `torch.cuda.synchronize`, debugger and sleep calls, `torch._check_tensor_all`, which
    reads its condition back into Python, and numpy's random generator (`np.random.*`: the
    rest of numpy is traced through `torch._numpy`).

    ## Why is this bad?
    Dynamo ends the graph before the call, runs it eagerly and starts a new graph after it, on
    every call. An RNN called with state carried across calls also guards on that state.

    ## Example
    ```python
    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out)
    ```

    ## Use instead
    Compile the parts around the call (`torch.compile` the head only), or replace the RNN by
    a traceable loop or a scan over a cell.
    """

    code = "SL403"
    name = "untraceable-call"
    summary = "A call Dynamo cannot trace breaks the graph"
    evidence = ("graph-break",)
    # issue 19's independent, torch-judged sample of library findings; the zoo's held-out half: 2 of 2
    measured_precision = 1.00  # 6 of 6
    hint = "compile around the call, or replace it by something traceable"
    VALID = ['''
import torch
from torch import nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(8, 8)
    def forward(self, x):
        return self.cell(x)
''']
    INVALID = ['''
import torch
from torch import nn
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 4, batch_first=True)
    def forward(self, x):
        out, _ = self.lstm(x)  # error: SL403
        return out
def inputs(batch):
    return (torch.randn(batch, 3, 4),)
''', '''
import torch
from torch import nn
class M(nn.Module):
    def forward(self, x):
        with torch.backends.cudnn.flags(enabled=False):  # error: SL403
            out = x * 2
        return out
''', '''
import torch
from torch import nn
class Rnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 4)
    def forward(self, x):
        return self.lstm(x.permute(2, 0, 1))[0].permute(1, 2, 0)  # error: SL403
class Gru(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 4)
    def forward(self, x):
        return self.gru(x.permute(2, 0, 1))[0].permute(1, 2, 0)  # error: SL403
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        layers = [nn.Conv1d(4, 4, 3, padding=1)]
        layers += [Rnn()]  # a container built from a local list
        self.layers = nn.Sequential(*layers)
        self.more = nn.ModuleList()
        self.more.append(Gru())  # and one grown by append
    def forward(self, x):
        x = self.layers(x)
        for layer in self.more:
            x = layer(x)
        return x
def inputs(batch):
    return (torch.randn(batch, 4, 8),)
''']

    def on_call(self, site: Call) -> None:
        reason = untraceable_reason(site)
        if reason:
            self.report(site, f"`{site.code().splitlines()[0]}`: {reason}; Dynamo breaks the "
                              f"graph here and runs it eagerly")
