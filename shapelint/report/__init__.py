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
    mod = importlib.import_module(f"shapelint.report.{fmt}_format")
    return mod.render(result, rules=rules, targets=targets or [], color=color,
                      statistics=statistics)


def write_atomic(path: str, text: str) -> None:
    """Write a report so that a crash never leaves half a file behind."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
