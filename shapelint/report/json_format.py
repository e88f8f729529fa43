"""``--format json``: the contract other tools read (keys documented in the README)."""

from __future__ import annotations

import json
from typing import Any, Dict, List

from shapelint import __version__
from shapelint.finding import CheckResult, TargetResult
from shapelint.report.escape import defuse_json


def document(result: CheckResult, targets: List[TargetResult]) -> Dict[str, Any]:
    doc: Dict[str, Any] = {
        "version": __version__,
        "files_checked": result.files_checked,
        "findings": [f.to_json() for f in result.all_findings()],
        "errors": [e.to_json() for e in result.errors],
    }
    if targets:
        doc["targets"] = [t.to_json() for t in targets]
        doc["unpredicted"] = [f.to_json() for f in result.all_findings() if f.status == "unpredicted"]
    return doc


def render(result: CheckResult, *, rules, targets, color=False, statistics=False) -> str:
    return defuse_json(json.dumps(document(result, targets), indent=2)) + "\n"
