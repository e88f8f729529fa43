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
    pytester.makepyfile(models=MODEL)
    pytester.makepyfile(test_watch="""
        import torch
        import models

        def test_plain_compiles_twice(compile_watch):
            model = torch.compile(models.plain(), backend="eager")
            with compile_watch() as watch:
                for batch in (1, 2, 3, 8):
                    model(torch.randn(batch, 3))
            watch.assert_max_compiles(2)

        def test_branchy_recompiles(compile_watch):
            model = torch.compile(models.branchy(), backend="eager")
            with compile_watch() as watch:
                for batch in (1, 2, 3, 8):
                    watch.label(f"batch={batch}")
                    model(torch.randn(batch, 3))
            watch.assert_max_compiles(2)
    """)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers")
    res.assert_outcomes(passed=1, failed=1)
    out = res.stdout.str()
    assert "3 compiles, more than the 2 allowed" in out
    assert "recompile at batch=8" in out
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
    assert "test_branchy" in out and "3 compiles at 4 shapes" in out
    assert "models.py:6: if x.shape[0] > 4:" in out and "SL101" in out


def test_unittest_helper(pytester):
    pytester.makepyfile(models=MODEL)
    pytester.makepyfile(test_ut="""
        import unittest
        from shapelint.testing import RecompileError, assert_no_recompiles

        class T(unittest.TestCase):
            def test_plain(self):
                result = assert_no_recompiles("models.py:plain", "models.py:inputs", batch_sizes=[1, 2, 3])
                self.assertEqual(result["compiles"], 2)

            def test_branchy(self):
                with self.assertRaises(RecompileError) as ctx:
                    assert_no_recompiles("models.py:branchy", "models.py:inputs", batch_sizes=[1, 2, 8])
                self.assertIn("if x.shape[0] > 4:", str(ctx.exception))
    """)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    res.assert_outcomes(passed=2)
