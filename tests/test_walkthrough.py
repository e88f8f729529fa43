"""The README's walk-through, replayed word for word: its files written, its patch applied and
its commands run in a fresh project, each with the exit status and the line the README says."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from typing import List, Tuple

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow
torch = pytest.importorskip("torch")

MARK = re.compile(r"<!-- walkthrough-(file|patch|command): (.*?) -->\n```\w*\n(.*?)```", re.S)


def steps() -> List[Tuple[str, str, str]]:
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    return MARK.findall(text)


def patch(text: str, diff: str) -> str:
    """Apply the README's small diff: context lines (`` ``) are found in order, ``-`` lines
    removed, ``+`` lines inserted, `` ...`` skips ahead to the next context line (as the
    start of the diff does)."""
    lines = text.splitlines()
    out: List[str] = []
    i = 0
    skipping = True
    for d in diff.splitlines():
        tag, body = d[:1], d[1:]
        if tag == " " and body.strip() == "...":
            skipping = True
            continue
        if tag in (" ", "-"):
            while skipping and lines[i] != body:
                out.append(lines[i])
                i += 1
            skipping = False
            assert lines[i] == body, f"the walk-through's patch expects {body!r}, found {lines[i]!r}"
            if tag == " ":
                out.append(lines[i])
            i += 1
        elif tag == "+":
            out.append(body)
    return "\n".join(out + lines[i:]) + "\n"


def test_the_readme_walkthrough_works_as_written(tmp_path):
    found = steps()
    assert sum(1 for kind, _, _ in found if kind == "command") >= 5, found
    project = tmp_path / "myproj"
    project.mkdir()
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    env.pop("PYTHONPATH", None)
    for kind, arg, body in found:
        if kind == "file":
            path = project / arg
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
        elif kind == "patch":
            path = project / arg
            path.write_text(patch(path.read_text(), body))
        else:
            status = int(re.search(r"exit (\d+)", arg).group(1))
            expect = re.findall(r'expect "([^"]*)"', arg)
            res = subprocess.run(shlex.split(body.strip()), cwd=str(project), env=env,
                                 capture_output=True, text=True, timeout=600)
            said = res.stdout + res.stderr
            assert res.returncode == status, (body, res.returncode, said[-4000:])
            for e in expect:
                assert e in said, (body, e, said[-4000:])
