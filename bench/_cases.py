"""Shared loading of the labelled cases (used by benchmarks and tests).

The cases live in ``../shared/cases`` beside the repository; ``tests/cases/shared`` is a copy
that travels with the repository, so a fresh clone runs the benchmarks and the tests without
it. ``SHAPELINT_CASES`` overrides both."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# which rules answer which labelled kind
KIND_RULES: Dict[str, Tuple[str, ...]] = {
    "size-branch": ("SL101", "SL105", "SL109"),
    "value-branch": ("SL201",),
    "item-or-scalar-read": ("SL202", "SL206"),
    "size-to-python-int": ("SL103", "SL104", "SL108"),
    "size-loop": ("SL102", "SL205"),
    "dynamic-output-shape": ("SL204",),
    "graph-break-call": ("SL203", "SL402", "SL403"),
    "module-state-mutation": ("SL302",),
    "python-scalar-arg": ("SL301",),
    "zero-one-specialization": ("SL105",),
    "custom-op-missing-fake": ("SL401",),
    "other": (),  # any rule
}


@dataclass
class Case:
    id: str
    path: str
    polarity: str
    expected: List[dict] = field(default_factory=list)
    decoys: List[dict] = field(default_factory=list)
    measured: Optional[dict] = None

    def measured_mode(self, mode: str) -> dict:
        return (self.measured or {}).get("case", {}).get("modes", {}).get(mode, {})


#: the copy of ../shared/cases kept in the repository (refresh it with
#: ``rm -r tests/cases/shared && cp -r ../shared/cases tests/cases/shared``)
BUNDLED = os.path.join(REPO, "tests", "cases", "shared")
SHARED = os.path.join(os.path.dirname(REPO), "shared", "cases")


def cases_dir() -> str:
    """``SHAPELINT_CASES``, else ``../shared/cases`` when it is there, else the bundled copy."""
    if os.environ.get("SHAPELINT_CASES"):
        return os.environ["SHAPELINT_CASES"]
    return SHARED if os.path.isdir(SHARED) else BUNDLED


def load_cases(root: Optional[str] = None) -> List[Case]:
    root = root or cases_dir()
    out = []
    for name in sorted(os.listdir(root)):
        folder = os.path.join(root, name)
        toml_path = os.path.join(folder, "case.toml")
        if not os.path.isfile(toml_path):
            continue
        with open(toml_path, "rb") as fh:
            meta = tomllib.load(fh)
        measured = None
        mpath = os.path.join(folder, "measured.json")
        if os.path.isfile(mpath):
            with open(mpath) as fh:
                measured = json.load(fh)
        out.append(Case(name, folder, meta.get("polarity", "negative"), meta.get("expected", []),
                        meta.get("decoys", []), measured))
    return out
