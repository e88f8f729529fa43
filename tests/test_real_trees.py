"""Zero crashes on real code: the installed torch package's whole Python source and a released
transformers tree. Files that are genuinely not Python may be reported as file errors; nothing
may raise, and every finding must point inside the tree."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import check_tree

pytestmark = pytest.mark.slow


def _assert_sane(result, tree):
    assert result.files_checked > 100
    for f in result.findings:
        assert os.path.abspath(f.path).startswith(os.path.abspath(tree))
        assert f.location.line >= 1 and f.location.column >= 1
    # torch and transformers ship only valid Python 3.11 source
    assert [e for e in result.errors if "syntax" in e.message] == []


def test_whole_torch_source_never_crashes():
    torch = pytest.importorskip("torch")
    tree = os.path.dirname(torch.__file__)
    result = check_tree(tree)
    _assert_sane(result, tree)
    assert len(result.findings) > 50  # torch's own modules do branch on sizes


def test_transformers_tree_never_crashes(tmp_path_factory):
    cache = os.environ.get("SHAPELINT_DOWNLOADS") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "_downloads")
    os.makedirs(cache, exist_ok=True)
    wheels = glob.glob(os.path.join(cache, "transformers-*.whl"))
    if not wheels:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                               "--only-binary=:all:", "-d", cache, "transformers==4.46.3"],
                              capture_output=True, text=True, timeout=600)
        wheels = glob.glob(os.path.join(cache, "transformers-*.whl"))
        if not wheels:
            pytest.skip(f"could not download transformers: {proc.stderr.strip()[-300:]}")
    root = tmp_path_factory.mktemp("transformers")
    with zipfile.ZipFile(sorted(wheels)[-1]) as zf:
        zf.extractall(root)
    tree = os.path.join(str(root), "transformers")
    result = check_tree(tree)
    _assert_sane(result, tree)
