"""Coverage of a replay (shapelint/harness/coverage.py): the lines the compiled region ran."""

from __future__ import annotations

import logging
import os

import pytest

from conftest import write_tree
from shapelint.harness.coverage import LOGGER, Coverage, merge


def test_new_lines_reports_each_line_once_and_merge_unions():
    cov = Coverage()
    cov.lines = {"/a.py": {3, 1}, "/torch/x.py": {5}}
    assert cov.new_lines(lambda p: "torch" not in p) == {"/a.py": [1, 3]}
    cov.lines["/a.py"].add(7)
    assert cov.new_lines(lambda p: "torch" not in p) == {"/a.py": [7]}
    assert cov.new_lines() == {"/torch/x.py": [5]}
    assert cov.executed() == {"/a.py": [1, 3, 7], "/torch/x.py": [5]}
    assert merge([{"/a.py": [3]}, {"/a.py": [1, 3], "/b.py": [2]}, {}]) == {"/a.py": [1, 3], "/b.py": [2]}


def test_text_fallback_and_detach_restore_the_logger():
    logger = logging.getLogger(LOGGER)
    before = (logger.level, logger.propagate)
    cov = Coverage()
    cov.attach()
    logger.debug("%s", "TRACE starts_line /p/m.py:12 in forward (M.forward) (inline depth: 1)\n    x = 1")
    cov.detach()
    logger.debug("%s", "TRACE starts_line /p/m.py:13 in forward\n    y = 2")
    assert cov.executed() == {"/p/m.py": [12]}
    assert (logger.level, logger.propagate) == before


MODEL = """
import torch
from helper import double


class M(torch.nn.Module):
    def forward(self, x):
        if not torch.compiler.is_compiling():
            x = x + 100  # eager only: not in the region
        y = double(x)
        if x.shape[0] > 4:
            y = y.relu()
        else:
            y = y.sigmoid()
        return y


def build():
    return M()


def inputs(batch):
    return (torch.randn(batch, 3),)
"""

HELPER = """
def double(x):
    y = x * 2
    return y
"""


@pytest.mark.slow
def test_replay_records_the_lines_dynamo_traced(tmp_path):
    pytest.importorskip("torch")
    from shapelint.harness.runner import run_target
    from shapelint.harness.target import TargetSpec

    write_tree(tmp_path, {"model.py": MODEL, "helper.py": HELPER})
    spec = TargetSpec(name="m", model="model.py:build", inputs="model.py:inputs",
                      base_dir=str(tmp_path), batch_sizes=[2, 3])
    res = run_target(spec)
    assert res.error is None, res
    executed = {os.path.basename(p): ls for p, ls in res.executed.items()}
    # def lines count (Dynamo starts there); the is_compiling() body (8) is skipped, and so is
    # the branch no shape took (11)
    assert executed == {"model.py": [6, 7, 9, 10, 13, 14], "helper.py": [1, 2, 3]}
    # torch's own files are not user code, so they never appear
    assert not any("torch" in p.split(os.sep) for p in res.executed)

    spec.batch_sizes = [2, 3, 8]
    res = run_target(spec)
    executed = {os.path.basename(p): ls for p, ls in res.executed.items()}
    assert executed["model.py"] == [6, 7, 9, 10, 11, 13, 14]  # batch 8 took the other branch


# -- blame through a decorated forward (what every transformers model is) --------------------------
WRAPPED = """
import functools
import torch


def capture_outputs(func):
    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        return func(self, *args, **kwargs)
    return wrapper


class M(torch.nn.Module):
    scale = 0.1234567891234567

    @capture_outputs
    def forward(self, x):
        n = x.new_ones(x.shape[2]).sum()  # the first use of the length
        q = x[:, :, -5:, :]  # a negative slice start guards the length (< 6)
        return torch.nn.functional.scaled_dot_product_attention(q, q, q, scale=self.scale) * n


def build():
    return M()


def inputs(batch, seq_len):
    return {"x": torch.randn(batch, 2, seq_len, 4)}
"""


@pytest.mark.slow
def test_guards_of_a_wrapped_forward_are_reevaluated(tmp_path):
    """The compiled frame is the wrapper, whose guards read ``L['kwargs']['x']``: the worker
    gives the re-evaluation that name, so the recompile is blamed on the slice (line 18) that
    guards the sequence length, not on the first use of the size (line 17: what the reason text
    names first). The float guard on
    ``scale`` (``Eq(zf.., 0.123456789123457)``, a rounded constant) is not re-evaluated."""
    pytest.importorskip("torch")
    from shapelint.harness.runner import run_target
    from shapelint.harness.target import TargetSpec

    write_tree(tmp_path, {"model.py": WRAPPED})
    spec = TargetSpec(name="w", model="model.py:build", inputs="model.py:inputs",
                      base_dir=str(tmp_path), batch_sizes=[2], seq_lens=[3, 9], dynamic="true")
    res = run_target(spec)
    assert res.error is None, res
    blamed = {(os.path.basename(g.path), g.line, g.guard) for e in res.of_kind("recompile")
              for g in e.guards if g.path}
    assert {(p, ln) for p, ln, _ in blamed} == {("model.py", 18)}, blamed
