"""The fault table's machinery, shared by every file of rows (tests/test_faults*.py): a row is
a fault (what goes wrong), the command a user runs, and what they must get; ``sl`` runs the
command as a user does. The README's "Reliability" section lists every row (a test keeps them
in step)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Callable, List

import pytest

from conftest import REPO

HAZARD = """\
import torch
class M(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > 8:
            return x * 2
        return x
"""
#: a compiled region with a suppression that suppresses nothing (SL001)
UNUSED_NOQA = "import torch\nclass N(torch.nn.Module):\n    def forward(self, x):\n        return x  # noqa: SL101\n"
#: what the text format prints for HAZARD in ok.py: the other files' findings must survive
OK_FINDING = "ok.py:4:12: SL101 [size-branch]"
HARNESS = "harness: owners of shapelint/harness (issue 13)"


@dataclass
class Row:
    fault: str
    command: str
    expect: str
    check: Callable


ROWS: List = []


def row(fault: str, command: str, expect: str, *marks):
    def add(fn: Callable) -> Callable:
        ROWS.append(pytest.param(Row(fault, command, expect, fn), marks=marks, id=fn.__name__))
        return fn
    return add


def rows_of(module: str) -> List:
    """The rows one test file defines (each file parametrizes its own)."""
    return [p for p in ROWS if p.values[0].check.__module__ == module]


def env(**extra) -> dict:
    out = dict(os.environ, NO_COLOR="1")
    out["PYTHONPATH"] = os.pathsep.join([REPO] + [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p])
    out.pop("GITHUB_BASE_REF", None)
    out.update(extra)
    return out


def with_preview(args) -> List[str]:
    """``check``/``run`` ARGS with ``--preview``: the hazards these tests use as "a finding"
    (HAZARD's SL101) are preview rules' (under 0.9 on held-out real code), and the tests are
    about what the CLI does with a finding, not about which rules are on by default."""
    args = [str(a) for a in args]
    if args and args[0] in ("check", "run") and "--preview" not in args:
        return [args[0], "--preview", *args[1:]]
    return args


def sl(cwd, *args, timeout=180, extra_env=None, preview=True, **kw) -> subprocess.CompletedProcess:
    """``shapelint ARGS`` as a user runs it (stdout and stderr as text, bad bytes replaced);
    ``preview``: see :func:`with_preview`."""
    args = tuple(with_preview(args)) if preview else tuple(map(str, args))
    return subprocess.run([sys.executable, "-m", "shapelint.cli", *args], cwd=str(cwd),
                          capture_output=True, encoding="utf-8", errors="replace",
                          env=env(**(extra_env or {})), timeout=timeout, **kw)


def leftovers(root) -> List[str]:
    """Temporary files a command left behind."""
    return [os.path.join(d, f) for d, _, files in os.walk(str(root)) for f in files if f.endswith(".tmp")]


def clean_error(res, code: int = 2) -> str:
    """A fatal error: one line on stderr, the given exit code, no traceback."""
    assert res.returncode == code, (res.returncode, res.stdout[-2000:], res.stderr[-2000:])
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    return lines[0]


def file_error(res, path: str, words: str) -> None:
    """Exit 1; ``path`` reported with a message containing ``words``; ok.py's finding kept."""
    assert res.returncode == 1, (res.returncode, res.stdout[-2000:], res.stderr[-2000:])
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    line = next((ln for ln in res.stdout.splitlines() if ln.startswith(path + ":")), None)
    assert line is not None and words in line, res.stdout
    assert OK_FINDING in res.stdout, res.stdout


def children_of(pid: int) -> List[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False
