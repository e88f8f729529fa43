"""The pytest plugin, driven through pytester in subprocesses (torch state would leak)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

MODEL = '''
import torch
from torch import nn

class Branchy(nn.Module):
    def forward(self, x):
        if x.shape[0] > 4:
            return x * 2
        return x + 1

class Plain(nn.Module):
    def forward(self, x):
        return x.view(x.shape[0], -1) * 2

def branchy():
    return Branchy()

def plain():
    return Plain()

def inputs(batch):
    return (torch.ones(batch, 3),)
'''

BREAKS = '''

class Breaks(nn.Module):
    def forward(self, x):
        print("hi")
        return x * 2

def breaks():
    return Breaks()
'''


def test_plugin_loads_without_torch(pytester):
    pytester.makepyfile(test_a="""
        import sys
        def test_no_torch(request):
            assert request.config.pluginmanager.has_plugin("shapelint")
            assert "torch" not in sys.modules
    """)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers")
    res.assert_outcomes(passed=1)


def test_fixture_passes_and_fails_with_guilty_lines(pytester):
    pytester.makepyfile(models=MODEL + BREAKS)
    pytester.makepyfile(test_watch="""
        import pytest
        import torch
        import models
        from shapelint.testing import GraphBreakError, RecompileError

        def test_plain_has_no_recompiles(compile_watch):
            # automatic dynamic's one recompile (batch 1 -> 2) is torch's step, not the code's
            model = torch.compile(models.plain(), backend="eager")
            with compile_watch() as watch:
                for batch in (1, 2, 3, 8):
                    model(torch.randn(batch, 3))
            watch.assert_no_recompiles()
            watch.assert_max_compiles(2)

        def test_branchy_recompiles(compile_watch):
            model = torch.compile(models.branchy(), backend="eager")
            with compile_watch() as watch:
                for batch in (1, 2, 3, 8):
                    model(torch.randn(batch, 3))
            watch.assert_no_recompiles()

        def test_breaks(compile_watch):
            model = torch.compile(models.breaks(), backend="eager")
            with compile_watch() as watch:
                model(torch.randn(2, 3))
            with pytest.raises(GraphBreakError) as info:
                watch.assert_no_graph_breaks()
            assert not isinstance(info.value, RecompileError)
            assert "graph break at x=(2, 3):" in str(info.value)
            watch.assert_no_recompiles()
    """)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers")
    res.assert_outcomes(passed=2, failed=1)
    out = res.stdout.str()
    assert "1 recompile(s) caused by the code (3 compiles)" in out
    assert "recompile at x=(8, 3) in Branchy.forward" in out and "at ?" not in out
    assert "models.py:6: if x.shape[0] > 4:" in out and "[predicted by SL101 size-branch]" in out


def test_marker_replays_in_a_subprocess(pytester):
    pytester.makepyfile(models=MODEL)
    pytester.makepyfile(test_marked="""
        import pytest

        @pytest.mark.no_recompiles(model="models.py:plain", inputs="models.py:inputs", batch_sizes=[1, 2, 3, 8])
        def test_plain():
            pass

        @pytest.mark.no_recompiles(model="models.py:branchy", inputs="models.py:inputs", batch_sizes=[1, 2, 3, 8])
        def test_branchy():
            pass
    """)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers")
    res.assert_outcomes(passed=1, failed=1)
    out = res.stdout.str()
    assert "test_branchy" in out and "1 recompile(s) caused by the code (3 compiles at 4 shapes)" in out
    # printed once in the failure report (the short summary, whose width depends on the terminal, repeats line one)
    failures = out.split("short test summary info")[0]
    assert failures.count("recompile(s) caused by the code") == 1
    assert "During handling of the above exception" not in out
    assert "recompile at batch=8 in Branchy.forward" in out
    assert "models.py:6: if x.shape[0] > 4:" in out and "SL101" in out


def test_unittest_helper(pytester):
    pytester.makepyfile(models=MODEL)
    pytester.makepyfile(test_ut="""
        import unittest
        from shapelint.testing import RecompileError, assert_no_recompiles

        class T(unittest.TestCase):
            def test_plain(self):
                result = assert_no_recompiles("models.py:plain", "models.py:inputs", batch_sizes=[1, 2, 3])
                self.assertEqual(result.compiles, 2)
                with self.assertRaises(RecompileError) as ctx:  # a budget, when given
                    assert_no_recompiles("models.py:plain", "models.py:inputs", batch_sizes=[1, 2, 3],
                                         max_compiles=1)
                self.assertIn("2 compiles at 3 shapes, more than the 1 allowed", str(ctx.exception))

            def test_branchy(self):
                with self.assertRaises(RecompileError) as ctx:
                    assert_no_recompiles("models.py:branchy", "models.py:inputs", batch_sizes=[1, 2, 8])
                self.assertIn("if x.shape[0] > 4:", str(ctx.exception))
    """)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    res.assert_outcomes(passed=2)
