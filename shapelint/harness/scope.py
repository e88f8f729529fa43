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

import dataclasses
import functools
import os
import sys
from typing import FrozenSet, Iterable, List, Optional, Union

from shapelint.finding import (CONFIRMED, UNPREDICTED, Event, Finding, Guard, Place, TargetResult,
                               relpath)

#: folders that hold installed libraries
SITE_DIRS = ("site-packages", "dist-packages")


def is_under(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([os.path.abspath(path), os.path.abspath(root)]) == \
            os.path.abspath(root)
    except ValueError:  # other drives
        return False


def is_library(path: str) -> bool:
    """Whether ``path`` is a file of an installed library (transformers, timm, diffusers...):
    under ``site-packages``/``dist-packages``, or in a top-level package or module that an
    installed distribution's ``RECORD`` lists in the folder that holds it (``pip install
    --target DIR`` put on ``sys.path``). Torch's tracer inlines library code like the user's
    own, but a guard it adds there (``attention_mask.to(...)`` in masking_utils.py) is the
    user's to act on at their call into the library, so a blamed place skips library frames
    while a frame of the user's is outside them (``blame.Recorder.pick``). An editable install of
    the project is not a library (its files are not beside its ``.dist-info``)."""
    ab = os.path.abspath(path)
    parts = ab.split(os.sep)
    if any(marker in parts for marker in SITE_DIRS):
        return True
    folder, top = os.path.dirname(ab), os.path.basename(ab)
    while folder and os.path.dirname(folder) != folder:
        if top in _installed_tops(folder):
            return True
        folder, top = os.path.dirname(folder), os.path.basename(folder)
    return False


@functools.lru_cache(maxsize=1024)
def _installed_tops(folder: str) -> FrozenSet[str]:
    """The top-level packages and modules (``transformers``, ``six.py``) that the
    distributions installed in ``folder`` (its ``*.dist-info/RECORD``) put there."""
    try:
        names = os.listdir(folder)
    except OSError:
        return frozenset()
    tops = set()
    for name in names:
        if not name.endswith(".dist-info"):
            continue
        try:
            with open(os.path.join(folder, name, "RECORD"), encoding="utf-8", errors="replace") as fh:
                for row in fh:
                    first = row.split(",", 1)[0].replace("\\", "/").split("/", 1)[0]
                    if first and first not in ("..", ".") and not first.endswith((".dist-info", ".data")):
                        tops.add(first)
        except OSError:
            continue
    return frozenset(tops)


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
    folder = os.path.dirname(abspath)  # the folder above its top package, or its own
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        folder = os.path.dirname(folder)
    return os.path.relpath(abspath, folder).replace(os.sep, "/")


class Scope:
    """Where the project ends: paths inside it are shown from the working directory, paths
    outside it by their place inside their library."""

    def __init__(self, project: str, search: Iterable[str] = ()) -> None:
        self.project = project
        self.search = list(search)

    @classmethod
    def of_run(cls, config_path: Optional[str], search: Iterable[str] = ()) -> "Scope":
        """The project of a ``shapelint run``: the config's folder, else the repository
        holding the working directory, else the working directory."""
        if config_path:
            return cls(os.path.dirname(os.path.abspath(config_path)), search)
        from shapelint.config import repository_root

        return cls(repository_root(os.getcwd()) or os.getcwd(), search)

    def inside(self, path: str) -> bool:
        return is_under(os.path.abspath(path), self.project)

    def path(self, path: Optional[str], ab: Optional[str] = None) -> Optional[str]:
        if not path and not ab:
            return path
        full = os.path.abspath(ab or path or "")
        return relpath(full) if is_under(full, self.project) else library_path(full, self.search)

    def findings(self, findings: List[Finding], show_library: bool = False) -> List[Finding]:
        """Mark the findings outside the project as library ones (shown by their library
        path); keep those only where they help, unless ``show_library``."""
        out = []
        for f in findings:
            events = [dataclasses.replace(e, path=self.path(e.path)) for e in f.evidence_events]
            if self.inside(f.path):
                out.append(f.replace(evidence_events=events))
            elif show_library or f.status in (CONFIRMED, UNPREDICTED):
                out.append(f.replace(library=True, evidence_events=events, location=dataclasses.replace(
                    f.location, path=self.path(f.path) or f.path)))
        return out

    def targets(self, targets: List[TargetResult]) -> None:
        """Every path a target's report shows, inside the project or by its library path: the
        events' places, the frames, the executed files; absolute paths are dropped (the report
        is data about the code, not about the machine that ran it)."""
        for t in targets:
            for ev in t.events:
                items: List[Union[Event, Guard, Place]] = [ev, *ev.guards, *ev.also]
                for item in items:
                    if item.abspath or item.path:
                        item.path = self.path(item.path, item.abspath)
                    item.abspath = None
            for fr in t.frames:
                fr.path = self.path(fr.path)
            t.executed = {self.path(p) or p: lines for p, lines in t.executed.items()}
            t.sources = [self.path(p) or p for p in t.sources]
