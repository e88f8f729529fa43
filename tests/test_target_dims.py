"""The static pass reads a configured target's ``inputs`` (with ast, never importing it) to know
which dims of the forward's inputs vary: what ``shapelint run`` will replay."""

from __future__ import annotations

import json
import os

from conftest import write_tree
from shapelint.config import load_settings
from shapelint.static.target_inputs import TargetDims
from shapelint.values import Dim
from test_cli import run

MODEL = """
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x, mask, n_heads: int = 2):
        if x.shape[1] > 8:
            x = x * 2
        if x.shape[2] > 8:
            x = x + 1
        if x.shape[0] > 4:
            x = x - 1
        return x * mask


def build():
    return Net().eval()


def inputs(batch, seq_len=5):
    x = torch.randn(batch, seq_len, 16)
    return (x, (x > 0).float())
"""

CONFIG = """
[[targets]]
name = "net"
model = "model.py:build"
inputs = "model.py:inputs"
seq-lens = [5, 9]
"""


def _dims(tmp_path, config: str, files) -> TargetDims:
    write_tree(tmp_path, {"shapelint.toml": config, **files})
    settings = load_settings(str(tmp_path), None, None)
    return TargetDims(settings.targets, settings.base_dir)


def test_tuple_dict_and_pair_returns_map_to_the_forward_parameters(tmp_path):
    shapes = """
        import torch
        from torch import nn

        class Net(nn.Module):
            def forward(self, input_ids, pixel_values, attention_mask=None):
                return input_ids

        def build():
            m = Net()
            return m.to("cpu")

        def as_tuple(batch, seq_len):
            ids = torch.randint(0, 100, (batch, seq_len))
            return ids, torch.rand(batch, 3, 32, 32)

        def as_dict(batch, seq_len):
            return {"attention_mask": torch.ones(batch, seq_len, dtype=torch.long)}

        def as_pair(b, n):
            return (torch.zeros(b, n),), {"attention_mask": torch.ones(4, n)}
        """
    config = "".join(f'[[targets]]\nname = "{f}"\nmodel = "m.py:build"\ninputs = "m.py:{f}"\n'
                     f'seq-lens = [4, 8]\n' for f in ("as_tuple", "as_dict", "as_pair"))
    got = _dims(tmp_path, config, {"m.py": shapes})
    V, C = Dim.VARY, Dim.CONST
    assert got.dims["input_ids"] == {0: V, 1: V}
    assert got.dims["pixel_values"] == {0: V, 1: C, 2: C, 3: C}
    # as_dict varies dim 0, as_pair fixes it at 4: a dim any target varies varies
    assert got.dims["attention_mask"] == {0: V, 1: V}
    assert got.files == {os.path.join(str(tmp_path), "m.py")}


def test_one_batch_size_or_no_lengths_fix_the_dim(tmp_path):
    config = CONFIG.replace('seq-lens = [5, 9]', 'batch-sizes = [4]')
    got = _dims(tmp_path, config, {"model.py": MODEL})
    assert got.dims["x"] == {0: Dim.CONST, 1: Dim.CONST, 2: Dim.CONST}
    assert "n_heads" not in got.dims  # the inputs return two values


def test_what_cannot_be_read_says_nothing(tmp_path):
    helper = MODEL.replace("    x = torch.randn(batch, seq_len, 16)\n    return (x, (x > 0).float())",
                           "    return make(batch, seq_len)")
    assert _dims(tmp_path, CONFIG, {"model.py": helper}).dims == {}
    assert _dims(tmp_path, CONFIG.replace("model.py:inputs", "missing.py:inputs"),
                 {"model.py": MODEL}).dims == {}
    assert _dims(tmp_path, CONFIG, {"model.py": "def inputs(:\n"}).dims == {}


def test_findings_follow_the_dims_the_target_replays(tmp_path):
    """x dim 1 varies (seq-lens), dim 2 is fixed: the branch on it is not a hazard; without the
    target, dim 1 is not known to vary and the batch dim is assumed."""
    write_tree(tmp_path, {"shapelint.toml": CONFIG, "model.py": MODEL})
    assert _lines(tmp_path, ".") == [7, 11]
    one_batch = CONFIG.replace('seq-lens = [5, 9]', 'batch-sizes = [4]\nseq-lens = [5, 9]')
    write_tree(tmp_path, {"shapelint.toml": one_batch})
    assert _lines(tmp_path, ".") == [7]
    write_tree(tmp_path, {"shapelint.toml": "# no targets\n"})
    assert _lines(tmp_path, ".") == [11]


def _lines(root, path: str):
    out = run(["check", path, "--select", "SL101", "--format", "json"], root)
    return sorted(f["line"] for f in json.loads(out.stdout)["findings"])


def test_editing_the_inputs_invalidates_the_cache(tmp_path):
    """The inputs file is a dependency of the cached result even when it is not checked."""
    model = MODEL.split("\ndef build")[0]
    helpers = "from model import Net\nimport torch\n\ndef build():\n    return Net()\n\n" \
              "def inputs(batch, seq_len=5):\n    return (torch.randn(batch, seq_len, 16),)\n"
    config = CONFIG.replace("model.py:build", "helpers/h.py:build") \
        .replace("model.py:inputs", "helpers/h.py:inputs")
    write_tree(tmp_path, {"shapelint.toml": config, "src/model.py": model, "helpers/h.py": helpers})

    assert _lines(tmp_path, "src") == [7, 11]
    (tmp_path / "helpers" / "h.py").write_text(helpers.replace("seq_len, 16", "5, 16"))
    assert _lines(tmp_path, "src") == [11]
