"""The real pre-commit (from PyPI) runs our hook with `pre-commit try-repo` on a temporary git
repository: a staged hazard fails with the finding printed, a clean file passes. The hook's own
environment is built by pre-commit from our package and has no torch."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, write_tree

pytestmark = pytest.mark.slow

HAZARD = """
import torch
from helpers import choose

class M(torch.nn.Module):
    def forward(self, x):
        return x * choose(x)
"""
HELPER = """
def choose(x):
    if x.shape[0] > 4:
        return 2
    return 1
"""
CLEAN = """
import torch

class M(torch.nn.Module):
    def forward(self, x):
        return x.view(x.shape[0], -1)
"""


def _pre_commit() -> list:
    exe = shutil.which("pre-commit", path=os.path.dirname(sys.executable)) or shutil.which("pre-commit")
    if exe is None:
        pytest.skip("pre-commit is not installed (pip install pre-commit)")
    return [exe]


def _git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=str(cwd),
                   check=True, capture_output=True)


def test_pre_commit_try_repo(tmp_path):
    pre_commit = _pre_commit()
    repo = tmp_path / "work"
    repo.mkdir()
    _git(repo, "init", "-q")
    # SL101 is a preview rule: this project opts in, as a user who wants the candidates does
    write_tree(repo, {"model.py": HAZARD, "helpers.py": "def choose(x):\n    return 1\n",
                      "shapelint.toml": "preview = true\n"})
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "cache"), PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("VIRTUAL_ENV", None)

    # a staged helper with a size branch, reached from model.py's forward (not staged)
    write_tree(repo, {"helpers.py": HELPER})
    _git(repo, "add", "helpers.py")
    bad = subprocess.run(pre_commit + ["try-repo", REPO, "shapelint", "--verbose"], cwd=str(repo),
                         capture_output=True, text=True, env=env, timeout=900)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "SL101 [size-branch]" in bad.stdout, bad.stdout

    # pre-commit installed the package as it is published: torch only behind an extra
    from importlib.metadata import requires

    torch_reqs = [r for r in requires("shapelint") or [] if r.lower().startswith("torch")]
    assert torch_reqs and all("extra ==" in r for r in torch_reqs), torch_reqs

    # a clean change passes
    write_tree(repo, {"helpers.py": "def choose(x):\n    return 2\n", "clean.py": CLEAN})
    _git(repo, "add", ".")
    good = subprocess.run(pre_commit + ["try-repo", REPO, "shapelint"], cwd=str(repo),
                          capture_output=True, text=True, env=env, timeout=900)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout
