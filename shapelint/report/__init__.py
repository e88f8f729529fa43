"""Reporters: each turns the same findings (and harness targets) into one output format."""

from __future__ import annotations

import importlib
import os
from typing import Any, Dict, List, Optional

from shapelint.finding import CheckResult

FORMATS = ("text", "json", "github", "sarif", "markdown", "junit", "html")


def render(fmt: str, result: CheckResult, *, rules: Dict[str, Any],
           targets: Optional[List[Dict[str, Any]]] = None, color: bool = False,
           statistics: bool = False) -> str:
    """Render ``result`` in ``fmt``; ``targets`` are harness results (``shapelint run``)."""
    from shapelint.finding import as_target

    mod = importlib.import_module(f"shapelint.report.{fmt}_format")
    return mod.render(result, rules=rules, targets=[as_target(t) for t in targets or []],
                      color=color, statistics=statistics)


def sweep_stale_tmp(directory: str, prefix: str = "", min_age: float = 5.0) -> None:
    """Remove ``{prefix}*.{pid}.tmp`` files that a process killed mid-write (``kill -9``) left
    behind: their pid is gone and they are older than ``min_age`` seconds (a process in
    another pid namespace writing the same folder finishes its write well within that)."""
    import re
    import time

    pattern = re.compile(re.escape(prefix) + r".*\.(\d+)\.tmp$")
    try:
        names = os.listdir(directory)
    except OSError:
        return
    now = time.time()
    for name in names:
        m = pattern.match(name)
        if not m or int(m.group(1)) == os.getpid():
            continue
        full = os.path.join(directory, name)
        try:
            if now - os.stat(full).st_mtime < min_age:
                continue
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            try:
                os.unlink(full)
            except OSError:
                pass
        except (OSError, OverflowError):
            continue


class OutputError(Exception):
    """A report or baseline that cannot be written; the CLI says so in one line, exits 2."""


def check_writable(path: str) -> None:
    """Fail early (before a long check) when ``path`` cannot be a file: a folder, a path under
    a file, a folder that does not let us write. Whatever this misses, write_atomic reports."""
    ab = os.path.abspath(path)
    if os.path.isdir(ab):
        raise OutputError(f"cannot write {path}: it is a folder")
    parent = os.path.dirname(ab)
    while not os.path.exists(parent):  # the folders write_atomic would create
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise OutputError(f"cannot write {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {path}: {parent} is not writable")


def write_atomic(path: str, text: str) -> None:
    """Write a report so that a crash never leaves half a file behind; a failure is an
    OutputError in one line, and the temporary file never stays behind."""
    check_writable(path)
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    sweep_stale_tmp(directory, f".{os.path.basename(path)}")
    try:
        os.makedirs(directory, exist_ok=True)
        with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
