"""``--diff REF``: keep findings on lines changed since a git ref (what a pull request touched).

The ref is the user's text handed to git: one starting with ``-`` is refused (``--diff
--output=FILE`` would be a git option that writes a file), and it is passed after
``--end-of-options`` and verified as a commit first. git's output is read whatever the user's
git settings say: prefixes are set explicitly (``diff.mnemonicPrefix`` would print ``i/`` and
``w/``), names are read unquoted (``core.quotePath=false``, C-style quoting undone for names
with tabs, quotes or newlines) and untracked files are listed NUL-separated (spaces and
non-ASCII names intact)."""

from __future__ import annotations

import os
import re
import subprocess
from typing import Dict, List, Set

from shapelint.config import ConfigError
from shapelint.finding import CheckResult

HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
GIT = ["git", "-c", "core.quotePath=false", "-c", "diff.noprefix=false",
       "-c", "diff.mnemonicPrefix=false", "-c", "color.ui=false"]
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def unquote(name: str) -> str:
    """A path as git printed it: C-style quoted (``"a\\tb"``, ``"\\303\\251.py"``) when it holds
    characters git escapes, else as is."""
    if not (len(name) >= 2 and name[0] == '"' and name[-1] == '"'):
        return name
    out = bytearray()
    body, i = name[1:-1], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and i + 4 <= len(body):
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            out.append(_ESCAPES.get(nxt, ord(nxt)))
            i += 2
            continue
        out.extend(ch.encode("utf-8"))
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _git(args: List[str], cwd: str) -> str:
    return subprocess.run(GIT + args, cwd=cwd, check=True, capture_output=True, text=True,
                          encoding="utf-8", errors="surrogateescape").stdout


def changed_lines(ref: str, cwd: str = ".") -> Dict[str, Set[int]]:
    """Absolute path -> changed (added or modified) line numbers, working tree vs ``ref``;
    ``{-1}`` for a new (untracked) file: every line."""
    if not ref or ref.startswith("-"):
        raise ConfigError(f"--diff expects a git ref such as origin/main, got `{ref}`")
    try:
        top = _git(["rev-parse", "--show-toplevel"], cwd).strip()
        _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], cwd)
        out = _git(["diff", "--unified=0", "--no-color", "--no-ext-diff", "--src-prefix=a/",
                    "--dst-prefix=b/", "--end-of-options", ref, "--", "."], cwd)
        untracked = [n for n in _git(["ls-files", "-z", "--others", "--exclude-standard"],
                                     top).split("\0") if n]
    except (OSError, subprocess.CalledProcessError) as exc:
        msg = (getattr(exc, "stderr", "") or "").strip() or f"`{ref}` is not a commit"
        raise ConfigError(f"--diff {ref}: git failed: {msg}") from exc
    lines: Dict[str, Set[int]] = {}
    current = None
    for row in out.splitlines():
        if row.startswith("+++ "):
            name = unquote(row[4:].rstrip("\t"))
            current = None if name == "/dev/null" else os.path.join(top, name[2:])
            continue
        m = HUNK.match(row)
        if m and current:
            start, count = int(m.group(1)), int(m.group(2) or 1)
            lines.setdefault(current, set()).update(range(start, start + count))
    for name in untracked:
        lines[os.path.join(top, name)] = {-1}  # every line of a new file counts as changed
    return lines


def is_changed(lines: Dict[str, Set[int]], path: str, line: int) -> bool:
    changed = lines.get(os.path.abspath(path))
    return bool(changed) and changed is not None and (-1 in changed or line in changed)


def only_changed(result: CheckResult, ref: str) -> CheckResult:
    lines = changed_lines(ref)
    result.findings = [f for f in result.findings if is_changed(lines, f.path, f.line)]
    result.unused_suppressions = [f for f in result.unused_suppressions
                                  if is_changed(lines, f.path, f.line)]
    return result
