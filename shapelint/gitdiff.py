"""``--diff REF``: keep findings on lines changed since a git ref (what a pull request touched)."""

from __future__ import annotations

import os
import re
import subprocess
from typing import Dict, Set

from shapelint.config import ConfigError
from shapelint.finding import CheckResult

HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def changed_lines(ref: str, cwd: str = ".") -> Dict[str, Set[int]]:
    """Absolute path -> changed (added or modified) line numbers, working tree vs ``ref``."""
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=cwd, check=True,
                             capture_output=True, text=True).stdout.strip()
        out = subprocess.run(["git", "diff", "--unified=0", "--no-color", ref, "--", "."],
                             cwd=cwd, check=True, capture_output=True, text=True).stdout
        untracked = subprocess.run(["git", "ls-files", "--others", "--exclude-standard"], cwd=top,
                                   check=True, capture_output=True, text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError) as exc:
        msg = getattr(exc, "stderr", "") or str(exc)
        raise ConfigError(f"--diff {ref}: git failed: {msg.strip()}") from exc
    lines: Dict[str, Set[int]] = {}
    current = None
    for row in out.splitlines():
        if row.startswith("+++ "):
            name = row[4:].strip()
            current = None if name == "/dev/null" else os.path.join(top, name[2:] if name.startswith("b/") else name)
            continue
        m = HUNK.match(row)
        if m and current:
            start, count = int(m.group(1)), int(m.group(2) or 1)
            lines.setdefault(current, set()).update(range(start, start + count))
    for name in untracked:
        full = os.path.join(top, name)
        lines[full] = {-1}  # every line of a new file counts as changed
    return lines


def is_changed(lines: Dict[str, Set[int]], path: str, line: int) -> bool:
    changed = lines.get(os.path.abspath(path))
    return bool(changed) and (-1 in changed or line in changed)


def only_changed(result: CheckResult, ref: str) -> CheckResult:
    lines = changed_lines(ref)
    result.findings = [f for f in result.findings if is_changed(lines, f.path, f.line)]
    result.unused_suppressions = [f for f in result.unused_suppressions
                                  if is_changed(lines, f.path, f.line)]
    return result
