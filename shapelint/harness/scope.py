"""The project and the libraries around it, for ``shapelint run``'s report.

A replay runs library code (transformers, timm, diffusers...) and the static pass checks the
library files it ran, so that a hazard there is confirmed or a recompile there is blamed. But
a library file is not the user's to edit, and a report must never point outside the project:
GitHub annotates only the repository's files, a SARIF URI outside ``%SRCROOT%`` is rejected,
and an absolute path leaks the machine's layout into a CI artifact. So a finding in a file
outside the project root is *library*: shown by its path inside its library
(``transformers/masking_utils.py``), reported only where it helps (torch confirmed it, or it is
an event no rule predicted) unless ``--show-library``, and summarized, never annotated.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterable, List, Optional

from shapelint.finding import CONFIRMED, UNPREDICTED, Finding, TargetResult, relpath

#: folders that hold installed libraries
SITE_DIRS = ("site-packages", "dist-packages")


def is_under(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([os.path.abspath(path), os.path.abspath(root)]) == \
            os.path.abspath(root)
    except ValueError:  # other drives
        return False


def library_path(abspath: str, search: Iterable[str] = ()) -> str:
    """A library file's path inside its library: after ``site-packages/``, else relative to
    the import path entry that holds it (``search``, then ``sys.path``), else from its top
    package (the highest folder with an ``__init__.py``)."""
    parts = abspath.split(os.sep)
    for marker in SITE_DIRS:
        if marker in parts:
            i = len(parts) - 1 - parts[::-1].index(marker)
            return "/".join(parts[i + 1:])
    roots = [p for p in list(search) + sys.path if p and os.path.isdir(p) and is_under(abspath, p)]
    if roots:
        best = max(roots, key=lambda p: len(os.path.abspath(p)))
        return os.path.relpath(abspath, best).replace(os.sep, "/")
    folder = os.path.dirname(abspath)
    top = folder
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        top = folder
        folder = os.path.dirname(folder)
    return os.path.relpath(abspath, os.path.dirname(top)).replace(os.sep, "/")


def scope_findings(findings: List[Finding], project: str, show_library: bool = False,
                   search: Iterable[str] = ()) -> List[Finding]:
    """Mark the findings outside ``project`` as library ones (shown by their library path);
    keep those only where they help, unless ``show_library``."""
    out = []
    search = list(search)
    for f in findings:
        ab = os.path.abspath(f.path)
        if is_under(ab, project):
            out.append(f)
            continue
        if not show_library and f.status not in (CONFIRMED, UNPREDICTED):
            continue
        out.append(f.replace(library=True, location=_moved(f, library_path(ab, search))))
    return out


def _moved(f: Finding, path: str):
    import dataclasses

    return dataclasses.replace(f.location, path=path)


def scope_targets(targets: List[TargetResult], project: str, search: Iterable[str] = ()) -> None:
    """Every path a target's report shows, inside the project or by its library path: the
    events' places, the frames, the executed files; absolute paths are dropped (the report is
    data about the code, not about the machine that ran it)."""
    search = list(search)

    def shown(path: Optional[str], ab: Optional[str] = None) -> Optional[str]:
        if not path and not ab:
            return path
        ab = os.path.abspath(ab or path or "")
        return relpath(ab) if is_under(ab, project) else library_path(ab, search)

    for t in targets:
        for ev in t.events:
            items: List[Any] = [ev, *ev.guards, *ev.also]  # each has path and abspath
            for item in items:
                if item.abspath or item.path:
                    item.path = shown(item.path, item.abspath)
                item.abspath = None
        for fr in t.frames:
            fr.path = shown(fr.path)
        t.executed = {shown(p) or p: lines for p, lines in t.executed.items()}
        t.sources = [shown(p) or p for p in t.sources]


def project_root(config_path: Optional[str]) -> str:
    """The config's folder, else the repository holding the working directory, else it."""
    if config_path:
        return os.path.dirname(os.path.abspath(config_path))
    from shapelint.config import repository_root

    return repository_root(os.getcwd()) or os.getcwd()
