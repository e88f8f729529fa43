"""Shared loading of the labelled cases in ../shared/cases (used by benchmarks and tests)."""

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
    "size-branch": ("SL101", "SL105"),
    "value-branch": ("SL201",),
    "item-or-scalar-read": ("SL202",),
    "size-to-python-int": ("SL103",),
    "size-loop": ("SL102", "SL205"),
    "dynamic-output-shape": ("SL204",),
    "graph-break-call": ("SL203", "SL402"),
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


def cases_dir() -> str:
    return os.environ.get("SHAPELINT_CASES") or os.path.join(os.path.dirname(REPO), "shared", "cases")


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
