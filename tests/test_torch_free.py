"""The static pass never imports torch nor the analysed code (a pre-commit environment)."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import write_tree

TRAP = """
import pathlib
pathlib.Path(__file__).with_name("IMPORTED").write_text("imported")
import torch
from torch import nn
from helpers import choose
class M(nn.Module):
    def forward(self, x):
        return x * choose(x)
"""
HELPER = """
import pathlib
pathlib.Path(__file__).with_name("IMPORTED").write_text("imported")
def choose(x):
    if x.shape[0] > 4:
        return 2
    return 1
"""
BLOCKER = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is not installed here")
sys.meta_path.insert(0, Block())
"""


def test_check_without_torch_never_imports_code(tmp_path):
    write_tree(tmp_path, {"proj/model.py": TRAP, "proj/helpers.py": HELPER,
                          "site/sitecustomize.py": BLOCKER})
    env = {"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"}
    code = ("import sys, runpy; sys.argv=['shapelint','check','--preview','proj','--format','json','--no-cache'];"
            "from shapelint.cli import main; rc = main();"
            "assert 'torch' not in sys.modules, 'torch was imported'; sys.exit(rc)")
    res = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), capture_output=True,
                         text=True, env=env)
    assert res.returncode == 1, res.stderr
    doc = json.loads(res.stdout)
    assert [(f["path"], f["line"], f["rule"]) for f in doc["findings"]] == [("proj/helpers.py", 4, "SL101")]
    assert not (tmp_path / "proj" / "IMPORTED").exists()
    # the blocker really blocks torch in that interpreter
    probe = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True)
    assert probe.returncode != 0


def test_a_cache_hit_imports_neither_libcst_nor_networkx(tmp_path):
    """The warm check (every file as the cache last saw it) answers from the cache before the
    parser or the call graph is imported: loading the rules costs no libcst."""
    write_tree(tmp_path, {"proj/model.py": TRAP, "proj/helpers.py": HELPER})
    code = ("import sys; sys.argv=['shapelint','check','proj','--preview','-q','--cache-dir','c'];"
            "from shapelint.cli import main; rc = main();"
            "print(sorted(m for m in ('libcst', 'networkx') if m in sys.modules)); sys.exit(rc)")
    runs = [subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), capture_output=True,
                           text=True) for _ in range(2)]
    assert [r.returncode for r in runs] == [1, 1], runs[0].stderr
    assert runs[0].stdout.strip().splitlines()[-1] == "['libcst', 'networkx']"  # a cold check parses
    assert runs[1].stdout.strip().splitlines()[-1] == "[]"
