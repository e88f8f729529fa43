"""Reporters: each turns the same findings (and harness targets) into one output format."""

from __future__ import annotations

import importlib
from typing import Any, Dict, List, Optional

from shapelint.finding import CheckResult, TargetResult

FORMATS = ("text", "json", "github", "sarif", "markdown", "junit", "html")


def render(fmt: str, result: CheckResult, *, rules: Dict[str, Any],
           targets: Optional[List[TargetResult]] = None, color: bool = False,
           statistics: bool = False) -> str:
    """Render ``result`` in ``fmt``; ``targets`` are harness results (``shapelint run``)."""
    mod = importlib.import_module(f"shapelint.report.{fmt}_format")
    return mod.render(result, rules=rules, targets=list(targets or []), color=color,
                      statistics=statistics)
